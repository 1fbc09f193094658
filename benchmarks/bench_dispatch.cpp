// Per-iteration cost of the manager's dispatch (ARCHITECTURE section 6: with
// N extensions that do not fire, within 1.2x of the same `if`s written by hand).
//
//   BM_Dispatch/N                 statically typed ExtensionsManager, N entries that never fire
//   BM_HandWritten/N              the same N checks written by hand
//   BM_AnyExtension/N             N extensions added at run time with Manager::extend
//   BM_DispatchEveryIteration/N   N static entries with iterations(1): every one fires (and
//                                 counts its call) every iteration, as LogReport, ProgressBar
//                                 and PrintReport do
//   BM_HandWrittenEveryIteration/N  the same by hand
//
// Each benchmark iteration is one `run_iteration([] {})`. The empty body is
// followed by ClobberMemory, as an opaque user step would be: the loop state is
// reloaded from memory every iteration, for the manager and the hand-written
// loop alike.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

#include "dispatch_common.hpp"

namespace {

// Checks that each extension was called `expected` times.
template <std::size_t N>
void check_calls(benchmark::State& state, const ppe_bench::Calls<N>& calls, std::int64_t expected) {
  for (std::int64_t c : calls.count)
    if (c != expected) {
      state.SkipWithError(expected == 0 ? "an extension fired" : "an extension missed an iteration");
      return;
    }
}

template <std::size_t N>
void dispatch(benchmark::State& state, std::int64_t period) {
  ppe_bench::Calls<N> calls;
  auto manager = ppe_bench::make_static_manager<N>(calls, period);
  manager.run_iteration([] {});  // starts the extensions; first trigger evaluation
  benchmark::DoNotOptimize(&manager);
  for (auto _ : state) {
    manager.run_iteration([] {});
    benchmark::ClobberMemory();
  }
  check_calls(state, calls, period == 1 ? manager.iteration() : 0);
}

template <std::size_t N>
void hand_written(benchmark::State& state, std::int64_t period) {
  ppe_bench::Calls<N> calls;
  ppe_bench::HandWritten<N> loop(calls, period);
  loop.run_iteration([] {});
  benchmark::DoNotOptimize(&loop);
  for (auto _ : state) {
    loop.run_iteration([] {});
    benchmark::ClobberMemory();
  }
  check_calls(state, calls, period == 1 ? loop.iteration() : 0);
  if (loop.stopped()) state.SkipWithError("the hand-written loop stopped");
}

template <std::size_t N>
void any_extension(benchmark::State& state, std::int64_t) {
  ppe_bench::Calls<N> calls;
  ppe_bench::RuntimeManager manager(ppe_bench::options(), ppe::training::Models{}, ppe::training::Optimizers{});
  ppe_bench::extend_runtime<N>(manager, calls);
  manager.run_iteration([] {});
  benchmark::DoNotOptimize(&manager);
  for (auto _ : state) {
    manager.run_iteration([] {});
    benchmark::ClobberMemory();
  }
  check_calls(state, calls, 0);
}

// Runs the instantiation of `Tag` for the benchmark's argument N.
template <template <std::size_t> class Tag>
void by_arg(benchmark::State& state, std::int64_t period) {
  switch (state.range(0)) {
    case 1: Tag<1>::run(state, period); break;
    case 4: Tag<4>::run(state, period); break;
    case 16: Tag<16>::run(state, period); break;
    case 64: Tag<64>::run(state, period); break;
    default: state.SkipWithError("N must be 1, 4, 16 or 64");
  }
}
template <std::size_t N>
struct DispatchTag {
  static void run(benchmark::State& s, std::int64_t period) { dispatch<N>(s, period); }
};
template <std::size_t N>
struct HandWrittenTag {
  static void run(benchmark::State& s, std::int64_t period) { hand_written<N>(s, period); }
};
template <std::size_t N>
struct AnyExtensionTag {
  static void run(benchmark::State& s, std::int64_t period) { any_extension<N>(s, period); }
};

void BM_Dispatch(benchmark::State& state) { by_arg<DispatchTag>(state, ppe_bench::kPeriod); }
void BM_HandWritten(benchmark::State& state) { by_arg<HandWrittenTag>(state, ppe_bench::kPeriod); }
void BM_AnyExtension(benchmark::State& state) { by_arg<AnyExtensionTag>(state, ppe_bench::kPeriod); }
void BM_DispatchEveryIteration(benchmark::State& state) { by_arg<DispatchTag>(state, 1); }
void BM_HandWrittenEveryIteration(benchmark::State& state) { by_arg<HandWrittenTag>(state, 1); }

}  // namespace

BENCHMARK(BM_Dispatch)->Arg(1)->Arg(4)->Arg(16)->Arg(64);
BENCHMARK(BM_HandWritten)->Arg(1)->Arg(4)->Arg(16)->Arg(64);
BENCHMARK(BM_AnyExtension)->Arg(1)->Arg(4)->Arg(16)->Arg(64);
BENCHMARK(BM_DispatchEveryIteration)->Arg(1)->Arg(4)->Arg(16);
BENCHMARK(BM_HandWrittenEveryIteration)->Arg(1)->Arg(4)->Arg(16);

BENCHMARK_MAIN();
