// Port of PPE's tests/.../training_tests/test_trigger_util.py (get_trigger):
// in C++ the trigger forms are types, converted by as_trigger.
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_trigger_util {

namespace tr = ppe::training;

namespace {
template <class T>
std::vector<bool> run(T trigger) {
  auto m = ppe_test::make_manager(100, 2);
  std::vector<bool> out;
  for (int i = 0; i < 7; ++i) {
    ppe_test::step(m);
    out.push_back(trigger(m));
  }
  return out;
}
constexpr bool F = false, T = true;
}  // namespace

TEST_CASE("trigger forms, PPE's table with iters_per_epoch=2") {
  CHECK(run(tr::as_trigger(tr::triggers::NeverTrigger{})) == std::vector<bool>{F, F, F, F, F, F, F});
  CHECK(run(tr::as_trigger(ppe::iterations(2))) == std::vector<bool>{F, T, F, T, F, T, F});
  CHECK(run(tr::as_trigger(ppe::epochs(2))) == std::vector<bool>{F, F, F, T, F, F, F});
  CHECK(run(tr::as_trigger(tr::triggers::IntervalTrigger(2, "iteration"))) ==
        std::vector<bool>{F, T, F, T, F, T, F});
  CHECK(run(tr::as_trigger([](const tr::Manager& m) { return m.iteration() == 3; })) ==
        std::vector<bool>{F, F, T, F, F, F, F});
  CHECK(run(tr::triggers::AnyTrigger(ppe::iterations(2))) == std::vector<bool>{F, T, F, T, F, T, F});
}

TEST_CASE("AnyTrigger forwards look-ahead, state and training length") {
  tr::triggers::AnyTrigger t(ppe::epochs(1.5));
  CHECK(t.may_fire(3, 2));
  CHECK_FALSE(t.may_fire(2, 2));
  CHECK(t.state_dict() == ppe::State::dict());
  CHECK(t.training_length() == tr::TrainingLength{1.5, tr::Unit::Epoch});
  CHECK_FALSE(t.finished());
  CHECK(t.target<tr::triggers::IntervalTrigger>() != nullptr);
  tr::triggers::AnyTrigger copy = t;
  CHECK(copy.target<tr::triggers::IntervalTrigger>() != t.target<tr::triggers::IntervalTrigger>());
}

}  // namespace ppe_test_training_tests_test_trigger_util
