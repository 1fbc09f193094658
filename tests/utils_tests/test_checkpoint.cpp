// Ports PPE's tests/pytorch_pfn_extras_tests/utils_tests/test_checkpoint.py (a
// BatchNorm network with a checkpointed part against the same network without:
// the BN statistics and weights after two SGD steps; PPE compares with allclose,
// here they are bitwise equal), plus: gradients with dropout bitwise equal to the
// unchecked run, multiple outputs, and peak memory measured lower.
//
// Memory is measured with c10's allocator reporting hook, independent of timing:
// a c10::MemoryReportingInfoBase installed with c10::DebugInfoGuard
// (PROFILER_STATE) receives every CPU allocation and free (+bytes / -bytes) made
// on this thread (the CPU autograd engine runs the backward on the calling
// thread); the peak of the running sum over one forward+backward is compared.
#include "ppe_test.hpp"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <chrono>

#include "ppe/detail/torch_compat.hpp"
#include "ppe/utils/checkpoint.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_utils_tests_test_checkpoint {

namespace {

bool same(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.sizes() == b.sizes() && torch::equal(a, b);
}

// PPE's SubNet and Net (conv -> bn -> relu, a part checkpointed or not).
struct SubNetImpl : torch::nn::Module {
  SubNetImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(5, 5, 3).stride(1).padding(1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(5));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn1(conv1(x)).relu(); }
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
};
TORCH_MODULE(SubNet);

struct NetImpl : torch::nn::Module {
  explicit NetImpl(bool use_checkpoint) : use_checkpoint(use_checkpoint) {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 5, 3).stride(1).padding(1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(5));
    part1 = register_module("part1", SubNet());
    part2 = register_module("part2", SubNet());
  }
  torch::Tensor forward(torch::Tensor x) {
    x = bn1(conv1(x)).relu();
    x = use_checkpoint ? ppe::utils::checkpoint(part1, x) : part1(x);
    return part2(x);
  }
  bool use_checkpoint;
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  SubNet part1{nullptr}, part2{nullptr};
};
TORCH_MODULE(Net);

// PPE's _get_bn_stats_test_checkpoint (h = w = 16 instead of 32, to stay fast).
std::vector<torch::Tensor> bn_stats(bool use_checkpoint) {
  torch::manual_seed(42);
  Net net(use_checkpoint);
  torch::optim::SGD opt(net->parameters(), 0.1);
  const std::int64_t h = 16, w = 16;
  for (int i = 0; i < 2; ++i) {
    const auto x = torch::arange(2 * h * w).reshape({2, 1, h, w}).to(torch::kFloat);
    opt.zero_grad();
    net(x).sum().backward();
    opt.step();
  }
  auto& bn = net->part1->bn1;
  std::vector<torch::Tensor> out{bn->weight, bn->bias, bn->running_mean, bn->running_var, bn->num_batches_tracked};
  for (const auto& p : net->parameters()) out.push_back(p);
  return out;
}

// Counts the bytes of CPU allocations made on this thread while installed.
struct PeakMemory : c10::MemoryReportingInfoBase {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  using Total = ppe::detail::compat::memory_report_total_t;
  void reportMemoryUsage(void*, std::int64_t alloc_size, Total, Total, c10::Device) override {
    current += alloc_size;
    peak = std::max(peak, current);
  }
  bool memoryProfilingEnabled() const override { return true; }
  void restart() { peak = current; }
};

// A deep MLP: `blocks` blocks of three Linear(width)+tanh.
struct Mlp {
  std::vector<torch::nn::Sequential> blocks;
  Mlp(int n, std::int64_t width) {
    for (int i = 0; i < n; ++i)
      blocks.emplace_back(torch::nn::Linear(width, width), torch::nn::Tanh(),
                          torch::nn::Linear(width, width), torch::nn::Tanh(),
                          torch::nn::Linear(width, width), torch::nn::Tanh());
  }
  torch::Tensor forward(torch::Tensor x, bool use_checkpoint) {
    for (auto& b : blocks) x = use_checkpoint ? ppe::utils::checkpoint(b, x) : b->forward(x);
    return x;
  }
};

}  // namespace

TEST_CASE("checkpoint: BatchNorm statistics and weights equal the unchecked run (PPE's test_checkpoint)") {
  const auto baseline = bn_stats(false);
  const auto checked = bn_stats(true);
  REQUIRE(baseline.size() == checked.size());
  for (std::size_t i = 0; i < baseline.size(); ++i) {
    CAPTURE(i);
    CHECK(same(baseline[i], checked[i]));  // bitwise (PPE: allclose)
  }
}

TEST_CASE("checkpoint: with dropout, gradients are bitwise equal to the unchecked run") {
  torch::manual_seed(0);
  torch::nn::Linear l1(8, 16), l2(16, 4);
  auto fn = [&](const torch::Tensor& x) {
    return l2(torch::dropout(l1(x).tanh(), 0.5, /*train=*/true)).sin();
  };
  const auto x0 = torch::rand({5, 8});
  auto run = [&](int mode) {  // 0: plain, 1: checkpoint, 2: checkpoint without preserving the RNG
    l1->zero_grad();
    l2->zero_grad();
    auto x = x0.clone().requires_grad_(true);
    torch::manual_seed(7);
    torch::Tensor y = mode == 0   ? fn(x)
                      : mode == 1 ? ppe::utils::checkpoint(fn, x)
                                  : ppe::utils::checkpoint(ppe::utils::CheckpointOptions().preserve_rng_state(false), fn, x);
    torch::rand({100});  // moves the generator between forward and backward
    y.pow(2).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), x.grad(), l1->weight.grad().clone(), l1->bias.grad().clone(),
                                      l2->weight.grad().clone()};
  };
  const auto plain = run(0);
  const auto checked = run(1);
  for (std::size_t i = 0; i < plain.size(); ++i) {
    CAPTURE(i);
    CHECK(same(plain[i], checked[i]));
  }
  // Without the preserved state the recomputation draws another mask.
  const auto unpreserved = run(2);
  CHECK(same(plain[0], unpreserved[0]));
  CHECK(!same(plain[1], unpreserved[1]));
}

TEST_CASE("checkpoint: several inputs and outputs; an input that needs no grad gets none") {
  auto fn = [](const torch::Tensor& a, const torch::Tensor& b) { return std::make_tuple(a * b, (a + b).exp()); };
  const auto a0 = torch::rand({3}), b0 = torch::rand({3});
  auto a1 = a0.clone().requires_grad_(true);
  auto [p1, q1] = fn(a1, b0);
  (p1.sum() + q1.sum()).backward();
  auto a2 = a0.clone().requires_grad_(true);
  auto [p2, q2] = ppe::utils::checkpoint(fn, a2, b0);
  CHECK(p2.requires_grad());
  (p2.sum() + q2.sum()).backward();
  CHECK(same(a1.grad(), a2.grad()));
  CHECK(same(p1, p2));

  auto vec = [](const torch::Tensor& a) { return std::vector<torch::Tensor>{a.sin(), a.cos()}; };
  auto a3 = a0.clone().requires_grad_(true);
  const auto outs = ppe::utils::checkpoint(vec, a3);
  REQUIRE(outs.size() == 2);
  outs[1].sum().backward();  // only one output used
  CHECK(same(a3.grad(), -a0.sin()));

  ppe_test::WarningCollector warnings;
  const auto y = ppe::utils::checkpoint(vec, a0);
  CHECK(!y[0].requires_grad());
  REQUIRE(warnings.messages.size() == 1);
  CHECK(warnings.messages[0].find("none of the inputs requires grad") != std::string::npos);
}

TEST_CASE("checkpoint: peak memory of forward+backward is lower (and the gradients equal)") {
  // 8 checkpointed blocks of 3 x (Linear(64) + tanh) on a [512, 64] batch:
  // without checkpointing every layer's activations live until the backward;
  // with it, only the 8 block inputs, plus one block's recomputed activations.
  torch::manual_seed(0);
  Mlp mlp(8, 64);
  const auto x0 = torch::rand({512, 64});
  std::vector<torch::Tensor> params;
  for (auto& b : mlp.blocks)
    for (auto& p : b->parameters()) params.push_back(p);
  auto run = [&](bool use_checkpoint, std::int64_t& peak, double& ms) {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    auto info = std::make_shared<PeakMemory>();
    std::vector<torch::Tensor> grads;
    const auto start = std::chrono::steady_clock::now();
    {
      c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, info);
      auto x = x0.clone().requires_grad_(true);
      info->restart();
      const auto base = info->current;
      mlp.forward(x, use_checkpoint).sum().backward();
      peak = info->peak - base;
      grads.push_back(x.grad());
    }
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (auto& p : params) grads.push_back(p.grad());
    return grads;
  };
  std::int64_t peak_plain = 0, peak_checked = 0;
  double ms_plain = 1e9, ms_checked = 1e9, ms = 0;
  run(false, peak_plain, ms);  // warm-up (first-call allocations)
  run(true, peak_checked, ms);
  std::vector<torch::Tensor> plain, checked;
  for (int i = 0; i < 5; ++i) {  // the fastest of 5 steps each, for the report only
    plain = run(false, peak_plain, ms);
    ms_plain = std::min(ms_plain, ms);
    checked = run(true, peak_checked, ms);
    ms_checked = std::min(ms_checked, ms);
  }
  for (std::size_t i = 0; i < plain.size(); ++i) {
    CAPTURE(i);
    CHECK(same(plain[i], checked[i]));
  }
  MESSAGE("peak memory of forward+backward: " << peak_plain << " B unchecked, " << peak_checked
                                              << " B checkpointed; step time (best of 5) " << ms_plain << " ms vs "
                                              << ms_checked << " ms");
  CHECK(peak_plain > 0);
  // Deterministic byte counts (no timing): 3424520 vs 1810952 B when written.
  CHECK(peak_checked * 5 < peak_plain * 3);
}

}  // namespace ppe_test_utils_tests_test_checkpoint
