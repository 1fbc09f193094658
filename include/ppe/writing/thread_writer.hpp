#pragma once
/// \file
/// `ppe::writing::ThreadWriter`: writes each file on a thread of its own
/// (PPE's `ppe.writing.ThreadWriter`), one write at a time.

#include <filesystem>
#include <string>
#include <thread>
#include <utility>

#include "ppe/writing/detail/async.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::writing {

/// Runs each write (the `SaveFn`, the atomic replace or append, the post-save
/// hooks) on a new thread. A call first waits for the previous write to finish
/// (as PPE's `StandardWriter` joins its previous worker), so at most one write
/// is in flight and writes complete in call order.
///
/// What blocks the caller: checking the file name, waiting for the previous
/// write, starting a thread. The `SaveFn` runs on the thread, after the call
/// returned: it must own its data (see writer.hpp).
///
/// Errors: a failed write is kept and rethrown as a `WriteError` naming the
/// file by the next call (which then does not start its own write) or by
/// `finalize()`. A bad file name or an empty `SaveFn` fails the call itself.
/// The destructor waits for the write in flight and passes an unreported
/// error to `ppe::warn`.
///
/// Differences from PPE: `finalize()` on a writer that never wrote does
/// nothing (PPE raises "worker is not created"); errors are rethrown, not
/// printed; a call after `finalize()` is a `std::logic_error`.
class ThreadWriter : public Writer {
 public:
  /// Files go under `out_dir` (created by the first write).
  explicit ThreadWriter(std::filesystem::path out_dir = {}) : Writer(std::move(out_dir)) {}
  ~ThreadWriter() override {
    join();
    errors_.warn_if_pending();
  }

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    detail::check_not_finalized(finalized_, "ThreadWriter");
    detail::check_save_fn(save_fn, "ThreadWriter", filename);
    std::filesystem::path dest = destination(filename);
    join_and_rethrow();
    worker_ = std::thread([this, filename, dest = std::move(dest), save_fn = std::move(save_fn), append] {
      try {
        save(filename, save_fn, append);
      } catch (...) {
        errors_.set(detail::current_as_write_error(dest));
      }
    });
  }

  /// Waits for the write in flight and rethrows its error. Idempotent; does
  /// nothing for a writer that never wrote.
  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    join_and_rethrow();
  }

 private:
  void join() noexcept {
    if (worker_.joinable()) worker_.join();
  }
  void join_and_rethrow() {
    join();
    errors_.rethrow_pending();
  }

  std::thread worker_;
  detail::ErrorSlot errors_{"ThreadWriter"};
  bool finalized_ = false;
};

}  // namespace ppe::writing
