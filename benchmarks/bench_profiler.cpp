// Cost of one `ppe::profiler::record` scope around an empty body (target:
// <= 60 ns with profiling on). The TimeSummary and the tracer are the
// process-wide ones, as the manager's enable_profile / enable_trace use them.
//
// BM_RecordOverhead: enable (the TimeSummary entry), a tag used on every
// iteration (the per-thread slot cache hits). BM_RecordDisabled: enable and
// trace off (what the manager pays with profiling off, were it a runtime
// flag). BM_RecordTrace: trace only (a Chrome trace event per scope; the
// tracer is cleared outside the timing every 100k events to bound memory).
// LibTorch's profiler is off in all of them: then the scope's LibTorch range
// costs only the per-thread check that none is on (LibTorch itself is asked
// once per millisecond; BM_RecordNoTorchRange leaves the check out).

#include <benchmark/benchmark.h>

#include <ppe/profiler/record.hpp>

namespace {

namespace prof = ppe::profiler;

void BM_RecordOverhead(benchmark::State& state) {
  prof::get_time_summary().clear();
  for (auto _ : state) {
    prof::Record r("bench/step");
    benchmark::ClobberMemory();
  }
  const auto stats = prof::get_time_summary().summary(true);
  if (stats.size() != 1 || stats[0].second.count != static_cast<std::int64_t>(state.iterations()))
    state.SkipWithError("the records were not all counted");
}

// As BM_RecordOverhead without the LibTorch range (RecordOptions::torch_range(false)):
// what asking LibTorch whether a profiler is on costs.
void BM_RecordNoTorchRange(benchmark::State& state) {
  prof::get_time_summary().clear();
  const auto options = prof::RecordOptions().torch_range(false);
  for (auto _ : state) {
    prof::Record r("bench/step", options);
    benchmark::ClobberMemory();
  }
  prof::get_time_summary().clear();
}

void BM_RecordDisabled(benchmark::State& state) {
  const auto options = prof::RecordOptions().enable(false).trace(false);
  for (auto _ : state) {
    prof::Record r("bench/step", options);
    benchmark::ClobberMemory();
  }
}

void BM_RecordTrace(benchmark::State& state) {
  prof::clear_tracer();
  const auto options = prof::RecordOptions().enable(false).trace(true);
  std::int64_t n = 0;
  for (auto _ : state) {
    {
      prof::Record r("bench/step", options);
      benchmark::ClobberMemory();
    }
    if (++n == 100'000) {
      state.PauseTiming();
      prof::clear_tracer();
      n = 0;
      state.ResumeTiming();
    }
  }
  prof::clear_tracer();
}

}  // namespace

BENCHMARK(BM_RecordOverhead);
BENCHMARK(BM_RecordNoTorchRange);
BENCHMARK(BM_RecordDisabled);
BENCHMARK(BM_RecordTrace);
BENCHMARK_MAIN();
