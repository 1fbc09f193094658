#pragma once
/// \file
/// `ppe::writing::ThreadQueueWriter`: one writer thread served by a queue
/// (PPE's `ppe.writing.ThreadQueueWriter`).

#include <filesystem>
#include <string>
#include <utility>

#include "ppe/writing/detail/thread_queue.hpp"

namespace ppe::writing {

/// Queues each write for one consumer thread, which runs them in call order
/// (the `SaveFn`, the atomic replace or append, the post-save hooks). The
/// thread is started by the first write and stopped by `finalize()`, which
/// first lets it write everything queued.
///
/// What blocks the caller: checking the file name and queueing; never a
/// previous write. The queue is unbounded: each queued `SaveFn` keeps its
/// owned data until it has been written. The `SaveFn` must own its data (see
/// writer.hpp).
///
/// Errors: the first failed write is kept and rethrown as a `WriteError`
/// naming the file by the first call or `finalize()` after it failed (a call
/// that rethrows does not queue its own write); later failures while one is
/// waiting go to `ppe::warn`. Queued writes after a failed one still run. The
/// destructor writes what is queued, joins, and passes an unreported error to
/// `ppe::warn`.
///
/// Differences from PPE: files go to this writer's `out_dir` (PPE's default
/// task is a `SimpleWriter` writing to the current directory); the thread is
/// started lazily; there is no `task` argument (derive from `Writer` for a
/// different kind of write).
class ThreadQueueWriter : public detail::ThreadQueueBase {
 public:
  /// Files go under `out_dir` (created by the first write).
  explicit ThreadQueueWriter(std::filesystem::path out_dir = {}) : ThreadQueueBase(std::move(out_dir), "ThreadQueueWriter") {}

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    enqueue(filename, std::move(save_fn), append, /*wait_for_previous=*/false);
  }
};

}  // namespace ppe::writing
