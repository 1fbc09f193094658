#pragma once
/// \file
/// `ManualScheduleTrigger`: fires at a given list of iterations or epochs
/// (PPE's `ppe.training.triggers.ManualScheduleTrigger`; also the form
/// Determined's batch/epoch schedules take here).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training::triggers {

/// Fires at the iterations a schedule names. With unit epoch, point `p` fires
/// at iteration `trunc(p * epoch_len)` (PPE's `int(p * L)`, so fractional
/// epochs work); with unit iteration, point `p` fires at iteration `p`.
///
/// Stateless as far as saved state goes (PPE saves `{}`). Internally it keeps
/// the firing iterations for the current epoch length, sorted, and remembers
/// the next one, so an iteration that does not fire costs one comparison.
class ManualScheduleTrigger {
 public:
  /// `points` must be non-empty, finite and >= 0; integers when `unit` is
  /// iteration (PPE accepts other iteration points but they never fire).
  ManualScheduleTrigger(std::vector<double> points, Unit unit) : points_(std::move(points)), unit_(unit) {
    if (points_.empty())
      throw std::invalid_argument("ppe::ManualScheduleTrigger: points must not be empty (got an empty list)");
    for (std::size_t i = 0; i < points_.size(); ++i) {
      const double p = points_[i];
      if (!std::isfinite(p) || p < 0)
        throw std::invalid_argument("ppe::ManualScheduleTrigger: points must be finite and >= 0, got points[" +
                                    std::to_string(i) + "] = " + format_number(p));
      if (unit_ == Unit::Iteration && p != std::floor(p))
        throw std::invalid_argument(
            "ppe::ManualScheduleTrigger: points in unit 'iteration' must be whole numbers, got points[" +
            std::to_string(i) + "] = " + format_number(p));
    }
  }
  /// A single point.
  ManualScheduleTrigger(double point, Unit unit) : ManualScheduleTrigger(std::vector<double>{point}, unit) {}
  /// PPE spelling: `ManualScheduleTrigger({1.5, 2.5}, "epoch")`.
  ManualScheduleTrigger(std::vector<double> points, std::string_view unit)
      : ManualScheduleTrigger(std::move(points), parse_unit(unit)) {}
  ManualScheduleTrigger(double point, std::string_view unit) : ManualScheduleTrigger(point, parse_unit(unit)) {}

  const std::vector<double>& points() const noexcept { return points_; }
  Unit unit() const noexcept { return unit_; }

  template <class M>
  bool operator()(const M& manager) {
    return fires(manager.iteration(), manager.iters_per_epoch());
  }

  /// Whether the trigger fires at `iteration` with `epoch_len` iterations per
  /// epoch; same answer as `may_fire`, but caches the schedule and the next
  /// firing iteration.
  bool fires(std::int64_t iteration, std::int64_t epoch_len) {
    // Fast path, inlined into the manager's dispatch: [lo_, next_) is known to
    // hold no firing iteration. The rest stays out of line.
    if (epoch_len == len_ && iteration >= lo_ && iteration < next_) [[likely]]
      return false;
    return fires_slow(iteration, epoch_len);
  }

  /// The first iteration after `after` that may fire (the next scheduled one
  /// when `after + 1` lies in the known window).
  std::int64_t next_possible(std::int64_t after, std::int64_t epoch_len) const noexcept {
    const std::int64_t n = after + 1;
    if (epoch_len == len_ && n >= lo_ && n < next_) return next_;
    return n;
  }

  /// Pure look-ahead (PPE's `may_fire`): does some point land on `iteration`?
  bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const {
    if (built_ && epoch_len == len_) return std::binary_search(firing_.begin(), firing_.end(), iteration);
    for (double p : points_)
      if (auto it = point_iteration(p, epoch_len); it && *it == iteration) return true;
    return false;
  }

  State state_dict() const { return State::dict(); }
  void load_state_dict(const State&) {}

  /// The last point, in the schedule's unit.
  std::optional<TrainingLength> training_length() const {
    return TrainingLength{*std::max_element(points_.begin(), points_.end()), unit_};
  }

 private:
  static std::string format_number(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  // `fires` outside the known window: decides, and remembers the window up to
  // the next firing iteration.
  [[gnu::noinline]] bool fires_slow(std::int64_t iteration, std::int64_t epoch_len) {
    if (!built_ || epoch_len != len_) rebuild(epoch_len);
    const auto ub = std::upper_bound(firing_.begin(), firing_.end(), iteration);
    const bool fire = ub != firing_.begin() && *(ub - 1) == iteration;
    lo_ = ub == firing_.begin() ? std::numeric_limits<std::int64_t>::min() : *(ub - 1) + 1;
    next_ = ub == firing_.end() ? std::numeric_limits<std::int64_t>::max() : *ub;
    return fire;
  }

  // The iteration point `p` fires at, or nothing when it lies beyond int64.
  std::optional<std::int64_t> point_iteration(double p, std::int64_t epoch_len) const noexcept {
    const double v = unit_ == Unit::Epoch ? p * static_cast<double>(epoch_len) : p;
    if (!(v < 9.2233720368547758e18) || !(v > -9.2233720368547758e18)) return std::nullopt;
    return static_cast<std::int64_t>(v);  // truncation toward zero, as Python's int()
  }

  void rebuild(std::int64_t epoch_len) {
    firing_.clear();
    for (double p : points_)
      if (auto it = point_iteration(p, epoch_len)) firing_.push_back(*it);
    std::sort(firing_.begin(), firing_.end());
    firing_.erase(std::unique(firing_.begin(), firing_.end()), firing_.end());
    len_ = epoch_len;
    built_ = true;
    lo_ = 0;
    next_ = 0;  // empty range: the next call takes the slow path
  }

  std::vector<double> points_;
  Unit unit_;
  std::vector<std::int64_t> firing_;  // sorted, unique; valid for len_
  std::int64_t len_ = 0, lo_ = 0, next_ = 0;  // [lo_, next_) holds no firing iteration
  bool built_ = false;
};

}  // namespace ppe::training::triggers
