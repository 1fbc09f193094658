// Port of PPE's tests/.../triggers_tests/test_interval_trigger.py.
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_interval_trigger {

using ppe::training::triggers::IntervalTrigger;

namespace {
struct Case {
  std::int64_t ipe;
  double period;
  const char* unit;
  std::vector<bool> expected;
  std::size_t resume;
};
// PPE's table, verbatim.
const std::vector<Case> kCases = {
    {5, 2, "iteration", {false, true, false, true, false, true, false}, 4},
    {1, 3, "epoch", {false, false, true, false, false, true, false}, 4},
    {2, 1.5, "epoch", {false, false, true, false, false, true, false}, 4},
    {3, 1.5, "epoch", {false, false, false, false, true, false, false, false, true}, 4},
};
}  // namespace

TEST_CASE("IntervalTrigger fires as PPE's table says") {
  for (const auto& c : kCases) {
    CAPTURE(c.ipe);
    CAPTURE(c.period);
    auto manager = ppe_test::make_manager(100, c.ipe);
    IntervalTrigger t(c.period, c.unit);
    for (bool e : c.expected) {
      ppe_test::step(manager);
      CHECK(t.may_fire(manager.iteration(), c.ipe) == e);
      CHECK(t(manager) == e);
    }
  }
}

TEST_CASE("IntervalTrigger resumes from its (empty) state") {
  for (const auto& c : kCases) {
    CAPTURE(c.ipe);
    CHECK(IntervalTrigger(c.period, c.unit).state_dict() == ppe::State::dict());
    ppe_test::check_resumed_table([&] { return IntervalTrigger(c.period, c.unit); }, 100, c.ipe, c.expected, c.resume);
  }
}

TEST_CASE("IntervalTrigger str is Python's") {
  CHECK(IntervalTrigger(2, "iteration").str() == "IntervalTrigger(2, 'iteration')");
  CHECK(IntervalTrigger(1.5, "epoch").str() == "IntervalTrigger(1.5, 'epoch')");
}

TEST_CASE("IntervalTrigger rejects bad arguments, naming them") {
  CHECK_THROWS_WITH_AS(IntervalTrigger(1, "day"), doctest::Contains("'day'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(IntervalTrigger(0, "iteration"), doctest::Contains("period"), std::invalid_argument);
  CHECK_THROWS_AS(IntervalTrigger(-1.5, "epoch"), std::invalid_argument);
}

TEST_CASE("IntervalTrigger's cached next firing agrees with the pure rule under jumps") {
  // Arbitrary (also backward) iteration sequences and epoch lengths: the fast
  // path must give exactly may_fire's answer.
  for (double period : {1.0, 2.0, 3.0, 0.5, 1.5, 0.123, 7.3}) {
    for (auto unit : {ppe::training::Unit::Iteration, ppe::training::Unit::Epoch}) {
      IntervalTrigger t(period, unit);
      std::int64_t it = 0;
      for (int k = 0; k < 400; ++k) {
        const std::int64_t len = k < 200 ? 17 : 5;
        it = (k % 97 == 96) ? it / 3 : it + 1;  // occasional backward jump
        CAPTURE(period);
        CAPTURE(it);
        CHECK(t.fires(it, len) == t.may_fire(it, len));
      }
    }
  }
}

TEST_CASE("ppe::iterations and ppe::epochs make interval triggers") {
  auto a = ppe::iterations(3);
  CHECK(a.unit() == ppe::training::Unit::Iteration);
  CHECK(a.period() == 3);
  auto b = ppe::epochs(0.5);
  CHECK(b.unit() == ppe::training::Unit::Epoch);
  CHECK(b.training_length() == ppe::training::TrainingLength{0.5, ppe::training::Unit::Epoch});
}

TEST_CASE("IntervalTrigger does not skip a firing iteration when the division rounds up") {
  // epochs(0.123) with 100 iterations per epoch: period 12.3 iterations; first
  // evaluated at 492 (as after a resume), 493 = ceil(40 * 12.3) must fire.
  IntervalTrigger t(0.123, ppe::training::Unit::Epoch);
  CHECK(t.fires(492, 100) == t.may_fire(492, 100));
  CHECK(t.may_fire(493, 100));
  CHECK(t.fires(493, 100));
}

}  // namespace ppe_test_training_tests_triggers_tests_test_interval_trigger
