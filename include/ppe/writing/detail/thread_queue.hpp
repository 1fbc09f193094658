#pragma once
/// \file
/// `ppe::writing::detail::ThreadQueueBase`: what ThreadWriter and
/// ThreadQueueWriter share: one consumer thread that runs the writes in call
/// order, the first error kept for the caller, finalization.

#include <filesystem>
#include <string>
#include <utility>

#include "ppe/writing/detail/async.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::writing::detail {

/// A writer whose writes (the `SaveFn`, the atomic replace or append, the
/// post-save hooks) run on one thread, started by the first write, in call
/// order. The derived writer decides whether a call waits for the writes
/// before it (`enqueue(..., wait_for_previous)`).
class ThreadQueueBase : public Writer {
 public:
  /// Writes what is queued, stops the thread, and rethrows the waiting error.
  /// Idempotent; does nothing for a writer that never wrote.
  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    queue_.close_and_join();
    errors_.rethrow_pending();
  }

  /// Waits until the thread has run every write queued so far; rethrows the
  /// waiting error.
  void wait() override {
    queue_.wait_idle();
    errors_.rethrow_pending();
  }

 protected:
  /// `name` is the writer's class name, for messages.
  ThreadQueueBase(std::filesystem::path out_dir, const char* name) : Writer(std::move(out_dir)), name_(name) {}
  ~ThreadQueueBase() override {
    queue_.close_and_join();
    errors_.warn_if_pending();
  }

  /// Checks the call, optionally waits until the writes before it are done,
  /// rethrows a kept error (the call's own write is then not queued), queues
  /// the write.
  void enqueue(const std::string& filename, SaveFn save_fn, bool append, bool wait_for_previous) {
    check_not_finalized(finalized_, name_);
    check_save_fn(save_fn, name_, filename);
    std::filesystem::path dest = destination(filename);
    if (wait_for_previous) queue_.wait_idle();
    errors_.rethrow_pending();
    queue_.push(Task{filename, std::move(dest), std::move(save_fn), append});
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
      errors_.set(current_as_write_error(task.dest));
    }
  }

  const char* name_;
  bool finalized_ = false;
  ErrorSlot errors_{name_};
  // Last: destroyed (joined) first, while what the consumer uses still exists.
  WorkQueue<Task> queue_{[this](Task& t) { write(t); }};
};

}  // namespace ppe::writing::detail
