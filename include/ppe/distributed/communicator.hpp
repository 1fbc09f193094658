#pragma once
/// \file
/// The manager's collectives over a c10d group, and
/// `ppe::distributed::for_process_group(options)`: manager or trainer options
/// for this process of the default group (rank, world size, communicator).
///
/// \code
///   ppe::distributed::initialize();
///   auto manager = ppe::training::ExtensionsManager(
///       ppe::distributed::for_process_group(ppe::training::ManagerOptions().max_epochs(10).iters_per_epoch(n)),
///       models, optimizers, ...);
/// \endcode
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/distributed/initialize.hpp"
#include "ppe/state.hpp"
#include "ppe/training/communicator.hpp"

namespace ppe::distributed {

/// Every rank's `bytes`, in rank order (two all-gathers of the default group:
/// the sizes, then the bytes padded to the longest). Collective.
PPE_DECL std::vector<std::string> all_gather_bytes(const std::string& bytes);

/// Every rank's `local` state, in rank order: pickled (`ppe::serialization::pickle_dumps`),
/// gathered with `all_gather_bytes`, read back (an error names the rank whose
/// bytes are unreadable). The one way States travel between ranks: the
/// communicator's `all_gather_state` and the distributed evaluator use it.
/// Collective.
PPE_DECL std::vector<State> all_gather_states(const State& local);

/// A `training::Communicator` over the default group (throws
/// `std::logic_error` without one).
PPE_DECL std::shared_ptr<training::Communicator> default_communicator();

/// `options` (the manager's `ManagerOptions` or the engine's
/// `TrainerOptions`) with this process's rank and world size in the default
/// group and its communicator: display and file writers then act on rank 0,
/// a saver rank's snapshot waits for every rank, and the ranks check at
/// start that they run the same extensions.
template <class Options>
Options for_process_group(Options options) {
  auto communicator = default_communicator();
  options.rank(communicator->rank()).world_size(communicator->world_size());
  options.communicator(std::move(communicator));
  return options;
}

}  // namespace ppe::distributed

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/distributed/impl/communicator.ipp"
#endif
