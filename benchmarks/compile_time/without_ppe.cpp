// Compile-time benchmark, TU B: the same program as with_ppe.cpp written by
// hand, including only the LibTorch headers that ppe/ppe.hpp includes.

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/stack_ops.h>
#include <ATen/ops/tensor.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace {

std::int64_t calls[16];

template <std::size_t I>
void ext() {
  ++calls[I];
}

struct Loop {
  std::int64_t iteration = 0;
  std::int64_t stop_at = 10 * 100;
  bool stopped = false;
  std::int64_t next[16];
  std::int64_t period[16];

  template <class F, std::size_t... I>
  void run_iteration(F&& body, std::index_sequence<I...>) {
    body();
    ++iteration;
    ((iteration == next[I] ? (next[I] += period[I], ext<I>()) : void()), ...);
    if (iteration >= stop_at) stopped = true;
  }
};

}  // namespace

int main() {
  Loop loop;
  for (std::int64_t i = 0; i < 16; ++i) loop.next[i] = loop.period[i] = i + 1;
  loop.run_iteration([] {}, std::make_index_sequence<16>{});
  std::int64_t total = 0;
  for (std::int64_t c : calls) total += c;
  return total == 1 ? 0 : 1;
}
