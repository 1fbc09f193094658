#pragma once
/// \file
/// `ppe::training::Communicator`: the few collectives a manager needs in
/// distributed training (the composition handshake at start, the saver
/// rank's barrier after a snapshot, the accumulate extensions' gather of
/// their summaries), without the core depending on c10d.
/// `ppe::distributed::for_process_group(options)` sets one over the default
/// c10d group (ppe/distributed/communicator.hpp); tests may give their own.

#include <string>
#include <vector>

#include "ppe/state.hpp"

namespace ppe::training {

/// Collectives over the processes of one training run. Every call is
/// collective: each rank makes the same calls in the same order.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's rank, in [0, world_size()).
  virtual int rank() const = 0;
  /// The number of processes.
  virtual int world_size() const = 0;
  /// Returns when every rank has called it (an error after the group's
  /// timeout, e.g. when a rank is gone).
  virtual void barrier() = 0;
  /// Every rank's `bytes`, in rank order.
  virtual std::vector<std::string> all_gather(const std::string& bytes) = 0;
  /// Every rank's `local` state, in rank order: how ranks exchange States
  /// (any State that `ppe::serialization::pickle_dumps` writes). The c10d communicator sends
  /// it pickled, as the distributed evaluator sends its observations
  /// (`ppe::distributed::all_gather_states`); here it is only declared, so
  /// the core needs neither c10d's nor the pickler's headers.
  virtual std::vector<State> all_gather_state(const State& local) = 0;
  /// Called after an iteration failed: a sentence naming the ranks that are
  /// gone (the manager then throws it with the original error), or empty.
  /// Not collective: the other ranks may be gone.
  virtual std::string lost_ranks_message() { return {}; }
};

}  // namespace ppe::training
