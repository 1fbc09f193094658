// any_of / all_of / || / && (ours: PPE has no trigger combinators).
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_triggers_tests_test_combinators {

namespace tr = ppe::training::triggers;
using ppe::training::Manager;
// ADL finds the operators for our trigger types; the test's own trigger types
// (below) live outside ppe::training::triggers, so bring them in.
using ppe::training::triggers::operator||;
using ppe::training::triggers::operator&&;

namespace {
/// A trigger answering a fixed value, counting its evaluations.
struct Fixed {
  bool value;
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  bool operator()(const Manager&) {
    ++*calls;
    return value;
  }
  bool may_fire(std::int64_t, std::int64_t) const noexcept { return value; }
};

/// Counts calls; fires on every call.
struct Counting {
  int calls = 0;
  template <class M>
  bool operator()(const M&) {
    return ++calls > 0;
  }
  ppe::State state_dict() const { return ppe::State::dict({{"calls", calls}}); }
  void load_state_dict(const ppe::State& s) { calls = static_cast<int>(s.at("calls").as_int()); }
};

/// No optional hooks at all.
struct Bare {
  bool operator()(const Manager&) { return true; }
};
}  // namespace

// The operators take our trigger types only; bool and bool-convertible types keep built-in meaning.
static_assert(tr::detail::composable_trigger<tr::IntervalTrigger>);
static_assert(tr::detail::composable_trigger<Fixed&>);
static_assert(!tr::detail::composable_trigger<bool>);
static_assert(!tr::detail::composable_trigger<std::function<bool(const Manager&)>>);
static_assert(!tr::detail::composable_trigger<decltype([](const Manager&) { return true; })>);
static_assert(std::is_same_v<decltype(true || false), bool>);
static_assert(std::is_same_v<decltype(ppe::epochs(1) || ppe::iterations(3)),
                             tr::AnyOf<tr::IntervalTrigger, tr::IntervalTrigger>>);
static_assert(std::is_same_v<decltype(ppe::epochs(1) && tr::OnceTrigger()), tr::AllOf<tr::IntervalTrigger, tr::OnceTrigger>>);
static_assert(ppe::training::trigger<tr::AnyOf<Fixed, Bare>>);
static_assert(ppe::training::trigger_hooks::finished<tr::AllOf<Bare>>);

TEST_CASE("any_of / all_of truth tables") {
  auto manager = ppe_test::make_manager(100, 1);
  for (bool a : {false, true}) {
    for (bool b : {false, true}) {
      for (bool c : {false, true}) {
        CAPTURE(a);
        CAPTURE(b);
        CAPTURE(c);
        auto any = tr::any_of(Fixed{a}, Fixed{b}, Fixed{c});
        auto all = tr::all_of(Fixed{a}, Fixed{b}, Fixed{c});
        CHECK(any(manager) == (a || b || c));
        CHECK(all(manager) == (a && b && c));
        CHECK(any.may_fire(1, 1) == (a || b || c));
        CHECK(all.may_fire(1, 1) == (a && b && c));
        auto or2 = Fixed{a} || Fixed{b};
        auto and2 = Fixed{a} && Fixed{b};
        CHECK(or2(manager) == (a || b));
        CHECK(and2(manager) == (a && b));
      }
    }
  }
}

TEST_CASE("Combinators evaluate every part on every call (no short-circuit)") {
  auto manager = ppe_test::make_manager(100, 1);
  Fixed t{true}, f{false}, t2{true}, f2{false};
  // The parts are copies sharing the counters.
  auto any = t || f;   // the first part already decides: the second must still run
  auto all = f2 && t2;  // likewise
  for (int i = 0; i < 5; ++i) {
    CHECK(any(manager));
    CHECK_FALSE(all(manager));
  }
  CHECK(*t.calls == 5);
  CHECK(*f.calls == 5);
  CHECK(*f2.calls == 5);
  CHECK(*t2.calls == 5);

  // Stateful parts advance together: an OnceTrigger behind a firing interval still gets consumed.
  auto once_or = ppe::iterations(1) || tr::OnceTrigger();
  CHECK(once_or(manager));
  CHECK(once_or.part<1>().finished());
}

TEST_CASE("Combinators of interval triggers in a manager") {
  // ipe 4: epochs(1) fires at 4, 8; iterations(3) at 3, 6. Any: 3, 4, 6, 8. All of
  // epochs(1) and iterations(2): 4, 8.
  auto manager = ppe_test::make_manager(100, 4);
  auto any = ppe::epochs(1) || ppe::iterations(3);
  auto all = tr::all_of(ppe::epochs(1), ppe::iterations(2));
  std::vector<std::int64_t> any_fired, all_fired;
  for (int i = 0; i < 8; ++i) {
    ppe_test::step(manager);
    if (any(manager)) any_fired.push_back(manager.iteration());
    if (all(manager)) all_fired.push_back(manager.iteration());
  }
  CHECK(any_fired == std::vector<std::int64_t>{3, 4, 6, 8});
  CHECK(all_fired == std::vector<std::int64_t>{4, 8});
}

TEST_CASE("any_of accepts callables and drives an extension") {
  int runs = 0;
  auto manager = ppe_test::make_manager(
      100, 10,
      ppe::training::make_extension([&runs](Manager&) { ++runs; },
                                    tr::any_of([](const Manager& m) { return m.iteration() == 2; },
                                               ppe::iterations(5))));
  for (int i = 0; i < 10; ++i) ppe_test::step(manager);
  CHECK(runs == 3);  // iterations 2, 5, 10
}

TEST_CASE("Combinator state is {\"0\": ..., \"1\": ...} and round-trips") {
  auto manager = ppe_test::make_manager(100, 1);
  auto t = tr::any_of(Counting{}, tr::OnceTrigger(), Bare{});
  for (int i = 0; i < 3; ++i) t(manager);
  const ppe::State state = t.state_dict();
  CHECK(state == ppe::State::dict({{"0", ppe::State::dict({{"calls", 3}})},
                                   {"1", ppe::State::dict({{"_flag_first", false}})},
                                   {"2", ppe::State::dict()}}));
  auto restored = tr::any_of(Counting{}, tr::OnceTrigger(), Bare{});
  restored.load_state_dict(state);
  CHECK(restored.part<0>().calls == 3);
  CHECK(restored.part<1>().finished());
  CHECK(restored.state_dict() == state);
  // Nested: a || b || c nests as any_of(any_of(a, b), c).
  auto nested = Counting{} || Counting{} || tr::OnceTrigger();
  nested(manager);
  CHECK(nested.state_dict().at("0").at("1").at("calls").as_int() == 1);
  // A missing part is an error naming the key.
  CHECK_THROWS_WITH_AS(restored.load_state_dict(ppe::State::dict({{"0", ppe::State::dict({{"calls", 1}})}})),
                       doctest::Contains("'1'"), ppe::StateError);
}

TEST_CASE("Combinator training length is the first part's that has one") {
  CHECK(tr::any_of(Bare{}, ppe::epochs(3), ppe::iterations(7)).training_length() ==
        ppe::training::TrainingLength{3, ppe::training::Unit::Epoch});
  CHECK(tr::all_of(Bare{}, Fixed{true}).training_length() == std::nullopt);
}

TEST_CASE("Combinator finished: AnyOf when all parts are, AllOf when any part is") {
  auto manager = ppe_test::make_manager(100, 1);
  auto any = tr::OnceTrigger() || tr::OnceTrigger(true);
  auto all = tr::OnceTrigger() && Bare{};
  CHECK_FALSE(any.finished());
  CHECK_FALSE(all.finished());
  CHECK(any(manager));
  CHECK(all(manager));
  CHECK(any.finished());
  CHECK(all.finished());
  // Parts without the hook never finish.
  CHECK_FALSE(tr::any_of(Bare{}, tr::OnceTrigger()).finished());
  // A part without may_fire counts as "may fire".
  CHECK(tr::all_of(Bare{}, ppe::iterations(2)).may_fire(2, 1));
  CHECK_FALSE(tr::all_of(Bare{}, ppe::iterations(2)).may_fire(3, 1));
}

}  // namespace ppe_test_training_tests_triggers_tests_test_combinators
