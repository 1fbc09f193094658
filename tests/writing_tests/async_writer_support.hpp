#pragma once
// Helpers for the tests of the asynchronous writers: a thread-safe record of
// post-save hooks (hooks run on the writers' workers), a gate that holds a
// SaveFn until the test opens it, and a warning collector.

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <ppe/warnings.hpp>
#include <ppe/writing.hpp>

namespace ppe_test {

namespace wr = ppe::writing;

template <class W>
inline constexpr bool is_queue_writer =
    std::is_same_v<W, wr::ThreadQueueWriter> || std::is_same_v<W, wr::ProcessQueueWriter>;
template <class W>
inline constexpr bool is_process_writer =
    std::is_same_v<W, wr::ProcessWriter> || std::is_same_v<W, wr::ProcessQueueWriter>;

inline wr::SaveFn text(std::string s) {
  return [s = std::move(s)](std::ostream& os) { os << s; };
}

/// The file names the post-save hooks saw, in order; waitable.
struct HookLog {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> names;

  void attach(wr::Writer& w) {
    w.add_post_save_hook([this](const std::filesystem::path& p) {
      std::lock_guard lock(m);
      names.push_back(p.filename().string());
      cv.notify_all();
    });
  }
  /// Waits (up to 10 s) until a hook saw `name`.
  bool wait_for(const std::string& name) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] {
      for (const auto& n : names)
        if (n == name) return true;
      return false;
    });
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(m);
    return names;
  }
};

/// For queue writers, waits until every write queued so far has completed or
/// failed, by queueing one more write and waiting for its hook (the queue is
/// served in order). The other writers need no help: their next call waits.
template <class W>
void settle(W& w, HookLog& hooks, const std::string& marker) {
  if constexpr (is_queue_writer<W>) {
    w(marker, text("marker"));
    REQUIRE(hooks.wait_for(marker));
  }
}

/// A SaveFn that waits until `open()` before writing `content`.
struct Gate {
  std::promise<void> promise;
  std::shared_future<void> future = promise.get_future().share();
  void open() { promise.set_value(); }
  wr::SaveFn save(std::string content) const {
    return [f = future, content = std::move(content)](std::ostream& os) {
      f.wait();
      os << content;
    };
  }
};


}  // namespace ppe_test
