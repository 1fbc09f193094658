// Cost of one `ppe::reporting::report({{"main/loss", v}})` into the current
// reporter (targets: <= 50 ns for a double, <= 150 ns for a loss tensor).
//
// The manager's reporter is made current over its observation outside the
// timing loop (as run_iteration does), so only the report is timed. The key
// stays in the observation, so every report after the first overwrites it, as
// a second report of the same key within an iteration does. BM_ReportDoubleFresh
// also clears the observation before each report: the first report of a key in
// an iteration, with the clear() that run_iteration does once per iteration.

#include <benchmark/benchmark.h>

#include <ATen/ops/ones.h>

#include <ppe/ppe.hpp>

namespace {

auto make_manager() {
  return ppe::training::ExtensionsManager(
      ppe::training::ManagerOptions().max_epochs(1).iters_per_epoch(1'000'000'000), ppe::training::Models{},
      ppe::training::Optimizers{});
}

void BM_ReportDouble(benchmark::State& state) {
  auto manager = make_manager();
  auto scope = manager.reporter().scope(manager.observation());
  double loss = 0.5;
  for (auto _ : state) {
    benchmark::DoNotOptimize(loss);
    ppe::reporting::report({{"main/loss", loss}});
    benchmark::ClobberMemory();
  }
  if (manager.observation().at("main/loss").scalar() != 0.5) state.SkipWithError("the report was lost");
}

void BM_ReportDoubleFresh(benchmark::State& state) {
  auto manager = make_manager();
  auto scope = manager.reporter().scope(manager.observation());
  double loss = 0.5;
  for (auto _ : state) {
    manager.observation().clear();
    benchmark::DoNotOptimize(loss);
    ppe::reporting::report({{"main/loss", loss}});
    benchmark::ClobberMemory();
  }
  if (manager.observation().size() != 1) state.SkipWithError("the report was lost");
}

// A realistic loss: a 0-dim float tensor attached to the autograd graph.
at::Tensor loss_tensor(bool requires_grad) {
  at::Tensor w = at::ones({8}, at::kFloat).requires_grad_(requires_grad);
  at::Tensor x = at::ones({8}, at::kFloat);
  return w.mul(x).sum();
}

void report_tensor(benchmark::State& state, const at::Tensor& loss) {
  auto manager = make_manager();
  auto scope = manager.reporter().scope(manager.observation());
  for (auto _ : state) {
    ppe::reporting::report({{"main/loss", loss}});
    benchmark::ClobberMemory();
  }
  const at::Tensor& stored = manager.observation().at("main/loss").tensor();
  if (stored.requires_grad()) state.SkipWithError("the reported tensor was not detached");
}

void BM_ReportTensor(benchmark::State& state) {
  const at::Tensor loss = loss_tensor(true);
  if (!loss.requires_grad() || loss.dim() != 0) state.SkipWithError("the loss must be a 0-dim tensor requiring grad");
  report_tensor(state, loss);
}

void BM_ReportTensorNoGrad(benchmark::State& state) {
  const at::Tensor loss = loss_tensor(false);
  if (loss.requires_grad() || loss.dim() != 0) state.SkipWithError("the loss must be a 0-dim tensor without grad");
  report_tensor(state, loss);
}

}  // namespace

BENCHMARK(BM_ReportDouble);
BENCHMARK(BM_ReportDoubleFresh);
BENCHMARK(BM_ReportTensor);
BENCHMARK(BM_ReportTensorNoGrad);

BENCHMARK_MAIN();
