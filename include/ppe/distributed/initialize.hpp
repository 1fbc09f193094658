#pragma once
/// \file
/// Joining a c10d process group: `ppe::distributed::initialize` (torchrun's
/// `env://` variables), `initialize_ompi_environment` (Open MPI's `mpirun`, as
/// PPE's function of that name) and an explicit form for any other launcher;
/// the process's rank and world size afterwards.
///
/// \code
///   // torchrun --no_python --redirects 1 --tee 1 --nproc_per_node=2 ./train
///   const auto world = ppe::distributed::initialize();
///   ppe::training::ManagerOptions().rank(world.rank).world_size(world.world_size);
/// \endcode
///
/// The group is the process's default group (PyTorch's `init_process_group`):
/// `ppe/distributed/process_group.hpp` hands it to c10d code, and the DDP
/// wrapper, the samplers and the distributed evaluator use it when given no
/// group. With separate compilation this header includes no c10d header (a
/// TU that only initializes pays for none). Programs that use it need
/// `-DUSE_C10D_GLOO` and libgloo's headers (Meson's `ppe-distributed`
/// dependency; docs/distributed.md).
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::distributed {

/// Where a process stands in the job and where the rendezvous store is: what a
/// launcher tells each process.
struct Environment {
  /// This process's rank, in [0, world_size).
  int rank = 0;
  /// The number of processes in the job.
  int world_size = 1;
  /// The rank among the processes of this machine (picks the GPU).
  int local_rank = 0;
  /// The number of processes on this machine.
  int local_world_size = 1;
  /// The host of the rendezvous store (a TCPStore).
  std::string master_addr = "127.0.0.1";
  /// Its port.
  int master_port = 29500;
  /// torchrun's elastic agent hosts the store (`TORCHELASTIC_USE_AGENT_STORE`):
  /// every rank connects as a client, and keys go under the agent's
  /// `/worker/attempt_<restart_count>` prefix as PyTorch's `env://` does.
  /// Otherwise rank 0 hosts the store.
  bool use_agent_store = false;
  /// `TORCHELASTIC_RESTART_COUNT`: the attempt number under an agent store.
  int restart_count = 0;
};

/// How to create the process group (the arguments of PyTorch's
/// `init_process_group` beyond rank and world).
struct InitOptions {
  /// `"gloo"` (CPU tensors; always there) or `"nccl"` (CUDA tensors; only
  /// where LibTorch was built with NCCL).
  PPE_ARG(std::string, backend) = "gloo";
  /// How long to wait for the store, for the other ranks to join, and for
  /// each collective (PPE's default: 1800 s). Tests set seconds.
  PPE_ARG(std::chrono::milliseconds, timeout) = std::chrono::seconds(1800);
  /// The network interface Gloo binds to (e.g. `"eth0"`); empty: the
  /// `GLOO_SOCKET_IFNAME` variable, else the address this host's name
  /// resolves to, as PyTorch does.
  PPE_ARG(std::string, interface);
  /// How often each rank tells the store it is alive (a counter under
  /// `ppe_heartbeat/`, from a thread with its own store connection, never
  /// from the training loop) and watches: the coordinator (the lowest rank
  /// beating) reads every counter, each other rank the coordinator's and a
  /// key where a rank that saw a loss publishes it (O(W) at the store). When a
  /// collective fails the survivors name the rank that is gone
  /// (`lost_ranks`); the watchdog (`heartbeat_timeout`) acts on it while a
  /// collective is blocked. Zero: no heartbeat and no watchdog.
  PPE_ARG(std::chrono::milliseconds, heartbeat) = std::chrono::seconds(1);
  /// The watchdog's deadline: when another rank's heartbeat stood still this
  /// long (dead without a connection reset, hung, or cut off from the
  /// network), or the store did not answer this long, the rank that sees it
  /// writes a message naming the lost rank(s), their host and the time since
  /// their last heartbeat to stderr (the others, one heartbeat later, the
  /// same message and who saw it), and ends its process with exit
  /// status 75, so that torchrun's agent sees a failed worker and restarts
  /// the job from its last snapshot (a collective blocked on a lost peer
  /// cannot be interrupted). Unset: the environment variable
  /// `PPE_HEARTBEAT_TIMEOUT` (seconds, e.g. `10` or `2.5`), else 10 s. Zero:
  /// no watchdog (a hang then lasts the group's `timeout`). A rank that ends
  /// cleanly (`destroy_process_group`, or the end of the process) is not
  /// lost; a slow step, snapshot or evaluation is not either. With both on,
  /// the deadline must be at least 3 heartbeats (`initialize` refuses less:
  /// healthy ranks would be taken for lost).
  PPE_ARG(std::optional<std::chrono::milliseconds>, heartbeat_timeout);
  /// Called with the watchdog's message before the process ends (instead of
  /// writing the message to stderr): to log it elsewhere. It runs on a thread
  /// of its own and may call this header's functions; the process ends when
  /// it returns, or 5 s after it was called if it has not returned by then.
  PPE_ARG(std::function<void(const std::string&)>, on_lost_peer);
};

/// The watchdog's deadline for `options`: its `heartbeat_timeout`, else
/// `PPE_HEARTBEAT_TIMEOUT` (seconds), else 10 s. Throws
/// `std::invalid_argument` naming the variable when it is not a number >= 0.
PPE_DECL std::chrono::milliseconds heartbeat_timeout(const InitOptions& options);

/// The job as this process sees it after joining.
struct ProcessInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
};

/// Reads torchrun's variables: `RANK`, `WORLD_SIZE`, `MASTER_ADDR`,
/// `MASTER_PORT` (required), `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
/// `TORCHELASTIC_USE_AGENT_STORE`, `TORCHELASTIC_RESTART_COUNT` (optional).
/// Throws `std::invalid_argument` naming a variable that is missing or not a
/// number in range.
PPE_DECL Environment torchrun_environment();

/// Reads Open MPI's variables as PPE's `initialize_ompi_environment` does:
/// `OMPI_COMM_WORLD_SIZE`, `OMPI_COMM_WORLD_RANK`,
/// `OMPI_COMM_WORLD_LOCAL_RANK` (and `OMPI_COMM_WORLD_LOCAL_SIZE`),
/// `MASTER_ADDR`, `MASTER_PORT`, each falling back to `defaults`' field when
/// unset. Rank 0 hosts the store.
PPE_DECL Environment ompi_environment(const Environment& defaults = {.master_addr = "localhost", .master_port = 1234});

/// Checks `env` (rank within the world, port in [1, 65535], a host) and
/// creates the default process group: the store (a TCPStore at
/// `master_addr:master_port`), the backend's group, then (where PyTorch has
/// one) a barrier through the store. The keys, their order and the barrier
/// are those of `torch.distributed.init_process_group` on the same LibTorch,
/// so C++ and Python ranks can form one group. Errors name what was wrong: a rank outside the world, a store that
/// did not answer within the timeout (with its address), ranks that did not
/// join. Throws if a default group exists already. A world of one process
/// creates a group too (collectives are then copies).
PPE_DECL ProcessInfo initialize(const Environment& env, const InitOptions& options = {});

/// `initialize(torchrun_environment(), options)`: the process was started by
/// `torchrun` (or anything that sets its variables).
PPE_DECL ProcessInfo initialize(const InitOptions& options = {});

/// PPE's `initialize_ompi_environment`: `initialize(ompi_environment(defaults),
/// options)` when the world has more than one process and no default group
/// exists yet; otherwise only the ranks are returned (as PPE does, a world of
/// one creates no group).
PPE_DECL ProcessInfo initialize_ompi_environment(const InitOptions& options = {},
                                                 const Environment& defaults = {.master_addr = "localhost",
                                                                                .master_port = 1234});

/// Whether a default process group exists.
PPE_DECL bool is_initialized() noexcept;

/// The default group's rank, world size and local ranks; `{0, 1, 0, 1}`
/// before `initialize` (one process is a world of one).
PPE_DECL ProcessInfo process_info() noexcept;

/// The ranks of the default group that stopped beating (see
/// `InitOptions::heartbeat`): the store's counters are read, then read again
/// three heartbeats later; ranks whose counter did not move are gone (a rank
/// that never beat, such as a Python rank of a mixed job, is not named). When
/// the store itself does not answer, the rank hosting it (0; none under
/// torchrun's agent store) is the one named. Empty without a group or a
/// heartbeat. Takes three heartbeats: call it after a collective failed.
PPE_DECL std::vector<int> lost_ranks();

/// Waits until every rank of the default group gets here (throws after the
/// group's timeout, or if there is no group).
PPE_DECL void barrier();

/// Destroys the default group (waits for nothing; call after the last
/// collective). `initialize` may then be called again.
PPE_DECL void destroy_process_group();

}  // namespace ppe::distributed

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/distributed/impl/initialize.ipp"
#endif
