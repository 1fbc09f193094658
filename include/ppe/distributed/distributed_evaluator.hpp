#pragma once
/// \file
/// `ppe::training::extensions::DistributedEvaluator` (PPE's
/// `DistributedEvaluator`): an `Evaluator` whose ranks each evaluate their
/// share of the validation set and report the result over all of them, the
/// same on every rank (ppe/distributed/evaluation.hpp). Every rank must
/// register it with the same trigger: the evaluation is collective. Give it a
/// loader over a `ppe::distributed::DistributedValidationSampler` (no sample
/// twice; PyTorch's DistributedSampler pads with repeats, which would bias
/// the result). The progress bar shows on rank 0 only.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <utility>

#include "ppe/distributed/evaluation.hpp"
#include "ppe/training/extensions/evaluator.hpp"

namespace ppe::training::extensions {

/// A collective `Evaluator` over the default process group.
template <class Loader, class EvalFunc>
class DistributedEvaluator : public Evaluator<Loader, EvalFunc> {
  using Base = Evaluator<Loader, EvalFunc>;

 public:
  /// As `Evaluator(loader, target, options)`; throws `std::logic_error`
  /// without a default process group.
  template <class L, class M>
    requires detail::module_handle<M>
  DistributedEvaluator(L&& loader, M target, EvaluatorOptions options = {})
      : Base(std::forward<L>(loader), std::move(target), ppe::distributed::distributed_evaluation(std::move(options))) {}

  /// As `Evaluator(loader, targets, eval_func, options)`.
  template <class L, class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, EvaluatorOptions>)
  DistributedEvaluator(L&& loader, Models targets, F&& eval_func, EvaluatorOptions options = {})
      : Base(std::forward<L>(loader), std::move(targets), std::forward<F>(eval_func),
             ppe::distributed::distributed_evaluation(std::move(options))) {}
};

template <class L, class M>
  requires detail::module_handle<std::remove_cvref_t<M>>
DistributedEvaluator(L&&, M&&, EvaluatorOptions = {})
    -> DistributedEvaluator<detail::loader_storage_t<L&&>, std::remove_cvref_t<M>>;
template <class L, class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, EvaluatorOptions>)
DistributedEvaluator(L&&, Models, F&&, EvaluatorOptions = {})
    -> DistributedEvaluator<detail::loader_storage_t<L&&>, std::remove_cvref_t<F>>;

}  // namespace ppe::training::extensions
