// snapshot(saver_rank) in distributed training (PPE's test_distributed_snapshot
// and test_sharded_snapshot): a 2-rank DDP run whose rank 0 writes the
// snapshots (or, sharded, every rank its own file in a directory that rank 0
// marks complete), killed after a snapshot, resumed by both ranks, ends
// bitwise where the uninterrupted run ends; rank 0's file also loads into one
// process.
#include "ppe_test.hpp"

#include <ppe/distributed/communicator.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/nn/parallel/distributed.hpp>
#include <ppe/training/extensions/snapshot.hpp>

#include <cstdlib>
#include <fstream>

#include "processes.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_distributed_snapshot {

namespace dist = ppe::distributed;
namespace ext = ppe::training::extensions;
namespace fs = std::filesystem;
namespace tr = ppe::training;

namespace {

constexpr int kEpochs = 2, kItersPerEpoch = 5, kSnapshotEvery = 3;

torch::nn::Sequential make_net(int seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Functional(torch::tanh), torch::nn::Linear(8, 1));
}

// Rank r's batch at iteration it (the same in every run).
std::pair<torch::Tensor, torch::Tensor> batch(int rank, std::int64_t it) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(100 * it + rank);
  return {torch::randn({3, 4}, g), torch::randn({3, 1}, g)};
}

std::string param_bytes(torch::nn::Module& m) {
  std::vector<torch::Tensor> ps;
  for (const auto& p : m.parameters()) ps.push_back(p.detach().flatten());
  const auto flat = torch::cat(ps).contiguous();
  return std::string(static_cast<const char*>(flat.data_ptr()), flat.numel() * flat.element_size());
}

void write_file(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The run's manager: rank 0 saves every kSnapshotEvery iterations, every rank autoloads.
template <class Models, class Optimizers>
auto make_manager(tr::ManagerOptions options, Models models, Optimizers optimizers, bool sharded = false) {
  return tr::ExtensionsManager(options.max_epochs(kEpochs).iters_per_epoch(kItersPerEpoch), std::move(models),
                               std::move(optimizers),
                               tr::entry(ext::snapshot(ext::SnapshotOptions().saver_rank(0).autoload(true).sharded(sharded)),
                                         ppe::iterations(kSnapshotEvery)));
}

}  // namespace

TEST_CASE("worker: a DDP run with snapshots on rank 0" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  REQUIRE(info.world_size == 2);
  const fs::path dir = std::getenv("PPE_TEST_DIR");
  const char* stop_at = std::getenv("PPE_TEST_STOP_AT");
  auto net = make_net(info.rank);
  ppe::nn::parallel::DistributedDataParallel ddp(net, ppe::nn::parallel::DistributedDataParallelOptions().negotiate_grads(false));
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto manager = make_manager(dist::for_process_group(tr::ManagerOptions().out_dir((dir / "result").string())),
                              tr::Models(ddp), tr::Optimizers(opt), std::getenv("PPE_TEST_SHARDED") != nullptr);
  while (!manager.stop_trigger()) {
    manager.run_iteration([&] {
      auto [x, y] = batch(info.rank, manager.iteration());
      opt.zero_grad();
      torch::mse_loss(ddp(x), y).backward();
      opt.step();
    });
    if (manager.iteration() == 9 && info.rank == 0) write_file(dir / "params_at_9", param_bytes(*net));
    if (stop_at && manager.iteration() == std::atoi(stop_at)) std::_Exit(3);  // killed: no finalize, no cleanup
  }
  CHECK(manager.iteration() == kEpochs * kItersPerEpoch);
  write_file(dir / ("final_" + std::to_string(info.rank)), param_bytes(*net));
  dist::destroy_process_group();
}

// Runs the worker uninterrupted in `whole`, then in `resumed` killed after
// iteration 7 (the last snapshot is iteration 6's) and started again: both
// ranks autoload iteration 6 and must end bitwise where the whole run ended.
static void kill_and_resume(bool sharded, const fs::path& whole, const fs::path& resumed) {
  auto run = [&](const fs::path& dir, std::optional<int> stop_at) {
    std::map<std::string, std::string> env{{"PPE_TEST_DIR", dir.string()}};
    if (stop_at) env["PPE_TEST_STOP_AT"] = std::to_string(*stop_at);
    if (sharded) env["PPE_TEST_SHARDED"] = "1";
    const int code = stop_at ? 3 : 0;  // the worker's _Exit(3) when stopped
    ppe_test::check_workers("worker: a DDP run with snapshots on rank 0", dir, env, {code, code});
  };
  run(whole, std::nullopt);
  CHECK(read_file(whole / "final_0") == read_file(whole / "final_1"));  // DDP: the ranks agree bitwise
  run(resumed, 7);
  CHECK_FALSE(fs::exists(resumed / "final_0"));
  run(resumed, std::nullopt);
  CHECK(read_file(resumed / "final_0") == read_file(whole / "final_0"));
  CHECK(read_file(resumed / "final_1") == read_file(whole / "final_0"));
}

TEST_CASE("snapshot(saver_rank=0): kill after a snapshot, resume with 2 ranks, bitwise the uninterrupted run") {
  ppe_test::TempDir whole, resumed;
  kill_and_resume(false, whole.path, resumed.path);
  // Only rank 0 wrote: one file per snapshot.
  CHECK(fs::is_regular_file(whole / "result" / "snapshot_iter_3"));
  CHECK(fs::is_regular_file(whole / "result" / "snapshot_iter_9"));
  CHECK(fs::is_regular_file(resumed / "result" / "snapshot_iter_6"));

  // One process (no group, no wrapper) loads rank 0's snapshot into the plain model.
  auto net = make_net(42);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto manager = make_manager(tr::ManagerOptions().out_dir((whole / "result").string()), tr::Models(net),
                              tr::Optimizers(opt));
  manager.start_extensions();  // autoload: the newest snapshot, iteration 9's
  CHECK(manager.iteration() == 9);
  CHECK(param_bytes(*net) == read_file(whole / "params_at_9"));
}

TEST_CASE("worker: autoload a sharded snapshot of 2 ranks" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  const fs::path dir = std::getenv("PPE_TEST_DIR");
  auto net = make_net(100 + info.rank);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto manager = make_manager(dist::for_process_group(tr::ManagerOptions().out_dir((dir / "result").string())),
                              tr::Models(net), tr::Optimizers(opt), /*sharded=*/true);
  manager.start_extensions();
  CHECK(manager.iteration() == 9);
  // Rank r takes shard r % 2: its own while there is one.
  CHECK(manager.get_extension<ext::Snapshot>("_Snapshot").loaded_file() ==
        "snapshot_iter_9/" + std::to_string(info.rank % 2));
  CHECK(param_bytes(*net) == read_file(dir / "params_at_9"));
  dist::destroy_process_group();
}

TEST_CASE("snapshot(saver_rank=0, sharded): every rank its file, rank 0 the marker; kill, resume, bitwise") {
  ppe_test::TempDir whole, resumed;
  kill_and_resume(true, whole.path, resumed.path);
  // A directory per snapshot: each rank's file and rank 0's marker.
  for (const char* f : {"0", "1", "complete"}) {
    CHECK(fs::exists(whole / "result" / "snapshot_iter_3" / f));
    CHECK(fs::exists(whole / "result" / "snapshot_iter_9" / f));
    CHECK(fs::exists(resumed / "result" / "snapshot_iter_6" / f));
  }
  // Another number of ranks (elastic training) autoloads the same newest
  // directory: 3 ranks (rank 2 takes shard 0), then one process.
  const auto results = ppe_test::run_processes(
      ppe_test::torchrun_like("worker: autoload a sharded snapshot of 2 ranks", 3, ppe_test::free_port(),
                              {{"PPE_TEST_DIR", whole.path.string()}}),
      whole.path, std::chrono::seconds(120));
  INFO(ppe_test::outputs(results));
  for (const auto& r : results) CHECK(r.exit_code == 0);
  auto net = make_net(42);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto one = make_manager(tr::ManagerOptions().out_dir((whole.path / "result").string()), tr::Models(net),
                          tr::Optimizers(opt), /*sharded=*/true);
  one.start_extensions();
  CHECK(one.iteration() == 9);
  CHECK(one.get_extension<ext::Snapshot>("_Snapshot").loaded_file() == "snapshot_iter_9/0");
  CHECK(param_bytes(*net) == read_file(whole.path / "params_at_9"));
}

}  // namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_distributed_snapshot
