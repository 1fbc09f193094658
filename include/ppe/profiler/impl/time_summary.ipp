// Definitions of profiler/time_summary.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "ppe/profiler/time_summary.hpp"

namespace ppe::profiler {

namespace detail {

PPE_DECL std::int64_t steady_clock_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__x86_64__) || defined(_M_X64)
// A counter reading and the steady_clock time at (almost) the same moment:
// the pair whose two counter reads lie closest together, of a few tries.
PPE_DECL void tsc_pair(std::int64_t& tsc, std::int64_t& ns) noexcept {
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < 8; ++i) {
    const auto a = static_cast<std::int64_t>(__rdtsc());
    const std::int64_t s = steady_clock_ns();
    const auto b = static_cast<std::int64_t>(__rdtsc());
    if (b - a < best) {
      best = b - a;
      tsc = a + (b - a) / 2;
      ns = s;
    }
  }
}
#endif

PPE_DECL const TscCalibration& tsc_calibration() {
  static const TscCalibration calibration = [] {
    TscCalibration c;
#if defined(__x86_64__) || defined(_M_X64)
    // Only where the kernel itself times steady_clock with the counter: then
    // it is invariant and synchronised across cores.
    std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string source;
    if (!(f >> source) || source != "tsc") return c;
    std::int64_t tsc0 = 0, ns0 = 0, tsc1 = 0, ns1 = 0;
    tsc_pair(tsc0, ns0);
    while (steady_clock_ns() - ns0 < 2'000'000) {
    }
    tsc_pair(tsc1, ns1);
    if (tsc1 <= tsc0) return c;
    const double ratio = static_cast<double>(ns1 - ns0) / static_cast<double>(tsc1 - tsc0);
    if (!(ratio > 0.01 && ratio < 100.0)) return c;  // 10 MHz .. 100 GHz: anything else is not a clock
    c.use_tsc = true;
    c.tsc0 = tsc1;
    c.ns0 = ns1;
    c.ns_per_tick = ratio;
#endif
    return c;
  }();
  return calibration;
}

[[gnu::noinline]] PPE_DECL std::int64_t fast_clock_slow() noexcept {
  const TscCalibration& c = tsc_calibration();  // thread-safe: a function-local static
  // One thread publishes the calibration (3: being written); the others use
  // the static directly until it is published.
  int expected = 0;
  if (tsc_state.mode.compare_exchange_strong(expected, 3, std::memory_order_acq_rel)) {
    tsc_state.c = c;
    tsc_state.mode.store(c.use_tsc ? 1 : 2, std::memory_order_release);
  }
#if defined(__x86_64__) || defined(_M_X64)
  if (c.use_tsc)
    return c.ns0 +
           static_cast<std::int64_t>(static_cast<double>(static_cast<std::int64_t>(__rdtsc()) - c.tsc0) * c.ns_per_tick);
#endif
  return steady_clock_ns();
}

}  // namespace detail

namespace detail {
// One counter per program (not per translation unit): ids are never reused.
PPE_DECL std::uint64_t next_time_summary_id() noexcept {
  static std::atomic<std::uint64_t> next{1};  // 0: an empty cache entry
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

PPE_DECL TimeSummary::TimeSummary(Clock clock) : clock_(clock ? clock : &detail::fast_clock_ns), id_(detail::next_time_summary_id()) {}

PPE_DECL TimeSummary::~TimeSummary() = default;

// Not inlined into slot(): its hit path stays a few instructions.
[[gnu::noinline]] PPE_DECL TimeSummary::Slot& TimeSummary::slot_slow(std::string_view tag, CacheEntry& entry) {
  Slot* s = nullptr;
  {
    std::lock_guard lock(registry_m_);
    if (auto it = index_.find(tag); it != index_.end()) {
      s = it->second;
    } else {
      s = &slots_.emplace_back(std::string(tag));
      index_.emplace(std::string_view(s->tag_), s);
    }
  }
  entry = CacheEntry{id_, tag.data(), tag.size(), s};
  return *s;
}

PPE_DECL void TimeSummary::add_deferred(std::string_view tag, std::function<double()> seconds) {
  Slot& s = slot(tag);
  std::lock_guard lock(deferred_m_);
  deferred_.emplace_back(&s, std::move(seconds));
}

PPE_DECL void TimeSummary::synchronize() {
  std::vector<std::pair<Slot*, std::function<double()>>> pending;
  {
    std::lock_guard lock(deferred_m_);
    pending.swap(deferred_);
  }
  for (auto& [s, fn] : pending) add(*s, fn());
}

PPE_DECL std::vector<std::pair<std::string, TimeStats>> TimeSummary::summary(bool clear) {
  synchronize();
  std::vector<std::pair<std::uint64_t, std::pair<std::string, TimeStats>>> found;
  {
    std::lock_guard lock(registry_m_);
    for (Slot& s : slots_) {
      s.lock();
      const TimeStats st = s.stats_;
      const std::uint64_t order = s.order_;
      if (clear) s.stats_ = TimeStats{};
      s.unlock();
      if (st.count > 0) found.push_back({order, {s.tag_, st}});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, TimeStats>> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

PPE_DECL std::vector<std::pair<std::string, double>> TimeSummary::make_statistics(bool clear) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [tag, st] : summary(clear)) {
    out.emplace_back(tag, st.mean());
    out.emplace_back(tag + ".std", st.std());
    out.emplace_back(tag + ".min", st.min);
    out.emplace_back(tag + ".max", st.max);
  }
  return out;
}

PPE_DECL TimeSummary& get_time_summary() {
  // Never destroyed: threads and static objects may still record at exit.
  static TimeSummary* const instance = new TimeSummary();
  return *instance;
}

}  // namespace ppe::profiler
