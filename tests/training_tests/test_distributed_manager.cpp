// The manager in distributed training: rank and world size from the process
// group, and the composition handshake at start (two real processes).
#include "ppe_test.hpp"

#include <ppe/distributed/communicator.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/nn/parallel/distributed.hpp>

#include <cstdlib>

#include "processes.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_distributed_manager {

namespace dist = ppe::distributed;
namespace tr = ppe::training;

TEST_CASE("worker: the composition handshake" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  const bool differ = std::getenv("PPE_TEST_DIFFER") != nullptr;
  auto options = dist::for_process_group(ppe_test::options(1, 4));
  CHECK(options.rank() == info.rank);
  CHECK(options.world_size() == 2);
  int calls = 0;
  // Rank 1 fires its lambda every 2 iterations when told to differ.
  auto manager = tr::ExtensionsManager(options, tr::Models{}, tr::Optimizers{},
                                       tr::make_extension([&](tr::Manager&) { ++calls; },
                                                          ppe::iterations(differ && info.rank == 1 ? 2 : 1), "count"));
  CHECK(manager.rank() == info.rank);
  CHECK(manager.communicator() != nullptr);
  const std::vector<std::string> lines = manager.composition();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("'count' LambdaExtension priority") == 0);
  if (!differ) {
    while (!manager.stop_trigger()) manager.run_iteration([] {});
    CHECK(calls == 4);
  } else {
    const std::string what = ppe_test::error_of([&] { manager.start_extensions(); });
    CHECK(what.find("the ranks' managers differ") != std::string::npos);
    CHECK(what.find("rank 0 has 'count' LambdaExtension") != std::string::npos);
    CHECK(what.find("rank 1 has 'count'") != std::string::npos);
    CHECK(what.find("IntervalTrigger(1, 'iteration')") != std::string::npos);
    CHECK(what.find("IntervalTrigger(2, 'iteration')") != std::string::npos);
  }
  dist::destroy_process_group();
}

TEST_CASE("distributed manager: the same composition trains; a different one is an error on every rank") {
  for (bool differ : {false, true}) {
    CAPTURE(differ);
    ppe_test::TempDir dir;
    std::map<std::string, std::string> extra;
    if (differ) extra["PPE_TEST_DIFFER"] = "1";
    ppe_test::check_workers("worker: the composition handshake", dir.path, extra);
  }
}

TEST_CASE("worker: a rank dies" * doctest::skip()) {
  const auto info = dist::initialize(
      dist::InitOptions().timeout(std::chrono::seconds(20)).heartbeat(std::chrono::milliseconds(200)));
  torch::manual_seed(0);
  torch::nn::Linear net(4, 1);
  ppe::nn::parallel::DistributedDataParallel ddp(net,
                                                 ppe::nn::parallel::DistributedDataParallelOptions().negotiate_grads(false));
  auto manager =
      tr::ExtensionsManager(dist::for_process_group(ppe_test::options(1, 10)), tr::Models(ddp), tr::Optimizers{});
  const auto start = std::chrono::steady_clock::now();
  const std::string what = ppe_test::error_of([&] {
    while (!manager.stop_trigger())
      manager.run_iteration([&] {
        if (info.rank == 1 && manager.iteration() == 3) std::_Exit(1);  // gone, mid-run, without a word
        ddp(torch::ones({2, 4})).sum().backward();
      });
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(what);
  CHECK(what.find("ppe: rank 1 of the process group is gone (no heartbeat); the error on rank 0: ") == 0);
  CHECK(seconds < 20);  // within the group's timeout: the lost connection is seen at once
  CHECK(manager.iteration() == 3);
  // No destroy_process_group: its peer is gone.
}

TEST_CASE("distributed manager: when a rank dies, the other stops with an error naming it") {
  ppe_test::TempDir dir;
  // Rank 0 exits with 0 when its checks of the error passed; rank 1 died with 1.
  ppe_test::check_workers("worker: a rank dies", dir.path, {}, {0, 1}, std::chrono::seconds(90));
}

}  // namespace ppe_test_training_tests_test_distributed_manager
