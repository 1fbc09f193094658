// The manager in distributed training: rank and world size from the process
// group, and the composition handshake at start (two real processes).
#include "ppe_test.hpp"

#include <ppe/distributed/communicator.hpp>
#include <ppe/distributed/initialize.hpp>

#include <cstdlib>

#include "processes.hpp"
#include "temp_dir.hpp"

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
    const auto results = ppe_test::run_processes(
        ppe_test::torchrun_like("worker: the composition handshake", 2, ppe_test::free_port(), extra), dir.path,
        std::chrono::seconds(120));
    INFO(ppe_test::outputs(results));
    CHECK(results[0].exit_code == 0);
    CHECK(results[1].exit_code == 0);
  }
}
