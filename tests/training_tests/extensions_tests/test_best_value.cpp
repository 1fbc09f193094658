// Port of PPE's tests/.../extensions_tests/test_best_value.py (table F1),
// plus PPE's defaults and mid-interval state (checked with PPE 0.9.0), a
// pickled resume, and a custom comparison.
#include "ppe_test.hpp"

#include <ppe/training/extensions/best_value.hpp>
#include <ppe/training/extensions/value_observation.hpp>

#include <cmath>
#include <limits>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_best_value {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // PPE's None: never observed

// PPE's test_best_observation: max_epochs 4, ipe 3; observe_value("value", observed[epoch]) and the
// extension, both every epoch; after each epoch the best value, epoch and iteration; then the state.
template <class B>
void check_best_observation(const std::vector<double>& observed, const std::vector<double>& best_values,
                            const std::vector<std::int64_t>& best_epochs,
                            const std::vector<std::int64_t>& best_iterations) {
  auto manager = ppe_test::make_manager(
      4, 3, ext::observe_value("value", [&observed](tr::Manager& m) { return observed[m.epoch()]; }),
      tr::entry(B("value"), ppe::epochs(1)));
  auto& best = manager.template get_extension<B>(std::string(tr::extension_traits<B>::default_name()));
  for (std::size_t epoch = 0; epoch < 4; ++epoch) {
    for (int i = 0; i < 3; ++i) ppe_test::step(manager);
    CAPTURE(epoch);
    CHECK(best.best_value() == best_values[epoch]);
    CHECK(best.best_epoch() == best_epochs[epoch]);
    CHECK(best.best_iteration() == best_iterations[epoch]);
  }
  const ppe::State expected =
      ppe::State::dict({{"_best_trigger", ppe::State::dict({{"interval_trigger", ppe::State::dict()},
                                                            {"_summary", ppe::State::dict()},
                                                            {"_best_value", best_values.back()}})},
                        {"_best_it", best_iterations.back()},
                        {"_best_epoch", best_epochs.back()}});
  CHECK(best.state_dict() == expected);

  B best2("value");
  best2.load_state_dict(best.state_dict());
  CHECK(best2.best_value() == best_values.back());
  CHECK(best2.best_iteration() == best_iterations.back());
  CHECK(best2.best_epoch() == best_epochs.back());
}

bool abs_less(double best, double value) { return std::abs(value) < std::abs(best); }

}  // namespace

TEST_CASE("PPE test_best_observation") {
  SUBCASE("MinValue") {
    check_best_observation<ext::MinValue<>>({kNone, 4.0, 4.5, 3.0, 3.5}, {4.0, 4.0, 3.0, 3.0}, {1, 1, 3, 3},
                                            {3, 3, 9, 9});
  }
  SUBCASE("MaxValue") {
    check_best_observation<ext::MaxValue<>>({kNone, 3.0, 4.5, 4.0, 5.0}, {3.0, 4.5, 4.5, 5.0}, {1, 2, 2, 4},
                                            {3, 6, 6, 12});
  }
}

// PPE test_key_error: BestValue("value", lambda a, b: a < b) every epoch, nothing reported.
TEST_CASE("PPE test_key_error") {
  auto manager = ppe_test::make_manager(
      4, 3, tr::entry(ext::BestValue("value", [](double a, double b) { return a < b; }), ppe::epochs(1)));
  ppe_test::step(manager);
  ppe_test::step(manager);
  CHECK_THROWS_WITH_AS(ppe_test::step(manager),
                       "ppe::BestValueTrigger: Key \"value\" not found in the observation (current available keys "
                       "are [])",
                       std::out_of_range);
}

// PPE test_error_before_first_call.
TEST_CASE("PPE test_error_before_first_call") {
  ext::BestValue best("value", [](double a, double b) { return a < b; });
  CHECK_FALSE(best.has_best_value());
  CHECK_THROWS_WITH_AS(best.best_value(),
                       "ppe::BestValue: best_value of \"value\" is not known yet: no interval of the extension's "
                       "trigger has ended (run the extension until one does, or load a state that has a best value)",
                       std::runtime_error);
  CHECK_THROWS_AS(best.best_epoch(), std::runtime_error);
  CHECK_THROWS_AS(best.best_iteration(), std::runtime_error);
}

TEST_CASE("BestValue/MaxValue/MinValue: PPE's names, priority and triggers") {
  using Best = ext::BestValue<bool (*)(double, double)>;
  CHECK(tr::extension_traits<Best>::default_name() == "best_value");
  CHECK(tr::extension_traits<ext::MaxValue<>>::default_name() == "max_value");
  CHECK(tr::extension_traits<ext::MinValue<>>::default_name() == "min_value");
  CHECK(tr::extension_traits<Best>::priority() == tr::kPriorityReader);
  CHECK(tr::extension_traits<ext::MaxValue<>>::priority() == tr::kPriorityReader);
  CHECK(tr::extension_traits<ext::MinValue<>>::default_trigger().training_length() ==
        tr::TrainingLength{1, tr::Unit::Iteration});
  ext::MaxValue max("v");
  CHECK(max.key() == "v");
  CHECK(max.best_trigger().interval_trigger().training_length() == tr::TrainingLength{1, tr::Unit::Epoch});
  ext::MinValue min("v", ppe::iterations(5));
  CHECK(min.best_trigger().interval_trigger().training_length() == tr::TrainingLength{5, tr::Unit::Iteration});

  auto manager =
      ppe_test::make_manager(1, 1, ext::MaxValue("a"), ext::MinValue("b"), Best("c", &abs_less), ext::MaxValue("d"));
  CHECK(manager.extension_names() == std::vector<std::string>{"max_value", "min_value", "best_value", "max_value_1"});
}

TEST_CASE("MaxValue every iteration (the default): the interval mean and PPE's mid-epoch state") {
  // Checked with PPE 0.9.0: MaxValue("v") extended with defaults, ipe 3, reports 1, 2, 3, 4, 0.5:
  // state after iteration 2: _summary {'v': {'_x': 3.0, '_x2': 5.0, '_n': 2}}, _best_value None;
  // after 3: best 2.0 at iteration 3, epoch 1; after 5: _summary {'v': {'_x': 4.5, '_x2': 16.25, '_n': 2}}.
  auto manager = ppe_test::make_manager(4, 3, ext::MaxValue("v"));
  auto& best = manager.get_extension<ext::MaxValue<>>("max_value");
  const double values[] = {1, 2, 3, 4, 0.5};
  const auto summary = [](double x, double x2, double n) {
    return ppe::State::dict({{"v", ppe::State::dict({{"_x", x}, {"_x2", x2}, {"_n", n}})}});
  };
  for (int i = 0; i < 5; ++i) {
    manager.run_iteration([&] { ppe::reporting::report({{"v", values[i]}}); });
    const ppe::State s = best.state_dict();
    CAPTURE(i);
    if (i == 1) {
      CHECK(s.at("_best_trigger").at("_summary") == summary(3, 5, 2));  // PPE: '_n': 2 (an int)
      CHECK(s.at("_best_trigger").at("_best_value").is_none());
      CHECK(s.at("_best_it").is_none());
      CHECK(s.at("_best_epoch").is_none());
    }
    if (i == 2) CHECK(s.at("_best_trigger").at("_summary") == ppe::State::dict());
    if (i == 4) CHECK(s.at("_best_trigger").at("_summary") == summary(4.5, 16.25, 2));
  }
  CHECK(best.best_value() == 2.0);
  CHECK(best.best_iteration() == 3);
  CHECK(best.best_epoch() == 1);
}

TEST_CASE("MaxValue: loads PPE's mid-epoch state and continues its interval") {
  // PPE 0.9.0's state after iteration 5 of the test above.
  const ppe::State ppe_state = ppe::State::dict(
      {{"_best_trigger",
        ppe::State::dict(
            {{"interval_trigger", ppe::State::dict()},
             {"_summary", ppe::State::dict({{"v", ppe::State::dict({{"_x", 4.5}, {"_x2", 16.25}, {"_n", 2}})}})},
             {"_best_value", 2.0}})},
       {"_best_it", 3},
       {"_best_epoch", 1}});
  auto manager = ppe_test::make_manager(4, 3, ext::MaxValue("v"));
  auto& best = manager.get_extension<ext::MaxValue<>>("max_value");
  manager.load_state_dict([&] {
    ppe::State s = manager.state_dict();
    s.set("_start_iteration", 5);
    s.at("extensions").at("max_value").set("extension", ppe_state);
    return s;
  }());
  CHECK(best.best_value() == 2.0);
  CHECK(best.best_iteration() == 3);
  manager.run_iteration([] { ppe::reporting::report({{"v", 6.0}}); });
  CHECK(best.best_value() == (4 + 0.5 + 6) / 3);
  CHECK(best.best_iteration() == 6);
  CHECK(best.best_epoch() == 2);
}

TEST_CASE("MinValue: a pickled state resumes mid-epoch with identical results") {
  // Tensors and numbers, ipe 4, 3 epochs; resumed after iteration 6 (mid-epoch 2).
  const auto value = [](int i) { return std::cos(1.3 * i) + 0.1 * (i % 3); };
  const auto report = [&](int i) {
    if (i % 2)
      ppe::reporting::report({{"loss", torch::tensor(value(i), torch::kDouble)}});
    else
      ppe::reporting::report({{"loss", value(i)}});
  };
  struct Seen {
    double value;
    std::int64_t iteration, epoch;
    bool operator==(const Seen&) const = default;
  };
  const auto run = [&](int from, int to, std::vector<Seen>& out, const ppe::State* resume) {
    auto manager = ppe_test::make_manager(3, 4, ext::MinValue("loss"));
    auto& best = manager.get_extension<ext::MinValue<>>("min_value");
    if (resume) manager.load_state_dict(*resume);
    for (int i = from; i < to; ++i) {
      manager.run_iteration([&] { report(i); });
      if (best.has_best_value()) out.push_back({best.best_value(), best.best_iteration(), best.best_epoch()});
    }
    return ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(manager.state_dict()));
  };
  std::vector<Seen> whole, resumed;
  run(0, 12, whole, nullptr);
  REQUIRE(whole.size() == 9);  // from the end of the first epoch
  const ppe::State saved = run(0, 6, resumed, nullptr);
  const ppe::State& summary = saved.at("extensions").at("min_value").at("extension").at("_best_trigger").at("_summary");
  CHECK(summary.at("loss").at("_n").as_double() == 2);  // the two values of epoch 2 so far
  run(6, 12, resumed, &saved);
  CHECK((resumed == whole));  // (parenthesised: Seen is not printable)
}

TEST_CASE("BestValue: a custom comparison (smaller magnitude is better), as PPE's BestValueTrigger table") {
  auto manager = ppe_test::make_manager(10, 2, ext::BestValue("v", &abs_less, ppe::iterations(1)));
  auto& best = manager.get_extension<ext::BestValue<bool (*)(double, double)>>("best_value");
  const double values[] = {0.5, -0.5, -0.6, 0.6, 0.4, -0.4, -0.3, 0.3};
  const double bests[] = {0.5, 0.5, 0.5, 0.5, 0.4, 0.4, -0.3, -0.3};
  const std::int64_t iterations[] = {1, 1, 1, 1, 5, 5, 7, 7};
  for (int i = 0; i < 8; ++i) {
    manager.run_iteration([&] { ppe::reporting::report({{"v", values[i]}}); });
    CAPTURE(i);
    CHECK(best.best_value() == bests[i]);
    CHECK(best.best_iteration() == iterations[i]);
    CHECK(best.best_epoch() == iterations[i] / 2);
  }
}

TEST_CASE("BestValue: load_state_dict checks the state before changing anything") {
  ext::MaxValue best("v");
  CHECK_THROWS_AS(best.load_state_dict(
                      ppe::State::dict({{"_best_trigger", ppe::State::dict()}, {"_best_it", "x"}, {"_best_epoch", 1}})),
                  ppe::StateError);
  CHECK_FALSE(best.has_best_value());
}

}  // namespace ppe_test_training_tests_extensions_tests_test_best_value
