// Port of PPE's tests/.../triggers_tests/test_function_trigger.py. PPE passes
// args/kwargs to the function; here the callable captures them.
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_function_trigger {

using ppe::training::triggers::FunctionTrigger;
using ppe::training::triggers::IntervalTrigger;

TEST_CASE("FunctionTrigger calls the function only when asked, with its captured arguments") {
  struct Call {
    int arg;
    std::string a;
  };
  std::vector<Call> calls;
  constexpr int arg = 7;
  const std::string kwarg = "b";
  FunctionTrigger trigger(
      [&calls, kwarg] {
        calls.push_back({arg, kwarg});
        return false;
      },
      ppe::iterations(1));
  CHECK(calls.empty());  // not called at construction
  auto manager = ppe_test::make_manager(1, 10);
  ppe_test::step(manager);
  trigger(manager);
  REQUIRE(calls.size() == 1);  // called exactly once, with what it captured
  CHECK(calls[0].arg == 7);
  CHECK(calls[0].a == "b");
}

TEST_CASE("FunctionTrigger returns the function's value") {
  struct {
    bool value = false;
  } flags;
  FunctionTrigger trigger([&flags] { return flags.value; }, ppe::iterations(1));
  auto manager = ppe_test::make_manager(1, 10);
  ppe_test::step(manager);
  CHECK_FALSE(trigger(manager));
  flags.value = true;
  CHECK(trigger(manager));
}

TEST_CASE("FunctionTrigger with an always-true function fires exactly as its interval") {
  struct Case {
    double period;
    const char* unit;
    std::int64_t ipe;
  };
  // PPE's parameters, verbatim.
  for (const Case& c : {Case{1, "iteration", 10}, Case{1, "epoch", 20}, Case{0.123, "epoch", 17}}) {
    CAPTURE(c.period);
    CAPTURE(c.unit);
    IntervalTrigger trigger(c.period, c.unit);
    auto manager = ppe_test::make_manager(10, c.ipe);
    FunctionTrigger function_trigger([] { return true; }, IntervalTrigger(c.period, c.unit));
    int iterations = 0;
    while (!manager.stop_trigger()) {
      ppe_test::step(manager);
      ++iterations;
      CHECK(trigger(manager) == function_trigger(manager));
    }
    CHECK(iterations == 10 * c.ipe);  // max_epochs 10
  }
}

TEST_CASE("FunctionTrigger's default interval is every iteration; the function is not called between firings") {
  int calls = 0;
  FunctionTrigger every([&calls] { return ++calls > 0; });
  CHECK(every.interval_trigger().training_length() ==
        ppe::training::TrainingLength{1, ppe::training::Unit::Iteration});
  FunctionTrigger sparse([&calls] { return ++calls > 0; }, ppe::iterations(3));
  auto manager = ppe_test::make_manager(100, 10);
  for (int i = 0; i < 6; ++i) {
    ppe_test::step(manager);
    sparse(manager);
  }
  CHECK(calls == 2);  // iterations 3 and 6
}

TEST_CASE("FunctionTrigger's may_fire asks the function when the interval may fire (PPE)") {
  int calls = 0;
  bool answer = false;
  FunctionTrigger t(
      [&] {
        ++calls;
        return answer;
      },
      ppe::iterations(2));
  CHECK_FALSE(t.may_fire(1, 10));
  CHECK(calls == 0);
  CHECK_FALSE(t.may_fire(2, 10));
  CHECK(calls == 1);
  answer = true;
  CHECK(t.may_fire(4, 10));
  CHECK(calls == 2);
}

TEST_CASE("FunctionTrigger saves its interval's state") {
  FunctionTrigger t([] { return true; }, ppe::training::triggers::OnceTrigger());
  auto manager = ppe_test::make_manager(100, 10);
  CHECK(t(manager));
  const ppe::State state = t.state_dict();
  CHECK(state == ppe::State::dict({{"interval_trigger", ppe::State::dict({{"_flag_first", false}})}}));
  FunctionTrigger t2([] { return true; }, ppe::training::triggers::OnceTrigger());
  t2.load_state_dict(state);
  CHECK_FALSE(t2(manager));
}

}  // namespace ppe_test_training_tests_triggers_tests_test_function_trigger
