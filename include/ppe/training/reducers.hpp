#pragma once
/// \file
/// Reducers of per-batch values (Determined's `Reducer`; PPE only averages):
/// how an evaluator turns the observations of its batches into one value per
/// key, by mean, sum, minimum, maximum or a function of all the values.
///
/// ```cpp
/// ext::EvaluatorOptions().reducer("correct", ppe::training::metrics::Reducer::sum());
/// ```

#include <ATen/core/Tensor.h>
#include <ATen/ops/stack_ops.h>  // the operator alone, as Summary (ATen/ops/stack.h is slow to compile)

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/dict_summary.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/training/models.hpp"

namespace ppe::training::metrics {

/// How the per-batch values of one key become the evaluation's value
/// (Determined's `Reducer`): their mean (the default, and PPE's only way),
/// sum, minimum, maximum, or a function of all of them.
class Reducer {
 public:
  enum class Kind { Mean, Sum, Min, Max, Custom };
  /// A custom reduction: all per-batch values of a key (deferred values
  /// already evaluated, tensors of any shape as reported) → the result.
  using Function = std::function<reporting::Value(const std::vector<reporting::Value>&)>;

  /// The mean, as PPE's `DictSummary` computes it: numbers and 0-dim tensors
  /// are averaged; tensors with dimensions are skipped (PPE).
  static Reducer mean() { return Reducer(Kind::Mean); }
  /// The sum. Values must be numbers or one-element tensors.
  static Reducer sum() { return Reducer(Kind::Sum); }
  /// The minimum. Values must be numbers or one-element tensors.
  static Reducer min() { return Reducer(Kind::Min); }
  /// The maximum. Values must be numbers or one-element tensors.
  static Reducer max() { return Reducer(Kind::Max); }

  /// A custom reduction; `fn` must not be empty.
  explicit Reducer(Function fn) : kind_(Kind::Custom), fn_(std::move(fn)) {
    if (!fn_) throw std::invalid_argument("ppe: a custom Reducer needs a function, got an empty one");
  }
  /// Any callable `Value(const std::vector<Value>&)` (e.g. a lambda).
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, Reducer> && !std::is_same_v<std::remove_cvref_t<F>, Function> &&
             std::is_invocable_r_v<reporting::Value, F&, const std::vector<reporting::Value>&>)
  Reducer(F fn) : Reducer(Function(std::move(fn))) {}

  Kind kind() const noexcept { return kind_; }
  const Function& function() const noexcept { return fn_; }
  /// "mean", "sum", "min", "max" or "custom".
  std::string_view name() const noexcept {
    switch (kind_) {
      case Kind::Mean: return "mean";
      case Kind::Sum: return "sum";
      case Kind::Min: return "min";
      case Kind::Max: return "max";
      case Kind::Custom: break;
    }
    return "custom";
  }

 private:
  explicit Reducer(Kind k) : kind_(k) {}
  Kind kind_;
  Function fn_;
};

/// Reducers by key, as evaluator options hold them: a key is set once (a
/// second `set` replaces its reducer), in the order first set.
class ReducerList {
 public:
  using Item = std::pair<std::string, Reducer>;
  void set(std::string key, Reducer reducer) {
    if (key.empty()) throw std::invalid_argument("ppe: a reducer needs a non-empty key");
    for (auto& [k, r] : items_)
      if (k == key) {
        r = std::move(reducer);
        return;
      }
    items_.emplace_back(std::move(key), std::move(reducer));
  }
  const std::vector<Item>& items() const noexcept { return items_; }

 private:
  std::vector<Item> items_;
};

/// Combines the per-batch observations of the processes of a distributed
/// evaluation: receives this process's (values resolved), returns every
/// process's, in rank order, the same on every rank
/// (`ppe::distributed::all_gather_observations`; DistributedEvaluator sets it).
using Gather = std::function<std::vector<reporting::Observation>(std::vector<reporting::Observation>)>;

/// Reduces per-batch observations key by key: each key with its reducer from
/// `reducers` (by exact key), any other key with `fallback` (default: mean).
///
/// Means go through `ppe::reporting::DictSummary`. Sums, minima and maxima of
/// tensors are computed lazily, as Summary does: no host synchronisation and
/// no device work per batch (one batched reduction every `kFoldEvery` values
/// and one when the result is read); numbers stay doubles, tensors stay on
/// their device. Deferred values are evaluated when the result is computed.
/// Custom reducers receive every value of their key.
///
/// With a `Gather`, observations are kept until `compute`, which gathers
/// every process's and reduces them in rank order: each reducer then gives
/// exactly what one process reducing the concatenated batches gives.
class ReducedSummary {
 public:
  static constexpr std::size_t kFoldEvery = 1024;

  ReducedSummary() = default;
  explicit ReducedSummary(std::vector<std::pair<std::string, Reducer>> reducers, Reducer fallback = Reducer::mean(),
                          Gather gather = {})
      : reducers_(std::move(reducers)), fallback_(std::move(fallback)), gather_(std::move(gather)) {}

  /// Adds one batch's observation.
  void add(const reporting::Observation& observation) {
    if (gather_) {
      reporting::Observation& kept = kept_.emplace_back();
      for (auto [k, v] : observation) kept.set(k, v.resolved());
      return;
    }
    for (auto [k, v] : observation) add(k, v);
  }
  /// Adds one value of `key`.
  void add(std::string_view key, const reporting::Value& value) {
    Slot& s = slot(key);
    switch (s.reducer.kind()) {
      case Reducer::Kind::Mean: means_.add(key, value); break;
      case Reducer::Kind::Custom: s.values.push_back(value); break;
      default:
        if (value.is_deferred())
          s.values.push_back(value);  // evaluated when the result is read
        else
          accumulate(s, value);
    }
  }

  /// The reduced value of every key, in the order keys were first added.
  reporting::Observation compute() {
    if (gather_) {
      std::vector<reporting::Observation> all = gather_(std::move(kept_));
      kept_.clear();
      for (const auto& o : all)
        for (auto [k, v] : o) add(k, v);
    }
    reporting::Observation means = means_.compute_mean();
    reporting::Observation out;
    for (Slot& s : slots_) {
      switch (s.reducer.kind()) {
        case Reducer::Kind::Mean:
          // A key whose values were all skipped (not scalars) has no mean (PPE).
          if (const reporting::Value* m = means.find(s.key)) out.set(s.key, *m);
          break;
        case Reducer::Kind::Custom: {
          std::vector<reporting::Value> resolved;
          resolved.reserve(s.values.size());
          for (const auto& v : s.values) resolved.push_back(v.resolved());
          out.set(s.key, s.reducer.function()(resolved));
          break;
        }
        default: {
          std::vector<reporting::Value> deferred = std::move(s.values);
          s.values.clear();
          for (const auto& v : deferred) accumulate(s, v.resolved());
          fold(s);
          out.set(s.key, result(s));
        }
      }
    }
    return out;
  }

  /// Forgets every value (the reducers stay).
  void reset() {
    kept_.clear();
    slots_.clear();
    means_.reset();
  }
  bool empty() const noexcept { return slots_.empty(); }
  /// The reducer used for `key`.
  const Reducer& reducer_for(std::string_view key) const noexcept {
    for (const auto& [k, r] : reducers_)
      if (k == key) return r;
    return fallback_;
  }

 private:
  struct Slot {
    Slot(std::string k, Reducer r) : key(std::move(k)), reducer(std::move(r)) {}
    std::string key;
    Reducer reducer;
    double x = 0;           // numbers
    bool has_x = false;
    std::vector<at::Tensor> pending;  // one-element tensors not yet folded
    at::Tensor folded;                // the reduction of the folded ones (0-dim)
    std::vector<reporting::Value> values;  // custom: all values; others: deferred ones
  };

  Slot& slot(std::string_view key) {
    for (Slot& s : slots_)
      if (s.key == key) return s;
    return slots_.emplace_back(std::string(key), reducer_for(key));
  }

  static void accumulate(Slot& s, const reporting::Value& v) {
    if (v.is_scalar()) {
      const double x = v.scalar();
      if (!s.has_x)
        s.x = x;
      else if (s.reducer.kind() == Reducer::Kind::Sum)
        s.x += x;
      else if (s.reducer.kind() == Reducer::Kind::Min)
        s.x = x < s.x ? x : s.x;
      else
        s.x = x > s.x ? x : s.x;
      s.has_x = true;
      return;
    }
    const at::Tensor& t = v.tensor();
    if (!t.defined() || t.numel() != 1)
      throw std::invalid_argument("ppe: the " + std::string(s.reducer.name()) + " reducer of key '" + s.key +
                                  "' needs numbers or one-element tensors, got a tensor of shape " +
                                  (t.defined() ? ppe::detail::python_shape(t.sizes()) : std::string("(undefined)")));
    s.pending.push_back(reporting::detached(t).reshape({}));
    if (s.pending.size() >= kFoldEvery) fold(s);
  }

  static at::Tensor reduce(const at::Tensor& t, Reducer::Kind k) {
    if (k == Reducer::Kind::Sum) return t.sum();
    return k == Reducer::Kind::Min ? t.min() : t.max();
  }

  // One batched reduction of the pending tensors into `folded`.
  static void fold(Slot& s) {
    if (s.pending.empty()) return;
    const Reducer::Kind k = s.reducer.kind();
    at::Tensor r = reduce(at::_ops::stack::call(s.pending, 0), k);
    s.pending.clear();
    if (!s.folded.defined())
      s.folded = r;
    else if (k == Reducer::Kind::Sum)
      s.folded = s.folded.add(r);
    else
      s.folded = reduce(at::_ops::stack::call({s.folded, r}, 0), k);
  }

  static reporting::Value result(const Slot& s) {
    if (!s.folded.defined()) return reporting::Value(s.x);  // numbers only (a slot exists: one was added)
    if (!s.has_x) return reporting::Value(s.folded);
    switch (s.reducer.kind()) {
      case Reducer::Kind::Sum: return reporting::Value(s.folded.add(s.x));
      case Reducer::Kind::Min: return reporting::Value(s.folded.clamp_max(s.x));
      default: return reporting::Value(s.folded.clamp_min(s.x));
    }
  }

  std::vector<std::pair<std::string, Reducer>> reducers_;
  Reducer fallback_ = Reducer::mean();
  Gather gather_;
  std::vector<reporting::Observation> kept_;  // with a gather: this process's, until compute
  std::vector<Slot> slots_;
  reporting::DictSummary means_;
};

}  // namespace ppe::training::metrics
