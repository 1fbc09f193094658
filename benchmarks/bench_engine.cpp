// The engine's Trainer against the same training written by hand, on the
// same setups (engine_common.hpp):
//
// - BM_HandWrittenTiny / BM_TrainerOverhead: one iteration (zero_grad,
//   forward, MSE, backward, SGD step) of Linear(8 -> 1) on one sample:
//   LibTorch's own per-iteration cost, and the Trainer's on top of it
//   (target: ratio <= 1.05).
// - BM_FashionEpochHandWritten / BM_FashionEpochTrainer: one epoch of the
//   Fashion-MNIST demo (60000 images, fashion::TrainSettings), run once;
//   the Trainer with the standard extensions (LogReport, ProgressBar,
//   PrintReport, observe_lr, LRScheduler); data loading is not timed
//   (target: ratio <= 1.02).

#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

#include <ppe/engine.hpp>
#include <ppe/ppe.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/training/extensions/lr_scheduler.hpp>

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

// Where the Trainer's writers would write (nothing is written by the tiny one).
std::string scratch_dir() {
  return (std::filesystem::temp_directory_path() / "ppe_bench_engine").string();
}

// The same steps through create_trainer's default Logic and Handler: each
// batch of kSteps iterations is one run() of a fresh one-epoch trainer (its
// construction is spread over the kSteps iterations).
void BM_TrainerOverhead(benchmark::State& state) {
  constexpr std::size_t kSteps = 1000;
  ppe_bench::TinySetup setup = ppe_bench::make_tiny_setup();
  ppe::to(setup.model, "cpu");
  const auto batches = ppe_bench::tiny_batches(setup, kSteps);
  const auto options = ppe::engine::TrainerOptions().out_dir(scratch_dir());
  while (state.KeepRunningBatch(kSteps)) {
    auto trainer = ppe::engine::create_trainer(setup.model, setup.optimizer, 1, options);
    trainer.run(batches);
    benchmark::DoNotOptimize(trainer.iteration());
  }
  at::Tensor loss = ppe_bench::tiny_step(setup);
  if (!std::isfinite(loss.item<double>())) state.SkipWithError("the tiny model's loss is not finite");
}
BENCHMARK(BM_TrainerOverhead);

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

void BM_FashionEpochTrainer(benchmark::State& state) {
  namespace ext = ppe::training::extensions;
  std::string error;
  auto data = ppe_bench::load_fashion_data(&error);
  if (!data) {
    state.SkipWithError(error.c_str());
    return;
  }
  const fashion::TrainSettings settings;
  ppe_bench::FashionSetup setup = ppe_bench::make_fashion_setup(settings);
  ppe::to(setup.model, "cpu");
  const auto batches = ppe_bench::fashion_train_batches(*data, settings.batch_size, settings.seed, 0);
  std::ostringstream out;  // the displays' text: formatted, not shown
  for (auto _ : state) {
    auto trainer = ppe::engine::create_trainer(
        setup.model, setup.optimizer, 1, ppe::engine::TrainerOptions().out_dir(scratch_dir()), ext::LogReport(),
        ext::ProgressBar(ext::ProgressBarOptions().out(&out)),
        ext::PrintReport(ext::PrintReportOptions().out(&out).entries(
            {"epoch", "iteration", "train/loss", "train/accuracy", "lr", "elapsed_time"})),
        ext::observe_lr(*setup.optimizer), ext::LRScheduler(*setup.scheduler));
    trainer.run(batches);
  }
  const double accuracy = ppe_bench::fashion_accuracy(setup.model, ppe_bench::fashion_test_batches(*data));
  state.counters["test_accuracy"] = accuracy;
  state.SetItemsProcessed(state.iterations() * data->train_images.size(0));
  if (accuracy < 0.8) state.SkipWithError("the epoch did not train: test accuracy below 0.8");
}
BENCHMARK(BM_FashionEpochTrainer)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
