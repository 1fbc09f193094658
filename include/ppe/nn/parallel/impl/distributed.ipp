// Definitions of nn/parallel/distributed.hpp's DdpCore: included by it when
// header-only, compiled once by impl/distributed_src.hpp with
// PPE_SEPARATE_COMPILATION. c10d's reducer header includes a
// distributed-autograd header that Debian's libtorch-dev lacks: the build
// puts ppe/distributed/detail/compat last on the include path for it.
// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).
#pragma once

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/torch_compat/distributed_reducer.hpp"
#include "ppe/nn/parallel/distributed.hpp"

namespace ppe::nn::parallel::detail {

// Broadcast buffers are fused into chunks of this size (Python DDP's
// broadcast_bucket_size for module states).
inline constexpr std::size_t kBroadcastChunkBytes = 250u * 1024u * 1024u;

// A std::function as a c10d communication hook. (Not through
// CppCommHookInterface: its result parser is not exported by libtorch.)
class FunctionCommHook final : public c10d::CommHookInterface {
 public:
  explicit FunctionCommHook(CommHook hook) : hook_(std::move(hook)) {}
  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override { return hook_(bucket); }
  at::Tensor parseHookResult(const c10::IValue& result) override {
    if (result.isTensor()) return result.toTensor();
    if (result.isTensorList() && !result.toTensorList().empty()) return result.toTensorList().get(0);
    throw std::runtime_error(
        "ppe::nn::parallel::DistributedDataParallel: a communication hook's future must hold a tensor (the reduced "
        "bucket), it holds " + result.tagKind());
  }

 private:
  CommHook hook_;
};

struct DdpCore::Impl {
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> buffers;
  std::unique_ptr<c10d::Reducer> reducer;
  bool hook_registered = false;
};

PPE_DECL DdpCore::DdpCore(torch::nn::Module& module, const DistributedDataParallelOptions& options)
    : module_(module), options_(options), group_(options.process_group()), impl_(std::make_unique<Impl>()) {
  if (!group_) group_ = ppe::distributed::default_process_group();
  if (!(options_.bucket_cap_mb() > 0) || !std::isfinite(options_.bucket_cap_mb()))
    throw std::invalid_argument("ppe::nn::parallel::DistributedDataParallel: bucket_cap_mb is " +
                                std::to_string(options_.bucket_cap_mb()) + ", expected a positive size in MiB");
  std::unordered_map<std::size_t, std::string> names;
  for (const auto& item : module.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    names.emplace(impl_->params.size(), item.key());
    impl_->params.push_back(item.value());
  }
  if (impl_->params.empty())
    throw std::invalid_argument(
        "ppe::nn::parallel::DistributedDataParallel: the module has no parameter that requires a gradient");
  impl_->buffers = module.buffers();

  // Same shapes everywhere (an error naming the mismatch instead of a hang
  // or garbage in the first all-reduce), then rank 0's values everywhere.
  c10d::verify_params_across_processes(group_, impl_->params, c10::nullopt);
  {
    torch::NoGradGuard no_grad;  // in-place writes into leaves that require grad
    std::vector<at::Tensor> states = impl_->params;
    states.insert(states.end(), impl_->buffers.begin(), impl_->buffers.end());
    c10d::broadcast_coalesced(group_, states, kBroadcastChunkBytes, 0);
  }

  // Python DDP's bucketing: a small first bucket so the first all-reduce
  // starts early, then bucket_cap_mb; in reverse, the order backward
  // produces gradients.
  const auto cap = static_cast<std::int64_t>(options_.bucket_cap_mb() * 1024 * 1024);
  const std::vector<bool> sparse(impl_->params.size(), false);
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      impl_->params, {static_cast<std::size_t>(c10d::kDefaultFirstBucketBytes), static_cast<std::size_t>(cap)},
      sparse);
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  impl_->reducer = ::ppe::detail::compat::make_reducer({.params = impl_->params,
                                                        .buckets = std::move(buckets),
                                                        .bucket_limits = std::move(limits),
                                                        .group = group_,
                                                        .sparse = sparse,
                                                        .bucket_bytes_cap = cap,
                                                        .find_unused_parameters = options_.negotiate_grads(),
                                                        .gradient_as_bucket_view = false,
                                                        .param_names = std::move(names),
                                                        .first_bucket_bytes_cap = c10d::kDefaultFirstBucketBytes});
  if (options_.reduce_function()) {
    // PPE's reduce_function on each bucket's flat gradient, synchronously.
    register_comm_hook([fn = options_.reduce_function(), group = group_](c10d::GradBucket& bucket) {
      std::vector<at::Tensor> tensors{bucket.getBufferRef()};
      fn(tensors, group);
      auto future = c10::make_intrusive<c10::ivalue::Future>(c10::TensorType::get());
      future->markCompleted(c10::IValue(tensors.front()));
      return future;
    });
  }
}

PPE_DECL DdpCore::~DdpCore() = default;

PPE_DECL void DdpCore::before_forward() {
  if (!c10::GradMode::is_enabled() || !require_sync_) return;
  impl_->reducer->rebuild_buckets();  // once, after the first backward: buckets in gradient-ready order
  impl_->reducer->prepare_for_forward();
}

PPE_DECL void DdpCore::after_forward(std::vector<at::Tensor> outputs) {
  if (!c10::GradMode::is_enabled() || !require_sync_) return;
  if (options_.negotiate_grads() && outputs.empty())
    throw std::invalid_argument(
        "ppe::nn::parallel::DistributedDataParallel: negotiate_grads needs the forward's output tensors to find "
        "unused parameters, and the output holds none that ppe can see (a tensor, or tuples, vectors, maps or "
        "optionals of tensors); return one of those, or construct with negotiate_grads(false)");
  at::Tensor root;
  for (const auto& t : outputs)
    if (t.requires_grad()) {
      root = t;
      break;
    }
  impl_->reducer->prepare_for_backward(options_.negotiate_grads() ? outputs : std::vector<at::Tensor>{});
  if (options_.broadcast_buffers() && !impl_->buffers.empty() && root.defined()) {
    // PPE broadcasts the buffers once backward is over: a hook on the output
    // runs as backward starts and queues the broadcast for its end.
    root.register_hook([this](const at::Tensor& grad) {
      torch::autograd::Engine::get_default_engine().queue_callback([this] { broadcast_buffers(); });
      return grad;
    });
  }
}

PPE_DECL void DdpCore::register_comm_hook(CommHook hook) {
  if (impl_->hook_registered)
    throw std::logic_error(
        "ppe::nn::parallel::DistributedDataParallel: a communication hook (or reduce_function) is registered "
        "already; c10d's reducer takes one");
  impl_->reducer->register_comm_hook(std::make_unique<FunctionCommHook>(std::move(hook)));
  impl_->hook_registered = true;
}

PPE_DECL void DdpCore::broadcast_buffers() {
  // Read again: a module may have replaced a buffer's tensor since.
  std::vector<at::Tensor> buffers = module_.buffers();
  if (buffers.empty()) return;
  torch::NoGradGuard no_grad;
  if (options_.broadcast_function())
    options_.broadcast_function()(buffers, group_);
  else
    c10d::broadcast_coalesced(group_, buffers, kBroadcastChunkBytes, 0);
}

}  // namespace ppe::nn::parallel::detail
