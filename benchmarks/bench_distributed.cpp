// Data-parallel training step on 2 processes over loopback (Gloo):
//   BM_DDPStep/<params>               forward + backward through
//                                     ppe::nn::parallel::DistributedDataParallel
//                                     (bucketed all-reduces overlapping backward)
//   BM_AllReduceHandWritten/<params>  the same model and batch, then one
//                                     hand-written flat all-reduce of all the
//                                     gradients after backward, averaged and
//                                     copied back
//   BM_AllReduceBandwidth/<floats>    one all-reduce of a float tensor:
//                                     bytes_per_second is the algorithm's
//                                     bandwidth (payload / time)
// <params> = 1000000 and 10000000 (a stack of Linear(1000, 1000) layers).
//   BM_QuietStepHeartbeat/<ms>        a small training step (Linear(64, 64),
//                                     batch 16, SGD) in a manager's
//                                     run_iteration, no extension firing, no
//                                     collective, while this rank's heartbeat
//                                     and watchdog run every <ms> ms (0: none;
//                                     1000: the default; 10: a hundred times
//                                     as often): what they cost the loop.
//                                     Counters p50_us, p99_us, max_us.
//
// Run without RANK in the environment (as `./dev bench` does), the program
// starts itself twice as ranks 0 and 1 (the variables torchrun would set) and
// waits; rank 0 reports (its arguments, e.g. --benchmark_out, pass through),
// rank 1 runs the same benchmarks silently. Every benchmark has a fixed
// iteration count: the two ranks must run the same collectives.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <torch/nn/modules/loss.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <ppe/distributed/detail/liveness.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/distributed/process_group.hpp>
#include <ppe/nn/parallel/distributed.hpp>
#include <ppe/training/extensions_manager.hpp>

extern char** environ;

namespace {

constexpr std::int64_t kWidth = 1000;
constexpr std::int64_t kBatch = 8;

// A stack of Linear(1000, 1000): about `params` parameters.
torch::nn::Sequential make_net(std::int64_t params) {
  torch::manual_seed(0);
  torch::nn::Sequential net;
  for (std::int64_t p = 0; p < params; p += kWidth * (kWidth + 1)) net->push_back(torch::nn::Linear(kWidth, kWidth));
  return net;
}

void BM_DDPStep(benchmark::State& state) {
  auto net = make_net(state.range(0));
  ppe::nn::parallel::DistributedDataParallel ddp(net,
                                                 ppe::nn::parallel::DistributedDataParallelOptions().negotiate_grads(false));
  const auto x = torch::randn({kBatch, kWidth});
  for (auto _ : state) {
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
    ddp(x).sum().backward();
  }
  state.counters["params"] = static_cast<double>(state.range(0));
}

void BM_AllReduceHandWritten(benchmark::State& state) {
  auto net = make_net(state.range(0));
  auto group = ppe::distributed::default_process_group();
  const auto x = torch::randn({kBatch, kWidth});
  const double world = group->getSize();
  for (auto _ : state) {
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
    net->forward(x).sum().backward();
    std::vector<torch::Tensor> grads;
    for (auto& p : net->parameters()) grads.push_back(p.grad().flatten());
    std::vector<at::Tensor> flat{torch::cat(grads)};
    group->allreduce(flat)->wait();
    flat[0].div_(world);
    std::int64_t offset = 0;
    for (auto& p : net->parameters()) {
      const std::int64_t n = p.numel();
      p.mutable_grad().copy_(flat[0].narrow(0, offset, n).view_as(p));
      offset += n;
    }
  }
  state.counters["params"] = static_cast<double>(state.range(0));
}

void BM_AllReduceBandwidth(benchmark::State& state) {
  auto group = ppe::distributed::default_process_group();
  std::vector<at::Tensor> t{torch::ones({state.range(0)})};
  for (auto _ : state) group->allreduce(t)->wait();
  state.SetBytesProcessed(state.iterations() * state.range(0) * static_cast<std::int64_t>(sizeof(float)));
}

BENCHMARK(BM_DDPStep)->Arg(1000000)->Iterations(30)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AllReduceHandWritten)->Arg(1000000)->Iterations(30)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DDPStep)->Arg(10000000)->Iterations(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AllReduceHandWritten)->Arg(10000000)->Iterations(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AllReduceBandwidth)->Arg(1 << 20)->Arg(1 << 24)->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();

// The heartbeat's own store connection, as initialize makes it (a client of the group's store).
c10::intrusive_ptr<c10d::Store> heartbeat_store(int tag) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(std::atoi(std::getenv("MASTER_PORT")));
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = std::chrono::minutes(1);
  auto store = c10::make_intrusive<c10d::TCPStore>(std::getenv("MASTER_ADDR"), o);
  return c10::make_intrusive<c10d::PrefixStore>("bench_heartbeat/" + std::to_string(tag) + "/", store);
}

void BM_QuietStepHeartbeat(benchmark::State& state) {
  namespace tr = ppe::training;
  const auto interval = std::chrono::milliseconds(state.range(0));
  const auto info = ppe::distributed::process_info();
  std::unique_ptr<ppe::distributed::detail::Liveness> liveness;
  if (interval.count() > 0) {
    ppe::distributed::detail::LivenessConfig c;
    c.rank = info.rank;
    c.world_size = info.world_size;
    c.interval = interval;
    c.deadline = std::chrono::seconds(60);  // the watchdog checks, and never fires here
    liveness = std::make_unique<ppe::distributed::detail::Liveness>(heartbeat_store(static_cast<int>(state.range(0))),
                                                                    "", std::move(c));
  }
  torch::manual_seed(0);
  torch::nn::Linear net(64, 64);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01));
  const auto x = torch::randn({16, 64}), y = torch::randn({16, 64});
  auto manager = tr::ExtensionsManager(tr::ManagerOptions().max_epochs(1e9).iters_per_epoch(1000000), tr::Models(net),
                                       tr::Optimizers(opt));
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(state.max_iterations));
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    manager.run_iteration([&] {
      opt.zero_grad();
      torch::mse_loss(net(x), y).backward();
      opt.step();
    });
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const auto at = [&](double q) { return times[static_cast<std::size_t>(q * static_cast<double>(times.size() - 1))]; };
  state.counters["p50_us"] = at(0.5);
  state.counters["p99_us"] = at(0.99);
  state.counters["max_us"] = times.back();
}
// About 3 s each: the default heartbeat beats a few times.
BENCHMARK(BM_QuietStepHeartbeat)->Arg(0)->Arg(1000)->Arg(10)->Iterations(100000)->Unit(benchmark::kMicrosecond)->UseRealTime();

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Starts this program as ranks 0 and 1 and returns rank 0's exit status.
int launch(int argc, char** argv) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string port = std::to_string(free_port());
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    for (std::string kv : {"RANK=" + std::to_string(rank), std::string("WORLD_SIZE=2"), "LOCAL_RANK=" + std::to_string(rank),
                           std::string("LOCAL_WORLD_SIZE=2"), std::string("MASTER_ADDR=127.0.0.1"), "MASTER_PORT=" + port,
                           std::string("GLOO_SOCKET_IFNAME=lo"), std::string("OMP_NUM_THREADS=1")})
      env.push_back(kv);
    std::vector<std::string> args{self};
    if (rank == 0)
      for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    std::vector<char*> envp, argp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : args) argp.push_back(s.data());
    argp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (rank != 0) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    if (::posix_spawn(&pid, self.c_str(), &actions, nullptr, argp.data(), envp.data()) != 0) {
      std::cerr << "bench_distributed: cannot start rank " << rank << "\n";
      return 1;
    }
    posix_spawn_file_actions_destroy(&actions);
    pids.push_back(pid);
  }
  int result = 0;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    ::waitpid(pids[i], &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0) result = code;
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("RANK") == nullptr) return launch(argc, argv);
  torch::set_num_threads(1);  // two ranks on two cores
  // The group's own heartbeat off: BM_QuietStepHeartbeat runs its own, or none.
  ppe::distributed::initialize(
      ppe::distributed::InitOptions().timeout(std::chrono::minutes(5)).heartbeat(std::chrono::milliseconds(0)));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ppe::distributed::barrier();
  ppe::distributed::destroy_process_group();
  return 0;
}
