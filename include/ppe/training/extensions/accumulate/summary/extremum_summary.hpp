#pragma once
/// \file
/// `accumulate::MinSummary` and `accumulate::MaxSummary` (PPE's
/// `accumulate._summary.MinSummary` / `MaxSummary`): the smallest and the
/// largest value added, which `MinAccumulate` and `MaxAccumulate` report. One
/// header and one implementation (`detail::ExtremumSummary`) for both: they
/// are mirror images that differ only in the comparison and the state key.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <limits>
#include <string_view>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extensions/accumulate/summary/summary_base.hpp"

namespace ppe::training::extensions::accumulate {
namespace detail {

/// The minimum (`is_max == false`) or maximum of the values added.
///
/// A value replaces the one kept unless the kept one is strictly better (PPE:
/// `x if x > value else value`), so a later equal value wins and a NaN value
/// replaces any number. The weight is ignored (PPE). The result keeps the type
/// of the value that won: a double for a number, a 0-dim tensor of its dtype
/// for a CPU tensor (read at `add`, no device work). Other tensors are kept
/// and reduced on their device in batches without host synchronisation; when
/// there are some, the result is a tensor on their device (the host values
/// clamped in). Deferred values are evaluated when the summary is read. An
/// empty summary gives +inf (min) or -inf (max), as PPE's.
class ExtremumSummary {
 public:
  void add(const reporting::Value& value, double weight = 1.0);
  reporting::Value compute_accumulate();
  /// `{key: value}` (PPE's layout: `"_min_x"` or `"_max_x"`, a double), plus
  /// `"_dtype"` when the value came from a CPU tensor (so that a restored
  /// summary reports a tensor again); a 0-dim tensor on its device when
  /// tensors are kept there.
  State state_dict();
  void load_state_dict(const State& s);
  ExtremumSummary& operator+=(const ExtremumSummary& other);
  void reset();

 protected:
  explicit ExtremumSummary(bool is_max) noexcept : is_max_(is_max) { reset_host(); }

 private:
  // Whether `v` replaces `best` (PPE's comparison, NaN included).
  bool replaces(double best, double v) const noexcept { return is_max_ ? !(best > v) : !(best < v); }
  void add_host(double v, at::ScalarType dtype);
  void fold();
  void settle();
  at::Tensor combined() const;
  void reset_host() noexcept {
    best_ = is_max_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    best_dtype_ = at::ScalarType::Undefined;
    has_host_ = false;
  }
  std::string_view key() const noexcept { return is_max_ ? "_max_x" : "_min_x"; }
  std::string_view who() const noexcept { return is_max_ ? "MaxSummary" : "MinSummary"; }

  bool is_max_;
  // Host part: the best number or host-read tensor value, its tensor dtype
  // (Undefined: it was a number), whether any was added.
  double best_;
  at::ScalarType best_dtype_;
  bool has_host_;
  // Device part: the best of the folded tensors.
  at::Tensor tbest_;
  LazyValues lazy_;
};

}  // namespace detail

/// The smallest value added (PPE's `MinSummary`); see `detail::ExtremumSummary`.
class MinSummary : public detail::ExtremumSummary {
 public:
  MinSummary() noexcept : ExtremumSummary(false) {}
  /// The minimum (PPE's `compute_min`).
  reporting::Value compute_min() { return compute_accumulate(); }
  MinSummary& operator+=(const MinSummary& other) {
    ExtremumSummary::operator+=(other);
    return *this;
  }
  friend MinSummary operator+(MinSummary a, const MinSummary& b) { return a += b; }
};

/// The largest value added (PPE's `MaxSummary`); see `detail::ExtremumSummary`.
class MaxSummary : public detail::ExtremumSummary {
 public:
  MaxSummary() noexcept : ExtremumSummary(true) {}
  /// The maximum (PPE's `compute_max`).
  reporting::Value compute_max() { return compute_accumulate(); }
  MaxSummary& operator+=(const MaxSummary& other) {
    ExtremumSummary::operator+=(other);
    return *this;
  }
  friend MaxSummary operator+(MaxSummary a, const MaxSummary& b) { return a += b; }
};

}  // namespace ppe::training::extensions::accumulate

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/accumulate/summary/impl/extremum_summary.ipp"
#endif
