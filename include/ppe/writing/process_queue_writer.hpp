#pragma once
/// \file
/// `ppe::writing::ProcessQueueWriter`: content serialised in this process,
/// queued, and written by forked children one at a time (PPE's
/// `ppe.writing.ProcessQueueWriter`).

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "ppe/writing/detail/async.hpp"
#include "ppe/writing/detail/child_write.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::writing {

/// Runs the `SaveFn` into a byte buffer in the calling thread (the owned
/// copy), and queues the buffer. A thread of this process, started by the
/// first write, serves the queue in call order: for each buffer it forks a
/// child that does nothing but write the bytes to `tmp_<name>`, fsync and
/// rename them into place (or append), waits for it, and runs the post-save
/// hooks. `finalize()` lets it write everything queued, then joins it.
///
/// What blocks the caller: checking the name and creating the directories,
/// running the `SaveFn` (not one made by `in_writing_process`, which the
/// child runs into the file), queueing. Never a previous write, and not `fork()`
/// (the serving thread forks). The queue is unbounded: each pending buffer
/// stays in memory until written.
///
/// Errors: the first failed write (the child reports the step and `errno`,
/// exits non-zero, or is killed) is kept and rethrown as a `WriteError` naming
/// the file by the first call or `finalize()` after it failed (a call that
/// rethrows does not queue its own write); later failures while one is
/// waiting go to `ppe::warn`. Cleanup after a failed child is as for
/// `ProcessWriter`. A throwing `SaveFn`, a bad name or a directory that cannot
/// be created fails the call itself. The destructor writes what is queued,
/// joins, and passes an unreported error to `ppe::warn`.
///
/// Differences from PPE: PPE starts one long-lived consumer process fed
/// through a `multiprocessing` queue, which pickles the target again; here
/// the serialised bytes are handed to a short-lived child per write (memory
/// is shared copy-on-write by `fork`, nothing is copied through a pipe).
/// Files go to this writer's `out_dir` (PPE's default task writes to the
/// current directory); idle `finalize()` does nothing; a call after
/// `finalize()` is a `std::logic_error`.
class ProcessQueueWriter : public Writer {
 public:
  /// Files go under `out_dir` (created by the first write).
  explicit ProcessQueueWriter(std::filesystem::path out_dir = {}) : Writer(std::move(out_dir)) {}
  ~ProcessQueueWriter() override {
    queue_.close_and_join();
    errors_.warn_if_pending();
  }

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    detail::check_not_finalized(finalized_, "ProcessQueueWriter");
    detail::check_save_fn(save_fn, "ProcessQueueWriter", filename);
    (void)destination(filename);  // a bad name fails before anything else
    errors_.rethrow_pending();
    std::filesystem::path dest = prepare(filename);
    queue_.push(detail::make_child_job(std::move(dest), save_fn, append));
  }

  /// The save function runs into a buffer in the calling thread.
  WriteMode write_mode() const noexcept override { return WriteMode::OwnedBytes; }

  /// Waits until every queued write is done; rethrows the waiting error.
  void wait() override {
    queue_.wait_idle();
    errors_.rethrow_pending();
  }

  /// Writes everything queued, stops the serving thread, and rethrows the
  /// waiting error. Idempotent; does nothing for a writer that never wrote.
  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    queue_.close_and_join();
    errors_.rethrow_pending();
  }

 private:
  using Job = std::shared_ptr<detail::ChildJob>;

  void write(Job& job) noexcept {
    try {
      detail::Child child = detail::start_child(job);
      detail::finish_child(child);
      run_post_save_hooks(job->dest);
    } catch (...) {
      errors_.set(detail::current_as_write_error(job->dest));
    }
  }

  bool finalized_ = false;
  detail::ErrorSlot errors_{"ProcessQueueWriter"};
  // Last: destroyed (joined) first, while what the serving thread uses still exists.
  detail::WorkQueue<Job> queue_{[this](Job& job) { write(job); }};
};

}  // namespace ppe::writing
