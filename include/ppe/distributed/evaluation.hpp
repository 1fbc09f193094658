#pragma once
/// \file
/// Distributed evaluation (PPE's DistributedEvaluator and
/// `create_evaluator(distributed=True)`): every rank evaluates its share of
/// the validation set (a `DistributedValidationSampler`), then the ranks'
/// per-batch observations are all-gathered and reduced in rank order, so
/// each reducer (mean, sum, min, max, custom) gives on every rank exactly
/// what one process gives on the concatenated batches. (PPE all-gathers the
/// ranks' summaries and adds them: the same mean up to rounding, and no
/// other reducer.)
///
/// \code
///   ppe::engine::create_evaluator(model, ppe::distributed::distributed_evaluation(ppe::engine::EvaluatorOptions()));
/// \endcode
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <stdexcept>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/distributed/initialize.hpp"
#include "ppe/reporting/observation.hpp"

namespace ppe::distributed {

/// This process's per-batch observations in, every rank's out (rank 0's
/// first), the same on every rank; collective over the default group.
/// Values are resolved and tensors come back on the CPU (they travel
/// pickled, as PyTorch's `all_gather_object`).
PPE_DECL std::vector<reporting::Observation> all_gather_observations(std::vector<reporting::Observation> local);

/// Evaluator options (the extension's `EvaluatorOptions` or the engine's)
/// for a distributed evaluation: observations gathered over the default
/// group, the progress bar on rank 0 only (PPE). Throws `std::logic_error`
/// without a default group (PPE: "distributed module is not initialized").
template <class Options>
Options distributed_evaluation(Options options) {
  if (!is_initialized())
    throw std::logic_error(
        "ppe::distributed: a distributed evaluation needs the default process group (call "
        "ppe::distributed::initialize() first, or use the non-distributed evaluator)");
  options.gather(&all_gather_observations);
  if (process_info().rank != 0) options.progress_bar(false);
  return options;
}

}  // namespace ppe::distributed

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/distributed/impl/evaluation.ipp"
#endif
