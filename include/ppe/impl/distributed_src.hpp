#pragma once
/// \file
/// The definitions of ppe's distributed functions (ppe/distributed/*,
/// ppe/nn/parallel/*), for separate compilation: as ppe/impl/src.hpp, but
/// apart from it, so that a program without distributed training needs
/// neither libgloo's headers nor c10d's (Meson's `ppe-distributed-separate`).

#if !defined(PPE_SEPARATE_COMPILATION)
#error "ppe/impl/distributed_src.hpp is for separate compilation: define PPE_SEPARATE_COMPILATION in every TU"
#endif

#include "ppe/distributed/impl/communicator.ipp"
#include "ppe/distributed/impl/dataset_util.ipp"
#include "ppe/distributed/impl/evaluation.ipp"
#include "ppe/distributed/impl/initialize.ipp"
#include "ppe/nn/parallel/impl/distributed.ipp"
