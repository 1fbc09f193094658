// Port of PPE's tests/.../triggers_tests/test_time_trigger.py.
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_time_trigger {

using ppe::training::triggers::TimeTrigger;

namespace {
/// PPE's DummyTrainer: only a settable elapsed time.
struct ClockOnlyManager {
  double elapsed = 0;
  double elapsed_time() const { return elapsed; }
};
}  // namespace

TEST_CASE("TimeTrigger fires once per period, strictly after the deadline") {
  TimeTrigger t(1);
  ClockOnlyManager m;
  CHECK_FALSE(t(m));
  m.elapsed = 0.9;
  CHECK_FALSE(t(m));
  // The first event is due at time 1.0.
  m.elapsed = 1.2;
  CHECK(t(m));
  m.elapsed = 1.3;
  CHECK_FALSE(t(m));
  // The second is due at 2.0 (not 2.2).
  m.elapsed = 2.1;
  CHECK(t(m));
}

TEST_CASE("TimeTrigger resumes from its deadline") {
  TimeTrigger t(1);
  ClockOnlyManager m;
  m.elapsed = 1.2;
  CHECK(t(m));
  CHECK(t.next_time() == 2.0);
  const ppe::State state = t.state_dict();
  CHECK(state == ppe::State::dict({{"next_time", 2.0}}));
  TimeTrigger t2(1);
  t2.load_state_dict(state);
  CHECK(t2.next_time() == 2.0);
  m.elapsed = 1.9;
  CHECK_FALSE(t2(m));
  m.elapsed = 2.05;
  CHECK(t2(m));
}

TEST_CASE("TimeTrigger is strict at the deadline and catches up one period per call") {
  TimeTrigger t(1);
  ClockOnlyManager m;
  m.elapsed = 1.0;  // not < 1.0
  CHECK_FALSE(t(m));
  // After a pause to 3.5 the deadlines 1, 2, 3 have passed: three calls fire
  // (next_time 1 -> 2 -> 3 -> 4), the fourth does not (4 < 3.5 is false).
  m.elapsed = 3.5;
  CHECK(t(m));
  CHECK(t(m));
  CHECK(t(m));
  CHECK_FALSE(t(m));
  CHECK(t.next_time() == 4.0);
}

TEST_CASE("TimeTrigger reads the manager's elapsed time") {
  ppe_test::FakeClock clock;
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(100, 10).clock(clock.fn()),
                                                  ppe::training::Models{}, ppe::training::Optimizers{});
  TimeTrigger t(0.5);
  ppe_test::step(manager);  // starts the manager at clock time 0
  CHECK_FALSE(t(manager));
  clock.set(0.6);
  CHECK(t(manager));  // 0.5 < 0.6; next deadline 1.0
  clock.set(0.9);
  CHECK_FALSE(t(manager));
}

TEST_CASE("TimeTrigger rejects a bad period, naming it") {
  CHECK_THROWS_WITH_AS(TimeTrigger(0), doctest::Contains("period"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TimeTrigger(-2.5), doctest::Contains("-2.5"), std::invalid_argument);
  CHECK_THROWS_AS(TimeTrigger{std::numeric_limits<double>::infinity()}, std::invalid_argument);
}

}  // namespace ppe_test_training_tests_triggers_tests_test_time_trigger
