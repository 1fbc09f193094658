#pragma once
/// \file
/// `ppe::writing::ProcessWriter`: content serialised in this process, written
/// by a forked child (PPE's `ppe.writing.ProcessWriter`), one write at a time.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "ppe/writing/detail/async.hpp"
#include "ppe/writing/detail/child_write.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::writing {

/// Runs the `SaveFn` into a byte buffer in the calling thread (that buffer is
/// the owned copy: nothing the caller changes afterwards reaches the file),
/// then forks a child that does nothing but write those bytes to
/// `tmp_<name>`, fsync, and rename them into place (`Writer::save`'s atomic
/// steps, or an append). A call first waits for the previous child, so at most
/// one write is in flight and writes complete in call order.
///
/// What blocks the caller: checking the name and creating the directories,
/// waiting for the previous child (and running its post-save hooks), running
/// the `SaveFn`, and `fork()` (its cost grows with the size of this
/// process's memory map). The disk write and fsync happen in the child.
/// `owned_bytes` content is handed to the child as it is, without a copy; a
/// `SaveFn` made by `in_writing_process` (what asynchronous snapshots give:
/// a staged copy of the state and the function that streams it) is not run
/// here at all but in the child, into the file.
///
/// Errors: a child that fails (it reports the step and `errno`), exits
/// non-zero or is killed becomes a `WriteError` naming the file at the next
/// call (which then does not start its own write) or at `finalize()`; the
/// temporary file is removed, an old file parked as `.bak` is put back, a
/// half-done append is cut off. A throwing `SaveFn`, a bad file name or a
/// directory that cannot be created fails the call itself. Post-save hooks
/// run in this process, in the thread that waits for the child (the next call
/// or `finalize()`), after the child succeeded. The destructor waits for the
/// child and passes an unreported error to `ppe::warn`.
///
/// Differences from PPE: serialisation happens in the parent (PPE pickles the
/// target in the child), the child only writes; `finalize()` on a writer that
/// never wrote does nothing (PPE raises "worker is not created"); a call
/// after `finalize()` is a `std::logic_error`. POSIX only; like any `fork`,
/// unsuitable under MPI implementations that forbid it.
class ProcessWriter : public Writer {
 public:
  /// Files go under `out_dir` (created by the first write).
  explicit ProcessWriter(std::filesystem::path out_dir = {}) : Writer(std::move(out_dir)) {}
  ~ProcessWriter() override {
    try {
      reap();
    } catch (...) {
      errors_.set(std::current_exception());
    }
    errors_.warn_if_pending();
  }

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    detail::check_not_finalized(finalized_, "ProcessWriter");
    detail::check_save_fn(save_fn, "ProcessWriter", filename);
    (void)destination(filename);  // a bad name fails before waiting
    reap();
    std::filesystem::path dest = prepare(filename);
    child_ = detail::start_child(detail::make_child_job(std::move(dest), save_fn, append));
  }

  /// The save function runs into a buffer in the calling thread.
  WriteMode write_mode() const noexcept override { return WriteMode::OwnedBytes; }

  /// Waits for the child in flight and runs its hooks; throws its error.
  void wait() override { reap(); }

  /// Waits for the child in flight, runs its hooks, and rethrows its error.
  /// Idempotent; does nothing for a writer that never wrote.
  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    reap();
  }

 private:
  // Waits for the previous child; throws its failure (or a hook's) as a WriteError.
  void reap() {
    if (!child_) return;
    detail::Child child = std::move(*child_);
    child_.reset();
    detail::finish_child(child);
    try {
      run_post_save_hooks(child.job->dest);
    } catch (...) {
      std::rethrow_exception(detail::current_as_write_error(child.job->dest));
    }
  }

  std::optional<detail::Child> child_;
  detail::ErrorSlot errors_{"ProcessWriter"};
  bool finalized_ = false;
};

}  // namespace ppe::writing
