#pragma once
/// \file
/// Distributed training on c10d (PPE's `ppe.distributed` and
/// `ppe.nn.parallel`): joining a process group, data-parallel modules and the
/// rank-aware samplers. Not part of `<ppe/ppe.hpp>`: it needs c10d's Gloo
/// headers (libgloo-dev) and `-DUSE_C10D_GLOO`, which Meson's
/// `ppe-distributed` dependency adds (docs/distributed.md).
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include "ppe/distributed/communicator.hpp"
#include "ppe/distributed/dataset_util.hpp"
#include "ppe/distributed/distributed_validation_sampler.hpp"
#include "ppe/distributed/evaluation.hpp"
#include "ppe/distributed/initialize.hpp"
#include "ppe/distributed/process_group.hpp"
#include "ppe/nn/parallel/distributed.hpp"
#include "ppe/distributed/distributed_evaluator.hpp"
