#pragma once
/// \file
/// `ppe::distributed::default_process_group()`: the c10d group that
/// `ppe::distributed::initialize` created, for code that calls c10d's
/// collectives itself (`group->allreduce(...)`). Separate from
/// initialize.hpp because c10d's ProcessGroup header costs a TU about as much
/// as LibTorch's module header.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "ppe/detail/config.hpp"
#include "ppe/distributed/initialize.hpp"

namespace ppe::distributed {

/// The default process group; throws `std::logic_error` before `initialize`.
PPE_DECL c10::intrusive_ptr<c10d::ProcessGroup> default_process_group();

}  // namespace ppe::distributed
