// Port of PPE's tests/.../triggers_tests/test_minmax_value_trigger.py.
#include <cmath>

#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_minmax_value_trigger {

using ppe::training::triggers::BestValueTrigger;
using ppe::training::triggers::IntervalTrigger;
using ppe::training::triggers::MaxValueTrigger;
using ppe::training::triggers::MinValueTrigger;

namespace {
constexpr const char* kKey = "main/accuracy";

enum class Kind { Max, Min, Best };
struct Case {
  Kind kind;
  double period;
  const char* unit;
  std::int64_t ipe;
  std::vector<double> values;
  std::vector<bool> expected;
  std::size_t resume;
};
constexpr bool T = true, F = false;
const std::vector<double> kValues = {0.5, 0.5, 0.5, 0.5, 0.4, 0.4, 0.6, 0.6};
// PPE's table, verbatim.
const std::vector<Case> kCases = {
    // interval = 1 iteration
    {Kind::Max, 1, "iteration", 1, {0.5, 0.5, 0.4, 0.6}, {T, F, F, T}, 1},
    {Kind::Min, 1, "iteration", 1, {0.5, 0.5, 0.4, 0.6}, {T, F, T, F}, 1},
    // interval = 2 iterations
    {Kind::Max, 2, "iteration", 1, kValues, {F, T, F, F, F, F, F, T}, 2},
    {Kind::Min, 2, "iteration", 1, kValues, {F, T, F, F, F, T, F, F}, 2},
    // interval = 2 iterations, unaligned resume
    {Kind::Max, 2, "iteration", 1, kValues, {F, T, F, F, F, F, F, T}, 3},
    {Kind::Min, 2, "iteration", 1, kValues, {F, T, F, F, F, T, F, F}, 3},
    // interval = 1 epoch, 1 epoch = 2 iterations
    {Kind::Max, 1, "epoch", 2, kValues, {F, T, F, F, F, F, F, T}, 2},
    {Kind::Min, 1, "epoch", 2, kValues, {F, T, F, F, F, T, F, F}, 2},
    // interval = 1 epoch, 1 epoch = 2 iterations, unaligned resume
    {Kind::Max, 1, "epoch", 2, kValues, {F, T, F, F, F, F, F, T}, 3},
    {Kind::Min, 1, "epoch", 2, kValues, {F, T, F, F, F, T, F, F}, 3},
    // BestValueTrigger with |new| < |best|
    {Kind::Best, 1, "iteration", 2, {0.5, -0.5, -0.6, 0.6, 0.4, -0.4, -0.3, 0.3}, {T, F, F, F, T, F, T, F}, 3},
};

// PPE's _compare(best_value, new_value).
bool abs_compare(double best, double value) { return std::abs(value) < std::abs(best); }

// Calls f with a freshly made trigger of the case's kind (each kind is its own type).
template <class G>
void with_trigger(const Case& c, G&& g) {
  IntervalTrigger interval(c.period, c.unit);
  switch (c.kind) {
    case Kind::Max: g([=] { return MaxValueTrigger(kKey, interval); }); break;
    case Kind::Min: g([=] { return MinValueTrigger(kKey, interval); }); break;
    case Kind::Best: g([=] { return BestValueTrigger(kKey, &abs_compare, interval); }); break;
  }
}

// PPE's _test_trigger: the value is reported inside the iteration, then the trigger is asked.
template <class M, class Tr>
void drive(M& manager, Tr& trigger, const Case& c, std::size_t from, std::size_t to, bool as_tensor) {
  for (std::size_t i = from; i < to; ++i) {
    manager.run_iteration([&] {
      if (as_tensor)
        ppe::reporting::report({{kKey, torch::tensor(c.values[i], torch::kDouble)}});
      else
        ppe::reporting::report({{kKey, c.values[i]}});
    });
    CAPTURE(i);
    CHECK(trigger(manager) == c.expected[i]);
  }
}
}  // namespace

TEST_CASE("Max/Min/BestValueTrigger fire as PPE's table says") {
  for (bool as_tensor : {false, true}) {
    for (std::size_t k = 0; k < kCases.size(); ++k) {
      const Case& c = kCases[k];
      CAPTURE(k);
      CAPTURE(as_tensor);
      with_trigger(c, [&](auto make) {
        auto manager = ppe_test::make_manager(100, c.ipe);
        auto trigger = make();
        drive(manager, trigger, c, 0, c.values.size(), as_tensor);
      });
    }
  }
}

TEST_CASE("Max/Min/BestValueTrigger resume, also in the middle of an interval") {
  for (bool as_tensor : {false, true}) {
    for (std::size_t k = 0; k < kCases.size(); ++k) {
      const Case& c = kCases[k];
      CAPTURE(k);
      CAPTURE(as_tensor);
      with_trigger(c, [&](auto make) {
        auto manager = ppe_test::make_manager(100, c.ipe);
        auto trigger = make();
        drive(manager, trigger, c, 0, c.resume, as_tensor);
        const ppe::State state = trigger.state_dict();
        auto restored = make();
        restored.load_state_dict(state);
        drive(manager, restored, c, c.resume, c.values.size(), as_tensor);
      });
    }
  }
}

TEST_CASE("BestValueTrigger's state has PPE's layout, partial summary included") {
  // Max over 2 iterations, resumed after 3 (the unaligned row): iteration 2 closed
  // the first interval with mean (0.5 + 0.5) / 2 = 0.5, iteration 3 left 0.5 in the summary.
  auto manager = ppe_test::make_manager(100, 1);
  MaxValueTrigger t(kKey, ppe::iterations(2));
  CHECK(t.state_dict().at("_best_value").is_none());
  for (int i = 0; i < 3; ++i) {
    manager.run_iteration([] { ppe::reporting::report({{kKey, 0.5}}); });
    t(manager);
  }
  const ppe::State s = t.state_dict();
  CHECK(s.at("interval_trigger") == ppe::State::dict());
  CHECK(s.at("_best_value").as_double() == 0.5);
  const ppe::State& summary = s.at("_summary").at(kKey);
  CHECK(summary.at("_x").as_double() == 0.5);
  CHECK(summary.at("_n").as_double() == 1.0);
  CHECK(t.best_value() == 0.5);
}

TEST_CASE("BestValueTrigger restores the partial summary of an unfinished interval") {
  // Max over 2 iterations, values 0.5, 0.5 | 0.9, 0.3, resumed after iteration 3.
  // Iteration 2: mean 0.5 -> fires (first). Iteration 4: mean (0.9 + 0.3) / 2 = 0.6
  // > 0.5 -> fires. Had the 0.9 been lost at the resume, the mean would be 0.3: no fire.
  // (PPE's table cannot tell: its values come in equal pairs.)
  for (bool as_tensor : {false, true}) {
    CAPTURE(as_tensor);
    const Case c{Kind::Max, 2, "iteration", 1, {0.5, 0.5, 0.9, 0.3}, {F, T, F, T}, 3};
    auto manager = ppe_test::make_manager(100, 1);
    MaxValueTrigger t(kKey, ppe::iterations(2));
    drive(manager, t, c, 0, c.resume, as_tensor);
    MaxValueTrigger restored(kKey, ppe::iterations(2));
    restored.load_state_dict(t.state_dict());
    drive(manager, restored, c, c.resume, c.values.size(), as_tensor);
    CHECK(restored.best_value().value() == doctest::Approx(0.6));
  }
}

TEST_CASE("Max/MinValueTrigger are strict and default to a one-epoch interval") {
  MaxValueTrigger max(kKey);
  MinValueTrigger min(kKey);
  CHECK(max.interval_trigger().training_length() ==
        ppe::training::TrainingLength{1, ppe::training::Unit::Epoch});
  auto manager = ppe_test::make_manager(100, 1);
  for (double v : {3.0, 3.0}) {
    manager.run_iteration([&] { ppe::reporting::report({{kKey, v}}); });
    const bool first = !max.best_value().has_value();
    CHECK(max(manager) == first);  // a tie does not fire
    CHECK(min(manager) == first);
  }
  CHECK(max.may_fire(2, 1));
  MaxValueTrigger every_two(kKey, ppe::iterations(2));
  CHECK_FALSE(every_two.may_fire(3, 1));
  CHECK(every_two.may_fire(4, 1));
}

TEST_CASE("BestValueTrigger: a key never reported is an error naming it and the keys present") {
  auto manager = ppe_test::make_manager(100, 1);
  MaxValueTrigger t(kKey, ppe::iterations(2));
  manager.run_iteration([] { ppe::reporting::report({{"main/loss", 1.0}, {"lr", 0.1}}); });
  CHECK_FALSE(t(manager));  // the interval does not fire at iteration 1: no error yet
  manager.run_iteration([] { ppe::reporting::report({{"main/loss", 1.0}, {"lr", 0.1}}); });
  CHECK_THROWS_WITH_AS(t(manager),
                       doctest::Contains("Key \"main/accuracy\" not found in the observation (current available keys "
                                         "are ['main/loss', 'lr'])"),
                       std::out_of_range);
}

TEST_CASE("BestValueTrigger: a key whose values are not scalars is reported as such") {
  auto manager = ppe_test::make_manager(100, 1);
  MaxValueTrigger t(kKey, ppe::iterations(1));
  manager.run_iteration([] { ppe::reporting::report({{kKey, torch::ones({2})}}); });
  CHECK_THROWS_WITH_AS(t(manager), doctest::Contains("not scalars"), std::out_of_range);
}

TEST_CASE("BestValueTrigger reads no tensor on the host until its interval fires") {
  // Tensors on the meta device have no data: reading one would throw. Two
  // iterations of a three-iteration interval accumulate them without a read.
  auto manager = ppe_test::make_manager(100, 1);
  MaxValueTrigger t(kKey, ppe::iterations(3));
  for (int i = 0; i < 2; ++i) {
    manager.run_iteration(
        [] { ppe::reporting::report({{kKey, torch::empty({}, torch::TensorOptions().device(torch::kMeta))}}); });
    bool fired = true;
    CHECK_NOTHROW(fired = t(manager));
    CHECK_FALSE(fired);
  }
}

}  // namespace ppe_test_training_tests_triggers_tests_test_minmax_value_trigger
