// Port of PPE's tests/.../triggers_tests/test_early_stopping_trigger.py.
#include <sstream>

#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_early_stopping_trigger {

using ppe::training::triggers::EarlyStoppingMode;
using ppe::training::triggers::EarlyStoppingOptions;
using ppe::training::triggers::EarlyStoppingTrigger;

namespace {
// PPE's _test_trigger: an empty iteration, then the observation is set to
// {key: float32 tensor(value)}, then the trigger is asked.
template <class M>
void drive(M& manager, EarlyStoppingTrigger& trigger, const std::string& key, const std::vector<double>& values,
           const std::vector<bool>& expected) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    ppe_test::step(manager);
    manager.observation().set(key, torch::tensor(static_cast<float>(values[i])));
    CAPTURE(i);
    CHECK(trigger(manager) == expected[i]);
  }
}

/// Redirects std::cout while alive.
struct CoutCapture {
  std::ostringstream out;
  std::streambuf* previous;
  CoutCapture() : previous(std::cout.rdbuf(out.rdbuf())) {}
  ~CoutCapture() { std::cout.rdbuf(previous); }
};

constexpr bool T = true, F = false;
}  // namespace

TEST_CASE("EarlyStoppingTrigger with accuracy (max mode under auto)") {
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(
      EarlyStoppingOptions().monitor("main/accuracy").patience(3).check_trigger(ppe::epochs(1)).verbose(false));
  CHECK(t.maximizes());
  drive(manager, t, "main/accuracy", {0.5, 0.5, 0.6, 0.7, 0.6, 0.4, 0.3, 0.2}, {F, F, F, F, F, F, T, T});
}

TEST_CASE("EarlyStoppingTrigger with loss (min mode under auto)") {
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(EarlyStoppingOptions().monitor("main/loss").patience(3).check_trigger(ppe::epochs(1)));
  CHECK_FALSE(t.maximizes());
  drive(manager, t, "main/loss", {100, 80, 30, 10, 20, 24, 30, 35}, {F, F, F, F, F, F, T, T});
}

TEST_CASE("EarlyStoppingTrigger fires at max_trigger in epochs") {
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(EarlyStoppingOptions()
                             .monitor("main/loss")
                             .patience(3)
                             .check_trigger(ppe::epochs(1))
                             .max_trigger(ppe::epochs(3)));
  drive(manager, t, "main/loss", {100, 80, 30}, {F, F, T});
}

TEST_CASE("EarlyStoppingTrigger fires at max_trigger in iterations") {
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(EarlyStoppingOptions()
                             .monitor("main/loss")
                             .patience(3)
                             .check_trigger(ppe::epochs(1))
                             .max_trigger(ppe::iterations(3)));
  drive(manager, t, "main/loss", {100, 80, 30}, {F, F, T});
}

TEST_CASE("EarlyStoppingTrigger saves best, count and summary (PPE saves nothing)") {
  // The loss row of PPE's table, resumed after 5 checks. Checks: 100 (best),
  // 80 (best), 30 (best), 10 (best), 20 (count 1) -> best 10, count 1.
  const std::vector<double> values = {100, 80, 30, 10, 20, 24, 30, 35};
  const std::vector<bool> expected = {F, F, F, F, F, F, T, T};
  const auto opts = EarlyStoppingOptions().monitor("main/loss").patience(3);
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(opts);
  drive(manager, t, "main/loss", {values.begin(), values.begin() + 5}, {expected.begin(), expected.begin() + 5});
  CHECK(t.best() == 10);
  CHECK(t.count() == 1);
  const ppe::State state = t.state_dict();
  CHECK(state.at("best").as_double() == 10);
  CHECK(state.at("count").as_int() == 1);
  CHECK(state.contains("_summary"));
  CHECK(state.contains("interval_trigger"));
  CHECK(state.contains("max_trigger"));

  EarlyStoppingTrigger restored(opts);
  restored.load_state_dict(state);
  CHECK(restored.best() == 10);
  CHECK(restored.count() == 1);
  // 24 (count 2), 30 (count 3 -> stop), 35 (count 4): PPE's expected tail.
  drive(manager, restored, "main/loss", {values.begin() + 5, values.end()}, {expected.begin() + 5, expected.end()});
}

TEST_CASE("EarlyStoppingTrigger resumed in the middle of a check interval keeps the partial mean") {
  // Checks every 2 iterations, patience 2, loss per iteration 10, 20 | 0, 20 | 40, 40.
  // Iteration 2: mean (10 + 20) / 2 = 15 -> best 15. Resume after iteration 3
  // (0 in the summary). Iteration 4: mean (0 + 20) / 2 = 10 < 15 -> best 10,
  // count 0. (Without the saved summary the mean would be 20: count 1.)
  // Iteration 6: mean 40 -> count 1, no stop (it would stop with count 2).
  const std::vector<double> values = {10, 20, 0, 20, 40, 40};
  const std::vector<bool> expected = {F, F, F, F, F, F};
  const auto opts = EarlyStoppingOptions().check_trigger(ppe::iterations(2)).patience(2);
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(opts);
  drive(manager, t, "main/loss", {values.begin(), values.begin() + 3}, {expected.begin(), expected.begin() + 3});
  EarlyStoppingTrigger restored(opts);
  restored.load_state_dict(t.state_dict());
  drive(manager, restored, "main/loss", {values.begin() + 3, values.begin() + 4}, {F});
  CHECK(restored.best() == 10);
  CHECK(restored.count() == 0);
  drive(manager, restored, "main/loss", {values.begin() + 4, values.end()}, {F, F});
  CHECK(restored.count() == 1);
}

TEST_CASE("EarlyStoppingTrigger loads PPE's empty state as nothing to restore") {
  EarlyStoppingTrigger t;
  t.load_state_dict(ppe::State::dict());
  CHECK(t.count() == 0);
  CHECK(t.best() == std::numeric_limits<double>::infinity());
}

TEST_CASE("EarlyStoppingTrigger: a monitor never reported by a check is an error naming the keys present") {
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(EarlyStoppingOptions().patience(1));
  ppe_test::step(manager);
  manager.observation().set("main/accuracy", 0.5);
  CHECK_THROWS_WITH_AS(t(manager),
                       doctest::Contains("Key \"main/loss\" not found in the observation (current available keys "
                                         "are ['main/accuracy'])"),
                       std::out_of_range);
}

TEST_CASE("EarlyStoppingTrigger modes") {
  CHECK(EarlyStoppingTrigger(EarlyStoppingOptions().monitor("val/accuracy")).maximizes());
  CHECK_FALSE(EarlyStoppingTrigger(EarlyStoppingOptions().monitor("val/loss")).maximizes());
  CHECK(EarlyStoppingTrigger(EarlyStoppingOptions().monitor("val/loss").mode(EarlyStoppingMode::Max)).maximizes());
  CHECK_FALSE(
      EarlyStoppingTrigger(EarlyStoppingOptions().monitor("val/accuracy").mode(EarlyStoppingMode::Min)).maximizes());
  CHECK(EarlyStoppingTrigger(EarlyStoppingOptions().mode(EarlyStoppingMode::Max)).best() ==
        -std::numeric_limits<double>::infinity());
}

TEST_CASE("EarlyStoppingTrigger's look-ahead and training length") {
  EarlyStoppingTrigger t(EarlyStoppingOptions().check_trigger(ppe::epochs(1)).max_trigger(ppe::iterations(3)));
  CHECK(t.may_fire(3, 10));  // max_trigger fires at 3, between checks
  CHECK_FALSE(t.may_fire(4, 10));
  CHECK(t.may_fire(10, 10));  // a check
  CHECK(t.training_length() == ppe::training::TrainingLength{3, ppe::training::Unit::Iteration});
  CHECK(EarlyStoppingTrigger().training_length() == ppe::training::TrainingLength{100, ppe::training::Unit::Epoch});
}

TEST_CASE("EarlyStoppingTrigger verbose output") {
  CoutCapture out;
  auto manager = ppe_test::make_manager(100, 1);
  EarlyStoppingTrigger t(EarlyStoppingOptions().patience(1).verbose(true));
  // Loss 5 then 6: the second check does not improve, count 1 = patience at iteration (epoch) 2.
  drive(manager, t, "main/loss", {5, 6}, {F, T});
  CHECK(out.out.str() == "early stopping: operator is less\nEpoch 2: early stopping\n");
}

TEST_CASE("EarlyStoppingTrigger rejects patience < 1, naming it") {
  CHECK_THROWS_WITH_AS(EarlyStoppingTrigger(EarlyStoppingOptions().patience(0)), doctest::Contains("patience"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(EarlyStoppingTrigger(EarlyStoppingOptions().patience(-3)), doctest::Contains("-3"),
                       std::invalid_argument);
}

TEST_CASE("EarlyStoppingTrigger stops a manager's training") {
  // Loss 5, 4, 4, 4, ... with patience 2: iteration 1 best 5, 2 best 4,
  // 3 count 1, 4 count 2 -> stop after iteration 4.
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(100, 1), ppe::training::Models{}, ppe::training::Optimizers{},
      ppe::training::stop_when(EarlyStoppingTrigger(EarlyStoppingOptions().patience(2))));
  const std::vector<double> losses = {5, 4, 4, 4, 4, 4, 4, 4};
  while (!manager.stop_trigger()) {
    REQUIRE(manager.iteration() < static_cast<std::int64_t>(losses.size()));
    const double loss = losses[static_cast<std::size_t>(manager.iteration())];
    manager.run_iteration([&] { ppe::reporting::report({{"main/loss", loss}}); });
  }
  CHECK(manager.iteration() == 4);
  CHECK(manager.finalized());
}

}  // namespace ppe_test_training_tests_triggers_tests_test_early_stopping_trigger
