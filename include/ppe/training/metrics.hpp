#pragma once
/// \file
/// Evaluation metrics (PPE's `ppe.training.metrics`). The per-key reducers of
/// per-batch values (`Reducer`, `ReducedSummary`) are in training/reducers.hpp,
/// included here.
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
#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/reducers.hpp"

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
                              "; keys present: " + ppe::detail::python_key_list(c));
    return it->second;
  } else if constexpr (requires { *c.find(key); c.find(key) == nullptr; }) {
    const auto* v = c.find(key);  // torch::OrderedDict
    if (v == nullptr)
      throw std::out_of_range(std::string("ppe: ") + who + ": key '" + key + "' not found in the " + what +
                              "; keys present: " + ppe::detail::python_key_list(c));
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
                                  ppe::detail::python_shape(labels.sizes()) + " and the first " + std::to_string(n) +
                                  " predictions '" + output_key_ + "' " + ppe::detail::python_shape(pred.sizes()) +
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

}  // namespace ppe::training::metrics
