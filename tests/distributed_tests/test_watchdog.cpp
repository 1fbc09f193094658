// The watchdog of ppe::distributed (InitOptions::heartbeat_timeout; ours, not
// PPE's): a rank whose peer hangs ends its process within the deadline with a
// message naming the peer, while a slow step and ranks that end at different
// times are not taken for losses. Two real processes on loopback; the
// multi-node faults (killed nodes, cut links, a lost store) are
// tests/multinode.
#include "ppe_test.hpp"

#include <ppe/distributed/initialize.hpp>
#include <ppe/distributed/process_group.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "processes.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_distributed_tests_test_watchdog {

namespace dist = ppe::distributed;
using namespace std::chrono_literals;

// Heartbeats every 200 ms, a 1.5 s deadline, and a group timeout far beyond
// both: a hang that the watchdog misses shows as a collective failing after 60 s.
dist::InitOptions fast_watchdog() {
  return dist::InitOptions().timeout(60s).heartbeat(200ms).heartbeat_timeout(1500ms);
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void all_reduce_once() {
  std::vector<at::Tensor> t{torch::ones({4})};
  dist::default_process_group()->allreduce(t)->wait();
}

TEST_CASE("worker: a rank hangs in the middle of training" * doctest::skip()) {
  const std::filesystem::path dir = std::getenv("PPE_TEST_DIR");
  auto options = fast_watchdog();
  // The other rank's watchdog reports here (instead of stderr) and kills the
  // stopped rank, so that the test need not wait for its own deadline.
  options.on_lost_peer([dir](const std::string& message) {
    std::ifstream in(dir / "stopped");
    pid_t pid = 0;
    double when = 0;
    in >> pid >> when;
    if (pid > 0) ::kill(pid, SIGKILL);
    std::ofstream(dir / "lost.txt") << monotonic_seconds() - when << "\n" << message;
  });
  const int stopped = std::atoi(std::getenv("PPE_TEST_STOPPED"));
  const auto info = dist::initialize(options);
  for (int i = 0; i < 100; ++i) {
    if (info.rank == stopped && i == 3) {
      std::ofstream(dir / "stopped") << ::getpid() << " " << monotonic_seconds() << "\n";
      ::raise(SIGSTOP);  // the whole process, heartbeat thread included, as a hung machine
    }
    all_reduce_once();  // the other rank blocks here from i == 3 on
  }
  FAIL("rank " << info.rank << " finished: the other rank never stopped");
}

// Runs the hang with rank `stopped` stopped; returns the detection time and
// the message of the other rank's watchdog, which must have ended it with 75.
std::pair<double, std::string> hang(int stopped) {
  ppe_test::TempDir dir;
  std::vector<int> codes{75, 75};
  codes[static_cast<std::size_t>(stopped)] = -1;  // killed by the other rank's report
  ppe_test::check_workers("worker: a rank hangs in the middle of training", dir.path,
                          {{"PPE_TEST_DIR", dir.path.string()}, {"PPE_TEST_STOPPED", std::to_string(stopped)}}, codes,
                          90s);
  std::ifstream in(dir.path / "lost.txt");
  double detection = -1;
  in >> detection;
  return {detection, std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>())};
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

TEST_CASE("watchdog: a hung rank ends its peer within the deadline, naming it, with exit status 75") {
  const auto [detection, message] = hang(1);
  INFO(message);
  // The deadline (1.5 s) after the last beat seen (up to one 0.2 s interval
  // before the stop), plus the watchdog's tick (50 ms) and scheduling.
  CHECK(detection >= 1.2);
  CHECK(detection < 4.0);
  const std::string host = host_name();
  CHECK(message.find("ppe::distributed: rank 1 on " + host + " (no heartbeat for ") != std::string::npos);
  CHECK(message.find(" s) is lost (dead, hung or cut off from the network); the deadline is 1.5 s "
                     "(InitOptions::heartbeat_timeout, PPE_HEARTBEAT_TIMEOUT). rank 0 on " + host +
                     " ends its process with exit status 75") != std::string::npos);
}

TEST_CASE("watchdog: when the rank hosting the store hangs, the other names the store") {
  const auto [detection, message] = hang(0);
  INFO(message);
  CHECK(detection >= 1.2);
  CHECK(detection < 4.0);
  const std::string host = host_name();
  CHECK(message.find("ppe::distributed: the store at 127.0.0.1:") != std::string::npos);
  CHECK(message.find(" (hosted by rank 0 on " + host + ") has not answered for ") != std::string::npos);
  CHECK(message.find("rank 1 on " + host + " ends its process with exit status 75") != std::string::npos);
}

TEST_CASE("worker: a slow step and one rank ending long before the other" * doctest::skip()) {
  const int lingering = std::atoi(std::getenv("PPE_TEST_LINGERING"));
  const auto info = dist::initialize(fast_watchdog());
  for (int i = 0; i < 5; ++i) {
    // A step three deadlines long on rank 1: its heartbeat thread goes on.
    if (info.rank == 1 && i == 2) std::this_thread::sleep_for(4500ms);
    all_reduce_once();
  }
  CHECK(dist::process_info().world_size == 2);
  if (info.rank != lingering) {
    dist::destroy_process_group();  // leaves (and, on rank 0, takes the store with it)
    return;
  }
  // The other rank has left: three deadlines without its heartbeat (rank 1
  // lingering: without the store either) are no loss.
  std::this_thread::sleep_for(4500ms);
  dist::destroy_process_group();
}

TEST_CASE("watchdog: no false alarm on a slow step, nor on ranks ending at different times") {
  for (const char* lingering : {"0", "1"}) {
    CAPTURE(lingering);
    ppe_test::TempDir dir;
    ppe_test::check_workers("worker: a slow step and one rank ending long before the other", dir.path,
                            {{"PPE_TEST_LINGERING", lingering}}, {0, 0}, 90s);
  }
}

}  // namespace ppe_test_distributed_tests_test_watchdog
