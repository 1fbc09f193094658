// Port of PPE's tests/.../triggers_tests/test_once_trigger.py.
#include <random>

#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_once_trigger {

using ppe::training::triggers::OnceTrigger;

namespace {
struct Case {
  std::int64_t ipe;
  bool call_on_resume;
  std::size_t resume;
};
// PPE's parameters, verbatim.
const std::vector<Case> kCases = {{5, false, 4}, {5, true, 4}};
}  // namespace

static_assert(ppe::training::trigger_hooks::finished<OnceTrigger>);
static_assert(ppe::training::trigger<OnceTrigger>);

TEST_CASE("OnceTrigger fires on its first evaluation, before any iteration") {
  for (const auto& c : kCases) {
    CAPTURE(c.call_on_resume);
    const std::vector<bool> expected = {true, false, false, false, false, false, false};
    const std::vector<bool> finished = {false, true, true, true, true, true, true};
    auto manager = ppe_test::make_manager(100, c.ipe);
    OnceTrigger t(c.call_on_resume);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(t.finished() == finished[i]);
      CHECK(t(manager) == expected[i]);
      ppe_test::step(manager);
    }
  }
}

TEST_CASE("OnceTrigger resumed: fires again only with call_on_resume") {
  for (const auto& c : kCases) {
    CAPTURE(c.call_on_resume);
    std::vector<bool> expected = {true, false, false, false, false, false, false};
    std::vector<bool> finished = {false, true, true, true, true, true, true};
    if (c.call_on_resume) {
      expected[c.resume] = true;
      finished[c.resume] = false;
    }
    auto manager = ppe_test::make_manager(100, c.ipe);
    OnceTrigger t(c.call_on_resume);
    for (std::size_t i = 0; i < c.resume; ++i) {
      ppe_test::step(manager);
      CHECK(t.finished() == finished[i]);
      CHECK(t(manager) == expected[i]);
    }
    const ppe::State state = t.state_dict();
    CHECK(state == ppe::State::dict({{"_flag_first", false}}));
    OnceTrigger t2(c.call_on_resume);
    t2.load_state_dict(state);
    for (std::size_t i = c.resume; i < expected.size(); ++i) {
      ppe_test::step(manager);
      CHECK(t2.finished() == finished[i]);
      CHECK(t2(manager) == expected[i]);
    }
  }
}

TEST_CASE("OnceTrigger evaluated on random iterations fires once, at its first evaluation") {
  std::mt19937 rng(20240229);  // fixed seed: the test is deterministic
  for (const auto& c : kCases) {
    CAPTURE(c.call_on_resume);
    const std::vector<bool> expected = {true, false, false, false, false, false, false};
    const std::vector<bool> finished = {false, true, true, true, true, true, true};
    int evaluations = 0;
    for (int rep = 0; rep < 10; ++rep) {
      auto manager = ppe_test::make_manager(100, c.ipe);
      OnceTrigger t(c.call_on_resume);
      bool accumulated = false;
      bool accumulated_finished = true;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        manager.run_iteration([&] {
          accumulated = accumulated || expected[i];
          accumulated_finished = accumulated_finished && finished[i];
          if (rng() % 2) {
            ++evaluations;
            CHECK(t.finished() == accumulated_finished);
            CHECK(t(manager) == accumulated);
            accumulated = false;
            accumulated_finished = true;
          }
        });
      }
    }
    CHECK(evaluations > 0);
  }
}

TEST_CASE("OnceTrigger's may_fire is the correct look-ahead (PPE's is inverted)") {
  OnceTrigger t;
  CHECK(t.may_fire(1, 5));
  auto manager = ppe_test::make_manager(100, 5);
  CHECK(t(manager));
  CHECK_FALSE(t.may_fire(2, 5));
  CHECK_FALSE(t(manager));

  OnceTrigger resumed(/*call_on_resume=*/true);
  resumed.load_state_dict(ppe::State::dict({{"_flag_first", false}}));
  CHECK(resumed.may_fire(7, 5));
  CHECK(resumed(manager));
  CHECK_FALSE(resumed.may_fire(8, 5));
}

TEST_CASE("OnceTrigger runs its extension once in a manager") {
  int calls = 0;
  auto manager = ppe_test::make_manager(
      100, 5, ppe::training::make_extension([&calls](ppe::training::Manager&) { ++calls; }, OnceTrigger()));
  for (int i = 0; i < 6; ++i) ppe_test::step(manager);
  CHECK(calls == 1);
}

}  // namespace ppe_test_training_tests_triggers_tests_test_once_trigger
