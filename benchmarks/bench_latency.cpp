// Latency in the loop (issue 13; ARCHITECTURE section 6: "measure p50/p99/max
// iteration time, not only means"). The step is tiny so that the loop's own
// cost shows: Linear(10 -> 1) on one sample, MSE loss, SGD (lr 1e-3), the loss
// tensor reported as `main/loss`.
//
//   BM_HandWrittenTinyStep    the step by hand (no reporting, no extensions).
//   BM_ManagedTinyStep        the same step in a manager's run_iteration as
//                             users write it: LogReport (emitting every epoch
//                             of 1000 iterations through the manager's default
//                             SimpleWriter; /thread_writer:1 a ThreadWriter),
//                             PrintReport and ProgressBar with their default
//                             options printing to a string stream. Emissions
//                             are included, amortised over the epoch.
//   BM_IterationLatency       one run of kLatencyIterations iterations of the
//                             managed step, plus a `snapshot` every 100
//                             iterations (at 50, 150, ...; a ThreadWriter of
//                             its own), each iteration timed
//                             with steady_clock: counters p50_us, p99_us,
//                             max_us; emit_first_us and emit_max_us (the
//                             first, cold, and the slowest later iteration in
//                             which LogReport and PrintReport emitted);
//                             snapshot_first_us and snapshot_max_us (the same
//                             for the iterations that took a snapshot);
//                             bar_max_us (ProgressBar updates); state_copy_us
//                             (the median time of state_dict() plus
//                             owned_copy(), what a snapshot must do on the
//                             training thread); first_us (the first
//                             iteration: it starts the extensions).
//   BM_IterationLatencyHandWritten  the same per-iteration timing of the step
//                             by hand.
//
// Instructions under callgrind: `bench_latency --count <managed|hand> K` runs
// K iterations (1000 per epoch, as above, without the snapshot) outside Google
// Benchmark, each through a noinline function that callgrind can collect
// alone: ppe_latency_hand (a hand-written step), ppe_latency_managed (a
// managed iteration in which LogReport does not emit) and
// ppe_latency_managed_emit (one in which it does). For example
//   valgrind --tool=callgrind --collect-atstart=no
//     --toggle-collect=ppe_latency_managed_emit build/benchmarks/bench_latency --count managed 5000
// gives the instructions of the 5 emission iterations.
//
// The summary alone: `bench_latency --count <summary_cpu|summary_meta|running_meta> K`
// adds K 0-dim tensors (float32 on the CPU, or on the meta device: a device's
// host-side cost without any computation) to a Summary through
// ppe_latency_summary_add, then reads its mean through ppe_latency_summary_read;
// running_meta is the alternative design of a running device-side sum
// updated under InferenceMode at each add (ppe_latency_running_add).

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <ATen/Parallel.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <ppe/ppe.hpp>
#include "bench_support.hpp"
#include <ppe/training/extensions/snapshot.hpp>

namespace {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
using Clock = std::chrono::steady_clock;
using ppe_bench::NullBuffer;
using ppe_bench::ScratchDir;

constexpr std::int64_t kItersPerEpoch = 1000;
constexpr std::int64_t kLatencyIterations = 5000;
constexpr std::int64_t kSnapshotEvery = 100;
constexpr std::int64_t kProgressBarEvery = 100;  // ProgressBar's default update_interval
// The json log is rewritten whole at each emission; a training run has a
// bounded number of epochs, so the steady-state benchmark starts a new
// manager (untimed) after this many.
constexpr std::int64_t kEpochsPerRun = 100;

// The tiny model, its optimizer and its one sample; the same initial state at
// every construction.
struct Tiny {
  Tiny() : model(nullptr) {
    torch::manual_seed(0);
    model = torch::nn::Linear(10, 1);
    optimizer = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(1e-3));
    x = at::rand({1, 10});
    t = at::rand({1, 1});
  }
  torch::nn::Linear model;
  std::unique_ptr<torch::optim::SGD> optimizer;
  at::Tensor x, t;

  at::Tensor step() {
    optimizer->zero_grad();
    at::Tensor loss = at::mse_loss(model->forward(x), t);
    loss.backward();
    optimizer->step();
    return loss;
  }
};

// What users write: the manager's default writer (a SimpleWriter under
// `out`) unless `writer` is given, and PrintReport and ProgressBar with their
// default options printing to `text` (a string stream in BM_ManagedTinyStep).
auto make_manager(Tiny& tiny, const std::filesystem::path& out, std::ostream& text,
                  std::shared_ptr<ppe::writing::Writer> writer = nullptr) {
  auto options = tr::ManagerOptions().max_epochs(1e9).iters_per_epoch(kItersPerEpoch).out_dir(out.string());
  if (writer) options.writer(std::move(writer));
  using M = decltype(tr::ExtensionsManager(options, tiny.model, *tiny.optimizer, ext::LogReport(),
                                           ext::PrintReport(), ext::ProgressBar()));
  return std::make_unique<M>(options, tiny.model, *tiny.optimizer, ext::LogReport(),
                             ext::PrintReport(ext::PrintReportOptions().out(&text)),
                             ext::ProgressBar(ext::ProgressBarOptions().out(&text)));
}

// Snapshots go through a writer of their own, at iterations 50, 150, ...: a
// ThreadWriter waits for its previous write, so sharing one with LogReport,
// or snapshotting in the iterations where LogReport emits, would time the
// snapshot's write in the emission's iteration.
auto make_manager_with_snapshot(Tiny& tiny, const std::filesystem::path& out, std::ostream& null) {
  auto writer = std::make_shared<ppe::writing::ThreadWriter>(out);
  auto snapshots = std::make_shared<ppe::writing::ThreadWriter>(out);
  const auto options = tr::ManagerOptions().max_epochs(1e9).iters_per_epoch(kItersPerEpoch).writer(writer);
  return tr::ExtensionsManager(
      options, tiny.model, *tiny.optimizer, ext::LogReport(), ext::PrintReport(ext::PrintReportOptions().out(&null)),
      ext::ProgressBar(ext::ProgressBarOptions().out(&null).training_length(tr::TrainingLength{1e9, tr::Unit::Epoch})),
      tr::entry(ext::snapshot(ext::SnapshotOptions().writer(snapshots).n_retains(2)),
                [](const tr::Manager& m) { return m.iteration() % kSnapshotEvery == kSnapshotEvery / 2; }));
}

template <class Manager>
void managed_step(Manager& m, Tiny& tiny) {
  m.run_iteration([&] {
    at::Tensor loss = tiny.step();
    ppe::reporting::report({{"main/loss", loss}});
  });
}

void check_finite(benchmark::State& state, Tiny& tiny) {
  if (!std::isfinite(tiny.step().item<double>())) state.SkipWithError("the tiny model's loss is not finite");
}

void BM_HandWrittenTinyStep(benchmark::State& state) {
  Tiny tiny;
  for (auto _ : state) {
    at::Tensor loss = tiny.step();
    benchmark::DoNotOptimize(loss);
  }
  check_finite(state, tiny);
}
BENCHMARK(BM_HandWrittenTinyStep);

// The managed step as users write it (see make_manager); with a
// ThreadWriter (`state.range(0)` 1) the log's write leaves the training thread.
void BM_ManagedTinyStep(benchmark::State& state) {
  const bool thread_writer = state.range(0) != 0;
  ScratchDir dir("ppe_bench_latency");
  Tiny tiny;
  auto text = std::make_unique<std::ostringstream>();
  auto writer = [&]() -> std::shared_ptr<ppe::writing::Writer> {
    return thread_writer ? std::make_shared<ppe::writing::ThreadWriter>(dir.path) : nullptr;
  };
  auto manager = make_manager(tiny, dir.path, *text, writer());
  std::int64_t epochs = 0;
  for (auto _ : state) {
    managed_step(*manager, tiny);
    if (manager->epoch() == kEpochsPerRun) [[unlikely]] {
      state.PauseTiming();
      epochs += manager->epoch();
      manager->finalize();
      text = std::make_unique<std::ostringstream>();
      manager = make_manager(tiny, dir.path, *text, writer());
      state.ResumeTiming();
    }
  }
  manager->finalize();
  state.counters["epochs"] = static_cast<double>(epochs + manager->epoch());
  check_finite(state, tiny);
}
BENCHMARK(BM_ManagedTinyStep)->ArgName("thread_writer")->Arg(0)->Arg(1);

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// p50, p99 and max of `times` (µs) as counters.
void latency_counters(benchmark::State& state, std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const auto at = [&](double q) { return times[static_cast<std::size_t>(q * static_cast<double>(times.size() - 1))]; };
  state.counters["p50_us"] = at(0.5);
  state.counters["p99_us"] = at(0.99);
  state.counters["max_us"] = times.back();
}

void BM_IterationLatency(benchmark::State& state) {
  NullBuffer null_buffer;
  std::ostream null(&null_buffer);
  ScratchDir dir("ppe_bench_latency");
  Tiny tiny;
  std::vector<double> times, emits, snapshots, bars, copies;
  times.reserve(kLatencyIterations);
  double first = 0;
  for (auto _ : state) {
    auto manager = make_manager_with_snapshot(tiny, dir.path, null);
    times.clear();
    emits.clear();
    snapshots.clear();
    bars.clear();
    for (std::int64_t i = 0; i < kLatencyIterations; ++i) {
      const auto t0 = Clock::now();
      managed_step(manager, tiny);
      const double t = us(Clock::now() - t0);
      times.push_back(t);
      if (i == 0) {
        first = t;
        continue;
      }
      const std::int64_t it = manager.iteration();
      if (it % kItersPerEpoch == 0)
        emits.push_back(t);
      else if (it % kSnapshotEvery == kSnapshotEvery / 2)
        snapshots.push_back(t);
      else if (it % kProgressBarEvery == 0)
        bars.push_back(t);
    }
    // What a snapshot must copy on the training thread, alone: the state
    // and an owned copy of it (the file is pickled and written on the
    // writer's thread).
    copies.clear();
    for (int k = 0; k < 21; ++k) {
      const auto t0 = Clock::now();
      ppe::State owned = ppe::serialization::owned_copy(manager.state_dict());
      benchmark::DoNotOptimize(owned);
      copies.push_back(us(Clock::now() - t0));
    }
    manager.finalize();
  }
  latency_counters(state, times);
  // The first of each kind runs cold (its code and data not yet in the
  // caches, the writer's first thread); the maxima are over the others.
  const auto max_after_first = [](const std::vector<double>& v) {
    return v.size() < 2 ? 0.0 : *std::max_element(v.begin() + 1, v.end());
  };
  state.counters["emit_first_us"] = emits.empty() ? 0.0 : emits.front();
  state.counters["emit_max_us"] = max_after_first(emits);
  state.counters["snapshot_first_us"] = snapshots.empty() ? 0.0 : snapshots.front();
  state.counters["snapshot_max_us"] = max_after_first(snapshots);
  state.counters["bar_max_us"] = max_after_first(bars);
  std::sort(copies.begin(), copies.end());
  state.counters["state_copy_us"] = copies[copies.size() / 2];
  state.counters["first_us"] = first;
  check_finite(state, tiny);
}
BENCHMARK(BM_IterationLatency)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_IterationLatencyHandWritten(benchmark::State& state) {
  Tiny tiny;
  std::vector<double> times;
  times.reserve(kLatencyIterations);
  double first = 0;
  for (auto _ : state) {
    times.clear();
    for (std::int64_t i = 0; i < kLatencyIterations; ++i) {
      const auto t0 = Clock::now();
      at::Tensor loss = tiny.step();
      benchmark::DoNotOptimize(loss);
      const double t = us(Clock::now() - t0);
      times.push_back(t);
      if (i == 0) first = t;
    }
  }
  latency_counters(state, times);
  state.counters["first_us"] = first;
  check_finite(state, tiny);
}
BENCHMARK(BM_IterationLatencyHandWritten)->Iterations(1)->Unit(benchmark::kMillisecond);

using TinyManager =
    std::remove_reference_t<decltype(*make_manager(std::declval<Tiny&>(), std::filesystem::path(), std::declval<std::ostream&>(), nullptr))>;

}  // namespace

// The callgrind entry points (see the top of the file). Not static: callgrind
// finds them by name.
extern "C" __attribute__((noinline)) void ppe_latency_hand(Tiny& tiny) {
  at::Tensor loss = tiny.step();
  benchmark::DoNotOptimize(loss);
}
extern "C" __attribute__((noinline)) void ppe_latency_managed(TinyManager& m, Tiny& tiny) { managed_step(m, tiny); }
extern "C" __attribute__((noinline)) void ppe_latency_managed_emit(TinyManager& m, Tiny& tiny) {
  managed_step(m, tiny);
}

// A running device-side sum: the design Summary does not use.
struct RunningSum {
  at::Tensor sx, sx2;
  double n = 0;
};

extern "C" __attribute__((noinline)) void ppe_latency_summary_add(ppe::reporting::Summary& s, const at::Tensor& t) {
  s.add(t);
}
extern "C" __attribute__((noinline)) void ppe_latency_summary_read(ppe::reporting::Summary& s) {
  ppe::reporting::Value mean = s.compute_mean();
  benchmark::DoNotOptimize(mean);
}
extern "C" __attribute__((noinline)) void ppe_latency_running_add(RunningSum& r, const at::Tensor& t) {
  c10::InferenceMode guard;
  r.sx.add_(t);
  r.sx2.addcmul_(t, t);
  r.n += 1;
}

namespace {

int count_summary(std::string_view mode, std::int64_t k) {
  const bool meta = mode != "summary_cpu";
  const at::Tensor t = at::scalar_tensor(0.5, at::TensorOptions().dtype(at::kFloat).device(meta ? at::kMeta : at::kCPU));
  if (mode == "running_meta") {
    RunningSum r{at::zeros_like(t), at::zeros_like(t)};
    for (std::int64_t i = 0; i < k; ++i) ppe_latency_running_add(r, t);
    return 0;
  }
  ppe::reporting::Summary s;
  for (std::int64_t i = 0; i < k; ++i) ppe_latency_summary_add(s, t);
  ppe_latency_summary_read(s);
  return 0;
}

int count_main(std::string_view mode, std::string_view k_text) {
  std::int64_t k = 0;
  if (std::from_chars(k_text.data(), k_text.data() + k_text.size(), k).ec != std::errc() || k <= 0) {
    std::fprintf(stderr, "bench_latency: K must be a positive integer\n");
    return 2;
  }
  at::set_num_threads(1);
  if (mode == "summary_cpu" || mode == "summary_meta" || mode == "running_meta") return count_summary(mode, k);
  Tiny tiny;
  if (mode == "hand") {
    for (std::int64_t i = 0; i < k; ++i) ppe_latency_hand(tiny);
    return 0;
  }
  if (mode != "managed") {
    std::fprintf(stderr, "bench_latency: the mode is managed, hand, summary_cpu, summary_meta or running_meta\n");
    return 2;
  }
  std::ostringstream text;
  ScratchDir dir("ppe_bench_latency");
  auto manager = make_manager(tiny, dir.path, text);
  for (std::int64_t i = 0; i < k; ++i) {
    // LogReport emits in the iteration that completes an epoch.
    if ((manager->iteration() + 1) % kItersPerEpoch == 0)
      ppe_latency_managed_emit(*manager, tiny);
    else
      ppe_latency_managed(*manager, tiny);
  }
  manager->finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--count") {
    if (argc != 4) {
      std::fprintf(stderr, "usage: bench_latency --count <managed|hand|summary_cpu|summary_meta|running_meta> K\n");
      return 2;
    }
    return count_main(argv[2], argv[3]);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
