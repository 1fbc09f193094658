// Port of PPE's tests/.../extensions_tests/test_micro_average.py (with fixed
// data instead of random numbers, and the averages PPE 0.9.0 computes for
// them), plus PPE's defaults and state, and what is ours: the trigger's state,
// missing keys, device tensors, the errors.
#include "ppe_test.hpp"

#include <ppe/training/extensions/micro_average.hpp>
#include <ppe/training/triggers/time_trigger.hpp>

#include <cmath>
#include <optional>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_micro_average {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

/// The accuracy in the observation, if reported this iteration.
std::optional<double> accuracy(const tr::Manager& m, std::string_view key = "main/accuracy") {
  if (const auto* v = m.observation().find(key)) return v->to_double();
  return std::nullopt;
}

/// Stands for "not reported" in sequences of accuracies (which are never negative).
constexpr double kNone = -1;
double accuracy_or_none(const tr::Manager& m, std::string_view key) { return accuracy(m, key).value_or(kNone); }

// PPE's test data shape (4 rows of trigger_iters = 3): numpy.random.seed(0), then
// total = randint(7, 32, (4, 3)), correct = randint(10000, (4, 3)) % total.
const std::int64_t kTotal[4][3] = {{19, 22, 28}, {7, 10, 10}, {14, 16, 26}, {28, 25, 11}};
const std::int64_t kCorrect[4][3] = {{18, 14, 5}, {2, 2, 8}, {13, 5, 17}, {0, 21, 8}};
// What PPE 0.9.0 reports for them at iterations 3, 6, 9, 12.
const double kAccuracy[4] = {0.5362318840579711, 0.4444444444444444, 0.625, 0.453125};

}  // namespace

// PPE test_run: ExtensionsManager({}, [], 100, iters_per_epoch=5); MicroAverage(..., (3, "iteration"))
// extended with trigger (1, "iteration"); the average is in the observation every third iteration.
TEST_CASE("PPE test_run") {
  for (bool as_tensor : {false, true}) {
    CAPTURE(as_tensor);
    auto manager = ppe_test::make_manager(
        100, 5,
        tr::entry(ext::MicroAverage("main/correct", "main/total", "main/accuracy", ppe::iterations(3)),
                  ppe::iterations(1)));
    for (int row = 0; row < 4; ++row) {
      for (int col = 0; col < 3; ++col) {
        manager.run_iteration([&] {
          if (as_tensor)
            ppe::reporting::report(
                {{"main/correct", torch::tensor(kCorrect[row][col])}, {"main/total", torch::tensor(kTotal[row][col])}});
          else
            ppe::reporting::report({{"main/correct", kCorrect[row][col]}, {"main/total", kTotal[row][col]}});
        });
        CAPTURE(manager.iteration());
        CHECK(manager.observation().contains("main/accuracy") == (col == 2));
        if (col == 2) {
          // Host-readable values give a double, as PPE's float(numerator) / denominator.
          CHECK(manager.observation().at("main/accuracy").is_scalar());
          CHECK(*accuracy(manager) == kAccuracy[row]);
        }
      }
    }
  }
}

TEST_CASE("MicroAverage: PPE's name, priority, triggers (every iteration; average every epoch)") {
  using MA = ext::MicroAverage<>;
  CHECK(tr::extension_traits<MA>::default_name() == "MicroAverage");
  CHECK(tr::extension_traits<MA>::priority() == tr::kPriorityEditor);
  CHECK(tr::extension_traits<MA>::default_trigger().training_length() == tr::TrainingLength{1, tr::Unit::Iteration});
  ext::MicroAverage e("c", "t", "acc");
  CHECK(e.trigger().training_length() == tr::TrainingLength{1, tr::Unit::Epoch});
  CHECK(e.numerator_key() == "c");
  CHECK(e.denominator_key() == "t");
  CHECK(e.result_key() == "acc");

  // Checked with PPE 0.9.0: ipe 2, reports (i, 4) → 0.375 at iteration 2, 0.875 at 4. A reader of lower
  // priority registered first sees the average in the same iteration.
  std::vector<double> seen;
  auto manager = ppe_test::make_manager(2, 2,
                                        tr::make_extension(
                                            [&seen](tr::Manager& m) {
                                              if (auto a = accuracy(m, "acc")) seen.push_back(*a);
                                            },
                                            ppe::iterations(1), "reader"),
                                        std::move(e));
  for (int i = 1; i <= 4; ++i) manager.run_iteration([&] { ppe::reporting::report({{"c", i}, {"t", 4}}); });
  CHECK(seen == std::vector<double>{0.375, 0.875});
  CHECK(manager.extension_names() == std::vector<std::string>{"reader", "MicroAverage"});
}

TEST_CASE("MicroAverage: state is PPE's plus the trigger's and whether the interval saw values") {
  auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(3)));
  auto& e = manager.get_extension<ext::MicroAverage<>>("MicroAverage");
  CHECK(e.state_dict() ==
        ppe::State::dict(
            {{"_numerator", 0.0}, {"_denominator", 0.0}, {"_trigger", ppe::State::dict()}, {"_accumulated", false}}));
  // PPE 0.9.0 with the same reports: {'_numerator': 1.0, '_denominator': 2.0}, then 3.0 / 5.0, then 0 / 0
  // after the average 0.6666666666666666.
  const std::pair<int, int> reports[] = {{1, 2}, {2, 3}, {3, 4}};
  const double numerators[] = {1, 3, 0}, denominators[] = {2, 5, 0};
  for (int i = 0; i < 3; ++i) {
    manager.run_iteration([&] { ppe::reporting::report({{"c", reports[i].first}, {"t", reports[i].second}}); });
    CHECK(e.state_dict() == ppe::State::dict({{"_numerator", numerators[i]},
                                              {"_denominator", denominators[i]},
                                              {"_trigger", ppe::State::dict()},
                                              {"_accumulated", i < 2}}));
  }
  CHECK(*accuracy(manager, "acc") == 6.0 / 9.0);
  CHECK(manager.state_dict().at("extensions").at("MicroAverage").at("extension") == e.state_dict());
}

TEST_CASE("MicroAverage: a pickled state resumes mid-interval with the trigger's state (PPE loses it)") {
  // A TimeTrigger (its deadline is state) every 2.5 s of a fake clock that advances 1 s per iteration:
  // it fires when the elapsed time passes 2.5, 5, 7.5, ...: at iterations 3, 6, 8.
  const auto run = [](int from, int to, std::vector<double>& out, const ppe::State* resume) {
    ppe_test::FakeClock clock;
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 100).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                                         ext::MicroAverage("c", "t", "acc", tr::triggers::TimeTrigger(2.5)));
    if (resume) manager.load_state_dict(*resume);
    for (int i = from; i < to; ++i) {
      manager.run_iteration([&] {
        clock.advance(1.0);
        ppe::reporting::report({{"c", 1 + i % 3}, {"t", 2 + i % 4}});
      });
      out.push_back(accuracy_or_none(manager, "acc"));
    }
    return ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(manager.state_dict()));
  };
  std::vector<double> whole, resumed;
  run(0, 10, whole, nullptr);
  CHECK(whole == std::vector<double>{kNone, kNone, 6.0 / 9, kNone, kNone, 6.0 / 10, kNone, 3.0 / 9, kNone, kNone});

  const ppe::State saved = run(0, 7, resumed, nullptr);  // mid-interval
  const ppe::State& ext_state = saved.at("extensions").at("MicroAverage").at("extension");
  CHECK(ext_state.at("_numerator").as_double() == 1.0);
  CHECK(ext_state.at("_denominator").as_double() == 4.0);
  CHECK(ext_state.at("_trigger").at("next_time").as_double() == 7.5);
  CHECK(ext_state.at("_accumulated").as_bool());
  run(7, 10, resumed, &saved);
  CHECK(resumed == whole);

  // Without the trigger's state (PPE's layout) the restored trigger starts over at 2.5 s and fires at
  // every iteration until it has caught up.
  ppe::State ppe_layout = saved;
  ppe_layout.at("extensions").at("MicroAverage").at("extension").pop("_trigger");
  std::vector<double> restarted;
  run(7, 10, restarted, &ppe_layout);
  CHECK(restarted == std::vector<double>{3.0 / 9, 3.0 / 2, 1.0 / 3});
}

TEST_CASE("MicroAverage: loads PPE's states (ints after a reset, tensors)") {
  auto manager = ppe_test::make_manager(10, 100, ext::MicroAverage("c", "t", "acc", ppe::iterations(1)));
  auto& e = manager.get_extension<ext::MicroAverage<>>("MicroAverage");
  // PPE 0.9.0 after a reset and two reports of ints: {'_numerator': 6, '_denominator': 8}.
  e.load_state_dict(ppe::State::dict({{"_numerator", 6}, {"_denominator", 8}}));
  manager.run_iteration([] { ppe::reporting::report({{"c", 1}, {"t", 2}}); });
  CHECK(*accuracy(manager, "acc") == 0.7);
  // PPE with tensors reported: {'_numerator': tensor(2), '_denominator': tensor(3)}.
  e.load_state_dict(ppe::State::dict({{"_numerator", torch::tensor(2)}, {"_denominator", torch::tensor(3)}}));
  CHECK(e.state_dict().at("_numerator") == ppe::State(2.0));
  CHECK(e.state_dict().at("_accumulated").as_bool());
  manager.run_iteration([] { ppe::reporting::report({{"c", 1}, {"t", 1}}); });
  CHECK(*accuracy(manager, "acc") == 0.75);
  // A PPE state just after a reset: the interval has seen nothing yet.
  e.load_state_dict(ppe::State::dict({{"_numerator", 0}, {"_denominator", 0}}));
  CHECK_FALSE(e.state_dict().at("_accumulated").as_bool());
  CHECK_THROWS_AS(e.load_state_dict(ppe::State::dict({{"_numerator", "x"}, {"_denominator", 0}})),
                  std::invalid_argument);
}

TEST_CASE("MicroAverage: an iteration counts only when both keys are reported; the trigger is asked every time") {
  // PPE 0.9.0 skips its trigger when a key is missing, so with (3, "iteration") and no report at iteration 3
  // it reports 5/36 at iteration 6 (iterations 1-6). Here the interval ends at 3 (iterations 1, 2).
  auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(3)));
  std::vector<double> seen;
  for (int i = 1; i <= 6; ++i) {
    manager.run_iteration([&] {
      if (i == 3) return;
      if (i == 4)
        ppe::reporting::report({{"c", 100}});  // the denominator is missing: ignored
      else
        ppe::reporting::report({{"c", 1}, {"t", 2 * i}});
    });
    seen.push_back(accuracy_or_none(manager, "acc"));
  }
  CHECK(seen == std::vector<double>{kNone, kNone, 2.0 / 6, kNone, kNone, 2.0 / 22});
}

TEST_CASE("MicroAverage: an interval without both keys is an error naming them") {
  auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(2)));
  manager.run_iteration([] { ppe::reporting::report({{"c", 1}, {"t", 2}}); });
  manager.run_iteration([] {});
  CHECK(accuracy(manager, "acc") == 0.5);
  manager.run_iteration([] { ppe::reporting::report({{"c", 1}}); });
  CHECK_THROWS_WITH_AS(manager.run_iteration([] {
    ppe::reporting::report({{"x", 1}});
  }),
                       "ppe::MicroAverage: no iteration of this interval reported both \"c\" and \"t\" (keys "
                       "reported in this iteration: ['x'])",
                       std::out_of_range);
}

TEST_CASE("MicroAverage: 0/0 is NaN, x/0 is inf (PPE: ZeroDivisionError for Python numbers, NaN for tensors)") {
  auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(1)));
  manager.run_iteration([] { ppe::reporting::report({{"c", 0}, {"t", 0}}); });
  CHECK(std::isnan(*accuracy(manager, "acc")));
  manager.run_iteration([] { ppe::reporting::report({{"c", 1}, {"t", 0}}); });
  CHECK(*accuracy(manager, "acc") == INFINITY);
}

TEST_CASE("MicroAverage: tensors the host cannot read are summed on their device without synchronisation") {
  SUBCASE("bool and half CPU tensors: a float64 tensor result, a tensor in the state, pickled") {
    auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(3)));
    auto& e = manager.get_extension<ext::MicroAverage<>>("MicroAverage");
    manager.run_iteration([] {
      ppe::reporting::report({{"c", torch::tensor(true)}, {"t", torch::tensor(2.0).to(torch::kHalf)}});
    });
    manager.run_iteration([] { ppe::reporting::report({{"c", torch::tensor({false})}, {"t", 3}}); });
    const ppe::State state = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(e.state_dict()));
    REQUIRE(state.at("_numerator").is_tensor());
    CHECK((state.at("_numerator").as_tensor().scalar_type() == torch::kDouble));
    CHECK(state.at("_numerator").as_tensor().item<double>() == 1.0);
    CHECK(state.at("_denominator").as_tensor().item<double>() == 5.0);
    manager.run_iteration([] { ppe::reporting::report({{"c", 1.5}, {"t", torch::tensor(1.0).to(torch::kHalf)}}); });
    const auto& result = manager.observation().at("acc");
    REQUIRE(result.is_tensor());
    CHECK((result.tensor().scalar_type() == torch::kDouble));
    CHECK(result.to_double() == 2.5 / 6);

    ext::MicroAverage restored("c", "t", "acc", ppe::iterations(3));
    restored.load_state_dict(state);
    CHECK(restored.state_dict().at("_denominator") == ppe::State(5.0));  // a CPU tensor is read on loading
  }
  SUBCASE("meta tensors (no data: any host read would throw)") {
    auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(2)));
    auto& e = manager.get_extension<ext::MicroAverage<>>("MicroAverage");
    const auto meta = [] { return torch::empty({}, torch::TensorOptions().device(torch::kMeta)); };
    manager.run_iteration([&] { ppe::reporting::report({{"c", meta()}, {"t", meta()}}); });
    CHECK(e.state_dict().at("_numerator").as_tensor().device().is_meta());
    manager.run_iteration([&] { ppe::reporting::report({{"c", 2.0}, {"t", meta()}}); });
    REQUIRE(manager.observation().at("acc").is_tensor());
    CHECK(manager.observation().at("acc").tensor().device().is_meta());
  }
  SUBCASE("a reported tensor changed in place later does not change the sum") {
    auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(2)));
    auto c = torch::tensor(1.0).to(torch::kHalf);
    manager.run_iteration([&] { ppe::reporting::report({{"c", c}, {"t", 2}}); });
    c.fill_(100);
    manager.run_iteration([&] { ppe::reporting::report({{"c", 0}, {"t", 2}}); });
    CHECK(*accuracy(manager, "acc") == 0.25);
  }
}

TEST_CASE("MicroAverage: deferred values, one-element tensors, a callable trigger") {
  auto e = ext::MicroAverage("c", "t", "acc", [](const tr::Manager& m) { return m.iteration() % 2 == 0; });
  auto manager = ppe_test::make_manager(10, 5, std::move(e));
  manager.run_iteration([] {
    ppe::reporting::report({{"c", ppe::reporting::Value([] { return 3.0; })}, {"t", torch::tensor({{4.0f}})}});
  });
  manager.run_iteration([] { ppe::reporting::report({{"c", torch::tensor(1.0f)}, {"t", 4}}); });
  CHECK(*accuracy(manager, "acc") == 0.5);
}

TEST_CASE("MicroAverage: errors") {
  CHECK_THROWS_WITH_AS(ext::MicroAverage("c", "", "acc"),
                       "ppe::MicroAverage: the numerator, denominator and result keys must not be empty",
                       std::invalid_argument);
  // A tensor of several elements: an error naming the key; the sums stay as they were.
  auto manager = ppe_test::make_manager(10, 5, ext::MicroAverage("c", "t", "acc", ppe::iterations(2)));
  auto& e = manager.get_extension<ext::MicroAverage<>>("MicroAverage");
  manager.run_iteration([] { ppe::reporting::report({{"c", 1}, {"t", 2}}); });
  const ppe::State before = e.state_dict();
  CHECK_THROWS_WITH_AS(manager.run_iteration([] {
    ppe::reporting::report({{"c", 1}, {"t", torch::ones({2})}});
  }),
                       "ppe::MicroAverage: the value reported under \"t\" must be a number or a one-element tensor, "
                       "got a tensor of 2 elements",
                       std::invalid_argument);
  CHECK(e.state_dict() == before);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_micro_average
