// ARCHITECTURE §4's promise: reporting a tensor and accumulating it into a
// summary performs no host synchronisation and no per-iteration device work;
// the one sync happens when a summary is read. Tensors on the `meta` device
// have no data at all, so any host read of one throws: a training loop that
// reports and summarises meta tensors without throwing never read a value.
#include "ppe_test.hpp"

#include <cmath>

using ppe::reporting::DictSummary;
using ppe::reporting::Summary;
using ppe::reporting::Value;

namespace {

torch::Tensor meta_scalar(double v) { return torch::full({}, v, torch::TensorOptions().device(torch::kMeta)); }

/// Adds every iteration's observation to a DictSummary and a Summary (what
/// LogReport does between two emissions).
struct Accumulate {
  using extension_concept = ppe::training::extension_tag;
  static constexpr std::string_view default_name = "Accumulate";
  DictSummary* per_key;
  Summary* loss;
  void operator()(ppe::training::Manager& m) {
    per_key->add(m.observation());
    loss->add(m.observation().at("main/loss"));
  }
};

}  // namespace

TEST_CASE("reporting meta tensors through a manager never reads a value") {
  // More iterations than two folds of pending tensors (kFoldEvery = 1024), so
  // the batched reductions run on meta tensors too.
  const int iterations = static_cast<int>(2 * Summary::kFoldEvery + 100);
  DictSummary per_key;
  Summary loss;
  auto manager = ppe_test::make_manager(1000, 100, Accumulate{&per_key, &loss});
  CHECK_NOTHROW([&] {
    for (int i = 0; i < iterations; ++i)
      manager.run_iteration([&] {
        ppe::reporting::report({{"main/loss", meta_scalar(0.5)},
                                {"main/accuracy", torch::ones({}, torch::TensorOptions().device(torch::kMeta))},
                                {"lr", 0.1}});
      });
  }());
  CHECK(manager.iteration() == iterations);
  CHECK(loss.weight() == iterations);

  // The means are meta tensors: computed without any host value.
  Value mean = loss.compute_mean();
  REQUIRE(mean.is_tensor());
  CHECK(mean.tensor().device().str() == "meta");
  CHECK(mean.tensor().dim() == 0);
  CHECK_THROWS(mean.to_double());

  ppe::reporting::Observation means = per_key.compute_mean();
  CHECK(means.keys() == std::vector<std::string>{"main/loss", "main/accuracy", "lr"});
  CHECK(means.at("main/loss").tensor().device().str() == "meta");
  CHECK(means.at("main/accuracy").tensor().device().str() == "meta");
  CHECK_THROWS(means.at("main/accuracy").to_double());
  // The number stays a number: 0.1 every iteration.
  REQUIRE(means.at("lr").is_scalar());
  CHECK(means.at("lr").to_double() == doctest::Approx(0.1));

  auto stats = per_key.make_statistics();
  CHECK(stats.at("main/loss.std").tensor().device().str() == "meta");
  // Saving the state reads no value either: the sums stay (meta) tensors.
  const ppe::State state = loss.state_dict();
  CHECK(state.at("_x").as_tensor().device().str() == "meta");
}

TEST_CASE("a CPU tensor summary gives the double path's mean and std") {
  // Values 1, 2, 4 with weights 1, 2, 1:
  //   Σw = 4, Σwx = 1 + 4 + 4 = 9, Σwx² = 1 + 8 + 16 = 25
  //   mean = 9/4 = 2.25, std = sqrt(25/4 - 2.25²) = sqrt(6.25 - 5.0625) = sqrt(1.1875)
  const double values[] = {1.0, 2.0, 4.0};
  const double weights[] = {1.0, 2.0, 1.0};
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const std::string dtype_name = c10::toString(dtype);
    CAPTURE(dtype_name);
    Summary numbers, tensors;
    for (int i = 0; i < 3; ++i) {
      numbers.add(values[i], weights[i]);
      tensors.add(torch::tensor(values[i], torch::TensorOptions().dtype(dtype)), weights[i]);
    }
    auto [nm, ns] = numbers.make_statistics();
    auto [tm, ts] = tensors.make_statistics();
    REQUIRE(nm.is_scalar());
    REQUIRE(tm.is_tensor());
    CHECK(std::string(c10::toString(tm.tensor().scalar_type())) == dtype_name);
    CHECK(nm.to_double() == 2.25);
    CHECK(ns.to_double() == doctest::Approx(std::sqrt(1.1875)));
    CHECK(tm.to_double() == doctest::Approx(2.25));
    CHECK(ts.to_double() == doctest::Approx(std::sqrt(1.1875)));
    CHECK(tensors.compute_mean().to_double() == doctest::Approx(2.25));
    // The state holds the same sums either way (tensors of the reported dtype, or doubles).
    const ppe::State ts_state = tensors.state_dict(), ns_state = numbers.state_dict();
    CHECK(ts_state.at("_x").as_tensor().item<double>() == ns_state.at("_x").as_double());
    CHECK(ts_state.at("_x2").as_tensor().item<double>() == ns_state.at("_x2").as_double());
    CHECK(ts_state.at("_n").as_double() == ns_state.at("_n").as_double());
  }
}

TEST_CASE("numbers and tensors mix in one summary") {
  // 1 (number), tensor 2, 3 (number), tensor 6: Σx = 12, Σx² = 1+4+9+36 = 50,
  // mean 3, std sqrt(50/4 - 9) = sqrt(3.5).
  Summary s;
  s.add(1.0);
  s.add(torch::tensor(2.0, torch::kDouble));
  s.add(3);
  s.add(torch::tensor(6.0, torch::kDouble));
  auto [m, sd] = s.make_statistics();
  REQUIRE(m.is_tensor());
  CHECK(m.to_double() == doctest::Approx(3.0));
  CHECK(sd.to_double() == doctest::Approx(std::sqrt(3.5)));
}

TEST_CASE("tensors of different dtypes mix in one summary") {
  // float 1, int64 2, double 4 (then a second fold with float 8):
  //   first three: mean 7/3; all four: Σx = 15, Σx² = 1+4+16+64 = 85,
  //   mean 3.75, std sqrt(85/4 - 3.75²) = sqrt(21.25 - 14.0625) = sqrt(7.1875)
  Summary s;
  s.add(torch::tensor(1.0f));
  s.add(torch::tensor(2, torch::kLong));
  s.add(torch::tensor(4.0, torch::kDouble));
  CHECK(s.compute_mean().to_double() == doctest::Approx(7.0 / 3.0));
  s.add(torch::tensor(8.0f));
  auto [m, sd] = s.make_statistics();
  CHECK(m.to_double() == doctest::Approx(3.75));
  CHECK(sd.to_double() == doctest::Approx(std::sqrt(7.1875)));
}

TEST_CASE("integer tensors average as floats") {
  // (1 + 2) / 2 = 1.5, not the integer 1; std sqrt((1+4)/2 - 2.25) = 0.5.
  for (auto dtype : {torch::kInt, torch::kLong, torch::kUInt8}) {
    const std::string dtype_name = c10::toString(dtype);
    CAPTURE(dtype_name);
    Summary s;
    s.add(torch::tensor(1, torch::TensorOptions().dtype(dtype)));
    s.add(torch::tensor(2, torch::TensorOptions().dtype(dtype)));
    Value mean = s.compute_mean();
    REQUIRE(mean.is_tensor());
    CHECK(torch::isFloatingType(mean.tensor().scalar_type()));
    CHECK(mean.to_double() == 1.5);
    CHECK(s.make_statistics().second.to_double() == doctest::Approx(0.5));
  }
}

TEST_CASE("more than kFoldEvery pending tensors fold correctly") {
  // x_i = i for i = 0..N-1 with N = 2·1024 + 5 = 2053 (two folds and 5 pending):
  //   mean = (N-1)/2 = 1026
  //   var = (N² - 1)/12 = (4214809 - 1)/12 = 351234, std = sqrt(351234)
  constexpr std::size_t N = 2 * Summary::kFoldEvery + 5;
  static_assert(N == 2053);
  Summary s;
  for (std::size_t i = 0; i < N; ++i) s.add(torch::tensor(static_cast<double>(i), torch::kDouble));
  auto [m, sd] = s.make_statistics();
  CHECK(m.to_double() == doctest::Approx(1026.0));
  CHECK(sd.to_double() == doctest::Approx(std::sqrt(351234.0)));
  // The exact sums survive in the state: Σx = N(N-1)/2 = 2053·1026 = 2106378,
  // Σx² = (N-1)N(2N-1)/6 = 2052·2053·4105/6 = 17293363380/6 = 2882227230
  // (and Σx²/N - mean² = 1403910 - 1052676 = 351234, the variance above).
  const ppe::State state = s.state_dict();
  CHECK(state.at("_x").as_tensor().item<double>() == 2106378.0);
  CHECK(state.at("_x2").as_tensor().item<double>() == 2882227230.0);
  CHECK(state.at("_n").as_double() == static_cast<double>(N));
}

TEST_CASE("a summary of float32 tensors restored from its state continues bit for bit") {
  // Exact resume: a summary saved after 3 of 7 values (snapshots fold the
  // pending tensors, here after values 2 and 4) and restored into a fresh
  // summary must give the float32 mean of one never restored. With sums
  // a = v0+v1+v2, b = v3+v4, c = v5+v6 in float32, the run computes
  // (a + b) + c = 10.41100025; keeping a as a double and adding it last would
  // give (b + c) + a = 10.41099930 (checked with torch in Python).
  std::vector<float> values{0.1f, 0.7f, 1.3f, 2.9f, 0.3f, 5.1f, 0.011f};
  Summary whole, first;
  for (std::size_t i = 0; i < values.size(); ++i) {
    whole.add(torch::tensor(values[i]));
    if (i == 2 || i == 4) (void)whole.state_dict();
    if (i <= 2) first.add(torch::tensor(values[i]));
  }
  const ppe::State saved = ppe::pickle_loads(ppe::pickle_dumps(first.state_dict()));
  CHECK((saved.at("_x").as_tensor().scalar_type() == torch::kFloat));
  Summary resumed;
  resumed.load_state_dict(saved);
  for (std::size_t i = 3; i < values.size(); ++i) {
    resumed.add(torch::tensor(values[i]));
    if (i == 4) (void)resumed.state_dict();
  }
  const torch::Tensor a = whole.compute_mean().tensor(), b = resumed.compute_mean().tensor();
  CHECK((a.scalar_type() == torch::kFloat));
  CHECK(torch::equal(a, b));
  CHECK_THROWS_AS(resumed.load_state_dict(ppe::State::dict({{"_x", torch::tensor(1.0f)}, {"_x2", 1.0}, {"_n", 1.0}})),
                  std::invalid_argument);
}

TEST_CASE("weights across a fold boundary") {
  // kFoldEvery + 1 values: 1024 × (value 1, weight 1) then (value 1026, weight 2):
  //   Σw = 1026, Σwx = 1024 + 2052 = 3076, mean = 3076/1026 = 2.998...
  //   Σwx² = 1024 + 2·1026² = 1024 + 2105352 = 2106376
  Summary s;
  for (std::size_t i = 0; i < Summary::kFoldEvery; ++i) s.add(torch::tensor(1.0, torch::kDouble));
  s.add(torch::tensor(1026.0, torch::kDouble), 2.0);
  const double mean = 3076.0 / 1026.0;
  const double std = std::sqrt(2106376.0 / 1026.0 - mean * mean);
  auto [m, sd] = s.make_statistics();
  CHECK(m.to_double() == doctest::Approx(mean));
  CHECK(sd.to_double() == doctest::Approx(std));
  CHECK(s.weight() == 1026.0);
}

TEST_CASE("meta summaries combine with + and stay on the device") {
  Summary a, b;
  a.add(meta_scalar(1.0));
  b.add(meta_scalar(2.0));
  b.add(3.0);
  Summary c = a + b;
  CHECK(c.weight() == 3.0);
  Value mean = c.compute_mean();
  REQUIRE(mean.is_tensor());
  CHECK(mean.tensor().device().str() == "meta");
}
