#pragma once
/// \file
/// `ppe::writing::ThreadWriter`: writes each file off the caller's thread
/// (PPE's `ppe.writing.ThreadWriter`), one write at a time.

#include <filesystem>
#include <string>
#include <utility>

#include "ppe/writing/detail/thread_queue.hpp"

namespace ppe::writing {

/// Runs each write (the `SaveFn`, the atomic replace or append, the post-save
/// hooks) on the writer's thread. A call first waits for the previous write to
/// finish (as PPE's `StandardWriter` joins its previous worker), so at most one
/// write is in flight and writes complete in call order.
///
/// What blocks the caller: checking the file name, waiting for the previous
/// write, handing the write over (and, at the first write, starting the
/// thread). The `SaveFn` runs on the thread, after the call returned: it must
/// own its data (see writer.hpp).
///
/// Errors: a failed write is kept and rethrown as a `WriteError` naming the
/// file by the next call (which then does not start its own write) or by
/// `finalize()`. A bad file name or an empty `SaveFn` fails the call itself.
/// The destructor waits for the write in flight and passes an unreported
/// error to `ppe::warn`.
///
/// Differences from PPE: one thread, started by the first write, runs every
/// write in turn (PPE starts a thread per write; the order and the waiting are
/// the same, and starting a thread cost the caller 20 to 100 µs per write in
/// `benchmarks/bench_latency`); `finalize()` on a writer that never wrote does
/// nothing (PPE raises "worker is not created"); errors are rethrown, not
/// printed; a call after `finalize()` is a `std::logic_error`.
class ThreadWriter : public detail::ThreadQueueBase {
 public:
  /// Files go under `out_dir` (created by the first write).
  explicit ThreadWriter(std::filesystem::path out_dir = {}) : ThreadQueueBase(std::move(out_dir), "ThreadWriter") {}

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    enqueue(filename, std::move(save_fn), append, /*wait_for_previous=*/true);
  }
};

}  // namespace ppe::writing
