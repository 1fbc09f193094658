#pragma once
/// \file
/// `ppe::optim`: PyTorch's optimizer utilities that LibTorch 1.13 lacks.
/// The learning-rate schedulers of `torch.optim.lr_scheduler` with Python's
/// semantics and state layout (docs/lr-schedulers.md,
/// docs/reduce-lr-on-plateau.md); step them from a manager with
/// `ppe::training::extensions::LRScheduler`.

#include "ppe/optim/lr_scheduler/cosine_annealing_lr.hpp"
#include "ppe/optim/lr_scheduler/cosine_annealing_warm_restarts.hpp"
#include "ppe/optim/lr_scheduler/exponential_lr.hpp"
#include "ppe/optim/lr_scheduler/lambda_lr.hpp"
#include "ppe/optim/lr_scheduler/linear_lr.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/optim/lr_scheduler/multi_step_lr.hpp"
#include "ppe/optim/lr_scheduler/one_cycle_lr.hpp"
#include "ppe/optim/lr_scheduler/reduce_lr_on_plateau.hpp"
#include "ppe/optim/lr_scheduler/sequential_lr.hpp"
#include "ppe/optim/lr_scheduler/step_lr.hpp"
