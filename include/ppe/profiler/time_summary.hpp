#pragma once
/// \file
/// `ppe::profiler::TimeSummary` (PPE's `ppe.profiler.TimeSummary`): per-tag
/// statistics of measured times (count, mean, population std, min, max), fed
/// by `record` scopes from any thread and read by ProfileReport; and
/// `get_time_summary()`, the process-wide default instance.
///
/// Free of LibTorch headers: the profiler's core costs nothing to include.

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <x86intrin.h>
#endif

#include "ppe/detail/config.hpp"

namespace ppe::profiler {

/// The statistics of one tag, in seconds.
struct TimeStats {
  std::int64_t count = 0;
  double sum = 0.0;
  double sum_sq = 0.0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  /// The mean (NaN without values).
  double mean() const noexcept {
    return count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
  }
  /// The population standard deviation, `sqrt(max(0, E[x^2] - mean^2))` (PPE's
  /// `Summary.make_statistics`; the clamp keeps rounding from making it NaN).
  double std() const noexcept {
    if (!count) return std::numeric_limits<double>::quiet_NaN();
    const double m = mean();
    const double var = sum_sq / static_cast<double>(count) - m * m;
    return std::sqrt(var > 0.0 ? var : 0.0);
  }
  /// Adds one value.
  void add(double seconds) noexcept {
    ++count;
    sum += seconds;
    sum_sq += seconds * seconds;
    if (seconds < min) min = seconds;
    if (seconds > max) max = seconds;
  }
};

namespace detail {

/// How the default clock turns the processor's time-stamp counter into
/// nanoseconds of `std::chrono::steady_clock` (see `fast_clock_ns`).
struct TscCalibration {
  bool use_tsc = false;
  std::int64_t tsc0 = 0;      ///< a counter reading ...
  std::int64_t ns0 = 0;       ///< ... and the steady_clock time (ns) it corresponds to
  double ns_per_tick = 0.0;
};

/// Measured once per process, on first use (a 2 ms busy wait).
PPE_DECL const TscCalibration& tsc_calibration();

/// The calibration, published once measured: 0 not yet (3: being published),
/// 1 counter, 2 steady_clock.
/// A constant-initialised global, so the clock's fast path is one load and a branch.
struct TscState {
  std::atomic<int> mode{0};
  TscCalibration c;
};
inline TscState tsc_state;

/// `std::chrono::steady_clock::now()` in nanoseconds.
PPE_DECL std::int64_t steady_clock_ns() noexcept;
/// The clock before the calibration is published (measures it first).
std::int64_t fast_clock_slow() noexcept;  // (defined with PPE_DECL: not inlined into the fast path)

/// The profiler's default clock: nanoseconds on `std::chrono::steady_clock`'s
/// time line. steady_clock costs ~30 ns per read here (the kernel's vDSO
/// orders the counter read and guards it with a sequence lock), two reads per
/// record scope; so on x86-64, when the kernel's own clocksource is the
/// time-stamp counter (then invariant and synchronised across cores, which
/// the kernel checked), the counter is read directly (~10 ns) and scaled with
/// a factor measured once against steady_clock. Elsewhere: steady_clock.
/// The read is not serialising: it may move by a few dozen cycles relative to
/// the neighbouring instructions, far below what a profiled scope lasts.
inline std::int64_t fast_clock_ns() noexcept {
  const int mode = tsc_state.mode.load(std::memory_order_acquire);
#if defined(__x86_64__) || defined(_M_X64)
  if (mode == 1) {
    const TscCalibration& c = tsc_state.c;
    return c.ns0 +
           static_cast<std::int64_t>(static_cast<double>(static_cast<std::int64_t>(__rdtsc()) - c.tsc0) * c.ns_per_tick);
  }
#endif
  if (mode == 2) return steady_clock_ns();
  return fast_clock_slow();
}

}  // namespace detail

/// Online statistics of execution times, per tag (PPE's `TimeSummary`).
///
/// `add(tag, seconds)` and the `record` scopes (record.hpp) feed it from any
/// thread. `summary()` copies the statistics of every tag that has values, in
/// the order the tags first got a value since the last clear;
/// `make_statistics()` flattens them into PPE's keys (`<tag>`, the mean;
/// `<tag>.std`, `<tag>.min`, `<tag>.max`).
///
/// Differences from PPE: values are added in the calling thread under a
/// per-tag lock instead of through a queue and a worker thread (so there is
/// nothing to `initialize`/`synchronize`/`finalize`, and a value is visible
/// as soon as `add` returns); CUDA timings are kept as deferred values
/// (`add_deferred`) and resolved by `synchronize()`, which `summary()` calls.
/// Child processes cannot report into a parent's TimeSummary (C++ loaders
/// use threads).
///
/// Cost: a tag's slot is found through a per-thread cache keyed by the tag's
/// address (checked against the tag's text), so a record neither hashes nor
/// allocates after the tag's first use on a thread. Slots live as long as the
/// TimeSummary; `clear` resets their statistics.
class TimeSummary {
 public:
  /// A clock in nanoseconds (a plain function: tests pass a fake one).
  using Clock = std::int64_t (*)();

  /// The statistics of one tag (opaque: use `slot()` and `add(Slot&, ...)`).
  class Slot {
   public:
    explicit Slot(std::string tag) : tag_(std::move(tag)) {}
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    const std::string& tag() const noexcept { return tag_; }

   private:
    friend class TimeSummary;
    // A spin lock: held for a few instructions, uncontended in the usual
    // case, and half the cost of a std::mutex; a waiter yields its core
    // after a while (the holder may have been preempted).
    void lock() noexcept {
      for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
        while (locked_.load(std::memory_order_relaxed)) {
          if (++spins > 64) std::this_thread::yield();
        }
      }
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

    const std::string tag_;
    std::atomic<bool> locked_{false};
    TimeStats stats_;
    std::uint64_t order_ = 0;  // when the tag got its first value since a clear
  };

  /// `clock` reads the time of `record` scopes; by default the profiler's
  /// fast steady clock (`detail::fast_clock_ns`).
  explicit TimeSummary(Clock clock = &detail::fast_clock_ns);
  TimeSummary(const TimeSummary&) = delete;
  TimeSummary& operator=(const TimeSummary&) = delete;
  ~TimeSummary();

  /// The clock's current time (ns).
  std::int64_t now() const noexcept {
    // The default clock is called directly, so that it is inlined.
    return clock_ == &detail::fast_clock_ns ? detail::fast_clock_ns() : clock_();
  }
  Clock clock() const noexcept { return clock_; }

  /// Adds a time of `tag` in seconds (PPE's `add`).
  void add(std::string_view tag, double seconds) { add(slot(tag), seconds); }
  /// Adds a time to a slot found with `slot()` (the hot path of `record`).
  void add(Slot& s, double seconds) noexcept {
    s.lock();
    if (s.stats_.count == 0) s.order_ = order_.fetch_add(1, std::memory_order_relaxed);
    s.stats_.add(seconds);
    s.unlock();
  }
  /// The slot of `tag`, created on first use; stays valid as long as the
  /// TimeSummary. Cached per thread by the address of `tag`'s characters.
  Slot& slot(std::string_view tag) {
    CacheEntry& e = cache_entry(tag.data());
    // The address alone does not identify the text (a reused buffer): compare it too.
    if (e.owner == id_ && e.data == tag.data() && e.size == tag.size() && same_text(e.slot->tag_.data(), tag))
      return *e.slot;
    return slot_slow(tag, e);
  }

  /// Adds a value known later (CUDA events): `seconds()` is called by the
  /// next `synchronize()` (it may block until the value is known).
  void add_deferred(std::string_view tag, std::function<double()> seconds);
  /// Resolves the deferred values (PPE's `synchronize`).
  void synchronize();

  /// The statistics of every tag with values, in first-value order (after
  /// `synchronize()`); `clear`: and resets them, each value landing either in
  /// this copy or in the next.
  std::vector<std::pair<std::string, TimeStats>> summary(bool clear = false);
  /// PPE's flat statistics: for each tag, `<tag>` (mean), `<tag>.std`,
  /// `<tag>.min`, `<tag>.max` (ProfileReport's input).
  std::vector<std::pair<std::string, double>> make_statistics(bool clear = false);
  /// Forgets every value (tags keep their slots).
  void clear() { (void)summary(true); }

 private:
  struct CacheEntry {
    std::uint64_t owner;
    const char* data;
    std::size_t size;
    Slot* slot;
  };
  static constexpr std::size_t kCacheSize = 64;
  // Tags are short: a word-wise comparison beats a call to memcmp.
  static bool same_text(const char* a, std::string_view b) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= b.size(); i += 8) {
      std::uint64_t x, y;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b.data() + i, 8);
      if (x != y) return false;
    }
    for (; i < b.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  // A direct-mapped per-thread cache shared by every TimeSummary (entries
  // carry the owner's id, which is never reused, so a destroyed summary's
  // entries simply miss).
  static CacheEntry& cache_entry(const char* data) noexcept {
    static thread_local CacheEntry cache[kCacheSize];
    const auto a = reinterpret_cast<std::uintptr_t>(data);
    return cache[(a ^ (a >> 6) ^ (a >> 12)) & (kCacheSize - 1)];
  }
  // A cache miss: the registry lookup (kept out of line so that the hit path stays small).
  Slot& slot_slow(std::string_view tag, CacheEntry& entry);

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };

  Clock clock_;
  std::uint64_t id_;
  std::atomic<std::uint64_t> order_{0};
  std::mutex registry_m_;
  std::deque<Slot> slots_;  // stable addresses
  std::unordered_map<std::string_view, Slot*, Hash, std::equal_to<>> index_;  // views of the slots' tags
  std::mutex deferred_m_;
  std::vector<std::pair<Slot*, std::function<double()>>> deferred_;
};

/// The process-wide TimeSummary that `record` feeds by default and
/// ProfileReport reads.
///
/// PPE keeps one per Python thread; ours is shared by every thread, because
/// C++ data loaders run on other threads and their times belong in the same
/// report (Python's loader workers are processes that report back). To keep
/// times apart, give `record` and ProfileReport a TimeSummary of your own.
PPE_DECL TimeSummary& get_time_summary();

}  // namespace ppe::profiler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/profiler/impl/time_summary.ipp"
#endif
