// Port of PPE's tests/.../triggers_tests/test_schedule_trigger.py.
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_schedule_trigger {

using ppe::training::Unit;
using ppe::training::triggers::ManualScheduleTrigger;

namespace {
struct Case {
  std::int64_t ipe;
  std::vector<double> points;
  const char* unit;
  std::vector<bool> expected;
  std::size_t resume;
};
// PPE's table, verbatim (a single point is written as a one-element list).
const std::vector<Case> kCases = {
    {2, {2}, "iteration", {false, true, false, false, false, false, false}, 3},
    {2, {2, 4}, "iteration", {false, true, false, true, false, false, false}, 3},
    {3, {1}, "epoch", {false, false, true, false, false, false, false}, 3},
    {3, {1, 2}, "epoch", {false, false, true, false, false, true, false}, 4},
    {2, {1.5}, "epoch", {false, false, true, false, false, false, false}, 4},
    {2, {1.5, 2.5}, "epoch", {false, false, true, false, true, false, false}, 4},
};
}  // namespace

TEST_CASE("ManualScheduleTrigger fires as PPE's table says") {
  for (const auto& c : kCases) {
    CAPTURE(c.ipe);
    CAPTURE(c.unit);
    auto manager = ppe_test::make_manager(100, c.ipe);
    ManualScheduleTrigger t(c.points, c.unit);
    for (bool e : c.expected) {
      ppe_test::step(manager);
      CAPTURE(manager.iteration());
      CHECK(t.may_fire(manager.iteration(), c.ipe) == e);
      CHECK(t(manager) == e);
    }
  }
}

TEST_CASE("ManualScheduleTrigger resumes from its (empty) state") {
  for (const auto& c : kCases) {
    CAPTURE(c.ipe);
    CHECK(ManualScheduleTrigger(c.points, c.unit).state_dict() == ppe::State::dict());
    ppe_test::check_resumed_table([&] { return ManualScheduleTrigger(c.points, c.unit); }, 100, c.ipe, c.expected, c.resume);
  }
}

TEST_CASE("ManualScheduleTrigger's single-point constructors match the list form") {
  // (2, (1.5, "epoch")) of PPE's table with the point given as a number.
  auto manager = ppe_test::make_manager(100, 2);
  ManualScheduleTrigger a(1.5, "epoch");
  ManualScheduleTrigger b(1.5, Unit::Epoch);
  ManualScheduleTrigger c(std::vector<double>{1.5}, Unit::Epoch);
  const std::vector<bool> expected = {false, false, true, false, false, false, false};
  for (bool e : expected) {
    ppe_test::step(manager);
    CHECK(a(manager) == e);
    CHECK(b(manager) == e);
    CHECK(c(manager) == e);
  }
}

TEST_CASE("ManualScheduleTrigger truncates p * epoch_len as Python's int()") {
  // ipe 3: int(0.5 * 3) = int(1.5) = 1, int(0.9 * 3) = int(2.7) = 2, int(1.2 * 3) = int(3.6) = 3.
  ManualScheduleTrigger t({0.5, 0.9, 1.2}, "epoch");
  CHECK(t.fires(1, 3));
  CHECK(t.fires(2, 3));
  CHECK(t.fires(3, 3));
  CHECK_FALSE(t.fires(4, 3));
  // Unsorted and duplicate points: int(2 * 2) = 4 and int(2.2 * 2) = int(4.4) = 4 (one firing).
  ManualScheduleTrigger u({2.2, 1, 2}, "epoch");
  std::vector<std::int64_t> fired;
  for (std::int64_t it = 1; it <= 8; ++it)
    if (u.fires(it, 2)) fired.push_back(it);
  CHECK(fired == std::vector<std::int64_t>{2, 4});
}

TEST_CASE("ManualScheduleTrigger's cached schedule agrees with the pure rule under jumps and new epoch lengths") {
  const std::vector<std::vector<double>> schedules = {{1}, {0.5, 1.5, 2.25}, {3, 7, 7, 12}, {0.1, 0.123, 4.9}};
  for (const auto& points : schedules) {
    for (auto unit : {Unit::Iteration, Unit::Epoch}) {
      bool whole = true;
      for (double p : points) whole = whole && p == std::floor(p);
      if (unit == Unit::Iteration && !whole) continue;
      ManualScheduleTrigger t(points, unit);
      std::int64_t it = 0;
      for (int k = 0; k < 300; ++k) {
        const std::int64_t len = k < 150 ? 17 : 5;
        it = (k % 41 == 40) ? it / 3 : it + 1;  // occasional backward jump
        CAPTURE(it);
        CAPTURE(len);
        // Recompute the rule independently: int(p * L) == it, or p == it.
        bool expected = false;
        for (double p : points)
          expected = expected || (unit == Unit::Epoch ? static_cast<std::int64_t>(p * static_cast<double>(len)) == it
                                                      : p == static_cast<double>(it));
        CHECK(t.may_fire(it, len) == expected);
        CHECK(t.fires(it, len) == expected);
      }
    }
  }
}

TEST_CASE("ManualScheduleTrigger's training length is its last point") {
  CHECK(ManualScheduleTrigger({3, 10, 7}, "iteration").training_length() ==
        ppe::training::TrainingLength{10, Unit::Iteration});
  CHECK(ManualScheduleTrigger(2.5, "epoch").training_length() == ppe::training::TrainingLength{2.5, Unit::Epoch});
}

TEST_CASE("ManualScheduleTrigger rejects bad arguments, naming them") {
  CHECK_THROWS_WITH_AS(ManualScheduleTrigger(1, "day"), doctest::Contains("'day'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ManualScheduleTrigger(std::vector<double>{}, "epoch"), doctest::Contains("points"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ManualScheduleTrigger({1, -2}, "epoch"), doctest::Contains("points[1] = -2"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ManualScheduleTrigger(std::nan(""), "epoch"), doctest::Contains("points[0] = nan"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ManualScheduleTrigger(2.5, "iteration"), doctest::Contains("points[0] = 2.5"),
                       std::invalid_argument);
}

TEST_CASE("ManualScheduleTrigger drives an extension in a manager") {
  auto manager = ppe_test::make_manager(
      100, 4, ppe::training::make_extension([](ppe::training::Manager& m) { ppe::reporting::report({{"it", m.iteration()}}); },
                                            ManualScheduleTrigger({0.5, 1.25}, "epoch")));
  // ipe 4: int(0.5 * 4) = 2, int(1.25 * 4) = 5.
  std::vector<std::int64_t> fired;
  for (int i = 0; i < 8; ++i) {
    ppe_test::step(manager);
    if (manager.observation().contains("it")) fired.push_back(manager.iteration());
  }
  CHECK(fired == std::vector<std::int64_t>{2, 5});
}

}  // namespace ppe_test_training_tests_triggers_tests_test_schedule_trigger
