// ARCHITECTURE §4's promise: reporting a tensor and accumulating it into a
// summary performs no host synchronisation and no per-iteration device work;
// the one sync happens when a summary is read. Tensors on the `meta` device
// have no data at all, so any host read of one throws: a training loop that
// reports and summarises meta tensors without throwing never read a value.
//
// CPU tensors of float, double and integer dtypes are the exception: their
// value is read at `add` (a memory read, no synchronisation) and summed as a
// double. The lazy path's numerics are checked here with complex CPU tensors
// (kept lazily, like tensors on other devices) whose imaginary parts are 0.
#include "ppe_test.hpp"
#include "sync_counter.hpp"

#include <cmath>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_reporting_tests_test_summary_lazy {

using ppe::reporting::DictSummary;
using ppe::reporting::Summary;
using ppe::reporting::Value;

namespace {

torch::Tensor meta_scalar(double v) { return torch::full({}, v, torch::TensorOptions().device(torch::kMeta)); }

/// A 0-dim tensor of `v` that the summary reads at `add` (double) or keeps
/// lazily (complex double, imaginary part 0).
torch::Tensor scalar(double v, bool lazy) {
  return lazy ? torch::complex(torch::tensor(v, torch::kDouble), torch::tensor(0.0, torch::kDouble))
              : torch::tensor(v, torch::kDouble);
}
/// The real part of a mean, a std or a state's sum (a number or a tensor).
double real(const Value& v) { return v.is_tensor() ? torch::real(v.tensor()).item<double>() : v.to_double(); }
double real(const ppe::State& s) { return s.is_tensor() ? torch::real(s.as_tensor()).item<double>() : s.as_double(); }

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
  // More iterations than two folds of pending tensors (kFoldEvery = 64), so
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
    // CPU tensors are summed as doubles, as numbers are: the state holds the
    // same sums, plus the dtype of the tensors' mean.
    const ppe::State ts_state = tensors.state_dict(), ns_state = numbers.state_dict();
    CHECK(ts_state.at("_x").as_double() == ns_state.at("_x").as_double());
    CHECK(ts_state.at("_x2").as_double() == ns_state.at("_x2").as_double());
    CHECK(ts_state.at("_n").as_double() == ns_state.at("_n").as_double());
    CHECK(ts_state.at("_dtype").as_string() == (dtype == torch::kFloat ? "float32" : "float64"));
    CHECK_FALSE(ns_state.contains("_dtype"));
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

TEST_CASE("more than kFoldEvery tensors: read at add, or folded lazily") {
  // x_i = i for i = 0..N-1 with N = 2·64 + 5 = 133 (lazily: two folds and 5 pending):
  //   mean = (N-1)/2 = 66
  //   var = (N² - 1)/12 = (17689 - 1)/12 = 1474, std = sqrt(1474)
  constexpr std::size_t N = 2 * Summary::kFoldEvery + 5;
  static_assert(N == 133);
  for (bool lazy : {false, true}) {
    CAPTURE(lazy);
    Summary s;
    for (std::size_t i = 0; i < N; ++i) s.add(scalar(static_cast<double>(i), lazy));
    auto [m, sd] = s.make_statistics();
    REQUIRE(m.is_tensor());
    CHECK(m.tensor().is_complex() == lazy);
    CHECK(real(m) == doctest::Approx(66.0));
    CHECK(real(sd) == doctest::Approx(std::sqrt(1474.0)));
    // The exact sums survive in the state: Σx = N(N-1)/2 = 133·66 = 8778,
    // Σx² = (N-1)N(2N-1)/6 = 132·133·265/6 = 4652340/6 = 775390
    // (and Σx²/N - mean² = 5830 - 4356 = 1474, the variance above). Read
    // values are saved as doubles, lazily kept ones as tensors.
    const ppe::State state = s.state_dict();
    CHECK(state.at("_x").is_tensor() == lazy);
    CHECK(real(state.at("_x")) == 8778.0);
    CHECK(real(state.at("_x2")) == 775390.0);
    CHECK(state.at("_n").as_double() == static_cast<double>(N));
  }
}

TEST_CASE("the mean of 10^6 float32 CPU tensors is the float64 mean rounded once") {
  // Read at add and summed as doubles in report order, the mean is exactly
  // the float64 reference computed the same way, rounded to float32 once (a
  // float32 running sum would drift: near 10^6 · 0.5, float32's spacing is
  // 2^-5, coarser than most of the values' digits).
  constexpr int n = 1000000;
  const torch::Tensor values = torch::rand({n}, torch::TensorOptions().dtype(torch::kFloat));
  const float* v = values.data_ptr<float>();
  Summary s;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    s.add(values.select(0, i));
    sum += static_cast<double>(v[i]);
    sum2 += static_cast<double>(v[i]) * static_cast<double>(v[i]);
  }
  const double mean = sum / n;
  auto [m, sd] = s.make_statistics();
  REQUIRE(m.is_tensor());
  CHECK((m.tensor().scalar_type() == torch::kFloat));
  CHECK(m.tensor().item<float>() == static_cast<float>(mean));
  CHECK(sd.tensor().item<float>() == static_cast<float>(std::sqrt(sum2 / n - mean * mean)));
  const ppe::State state = s.state_dict();
  CHECK(state.at("_x").as_double() == sum);
  CHECK(state.at("_x2").as_double() == sum2);
}

TEST_CASE("a CPU tensor's value is read when it is added") {
  // As PPE's `_x += weight * value`: changing the tensor afterwards (an
  // optimizer step on a reported parameter, say) does not change the summary.
  // Values 1 and 3: mean 2.
  Summary s;
  torch::Tensor t = torch::tensor(1.0, torch::kDouble);
  s.add(t);
  t.fill_(3.0);
  s.add(t);
  t.fill_(100.0);
  CHECK(s.compute_mean().to_double() == 2.0);
}

TEST_CASE("one-element CPU tensors of any layout, and dtypes that are kept lazily") {
  // arange(10)[3:4] is [3] at storage offset 3; a [1, 1] view of 5; a
  // transposed [1, 1] of 7; half and bfloat16 (kept lazily) 2 and 4:
  //   Σx = 3 + 5 + 7 + 2 + 4 = 21 over 5 values: mean 4.2.
  Summary s;
  s.add(torch::arange(10, torch::kDouble).slice(0, 3, 4));
  s.add(torch::full({1, 1}, 5.0));
  s.add(torch::full({1, 1}, 7, torch::kLong).t());
  s.add(torch::tensor(2.0, torch::kHalf));
  s.add(torch::tensor(4.0, torch::kBFloat16));
  CHECK(s.compute_mean().to_double() == doctest::Approx(4.2));
  // A tensor that aliases a negated view reads its logical value: -(-6) = 6,
  // so Σx = 27 over 6 values: mean 4.5.
  s.add(torch::_neg_view(torch::tensor(-6.0, torch::kDouble)));
  CHECK(s.compute_mean().to_double() == doctest::Approx(4.5));
}

TEST_CASE("a summary of float32 tensors restored from its state continues bit for bit") {
  // Exact resume: a summary saved after 3 of 7 values (and read, as snapshots
  // do, after values 2 and 4) and restored into a fresh summary must give the
  // mean of one never restored, bit for bit.
  // - CPU float32 tensors are summed as doubles: the state holds the double
  //   sums and the mean's dtype, and the restored summary adds to them.
  // - Lazily kept tensors (complex64 here, as a CUDA float32 would be) are
  //   saved as tensors: with sums a = v0+v1+v2, b = v3+v4, c = v5+v6 in
  //   float32, the run computes (a + b) + c = 10.41100025; keeping a as a
  //   double and adding it last would give (b + c) + a = 10.41099930 (checked
  //   with torch in Python).
  std::vector<float> values{0.1f, 0.7f, 1.3f, 2.9f, 0.3f, 5.1f, 0.011f};
  for (bool lazy : {false, true}) {
    CAPTURE(lazy);
    const auto value = [&](std::size_t i) {
      torch::Tensor t = torch::tensor(values[i]);
      return lazy ? torch::complex(t, torch::zeros_like(t)) : t;
    };
    Summary whole, first;
    for (std::size_t i = 0; i < values.size(); ++i) {
      whole.add(value(i));
      if (i == 2 || i == 4) (void)whole.state_dict();
      if (i <= 2) first.add(value(i));
    }
    const ppe::State saved = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(first.state_dict()));
    if (lazy) {
      CHECK((saved.at("_x").as_tensor().scalar_type() == torch::kComplexFloat));
    } else {
      // v0 + v1 + v2 as doubles, as the never-saved summary holds it.
      CHECK(saved.at("_x").as_double() ==
            static_cast<double>(values[0]) + static_cast<double>(values[1]) + static_cast<double>(values[2]));
      CHECK(saved.at("_dtype").as_string() == "float32");
    }
    Summary resumed;
    resumed.load_state_dict(saved);
    for (std::size_t i = 3; i < values.size(); ++i) {
      resumed.add(value(i));
      if (i == 4) (void)resumed.state_dict();
    }
    const torch::Tensor a = whole.compute_mean().tensor(), b = resumed.compute_mean().tensor();
    CHECK((a.scalar_type() == (lazy ? torch::kComplexFloat : torch::kFloat)));
    CHECK(torch::equal(a, b));
  }
  Summary resumed;
  CHECK_THROWS_AS(resumed.load_state_dict(ppe::State::dict({{"_x", torch::tensor(1.0f)}, {"_x2", 1.0}, {"_n", 1.0}})),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      resumed.load_state_dict(ppe::State::dict({{"_x", 1.0}, {"_x2", 1.0}, {"_n", 1.0}, {"_dtype", "int64"}})),
      std::invalid_argument);
}

TEST_CASE("a state of CPU tensor sums (earlier versions of ppe) and PPE's doubles load") {
  // Sums of 1, 2, 3: Σx = 6, Σx² = 14, n = 3. Then a fourth value, 6:
  //   mean (6 + 6)/4 = 3; std sqrt((14 + 36)/4 - 9) = sqrt(3.5).
  Summary old_state, ppe_state;
  old_state.load_state_dict(
      ppe::State::dict({{"_x", torch::tensor(6.0f)}, {"_x2", torch::tensor(14.0f)}, {"_n", 3.0}}));
  ppe_state.load_state_dict(ppe::State::dict({{"_x", 6.0}, {"_x2", 14.0}, {"_n", 3}}));
  old_state.add(torch::tensor(6.0f));
  ppe_state.add(torch::tensor(6.0f));
  for (Summary* s : {&old_state, &ppe_state}) {
    auto [m, sd] = s->make_statistics();
    REQUIRE(m.is_tensor());
    CHECK((m.tensor().scalar_type() == torch::kFloat));
    CHECK(m.to_double() == 3.0);
    CHECK(sd.to_double() == doctest::Approx(std::sqrt(3.5)));
    CHECK(s->state_dict() ==
          ppe::State::dict({{"_x", 12.0}, {"_x2", 50.0}, {"_n", 4.0}, {"_dtype", "float32"}}));
  }
}

TEST_CASE("weights across a fold boundary") {
  // kFoldEvery + 1 values: 64 × (value 1, weight 1) then (value 66, weight 2):
  //   Σw = 66, Σwx = 64 + 132 = 196, mean = 196/66 = 2.969...
  //   Σwx² = 64 + 2·66² = 64 + 8712 = 8776
  static_assert(Summary::kFoldEvery == 64);
  for (bool lazy : {false, true}) {
    CAPTURE(lazy);
    Summary s;
    for (std::size_t i = 0; i < Summary::kFoldEvery; ++i) s.add(scalar(1.0, lazy));
    s.add(scalar(66.0, lazy), 2.0);
    const double mean = 196.0 / 66.0;
    const double std = std::sqrt(8776.0 / 66.0 - mean * mean);
    auto [m, sd] = s.make_statistics();
    CHECK(real(m) == doctest::Approx(mean));
    CHECK(real(sd) == doctest::Approx(std));
    CHECK(s.weight() == 66.0);
  }
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

TEST_CASE("a fold of equally weighted device tensors copies nothing to the device") {
  // Two folds: weight 1 (no weight operand at all), then weight 3 (a kernel
  // operand). Unequal weights need a weight tensor on the device: from pinned
  // memory on CUDA, which does not wait; the CPU and meta devices copy it.
  Summary s;
  ppe_test::SyncCounter syncs;
  for (std::size_t i = 0; i < Summary::kFoldEvery; ++i) s.add(meta_scalar(1.0));
  for (std::size_t i = 0; i < Summary::kFoldEvery; ++i) s.add(meta_scalar(1.0), 3.0);
  (void)s.compute_mean();
  CHECK(syncs.text() == "none");
}

TEST_CASE("equal and unequal weights in a fold give the weighted statistics") {
  // 64 × (value 2, weight 3): mean 2, std 0. Then a fold of 32 × (1, w 1)
  // and 32 × (5, w 3): Σw = 192 + 32 + 96 = 320, Σwx = 384 + 32 + 480 = 896,
  // Σwx² = 768 + 32 + 2400 = 3200.
  Summary s;
  for (std::size_t i = 0; i < Summary::kFoldEvery; ++i) s.add(scalar(2.0, /*lazy=*/true), 3.0);
  auto [m1, sd1] = s.make_statistics();
  CHECK(real(m1) == 2.0);
  CHECK(real(sd1) == 0.0);
  for (std::size_t i = 0; i < Summary::kFoldEvery / 2; ++i) {
    s.add(scalar(1.0, true));
    s.add(scalar(5.0, true), 3.0);
  }
  const double mean = 896.0 / 320.0;
  auto [m, sd] = s.make_statistics();
  CHECK(real(m) == doctest::Approx(mean));
  CHECK(real(sd) == doctest::Approx(std::sqrt(3200.0 / 320.0 - mean * mean)));
}

TEST_CASE("to_doubles reads numbers, deferred values and tensors in order") {
  // float64 and int64 CPU tensors are read in place; half precision goes
  // through the one stacked transfer per device; complex is read alone
  // (item() checks that the imaginary part is 0).
  const std::vector<Value> values{Value(1.5), Value(torch::tensor(2.25, torch::kDouble)),
                                  Value([] { return Value(torch::tensor(7, torch::kLong)); }),
                                  Value(torch::tensor(0.5, torch::kHalf)), Value(scalar(-4.0, /*lazy=*/true)), Value(3)};
  CHECK(ppe::reporting::to_doubles(values) == std::vector<double>{1.5, 2.25, 7.0, 0.5, -4.0, 3.0});
  CHECK(ppe::reporting::to_doubles(std::vector<Value>{}).empty());
  ppe::reporting::Observation o{{"a", 1.0}, {"b", torch::tensor(2.0, torch::kHalf)}};
  CHECK(ppe::reporting::to_doubles(o) ==
        std::vector<std::pair<std::string, double>>{{"a", 1.0}, {"b", 2.0}});
  CHECK_THROWS_WITH_AS(ppe::reporting::to_doubles(std::vector<Value>{Value(torch::zeros({2}))}),
                       "ppe::reporting::Value: a tensor with 2 elements has no single number", std::invalid_argument);
}

}  // namespace ppe_test_reporting_tests_test_summary_lazy
