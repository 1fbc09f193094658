// Stopping on request (issue 4, graceful stop): Manager::request_stop and
// StopOnSignal. Not in PPE. A requested stop completes the current iteration,
// runs every on_stop hook (a snapshot saves there), finalizes, and then
// stop_trigger() is true and run_iteration throws StopRequested.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/training/stop_on_signal.hpp>

#include <sys/wait.h>
#include <unistd.h>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_stop_on_signal {

namespace ext = ppe::training::extensions;
using ppe_test::list_dir;
using ppe_test::TempDir;

namespace {

/// Records the hooks the manager calls, with the iteration.
struct Hooks {
  using extension_concept = ppe::training::extension_tag;
  static auto default_trigger() { return ppe::epochs(1); }
  std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
  void operator()(ppe::training::Manager& m) { log->push_back("call " + std::to_string(m.iteration())); }
  void on_stop(ppe::training::Manager& m) { log->push_back("stop " + std::to_string(m.iteration())); }
  void finalize(ppe::training::Manager& m) { log->push_back("finalize " + std::to_string(m.iteration())); }
};

}  // namespace

TEST_CASE("request_stop inside an iteration: that iteration ends, on_stop and finalize run, then the loop ends") {
  TempDir out;
  Hooks hooks;
  auto log = hooks.log;
  // Epoch-long triggers: the manager skips the dispatch in between (quiet
  // windows), and must still see the request at iteration 3.
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(2, 100).out_dir(out.str()),
                                                  ppe::training::Models{}, ppe::training::Optimizers{}, hooks,
                                                  ext::snapshot());
  int ran = 0;
  while (!manager.stop_trigger()) {
    manager.run_iteration([&] {
      ++ran;
      if (ran == 3) manager.request_stop();
    });
  }
  CHECK(ran == 3);
  CHECK(manager.iteration() == 3);
  CHECK(manager.stopped_on_request());
  CHECK(manager.finalized());
  CHECK(*log == std::vector<std::string>{"stop 3", "finalize 3"});
  CHECK(list_dir(out.path) == std::set<std::string>{"snapshot_iter_3"});
  CHECK_THROWS_AS(manager.run_iteration([] {}), ppe::training::StopRequested);
  CHECK(manager.stop_trigger());
}

TEST_CASE("request_stop between iterations is carried out by the next stop_trigger()") {
  Hooks hooks;
  auto log = hooks.log;
  auto manager = ppe_test::make_manager(2, 4, hooks);
  for (int i = 0; i < 4; ++i) ppe_test::step(manager);  // the epoch trigger fires at 4
  manager.request_stop();
  CHECK(manager.stop_requested());
  CHECK(manager.stop_trigger());
  CHECK(*log == std::vector<std::string>{"call 4", "stop 4", "finalize 4"});
}

TEST_CASE("a snapshot taken by its trigger in the stopping iteration is not taken twice") {
  TempDir out;
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(2, 4).out_dir(out.str()), ppe::training::Models{}, ppe::training::Optimizers{},
      ext::snapshot());
  int writes = 0;
  manager.writer().add_post_save_hook([&](const std::filesystem::path&) { ++writes; });
  for (int i = 0; i < 3; ++i) ppe_test::step(manager);
  manager.run_iteration([&] { manager.request_stop(); });  // iteration 4: the epoch snapshot fires
  CHECK(manager.stopped_on_request());
  CHECK(writes == 1);
  CHECK(list_dir(out.path) == std::set<std::string>{"snapshot_iter_4"});
}

TEST_CASE("StopOnSignal: SIGTERM asks for the stop; the previous handlers come back afterwards") {
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  Hooks hooks;
  auto log = hooks.log;
  auto manager = ppe_test::make_manager(10, 4, hooks);
  {
    ppe::training::StopOnSignal guard(manager);
    CHECK_THROWS_AS(ppe::training::StopOnSignal{manager}, std::logic_error);
    int ran = 0;
    while (!manager.stop_trigger())
      manager.run_iteration([&] {
        if (++ran == 2) ::raise(SIGTERM);
      });
    CHECK(ran == 2);
    CHECK(guard.received() == SIGTERM);
    CHECK(*log == std::vector<std::string>{"stop 2", "finalize 2"});
  }
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  CHECK((after.sa_handler == before.sa_handler));
  // Another one may be installed now.
  auto other = ppe_test::make_manager(1, 1);
  ppe::training::StopOnSignal again(other, {SIGUSR2});
  CHECK_THROWS_WITH_AS(ppe::training::StopOnSignal(other, {SIGUSR1}), doctest::Contains("another StopOnSignal"),
                       std::logic_error);
}

TEST_CASE("StopOnSignal: a bad signal number is an error and installs nothing") {
  auto manager = ppe_test::make_manager(1, 1);
  CHECK_THROWS_WITH_AS(ppe::training::StopOnSignal(manager, {SIGUSR1, 9999}),
                       doctest::Contains("cannot handle signal 9999: not a signal number"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ppe::training::StopOnSignal(manager, {SIGKILL}), doctest::Contains("cannot handle signal 9"),
                       std::invalid_argument);
  struct sigaction now {};
  ::sigaction(SIGUSR1, nullptr, &now);
  CHECK((now.sa_handler == SIG_DFL));
}

TEST_CASE("StopOnSignal: the same signal twice restores its default meaning (a second Ctrl-C ends the process)") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto manager = ppe_test::make_manager(1, 1);
    ppe::training::StopOnSignal guard(manager, {SIGUSR1});
    ::raise(SIGUSR1);  // first: a stop request
    ::raise(SIGUSR1);  // second: the default action, which terminates
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGUSR1);
}

}  // namespace ppe_test_training_tests_test_stop_on_signal
