// Definitions of distributed/initialize.hpp and distributed/process_group.hpp:
// included by them when header-only, compiled once by impl/distributed_src.hpp
// with PPE_SEPARATE_COMPILATION.
// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).
#pragma once

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/torch_compat/distributed.hpp"
#include "ppe/distributed/detail/liveness.hpp"
#include "ppe/distributed/initialize.hpp"
#include "ppe/distributed/process_group.hpp"

namespace ppe::distributed {
namespace detail {

// The default group: PyTorch keeps it in a Python global; a C++ program
// keeps one per process here.
struct DefaultGroup {
  std::mutex mutex;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  ProcessInfo info;
  Environment env;
  std::unique_ptr<Liveness> liveness;  // heartbeat and watchdog
  std::string heartbeat_prefix;
  int generation = 0;  // initializations so far: keys of a store reused by a later group differ
};

PPE_DECL DefaultGroup& default_group() {
  static DefaultGroup g;
  return g;
}

PPE_DECL std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

PPE_DECL int parse_int(std::string_view what, const std::string& text, int lo, int hi) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || p != end || text.empty())
    throw std::invalid_argument("ppe::distributed: " + std::string(what) + "='" + text + "' is not an integer");
  if (value < lo || value > hi)
    throw std::invalid_argument("ppe::distributed: " + std::string(what) + "=" + text + " is out of range (expected " +
                                std::to_string(lo) + " to " + std::to_string(hi) + ")");
  return value;
}

PPE_DECL int required_int(const char* name, int lo, int hi, const char* launcher_hint) {
  const auto v = env_value(name);
  if (!v)
    throw std::invalid_argument(std::string("ppe::distributed: the environment variable ") + name +
                                " is not set; " + launcher_hint);
  return parse_int(name, *v, lo, hi);
}

PPE_DECL int optional_int(const char* name, int fallback, int lo, int hi) {
  const auto v = env_value(name);
  return v ? parse_int(name, *v, lo, hi) : fallback;
}

inline constexpr int kMaxInt = 1 << 30;
inline constexpr const char* kTorchrunHint =
    "torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT (start the "
    "program with `torchrun --no_python ...`, or pass a ppe::distributed::Environment to initialize)";

PPE_DECL std::string where(const Environment& env) {
  return env.master_addr + ":" + std::to_string(env.master_port);
}

PPE_DECL void check_environment(const Environment& env) {
  if (env.world_size < 1)
    throw std::invalid_argument("ppe::distributed::initialize: world_size is " + std::to_string(env.world_size) +
                                ", expected at least 1");
  if (env.rank < 0 || env.rank >= env.world_size)
    throw std::invalid_argument("ppe::distributed::initialize: rank " + std::to_string(env.rank) +
                                " is outside the world of " + std::to_string(env.world_size) +
                                " processes (expected 0 <= rank < " + std::to_string(env.world_size) + ")");
  if (env.local_world_size < 1 || env.local_rank < 0 || env.local_rank >= env.local_world_size)
    throw std::invalid_argument("ppe::distributed::initialize: local_rank " + std::to_string(env.local_rank) +
                                " is outside the " + std::to_string(env.local_world_size) +
                                " processes of this machine (expected 0 <= local_rank < local_world_size)");
  if (env.master_port < 1 || env.master_port > 65535)
    throw std::invalid_argument("ppe::distributed::initialize: master_port " + std::to_string(env.master_port) +
                                " is not a TCP port (expected 1 to 65535)");
  if (env.master_addr.empty())
    throw std::invalid_argument("ppe::distributed::initialize: master_addr is empty (expected the host of the store)");
}

// `client_only`: a second connection (the heartbeat's), also on the rank
// that hosts the store.
PPE_DECL c10::intrusive_ptr<c10d::Store> connect_store(const Environment& env, std::chrono::milliseconds timeout,
                                                       const std::string& prefix, bool client_only = false) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(env.master_port);
  o.isServer = !client_only && !env.use_agent_store && env.rank == 0;
  o.numWorkers = static_cast<std::size_t>(env.world_size);
  // A client counts itself in the store's "init/" key, as Python's env://
  // clients do: a Python rank 0 hosting the store waits for that count (up
  // to the timeout). The host itself does not wait there: the backend's
  // rendezvous waits, and a missing rank is named by count.
  o.waitWorkers = !o.isServer;
  o.timeout = timeout;
  o.multiTenant = true;  // as PyTorch's env:// (a second group may share the address)
  namespace compat = ::ppe::detail::compat;
  const std::optional<bool> libuv = compat::use_libuv_from_environment();
  compat::choose_tcp_store_backend(o, libuv.value_or(true));
  c10::intrusive_ptr<c10d::Store> store;
  try {
    try {
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    } catch (const std::exception& e) {
      // A LibTorch built without libuv (Debian's) refuses its default
      // backend; unless USE_LIBUV asked for it, the classic one serves.
      if (libuv.has_value() || !compat::tcp_store_uses_libuv(o) ||
          std::string_view(e.what()).find("libuv") == std::string_view::npos)
        throw;
      compat::choose_tcp_store_backend(o, false);
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("ppe::distributed::initialize: rank " + std::to_string(env.rank) + " could not " +
                             (o.isServer ? "host" : "reach") + " the TCPStore at " + where(env) + " within " +
                             std::to_string(timeout.count()) + " ms: " + e.what());
  }
  if (env.use_agent_store)
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), store);
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
}

// The prefix of the default group's keys in the store: Python's "default_pg"
// for the first group of the process. A group made after
// destroy_process_group() (PyTorch names it "0" again, and its barrier finds
// the old count where the store outlived the old group, as torchrun's agent
// store does) gets keys of its own.
PPE_DECL std::string default_store_prefix(int generation) {
  return generation == 0 ? std::string("default_pg") : "default_pg/ppe_generation_" + std::to_string(generation);
}

// The name `init_process_group` gives the default group (its keys' prefix).
inline constexpr const char* kDefaultGroupName = "0";

// Python's store-based barrier: every rank adds one to a counter; the rank
// that completes it says so (PyTorch 2.x's ranks wait for that key), and the
// others poll until the world is there. A missing rank becomes an error that
// says how many came.
PPE_DECL void store_barrier(c10d::Store& store, const std::string& key, const Environment& env,
                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::int64_t joined = store.add(key, 1);
  if (joined == env.world_size) store.set(key + ":last_worker", std::vector<std::uint8_t>{'1'});
  while (joined < env.world_size) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("ppe::distributed::initialize: only " + std::to_string(joined) + " of " +
                               std::to_string(env.world_size) + " ranks joined within " +
                               std::to_string(timeout.count()) + " ms (store at " + where(env) + ", this is rank " +
                               std::to_string(env.rank) + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    joined = store.add(key, 0);
  }
}

// How many ranks published their addresses for Gloo's rendezvous in
// `backend_store` (Gloo's key for rank r of its device 0: "0/<r>" in the
// Gloo of LibTorch 1.13, 2.6 and 2.14), or nothing where this Gloo names its
// keys otherwise (this rank's own key is not there).
PPE_DECL std::optional<int> ranks_at_gloo_rendezvous(c10d::Store& backend_store, const Environment& env) {
  const auto key = [](int r) { return "0/" + std::to_string(r); };
  try {
    if (!backend_store.check({key(env.rank)})) return std::nullopt;
    int n = 0;
    for (int r = 0; r < env.world_size; ++r) n += backend_store.check({key(r)}) ? 1 : 0;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;  // the store is gone as well
  }
}

// The default group and its backend, made on the stores (and keys) that
// `torch.distributed.init_process_group` uses, so that Python ranks can join.
PPE_DECL c10::intrusive_ptr<c10d::ProcessGroup> make_backend(const c10::intrusive_ptr<c10d::Store>& group_store,
                                                               const c10::intrusive_ptr<c10d::Store>& backend_store,
                                                               const Environment& env, const InitOptions& options) {
  namespace compat = ::ppe::detail::compat;
  if (options.backend() == "gloo") {
    auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout());
    std::string interface = options.interface();
    if (interface.empty()) interface = env_value("GLOO_SOCKET_IFNAME").value_or("");
    opts->devices.push_back(interface.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                              : c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(backend_store, env.rank, env.world_size, opts);
    compat::publish_sequence_number(*gloo, env.rank);
    return compat::as_process_group(group_store, env.rank, env.world_size, "gloo", std::move(gloo),
                                    options.timeout());
  }
  if (options.backend() == "nccl") {
#if defined(USE_C10D_NCCL)
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = options.timeout();
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(backend_store, env.rank, env.world_size, opts);
    compat::publish_sequence_number(*nccl, env.rank);
    return compat::as_process_group(group_store, env.rank, env.world_size, "nccl", std::move(nccl),
                                    options.timeout());
#else
    throw std::invalid_argument(
        "ppe::distributed::initialize: backend 'nccl' is not available: this LibTorch was built without CUDA/NCCL, "
        "or USE_C10D_NCCL is not defined (use 'gloo')");
#endif
  }
  throw std::invalid_argument("ppe::distributed::initialize: unknown backend '" + options.backend() +
                              "' (expected 'gloo' or 'nccl')");
}

}  // namespace detail

PPE_DECL std::chrono::milliseconds heartbeat_timeout(const InitOptions& options) {
  if (options.heartbeat_timeout()) {
    if (options.heartbeat_timeout()->count() < 0)
      throw std::invalid_argument("ppe::distributed: InitOptions::heartbeat_timeout is " +
                                  std::to_string(options.heartbeat_timeout()->count()) + " ms, expected >= 0");
    return *options.heartbeat_timeout();
  }
  const auto text = detail::env_value("PPE_HEARTBEAT_TIMEOUT");
  if (!text) return std::chrono::seconds(10);
  double seconds = -1;
  const char* end = text->data() + text->size();
  const auto [p, ec] = std::from_chars(text->data(), end, seconds);
  if (text->empty() || ec != std::errc() || p != end || !(seconds >= 0) || seconds > 1e9)
    throw std::invalid_argument("ppe::distributed: PPE_HEARTBEAT_TIMEOUT='" + *text +
                                "' is not a number of seconds >= 0 (e.g. 10 or 2.5; 0 turns the watchdog off)");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000 + 0.5));
}

PPE_DECL Environment torchrun_environment() {
  using namespace detail;
  Environment env;
  env.world_size = required_int("WORLD_SIZE", 1, kMaxInt, kTorchrunHint);
  env.rank = required_int("RANK", 0, kMaxInt, kTorchrunHint);
  env.local_rank = optional_int("LOCAL_RANK", 0, 0, kMaxInt);
  env.local_world_size = optional_int("LOCAL_WORLD_SIZE", 1, 1, kMaxInt);
  const auto addr = env_value("MASTER_ADDR");
  if (!addr || addr->empty())
    throw std::invalid_argument(std::string("ppe::distributed: the environment variable MASTER_ADDR is ") +
                                (addr ? "empty; " : "not set; ") + kTorchrunHint);
  env.master_addr = *addr;
  env.master_port = required_int("MASTER_PORT", 1, 65535, kTorchrunHint);
  if (const auto agent = env_value("TORCHELASTIC_USE_AGENT_STORE")) {
    if (*agent != "True" && *agent != "False")
      throw std::invalid_argument("ppe::distributed: TORCHELASTIC_USE_AGENT_STORE='" + *agent +
                                  "' (expected True or False, as torchrun sets it)");
    env.use_agent_store = *agent == "True";
  }
  if (env.use_agent_store) env.restart_count = required_int("TORCHELASTIC_RESTART_COUNT", 0, kMaxInt, kTorchrunHint);
  return env;
}

PPE_DECL Environment ompi_environment(const Environment& defaults) {
  using namespace detail;
  Environment env = defaults;
  env.world_size = optional_int("OMPI_COMM_WORLD_SIZE", defaults.world_size, 1, kMaxInt);
  env.rank = optional_int("OMPI_COMM_WORLD_RANK", defaults.rank, 0, kMaxInt);
  env.local_rank = optional_int("OMPI_COMM_WORLD_LOCAL_RANK", defaults.local_rank, 0, kMaxInt);
  env.local_world_size = optional_int("OMPI_COMM_WORLD_LOCAL_SIZE", defaults.local_world_size, 1, kMaxInt);
  env.master_addr = env_value("MASTER_ADDR").value_or(defaults.master_addr);
  env.master_port = optional_int("MASTER_PORT", defaults.master_port, 1, 65535);
  env.use_agent_store = false;
  return env;
}

PPE_DECL ProcessInfo initialize(const Environment& env, const InitOptions& options) {
  detail::check_environment(env);
  const std::chrono::milliseconds deadline = heartbeat_timeout(options);  // a bad variable fails before any connection
  // A peer's beat is seen up to two heartbeats late (its beat, then this
  // rank's read of it): a deadline of fewer than 3 heartbeats takes healthy
  // ranks for lost.
  const std::chrono::milliseconds beat = options.heartbeat();
  if (beat.count() > 0 && deadline.count() > 0 && deadline < 3 * beat)
    throw std::invalid_argument(
        "ppe::distributed::initialize: the watchdog's deadline (InitOptions::heartbeat_timeout, "
        "PPE_HEARTBEAT_TIMEOUT) is " + std::to_string(deadline.count()) + " ms and the heartbeat "
        "(InitOptions::heartbeat) " + std::to_string(beat.count()) + " ms: the deadline must be at least 3 "
        "heartbeats (" + std::to_string(3 * beat.count()) + " ms), or healthy ranks are taken for lost; lengthen "
        "the deadline or shorten the heartbeat (0 turns either off)");
  auto& g = detail::default_group();
  std::lock_guard lock(g.mutex);
  if (g.group)
    throw std::logic_error(
        "ppe::distributed::initialize: the default process group exists already (call destroy_process_group() "
        "first)");
  namespace compat = ::ppe::detail::compat;
  const std::string prefix = detail::default_store_prefix(g.generation);
  auto store = detail::connect_store(env, options.timeout(), prefix);
  auto group_store = compat::group_store(store, detail::kDefaultGroupName);
  auto backend_store = compat::backend_store(group_store, options.backend() == "nccl" ? "cuda" : "cpu");
  const std::string heartbeat_prefix = "ppe_heartbeat/" + std::to_string(g.generation) + "/";
  const bool beats = options.heartbeat().count() > 0 && env.world_size > 1;
  if (beats) detail::Liveness::publish_host(*store, heartbeat_prefix, env.rank);
  // As `init_process_group`: the backend's own rendezvous first, then (where
  // Python has one) the store-based barrier.
  try {
    g.group = detail::make_backend(group_store, backend_store, env, options);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    const auto joined = options.backend() == "gloo" ? detail::ranks_at_gloo_rendezvous(*backend_store, env)
                                                    : std::nullopt;
    if (joined && *joined < env.world_size)
      throw std::runtime_error("ppe::distributed::initialize: only " + std::to_string(*joined) + " of " +
                               std::to_string(env.world_size) + " ranks joined within " +
                               std::to_string(options.timeout().count()) + " ms (store at " + detail::where(env) +
                               ", this is rank " + std::to_string(env.rank) + "): " + ppe::detail::error_message(e));
    throw std::runtime_error("ppe::distributed::initialize: rank " + std::to_string(env.rank) + " could not create the " +
                             options.backend() + " group of " + std::to_string(env.world_size) +
                             " processes (store at " + detail::where(env) + "): " + ppe::detail::error_message(e));
  }
  if (const auto key = compat::init_barrier_key(detail::kDefaultGroupName)) {
    try {
      detail::store_barrier(*store, *key, env, options.timeout());
    } catch (...) {
      g.group.reset();
      throw;
    }
  }
  g.env = env;
  g.heartbeat_prefix = heartbeat_prefix;
  if (beats) {
    detail::LivenessConfig c;
    c.rank = env.rank;
    c.world_size = env.world_size;
    c.interval = options.heartbeat();
    c.deadline = deadline;
    c.store_address = detail::where(env);
    if (!env.use_agent_store) c.store_rank = 0;
    c.on_lost = options.on_lost_peer();
    try {
      g.liveness = std::make_unique<detail::Liveness>(
          detail::connect_store(env, options.timeout(), prefix, /*client_only=*/true), g.heartbeat_prefix,
          std::move(c));
    } catch (...) {
      // Nothing half made stays: a retry of initialize starts afresh.
      g.group.reset();
      throw;
    }
  }
  ++g.generation;
  g.info = ProcessInfo{env.rank, env.world_size, env.local_rank, env.local_world_size};
  return g.info;
}

PPE_DECL ProcessInfo initialize(const InitOptions& options) { return initialize(torchrun_environment(), options); }

PPE_DECL ProcessInfo initialize_ompi_environment(const InitOptions& options, const Environment& defaults) {
  const Environment env = ompi_environment(defaults);
  if (env.world_size > 1 && !is_initialized()) return initialize(env, options);
  detail::check_environment(env);
  return ProcessInfo{env.rank, env.world_size, env.local_rank, env.local_world_size};
}

PPE_DECL bool is_initialized() noexcept {
  auto& g = detail::default_group();
  std::lock_guard lock(g.mutex);
  return static_cast<bool>(g.group);
}

PPE_DECL ProcessInfo process_info() noexcept {
  auto& g = detail::default_group();
  std::lock_guard lock(g.mutex);
  return g.group ? g.info : ProcessInfo{};
}

PPE_DECL c10::intrusive_ptr<c10d::ProcessGroup> default_process_group() {
  auto& g = detail::default_group();
  std::lock_guard lock(g.mutex);
  if (!g.group)
    throw std::logic_error(
        "ppe::distributed: no default process group (call ppe::distributed::initialize() first, or pass a group)");
  return g.group;
}

PPE_DECL std::vector<int> lost_ranks() {
  auto& g = detail::default_group();
  c10::intrusive_ptr<c10d::Store> store;
  std::chrono::milliseconds interval{0};
  std::string prefix;
  ProcessInfo info;
  bool agent_store = false;
  {
    std::lock_guard lock(g.mutex);
    if (!g.group || !g.liveness) return {};
    store = g.liveness->store();
    interval = g.liveness->interval();
    prefix = g.heartbeat_prefix;
    info = g.info;
    agent_store = g.env.use_agent_store;
  }
  auto read = [&] {
    std::vector<std::int64_t> counts;
    for (int r = 0; r < info.world_size; ++r) counts.push_back(store->add(detail::Liveness::counter_key(prefix, r), 0));
    return counts;
  };
  try {
    const auto before = read();
    std::this_thread::sleep_for(3 * interval);
    const auto after = read();
    std::vector<int> lost;
    // A count still at zero belongs to a rank that keeps no heartbeat (a
    // Python rank of the job), not to one that stopped; a marked one to a
    // rank that left cleanly.
    for (int r = 0; r < info.world_size; ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (r != info.rank && after[i] > 0 && after[i] < detail::kLeftMark && after[i] == before[i]) lost.push_back(r);
    }
    return lost;
  } catch (const std::exception&) {
    // The store does not answer: its host is gone.
    if (agent_store || info.rank == 0) return {};
    return {0};
  }
}

PPE_DECL void barrier() { default_process_group()->barrier()->wait(); }

PPE_DECL void destroy_process_group() {
  auto& g = detail::default_group();
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::unique_ptr<detail::Liveness> liveness;
  {
    std::lock_guard lock(g.mutex);
    group = std::move(g.group);
    g.group.reset();
    g.info = ProcessInfo{};
    liveness = std::move(g.liveness);
  }
  // Outside the lock: stopping the liveness joins the watchdog, whose
  // on_lost_peer may be calling process_info() or is_initialized().
  liveness.reset();
}

}  // namespace ppe::distributed
