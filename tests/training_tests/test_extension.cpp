// Port of PPE's tests/.../training_tests/test_extension.py, plus the static
// checks of the extension protocol (concepts, traits, make_extension).
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_extension {

namespace tr = ppe::training;

namespace {
struct MyExtension {
  using extension_concept = tr::extension_tag;
  void operator()(tr::Manager&) {}
};
struct Full {
  using extension_concept = tr::extension_tag;
  static constexpr std::string_view default_name = "full";
  static constexpr int priority = tr::kPriorityWriter;
  static constexpr bool needs_model_state = true;
  static auto default_trigger() { return ppe::epochs(2); }
  void operator()(tr::Manager&) {}
  void initialize(tr::Manager&) {}
  void finalize(tr::Manager&) {}
  void on_error(tr::Manager&, std::exception_ptr) {}
  ppe::State state_dict() const { return ppe::State::dict(); }
  void load_state_dict(const ppe::State&) {}
};
struct OnlyState {
  using extension_concept = tr::extension_tag;
  ppe::State state_dict() const { return {}; }
};
struct NotOptedIn {
  void operator()(tr::Manager&) {}
};
struct Misspelled {
  using extension_concept = tr::extension_tag;
  void initialise(tr::Manager&) {}  // British spelling: matches no hook
};
}  // namespace

// Concepts: one per hook, opt-in required.
static_assert(tr::extension<MyExtension>);
static_assert(tr::extension<Full>);
static_assert(tr::extension<OnlyState>);
static_assert(!tr::extension<NotOptedIn>);
static_assert(!tr::extension<Misspelled>);
static_assert(tr::opts_in<Misspelled> && !tr::hooks::any<Misspelled>);
static_assert(tr::hooks::call<Full> && tr::hooks::initialize<Full> && tr::hooks::finalize<Full> &&
              tr::hooks::on_error<Full> && tr::hooks::state_dict<Full> && tr::hooks::load_state_dict<Full>);
static_assert(tr::hooks::call<MyExtension> && !tr::hooks::initialize<MyExtension> &&
              !tr::hooks::state_dict<MyExtension>);
static_assert(!tr::hooks::call<OnlyState> && tr::hooks::state_dict<OnlyState>);
// Triggers.
static_assert(tr::trigger<tr::triggers::IntervalTrigger>);
static_assert(tr::trigger<tr::triggers::AnyTrigger>);
static_assert(!tr::trigger<int>);
static_assert(tr::trigger_hooks::may_fire<tr::triggers::IntervalTrigger>);
static_assert(tr::trigger_hooks::training_length<tr::triggers::IntervalTrigger>);

TEST_CASE("extension traits: defaults follow PPE, the default name is the type's name") {
  using T = tr::extension_traits<MyExtension>;
  CHECK(T::default_name() == "MyExtension");
  CHECK(T::priority() == tr::kPriorityReader);
  CHECK_FALSE(T::needs_model_state());
  auto trig = T::default_trigger();
  CHECK(trig.period() == 1);
  CHECK(trig.unit() == tr::Unit::Iteration);

  using F = tr::extension_traits<Full>;
  CHECK(F::default_name() == "full");
  CHECK(F::priority() == 300);
  CHECK(F::needs_model_state());
  CHECK(F::default_trigger().unit() == tr::Unit::Epoch);
  CHECK(F::default_trigger().period() == 2);
}

TEST_CASE("priority constants are PPE's") {
  CHECK(tr::kPriorityWriter == 300);
  CHECK(tr::kPriorityEditor == 200);
  CHECK(tr::kPriorityReader == 100);
  CHECK(tr::kPrioritySnapshot == -100);
}

TEST_CASE("make_extension: given attributes, and PPE's defaults") {
  int initialized = 0;
  (void)initialized;
  auto e = tr::make_extension([](tr::Manager&) {}, ppe::epochs(2), "my_ext", tr::priority<50>);
  CHECK(e.name == "my_ext");
  CHECK(decltype(e)::priority == 50);
  CHECK(e.trigger.period() == 2);
  CHECK(e.trigger.unit() == tr::Unit::Epoch);

  auto d = tr::make_extension([](tr::Manager&) {});
  CHECK(d.name.empty());  // the manager names it "extension" (PPE: the function's name)
  CHECK(decltype(d)::priority == tr::kPriorityReader);
  CHECK(d.trigger.period() == 1);
  CHECK(d.trigger.unit() == tr::Unit::Iteration);

  auto m = ppe_test::make_manager(1, 2, tr::make_extension([](tr::Manager&) {}),
                                  tr::make_extension([](tr::Manager&) {}));
  CHECK(m.extension_names() == std::vector<std::string>{"extension", "extension_1"});
}

namespace {
struct Hooks {
  using extension_concept = tr::extension_tag;
  static constexpr int priority = 7;
  std::vector<std::string>* log;
  void operator()(tr::Manager&) { log->push_back("call"); }
  void initialize(tr::Manager&) { log->push_back("init"); }
  void finalize(tr::Manager&) { log->push_back("final"); }
  void on_error(tr::Manager&, std::exception_ptr) { log->push_back("error"); }
  ppe::State state_dict() const { return ppe::State::dict({{"k", 1}}); }
  void load_state_dict(const ppe::State& s) { log->push_back("load" + std::to_string(s.at("k").as_int())); }
};
}  // namespace

TEST_CASE("AnyExtension keeps the static traits and reaches every hook") {
  std::vector<std::string> log;
  tr::AnyExtension any(Hooks{&log});
  CHECK(any.default_name() == "Hooks");
  CHECK(any.priority() == 7);
  CHECK(any.target<Hooks>() != nullptr);
  CHECK(any.target<MyExtension>() == nullptr);
  CHECK(any.state_dict().at("k").as_int() == 1);
  any.load_state_dict(ppe::State::dict({{"k", 5}}));

  auto m = ppe_test::make_manager(1, 1);
  m.extend(std::move(any));
  CHECK_THROWS(m.run_iteration([] { throw std::runtime_error("x"); }));
  ppe_test::step(m);
  CHECK(log == std::vector<std::string>{"load5", "init", "error", "call", "final"});
}

}  // namespace ppe_test_training_tests_test_extension
