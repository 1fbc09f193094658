#pragma once
// SyncCounter: records, on the calling thread, every ATen operation that makes
// the host wait for a CUDA device when its tensors live there. It runs on the
// CPU too: the same operations on CPU tensors (which would be CUDA tensors in
// a real run) are flagged, so a CPU test can show that a code path would not
// synchronise. Flagged:
// - a host read of an element: `aten::item`, `aten::_local_scalar_dense`,
//   `aten::is_nonzero` (a tensor converted to a number or a bool);
// - `aten::nonzero`, `aten::masked_select`, `aten::unique_*`, `aten::_unique*`:
//   their output size is data-dependent, so the host waits for it;
// - `aten::copy_` between different devices (a host-to-device or
//   device-to-host transfer), unless non-blocking from pinned host memory.
// Reads are flagged where the code under test issues them, not inside
// another operator: some CPU kernels read their own intermediate results on
// the host (the CPU `std()` of a whole tensor reads its mean), which their
// CUDA kernels do not. Transfers are flagged wherever they happen.
// Stream and device synchronisations are not ATen operations: on a CUDA
// machine c10's sync debug mode counts them (tests/cuda_tests).
//
// A thread-local RecordFunction callback: LibTorch calls it for every
// operation that goes through the dispatcher while one is installed. The
// callback is in sync_counter.cpp, compiled with NDEBUG like LibTorch: in a
// translation unit without it, RecordFunction::inputs() asserts a flag that
// only LibTorch's debug builds set.

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppe_test {

class SyncCounter {
 public:
  /// One at a time per thread (a second would see every operation twice).
  SyncCounter() {
    if (current()) throw std::logic_error("ppe_test::SyncCounter: one is already counting on this thread");
    current() = this;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&SyncCounter::on_start, &SyncCounter::on_end).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  }
  ~SyncCounter() {
    at::removeCallback(handle_);
    current() = nullptr;
  }
  SyncCounter(const SyncCounter&) = delete;
  SyncCounter& operator=(const SyncCounter&) = delete;

  /// The flagged operations since construction or the last clear(), in order.
  const std::vector<std::string>& events() const noexcept { return events_; }
  std::size_t count() const noexcept { return events_.size(); }
  void clear() noexcept { events_.clear(); }
  /// The events, comma-separated (for a failing check's message).
  std::string text() const {
    std::string out;
    for (const auto& e : events_) out += (out.empty() ? "" : ", ") + e;
    return out.empty() ? "none" : out;
  }

 private:
  static SyncCounter*& current() {
    static thread_local SyncCounter* c = nullptr;
    return c;
  }

  static bool starts_with(const char* s, const char* prefix);

  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn);
  static void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx);
  void inspect(const at::RecordFunction& fn);

  bool inside_ = false;
  int depth_ = 0;  // operators running (a callback's start without its end)
  at::CallbackHandle handle_ = 0;
  std::vector<std::string> events_;
};

}  // namespace ppe_test
