#pragma once
/// \file
/// `ppe::optim::lr_scheduler::LambdaLR` (PyTorch's
/// `torch.optim.lr_scheduler.LambdaLR`): each rate is the group's initial
/// rate times a function of the step index.

#include <cstdint>
#include <functional>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// LambdaLR's keyword arguments, with Python's defaults.
struct LambdaLROptions {
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's LambdaLR: after n steps, group g's rate is
/// `base_lrs[g] * lr_lambda(n)`. One function for every group, or one per
/// group (another count is a std::invalid_argument, Python's ValueError).
///
/// State: `{base_lrs, last_epoch, verbose, _step_count,
/// _get_lr_called_within_step, _last_lr, lr_lambdas}` with `lr_lambdas` a
/// list of None, one per group: Python saves None for plain functions and
/// lambdas, and a C++ function has no attributes to save. Loading ignores
/// the entries.
class LambdaLR : public LRScheduler {
 public:
  /// The factor for a step index.
  using Lambda = std::function<double(std::int64_t)>;

  PPE_DECL LambdaLR(torch::optim::Optimizer& optimizer, Lambda lr_lambda, LambdaLROptions options = {});
  PPE_DECL LambdaLR(torch::optim::Optimizer& optimizer, std::vector<Lambda> lr_lambdas, LambdaLROptions options = {});

  const std::vector<Lambda>& lr_lambdas() const noexcept { return lr_lambdas_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;

 private:
  PPE_DECL LambdaLR(torch::optim::Optimizer& optimizer, std::vector<Lambda> lr_lambdas, bool one_for_all,
                    const LambdaLROptions& options);

  std::vector<Lambda> lr_lambdas_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/lambda_lr.ipp"
#endif
