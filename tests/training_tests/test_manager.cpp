// Port of PPE's tests/.../training_tests/test_manager.py, plus the parts of
// the manager contract that are ours (static entries, runtime interleaving,
// snapshot deferral, elapsed time across state).
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_manager {

namespace tr = ppe::training;

namespace {

// Records its id when called; the Init variant also records in initialize.
struct Rec {
  using extension_concept = tr::extension_tag;
  int id;
  std::vector<int>* calls;
  void operator()(tr::Manager&) { calls->push_back(id); }
};
struct RecInit {
  using extension_concept = tr::extension_tag;
  int id;
  std::vector<int>* calls;
  std::vector<int>* inits;
  void operator()(tr::Manager&) { calls->push_back(id); }
  void initialize(tr::Manager&) { inits->push_back(id); }
};

struct Counter {
  using extension_concept = tr::extension_tag;
  int calls = 0, errors = 0, finals = 0;
  void operator()(tr::Manager&) { ++calls; }
  void on_error(tr::Manager&, std::exception_ptr) { ++errors; }
  void finalize(tr::Manager&) { ++finals; }
};

struct Stateful {
  using extension_concept = tr::extension_tag;
  static constexpr std::string_view default_name = "extension_name";
  std::int64_t value = 0;
  int loads = 0;
  void operator()(tr::Manager& m) { value = m.iteration() * 10; }
  ppe::State state_dict() const { return ppe::State::dict({{"value", value}}); }
  void load_state_dict(const ppe::State& s) {
    value = s.at("value").as_int();
    ++loads;
  }
};

}  // namespace

TEST_CASE("manager status: epoch and epoch_detail") {
  auto m = ppe_test::make_manager(10, 4);
  m.set_iteration(9);
  CHECK(m.epoch() == 2);
  CHECK(m.epoch_detail() == 2.25);
  m.set_iteration(15);
  CHECK(m.epoch() == 3);
  CHECK(m.epoch_detail() == 3.75);
  CHECK_THROWS_AS(m.set_iteration(-1), std::invalid_argument);
}

TEST_CASE("iters_per_epoch below 1 and a missing max_epochs are clear errors") {
  CHECK_THROWS_WITH_AS(ppe_test::make_manager(10, 0), doctest::Contains("iters_per_epoch must be an integer >= 1"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ppe_test::make_manager(0, 3), doctest::Contains("max_epochs"), std::invalid_argument);
}

// PPE's test_extensions_manager_extensions: priorities, initialize order,
// call_before_training, through runtime extend().
TEST_CASE("extension order, initialize and call_before_training (runtime extend)") {
  std::vector<int> calls, inits;
  auto m = ppe_test::make_manager(5, 4);
  m.extend(Rec{0, &calls}, std::nullopt, "ext0", 2, true);
  m.extend(RecInit{1, &calls, &inits}, std::nullopt, "ext1", 1, false);
  m.extend(Rec{2, &calls}, std::nullopt, "ext2", 3, false);
  m.extend(RecInit{3, &calls, &inits}, std::nullopt, "ext3", 0, true);
  m.extend(RecInit{4, &calls, &inits}, std::nullopt, "ext4", 4, true);
  m.extend(tr::make_extension([&](tr::Manager&) { calls.push_back(5); }, ppe::iterations(1), "ext5",
                              tr::priority<-1>, tr::call_before_training));
  m.extend(tr::entry(Rec{6, &calls}, ppe::iterations(1), "ext6", tr::priority<-3>, tr::call_before_training));
  // An entry whose name, priority and flag are overridden by extend's arguments.
  auto e7 = tr::entry(Rec{7, &calls}, ppe::iterations(1), "ext7_", tr::priority<-2>, tr::call_before_training);
  m.extend(std::move(e7.extension), std::move(e7.trigger), "ext7", -4, false);

  CHECK(m.get_extension<Rec>("ext0").id == 0);
  CHECK(m.get_extension<RecInit>("ext4").id == 4);
  CHECK(m.get_extension<Rec>("ext6").id == 6);
  CHECK(m.get_extension<Rec>("ext7").id == 7);
  CHECK_THROWS_WITH_AS(m.get_extension<Rec>("ext10"), doctest::Contains("'ext10' not found"), std::out_of_range);
  CHECK_THROWS_WITH_AS(m.get_extension<RecInit>("ext0"), doctest::Contains("is a Rec"), std::invalid_argument);

  for (int it = 0; it < 20; ++it) {
    m.run_iteration([&] {
      CHECK(m.iteration() == it);
      if (it == 0) {
        CHECK(calls == std::vector<int>{4, 0, 3, 5, 6});
        CHECK(inits == std::vector<int>{4, 1, 3});
      } else {
        CHECK(calls.empty());
        CHECK(inits.empty());
      }
      calls.clear();
      inits.clear();
    });
    CHECK(calls == std::vector<int>{4, 2, 0, 1, 3, 5, 6, 7});
    calls.clear();
  }
}

TEST_CASE("extension order with static entries matches the runtime order") {
  std::vector<int> calls, inits;
  auto m = ppe_test::make_manager(
      5, 4, tr::entry(Rec{0, &calls}, ppe::iterations(1), "ext0", tr::priority<2>, tr::call_before_training),
      tr::entry(RecInit{1, &calls, &inits}, ppe::iterations(1), "ext1", tr::priority<1>),
      tr::entry(Rec{2, &calls}, ppe::iterations(1), "ext2", tr::priority<3>),
      tr::entry(RecInit{3, &calls, &inits}, ppe::iterations(1), "ext3", tr::priority<0>, tr::call_before_training),
      tr::entry(RecInit{4, &calls, &inits}, ppe::iterations(1), "ext4", tr::priority<4>, tr::call_before_training),
      tr::make_extension([&](tr::Manager&) { calls.push_back(5); }, ppe::iterations(1), "ext5", tr::priority<-1>,
                         tr::call_before_training),
      tr::entry(Rec{6, &calls}, ppe::iterations(1), "ext6", tr::priority<-3>, tr::call_before_training),
      tr::entry(Rec{7, &calls}, ppe::iterations(1), "ext7", tr::priority<-4>, false));
  m.run_iteration([&] {
    CHECK(calls == std::vector<int>{4, 0, 3, 5, 6});
    CHECK(inits == std::vector<int>{4, 1, 3});
    calls.clear();
  });
  CHECK(calls == std::vector<int>{4, 2, 0, 1, 3, 5, 6, 7});
  CHECK(m.extension_names() == std::vector<std::string>{"ext0", "ext1", "ext2", "ext3", "ext4", "ext5", "ext6", "ext7"});
}

TEST_CASE("static entries: descending priority, ties in the order given") {
  std::vector<int> calls;
  auto m = ppe_test::make_manager(5, 4, tr::entry(Rec{0, &calls}, ppe::iterations(1), "a", tr::priority<100>),
                                  tr::entry(Rec{1, &calls}, ppe::iterations(1), "b", tr::priority<300>),
                                  tr::entry(Rec{2, &calls}, ppe::iterations(1), "c", tr::priority<100>),
                                  tr::entry(Rec{3, &calls}, ppe::iterations(1), "d", tr::priority<300>),
                                  tr::entry(Rec{4, &calls}, ppe::iterations(1), "e", tr::priority<0>),
                                  tr::entry(Rec{5, &calls}, ppe::iterations(1), "f", tr::priority<100>));
  ppe_test::step(m);
  CHECK(calls == std::vector<int>{1, 3, 0, 2, 5, 4});
}

TEST_CASE("runtime entries interleave with static entries by priority; ties keep registration order") {
  std::vector<int> calls;
  auto m = ppe_test::make_manager(5, 4, tr::entry(Rec{1, &calls}, ppe::iterations(1), "s300", tr::priority<300>),
                                  tr::entry(Rec{2, &calls}, ppe::iterations(1), "s100", tr::priority<100>),
                                  tr::entry(Rec{3, &calls}, ppe::iterations(1), "s0", tr::priority<0>));
  m.extend(Rec{10, &calls}, std::nullopt, "r200", 200);
  m.extend(Rec{11, &calls}, std::nullopt, "r100", 100);  // after the static 100 (registered later)
  m.extend(Rec{12, &calls}, std::nullopt, "r400", 400);
  m.extend(Rec{13, &calls}, std::nullopt, "r-5", -5);
  m.extend(Rec{14, &calls}, std::nullopt, "r100b", 100);
  ppe_test::step(m);
  CHECK(calls == std::vector<int>{12, 1, 10, 2, 11, 14, 3, 13});
}

TEST_CASE("extend after the start is an error") {
  std::vector<int> calls;
  auto m = ppe_test::make_manager(5, 4);
  ppe_test::step(m);
  CHECK_THROWS_WITH_AS(m.extend(Rec{0, &calls}), doctest::Contains("after the extensions were initialized"),
                       std::logic_error);
}

TEST_CASE("names: defaults, _1/_2 suffixes on the default name, 'training' prohibited") {
  std::vector<int> calls;
  auto m = ppe_test::make_manager(5, 4, Rec{0, &calls}, Rec{1, &calls}, tr::entry(Rec{2, &calls}, ppe::iterations(1), "x"));
  m.extend(Rec{3, &calls});
  m.extend(Rec{4, &calls}, std::nullopt, "x");
  m.extend(Rec{5, &calls}, std::nullopt, "x");
  CHECK(m.extension_names() == std::vector<std::string>{"Rec", "Rec_1", "x", "Rec_2", "x_1", "x_2"});
  CHECK_THROWS_WITH_AS(m.extend(Rec{6, &calls}, std::nullopt, "training"), doctest::Contains("\"training\" is prohibited"),
                       std::invalid_argument);
  CHECK_THROWS_AS(ppe_test::make_manager(5, 4, tr::entry(Rec{0, &calls}, ppe::iterations(1), "training")),
                  std::invalid_argument);
}

TEST_CASE("run_iteration with step_optimizers zero-grads before and steps after the body") {
  auto a = torch::ones({1}, torch::requires_grad());
  torch::optim::SGD sgd({a}, torch::optim::SGDOptions(1.0));
  auto m = tr::ExtensionsManager(ppe_test::options(1, 1), tr::Models{}, sgd);
  m.run_iteration({"main"}, [&] { a.mutable_grad() = torch::tensor({2.0f}); });
  // a = 1 - lr * grad = 1 - 1.0 * 2 = -1
  CHECK(a.item<float>() == -1.0f);
  CHECK_THROWS_WITH_AS(m.run_iteration({"nope"}, [] {}), doctest::Contains("'nope'"), std::out_of_range);
}

namespace {
struct NeedsModel {
  using extension_concept = tr::extension_tag;
  static constexpr bool needs_model_state = true;
  void operator()(tr::Manager&) {}
};
template <int P>
struct TouchesModels {
  using extension_concept = tr::extension_tag;
  static constexpr int priority = P;
  void operator()(tr::Manager& m) { (void)m.models(); }
};
}  // namespace

TEST_CASE("needs_state_this_iteration follows the may_fire of model-state extensions") {
  auto m = ppe_test::make_manager(1, 100, tr::entry(NeedsModel{}, ppe::iterations(50)));
  while (!m.finalized()) {
    m.run_iteration([&] {
      const bool expected = m.iteration() == 49 || m.iteration() == 99;
      CHECK(m.needs_state_this_iteration() == expected);
    });
  }
}

TEST_CASE("extensions without needs_model_state cannot access the models") {
  torch::nn::Linear model(1, 1);
  auto m1 = tr::ExtensionsManager(ppe_test::options(1, 10), model, tr::Optimizers{}, TouchesModels<tr::kPriorityReader>{});
  CHECK_THROWS_WITH_AS(m1.run_iteration([] {}), doctest::Contains("needs_model_state"), std::logic_error);
  auto m2 = tr::ExtensionsManager(ppe_test::options(1, 10), model, tr::Optimizers{}, TouchesModels<tr::kPrioritySnapshot>{});
  CHECK_THROWS_AS(m2.run_iteration([] {}), std::logic_error);
  auto m3 = tr::ExtensionsManager(ppe_test::options(1, 10), model, tr::Optimizers{}, TouchesModels<tr::kPriorityWriter>{});
  CHECK_THROWS_AS(m3.run_iteration([] {}), std::logic_error);
  // With a model-state extension firing in the same iteration, access works.
  auto m4 = tr::ExtensionsManager(ppe_test::options(1, 10), model, tr::Optimizers{}, NeedsModel{},
                                  TouchesModels<tr::kPriorityReader>{});
  CHECK_NOTHROW(m4.run_iteration([] {}));
  CHECK(m4.models().size() == 1);
}

TEST_CASE("the manager finalizes itself when the stop trigger fires") {
  auto m = ppe_test::make_manager(1, 1, Counter{});
  ppe_test::step(m);
  CHECK(m.get_extension<Counter>("Counter").calls == 1);
  CHECK(m.get_extension<Counter>("Counter").finals == 1);
  CHECK(m.finalized());
  CHECK_THROWS_WITH_AS(ppe_test::step(m), doctest::Contains("finalized manager"), std::logic_error);
  m.finalize();  // idempotent
  CHECK(m.get_extension<Counter>("Counter").finals == 1);
}

TEST_CASE("a body exception runs on_error once per manager and is not counted") {
  auto m = ppe_test::make_manager(10, 2, Counter{});
  auto& c = m.get_extension<Counter>("Counter");
  ppe_test::step(m);
  CHECK(c.errors == 0);
  CHECK_THROWS_WITH_AS(m.run_iteration([] { throw std::runtime_error("boom"); }), "boom", std::runtime_error);
  CHECK(c.errors == 1);
  CHECK(m.iteration() == 1);
  CHECK_THROWS_AS(m.run_iteration([] { throw std::runtime_error("again"); }), std::runtime_error);
  CHECK(c.errors == 1);
  CHECK(m.iteration() == 1);
  ppe_test::step(m);  // still usable
  CHECK(m.iteration() == 2);
  CHECK_FALSE(m.finalized());
}

TEST_CASE("an extension exception propagates and runs on_error") {
  struct Thrower {
    using extension_concept = tr::extension_tag;
    void operator()(tr::Manager&) { throw std::runtime_error("from extension"); }
  };
  auto m = ppe_test::make_manager(10, 2, Counter{}, Thrower{});
  CHECK_THROWS_WITH(ppe_test::step(m), "from extension");
  CHECK(m.get_extension<Counter>("Counter").errors == 1);
}

namespace {
// A trigger that counts how often it was evaluated.
struct CountingTrigger {
  int* evaluations;
  bool operator()(const tr::Manager&) {
    ++*evaluations;
    return true;
  }
};
struct SeesEvaluations {
  using extension_concept = tr::extension_tag;
  static constexpr int priority = tr::kPrioritySnapshot;
  int* evaluations;
  std::vector<int> seen;
  void operator()(tr::Manager&) { seen.push_back(*evaluations); }
};
}  // namespace

TEST_CASE("snapshot-priority extensions run after every trigger of the iteration was evaluated") {
  int evaluations = 0;
  std::vector<int> calls;
  // The Rec entry has a lower priority than the snapshot, so without deferral
  // its trigger would not yet have been evaluated when the snapshot runs.
  auto m = ppe_test::make_manager(10, 2, SeesEvaluations{&evaluations, {}},
                                  tr::entry(Rec{1, &calls}, CountingTrigger{&evaluations}, "late", tr::priority<-200>));
  ppe_test::step(m);
  ppe_test::step(m);
  CHECK(m.get_extension<SeesEvaluations>("SeesEvaluations").seen == std::vector<int>{1, 2});
  CHECK(calls == std::vector<int>{1, 1});
}

TEST_CASE("runtime snapshot-priority extensions are deferred too") {
  int evaluations = 0;
  std::vector<int> calls;
  auto m = ppe_test::make_manager(10, 2);
  m.extend(SeesEvaluations{&evaluations, {}});
  m.extend(Rec{1, &calls}, tr::triggers::AnyTrigger(CountingTrigger{&evaluations}), "late", -200);
  ppe_test::step(m);
  CHECK(m.get_extension<SeesEvaluations>("SeesEvaluations").seen == std::vector<int>{1});
}

TEST_CASE("state_dict has PPE's layout") {
  torch::manual_seed(0);
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.25));
  struct Misc {
    double x = 1.5;
    ppe::State state_dict() const { return ppe::State::dict({{"x", x}}); }
    void load_state_dict(const ppe::State& s) { x = s.at("x").as_double(); }
  } misc;
  auto m = tr::ExtensionsManager(ppe_test::options(10, 4), tr::Models{{"model_name", model}},
                                 tr::Optimizers{{"optimizer_name", opt}}, Stateful{});
  m.register_state_object("misc", misc);
  for (int i = 0; i < 11; ++i) ppe_test::step(m);
  ppe::State s = m.state_dict();
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.as_dict()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"_start_iteration", "_start_execution", "models", "optimizers",
                                         "state_objects", "extensions", "ppe_version", "_elapsed_time",
                                         "_stop_trigger", "_composition", "_composition_fingerprint"});
  CHECK(s.at("_composition").as_dict().size() == 1);
  CHECK(s.at("_composition").at("extension_name").as_string().find("Stateful") != std::string::npos);
  CHECK(s.at("_composition_fingerprint").as_string().size() == 16);
  CHECK(s.at("_start_iteration").as_int() == 11);
  CHECK(s.at("_start_execution").as_int() == 11);
  CHECK(s.at("ppe_version").as_string() == std::string(ppe::kVersion));
  CHECK(ppe::serialization::state_equal(s.at("models").at("model_name").at("weight"), ppe::State(model->weight.detach())));
  CHECK(s.at("models").at("model_name").contains("bias"));
  CHECK(s.at("optimizers").at("optimizer_name").at("param_groups").as_list()[0].at("lr").as_double() == 0.25);
  CHECK(s.at("state_objects").at("misc").at("x").as_double() == 1.5);
  CHECK(s.at("extensions").at("extension_name").at("extension").at("value").as_int() == 110);
  CHECK(s.at("extensions").at("extension_name").at("trigger") == ppe::State::dict());

  // Load into a fresh manager: every part is restored once.
  torch::nn::Linear model2(2, 1);
  torch::optim::SGD opt2(model2->parameters(), torch::optim::SGDOptions(0.5));
  Misc misc2{0.0};
  auto m2 = tr::ExtensionsManager(ppe_test::options(10, 4), tr::Models{{"model_name", model2}},
                                  tr::Optimizers{{"optimizer_name", opt2}}, Stateful{});
  m2.register_state_object("misc", misc2);
  m2.load_state_dict(s);
  CHECK(m2.iteration() == 11);
  CHECK(torch::equal(model2->weight, model->weight));
  CHECK(opt2.param_groups()[0].options().get_lr() == 0.25);
  CHECK(misc2.x == 1.5);
  CHECK(m2.get_extension<Stateful>("extension_name").value == 110);
  CHECK(m2.get_extension<Stateful>("extension_name").loads == 1);
}

TEST_CASE("state_dict of a manager with a plain model and optimizer, before training") {
  torch::nn::Linear model(1, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  auto m = tr::ExtensionsManager(ppe_test::options(10, 4), model, opt);
  ppe::State s = m.state_dict();
  CHECK(s.at("_start_iteration").as_int() == 0);
  CHECK(s.at("models").contains("main"));
  CHECK(s.at("optimizers").contains("main"));
  CHECK(s.at("state_objects") == ppe::State::dict());
  CHECK(s.at("extensions") == ppe::State::dict());
}

TEST_CASE("loading a state of another version warns") {
  std::vector<std::string> warnings;
  auto previous = ppe::set_warning_handler([&](std::string_view w) { warnings.emplace_back(w); });
  auto m = ppe_test::make_manager(10, 4);
  ppe::State s = m.state_dict();
  for (const char* v : {"", "0.4.0", "23.0.0"}) {
    warnings.clear();
    ppe::State t = s;
    if (*v)
      t.set("ppe_version", v);
    else
      t.as_dict().erase(t.as_dict().begin() + 6);  // drop ppe_version
    m.load_state_dict(t);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("version") != std::string::npos);
  }
  warnings.clear();
  m.load_state_dict(s);
  CHECK(warnings.empty());
  ppe::set_warning_handler(previous);
}

TEST_CASE("loading a state that lacks a registered part names it") {
  auto m = ppe_test::make_manager(10, 4, Stateful{});
  ppe::State s = ppe_test::make_manager(10, 4).state_dict();
  CHECK_THROWS_WITH_AS(m.load_state_dict(s), doctest::Contains("'extension_name'"), std::invalid_argument);
  torch::nn::Linear a(2, 1), b(3, 1);
  auto ma = tr::ExtensionsManager(ppe_test::options(10, 4), a, tr::Optimizers{});
  auto mb = tr::ExtensionsManager(ppe_test::options(10, 4), b, tr::Optimizers{});
  CHECK_THROWS_WITH_AS(mb.load_state_dict(ma.state_dict()), doctest::Contains("shape mismatch"), std::invalid_argument);
}

namespace {
struct OtherStateful {
  using extension_concept = tr::extension_tag;
  std::int64_t value = 0;
  void operator()(tr::Manager&) {}
  ppe::State state_dict() const { return ppe::State::dict({{"value", value}}); }
  void load_state_dict(const ppe::State& s) { value = s.at("value").as_int(); }
};
}  // namespace

TEST_CASE("the composition fingerprint: a state of another composition names every difference") {
  auto saved = ppe_test::make_manager(10, 4, tr::entry(Stateful{}, ppe::iterations(1), "kept"),
                                      tr::entry(Stateful{}, ppe::iterations(1), "old_name"),
                                      tr::entry(Stateful{}, ppe::iterations(1), "retyped"),
                                      tr::entry(Stateful{}, ppe::iterations(1), "removed"));
  for (int i = 0; i < 3; ++i) ppe_test::step(saved);
  const ppe::State s = saved.state_dict();
  // The same composition has the same fingerprint and loads.
  auto same = ppe_test::make_manager(10, 4, tr::entry(Stateful{}, ppe::iterations(1), "kept"),
                                     tr::entry(Stateful{}, ppe::iterations(1), "old_name"),
                                     tr::entry(Stateful{}, ppe::iterations(1), "retyped"),
                                     tr::entry(Stateful{}, ppe::iterations(1), "removed"));
  CHECK(same.composition_fingerprint() == s.at("_composition_fingerprint").as_string());
  CHECK(same.load_state_dict(s).empty());
  CHECK(same.get_extension<Stateful>("kept").value == 30);

  // Renamed, retyped, removed and added at once.
  auto other = ppe_test::make_manager(10, 4, tr::entry(Stateful{}, ppe::iterations(1), "kept"),
                                      tr::entry(Stateful{}, ppe::iterations(1), "new_name"),
                                      tr::entry(OtherStateful{}, ppe::iterations(1), "retyped"),
                                      tr::entry(OtherStateful{}, ppe::iterations(1), "added"));
  CHECK(other.composition_fingerprint() != s.at("_composition_fingerprint").as_string());
  std::string what;
  try {
    other.load_state_dict(s);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  CHECK(what.find("another composition") != std::string::npos);
  CHECK(what.find("'old_name' (") != std::string::npos);
  CHECK(what.find("is named 'new_name' in the manager (renamed?)") != std::string::npos);
  CHECK(what.find("'retyped' is a ") != std::string::npos);
  CHECK(what.find("OtherStateful in the manager") != std::string::npos);
  CHECK(what.find("'removed' (") != std::string::npos);
  CHECK(what.find("in the state but not in the manager (removed)") != std::string::npos);
  CHECK(what.find("'added' (") != std::string::npos);
  CHECK(what.find("in the manager but not in the state (added)") != std::string::npos);
  CHECK(what.find("allow_composition_change(true)") != std::string::npos);
  CHECK(other.iteration() == 0);  // nothing was loaded
  CHECK(other.get_extension<Stateful>("kept").value == 0);

  // Loading anyway: what matches is loaded, the rest listed as skipped.
  const auto skipped = other.load_state_dict(s, tr::LoadStateOptions().allow_composition_change(true));
  CHECK(skipped.size() == 4);  // renamed, retyped, removed, added
  CHECK(other.iteration() == 3);
  CHECK(other.get_extension<Stateful>("kept").value == 30);
  CHECK(other.get_extension<Stateful>("new_name").value == 0);
  CHECK(other.get_extension<OtherStateful>("retyped").value == 0);
  CHECK(other.get_extension<OtherStateful>("added").value == 0);

  // A state without a composition (PPE's) loads as PPE loads it.
  ppe::State pp = s;
  pp.as_dict().erase(pp.as_dict().end() - 2, pp.as_dict().end());
  REQUIRE(!pp.contains("_composition"));
  CHECK(same.load_state_dict(pp).empty());
}

namespace {
// Reports `key` = 1 in every iteration (an extension, as a model would).
struct Reports {
  using extension_concept = tr::extension_tag;
  static constexpr int priority = tr::kPriorityWriter;
  std::string key;
  void operator()(tr::Manager&) { ppe::reporting::report({{key, 1.0}}); }
};
struct CountErrors {
  using extension_concept = tr::extension_tag;
  int* errors;
  void operator()(tr::Manager&) {}
  void on_error(tr::Manager&, std::exception_ptr) { ++*errors; }
};
}  // namespace

// Reports `key` = 1 once per call, under its own trigger: PPE's evaluator that
// runs every N epochs.
struct Every {
  using extension_concept = tr::extension_tag;
  static constexpr int priority = tr::kPriorityWriter;
  std::string key;
  std::vector<double> values;  // one per call, in turn
  std::size_t next = 0;
  void operator()(tr::Manager&) { ppe::reporting::report({{key, values.at(next++ % values.size())}}); }
};
TEST_CASE("report keys: an evaluator every 2 epochs with PrintReport and LogReport (PPE's shape): blank at epoch 1") {
  namespace ex = ppe::training::extensions;
  std::ostringstream out;
  ppe_test::WarningCollector warnings;
  auto m = tr::ExtensionsManager(
      ppe_test::options(4, 4), tr::Models{}, tr::Optimizers{}, Reports{"main/loss"},
      tr::entry(Every{"val/loss", {0.5}}, ppe::epochs(2), "evaluator"), ex::LogReport(),
      ex::PrintReport({"epoch", "main/loss", "val/loss"}, ex::PrintReportOptions().out(&out)));
  while (!m.stop_trigger()) ppe_test::step(m);  // no error: the key comes at epoch 2
  CHECK(m.iteration() == 16);
  const std::vector<ex::LogEntry> log = m.get_extension<ex::LogReport>("LogReport").log();
  REQUIRE(log.size() == 4);
  CHECK(!log[0].contains("val/loss"));  // epoch 1: absent, as PPE
  CHECK(log[1].contains("val/loss"));
  CHECK(!log[2].contains("val/loss"));
  CHECK(log[3].contains("val/loss"));
  INFO(out.str());
  CHECK(out.str().find("0.5") != std::string::npos);  // printed at epoch 2; epoch 1's cell blank
  CHECK(warnings.messages.empty());  // every key was reported in the run
}

TEST_CASE("report keys: MinValueTrigger on a key reported every 3 epochs fires at its interval, no error") {
  std::vector<std::int64_t> fired_at;
  auto m = tr::ExtensionsManager(
      ppe_test::options(9, 2), tr::Models{}, tr::Optimizers{},
      tr::entry(Every{"val/loss", {3.0, 2.0, 2.5}}, ppe::epochs(3), "evaluator"),
      tr::make_extension([&](tr::Manager& mm) { fired_at.push_back(mm.iteration()); },
                         tr::triggers::MinValueTrigger("val/loss", ppe::epochs(3)), "best"));
  while (!m.stop_trigger()) ppe_test::step(m);
  CHECK(m.iteration() == 18);
  CHECK(fired_at == std::vector<std::int64_t>{6, 12});  // 3.0 (first), 2.0 (better); 2.5 is not
}

TEST_CASE("report keys: a misspelled key is named with the keys present when its reader needs it; columns warn") {
  namespace ex = ppe::training::extensions;
  std::ostringstream out;
  int errors = 0;
  ppe_test::WarningCollector warnings;
  auto m = tr::ExtensionsManager(
      ppe_test::options(10, 4), tr::Models{}, tr::Optimizers{}, Reports{"main/loss"},
      tr::entry(Reports{"val/loss"}, ppe::epochs(1), "evaluator"),
      ex::LogReport(),
      ex::PrintReport({"epoch", "main/loss", "val/loss", "val/acuracy"}, ex::PrintReportOptions().out(&out)),
      tr::entry(ex::MinValue("val/los", ppe::epochs(3)), ppe::epochs(3), "best"),
      tr::entry(CountErrors{&errors}, tr::triggers::MinValueTrigger("mian/loss", ppe::epochs(5)), "watch"));
  for (int i = 0; i < 11; ++i) ppe_test::step(m);  // the first epochs pass: no reader needed a missing key yet
  std::string what;
  try {
    ppe_test::step(m);  // epoch 3: 'best' needs 'val/los'
  } catch (const std::out_of_range& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(m.iteration() == 12);
  CHECK(what.find("\"val/los\" not found") != std::string::npos);
  CHECK(what.find("'main/loss'") != std::string::npos);  // the keys present
  CHECK(what.find("'val/loss'") != std::string::npos);
  CHECK(errors == 1);  // on_error ran once
  CHECK(warnings.messages.empty());  // a display column never raises

  // A column that is never filled in a whole run is a warning at its end,
  // naming it, its reader and the keys reported.
  auto shown = tr::ExtensionsManager(ppe_test::options(2, 4), tr::Models{}, tr::Optimizers{}, Reports{"main/loss"},
                                     ex::LogReport(),
                                     ex::PrintReport({"epoch", "main/loss", "val/acuracy"}, ex::PrintReportOptions().out(&out)));
  while (!shown.stop_trigger()) ppe_test::step(shown);
  CHECK(shown.iteration() == 8);
  INFO(warnings.all());
  REQUIRE(warnings.messages.size() == 1);
  CHECK(warnings.messages[0].find("'val/acuracy', read by 'PrintReport'") != std::string::npos);
  CHECK(warnings.messages[0].find("Keys reported: ['main/loss']") != std::string::npos);
}

TEST_CASE("report keys: no warning when every key was reported, or with check_report_keys(false)") {
  namespace ex = ppe::training::extensions;
  std::ostringstream out;
  ppe_test::WarningCollector warnings;
  auto ok = tr::ExtensionsManager(ppe_test::options(3, 4), tr::Models{}, tr::Optimizers{}, Reports{"main/loss"},
                                  ex::LogReport(), ex::PrintReport({"epoch", "main/loss"}, ex::PrintReportOptions().out(&out)));
  while (!ok.stop_trigger()) ppe_test::step(ok);
  CHECK(ok.iteration() == 12);

  auto off = tr::ExtensionsManager(ppe_test::options(3, 4).check_report_keys(false), tr::Models{}, tr::Optimizers{},
                                   ex::LogReport(), ex::PrintReport({"epoch", "val/loss"}, ex::PrintReportOptions().out(&out)));
  while (!off.stop_trigger()) ppe_test::step(off);
  CHECK(off.iteration() == 12);
  CHECK(warnings.messages.empty());

  // A runtime extension's keys are covered as well.
  auto rt = ppe_test::make_manager(2, 4);
  int unused = 0;
  rt.extend(tr::AnyExtension(CountErrors{&unused}), tr::triggers::AnyTrigger(tr::triggers::MaxValueTrigger("val/acc", ppe::epochs(3))),
            "runtime");
  while (!rt.stop_trigger()) ppe_test::step(rt);
  REQUIRE(warnings.messages.size() == 1);
  CHECK(warnings.messages[0].find("'val/acc', read by the trigger of 'runtime'") != std::string::npos);
}

TEST_CASE("elapsed_time: an error before the start, continues across state") {
  ppe_test::FakeClock clock;
  auto m = tr::ExtensionsManager(ppe_test::options(10, 4).clock(clock.fn()), tr::Models{}, tr::Optimizers{});
  CHECK_THROWS_WITH_AS(m.elapsed_time(), doctest::Contains("unavailable"), std::logic_error);
  clock.set(100);
  ppe_test::step(m);
  clock.set(103.5);
  CHECK(m.elapsed_time() == 3.5);
  ppe::State s = m.state_dict();
  auto m2 = tr::ExtensionsManager(ppe_test::options(10, 4).clock(clock.fn()), tr::Models{}, tr::Optimizers{});
  m2.load_state_dict(s);
  ppe_test::step(m2);  // starts at 103.5
  clock.set(104.5);
  CHECK(m2.elapsed_time() == 4.5);  // 3.5 before the snapshot + 1.0 since
}

TEST_CASE("stop_trigger evaluates the public copy and starts the extensions") {
  std::vector<int> calls, inits;
  auto m = ppe_test::make_manager(1, 2, RecInit{0, &calls, &inits});
  int n = 0;
  while (!m.stop_trigger()) {
    CHECK(inits == std::vector<int>{0});
    ppe_test::step(m);
    ++n;
  }
  CHECK(n == 2);
  CHECK(m.finalized());
  CHECK(m.training_length() == tr::TrainingLength{1, tr::Unit::Epoch});
}

TEST_CASE("a custom stop trigger through stop_when") {
  auto m = tr::ExtensionsManager(ppe_test::options(100, 10), tr::Models{}, tr::Optimizers{},
                                 tr::stop_when([](const tr::Manager& x) { return x.iteration() == 3; }));
  while (!m.finalized()) ppe_test::step(m);
  CHECK(m.iteration() == 3);
}

TEST_CASE("models are reporter observers named main and main/<child>") {
  struct NetImpl : torch::nn::Module {
    NetImpl() { enc = register_module("enc", torch::nn::Linear(1, 1)); }
    torch::nn::Linear enc{nullptr};
  };
  auto net = std::make_shared<NetImpl>();
  auto m = tr::ExtensionsManager(ppe_test::options(1, 10), net, tr::Optimizers{});
  m.run_iteration([&] {
    ppe::reporting::report({{"v", 1.0}}, net->enc);
    ppe::reporting::report({{"w", 2.0}}, net);
  });
  // The observation was cleared by the next start; check inside the body instead.
  m.run_iteration([&] {
    ppe::reporting::report({{"v", 1.0}}, net->enc);
    ppe::reporting::report({{"w", 2.0}}, net.get());
    CHECK(m.observation().contains("main/enc/v"));
    CHECK(m.observation().contains("main/w"));
  });
}

TEST_CASE("the stop trigger's state is saved and restored (stop_when(EarlyStoppingTrigger))") {
  namespace trig = tr::triggers;
  auto make = [] {
    return tr::ExtensionsManager(
        ppe_test::options(100, 1), tr::Models{}, tr::Optimizers{},
        tr::stop_when(trig::EarlyStoppingTrigger(trig::EarlyStoppingOptions().patience(2).check_trigger(ppe::iterations(1)))));
  };
  auto m = make();
  // Losses 1.0 (best), 2.0 (no improvement: count 1).
  for (double loss : {1.0, 2.0}) m.run_iteration([&] { ppe::reporting::report({{"main/loss", loss}}); });
  ppe::State s = m.state_dict();
  CHECK(s.at("_stop_trigger").contains("public"));
  CHECK(s.at("_stop_trigger").contains("internal"));
  auto resumed = make();
  resumed.load_state_dict(s);
  // One more non-improving loss reaches patience 2 only if the count of 1 was restored.
  resumed.run_iteration([&] { ppe::reporting::report({{"main/loss", 3.0}}); });
  CHECK(resumed.finalized());
  auto fresh = make();
  fresh.set_iteration(2);
  fresh.run_iteration([&] { ppe::reporting::report({{"main/loss", 3.0}}); });
  CHECK_FALSE(fresh.finalized());
}

TEST_CASE("models are reachable again after an extension threw mid-dispatch") {
  struct ThrowOnce {
    using extension_concept = tr::extension_tag;
    bool thrown = false;
    void operator()(tr::Manager&) {
      if (!std::exchange(thrown, true)) throw std::runtime_error("once");
    }
  };
  torch::nn::Linear model(1, 1);
  auto m = tr::ExtensionsManager(ppe_test::options(10, 10), model, tr::Optimizers{}, ThrowOnce{});
  CHECK_THROWS_WITH(ppe_test::step(m), "once");
  m.run_iteration([&] { CHECK(m.models().size() == 1); });
}

// ---- quiet windows (ours): iterations in which no trigger can fire skip the
// dispatch. These check that skipping never loses a firing.

namespace {
// Records the iterations at which it was called.
struct At {
  using extension_concept = tr::extension_tag;
  std::vector<std::int64_t>* its;
  void operator()(tr::Manager& m) { its->push_back(m.iteration()); }
};
// The iterations in [1, n] at which `t` may fire (pure look-ahead).
template <class T>
std::vector<std::int64_t> expected_firings(const T& t, std::int64_t n, std::int64_t ipe) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 1; i <= n; ++i)
    if (t.may_fire(i, ipe)) out.push_back(i);
  return out;
}
}  // namespace

TEST_CASE("quiet windows: every trigger kind fires exactly where may_fire says") {
  namespace tg = tr::triggers;
  constexpr std::int64_t ipe = 7, n = 200;
  std::vector<std::int64_t> a, b, c, d, e, f, g;
  auto every3 = ppe::iterations(3);
  auto half_epoch = ppe::epochs(0.5);  // 3.5 iterations: fires at 4, 7, 11, 14, ...
  auto schedule = tg::ManualScheduleTrigger({5, 9, 9.5, 30}, tr::Unit::Epoch);
  auto either = tg::any_of(ppe::iterations(11), ppe::epochs(2));
  auto both = tg::all_of(ppe::iterations(2), ppe::iterations(5));
  auto runtime = ppe::iterations(13);
  auto m = ppe_test::make_manager(n / ipe + 1, ipe, tr::entry(At{&a}, every3), tr::entry(At{&b}, half_epoch),
                                  tr::entry(At{&c}, schedule), tr::entry(At{&d}, either), tr::entry(At{&e}, both),
                                  tr::entry(At{&g}, tg::NeverTrigger{}));
  m.extend(tr::entry(At{&f}, runtime));
  for (std::int64_t i = 0; i < n; ++i) ppe_test::step(m);
  CHECK(a == expected_firings(every3, n, ipe));
  CHECK(b == expected_firings(half_epoch, n, ipe));
  CHECK(b.front() == 4);  // ceil(3.5)
  CHECK(c == expected_firings(schedule, n, ipe));
  CHECK(c == std::vector<std::int64_t>{35, 63, 66});  // int(5*7), int(9*7), int(9.5*7); 30*7 > 200
  CHECK(d == expected_firings(either, n, ipe));
  CHECK(e == expected_firings(both, n, ipe));
  CHECK(e.front() == 10);
  CHECK(f == expected_firings(runtime, n, ipe));
  CHECK(g.empty());
}

TEST_CASE("quiet windows are dropped when the counters or the triggers change outside run_iteration") {
  std::vector<std::int64_t> its;
  auto m = ppe_test::make_manager(100, 10, tr::entry(At{&its}, ppe::iterations(10)));
  for (int i = 0; i < 13; ++i) ppe_test::step(m);  // fired at 10; quiet until 20
  CHECK(its == std::vector<std::int64_t>{10});

  SUBCASE("load_state_dict moving the iteration back") {
    ppe::State s = m.state_dict();
    s.set("_start_iteration", std::int64_t{5});
    m.load_state_dict(s);
    for (int i = 0; i < 5; ++i) ppe_test::step(m);  // 6..10
    CHECK(its == std::vector<std::int64_t>{10, 10});
  }
  SUBCASE("set_iteration moving the iteration back") {
    m.set_iteration(8);
    for (int i = 0; i < 2; ++i) ppe_test::step(m);  // 9, 10
    CHECK(its == std::vector<std::int64_t>{10, 10});
  }
  SUBCASE("a trigger replaced through entry<I>()") {
    m.entry<0>().trigger = ppe::iterations(2);
    ppe_test::step(m);  // 14
    CHECK(its == std::vector<std::int64_t>{10, 14});
  }
}

TEST_CASE("a trigger without next_possible is asked every iteration, static or runtime") {
  int static_calls = 0, runtime_calls = 0;
  auto counting = [](int* n) { return [n](const tr::Manager&) { ++*n; return false; }; };
  auto m = ppe_test::make_manager(100, 10, tr::entry(Counter{}, ppe::iterations(50)),
                                  tr::entry(Counter{}, counting(&static_calls)));
  auto r = ppe_test::make_manager(100, 10, tr::entry(Counter{}, ppe::iterations(50)));
  r.extend(tr::entry(Counter{}, counting(&runtime_calls)));
  for (int i = 0; i < 30; ++i) {
    ppe_test::step(m);
    ppe_test::step(r);
  }
  CHECK(static_calls == 30);
  CHECK(runtime_calls == 30);
}

namespace {
// The count recorded for `tag` in `summary` (0 when absent).
std::int64_t recorded(ppe::profiler::TimeSummary& summary, std::string_view tag) {
  for (const auto& [t, stats] : summary.summary())
    if (t == tag) return stats.count;
  return 0;
}
}  // namespace

TEST_CASE("enable_profile records every extension call and each run_iteration (PPE's enable_profile names)") {
  auto& summary = ppe::profiler::get_time_summary();
  summary.clear();
  std::vector<int> calls;
  // 2 epochs of 3 iterations: "every" fires 6 times, "epoch" twice; a runtime
  // extension every second iteration 3 times.
  auto m = tr::ExtensionsManager(ppe_test::options(2, 3).enable_profile(true), tr::Models{}, tr::Optimizers{},
                                 tr::entry(Rec{0, &calls}, ppe::iterations(1), "every"),
                                 tr::entry(Rec{1, &calls}, ppe::epochs(1), "epoch"));
  m.extend(Rec{2, &calls}, ppe::iterations(2), "runtime");
  while (!m.stop_trigger()) m.run_iteration([] {});
  CHECK(calls.size() == 11u);
  CHECK(recorded(summary, "ppe.training.ExtensionsManager.run_extensions:every") == 6);
  CHECK(recorded(summary, "ppe.training.ExtensionsManager.run_extensions:epoch") == 2);
  CHECK(recorded(summary, "ppe.training.ExtensionsManager.run_extensions:runtime") == 3);
  CHECK(recorded(summary, "ppe.training.ExtensionsManager:run_iteration") == 6);
  summary.clear();

  // Off (the default): nothing is recorded.
  auto quiet = ppe_test::make_manager(2, 3, tr::entry(Rec{0, &calls}, ppe::iterations(1), "every"));
  while (!quiet.stop_trigger()) quiet.run_iteration([] {});
  CHECK(summary.summary().empty());
}

TEST_CASE("enable_trace adds the same scopes to the Chrome tracer, nested in the iteration") {
  auto& tracer = ppe::profiler::get_tracer();
  ppe::profiler::clear_tracer();
  tracer.enable(true);
  std::vector<int> calls;
  auto m = tr::ExtensionsManager(ppe_test::options(1, 2).enable_trace(true), tr::Models{}, tr::Optimizers{},
                                 tr::entry(Rec{0, &calls}, ppe::iterations(1), "every"));
  while (!m.stop_trigger()) m.run_iteration([] {});
  const auto events = tracer.events();
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  // Each extension call ends inside its iteration: the extension's event
  // first, then the iteration's.
  CHECK(names == std::vector<std::string>{"ppe.training.ExtensionsManager.run_extensions:every",
                                          "ppe.training.ExtensionsManager:run_iteration",
                                          "ppe.training.ExtensionsManager.run_extensions:every",
                                          "ppe.training.ExtensionsManager:run_iteration"});
  for (std::size_t i = 0; i + 1 < events.size(); i += 2) {
    CHECK(events[i].ts >= events[i + 1].ts);
    CHECK(events[i].ts + events[i].dur <= events[i + 1].ts + events[i + 1].dur);
  }
  ppe::profiler::clear_tracer();
}

}  // namespace ppe_test_training_tests_test_manager
