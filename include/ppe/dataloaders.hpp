#pragma once
/// \file
/// Data loading (PPE's `ppe.dataloaders` area): `ppe::dataloaders::range`
/// (LibTorch loaders as range-v3 views, with the number of batches) and
/// `ResumableSampler` (a reproducible order whose position snapshots keep).

#include "ppe/dataloaders/loader_range.hpp"
#include "ppe/dataloaders/resumable_sampler.hpp"
