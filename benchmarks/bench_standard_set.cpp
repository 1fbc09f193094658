// The standard set of display extensions around a loop (issue 3):
//
//   BM_StandardSet/E            one run_iteration of a manager with observe_lr,
//                               LogReport (emitting once per epoch of E
//                               iterations, json format), PrintReport and
//                               ProgressBar (both printing to a stream that
//                               discards), and one scalar `report` per
//                               iteration. Amortised over the epoch: the
//                               emission, its file write (SimpleWriter: the
//                               loop waits for write + fsync), the printed row
//                               and the progress updates are included.
//   BM_StandardSetThreadWriter/E  the same with a ThreadWriter as the
//                               manager's writer: the file write leaves the loop.
//   BM_StandardSetHandWritten/E the same loop by hand: accumulate the reported
//                               value, print a row per epoch and a status
//                               line every 100 iterations.
//
// E = 1e9 measures the steady state (no emission within the run). A training
// run has a bounded number of epochs, and PPE's json log rewrites its whole
// history at each emission, so the manager is replaced (outside the timing)
// every kEpochsPerRun epochs.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <ppe/ppe.hpp>
#include "bench_support.hpp"

namespace {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

constexpr std::int64_t kEpochsPerRun = 100;

auto make_manager(std::int64_t iters_per_epoch, const std::filesystem::path& out, std::ostream& null,
                  torch::nn::Linear& model, torch::optim::SGD& optimizer, bool threaded) {
  auto options = tr::ManagerOptions().max_epochs(1e9).iters_per_epoch(iters_per_epoch).out_dir(out.string());
  if (threaded) options.writer(std::make_shared<ppe::writing::ThreadWriter>(out));
  return std::make_unique<decltype(tr::ExtensionsManager(
      options, model, optimizer, ext::observe_lr(optimizer), ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().out(&null)),
      ext::ProgressBar(ext::ProgressBarOptions().out(&null))))>(
      options, model, optimizer, ext::observe_lr(optimizer), ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().out(&null)),
      ext::ProgressBar(ext::ProgressBarOptions().out(&null).training_length(tr::TrainingLength{1e9, tr::Unit::Epoch})));
}

void standard_set(benchmark::State& state, bool threaded) {
  ppe_bench::NullBuffer null_buffer;
  std::ostream null(&null_buffer);
  const ppe_bench::ScratchDir dir("ppe_bench_standard_set");
  const auto& out = dir.path;
  torch::nn::Linear model(2, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  const std::int64_t ipe = state.range(0);
  auto manager = make_manager(ipe, out, null, model, optimizer, threaded);
  double loss = 0.25;
  std::int64_t epochs = 0;
  for (auto _ : state) {
    manager->run_iteration([&] { ppe::reporting::report({{"main/loss", loss}}); });
    loss += 1e-9;
    if (manager->epoch() == kEpochsPerRun) [[unlikely]] {
      state.PauseTiming();
      epochs += manager->epoch();
      manager->finalize();
      manager = make_manager(ipe, out, null, model, optimizer, threaded);
      state.ResumeTiming();
    }
  }
  manager->finalize();
  state.counters["epochs"] = static_cast<double>(epochs + manager->epoch());
  std::filesystem::remove_all(out);
}

void BM_StandardSet(benchmark::State& state) { standard_set(state, false); }
void BM_StandardSetThreadWriter(benchmark::State& state) { standard_set(state, true); }

void BM_StandardSetHandWritten(benchmark::State& state) {
  ppe_bench::NullBuffer null_buffer;
  std::ostream null(&null_buffer);
  const std::int64_t ipe = state.range(0);
  std::int64_t iteration = 0;
  double sum = 0, sum2 = 0, n = 0;
  double loss = 0.25;
  for (auto _ : state) {
    benchmark::DoNotOptimize(loss);
    sum += loss;
    sum2 += loss * loss;
    n += 1;
    ++iteration;
    if (iteration % 100 == 0) null << iteration << " iter\n";
    if (iteration % ipe == 0) {
      null << iteration / ipe << "  " << iteration << "  " << sum / n << "\n";
      sum = sum2 = n = 0;
    }
    loss += 1e-9;
  }
}

}  // namespace

BENCHMARK(BM_StandardSet)->Arg(1000)->Arg(10000)->Arg(1000000000);
BENCHMARK(BM_StandardSetThreadWriter)->Arg(1000)->Arg(10000);
BENCHMARK(BM_StandardSetHandWritten)->Arg(1000)->Arg(10000);

BENCHMARK_MAIN();
