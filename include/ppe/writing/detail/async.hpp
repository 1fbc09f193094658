#pragma once
/// \file
/// Internals shared by the asynchronous writers: turning a worker's exception
/// into a `WriteError` naming the file, keeping it until the caller can be
/// told, and the single-consumer queue of the queue writers.

#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "ppe/detail/error_message.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::writing::detail {

/// The message of a stored exception, for warnings.
inline std::string describe(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return ppe::detail::error_message(x);
  } catch (...) {
    return "an exception of unknown type";
  }
}

/// The exception in flight (call from a `catch` block) as a `WriteError`
/// naming `dest`. A `WriteError` is kept as it is; anything else (a throwing
/// post-save hook, `std::bad_alloc`) is nested in a new one, so that the caller
/// learns which file failed whatever went wrong on the worker.
inline std::exception_ptr current_as_write_error(const std::filesystem::path& dest) noexcept {
  try {
    throw;
  } catch (const WriteError&) {
    return std::current_exception();
  } catch (...) {
    const std::string why = describe(std::current_exception());
    try {
      std::throw_with_nested(WriteError("ppe::writing: cannot write '" + dest.string() + "': " + why, dest));
    } catch (...) {
      return std::current_exception();
    }
  }
}

/// Throws the `std::logic_error` of a call made after `finalize()`.
inline void check_not_finalized(bool finalized, const char* writer) {
  if (finalized)
    throw std::logic_error(std::string("ppe::writing::") + writer +
                           ": called after finalize(); a finalized writer takes no more writes");
}

/// Throws `std::invalid_argument` for an empty `SaveFn` (it would only fail
/// later, on the worker, far from the mistake).
inline void check_save_fn(const SaveFn& save_fn, const char* writer, const std::string& filename) {
  if (!save_fn)
    throw std::invalid_argument(std::string("ppe::writing::") + writer + ": the save function for '" + filename +
                                "' is empty");
}

/// The first error of a worker, kept until the writer's next call or
/// `finalize()` rethrows it. Errors that come while one is waiting are not
/// dropped silently: they are passed to `ppe::warn`.
class ErrorSlot {
 public:
  explicit ErrorSlot(const char* writer) : writer_(writer) {}

  /// Keeps `e` (if none is waiting), else warns about it. Never throws: it
  /// runs on workers, where an exception would end the process.
  void set(std::exception_ptr e) noexcept {
    {
      std::lock_guard lock(m_);
      if (!pending_) {
        pending_ = std::move(e);
        return;
      }
    }
    try {
      ppe::warn(std::string("ppe::writing::") + writer_ +
                ": a further write failed while an earlier error waits to be reported: " + describe(e));
    } catch (...) {
      // A throwing warning handler: the first error is still reported.
    }
  }

  /// Rethrows the waiting error (once).
  void rethrow_pending() {
    std::exception_ptr e;
    {
      std::lock_guard lock(m_);
      e = std::exchange(pending_, nullptr);
    }
    if (e) std::rethrow_exception(e);
  }

  /// For destructors, which must not throw: passes a waiting error to
  /// `ppe::warn` instead of losing it.
  void warn_if_pending() noexcept {
    std::exception_ptr e;
    {
      std::lock_guard lock(m_);
      e = std::exchange(pending_, nullptr);
    }
    if (!e) return;
    try {
      ppe::warn(std::string("ppe::writing::") + writer_ + ": a write failed and was never reported (the writer was " +
                "destroyed without finalize()): " + describe(e));
    } catch (...) {
      // A throwing warning handler: nothing more a destructor can do.
    }
  }

 private:
  const char* writer_;
  std::mutex m_;
  std::exception_ptr pending_;
};

/// A FIFO served by one consumer thread, started by the first `push` (an
/// unused writer has no thread). `Handler` runs each task on the consumer, in
/// order, and must not throw (the writers catch and keep errors themselves).
template <class Task>
class WorkQueue {
 public:
  using Handler = std::function<void(Task&)>;

  explicit WorkQueue(Handler handler) : handler_(std::move(handler)) {}
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  ~WorkQueue() { close_and_join(); }

  /// Queues `task`. Throws (`std::system_error`) only when the consumer
  /// thread cannot be started; the task is then not queued.
  void push(Task task) {
    std::lock_guard lock(m_);
    if (closed_) throw std::logic_error("ppe::writing: a closed write queue takes no more tasks");
    if (!consumer_.joinable()) consumer_ = std::thread([this] { run(); });
    tasks_.push_back(std::move(task));
    cv_.notify_one();
  }

  /// Blocks until every queued task has run (at once when none was queued).
  void wait_idle() {
    std::unique_lock lock(m_);
    idle_cv_.wait(lock, [this] { return tasks_.empty() && !running_; });
  }

  /// Lets the consumer finish every queued task, then joins it. Idempotent.
  void close_and_join() noexcept {
    {
      std::lock_guard lock(m_);
      closed_ = true;
    }
    cv_.notify_one();
    if (consumer_.joinable() && consumer_.get_id() != std::this_thread::get_id()) consumer_.join();
  }

 private:
  void run() {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return closed_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // closed and drained
        task = std::move(tasks_.front());
        tasks_.pop_front();
        running_ = true;
      }
      handler_(task);
      // `task` (and the state it owns) is released before the queue says it is idle.
      task = Task();
      {
        std::lock_guard lock(m_);
        running_ = false;
      }
      idle_cv_.notify_all();
    }
  }

  Handler handler_;
  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Task> tasks_;
  bool running_ = false;  // the consumer is running a task
  bool closed_ = false;
  std::thread consumer_;
};

}  // namespace ppe::writing::detail
