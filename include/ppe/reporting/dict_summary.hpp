#pragma once
/// \file
/// `ppe::reporting::DictSummary`: one Summary per key (PPE's
/// `ppe.reporting.DictSummary`).

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/summary.hpp"
#include "ppe/state.hpp"

namespace ppe::reporting {

/// A Summary per key, in first-insertion order.
///
/// As in PPE, values that are not scalars (tensors with one or more
/// dimensions) are skipped: only numbers, 0-dim tensors and deferred callables
/// are accumulated.
class DictSummary {
 public:
  /// Adds every entry of an observation.
  void add(const Observation& obs) {
    for (auto [k, v] : obs) add(k, v);
  }
  void add(std::initializer_list<std::pair<std::string_view, Value>> items) {
    for (const auto& [k, v] : items) add(k, v);
  }
  /// Adds one value (skipped when it is not a scalar).
  void add(std::string_view key, const Value& value, double weight = 1.0) {
    if (!accumulable(value)) return;
    summary(key).add(value, weight);
  }
  /// Adds one value with a 0-dim tensor weight; any other weight shape is an error.
  void add(std::string_view key, const Value& value, const at::Tensor& weight);

  /// Means per key (empty when nothing was added).
  Observation compute_mean();
  /// `key` → mean and `key.std` → population std, interleaved per key.
  Observation make_statistics();

  State state_dict();
  /// Replaces the whole content with `state`.
  void load_state_dict(const State& state);

  void reset() { summaries_.clear(); }
  bool empty() const noexcept { return summaries_.empty(); }
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  std::vector<std::string> keys() const;

  /// Union of keys in sorted order; common keys are summed.
  friend DictSummary operator+(const DictSummary& a, const DictSummary& b) {
    std::vector<std::string> keys = a.keys();
    for (const auto& k : b.keys())
      if (!a.contains(k)) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    DictSummary out;
    for (const auto& k : keys) {
      Summary s;
      if (const Summary* x = a.find(k)) s += *x;
      if (const Summary* y = b.find(k)) s += *y;
      out.summaries_.emplace_back(k, std::move(s));
    }
    return out;
  }

 private:
  static bool accumulable(const Value& v) { return !v.is_tensor() || v.tensor().dim() == 0; }

  const Summary* find(std::string_view key) const noexcept {
    for (const auto& [k, s] : summaries_)
      if (k == key) return &s;
    return nullptr;
  }
  Summary& summary(std::string_view key) {
    for (auto& [k, s] : summaries_)
      if (k == key) return s;
    return add_summary(key);
  }
  // A key's first value: the vector's growth is compiled once (separate compilation).
  Summary& add_summary(std::string_view key);

  std::vector<std::pair<std::string, Summary>> summaries_;
};

}  // namespace ppe::reporting

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/reporting/impl/dict_summary.ipp"
#endif
