#pragma once
/// \file
/// `ppe::writing::ThreadQueueWriter`: one writer thread served by a queue
/// (PPE's `ppe.writing.ThreadQueueWriter`).

#include <filesystem>
#include <string>
#include <utility>

#include "ppe/writing/detail/async.hpp"
#include "ppe/writing/writer.hpp"

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
class ThreadQueueWriter : public Writer {
 public:
  /// Files go under `out_dir` (created by the first write).
  explicit ThreadQueueWriter(std::filesystem::path out_dir = {}) : Writer(std::move(out_dir)) {}
  ~ThreadQueueWriter() override {
    queue_.close_and_join();
    errors_.warn_if_pending();
  }

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    detail::check_not_finalized(finalized_, "ThreadQueueWriter");
    detail::check_save_fn(save_fn, "ThreadQueueWriter", filename);
    std::filesystem::path dest = destination(filename);
    errors_.rethrow_pending();
    queue_.push(Task{filename, std::move(dest), std::move(save_fn), append});
  }

  /// Writes everything queued, stops the thread, and rethrows the waiting
  /// error. Idempotent; does nothing for a writer that never wrote.
  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    queue_.close_and_join();
    errors_.rethrow_pending();
  }

 private:
  struct Task {
    std::string filename;
    std::filesystem::path dest;
    SaveFn save_fn;
    bool append = false;
  };

  void write(Task& task) noexcept {
    try {
      save(task.filename, task.save_fn, task.append);
    } catch (...) {
      errors_.set(detail::current_as_write_error(task.dest));
    }
  }

  bool finalized_ = false;
  detail::ErrorSlot errors_{"ThreadQueueWriter"};
  // Last: destroyed (joined) first, while what the consumer uses still exists.
  detail::WorkQueue<Task> queue_{[this](Task& t) { write(t); }};
};

}  // namespace ppe::writing
