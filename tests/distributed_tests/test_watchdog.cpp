// The watchdog of ppe::distributed (InitOptions::heartbeat_timeout; ours, not
// PPE's): a rank whose peer hangs ends its process within the deadline with a
// message naming the peer, while a slow step and ranks that end at different
// times are not taken for losses; the store's load is linear in the ranks (a
// coordinator watches all, the others it, and a loss is relayed); the
// on_lost_peer callback is bounded and may take the group's lock; a rank
// leaving with a slow store still marks itself gone, and so does one whose
// watch thread cannot start (a fault tests/support/faults.cpp makes). Real
// processes on loopback; the multi-node faults (killed nodes, cut links, a
// lost store) are tests/multinode.
#include "ppe_test.hpp"

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <ppe/distributed/detail/liveness.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/distributed/process_group.hpp>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "faults.hpp"
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

// Rank 1 writes its pid to `stopped` and stops itself (a hung machine) right
// after joining; rank 0's watchdog then reports it to `on_lost`.
void stop_rank_1(const std::filesystem::path& dir, const dist::ProcessInfo& info) {
  if (info.rank != 1) return;
  // Three heartbeats first: a rank that never beat is not judged (a Python rank).
  std::this_thread::sleep_for(600ms);
  std::ofstream(dir / "stopped") << ::getpid() << " " << monotonic_seconds() << "\n";
  ::raise(SIGSTOP);
  FAIL("rank 1 was continued");
}

void kill_stopped(const std::filesystem::path& dir) {
  std::ifstream in(dir / "stopped");
  pid_t pid = 0;
  in >> pid;
  if (pid > 0) ::kill(pid, SIGKILL);
}

TEST_CASE("worker: on_lost_peer asks for the process info while the main thread destroys the group" *
          doctest::skip()) {
  const std::filesystem::path dir = std::getenv("PPE_TEST_DIR");
  static std::atomic<bool> entered{false};
  auto options = fast_watchdog();
  options.on_lost_peer([dir](const std::string&) {
    kill_stopped(dir);
    entered = true;
    // The main thread is in destroy_process_group() by now, which joins this thread.
    std::this_thread::sleep_for(300ms);
    const auto info = dist::process_info();
    std::ofstream(dir / "lost.txt") << "process_info returned, world size " << info.world_size << "\n";
  });
  const auto info = dist::initialize(options);
  stop_rank_1(dir, info);
  while (!entered) std::this_thread::sleep_for(10ms);
  dist::destroy_process_group();
  // The watchdog ends the process when the callback returns: never here.
  std::this_thread::sleep_for(60s);
}

TEST_CASE("watchdog: on_lost_peer may take the group's lock while destroy_process_group joins the watchdog") {
  ppe_test::TempDir dir;
  // Before: destroy_process_group held the lock while joining the watchdog,
  // whose callback waited for it in process_info(): both waited for ever.
  ppe_test::check_workers("worker: on_lost_peer asks for the process info while the main thread destroys the group",
                          dir.path, {{"PPE_TEST_DIR", dir.path.string()}}, {75, -1}, 30s);
  std::ifstream in(dir.path / "lost.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.starts_with("process_info returned"));
}

TEST_CASE("worker: on_lost_peer never returns" * doctest::skip()) {
  const std::filesystem::path dir = std::getenv("PPE_TEST_DIR");
  auto options = fast_watchdog();
  options.on_lost_peer([dir](const std::string&) {
    kill_stopped(dir);
    std::ofstream(dir / "lost.txt") << monotonic_seconds() << "\n";
    std::this_thread::sleep_for(3600s);  // a logger blocked on a dead server, say
  });
  const auto info = dist::initialize(options);
  stop_rank_1(dir, info);
  // Busy elsewhere (not in a collective, which the peer's end would fail).
  std::this_thread::sleep_for(60s);
  FAIL("the watchdog did not end the process");
}

TEST_CASE("watchdog: a callback that never returns delays the end by at most its bound") {
  ppe_test::TempDir dir;
  const double started = monotonic_seconds();
  ppe_test::check_workers("worker: on_lost_peer never returns", dir.path, {{"PPE_TEST_DIR", dir.path.string()}},
                          {75, -1}, 40s);
  std::ifstream in(dir.path / "lost.txt");
  double called = 0;
  in >> called;
  REQUIRE(called > 0);
  // The bound (ppe::distributed::kOnLostPeerBound, 5 s) after the callback was
  // called, plus the process's exit and the runner's polling.
  CHECK(monotonic_seconds() - called >= 4.5);
  CHECK(monotonic_seconds() - called < 15.0);
  CHECK(called - started < 20.0);
}

TEST_CASE("worker: a rank leaves while the store is frozen" * doctest::skip()) {
  const std::filesystem::path dir = std::getenv("PPE_TEST_DIR");
  // A deadline well above the freeze (2.5 s), so that only a missing "left"
  // mark can make rank 0 take rank 1 for lost.
  const auto info = dist::initialize(dist::InitOptions().timeout(60s).heartbeat(200ms).heartbeat_timeout(5s));
  all_reduce_once();
  if (info.rank == 0) {
    std::ofstream(dir / "store") << ::getpid() << "\n";
    all_reduce_once();
    // Rank 1 freezes this process (the store's host) and leaves: its last
    // beat waits for the store. Then two deadlines and more of quiet.
    std::this_thread::sleep_for(12s);
    CHECK(dist::process_info().world_size == 2);  // still here: the watchdog kept quiet
    dist::destroy_process_group();
    return;
  }
  all_reduce_once();  // rank 0's pid is written
  pid_t store = 0;
  std::ifstream(dir / "store") >> store;
  REQUIRE(store > 0);
  ::kill(store, SIGSTOP);
  // A process of its own continues rank 0 after 2.5 s: this one may have
  // ended by then (before: after 1.2 s, its "left" mark never written).
  if (::fork() == 0) {
    const timespec pause{2, 500'000'000};
    ::nanosleep(&pause, nullptr);
    ::kill(store, SIGCONT);
    ::_exit(0);
  }
  // Two heartbeats: the beat thread is in a round, waiting for the store's
  // answer, and sends the mark only after it.
  std::this_thread::sleep_for(400ms);
  dist::destroy_process_group();  // waits for the "left" mark
  std::_Exit(0);                  // as a process ending: nothing let go lives on
}

TEST_CASE("watchdog: a rank whose last beat is slow still leaves before it ends") {
  ppe_test::TempDir dir;
  ppe_test::check_workers("worker: a rank leaves while the store is frozen", dir.path,
                          {{"PPE_TEST_DIR", dir.path.string()}}, {0, 0}, 60s);
}

TEST_CASE("worker: the watch thread cannot start" * doctest::skip()) {
  namespace detail = dist::detail;
  // The fault library stands in front of pthread_create in this process.
  ppe_test::faults::fail_threads(0, 1);
  CHECK_THROWS_AS(std::thread([] {}).join(), std::system_error);
  auto store = c10::make_intrusive<c10d::HashStore>();
  detail::LivenessConfig c;
  c.world_size = 2;
  c.interval = 100ms;
  c.deadline = 1s;
  // The beat thread starts; the watch thread does not. Before: the joinable
  // beat thread was destroyed with the half-made Liveness (std::terminate).
  ppe_test::faults::fail_threads(1, 1);
  std::string what;
  try {
    detail::Liveness liveness(store, "hb/", c);
  } catch (const std::system_error& e) {
    what = e.what();
  }
  CHECK(!what.empty());
  // The beat thread, let go, still ends by marking this rank as left.
  const auto key = detail::Liveness::counter_key("hb/", 0);
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (store->add(key, 0) < detail::kLeftMark && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(10ms);
  CHECK(store->add(key, 0) >= detail::kLeftMark);
}

TEST_CASE("watchdog: a watch thread that cannot start is an error, and the beat thread already running leaves") {
  ppe_test::TempDir dir;
  const auto results = ppe_test::run_processes(
      {{ppe_test::worker_argv("worker: the watch thread cannot start"), ppe_test::faults::preload()}}, dir.path, 60s);
  INFO(ppe_test::outputs(results));
  CHECK(results[0].exit_code == 0);
}

TEST_CASE("heartbeat rounds: the store serves O(W) operations an interval; the coordinator is the lowest rank beating") {
  namespace detail = dist::detail;
  using Liveness = detail::Liveness;
  const int world = 64;
  auto store = c10::make_intrusive<c10d::HashStore>();
  const std::string prefix = "hb/";
  const std::vector<bool> known(world, true);
  for (int r = 0; r < world; ++r) Liveness::round(*store, prefix, r, world, known);  // every rank beat once
  std::size_t reads = 0;
  for (int r = 0; r < world; ++r) {
    const auto round = Liveness::round(*store, prefix, r, world, known);
    CHECK(round.coordinator == 0);
    reads += round.counts.size();
    if (r == 5) CHECK(round.counts == std::vector<std::pair<int, std::int64_t>>{{0, 2}});
  }
  // The coordinator reads the 63 others, each other rank the coordinator's
  // counter: 126 reads, where every rank reading every counter made 4032.
  CHECK(reads == 2 * (world - 1));
  // Rank 0 leaves: rank 1 coordinates, and the others read rank 0's counter
  // (left) and rank 1's.
  store->add(Liveness::counter_key(prefix, 0), detail::kLeftMark);
  const auto r1 = Liveness::round(*store, prefix, 1, world, known);
  CHECK(r1.coordinator == 1);
  CHECK(r1.counts.size() == static_cast<std::size_t>(world - 1));
  const auto r5 = Liveness::round(*store, prefix, 5, world, known);
  CHECK(r5.coordinator == 1);
  CHECK(r5.counts.size() == 2);
  CHECK(!r5.loss);
  // A published loss reaches every rank's next round; host names are read once.
  const std::string seen = "rank 9 (no heartbeat for 10.0 s) is lost (seen by rank 1)";
  store->set(Liveness::loss_key(prefix), std::vector<std::uint8_t>(seen.begin(), seen.end()));
  const std::string host = "node9";
  store->set(Liveness::host_key(prefix, 9), std::vector<std::uint8_t>(host.begin(), host.end()));
  std::vector<bool> unknown(world, false);
  const auto again = Liveness::round(*store, prefix, 1, world, unknown);
  REQUIRE(again.loss);
  CHECK(*again.loss == seen);
  CHECK(again.hosts == std::vector<std::pair<int, std::string>>{{9, "node9"}});
}

TEST_CASE("worker: three ranks; rank 2 hangs" * doctest::skip()) {
  const std::filesystem::path dir = std::getenv("PPE_TEST_DIR");
  auto options = fast_watchdog();
  options.on_lost_peer([dir](const std::string& message) {
    const auto rank = dist::process_info().rank;
    if (rank == 0) kill_stopped(dir);  // the coordinator saw it: the test need not wait longer
    std::ofstream(dir / ("lost" + std::to_string(rank) + ".txt")) << message;
  });
  const auto info = dist::initialize(options);
  if (info.rank == 2) {
    // Three heartbeats first: a rank that never beat is not judged (a Python rank).
    std::this_thread::sleep_for(600ms);
    std::ofstream(dir / "stopped") << ::getpid() << " " << monotonic_seconds() << "\n";
    ::raise(SIGSTOP);
    FAIL("rank 2 was continued");
  }
  std::this_thread::sleep_for(60s);
  FAIL("the watchdog did not end rank " << info.rank);
}

TEST_CASE("watchdog: a rank that does not watch the lost one ends with the message of the rank that saw it") {
  ppe_test::TempDir dir;
  const auto results = ppe_test::run_processes(
      ppe_test::torchrun_like("worker: three ranks; rank 2 hangs", 3, ppe_test::free_port(),
                              {{"PPE_TEST_DIR", dir.path.string()}}),
      dir.path, 60s);
  INFO(ppe_test::outputs(results));
  CHECK(results[0].exit_code == 75);
  CHECK(results[1].exit_code == 75);
  auto text = [&](const char* name) {
    std::ifstream in(dir.path / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string host = host_name();
  const std::string lost = "ppe::distributed: rank 2 on " + host + " (no heartbeat for ";
  // Rank 0, the coordinator, watched rank 2 itself; rank 1 watched only rank 0.
  CHECK(text("lost0.txt").starts_with(lost));
  CHECK(text("lost0.txt").find("(seen by") == std::string::npos);
  CHECK(text("lost1.txt").starts_with(lost));
  CHECK(text("lost1.txt").find(" s) is lost (dead, hung or cut off from the network) (seen by rank 0 on " + host +
                               "); the deadline is 1.5 s") != std::string::npos);
  CHECK(text("lost1.txt").find("rank 1 on " + host + " ends its process with exit status 75") != std::string::npos);
}

}  // namespace ppe_test_distributed_tests_test_watchdog
