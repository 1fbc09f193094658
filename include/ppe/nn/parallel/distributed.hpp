#pragma once
/// \file
/// `ppe::nn::parallel::DistributedDataParallel`: data parallelism for a
/// LibTorch module over a c10d process group (PPE's
/// `ppe.nn.parallel.DistributedDataParallel`).
///
/// \code
///   ppe::distributed::initialize();                       // torchrun's variables
///   auto net = Net();                                     // the same on every rank
///   auto ddp = ppe::nn::parallel::DistributedDataParallel(net);  // rank 0's weights everywhere
///   auto loss = torch::mse_loss(ddp(x), y);               // forward through the wrapper
///   loss.backward();                                      // gradients averaged over the ranks
///   optimizer.step();
/// \endcode
///
/// Built on c10d's `Reducer`, the engine under Python's DDP: gradients are
/// grouped into buckets (25 MB; the first 1 MB) and each bucket's all-reduce
/// starts as soon as backward has produced its gradients, overlapping the
/// rest of backward; the last one is waited for at the end of backward. At
/// construction, parameters and buffers are broadcast from rank 0
/// (`c10d::broadcast_coalesced`) after c10d checks that every rank holds the
/// same parameter shapes.
///
/// PPE's options: `broadcast_buffers` (after each synchronized backward,
/// rank 0's buffers, e.g. BatchNorm statistics, are broadcast), and
/// `negotiate_grads` (parameters that some rank did not use in this step are
/// found by tracing the outputs, so every rank reduces the same gradients:
/// c10d's `find_unused_parameters`). A `reduce_function` replaces the
/// all-reduce of each bucket (PPE's `reduce_function`: it receives the
/// bucket's flat gradient tensor and must leave the average in it), a
/// `broadcast_function` the buffers' broadcast; `register_comm_hook` installs
/// a c10d communication hook (as Python DDP's `register_comm_hook`).
///
/// What differs from PPE (docs/distributed.md): gradients are reduced per
/// bucket during backward instead of in one flattened all-reduce per dtype at
/// its end; PPE's hooks called with the module before synchronization are
/// c10d's bucket hooks here.
///
/// The wrapper is a handle, as LibTorch's module holders: copies share the
/// module and the reducer. `state_dict`-wise it is the module itself: the
/// manager, snapshots and the engine see the wrapped module (`ptr()`), with no
/// `module.` prefix, so a snapshot loads into an unwrapped model.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/distributed/process_group.hpp"

namespace c10d {
class GradBucket;
}
namespace c10::ivalue {
struct Future;
}

namespace ppe::nn::parallel {

/// PPE's `reduce_function` / `broadcast_function`: collective on `tensors`
/// in place, over `group`.
using DistFunction =
    std::function<void(std::vector<at::Tensor>& tensors, const c10::intrusive_ptr<c10d::ProcessGroup>& group)>;

/// A c10d communication hook: starts the reduction of one bucket and returns
/// the future of the reduced flat tensor (see c10d/comm.hpp).
using CommHook = std::function<c10::intrusive_ptr<c10::ivalue::Future>(c10d::GradBucket& bucket)>;

/// Options of `DistributedDataParallel` (PPE's constructor arguments).
struct DistributedDataParallelOptions {
  /// Broadcast rank 0's buffers after each synchronized backward.
  PPE_ARG(bool, broadcast_buffers) = true;
  /// Find the parameters that this step did not use (tracing the outputs) so
  /// that ranks whose graphs differ still reduce the same gradients. Costs a
  /// graph walk and one small all-reduce per step: turn off for static graphs.
  PPE_ARG(bool, negotiate_grads) = true;
  /// The group to synchronize over; null: the default group
  /// (`ppe::distributed::initialize`).
  PPE_ARG(c10::intrusive_ptr<c10d::ProcessGroup>, process_group);
  /// Replaces each bucket's all-reduce (must leave the average in place).
  PPE_ARG(DistFunction, reduce_function);
  /// Replaces the broadcast of the buffers after backward.
  PPE_ARG(DistFunction, broadcast_function);
  /// Bucket size in MiB (Python DDP's `bucket_cap_mb`).
  PPE_ARG(double, bucket_cap_mb) = 25.0;
};

namespace detail {

/// Appends the tensors found in a forward's output (a tensor, tuples, pairs,
/// vectors, maps and optionals of them) to `out`: the roots from which
/// unused parameters are found.
template <class T>
void collect_tensors(const T& value, std::vector<at::Tensor>& out) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, at::Tensor>) {
    if (value.defined()) out.push_back(value);
  } else if constexpr (requires { std::tuple_size<U>::value; }) {
    std::apply([&out](const auto&... xs) { (collect_tensors(xs, out), ...); }, value);
  } else if constexpr (requires { value.has_value(); *value; }) {
    if (value.has_value()) collect_tensors(*value, out);
  } else if constexpr (requires { value.begin()->second; }) {
    for (const auto& kv : value) collect_tensors(kv.second, out);
  } else if constexpr (requires { value.begin(); value.end(); }) {
    for (const auto& x : value) collect_tensors(x, out);
  }
}

/// The type-independent part: the reducer, the group, the options. Compiled
/// once (distributed/impl/ddp_core.ipp); the wrapper template only forwards.
class DdpCore {
 public:
  DdpCore(torch::nn::Module& module, const DistributedDataParallelOptions& options);
  DdpCore(const DdpCore&) = delete;
  DdpCore& operator=(const DdpCore&) = delete;
  ~DdpCore();

  /// Before the module's forward.
  void before_forward();
  /// After it, with the tensors of its output.
  void after_forward(std::vector<at::Tensor> outputs);
  bool require_sync() const noexcept { return require_sync_; }
  void set_require_sync(bool sync) noexcept { require_sync_ = sync; }
  void register_comm_hook(CommHook hook);
  /// Broadcasts the buffers from rank 0 now (also after each synchronized
  /// backward when `broadcast_buffers`).
  void broadcast_buffers();
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const noexcept { return group_; }
  const DistributedDataParallelOptions& options() const noexcept { return options_; }

 private:
  struct Impl;
  torch::nn::Module& module_;
  DistributedDataParallelOptions options_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::unique_ptr<Impl> impl_;
  bool require_sync_ = true;
};

}  // namespace detail

/// Data-parallel training of `ModuleHolder` (a LibTorch module holder such as
/// `torch::nn::Linear` or a `TORCH_MODULE` type, or a `std::shared_ptr` to a
/// module) over the ranks of a process group.
template <class ModuleHolder>
class DistributedDataParallel {
 public:
  /// Wraps `module`: checks that every rank holds the same parameter shapes,
  /// broadcasts rank 0's parameters and buffers, and sets up the buckets.
  /// Collective: every rank of the group constructs it together.
  explicit DistributedDataParallel(ModuleHolder module, const DistributedDataParallelOptions& options = {})
      : module_(std::move(module)), core_(std::make_shared<detail::DdpCore>(*module_ptr(), options)) {}

  /// The module's forward, with the reducer prepared around it. Outside
  /// `no_sync()` and with gradients enabled, the next backward averages the
  /// gradients over the ranks.
  template <class... Args>
    requires requires(ModuleHolder& m, Args&&... a) { m->forward(std::forward<Args>(a)...); }
  auto forward(Args&&... args) {
    core_->before_forward();
    auto out = module_->forward(std::forward<Args>(args)...);
    std::vector<at::Tensor> roots;  // for unused parameters, and where backward starts (buffers' broadcast)
    detail::collect_tensors(out, roots);
    core_->after_forward(std::move(roots));
    return out;
  }
  template <class... Args>
    requires requires(ModuleHolder& m, Args&&... a) { m->forward(std::forward<Args>(a)...); }
  auto operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  /// Disables gradient synchronization while the returned guard lives (PPE's
  /// `no_sync()`): backward passes accumulate local gradients; the first
  /// synchronized backward after it averages the accumulated sum.
  [[nodiscard]] auto no_sync() {
    struct Guard {
      std::shared_ptr<detail::DdpCore> core;
      bool previous;
      Guard(std::shared_ptr<detail::DdpCore> c) : core(std::move(c)), previous(core->require_sync()) {
        core->set_require_sync(false);
      }
      Guard(const Guard&) = delete;
      Guard& operator=(const Guard&) = delete;
      ~Guard() { core->set_require_sync(previous); }
    };
    return Guard(core_);
  }
  /// Whether the next backward synchronizes (false inside `no_sync()`); the
  /// handler's Logic sets it for gradient accumulation.
  bool require_backward_grad_sync() const noexcept { return core_->require_sync(); }
  void set_require_backward_grad_sync(bool sync) noexcept { core_->set_require_sync(sync); }

  /// Installs a c10d communication hook that reduces each bucket instead of
  /// the default all-reduce (before the first backward).
  void register_comm_hook(CommHook hook) { core_->register_comm_hook(std::move(hook)); }
  /// Broadcasts rank 0's buffers now.
  void broadcast_buffers() { core_->broadcast_buffers(); }

  /// The wrapped module.
  ModuleHolder& module() noexcept { return module_; }
  const ModuleHolder& module() const noexcept { return module_; }
  /// The wrapped module as a `torch::nn::Module` (what the manager, the
  /// snapshots and the engine see: no wrapper prefix in state dicts).
  auto ptr() const { return module_ptr(); }
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const noexcept { return core_->process_group(); }

 private:
  auto module_ptr() const {
    if constexpr (requires { module_.ptr(); })
      return module_.ptr();
    else
      return module_;
  }

  ModuleHolder module_;
  std::shared_ptr<detail::DdpCore> core_;
};

}  // namespace ppe::nn::parallel

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/nn/parallel/impl/distributed.ipp"
#endif
