// A tiny driver for instruction counts under callgrind (callgrind_dispatch.sh):
//
//   dispatch_count <mode> <K>
//
// runs K iterations with an empty body of
//   manager        the N=16 static manager whose extensions never fire
//   hand           the same 16 checks written by hand
//   any            a manager with the 16 extensions added at run time (extend)
//   manager_every  the N=16 static manager with iterations(1): all fire every iteration
//   hand_every     the same by hand
// Set-up and the first iteration (which starts the extensions and primes the
// triggers) run outside the measured function; the K iterations run inside
// `ppe_bench_loop_<mode>`, which callgrind_dispatch.sh collects alone
// (--toggle-collect), so the instructions per iteration are its count over K.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "dispatch_common.hpp"

namespace {
constexpr std::size_t N = 16;
using StaticManager = decltype(ppe_bench::make_static_manager<N>(std::declval<ppe_bench::Calls<N>&>()));
}  // namespace

// The measured loops: one opaque function per mode, named for --toggle-collect.
// The compiler barrier stands in for an opaque user step (memory is reloaded).
extern "C" __attribute__((noinline)) void ppe_bench_loop_manager(StaticManager& m, std::int64_t k) {
  for (std::int64_t i = 0; i < k; ++i) {
    m.run_iteration([] {});
    asm volatile("" ::: "memory");
  }
}
extern "C" __attribute__((noinline)) void ppe_bench_loop_hand(ppe_bench::HandWritten<N>& h, std::int64_t k) {
  for (std::int64_t i = 0; i < k; ++i) {
    h.run_iteration([] {});
    asm volatile("" ::: "memory");
  }
}
extern "C" __attribute__((noinline)) void ppe_bench_loop_manager_every(StaticManager& m, std::int64_t k) {
  for (std::int64_t i = 0; i < k; ++i) {
    m.run_iteration([] {});
    asm volatile("" ::: "memory");
  }
}
extern "C" __attribute__((noinline)) void ppe_bench_loop_hand_every(ppe_bench::HandWritten<N>& h, std::int64_t k) {
  for (std::int64_t i = 0; i < k; ++i) {
    h.run_iteration([] {});
    asm volatile("" ::: "memory");
  }
}
extern "C" __attribute__((noinline)) void ppe_bench_loop_any(ppe_bench::RuntimeManager& m, std::int64_t k) {
  for (std::int64_t i = 0; i < k; ++i) {
    m.run_iteration([] {});
    asm volatile("" ::: "memory");
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <manager|hand|any|manager_every|hand_every> <iterations>\n", argv[0]);
    return 2;
  }
  const std::string_view mode = argv[1];
  char* end = nullptr;
  const long long k = std::strtoll(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0' || k < 0) {
    std::fprintf(stderr, "%s: iterations must be an integer >= 0, got '%s'\n", argv[0], argv[2]);
    return 2;
  }

  ppe_bench::Calls<N> calls;
  std::int64_t iterations = 0;
  bool every = false;
  if (mode == "manager_every") {
    auto m = ppe_bench::make_static_manager<N>(calls, 1);
    m.run_iteration([] {});
    ppe_bench_loop_manager_every(m, k);
    iterations = m.iteration();
    every = true;
  } else if (mode == "hand_every") {
    ppe_bench::HandWritten<N> h(calls, 1);
    h.run_iteration([] {});
    ppe_bench_loop_hand_every(h, k);
    iterations = h.iteration();
    every = true;
  } else if (mode == "manager") {
    auto m = ppe_bench::make_static_manager<N>(calls);
    m.run_iteration([] {});
    ppe_bench_loop_manager(m, k);
    iterations = m.iteration();
  } else if (mode == "hand") {
    ppe_bench::HandWritten<N> h(calls);
    h.run_iteration([] {});
    ppe_bench_loop_hand(h, k);
    iterations = h.iteration();
  } else if (mode == "any") {
    ppe_bench::RuntimeManager m(ppe_bench::options(), ppe::training::Models{}, ppe::training::Optimizers{});
    ppe_bench::extend_runtime<N>(m, calls);
    m.run_iteration([] {});
    ppe_bench_loop_any(m, k);
    iterations = m.iteration();
  } else {
    std::fprintf(stderr, "%s: unknown mode '%s' (manager, hand, any, manager_every or hand_every)\n", argv[0],
                 argv[1]);
    return 2;
  }
  const std::int64_t expected = every ? iterations : 0;
  for (std::int64_t c : calls.count)
    if (c != expected) {
      std::fprintf(stderr, "%s: an extension was called %lld times, expected %lld\n", argv[0],
                   static_cast<long long>(c), static_cast<long long>(expected));
      return 1;
    }
  std::printf("%s: %lld iterations\n", argv[1], static_cast<long long>(iterations));
  return 0;
}
