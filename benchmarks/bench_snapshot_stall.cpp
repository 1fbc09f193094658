// How long one snapshot blocks the training loop, per writer (ARCHITECTURE
// section 6: "a threaded writer stalls the loop only for the state copy").
//
// The state is the parameters of three Linear layers (2048x2048, 2048x2048,
// 2048x1024: ~10.5 M float parameters, ~42 MB), pickled with ppe::pickle_dumps.
//
// - BM_StateCopy: cloning the parameters into owned tensors (the floor of a
//   stall for writers that serialise later, on a worker).
// - BM_StatePickle: pickling the live parameters (what process writers do in
//   the caller: the pickled bytes are their owned copy).
// - BM_DiskWrite: SimpleWriter writing the already pickled bytes (the file
//   I/O, with fsync, that asynchronous writers take off the loop).
// - BM_SnapshotStall/<writer>: the time the caller is blocked by one snapshot:
//   building the SaveFn (thread writers: a clone of the state, pickled inside
//   the SaveFn on the worker; process writers and SimpleWriter: the pickled
//   bytes of the live parameters) and the call.
//   Each iteration uses a fresh writer, so no previous write is waited for;
//   the wait for the write to finish (finalize) is outside the timed region
//   and reported as the counter `done_ms` (call to file on disk).
//
// Files go to a scratch directory under the system temp directory, removed
// at the end. Few iterations: every one writes ~42 MB and fsyncs.

#include <benchmark/benchmark.h>

#include <torch/nn/modules/linear.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include <ppe/serialization.hpp>
#include <ppe/state.hpp>
#include <ppe/writing.hpp>

namespace {

namespace wr = ppe::writing;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Model {
  std::vector<torch::nn::Linear> layers{torch::nn::Linear(2048, 2048), torch::nn::Linear(2048, 2048),
                                        torch::nn::Linear(2048, 1024)};

  std::int64_t parameter_count() const {
    std::int64_t n = 0;
    for (const auto& l : layers)
      for (const auto& p : l->parameters()) n += p.numel();
    return n;
  }

  // The parameters by handle (no copy), or cloned into owned tensors.
  ppe::State state(bool clone) const {
    torch::NoGradGuard no_grad;
    auto s = ppe::State::dict();
    for (std::size_t i = 0; i < layers.size(); ++i)
      for (const auto& p : layers[i]->named_parameters())
        s.set(std::to_string(i) + "." + p.key(), clone ? p.value().detach().clone() : p.value().detach());
    return s;
  }
};

const Model& model() {
  static const Model m;
  return m;
}

// A scratch directory, removed with its content.
struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ppe_bench_snapshot_" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

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
    std::vector<char> bytes = ppe::pickle_dumps(m.state(/*clone=*/false));
    size = bytes.size();
    benchmark::DoNotOptimize(bytes.data());
  }
  state.counters["MB"] = static_cast<double>(size) / 1e6;
}

void BM_DiskWrite(benchmark::State& state) {
  ScratchDir dir;
  wr::SimpleWriter w(dir.path);
  const auto bytes = std::make_shared<const std::string>([] {
    const auto v = ppe::pickle_dumps(model().state(false));
    return std::string(v.begin(), v.end());
  }());
  for (auto _ : state) w("snapshot", wr::owned_bytes(bytes));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes->size()));
}

// The SaveFn a snapshot gives a thread writer: an owned clone, pickled when it runs.
wr::SaveFn cloned_state_save_fn(const Model& m) {
  return [state = m.state(/*clone=*/true)](std::ostream& os) {
    const auto bytes = ppe::pickle_dumps(state);
    os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
}

// The SaveFn a snapshot gives a process writer: the pickled bytes (the copy).
wr::SaveFn pickled_save_fn(const Model& m) { return wr::owned_bytes(ppe::pickle_dumps(m.state(/*clone=*/false))); }

template <class W>
void BM_SnapshotStall(benchmark::State& state) {
  const Model& m = model();
  ScratchDir dir;
  double done = 0;
  for (auto _ : state) {
    W w(dir.path);
    const auto t0 = Clock::now();
    // SimpleWriter writes before returning, so it needs no clone either.
    if constexpr (std::is_same_v<W, wr::ProcessWriter> || std::is_same_v<W, wr::ProcessQueueWriter> ||
                  std::is_same_v<W, wr::SimpleWriter>)
      w("snapshot", pickled_save_fn(m));
    else
      w("snapshot", cloned_state_save_fn(m));
    state.SetIterationTime(seconds_since(t0));
    w.finalize();  // untimed: the loop would go on training meanwhile
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
