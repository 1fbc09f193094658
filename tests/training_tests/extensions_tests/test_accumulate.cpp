// Port of PPE's tests/.../extensions_tests/test_accumulate.py: the five
// accumulate extensions with PPE's four trigger cases, alone and with a
// LogReport reading the reported value from its json file. PPE's inputs are
// random.uniform(0, 100); here a seeded generator gives 30 such values per
// case. The *_distributed twins need several processes: they come with the
// distributed tests. Plus ours: values and state layouts read from PPE 0.9.0,
// the summaries (weights, deferred values, tensors, lazy device tensors, +),
// resume through pickle in the middle of an interval, the gather's byte
// format, traits and errors.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <ppe/training/extensions/accumulate.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_accumulate {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace acc = ppe::training::extensions::accumulate;
using ppe::reporting::Value;

namespace {

constexpr std::int64_t kIterationLength = 2 * 3 * 5;
constexpr int kNumEpoch = 5;
constexpr std::int64_t kItersPerEpoch = kIterationLength / kNumEpoch;

/// PPE's `[random.uniform(0, 100) for _ in range(ITERATION_LENGTH)]`, seeded.
std::vector<double> uniform_values(std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v;
  for (std::int64_t i = 0; i < kIterationLength; ++i) v.push_back(100.0 * static_cast<double>(gen() >> 11) * 0x1.0p-53);
  return v;
}

struct Case {
  const char* name;
  tr::triggers::IntervalTrigger trigger;
  std::vector<double> values;
};

/// PPE's epoch_trigger_case, float_epoch_trigger_case,
/// epoch_iteration_trigger_case, primary_iteration_trigger_case.
std::vector<Case> cases() {
  return {{"epoch_trigger_case", ppe::epochs(1), uniform_values(1)},
          {"float_epoch_trigger_case", ppe::epochs(0.25), uniform_values(2)},
          {"epoch_iteration_trigger_case", ppe::iterations(static_cast<double>(kItersPerEpoch)), uniform_values(3)},
          {"primary_iteration_trigger_case", ppe::iterations(7), uniform_values(4)}};
}

// Python's statistics functions; nullopt where Python raises (stdev of one value).
using Expected = std::function<std::optional<double>(const std::vector<double>&)>;
std::optional<double> mean(const std::vector<double>& v) {
  long double s = 0;
  for (double x : v) s += x;
  return static_cast<double>(s / v.size());
}
std::optional<double> sum_squares_about_mean(const std::vector<double>& v) {
  const long double m = *mean(v);
  long double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return static_cast<double>(s);
}
std::optional<double> pstdev(const std::vector<double>& v) {
  return std::sqrt(*sum_squares_about_mean(v) / static_cast<double>(v.size()));
}
std::optional<double> stdev(const std::vector<double>& v) {
  if (v.size() < 2) return std::nullopt;
  return std::sqrt(*sum_squares_about_mean(v) / static_cast<double>(v.size() - 1));
}
std::optional<double> min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
std::optional<double> max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

/// PPE's assertion: both NaN, or math.isclose(rel_tol=1e-9, abs_tol=1e-6).
bool close(double actual, double expected) {
  if (std::isnan(actual) && std::isnan(expected)) return true;
  return std::fabs(actual - expected) <= std::max(1e-9 * std::max(std::fabs(actual), std::fabs(expected)), 1e-6);
}

double expected_value(const Expected& fn, const std::vector<double>& values, bool allow_nan) {
  const std::optional<double> e = fn(values);
  if (!e) {
    REQUIRE(allow_nan);  // PPE: RuntimeError
    return std::numeric_limits<double>::quiet_NaN();
  }
  return *e;
}

/// PPE's check_accumulate_extension: `extension` is called every iteration;
/// after each iteration where `trigger` fires, the observation's
/// "value/accumulated" is the statistic of the values since the last firing.
/// Returns how many times it checked.
template <class E>
int check_accumulate_extension(E extension, const Expected& expected_fn, const std::vector<double>& values,
                               tr::triggers::IntervalTrigger trigger, bool allow_nan = false) {
  auto manager = ppe_test::make_manager(kNumEpoch, kItersPerEpoch, tr::entry(std::move(extension), ppe::iterations(1)));
  std::size_t i = 0;
  int checked = 0;
  std::vector<double> epoch_values;
  for (int epoch = 0; epoch < kNumEpoch; ++epoch) {
    for (std::int64_t it = 0; it < kItersPerEpoch; ++it) {
      const double current = values[i++];
      epoch_values.push_back(current);
      manager.run_iteration([&] { ppe::reporting::report({{"value", current}}); });
      if (trigger(manager)) {
        const double accumulated = manager.observation().at("value/accumulated").to_double();
        const double expected = expected_value(expected_fn, epoch_values, allow_nan);
        epoch_values.clear();
        INFO("iteration ", manager.iteration(), ": ", accumulated, " vs ", expected);
        CHECK(close(accumulated, expected));
        ++checked;
      } else {
        CHECK_FALSE(manager.observation().contains("value/accumulated"));
      }
    }
  }
  return checked;
}

/// PPE's check_accumulate_extension_with_log_report: a LogReport with the same
/// trigger writes "value/accumulated" to a json file, read back after each
/// firing.
template <class E>
void check_accumulate_extension_with_log_report(E extension, const Expected& expected_fn,
                                                const std::vector<double>& values,
                                                tr::triggers::IntervalTrigger trigger, bool allow_nan = false) {
  ppe_test::TempDir dir;
  auto manager = tr::ExtensionsManager(
      ppe_test::options(kNumEpoch, kItersPerEpoch).out_dir(dir.str()), tr::Models{}, tr::Optimizers{},
      tr::entry(std::move(extension), ppe::iterations(1)),
      tr::entry(ext::LogReport(ext::LogReportOptions().filename("out").format("json").trigger(trigger)),
                ppe::iterations(1)));
  std::size_t i = 0;
  std::size_t trigger_count = 0;
  std::vector<double> epoch_values;
  for (int epoch = 0; epoch < kNumEpoch; ++epoch) {
    for (std::int64_t it = 0; it < kItersPerEpoch; ++it) {
      const double current = values[i++];
      epoch_values.push_back(current);
      manager.run_iteration([&] { ppe::reporting::report({{"value", current}}); });
      if (trigger(manager)) {
        ++trigger_count;
        const std::vector<ext::LogEntry> log = ext::log_from_json_string(ppe_test::read_file(dir / "out"));
        REQUIRE(log.size() == trigger_count);
        REQUIRE(log.back().contains("value/accumulated"));
        const double accumulated = log.back().at("value/accumulated").to_double();
        const double expected = expected_value(expected_fn, epoch_values, allow_nan);
        epoch_values.clear();
        INFO("iteration ", manager.iteration(), ": ", accumulated, " vs ", expected);
        CHECK(((allow_nan && std::isnan(accumulated) && std::isnan(expected)) || close(accumulated, expected)));
      }
    }
  }
  CHECK(trigger_count > 0);
}

ext::AccumulateOptions with(const tr::triggers::IntervalTrigger& t) { return ext::AccumulateOptions().trigger(t); }
const std::pair<std::string, std::string> kKeys{"value", "value/accumulated"};

}  // namespace

// ---- PPE's tests -------------------------------------------------------------------------------------------------

TEST_CASE("PPE test_average_accumulate") {
  for (const Case& c : cases()) {
    INFO(c.name);
    CHECK(check_accumulate_extension(ext::AverageAccumulate(kKeys, with(c.trigger)), mean, c.values, c.trigger) > 0);
  }
}

TEST_CASE("PPE test_standard_deviation_accumulate") {
  for (const Case& c : cases()) {
    INFO(c.name);
    CHECK(check_accumulate_extension(ext::StandardDeviationAccumulate(kKeys, with(c.trigger)), pstdev, c.values,
                                     c.trigger) > 0);
  }
}

TEST_CASE("PPE test_unbiased_standard_deviation_accumulate") {
  for (const Case& c : cases()) {
    INFO(c.name);
    CHECK(check_accumulate_extension(ext::UnbiasedStandardDeviationAccumulate(kKeys, with(c.trigger)), stdev, c.values,
                                     c.trigger, /*allow_nan=*/true) > 0);
  }
}

TEST_CASE("PPE test_min_accumulate") {
  for (const Case& c : cases()) {
    INFO(c.name);
    CHECK(check_accumulate_extension(ext::MinAccumulate(kKeys, with(c.trigger)), min, c.values, c.trigger) > 0);
  }
}

TEST_CASE("PPE test_max_accumulate") {
  for (const Case& c : cases()) {
    INFO(c.name);
    CHECK(check_accumulate_extension(ext::MaxAccumulate(kKeys, with(c.trigger)), max, c.values, c.trigger) > 0);
  }
}

TEST_CASE("PPE test_average_accumulate_with_log_report") {
  for (const Case& c : cases()) {
    INFO(c.name);
    check_accumulate_extension_with_log_report(ext::AverageAccumulate(kKeys, with(c.trigger)), mean, c.values,
                                               c.trigger);
  }
}

TEST_CASE("PPE test_standard_deviation_accumulate_with_log_report") {
  for (const Case& c : cases()) {
    INFO(c.name);
    check_accumulate_extension_with_log_report(ext::StandardDeviationAccumulate(kKeys, with(c.trigger)), pstdev,
                                               c.values, c.trigger);
  }
}

TEST_CASE("PPE test_unbiased_standard_deviation_accumulate_with_log_report") {
  for (const Case& c : cases()) {
    INFO(c.name);
    check_accumulate_extension_with_log_report(ext::UnbiasedStandardDeviationAccumulate(kKeys, with(c.trigger)), stdev,
                                               c.values, c.trigger, /*allow_nan=*/true);
  }
}

TEST_CASE("PPE test_min_accumulate_with_log_report") {
  for (const Case& c : cases()) {
    INFO(c.name);
    check_accumulate_extension_with_log_report(ext::MinAccumulate(kKeys, with(c.trigger)), min, c.values, c.trigger);
  }
}

TEST_CASE("PPE test_max_accumulate_with_log_report") {
  for (const Case& c : cases()) {
    INFO(c.name);
    check_accumulate_extension_with_log_report(ext::MaxAccumulate(kKeys, with(c.trigger)), max, c.values, c.trigger);
  }
}

// ---- values and states read from PPE 0.9.0 ------------------------------------------------------------------------

namespace {

const std::vector<double> kSmall{1.0, 2.5, 4.0, -3.0, 7.0, 0.5, 2.0, 9.0};

/// Runs `extension` (trigger every 3 iterations) over kSmall with 2 epochs of
/// 4 iterations: the reported values (at iterations 3 and 6) and the
/// extension's state after iteration 5, as PPE 0.9.0 gives them.
template <class E>
std::pair<std::vector<double>, ppe::State> run_small(E extension) {
  auto manager = ppe_test::make_manager(2, 4, std::move(extension));
  std::vector<double> reported;
  ppe::State mid;
  for (std::size_t i = 0; i < kSmall.size(); ++i) {
    manager.run_iteration([&] { ppe::reporting::report({{"value", kSmall[i]}}); });
    if (const Value* v = manager.observation().find("value/acc")) reported.push_back(v->to_double());
    if (i == 4) mid = manager.state_dict().at("extensions").at(E::default_name).at("extension");
  }
  return {reported, mid};
}

ext::AccumulateOptions every3() { return ext::AccumulateOptions().trigger(ppe::iterations(3)); }
const std::pair<std::string, std::string> kSmallKeys{"value", "value/acc"};

}  // namespace

TEST_CASE("values and state layouts as PPE 0.9.0 gives them") {
  const ppe::State trigger_state = ppe::State::dict();
  {
    auto [reported, mid] = run_small(ext::AverageAccumulate(kSmallKeys, every3()));
    CHECK(reported == std::vector<double>{2.5, 1.5});
    // PPE: {'_trigger': {}, '_summary': {'_x': 2.0, '_n': 2}}: the running mean and an int count.
    CHECK(mid ==
          ppe::State::dict({{"_trigger", trigger_state}, {"_summary", ppe::State::dict({{"_x", 2.0}, {"_n", 2}})}}));
    CHECK(mid.at("_summary").at("_n").is_int());
  }
  {
    auto [reported, mid] = run_small(ext::StandardDeviationAccumulate(kSmallKeys, every3()));
    CHECK(reported == std::vector<double>{1.224744871391589, 4.143267631552018});
    // PPE: {'_x': 4.0, '_x2': 58.0, '_n': 2.0}: sums, a float weight.
    CHECK(mid == ppe::State::dict({{"_trigger", trigger_state},
                                   {"_summary", ppe::State::dict({{"_x", 4.0}, {"_x2", 58.0}, {"_n", 2.0}})}}));
  }
  {
    auto [reported, mid] = run_small(ext::UnbiasedStandardDeviationAccumulate(kSmallKeys, every3()));
    CHECK(reported == std::vector<double>{1.5, 5.07444578254611});
    CHECK(mid == ppe::State::dict({{"_trigger", trigger_state},
                                   {"_summary", ppe::State::dict({{"_x", 4.0}, {"_x2", 58.0}, {"_n", 2.0}})}}));
  }
  {
    auto [reported, mid] = run_small(ext::MinAccumulate(kSmallKeys, every3()));
    CHECK(reported == std::vector<double>{1.0, -3.0});
    CHECK(mid == ppe::State::dict({{"_trigger", trigger_state}, {"_summary", ppe::State::dict({{"_min_x", -3.0}})}}));
  }
  {
    auto [reported, mid] = run_small(ext::MaxAccumulate(kSmallKeys, every3()));
    CHECK(reported == std::vector<double>{4.0, 7.0});
    CHECK(mid == ppe::State::dict({{"_trigger", trigger_state}, {"_summary", ppe::State::dict({{"_max_x", 7.0}})}}));
  }
}

TEST_CASE("a state written by PPE loads and continues") {
  // PPE's states after iteration 5 of run_small; iteration 6 (value 0.5) then reports.
  auto continue_from = [](auto extension, const ppe::State& summary) {
    auto manager = ppe_test::make_manager(2, 4, std::move(extension));
    ppe::State state = manager.state_dict();
    state.set("_start_iteration", 5);
    state.at("extensions")
        .at(decltype(extension)::default_name)
        .set("extension", ppe::State::dict({{"_trigger", ppe::State::dict()}, {"_summary", summary}}));
    manager.load_state_dict(state);
    manager.run_iteration([] { ppe::reporting::report({{"value", 0.5}}); });
    REQUIRE(manager.iteration() == 6);
    return manager.observation().at("value/acc").to_double();
  };
  CHECK(continue_from(ext::AverageAccumulate(kSmallKeys, every3()), ppe::State::dict({{"_x", 2.0}, {"_n", 2}})) == 1.5);
  CHECK(continue_from(ext::StandardDeviationAccumulate(kSmallKeys, every3()),
                      ppe::State::dict({{"_x", 4.0}, {"_x2", 58.0}, {"_n", 2.0}})) == 4.143267631552018);
  CHECK(continue_from(ext::UnbiasedStandardDeviationAccumulate(kSmallKeys, every3()),
                      ppe::State::dict({{"_x", 4.0}, {"_x2", 58.0}, {"_n", 2.0}})) == 5.07444578254611);
  CHECK(continue_from(ext::MinAccumulate(kSmallKeys, every3()), ppe::State::dict({{"_min_x", -3.0}})) == -3.0);
  CHECK(continue_from(ext::MaxAccumulate(kSmallKeys, every3()), ppe::State::dict({{"_max_x", 7.0}})) == 7.0);
}

// ---- summaries (values from PPE 0.9.0's summaries) ----------------------------------------------------------------

namespace {
at::Tensor scalar(double v, at::ScalarType dtype = at::kFloat) {
  return torch::tensor(v, torch::dtype(dtype)).reshape({});
}
}  // namespace

TEST_CASE("summaries model the summary concept") {
  static_assert(acc::summary<acc::AverageSummary>);
  static_assert(acc::summary<acc::StandardDeviationSummary>);
  static_assert(acc::summary<acc::UnbiasedStandardDeviationSummary>);
  static_assert(acc::summary<acc::MinSummary>);
  static_assert(acc::summary<acc::MaxSummary>);
  static_assert(!acc::summary<int>);
  CHECK(true);
}

TEST_CASE("empty summaries: PPE's values (0.0, NaN, +inf, -inf) or an error") {
  CHECK(acc::AverageSummary().compute_accumulate().scalar() == 0.0);
  CHECK(acc::AverageSummary().state_dict() == ppe::State::dict({{"_x", 0.0}, {"_n", 0}}));
  CHECK_THROWS_AS(acc::StandardDeviationSummary().compute_accumulate(), std::domain_error);  // PPE: ZeroDivisionError
  CHECK(std::isnan(acc::UnbiasedStandardDeviationSummary().compute_accumulate().scalar()));
  CHECK(acc::MinSummary().compute_accumulate().scalar() == std::numeric_limits<double>::infinity());
  CHECK(acc::MaxSummary().compute_accumulate().scalar() == -std::numeric_limits<double>::infinity());
  CHECK(acc::MinSummary().state_dict() == ppe::State::dict({{"_min_x", std::numeric_limits<double>::infinity()}}));
  CHECK(acc::MaxSummary().state_dict() == ppe::State::dict({{"_max_x", -std::numeric_limits<double>::infinity()}}));
}

TEST_CASE("weights: PPE's rules (the average takes a value as the sum of its weight; min and max ignore it)") {
  // PPE: add(3.0, weight=2); add(5.0, weight=1).
  auto weighted = [](auto s) {
    s.add(3.0, 2);
    s.add(5.0, 1);
    return s;
  };
  auto average = weighted(acc::AverageSummary());
  CHECK(average.compute_accumulate().scalar() == 2.666666666666667);
  CHECK(average.state_dict() == ppe::State::dict({{"_x", 2.666666666666667}, {"_n", 3}}));
  auto sd = weighted(acc::StandardDeviationSummary());
  CHECK(sd.compute_accumulate().scalar() == 0.9428090415820645);
  CHECK(sd.state_dict() == ppe::State::dict({{"_x", 11.0}, {"_x2", 43.0}, {"_n", 3.0}}));
  CHECK(weighted(acc::UnbiasedStandardDeviationSummary()).compute_accumulate().scalar() == 1.154700538379253);
  CHECK(weighted(acc::MinSummary()).compute_accumulate().scalar() == 3.0);
  CHECK(weighted(acc::MaxSummary()).compute_accumulate().scalar() == 5.0);
  // A fractional weight is kept exactly (PPE truncates _n to an int).
  acc::AverageSummary half;
  half.add(1.0, 0.5);
  CHECK(half.state_dict().at("_n") == ppe::State(0.5));
}

TEST_CASE("deferred values are evaluated when the summary is read") {
  auto deferred = [](auto s, int* calls) {
    const int before = *calls;
    s.add(Value([calls] {
      ++*calls;
      return 3.0;
    }));
    s.add(5.0);
    CHECK(*calls == before);
    const double v = s.compute_accumulate().scalar();
    CHECK(*calls == before + 1);
    return v;
  };
  int calls = 0;
  CHECK(deferred(acc::AverageSummary(), &calls) == 4.0);
  CHECK(deferred(acc::StandardDeviationSummary(), &calls) == 1.0);
  CHECK(deferred(acc::UnbiasedStandardDeviationSummary(), &calls) == 1.4142135623730951);
  CHECK(deferred(acc::MinSummary(), &calls) == 3.0);
  CHECK(deferred(acc::MaxSummary(), &calls) == 5.0);
  CHECK(calls == 5);
}

TEST_CASE("a single value: std 0, unbiased std NaN") {
  acc::StandardDeviationSummary s;
  s.add(4.0);
  CHECK(s.compute_accumulate().scalar() == 0.0);
  acc::UnbiasedStandardDeviationSummary u;
  u.add(4.0);
  CHECK(std::isnan(u.compute_accumulate().scalar()));
  u.add(scalar(1.0, at::kDouble));
  u.reset();
  u.add(scalar(1.5, at::kDouble));
  CHECK(std::isnan(u.compute_accumulate().scalar()));  // PPE: float('nan') even for tensors
}

TEST_CASE("CPU tensors: results are tensors, computed on the host (PPE's values)") {
  auto add3 = [](auto s) {
    s.add(scalar(1.5));
    s.add(scalar(2.0));
    s.add(scalar(4.0));
    return s;
  };
  auto check_tensor = [](const Value& v, at::ScalarType dtype, double expected) {
    REQUIRE(v.is_tensor());
    CHECK((v.tensor().scalar_type() == dtype));
    CHECK(v.tensor().dim() == 0);
    CHECK(v.to_double() == doctest::Approx(expected).epsilon(1e-6));
  };
  auto average = add3(acc::AverageSummary());
  check_tensor(average.compute_accumulate(), at::kFloat, 2.5);
  CHECK(average.state_dict() == ppe::State::dict({{"_x", 2.5}, {"_n", 3}, {"_dtype", "float32"}}));
  check_tensor(add3(acc::StandardDeviationSummary()).compute_accumulate(), at::kFloat, 1.0801234497346435);
  check_tensor(add3(acc::UnbiasedStandardDeviationSummary()).compute_accumulate(), at::kFloat, 1.3228756555322954);
  check_tensor(add3(acc::MinSummary()).compute_accumulate(), at::kFloat, 1.5);
  check_tensor(add3(acc::MaxSummary()).compute_accumulate(), at::kFloat, 4.0);

  // Integer tensors: min and max keep the dtype (PPE: tensor(3), tensor(4)); means are float64 here.
  auto add_ints = [](auto s) {
    s.add(scalar(3, at::kLong));
    s.add(scalar(4, at::kLong));
    return s;
  };
  check_tensor(add_ints(acc::MinSummary()).compute_accumulate(), at::kLong, 3);
  check_tensor(add_ints(acc::MaxSummary()).compute_accumulate(), at::kLong, 4);
  CHECK(add_ints(acc::MaxSummary()).state_dict() == ppe::State::dict({{"_max_x", 4.0}, {"_dtype", "int64"}}));
  check_tensor(add_ints(acc::AverageSummary()).compute_accumulate(), at::kDouble, 3.5);
  check_tensor(add_ints(acc::StandardDeviationSummary()).compute_accumulate(), at::kDouble, 0.5);
  check_tensor(add_ints(acc::UnbiasedStandardDeviationSummary()).compute_accumulate(), at::kDouble, 0.7071067811865476);

  // Min and max keep the type of the value that won (PPE: tensor(1.5) then 2.0).
  acc::MinSummary mn;
  mn.add(scalar(1.5));
  mn.add(2.0);
  check_tensor(mn.compute_accumulate(), at::kFloat, 1.5);
  acc::MaxSummary mx;
  mx.add(scalar(1.5));
  mx.add(2.0);
  CHECK(mx.compute_accumulate().scalar() == 2.0);

  // Stored detached (PPE keeps the graph).
  acc::AverageSummary g;
  g.add(torch::ones({}, torch::requires_grad()) * 3);
  CHECK_FALSE(g.compute_accumulate().tensor().requires_grad());

  acc::AverageSummary bad;
  CHECK_THROWS_WITH_AS(bad.add(torch::ones({2})),
                       "ppe::training::extensions::accumulate::AverageSummary::add: expected a number or a tensor "
                       "with one element, got a tensor with 2 elements",
                       std::invalid_argument);
}

TEST_CASE("tensors that are not read on the host are reduced lazily on their device") {
  // Half precision on the CPU is not read at add: kept, folded in batches.
  std::vector<double> values;
  for (int i = 0; i < 150; ++i) values.push_back(static_cast<double>((i * 37) % 101) / 4);
  auto feed = [&](auto s) {
    for (double v : values) s.add(scalar(v, at::kHalf));
    return s;
  };
  const double m = *mean(values), sd = *pstdev(values), usd = *stdev(values);
  CHECK(feed(acc::AverageSummary()).compute_accumulate().to_double() == doctest::Approx(m).epsilon(1e-3));
  CHECK(feed(acc::StandardDeviationSummary()).compute_accumulate().to_double() == doctest::Approx(sd).epsilon(1e-2));
  CHECK(feed(acc::UnbiasedStandardDeviationSummary()).compute_accumulate().to_double() ==
        doctest::Approx(usd).epsilon(1e-2));
  CHECK(feed(acc::MinSummary()).compute_accumulate().to_double() == *min(values));
  CHECK(feed(acc::MaxSummary()).compute_accumulate().to_double() == *max(values));

  // Mixed with numbers and host-read tensors: the host values are combined in.
  acc::AverageSummary a = feed(acc::AverageSummary());
  a.add(1000.0);
  CHECK(a.compute_accumulate().to_double() == doctest::Approx((m * 150 + 1000) / 151).epsilon(1e-3));
  acc::MaxSummary x = feed(acc::MaxSummary());
  x.add(scalar(99.5, at::kDouble));
  const Value xv = x.compute_accumulate();
  CHECK((xv.tensor().scalar_type() == at::kDouble));
  CHECK(xv.to_double() == 99.5);
  acc::MinSummary n = feed(acc::MinSummary());
  n.add(-1.0);
  CHECK(n.compute_accumulate().to_double() == -1.0);

  // The meta device has no data: reading would fail, so nothing is read until then.
  auto meta = [](auto s) {
    for (int i = 0; i < 100; ++i) s.add(torch::empty({}, torch::device(torch::kMeta)));
    const Value v = s.compute_accumulate();
    REQUIRE(v.is_tensor());
    CHECK(v.tensor().is_meta());
  };
  meta(acc::AverageSummary());
  meta(acc::StandardDeviationSummary());
  meta(acc::UnbiasedStandardDeviationSummary());
  meta(acc::MinSummary());
  meta(acc::MaxSummary());
}

TEST_CASE("+ combines summaries as PPE's __add__ (what the distributed gather does)") {
  // PPE: Summary() + a + b with a = [1.0, 2.0], b = [10.0].
  auto combined = [](auto empty) {
    auto a = empty, b = empty;
    a.add(1.0);
    a.add(2.0);
    b.add(10.0);
    return empty + a + b;
  };
  auto average = combined(acc::AverageSummary());
  CHECK(average.compute_accumulate().scalar() == 4.333333333333334);
  CHECK(average.state_dict() == ppe::State::dict({{"_x", 4.333333333333334}, {"_n", 3}}));
  auto sd = combined(acc::StandardDeviationSummary());
  CHECK(sd.compute_accumulate().scalar() == 4.027681991198191);
  CHECK(sd.state_dict() == ppe::State::dict({{"_x", 13.0}, {"_x2", 105.0}, {"_n", 3.0}}));
  CHECK(combined(acc::UnbiasedStandardDeviationSummary()).compute_accumulate().scalar() == 4.932882862316248);
  CHECK(combined(acc::MinSummary()).compute_accumulate().scalar() == 1.0);
  CHECK(combined(acc::MaxSummary()).compute_accumulate().scalar() == 10.0);
  // Empty + empty: PPE's values (the average's raises ZeroDivisionError there; here it stays empty).
  CHECK(std::isnan((acc::UnbiasedStandardDeviationSummary() + acc::UnbiasedStandardDeviationSummary())
                       .compute_accumulate()
                       .scalar()));
  CHECK((acc::MinSummary() + acc::MinSummary()).compute_accumulate().scalar() ==
        std::numeric_limits<double>::infinity());
  CHECK((acc::AverageSummary() + acc::AverageSummary()).compute_accumulate().scalar() == 0.0);
}

// ---- the extensions -----------------------------------------------------------------------------------------------

TEST_CASE("extensions: PPE's names, priority (editor) and call trigger (every iteration)") {
  static_assert(tr::extension<ext::AverageAccumulate>);
  static_assert(tr::extension<ext::StandardDeviationAccumulate>);
  static_assert(tr::extension<ext::UnbiasedStandardDeviationAccumulate>);
  static_assert(tr::extension<ext::MinAccumulate>);
  static_assert(tr::extension<ext::MaxAccumulate>);
  static_assert(ext::AverageAccumulate::priority == tr::kPriorityEditor);
  CHECK(tr::extension_traits<ext::MaxAccumulate>::priority() == 200);
  CHECK(tr::extension_traits<ext::AverageAccumulate>::default_trigger().training_length() ==
        tr::TrainingLength{1, tr::Unit::Iteration});
  // The reporting trigger defaults to every epoch (PPE's (1, "epoch")).
  CHECK(ext::AccumulateOptions().trigger().training_length() == tr::TrainingLength{1, tr::Unit::Epoch});

  auto manager = ppe_test::make_manager(1, 2, ext::AverageAccumulate(kKeys), ext::StandardDeviationAccumulate(kKeys),
                                        ext::UnbiasedStandardDeviationAccumulate(kKeys), ext::MinAccumulate(kKeys),
                                        ext::MaxAccumulate(kKeys), ext::MaxAccumulate({"value", "value/max2"}));
  CHECK(manager.extension_names() == std::vector<std::string>{"AverageAccumulate", "StandardDeviationAccumulate",
                                                              "UnbiasedStandardDeviationAccumulate", "MinAccumulate",
                                                              "MaxAccumulate", "MaxAccumulate_1"});
  const auto& e = manager.get_extension<ext::MaxAccumulate>("MaxAccumulate_1");
  CHECK(e.conversion_key_pair() == std::pair<std::string, std::string>{"value", "value/max2"});
  CHECK_FALSE(e.distributed());
}

TEST_CASE("the value is reported into the same iteration's observation, before readers") {
  std::vector<double> seen;
  auto manager =
      ppe_test::make_manager(1, 4,
                             tr::make_extension(
                                 [&seen](tr::Manager& m) {
                                   if (const Value* v = m.observation().find("value/accumulated"))
                                     seen.push_back(v->to_double());
                                 },
                                 ppe::iterations(1), "reader"),
                             ext::AverageAccumulate(kKeys, ext::AccumulateOptions().trigger(ppe::iterations(2))));
  for (double v : {1.0, 3.0, 10.0, 20.0}) manager.run_iteration([&] { ppe::reporting::report({{"value", v}}); });
  CHECK(seen == std::vector<double>{2.0, 15.0});
}

TEST_CASE("any trigger: a callable, a schedule") {
  std::vector<std::int64_t> at;
  auto manager = ppe_test::make_manager(
      1, 10, ext::MaxAccumulate(kKeys, ext::AccumulateOptions().trigger([](const tr::Manager& m) {
        return m.iteration() % 4 == 1;
      })),
      ext::MinAccumulate({"value", "value/min"}, ext::AccumulateOptions().trigger(tr::triggers::ManualScheduleTrigger(
                                                     {3, 5}, tr::Unit::Iteration))));
  std::vector<double> maxima, minima;
  for (int i = 1; i <= 10; ++i) {
    manager.run_iteration([&] { ppe::reporting::report({{"value", static_cast<double>(i * (i % 2 ? 1 : -1))}}); });
    if (const Value* v = manager.observation().find("value/accumulated")) maxima.push_back(v->to_double());
    if (const Value* v = manager.observation().find("value/min")) minima.push_back(v->to_double());
  }
  CHECK(maxima == std::vector<double>{1, 5, 9});  // values 1 | -2 3 -4 5 | -6 7 -8 9
  CHECK(minima == std::vector<double>{-2, -4});   // values 1 -2 3 | -4 5
}

TEST_CASE("distributed(true) without a communicator of several ranks reports the local value") {
  const Case c = cases()[3];
  CHECK(check_accumulate_extension(ext::AverageAccumulate(kKeys, with(c.trigger).distributed(true)), mean, c.values,
                                   c.trigger) > 0);
  CHECK(ext::AverageAccumulate(kKeys, ext::AccumulateOptions().distributed(true)).distributed());
}

namespace {
// Rank 0 of two, in one process: the other rank's summary state is given;
// the gather returns this rank's state and that one, as the c10d
// communicator does (tests/training_tests/extensions_tests/test_distributed_accumulate.cpp
// runs it between two processes).
struct TwoRanks : tr::Communicator {
  ppe::State other;
  std::vector<ppe::State> sent;
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void barrier() override {}
  std::vector<std::string> all_gather(const std::string& bytes) override { return {bytes, bytes}; }
  std::vector<ppe::State> all_gather_state(const ppe::State& local) override {
    sent.push_back(local);
    return {local, other};
  }
};
}  // namespace

TEST_CASE("distributed(true) adds every rank's summary from the communicator's State gather") {
  auto ranks = std::make_shared<TwoRanks>();
  acc::AverageSummary other;
  other.add(10.0);
  other.add(scalar(20.0));  // a tensor kept in the state
  ranks->other = other.state_dict();
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 2).communicator(ranks), tr::Models{}, tr::Optimizers{},
                                       ext::AverageAccumulate(kKeys, ext::AccumulateOptions().distributed(true)));
  for (double v : {1.0, 2.0}) manager.run_iteration([&] { ppe::reporting::report({{"value", v}}); });
  REQUIRE(ranks->sent.size() == 1u);  // one gather, at the report
  CHECK(manager.observation().at("value/accumulated").to_double() == doctest::Approx((1.0 + 2.0 + 10.0 + 20.0) / 4));
}

TEST_CASE("errors: a missing key names the keys present; empty keys") {
  auto manager = ppe_test::make_manager(1, 2, ext::AverageAccumulate(kKeys));
  CHECK_THROWS_WITH_AS(manager.run_iteration([] {
    ppe::reporting::report({{"other", 1.0}});
  }),
                       doctest::Contains("key 'value' not found in the observation; keys present: "),
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(ext::AverageAccumulate({"", "x"}),
                       "ppe: an accumulate extension needs two non-empty keys in conversion_key_pair, got ('', 'x')",
                       std::invalid_argument);
  CHECK_THROWS_AS(ext::MinAccumulate({"x", ""}), std::invalid_argument);
}

// ---- resume ------------------------------------------------------------------------------------------------------

namespace {

/// The bits of every reported value (NaN included) and whether it was a tensor.
struct Reported {
  std::int64_t iteration;
  std::uint64_t bits;
  bool tensor;
  friend bool operator==(const Reported&, const Reported&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Reported& r) {
    return os << "{" << r.iteration << ", 0x" << std::hex << r.bits << std::dec << (r.tensor ? ", tensor}" : "}");
  }
};

template <class E>
std::vector<Reported> run(E extension, const std::vector<double>& values, bool tensors, std::int64_t from,
                          std::int64_t to, const ppe::State* load, ppe::State* save_at_end) {
  auto manager = ppe_test::make_manager(kNumEpoch, kItersPerEpoch, std::move(extension));
  if (load) manager.load_state_dict(*load);
  std::vector<Reported> out;
  for (std::int64_t i = from; i < to; ++i) {
    manager.run_iteration([&] {
      if (tensors)
        ppe::reporting::report({{"value", scalar(values[i])}});
      else
        ppe::reporting::report({{"value", values[i]}});
    });
    if (const Value* v = manager.observation().find("value/accumulated")) {
      const double d = v->to_double();
      std::uint64_t bits;
      std::memcpy(&bits, &d, sizeof d);
      out.push_back({manager.iteration(), bits, v->is_tensor()});
    }
  }
  if (save_at_end) *save_at_end = manager.state_dict();
  return out;
}

/// Runs all iterations at once, then again stopping at `stop` (inside an
/// interval), saving the manager's state through pickle bytes and resuming
/// a fresh manager and extension from it: the reports must be identical.
template <class Make>
void check_resume(Make make, const Case& c, bool tensors, std::int64_t stop) {
  const std::vector<Reported> whole = run(make(c.trigger), c.values, tensors, 0, kIterationLength, nullptr, nullptr);
  REQUIRE(whole.size() >= 2);
  ppe::State saved;
  std::vector<Reported> resumed = run(make(c.trigger), c.values, tensors, 0, stop, nullptr, &saved);
  const ppe::State loaded = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(saved));
  const std::vector<Reported> rest = run(make(c.trigger), c.values, tensors, stop, kIterationLength, &loaded, nullptr);
  resumed.insert(resumed.end(), rest.begin(), rest.end());
  CHECK(resumed == whole);
}

}  // namespace

TEST_CASE("resume: a state saved mid-interval, pickled and loaded, continues with identical results") {
  for (const bool tensors : {false, true}) {
    for (const Case& c : cases()) {
      INFO(c.name, tensors ? " (float32 tensors)" : " (numbers)");
      // Iteration 10 lies inside an interval of every case (6 | 12, 9 | 11, 6 | 12, 7 | 14).
      check_resume([](auto t) { return ext::AverageAccumulate(kKeys, with(t)); }, c, tensors, 10);
      check_resume([](auto t) { return ext::StandardDeviationAccumulate(kKeys, with(t)); }, c, tensors, 10);
      check_resume([](auto t) { return ext::UnbiasedStandardDeviationAccumulate(kKeys, with(t)); }, c, tensors, 10);
      check_resume([](auto t) { return ext::MinAccumulate(kKeys, with(t)); }, c, tensors, 10);
      check_resume([](auto t) { return ext::MaxAccumulate(kKeys, with(t)); }, c, tensors, 10);
    }
  }
}

TEST_CASE("resume: the saved summary holds the partial interval") {
  ppe::State saved;
  const std::vector<double> values = cases()[3].values;
  run(ext::MaxAccumulate(kKeys, with(ppe::iterations(7))), values, false, 0, 10, nullptr, &saved);
  const ppe::State& s = saved.at("extensions").at("MaxAccumulate").at("extension");
  CHECK(s.at("_trigger") == ppe::State::dict());
  CHECK(s.at("_summary").at("_max_x").as_double() == *std::max_element(values.begin() + 7, values.begin() + 10));
}

}  // namespace ppe_test_training_tests_extensions_tests_test_accumulate
