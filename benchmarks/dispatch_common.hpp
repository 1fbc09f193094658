#pragma once
// Shared by bench_dispatch and dispatch_count: the extensions, the managers
// with N entries whose triggers never fire, and the hand-written equivalent.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include <ppe/ppe.hpp>

namespace ppe_bench {

/// Iterations per epoch and epochs: the stop trigger fires after 1e15
/// iterations, far beyond any benchmark run.
inline constexpr std::int64_t kItersPerEpoch = 1'000'000'000;
inline constexpr double kMaxEpochs = 1e6;
/// Period of every extension's trigger: it never fires within a run.
inline constexpr std::int64_t kPeriod = 1'000'000'000'000;

/// Extension number `I` (distinct types, as a real set of policy types).
/// Its body counts its calls; it never runs in the benchmarks.
template <std::size_t I>
struct Ext {
  using extension_concept = ppe::training::extension_tag;
  static constexpr std::string_view default_name = "ext";
  std::int64_t* calls;
  void operator()(ppe::training::Manager&) { ++*calls; }
};

inline ppe::training::ManagerOptions options() {
  return ppe::training::ManagerOptions().max_epochs(kMaxEpochs).iters_per_epoch(kItersPerEpoch);
}

/// Counters written by the extensions (and by the hand-written loop's calls).
template <std::size_t N>
struct Calls {
  std::array<std::int64_t, N> count{};
};

/// A statically typed manager with N entries `entry(Ext<i>, iterations(period))`.
template <std::size_t N>
auto make_static_manager(Calls<N>& calls, std::int64_t period = kPeriod) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return ppe::training::ExtensionsManager(
        options(), ppe::training::Models{}, ppe::training::Optimizers{},
        ppe::training::entry(Ext<I>{&calls.count[I]}, ppe::iterations(static_cast<double>(period)))...);
  }(std::make_index_sequence<N>{});
}

/// A manager without static entries; the N extensions are added with
/// `extend(...)` (type-erased AnyExtension + AnyTrigger).
using RuntimeManager = decltype(ppe::training::ExtensionsManager(options(), ppe::training::Models{},
                                                                 ppe::training::Optimizers{}));
template <std::size_t N>
void extend_runtime(RuntimeManager& manager, Calls<N>& calls) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (manager.extend(ppe::training::entry(Ext<I>{&calls.count[I]}, ppe::iterations(static_cast<double>(kPeriod)))),
     ...);
  }(std::make_index_sequence<N>{});
}

/// The same loop written by hand: an iteration counter, the next firing
/// iteration of each extension in an array, one `if` per extension (whose
/// body is the extension's: count the call), and the stop check.
template <std::size_t N>
class HandWritten {
 public:
  explicit HandWritten(Calls<N>& calls, std::int64_t period = kPeriod) : calls_(calls) {
    next_.fill(period);
    period_.fill(period);
  }

  template <class F>
  void run_iteration(F&& body) {
    body();
    ++iteration_;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((iteration_ == next_[I] ? (next_[I] += period_[I], ++calls_.count[I]) : 0), ...);
    }(std::make_index_sequence<N>{});
    if (iteration_ >= stop_at_) stopped_ = true;
  }

  std::int64_t iteration() const noexcept { return iteration_; }
  bool stopped() const noexcept { return stopped_; }

 private:
  Calls<N>& calls_;
  std::int64_t iteration_ = 0;
  std::int64_t stop_at_ = static_cast<std::int64_t>(kMaxEpochs) * kItersPerEpoch;
  bool stopped_ = false;
  std::array<std::int64_t, N> next_;
  std::array<std::int64_t, N> period_;
};

}  // namespace ppe_bench
