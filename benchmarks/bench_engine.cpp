// Hand-written training loops, the baselines of the engine's Trainer (the
// Trainer versions run the same setups from engine_common.hpp):
//
// - BM_HandWrittenTiny: one iteration (zero_grad, forward, MSE, backward,
//   SGD step) of Linear(8 -> 1) on one sample: LibTorch's own per-iteration
//   cost, against which the Trainer's overhead per iteration is measured.
// - BM_FashionEpochHandWritten: one epoch of the Fashion-MNIST demo (60000
//   images, fashion::TrainSettings), run once; data loading is not timed.

#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "engine_common.hpp"

namespace {

void BM_HandWrittenTiny(benchmark::State& state) {
  ppe_bench::TinySetup setup = ppe_bench::make_tiny_setup();
  at::Tensor loss;
  for (auto _ : state) {
    loss = ppe_bench::tiny_step(setup);
    benchmark::DoNotOptimize(loss);
  }
  if (!std::isfinite(loss.item<double>())) state.SkipWithError("the tiny model's loss is not finite");
}
BENCHMARK(BM_HandWrittenTiny);

void BM_FashionEpochHandWritten(benchmark::State& state) {
  std::string error;
  auto data = ppe_bench::load_fashion_data(&error);
  if (!data) {
    state.SkipWithError(error.c_str());
    return;
  }
  const fashion::TrainSettings settings;
  ppe_bench::FashionSetup setup = ppe_bench::make_fashion_setup(settings);
  const auto batches = ppe_bench::fashion_train_batches(*data, settings.batch_size, settings.seed, 0);
  for (auto _ : state) {
    ppe_bench::fashion_train_epoch_by_hand(setup, batches);
    setup.scheduler->step();
  }
  // A check that the epoch trained (about 0.86 after one epoch); not timed.
  const double accuracy = ppe_bench::fashion_accuracy(setup.model, ppe_bench::fashion_test_batches(*data));
  state.counters["test_accuracy"] = accuracy;
  state.SetItemsProcessed(state.iterations() * data->train_images.size(0));
  if (accuracy < 0.8) state.SkipWithError("the epoch did not train: test accuracy below 0.8");
}
// Once: an epoch takes seconds. LibTorch uses 2 threads: wall time, and the
// CPU time of the whole process.
BENCHMARK(BM_FashionEpochHandWritten)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
