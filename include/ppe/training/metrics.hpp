#pragma once
/// \file
/// Evaluation metrics (PPE's `ppe.training.metrics`) and per-key reducers of
/// per-batch values (Determined's `Reducer`; PPE only averages).
///
/// A *metric* is called by an evaluator after each batch as
/// `metric(batch, outputs, last_batch)` and reports what it measures into the
/// current observation with `ppe::reporting::report`; the evaluator then
/// reduces the per-batch observations key by key (`ReducedSummary`).
///
/// ```cpp
/// namespace m = ppe::training::metrics;
/// evaluator.add_metric(m::AccuracyMetric("t", "y"));        // reports "accuracy" per batch
/// ext::EvaluatorOptions().reducer("correct", m::Reducer::sum());
/// ```

#include <ATen/core/Tensor.h>
#include <ATen/ops/stack_ops.h>  // the operator alone, as Summary (ATen/ops/stack.h is slow to compile)

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/batch.hpp"
#include "ppe/reporting/dict_summary.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/reporting/value.hpp"

namespace ppe::training::metrics {

/// What an evaluator passes to metrics as the outputs when its evaluation
/// function returns nothing (PPE passes `None`).
struct NoOutput {};

/// A metric for batches of type `Batch` and outputs of type `Outputs`:
/// callable as `metric(batch, outputs, last_batch)`.
template <class M, class Batch, class Outputs>
concept metric = std::invocable<M&, const Batch&, const Outputs&, bool>;

namespace detail {

using ppe::detail::is_example_v;

inline std::string shape_text(const at::Tensor& t) {
  std::string out = "[";
  for (std::size_t i = 0; i < t.sizes().size(); ++i) out += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return out + "]";
}

/// The keys of a map-like container, as `['a', 'b']`.
template <class M>
std::string keys_text(const M& map) {
  std::string out = "[";
  bool first = true;
  for (const auto& item : map) {
    std::string key;
    if constexpr (requires { item.key(); })
      key = std::string(item.key());
    else
      key = std::string(item.first);
    out += (first ? "'" : ", '") + key + "'";
    first = false;
  }
  return out + "]";
}

/// `container[key]` as a tensor, for std::map/std::unordered_map and
/// torch::OrderedDict of tensors, and for `torch::data::Example` (keys "data"
/// and "target"). `what` names the argument in errors.
template <class C>
const at::Tensor& tensor_at(const C& c, const std::string& key, const char* who, const char* what) {
  if constexpr (is_example_v<C>) {
    if (key == "data") return c.data;
    if constexpr (requires { c.target; }) {
      if (key == "target") return c.target;
      throw std::out_of_range(std::string("ppe: ") + who + ": the " + what + " is a torch::data::Example, whose keys " +
                              "are 'data' and 'target'; got key '" + key + "'");
    } else {
      throw std::out_of_range(std::string("ppe: ") + who + ": the " + what +
                              " is a torch::data::Example without a target, whose only key is 'data'; got key '" + key +
                              "'");
    }
  } else if constexpr (requires { c.find(key) == c.end(); c.find(key)->second; }) {
    auto it = c.find(key);
    if (it == c.end())
      throw std::out_of_range(std::string("ppe: ") + who + ": key '" + key + "' not found in the " + what +
                              "; keys present: " + keys_text(c));
    return it->second;
  } else if constexpr (requires { *c.find(key); c.find(key) == nullptr; }) {
    const auto* v = c.find(key);  // torch::OrderedDict
    if (v == nullptr)
      throw std::out_of_range(std::string("ppe: ") + who + ": key '" + key + "' not found in the " + what +
                              "; keys present: " + keys_text(c));
    return *v;
  } else {
    static_assert(sizeof(C) == 0,
                  "ppe::training::metrics: this metric looks values up by name: the batch and the outputs must be "
                  "maps from names to tensors (std::map, std::unordered_map, torch::OrderedDict) or a "
                  "torch::data::Example (keys \"data\" and \"target\"); the outputs may also be one tensor");
  }
}

}  // namespace detail

/// Reports the accuracy of predictions against labels (PPE's
/// `AccuracyMetric(label_key, output_key)`).
///
/// For a batch, `labels = batch[label_key]` (its first dimension is the batch
/// size `n`), `pred = outputs[output_key][:n]`, and the accuracy is the share
/// of equal elements, `(labels.view_as(pred) == pred).sum() / n`, as PPE
/// computes it: the predictions are compared as they are (class indices, not
/// scores; take the argmax in the model or the evaluation function). The
/// outputs may also be a single tensor, which is then the predictions.
///
/// Called by an evaluator (`metric(batch, outputs, last_batch)`) it reports the
/// value under `report_key` (default "accuracy") into the current
/// observation; `operator()(batch, outputs)` returns `{report_key: value}`
/// (PPE's form, used by the engine's evaluator). The value is a 0-dim double
/// tensor on the labels' device: no host synchronisation per batch.
class AccuracyMetric {
 public:
  AccuracyMetric(std::string label_key, std::string output_key, std::string report_key = "accuracy")
      : label_key_(std::move(label_key)), output_key_(std::move(output_key)), report_key_(std::move(report_key)) {
    if (report_key_.empty()) throw std::invalid_argument("ppe: AccuracyMetric needs a non-empty report key");
  }

  const std::string& label_key() const noexcept { return label_key_; }
  const std::string& output_key() const noexcept { return output_key_; }
  const std::string& report_key() const noexcept { return report_key_; }

  /// The accuracy of one batch.
  template <class Batch, class Outputs>
  at::Tensor compute(const Batch& batch, const Outputs& outputs) const {
    const at::Tensor& labels = detail::tensor_at(batch, label_key_, "AccuracyMetric", "batch");
    const at::Tensor* full = nullptr;
    if constexpr (std::is_convertible_v<const Outputs&, const at::Tensor&>)
      full = &static_cast<const at::Tensor&>(outputs);
    else
      full = &detail::tensor_at(outputs, output_key_, "AccuracyMetric", "outputs");
    if (!labels.defined() || labels.dim() == 0)
      throw std::invalid_argument("ppe: AccuracyMetric: the labels '" + label_key_ +
                                  "' must have a batch dimension, got a tensor with 0 dimensions");
    if (!full->defined() || full->dim() == 0)
      throw std::invalid_argument("ppe: AccuracyMetric: the predictions '" + output_key_ +
                                  "' must have a batch dimension, got a tensor with 0 dimensions");
    const std::int64_t n = labels.size(0);
    const at::Tensor pred = full->slice(0, 0, n);
    if (labels.numel() != pred.numel())
      throw std::invalid_argument("ppe: AccuracyMetric: the labels '" + label_key_ + "' " +
                                  detail::shape_text(labels) + " and the first " + std::to_string(n) +
                                  " predictions '" + output_key_ + "' " + detail::shape_text(pred) +
                                  " have different numbers of elements; expected one prediction per label");
    return labels.reshape_as(pred).eq(pred).sum().to(at::kDouble).div(static_cast<double>(n));
  }

  /// `{report_key: accuracy}` (PPE's `metric(batch, out)`).
  template <class Batch, class Outputs>
  reporting::Observation operator()(const Batch& batch, const Outputs& outputs) const {
    reporting::Observation out;
    out.set(report_key_, compute(batch, outputs));
    return out;
  }

  /// Reports `report_key: accuracy` into the current observation.
  template <class Batch, class Outputs>
  void operator()(const Batch& batch, const Outputs& outputs, bool /*last_batch*/) const {
    reporting::report({{report_key_, reporting::Value(compute(batch, outputs))}});
  }

 private:
  std::string label_key_, output_key_, report_key_;
};

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

/// Reduces per-batch observations key by key: each key with its reducer from
/// `reducers` (by exact key), any other key with `fallback` (default: mean).
///
/// Means go through `ppe::reporting::DictSummary`. Sums, minima and maxima of
/// tensors are computed lazily, as Summary does: no host synchronisation and
/// no device work per batch (one batched reduction every `kFoldEvery` values
/// and one when the result is read); numbers stay doubles, tensors stay on
/// their device. Deferred values are evaluated when the result is computed.
/// Custom reducers receive every value of their key.
class ReducedSummary {
 public:
  static constexpr std::size_t kFoldEvery = 1024;

  ReducedSummary() = default;
  explicit ReducedSummary(std::vector<std::pair<std::string, Reducer>> reducers, Reducer fallback = Reducer::mean())
      : reducers_(std::move(reducers)), fallback_(std::move(fallback)) {}

  /// Adds one batch's observation.
  void add(const reporting::Observation& observation) {
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
                                  (t.defined() ? detail::shape_text(t) : std::string("(undefined)")));
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
  std::vector<Slot> slots_;
  reporting::DictSummary means_;
};

}  // namespace ppe::training::metrics
