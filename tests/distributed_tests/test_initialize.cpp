// ppe::distributed::initialize and initialize_ompi_environment (PPE's
// distributed/_initialize.py): the launchers' variables, the errors, and real
// process groups of two processes on loopback, started by this test, by
// torchrun and by mpirun.
#include "ppe_test.hpp"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <ppe/detail/torch_compat/distributed.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/distributed/process_group.hpp>
#include <ppe/nn/parallel/distributed.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "faults.hpp"
#include "processes.hpp"
#include "python.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_distributed_tests_test_initialize {

namespace dist = ppe::distributed;
using ppe_test::error_of;

namespace {

// Sets environment variables for one scope and restores the previous values.
struct ScopedEnv {
  std::map<std::string, std::optional<std::string>> saved;
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k);
      saved.emplace(k, old ? std::optional<std::string>(old) : std::nullopt);
      if (v)
        ::setenv(k, v, 1);
      else
        ::unsetenv(k);
    }
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved)
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
  }
};

// What every worker below does once its group exists: an all-reduce of the
// ranks, whose sum shows that all of them took part.
void check_group_sums_ranks(const dist::ProcessInfo& info) {
  auto group = dist::default_process_group();
  CHECK(group->getRank() == info.rank);
  CHECK(group->getSize() == info.world_size);
  std::vector<at::Tensor> t{torch::tensor({static_cast<double>(info.rank + 1)})};
  group->allreduce(t)->wait();
  const int n = info.world_size;
  CHECK(t[0].item<double>() == n * (n + 1) / 2);  // 1 + 2 + ... + n
  dist::barrier();
}

}  // namespace

TEST_CASE("torchrun_environment reads torchrun's variables") {
  ScopedEnv env{{"RANK", "1"},          {"WORLD_SIZE", "4"},     {"LOCAL_RANK", "1"},
                {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29400"},
                {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "3"}};
  const auto e = dist::torchrun_environment();
  CHECK(e.rank == 1);
  CHECK(e.world_size == 4);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 2);
  CHECK(e.master_addr == "10.0.0.7");
  CHECK(e.master_port == 29400);
  CHECK(e.use_agent_store);
  CHECK(e.restart_count == 3);
}

TEST_CASE("torchrun_environment names a missing or malformed variable") {
  {
    ScopedEnv env{{"RANK", nullptr}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}};
    const auto what = error_of([] { dist::torchrun_environment(); });
    CHECK(what.find("RANK is not set") != std::string::npos);
    CHECK(what.find("torchrun") != std::string::npos);
  }
  {
    ScopedEnv env{{"RANK", "0"}, {"WORLD_SIZE", "two"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}};
    CHECK(error_of([] { dist::torchrun_environment(); }) ==
          "ppe::distributed: WORLD_SIZE='two' is not an integer");
  }
  {
    ScopedEnv env{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "70000"}};
    CHECK(error_of([] { dist::torchrun_environment(); }) ==
          "ppe::distributed: MASTER_PORT=70000 is out of range (expected 1 to 65535)");
  }
  {
    ScopedEnv env{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", nullptr}, {"MASTER_PORT", "1"}};
    CHECK(error_of([] { dist::torchrun_environment(); }).find("MASTER_ADDR is not set") != std::string::npos);
  }
  {
    ScopedEnv env{{"RANK", "0"},
                  {"WORLD_SIZE", "2"},
                  {"MASTER_ADDR", "h"},
                  {"MASTER_PORT", "1"},
                  {"TORCHELASTIC_USE_AGENT_STORE", "yes"}};
    CHECK(error_of([] { dist::torchrun_environment(); }).find("TORCHELASTIC_USE_AGENT_STORE='yes'") !=
          std::string::npos);
  }
}

TEST_CASE("ompi_environment: Open MPI's variables over the defaults, as PPE's initialize_ompi_environment") {
  {
    ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", nullptr}, {"OMPI_COMM_WORLD_RANK", nullptr},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", nullptr}, {"MASTER_ADDR", nullptr}, {"MASTER_PORT", nullptr}};
    // PPE's defaults: world 1, rank 0, local rank 0, localhost:1234.
    const auto e = dist::ompi_environment();
    CHECK(e.world_size == 1);
    CHECK(e.rank == 0);
    CHECK(e.local_rank == 0);
    CHECK(e.master_addr == "localhost");
    CHECK(e.master_port == 1234);
    // A world of one creates no group (PPE) and returns the ranks.
    const auto info = dist::initialize_ompi_environment();
    CHECK(info.world_size == 1);
    CHECK_FALSE(dist::is_initialized());
  }
  ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "2345"}};
  const auto e = dist::ompi_environment();
  CHECK(e.world_size == 8);
  CHECK(e.rank == 5);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "node0");
  CHECK(e.master_port == 2345);
}

TEST_CASE("initialize rejects a bad environment or backend before touching the network") {
  dist::Environment e;
  e.world_size = 2;
  e.rank = 2;
  CHECK(error_of([&] { dist::initialize(e); }) ==
        "ppe::distributed::initialize: rank 2 is outside the world of 2 processes (expected 0 <= rank < 2)");
  e.rank = -1;
  CHECK(error_of([&] { dist::initialize(e); }).find("rank -1 is outside") != std::string::npos);
  e.rank = 0;
  e.master_port = 0;
  CHECK(error_of([&] { dist::initialize(e); }).find("master_port 0 is not a TCP port") != std::string::npos);

  dist::Environment one;
  one.master_port = ppe_test::free_port();
  CHECK(error_of([&] { dist::initialize(one, dist::InitOptions().backend("mpi")); }) ==
        "ppe::distributed::initialize: unknown backend 'mpi' (expected 'gloo' or 'nccl')");
#if !defined(USE_C10D_NCCL)
  one.master_port = ppe_test::free_port();
  CHECK(error_of([&] { dist::initialize(one, dist::InitOptions().backend("nccl")); }).find("'nccl' is not available") !=
        std::string::npos);
#endif
  CHECK_FALSE(dist::is_initialized());
  CHECK(error_of([] { dist::default_process_group(); }).find("no default process group") != std::string::npos);
}

TEST_CASE("heartbeat_timeout: the option, else PPE_HEARTBEAT_TIMEOUT in seconds, else 10 s; bad values named") {
  using std::chrono::milliseconds;
  {
    ScopedEnv env{{"PPE_HEARTBEAT_TIMEOUT", nullptr}};
    CHECK(dist::heartbeat_timeout({}) == milliseconds(10000));
    CHECK(dist::heartbeat_timeout(dist::InitOptions().heartbeat_timeout(milliseconds(2500))) == milliseconds(2500));
  }
  {
    ScopedEnv env{{"PPE_HEARTBEAT_TIMEOUT", "2.5"}};
    CHECK(dist::heartbeat_timeout({}) == milliseconds(2500));
    // The option wins over the variable.
    CHECK(dist::heartbeat_timeout(dist::InitOptions().heartbeat_timeout(milliseconds(0))) == milliseconds(0));
  }
  {
    ScopedEnv env{{"PPE_HEARTBEAT_TIMEOUT", "0"}};
    CHECK(dist::heartbeat_timeout({}) == milliseconds(0));  // the watchdog off
  }
  for (const char* bad : {"", "ten", "-1", "5s", "nan"}) {
    CAPTURE(bad);
    ScopedEnv env{{"PPE_HEARTBEAT_TIMEOUT", bad}};
    CHECK(error_of([] { dist::heartbeat_timeout({}); }) ==
          "ppe::distributed: PPE_HEARTBEAT_TIMEOUT='" + std::string(bad) +
              "' is not a number of seconds >= 0 (e.g. 10 or 2.5; 0 turns the watchdog off)");
    // initialize says so before it connects anywhere.
    dist::Environment e;
    e.master_port = ppe_test::free_port();
    CHECK(error_of([&] { dist::initialize(e); }).find("PPE_HEARTBEAT_TIMEOUT='") != std::string::npos);
    CHECK_FALSE(dist::is_initialized());
  }
  CHECK(error_of([] { dist::heartbeat_timeout(dist::InitOptions().heartbeat_timeout(milliseconds(-1))); }) ==
        "ppe::distributed: InitOptions::heartbeat_timeout is -1 ms, expected >= 0");
  // A deadline of fewer than 3 heartbeats would take healthy ranks for lost:
  // refused before any connection (the cases: a 10 s heartbeat with
  // the 10 s deadline; PPE_HEARTBEAT_TIMEOUT=0.5 with the 1 s heartbeat).
  {
    dist::Environment e;
    e.master_port = ppe_test::free_port();
    CHECK(error_of([&] { dist::initialize(e, dist::InitOptions().heartbeat(std::chrono::seconds(10))); }) ==
          "ppe::distributed::initialize: the watchdog's deadline (InitOptions::heartbeat_timeout, "
          "PPE_HEARTBEAT_TIMEOUT) is 10000 ms and the heartbeat (InitOptions::heartbeat) 10000 ms: the deadline "
          "must be at least 3 heartbeats (30000 ms), or healthy ranks are taken for lost; lengthen the deadline or "
          "shorten the heartbeat (0 turns either off)");
    ScopedEnv env{{"PPE_HEARTBEAT_TIMEOUT", "0.5"}};
    CHECK(error_of([&] { dist::initialize(e); }).find("is 500 ms and the heartbeat (InitOptions::heartbeat) 1000 ms") !=
          std::string::npos);
    CHECK_FALSE(dist::is_initialized());
    // 3 heartbeats exactly, or either off, is accepted: a world of one forms.
    for (const auto& options : {dist::InitOptions().heartbeat(milliseconds(200)).heartbeat_timeout(milliseconds(600)),
                                dist::InitOptions().heartbeat(milliseconds(0)),
                                dist::InitOptions().heartbeat_timeout(milliseconds(0))}) {
      e.master_port = ppe_test::free_port();
      CHECK_NOTHROW(dist::initialize(e, options));
      dist::destroy_process_group();
    }
  }
}

TEST_CASE("initialize: a store nobody hosts, or a rank that never comes, is an error within the timeout") {
  // Rank 1 of 2 connects to a port where no store listens.
  dist::Environment client;
  client.world_size = 2;
  client.rank = 1;
  client.master_port = ppe_test::free_port();
  const auto what = error_of(
      [&] { dist::initialize(client, dist::InitOptions().timeout(std::chrono::milliseconds(1500))); });
  CHECK(what.find("rank 1 could not reach the TCPStore at 127.0.0.1:" + std::to_string(client.master_port)) !=
        std::string::npos);

  // Rank 0 hosts the store; rank 1 never joins.
  dist::Environment host;
  host.world_size = 2;
  host.master_port = ppe_test::free_port();
  const auto missing = error_of(
      [&] { dist::initialize(host, dist::InitOptions().timeout(std::chrono::milliseconds(1500))); });
  CHECK(missing.find("only 1 of 2 ranks joined within 1500 ms (store at 127.0.0.1:" +
                     std::to_string(host.master_port)) != std::string::npos);
  CHECK_FALSE(dist::is_initialized());
}

TEST_CASE("initialize: a world of one process, then destroy and initialize again") {
  dist::Environment e;
  e.master_port = ppe_test::free_port();
  const auto info = dist::initialize(e, dist::InitOptions().timeout(std::chrono::seconds(20)));
  CHECK(dist::is_initialized());
  CHECK(dist::process_info().world_size == 1);
  check_group_sums_ranks(info);
  CHECK(error_of([&] { dist::initialize(e); }).find("exists already") != std::string::npos);
  dist::destroy_process_group();
  CHECK_FALSE(dist::is_initialized());
  CHECK(dist::process_info().world_size == 1);
  e.master_port = ppe_test::free_port();
  dist::initialize(e);
  CHECK(dist::default_process_group()->getSize() == 1);
  dist::destroy_process_group();
}

TEST_CASE("worker: the heartbeat's connection fails" * doctest::skip()) {
  using namespace std::chrono_literals;
  const std::filesystem::path dir = std::getenv("PPE_TEST_DIR");
  const dist::Environment env = dist::torchrun_environment();
  const auto options = dist::InitOptions().timeout(30s).heartbeat(200ms).heartbeat_timeout(2s);
  if (env.rank == 0) {
    dist::initialize(env, options);  // rank 1 fails only after the group formed
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (!std::filesystem::exists(dir / "done") && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(20ms);
    CHECK(std::filesystem::exists(dir / "done"));
    dist::destroy_process_group();
    return;
  }
  const auto connect_client = [&env] {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(env.master_port);
    o.isServer = false;
    o.waitWorkers = false;
    o.timeout = 30s;
    ppe::detail::compat::choose_tcp_store_backend(o, false);  // a client: either backend's server answers it
    c10d::TCPStore client(env.master_addr, o);
  };
  // Once rank 0's store listens (each refused try is a connection too), how
  // many connections one store client opens: the group's, then the
  // heartbeat's, each open that many.
  connect_client();
  ppe_test::faults::watch_connects(env.master_port, -1);
  connect_client();
  const int per_client = ppe_test::faults::connects();
  REQUIRE(per_client > 0);
  ppe_test::faults::watch_connects(env.master_port, per_client);
  const auto what = error_of([&] { dist::initialize(env, options); });
  ppe_test::faults::watch_connects(0, -1);
  CHECK(what.find("rank 1 could not reach the TCPStore at 127.0.0.1:" + std::to_string(env.master_port)) !=
        std::string::npos);
  // Nothing half made stays: a new group forms at once. Before, the group of
  // the failed call remained ("exists already").
  CHECK_FALSE(dist::is_initialized());
  dist::Environment alone;
  alone.master_port = ppe_test::free_port();
  const auto info = dist::initialize(alone, dist::InitOptions().timeout(20s));
  CHECK(info.world_size == 1);
  dist::destroy_process_group();
  std::ofstream(dir / "done") << "1\n";
}

TEST_CASE("initialize: a heartbeat connection that fails leaves no group behind") {
  ppe_test::TempDir dir;
  auto extra = ppe_test::faults::preload();
  extra["PPE_TEST_DIR"] = dir.path.string();
  ppe_test::check_workers("worker: the heartbeat's connection fails", dir.path, extra);
}

TEST_CASE("worker: initialize from torchrun's variables" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  CHECK(info.rank == std::atoi(std::getenv("RANK")));
  CHECK(dist::process_info().world_size == info.world_size);
  check_group_sums_ranks(info);
  dist::destroy_process_group();
}

TEST_CASE("worker: initialize_ompi_environment under mpirun" * doctest::skip()) {
  const auto info = dist::initialize_ompi_environment(dist::InitOptions().timeout(std::chrono::seconds(60)));
  CHECK(info.world_size == 2);
  CHECK(dist::is_initialized());
  check_group_sums_ranks(info);
  dist::destroy_process_group();
}

TEST_CASE("two processes with torchrun's variables form one group") {
  ppe_test::TempDir dir;
  ppe_test::check_workers("worker: initialize from torchrun's variables", dir.path);
}

// Runs `argv` on 2 processes under the real torchrun on loopback; the output
// of torchrun (each line prefixed [default<rank>]:), or nothing where torchrun
// cannot start a job on this PyTorch (skipped with the probe's reason).
// Debian's torchrun crashes on Python 3.11 with its default --redirects 0:
// --redirects 1 --tee 1 (docs/distributed.md). Where torchrun cannot create
// its store at all (PyTorch 2.4+ without libuv, as Debian 13's), skipped.
std::optional<ppe_test::ProcessResult> under_torchrun(std::vector<std::string> argv, const std::filesystem::path& dir) {
  const char* root = std::getenv("PPE_SOURCE_ROOT");
  REQUIRE_MESSAGE(root, "PPE_SOURCE_ROOT is not set (meson test sets it)");
  const std::string& python = ppe_test::python_with_torch();
  REQUIRE_MESSAGE(!python.empty(), "no python3 with torch (python3-torch provides torchrun)");
  const auto probe = ppe_test::run(python + " " + std::string(root) + "/tests/support/torchrun_store_probe.py");
  if (probe.status == 77) {
    MESSAGE(probe.text);
    return std::nullopt;
  }
  argv.insert(argv.begin(), {"torchrun", "--no_python", "--redirects", "1", "--tee", "1", "--nproc_per_node", "2",
                             "--master_addr", "127.0.0.1", "--master_port", std::to_string(ppe_test::free_port())});
  return ppe_test::run_processes({{argv, {{"GLOO_SOCKET_IFNAME", "lo"}}}}, dir, std::chrono::seconds(180))[0];
}

TEST_CASE("under the real torchrun (agent store), two C++ workers form one group") {
  ppe_test::TempDir dir;
  const auto result = under_torchrun(ppe_test::worker_argv("worker: initialize from torchrun's variables"), dir.path);
  if (!result) return;
  INFO(result->output);
  CHECK(result->exit_code == 0);
  // The agent hosted the store: both workers say so through torchrun's prefixes.
  CHECK(result->output.find("[default0]") != std::string::npos);
  CHECK(result->output.find("[default1]") != std::string::npos);
}

// The C++ half of tests/support/mixed_job_rank.py, collective for
// collective: an all-reduce, DDP (ppe's, beside torch's on the Python rank)
// over the same model for three SGD steps, and an all-gather of the weights.
torch::Tensor flat_weights(torch::nn::Module& m) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : m.parameters()) parts.push_back(p.detach().reshape(-1));
  return torch::cat(parts);
}

TEST_CASE("worker: a C++ rank beside a Python rank" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  auto group = dist::default_process_group();
  std::vector<at::Tensor> total{torch::full({3}, static_cast<float>(info.rank + 1))};
  group->allreduce(total)->wait();
  const int n = info.world_size;
  CHECK(torch::equal(total[0], torch::full({3}, n * (n + 1) / 2.0f)));

  torch::manual_seed(100 + info.rank);  // each rank starts elsewhere: DDP broadcasts rank 0's weights
  torch::nn::Sequential model(torch::nn::Linear(4, 3), torch::nn::Tanh(), torch::nn::Linear(3, 1));
  // Python's DDP by default (find_unused_parameters=False): no negotiation.
  ppe::nn::parallel::DistributedDataParallel ddp(
      model, ppe::nn::parallel::DistributedDataParallelOptions().negotiate_grads(false));
  const auto initial = flat_weights(*model);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    // The batch of mixed_job_rank.py's batch(rank, step).
    const auto x = torch::arange(32, torch::kFloat32).reshape({8, 4}) / 10 + info.rank - 0.5 * step;
    const auto y = x.sum(1, /*keepdim=*/true) * 0.25 - info.rank;
    optimizer.zero_grad();
    torch::mse_loss(ddp(x), y).backward();
    optimizer.step();
  }
  const auto weights = flat_weights(*model);
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int r = 0; r < n; ++r) gathered[0].push_back(torch::empty_like(weights));
  std::vector<at::Tensor> input{weights};
  group->allgather(gathered, input)->wait();
  for (int r = 0; r < n; ++r) CHECK(torch::equal(gathered[0][static_cast<std::size_t>(r)], weights));
  CHECK_FALSE(torch::equal(weights, initial));
  dist::destroy_process_group();
}

// mixed_job_rank.py as every rank's program: `python_rank` runs Python, the
// others exec this binary's worker above.
std::vector<std::string> mixed_job_argv(const std::string& python, int python_rank) {
  const char* root = std::getenv("PPE_SOURCE_ROOT");
  REQUIRE_MESSAGE(root, "PPE_SOURCE_ROOT is not set (meson test sets it)");
  auto argv = ppe_test::worker_argv("worker: a C++ rank beside a Python rank");
  argv.insert(argv.begin(), {python, std::string(root) + "/tests/support/mixed_job_rank.py",
                             std::to_string(python_rank)});
  return argv;
}

TEST_CASE("C++ and Python ranks form one group: all-reduce and DDP agree (Python hosts the store, then C++ does)") {
  const std::string& python = ppe_test::python_with_torch();
  REQUIRE_MESSAGE(!python.empty(), "no python3 with torch (Debian's python3-torch)");
  // Python as rank 0, then C++ as rank 0 with PyTorch 2.x's opt-in barrier
  // after the group is made (1.13 always has it).
  for (const auto& [python_rank, barrier] : {std::pair{0, "0"}, std::pair{1, "1"}}) {
    CAPTURE(python_rank);
    ppe_test::TempDir dir;
    // The workers started as torchrun would; USE_LIBUV=0: Python's env://
    // store defaults to libuv from 2.4, which Debian's LibTorch lacks.
    auto specs = ppe_test::torchrun_like("", 2, ppe_test::free_port(),
                                         {{"USE_LIBUV", "0"}, {"TORCH_DIST_INIT_BARRIER", barrier}});
    for (auto& spec : specs) spec.argv = mixed_job_argv(python, python_rank);
    const auto results = ppe_test::run_processes(specs, dir.path, std::chrono::seconds(120));
    INFO(ppe_test::outputs(results));
    CHECK(results[0].exit_code == 0);
    CHECK(results[1].exit_code == 0);
    const auto& py = results[static_cast<std::size_t>(python_rank)].output;
    CHECK(py.find("python rank " + std::to_string(python_rank) +
                  " of 2: all-reduce, 3 DDP steps and all-gather agree") != std::string::npos);
  }
}

TEST_CASE("under the real torchrun, a Python rank 0 and a C++ rank 1 form one group") {
  ppe_test::TempDir dir;
  const auto result = under_torchrun(mixed_job_argv(ppe_test::python_with_torch(), 0), dir.path);
  if (!result) return;
  INFO(result->output);
  CHECK(result->exit_code == 0);
  CHECK(result->output.find("[default0]:python rank 0 of 2: all-reduce, 3 DDP steps and all-gather agree") !=
        std::string::npos);
  CHECK(result->output.find("[default1]:[doctest] Status: SUCCESS!") != std::string::npos);
}

TEST_CASE("under mpirun, initialize_ompi_environment forms one group") {
  ppe_test::TempDir dir;
  auto argv = ppe_test::worker_argv("worker: initialize_ompi_environment under mpirun");
  const std::string port = std::to_string(ppe_test::free_port());
  argv.insert(argv.begin(), {"mpirun", "-n", "2", "--oversubscribe", "--bind-to", "none", "-x", "MASTER_ADDR", "-x",
                             "MASTER_PORT", "-x", "GLOO_SOCKET_IFNAME"});
  const auto results = ppe_test::run_processes(
      {{argv,
        {{"MASTER_ADDR", "127.0.0.1"},
         {"MASTER_PORT", port},
         {"GLOO_SOCKET_IFNAME", "lo"},
         {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
         {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
         {"OMPI_MCA_btl", "self,tcp"},
         {"OMPI_MCA_btl_tcp_if_include", "lo"},
         {"OMPI_MCA_oob_tcp_if_include", "lo"}}}},
      dir.path, std::chrono::seconds(180));
  INFO(results[0].output);
  CHECK(results[0].exit_code == 0);
}

}  // namespace ppe_test_distributed_tests_test_initialize
