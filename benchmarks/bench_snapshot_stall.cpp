// How long one snapshot blocks the training loop, per writer (ARCHITECTURE
// section 6: "a threaded writer stalls the loop only for the state copy").
//
// The model is three Linear layers (2048x2048, 2048x2048, 2048x1024: ~10.5 M
// float parameters, ~42 MB) with a plain SGD optimizer (no per-parameter
// state), in a manager; files are ppe::serialization::pickle_dumps archives (with checksum).
//
// - BM_StateCopy: cloning the parameters into owned tensors (the floor of a
//   stall for writers that serialise later, on a worker).
// - BM_StatePickle: pickling the live parameters (what process writers do in
//   the caller: the pickled bytes are their owned copy).
// - BM_DiskWrite: SimpleWriter writing the already pickled bytes (the file
//   I/O, with fsync, that asynchronous writers take off the loop).
// - BM_SnapshotStall/<writer>: the time the training loop is blocked by one
//   snapshot taken by the `snapshot` extension (Snapshot::take: the manager's
//   state_dict, then, for thread writers, an owned copy pickled later on the
//   worker; for process writers and SimpleWriter, the pickled bytes of the
//   live state) and the writer call.
//   Each iteration uses a fresh writer, so no previous write is waited for;
//   the wait for the write to finish (finalize) is outside the timed region
//   and reported as the counter `done_ms` (call to file on disk).
//
// Files go to a scratch directory under the system temp directory, removed
// at the end. Few iterations: every one writes ~42 MB and fsyncs.

#include <benchmark/benchmark.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include <ppe/ppe.hpp>
#include "bench_support.hpp"
#include <ppe/serialization.hpp>
#include <ppe/training/extensions/snapshot.hpp>

namespace {

namespace wr = ppe::writing;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Model {
  torch::nn::Sequential net{torch::nn::Linear(2048, 2048), torch::nn::Linear(2048, 2048),
                            torch::nn::Linear(2048, 1024)};
  torch::optim::SGD opt{net->parameters(), 0.1};

  std::int64_t parameter_count() const {
    std::int64_t n = 0;
    for (const auto& p : net->parameters()) n += p.numel();
    return n;
  }

  // The parameters by handle (no copy), or cloned into owned tensors.
  ppe::State state(bool clone) const {
    torch::NoGradGuard no_grad;
    auto s = ppe::State::dict();
    for (const auto& p : net->named_parameters())
      s.set(p.key(), clone ? p.value().detach().clone() : p.value().detach());
    return s;
  }
};

Model& model() {
  static Model m;
  return m;
}

void BM_StateCopy(benchmark::State& state) {
  const Model& m = model();
  // One untimed copy first: the first allocations of this size fault their
  // pages in, which a training loop that snapshots regularly does not pay.
  benchmark::DoNotOptimize(m.state(/*clone=*/true));
  for (auto _ : state) {
    ppe::State copy = m.state(/*clone=*/true);
    benchmark::DoNotOptimize(copy);
  }
  state.counters["params"] = static_cast<double>(m.parameter_count());
}

void BM_StatePickle(benchmark::State& state) {
  const Model& m = model();
  std::size_t size = 0;
  for (auto _ : state) {
    std::vector<char> bytes = ppe::serialization::pickle_dumps(m.state(/*clone=*/false));
    size = bytes.size();
    benchmark::DoNotOptimize(bytes.data());
  }
  state.counters["MB"] = static_cast<double>(size) / 1e6;
}

void BM_DiskWrite(benchmark::State& state) {
  ppe_bench::ScratchDir dir("ppe_bench_snapshot");
  wr::SimpleWriter w(dir.path);
  const auto bytes = std::make_shared<const std::string>([] {
    const auto v = ppe::serialization::pickle_dumps(model().state(false));
    return std::string(v.begin(), v.end());
  }());
  for (auto _ : state) w("snapshot", wr::owned_bytes(bytes));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes->size()));
}

template <class W>
void BM_SnapshotStall(benchmark::State& state) {
  Model& m = model();
  ppe_bench::ScratchDir dir("ppe_bench_snapshot");
  double done = 0;
  for (auto _ : state) {
    auto w = std::make_shared<W>(dir.path);
    auto manager = ppe::training::ExtensionsManager(
        ppe::training::ManagerOptions().max_epochs(1).iters_per_epoch(1).writer(w), m.net, m.opt);
    auto snapshot = ppe::training::extensions::snapshot(ppe::training::extensions::SnapshotOptions().writer(w));
    snapshot.initialize(manager);
    const auto t0 = Clock::now();
    snapshot.take(manager);
    state.SetIterationTime(seconds_since(t0));
    w->finalize();  // untimed: the loop would go on training meanwhile
    done += seconds_since(t0);
  }
  state.counters["done_ms"] = benchmark::Counter(done * 1e3, benchmark::Counter::kAvgIterations);
}

void configure(benchmark::internal::Benchmark* b) { b->Iterations(5)->Unit(benchmark::kMillisecond); }

[[maybe_unused]] const bool registered = [] {
  configure(benchmark::RegisterBenchmark("BM_StateCopy", BM_StateCopy));
  configure(benchmark::RegisterBenchmark("BM_StatePickle", BM_StatePickle));
  configure(benchmark::RegisterBenchmark("BM_DiskWrite", BM_DiskWrite));
  configure(benchmark::RegisterBenchmark("BM_SnapshotStall/SimpleWriter", BM_SnapshotStall<wr::SimpleWriter>)
                ->UseManualTime());
  configure(benchmark::RegisterBenchmark("BM_SnapshotStall/ThreadWriter", BM_SnapshotStall<wr::ThreadWriter>)
                ->UseManualTime());
  configure(
      benchmark::RegisterBenchmark("BM_SnapshotStall/ThreadQueueWriter", BM_SnapshotStall<wr::ThreadQueueWriter>)
          ->UseManualTime());
  configure(benchmark::RegisterBenchmark("BM_SnapshotStall/ProcessWriter", BM_SnapshotStall<wr::ProcessWriter>)
                ->UseManualTime());
  configure(
      benchmark::RegisterBenchmark("BM_SnapshotStall/ProcessQueueWriter", BM_SnapshotStall<wr::ProcessQueueWriter>)
          ->UseManualTime());
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
