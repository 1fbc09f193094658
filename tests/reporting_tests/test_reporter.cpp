// Port of PPE's tests/pytorch_pfn_extras_tests/test_reporter.py: Reporter,
// report, report_scope, observers, Summary and DictSummary. Expected numbers
// come from PPE's test data (ppe-upstream-test-cases.md §B) or from the
// arithmetic shown beside them.
#include "ppe_test.hpp"

#include <cmath>
#include <latch>
#include <set>
#include <thread>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_reporting_tests_test_reporter {

using ppe::reporting::DictSummary;
using ppe::reporting::Observation;
using ppe::reporting::Reporter;
using ppe::reporting::Summary;
using ppe::reporting::Value;

namespace {

/// Any observer object (PPE's `object()`).
struct Observer {
  int unused = 0;
};

/// PPE's `_check_dict_summary`: the means and population stds of `summary`
/// equal those of the raw `data`, and no other key is present.
void check_dict_summary(DictSummary& summary, const std::vector<std::pair<std::string, std::vector<double>>>& data) {
  std::set<std::string> expected_keys, expected_stat_keys;
  for (const auto& [k, xs] : data) {
    expected_keys.insert(k);
    expected_stat_keys.insert(k);
    expected_stat_keys.insert(k + ".std");
  }
  Observation mean = summary.compute_mean();
  const auto mean_keys = mean.keys();
  CHECK(std::set<std::string>(mean_keys.begin(), mean_keys.end()) == expected_keys);
  Observation stats = summary.make_statistics();
  const auto stat_keys = stats.keys();
  CHECK(std::set<std::string>(stat_keys.begin(), stat_keys.end()) == expected_stat_keys);
  for (const auto& [k, xs] : data) {
    CAPTURE(k);
    double sum = 0, sum2 = 0;
    for (double x : xs) {
      sum += x;
      sum2 += x * x;
    }
    const double m = sum / static_cast<double>(xs.size());
    const double s = std::sqrt(sum2 / static_cast<double>(xs.size()) - m * m);
    REQUIRE(mean.contains(k));
    CHECK(mean.at(k).to_double() == doctest::Approx(m).epsilon(1e-6));
    REQUIRE(stats.contains(k));
    REQUIRE(stats.contains(k + ".std"));
    CHECK(stats.at(k).to_double() == doctest::Approx(m).epsilon(1e-6));
    CHECK(stats.at(k + ".std").to_double() == doctest::Approx(s).epsilon(1e-6));
  }
}

/// A state through Python-compatible pickle bytes and back (torch.save/torch.load).
ppe::State through_pickle(const ppe::State& s) { return ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(s)); }

}  // namespace

// ---- Reporter ---------------------------------------------------------------

TEST_CASE("a new reporter has an empty observation") {
  Reporter reporter;
  CHECK(reporter.observation().empty());
  CHECK(Reporter::current() == nullptr);
}

TEST_CASE("reporter scopes nest: the innermost is current") {
  Reporter r1, r2;
  {
    auto s1 = r1.scope();
    CHECK(Reporter::current() == &r1);
    {
      auto s2 = r2.scope();
      CHECK(Reporter::current() == &r2);
    }
    CHECK(Reporter::current() == &r1);
  }
  CHECK(Reporter::current() == nullptr);
}

TEST_CASE("the current reporter is per thread") {
  // Both threads are inside their reporter's scope at the same time (the latch
  // forces the overlap PPE's test gets from a sleep).
  Reporter r1, r2;
  Reporter* seen1 = nullptr;
  Reporter* seen2 = nullptr;
  std::latch both_inside(2);
  auto body = [&both_inside](Reporter& r, Reporter*& seen) {
    auto scope = r.scope();
    both_inside.arrive_and_wait();
    seen = Reporter::current();
  };
  std::thread t1(body, std::ref(r1), std::ref(seen1));
  std::thread t2(body, std::ref(r2), std::ref(seen2));
  t1.join();
  t2.join();
  CHECK(seen1 == &r1);
  CHECK(seen2 == &r2);
  CHECK(Reporter::current() == nullptr);
}

TEST_CASE("Reporter::scope(observation) makes it current over that observation, then restores") {
  Reporter r1, r2;
  auto s1 = r1.scope();
  Observation observation;
  {
    auto s2 = r2.scope(observation);
    CHECK(Reporter::current() == &r2);
    CHECK(&r2.observation() == &observation);
  }
  CHECK(Reporter::current() == &r1);
  CHECK(&r2.observation() != &observation);
}

TEST_CASE("reports through a registered observer are prefixed with its name") {
  Reporter reporter;
  Observer observer;
  reporter.add_observer("o", &observer);
  reporter.report({{"x", 1}}, &observer);
  const Observation& observation = reporter.observation();
  REQUIRE(observation.contains("o/x"));
  CHECK(observation.at("o/x").to_double() == 1);
  CHECK_FALSE(observation.contains("x"));
  CHECK(observation.size() == 1);
}

TEST_CASE("two observers keep their own prefixes") {
  Reporter reporter;
  Observer observer1, observer2;
  reporter.add_observer("o1", &observer1);
  reporter.add_observer("o2", &observer2);
  reporter.report({{"x", 1}}, &observer1);
  reporter.report({{"y", 2}}, &observer2);
  const Observation& observation = reporter.observation();
  CHECK(observation.keys() == std::vector<std::string>{"o1/x", "o2/y"});
  CHECK(observation.at("o1/x").to_double() == 1);
  CHECK(observation.at("o2/y").to_double() == 2);
  CHECK_FALSE(observation.contains("x"));
  CHECK_FALSE(observation.contains("y"));
  CHECK_FALSE(observation.contains("o1/y"));
  CHECK_FALSE(observation.contains("o2/x"));
}

TEST_CASE("a report without observer keeps the key as given") {
  Reporter reporter;
  reporter.report({{"x", 1}});
  REQUIRE(reporter.observation().contains("x"));
  CHECK(reporter.observation().at("x").to_double() == 1);
}

TEST_CASE("ppe::reporting::report without a current reporter does nothing") {
  Observer observer;
  REQUIRE(Reporter::current() == nullptr);
  CHECK_NOTHROW(ppe::reporting::report({{"x", 1}}, &observer));
  CHECK_NOTHROW(ppe::reporting::report({{"x", 1}}));
}

TEST_CASE("ppe::reporting::report writes into the current reporter") {
  Reporter reporter;
  {
    auto scope = reporter.scope();
    ppe::reporting::report({{"x", 1}});
  }
  REQUIRE(reporter.observation().contains("x"));
  CHECK(reporter.observation().at("x").to_double() == 1);
}

TEST_CASE("ppe::reporting::report with a registered observer") {
  Reporter reporter;
  Observer observer;
  reporter.add_observer("o", &observer);
  {
    auto scope = reporter.scope();
    ppe::reporting::report({{"x", 1}}, &observer);
  }
  REQUIRE(reporter.observation().contains("o/x"));
  CHECK(reporter.observation().at("o/x").to_double() == 1);
}

TEST_CASE("reporting through an unregistered observer is an error") {
  // PPE raises KeyError; ours is std::invalid_argument saying how to register.
  Reporter reporter;
  Observer observer;
  auto scope = reporter.scope();
  CHECK_THROWS_WITH_AS(ppe::reporting::report({{"x", 1}}, &observer), doctest::Contains("not registered"),
                       std::invalid_argument);
  CHECK(reporter.observation().empty());
}

TEST_CASE("report_scope redirects the current reporter's writes") {
  Reporter reporter;
  Observation observation;
  {
    auto scope = reporter.scope();
    auto redirect = ppe::reporting::report_scope(observation);
    ppe::reporting::report({{"x", 1}});
  }
  REQUIRE(observation.contains("x"));
  CHECK(observation.at("x").to_double() == 1);
  CHECK_FALSE(reporter.observation().contains("x"));
}

TEST_CASE("a reported tensor that requires grad is stored detached") {
  Reporter reporter;
  torch::Tensor x = torch::tensor(1.0f, torch::requires_grad());
  {
    auto scope = reporter.scope();
    ppe::reporting::report({{"x", x}});
  }
  REQUIRE(reporter.observation().contains("x"));
  const Value& stored = reporter.observation().at("x");
  REQUIRE(stored.is_tensor());
  CHECK_FALSE(stored.tensor().requires_grad());
  CHECK(x.requires_grad());
  CHECK(stored.to_double() == 1.0);
  // A shallow copy: same storage, no autograd history, and x's graph is intact.
  CHECK(stored.tensor().data_ptr() == x.data_ptr());
  CHECK_FALSE(stored.tensor().grad_fn());
  torch::Tensor y = x.mul(3);
  ppe::reporting::Reporter r2;
  {
    auto scope = r2.scope();
    ppe::reporting::report({{"y", y}});
  }
  const torch::Tensor& sy = r2.observation().at("y").tensor();
  CHECK_FALSE(sy.requires_grad());
  CHECK(sy.item<float>() == 3.0f);
  y.backward();
  CHECK(x.grad().item<float>() == 3.0f);
}

TEST_CASE("a reported callable is stored as a callable") {
  Reporter reporter;
  int calls = 0;
  {
    auto scope = reporter.scope();
    ppe::reporting::report({{"x", [&calls] {
                               ++calls;
                               return 1.0;
                             }}});
  }
  REQUIRE(reporter.observation().contains("x"));
  const Value& stored = reporter.observation().at("x");
  CHECK(stored.is_deferred());
  CHECK(calls == 0);
  CHECK(stored.to_double() == 1.0);
  CHECK(calls == 1);
}

TEST_CASE("a report into an existing key overwrites it in place") {
  Reporter reporter;
  reporter.report({{"a", 1}, {"b", 2}});
  reporter.report({{"a", 3}});
  CHECK(reporter.observation().keys() == std::vector<std::string>{"a", "b"});
  CHECK(reporter.observation().at("a").to_double() == 3);
}

TEST_CASE("a string is not a reportable value") {
  // PPE raises TypeError when a summary meets a string; here it does not compile.
  static_assert(!std::is_constructible_v<Value, const char*>);
  static_assert(!std::is_constructible_v<Value, std::string>);
  CHECK(std::is_constructible_v<Value, double>);
}

// ---- observers of the manager's models ---------------------------------------

namespace {
/// A submodule that reports with itself as the observer.
struct EncoderImpl : torch::nn::Module {
  EncoderImpl() { fc = register_module("fc", torch::nn::Linear(2, 2)); }
  void step() { ppe::reporting::report({{"v", 1.0}}, this); }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Encoder);

/// The model: reports as `main`, its child `enc` as `main/enc`.
struct NetImpl : torch::nn::Module {
  NetImpl() { enc = register_module("enc", Encoder()); }
  void step() {
    ppe::reporting::report({{"v", 2.0}}, this);
    enc->step();
  }
  Encoder enc{nullptr};
};
TORCH_MODULE(Net);

/// Something the user's module also derives from, placed before the Module
/// base so that the Module subobject does not start at the object's address.
struct Mixin {
  virtual ~Mixin() = default;
  double payload[3] = {0, 0, 0};
};
struct MixedImpl : Mixin, torch::nn::Module {
  void step() { ppe::reporting::report({{"v", 3.0}}, this); }
};
struct HolderOfMixed : torch::nn::Module {
  HolderOfMixed() { mixed = register_module("mixed", std::make_shared<MixedImpl>()); }
  std::shared_ptr<MixedImpl> mixed;
};
}  // namespace

TEST_CASE("models given to the manager observe as main and main/<child>") {
  // PPE 0.9.0 names the child "mainenc" (spec §3.2); ours has the separator.
  Net net;
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 10), net, ppe::training::Optimizers{});
  manager.run_iteration([&] { net->step(); });
  const Observation& obs = manager.observation();
  CHECK(obs.keys() == std::vector<std::string>{"main/v", "main/enc/v"});
  CHECK(obs.at("main/v").to_double() == 2.0);
  CHECK(obs.at("main/enc/v").to_double() == 1.0);
  // Deeper modules keep named_modules()' dotted names after the prefix, as in
  // PPE (which gives "mainenc.fc").
  auto& reporter = manager.reporter();
  REQUIRE(reporter.observer_name(net->enc->fc) != nullptr);
  CHECK(*reporter.observer_name(net->enc->fc) == "main/enc.fc");
  // The holders themselves identify the same observers as `this`.
  manager.run_iteration([&] { ppe::reporting::report({{"w", 4.0}}, net->enc); });
  CHECK(manager.observation().at("main/enc/w").to_double() == 4.0);
}

TEST_CASE("a module whose Module base is not its first base is found through `this`") {
  auto holder = std::make_shared<HolderOfMixed>();
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 10), holder, ppe::training::Optimizers{});
  manager.run_iteration([&] { holder->mixed->step(); });
  REQUIRE(manager.observation().contains("main/mixed/v"));
  CHECK(manager.observation().at("main/mixed/v").to_double() == 3.0);
  // The same object through a Module pointer, a MixedImpl pointer, a
  // shared_ptr and a reference.
  const torch::nn::Module* as_module = holder->mixed.get();
  REQUIRE(static_cast<const void*>(as_module) != static_cast<const void*>(holder->mixed.get()));
  REQUIRE(manager.reporter().observer_name(as_module) != nullptr);
  CHECK(*manager.reporter().observer_name(as_module) == "main/mixed");
  CHECK(manager.reporter().observer_name(holder->mixed.get()) == manager.reporter().observer_name(as_module));
  CHECK(manager.reporter().observer_name(holder->mixed) == manager.reporter().observer_name(as_module));
  CHECK(manager.reporter().observer_name(*holder->mixed) == manager.reporter().observer_name(as_module));
}

TEST_CASE("Reporter::add_observers registers named_modules with the separator") {
  Net net;
  Reporter reporter;
  reporter.add_observers("main", net->named_modules());
  REQUIRE(reporter.observer_name(net.get()) != nullptr);
  CHECK(*reporter.observer_name(net.get()) == "main");
  REQUIRE(reporter.observer_name(net->enc.get()) != nullptr);
  CHECK(*reporter.observer_name(net->enc.get()) == "main/enc");
  REQUIRE(reporter.observer_name(net->enc->fc) != nullptr);
  CHECK(*reporter.observer_name(net->enc->fc) == "main/enc.fc");
  // Re-registering an observer renames it.
  reporter.add_observer("renamed", net->enc);
  CHECK(*reporter.observer_name(net->enc.get()) == "renamed");
}

// ---- Summary ----------------------------------------------------------------

TEST_CASE("Summary of tensors: mean -0.5 and std 1.5 as tensors") {
  // (1 + -2) / 2 = -0.5; sqrt((1 + 4) / 2 - 0.25) = sqrt(2.25) = 1.5.
  Summary summary;
  summary.add(torch::tensor(1.0f));
  summary.add(torch::tensor(-2.0f));
  Value mean = summary.compute_mean();
  REQUIRE(mean.is_tensor());
  CHECK(std::string(c10::toString(mean.tensor().scalar_type())) == "Float");
  CHECK(mean.to_double() == doctest::Approx(-0.5));
  auto [m, s] = summary.make_statistics();
  REQUIRE(m.is_tensor());
  REQUIRE(s.is_tensor());
  CHECK(m.to_double() == doctest::Approx(-0.5));
  CHECK(s.to_double() == doctest::Approx(1.5));
}

TEST_CASE("Summary of tensors that require grad keeps no autograd graph") {
  // PPE accumulates under torch.no_grad(): the sums never require grad. A
  // summary holding a tensor with a grad_fn would keep the whole graph (and
  // its saved activations) alive until the summary is read.
  torch::Tensor x = torch::tensor(2.0f, torch::requires_grad());
  Summary summary;
  summary.add(x * 3);  // 6
  summary.add(x);      // 2
  CHECK(x.requires_grad());
  auto [mean, std] = summary.make_statistics();
  CHECK_FALSE(mean.tensor().requires_grad());
  CHECK_FALSE(std.tensor().requires_grad());
  CHECK(mean.to_double() == 4.0);  // (6 + 2) / 2
  CHECK(std.to_double() == 2.0);   // sqrt((36 + 4) / 2 - 16) = sqrt(4)
}

TEST_CASE("Summary of ints and of floats: mean 2, std sqrt(2/3)") {
  // mean (1+2+3)/3 = 2; E[x²] = 14/3; 14/3 - 4 = 2/3.
  Summary ints, floats;
  for (int v : {1, 2, 3}) ints.add(v);
  for (double v : {1.0, 2.0, 3.0}) floats.add(v);
  for (Summary* s : {&ints, &floats}) {
    Value mean = s->compute_mean();
    CHECK(mean.is_scalar());
    CHECK(mean.to_double() == doctest::Approx(2.0));
    auto [m, sd] = s->make_statistics();
    CHECK(m.to_double() == doctest::Approx(2.0));
    CHECK(sd.to_double() == doctest::Approx(std::sqrt(2.0 / 3.0)));
  }
}

TEST_CASE("Summary weights: number, 0-dim double tensor, 0-dim float tensor") {
  Summary summary;
  summary.add(1.0, 0.5);
  summary.add(2.0, torch::tensor(0.4, torch::kDouble));  // PPE: numpy.array(0.4)
  summary.add(3.0, torch::tensor(0.3f));                 // PPE: torch.Tensor(numpy.array(0.3))
  const double expected = (1 * 0.5 + 2 * 0.4 + 3 * 0.3) / (0.5 + 0.4 + 0.3);  // 2.2 / 1.2 = 1.8333...
  CHECK(summary.compute_mean().to_double() == doctest::Approx(expected).epsilon(1e-7));
  CHECK_THROWS_AS(summary.add(4.0, torch::tensor({0.5})), std::invalid_argument);
}

TEST_CASE("Summary: a deferred value counts when the summary is read") {
  Summary summary;
  int calls = 0;
  summary.add(Value([&calls] {
    ++calls;
    return 1.0;
  }));
  CHECK(summary.weight() == 0);  // PPE: _n == 0, one entry in _deferred
  CHECK_FALSE(summary.empty());
  CHECK(calls == 0);
  CHECK(summary.compute_mean().to_double() == 1.0);
  CHECK(calls == 1);
  CHECK(summary.weight() == 1);
}

TEST_CASE("Summary + Summary sums the fields") {
  // s1 = {1,2,3}, s2 = {4,5,6,7}: Σx = 28, Σx² = 1+4+9+16+25+36+49 = 140, n = 7.
  Summary s1, s2;
  for (double v : {1.0, 2.0, 3.0}) s1.add(v);
  for (double v : {4.0, 5.0, 6.0, 7.0}) s2.add(v);
  Summary s = s1 + s2;
  CHECK(s.state_dict() == ppe::State::dict({{"_x", 28.0}, {"_x2", 140.0}, {"_n", 7.0}}));
  // The operands are unchanged.
  CHECK(s1.state_dict() == ppe::State::dict({{"_x", 6.0}, {"_x2", 14.0}, {"_n", 3.0}}));
}

TEST_CASE("Summary + Summary with tensors and deferred values") {
  // {tensor 1, deferred 2} + {3, tensor 4}: mean 10/4 = 2.5, E[x²] = 30/4 = 7.5, var 1.25.
  Summary a, b;
  a.add(torch::tensor(1.0, torch::kDouble));
  a.add(Value([] { return 2.0; }));
  b.add(3.0);
  b.add(torch::tensor(4.0, torch::kDouble));
  Summary s = a + b;
  auto [m, sd] = s.make_statistics();
  CHECK(m.to_double() == doctest::Approx(2.5));
  CHECK(sd.to_double() == doctest::Approx(std::sqrt(1.25)));
}

namespace {
/// PPE's `_check_summary_serialize`: two values, state through pickle, a third
/// value, then mean and std of all three (computed here as PPE computes them).
void check_summary_serialize(const Value& v1, const Value& v2, const Value& v3) {
  Summary summary;
  summary.add(v1);
  summary.add(v2);
  Summary summary2;
  summary2.load_state_dict(through_pickle(summary.state_dict()));
  summary2.add(v3);

  const double x1 = v1.to_double(), x2 = v2.to_double(), x3 = v3.to_double();
  const double expected_mean = (x1 + x2 + x3) / 3.0;
  const double expected_std = std::sqrt((x1 * x1 + x2 * x2 + x3 * x3) / 3.0 - expected_mean * expected_mean);

  CHECK(summary2.compute_mean().to_double() == doctest::Approx(expected_mean).epsilon(1e-7));
  auto [mean, std] = summary2.make_statistics();
  CHECK(mean.to_double() == doctest::Approx(expected_mean).epsilon(1e-7));
  CHECK(std.to_double() == doctest::Approx(expected_std).epsilon(1e-6));
}
}  // namespace

TEST_CASE("Summary state round-trips through pickle for PPE's value triples") {
  SUBCASE("float32 scalars (PPE: numpy float32 arrays)") {
    check_summary_serialize(torch::tensor(1.5f), torch::tensor(2.0f), torch::tensor(3.5f));
  }
  SUBCASE("int32 scalars (PPE: numpy int32 arrays)") {
    check_summary_serialize(torch::tensor(1, torch::kInt), torch::tensor(-2, torch::kInt),
                            torch::tensor(2, torch::kInt));
  }
  SUBCASE("floats") { check_summary_serialize(1.5, 2.0, 3.5); }
  SUBCASE("ints") { check_summary_serialize(1, -2, 2); }
  SUBCASE("tensors") {
    check_summary_serialize(torch::tensor(1.5), torch::tensor(2.0), torch::tensor(3.5));
  }
  SUBCASE("tensors that require grad, then a float") {
    check_summary_serialize(torch::tensor(1.5, torch::requires_grad()), torch::tensor(2.0, torch::requires_grad()),
                            3.5);
  }
}

TEST_CASE("Summary keeps fractional weights exactly in its state (PPE truncates _n)") {
  // Σwx = 0.5·1 + 0.25·2 = 1.0; Σwx² = 0.5·1 + 0.25·4 = 1.5; Σw = 0.75
  // (PPE 0.9.0 saves int(0.75) = 0). mean = 1.0 / 0.75 = 1.3333...
  Summary summary;
  summary.add(1.0, 0.5);
  summary.add(2.0, 0.25);
  const ppe::State state = summary.state_dict();
  CHECK(state == ppe::State::dict({{"_x", 1.0}, {"_x2", 1.5}, {"_n", 0.75}}));
  CHECK(summary.compute_mean().to_double() == doctest::Approx(1.3333333333333333));
  Summary restored;
  restored.load_state_dict(through_pickle(state));
  CHECK(restored.weight() == 0.75);
  CHECK(restored.compute_mean().to_double() == doctest::Approx(1.3333333333333333));
}

TEST_CASE("Summary loads PPE's state with an integer _n") {
  // PPE writes {"_x": float, "_x2": float, "_n": int}.
  Summary summary;
  summary.load_state_dict(ppe::State::dict({{"_x", 6.0}, {"_x2", 14.0}, {"_n", 3}}));
  CHECK(summary.compute_mean().to_double() == 2.0);
}

TEST_CASE("an empty Summary has no mean") {
  // PPE: ZeroDivisionError.
  Summary summary;
  CHECK(summary.empty());
  CHECK_THROWS_AS(summary.compute_mean(), std::domain_error);
  CHECK_THROWS_AS(summary.make_statistics(), std::domain_error);
}

// ---- DictSummary ------------------------------------------------------------

TEST_CASE("DictSummary: means and stds per key") {
  DictSummary summary;
  summary.add({{"numpy", torch::tensor(3.0f)}, {"int", 1}, {"float", 4.0}});
  summary.add({{"numpy", torch::tensor(1.0f)}, {"int", 5}, {"float", 9.0}});
  summary.add({{"numpy", torch::tensor(2.0f)}, {"int", 6}, {"float", 5.0}});
  summary.add({{"numpy", torch::tensor(3.0f)}, {"int", 5}, {"float", 8.0}});
  check_dict_summary(summary, {{"numpy", {3.0, 1.0, 2.0, 3.0}}, {"int", {1, 5, 6, 5}}, {"float", {4.0, 9.0, 5.0, 8.0}}});
  CHECK(summary.keys() == std::vector<std::string>{"numpy", "int", "float"});
}

TEST_CASE("DictSummary with sparse keys") {
  DictSummary summary;
  summary.add({{"a", 3.0}, {"b", 1.0}});
  summary.add({{"a", 1.0}, {"b", 5.0}, {"c", 9.0}});
  summary.add({{"b", 6.0}});
  summary.add({{"a", 3.0}, {"b", 5.0}, {"c", 8.0}});
  check_dict_summary(summary, {{"a", {3.0, 1.0, 3.0}}, {"b", {1.0, 5.0, 6.0, 5.0}}, {"c", {9.0, 8.0}}});
}

TEST_CASE("DictSummary weights; a weight that is not 0-dim is an error") {
  DictSummary summary;
  summary.add("a", 1.0, 0.5);
  summary.add("a", 2.0, torch::tensor(0.4, torch::kDouble));  // PPE: numpy.array(0.4)
  summary.add("a", 3.0, torch::tensor(0.3f));                 // PPE: torch.Tensor(numpy.array(0.3))
  const double expected = (1 * 0.5 + 2 * 0.4 + 3 * 0.3) / (0.5 + 0.4 + 0.3);  // 1.8333...
  CHECK(summary.compute_mean().at("a").to_double() == doctest::Approx(expected).epsilon(1e-7));
  // PPE: numpy.array([0.5]) and torch.Tensor(numpy.array([0.5])) raise ValueError.
  CHECK_THROWS_WITH_AS(summary.add("a", 4.0, torch::tensor({0.5}, torch::kDouble)), doctest::Contains("'a'"),
                       std::invalid_argument);
  CHECK_THROWS_AS(summary.add("a", 4.0, torch::tensor({0.5f})), std::invalid_argument);
  // Nothing was added by the failed calls.
  CHECK(summary.compute_mean().at("a").to_double() == doctest::Approx(expected).epsilon(1e-7));
}

TEST_CASE("DictSummary state: load into a new summary and continue") {
  DictSummary summary;
  summary.add({{"numpy", torch::tensor(3.0f)}, {"int", 1}, {"float", 4.0}});
  summary.add({{"numpy", torch::tensor(1.0f)}, {"int", 5}, {"float", 9.0}});
  summary.add({{"numpy", torch::tensor(2.0f)}, {"int", 6}, {"float", 5.0}});
  SUBCASE("directly") {
    DictSummary summary2;
    summary2.load_state_dict(summary.state_dict());
    summary2.add({{"numpy", torch::tensor(3.0f)}, {"int", 5}, {"float", 8.0}});
    check_dict_summary(summary2,
                       {{"numpy", {3.0, 1.0, 2.0, 3.0}}, {"int", {1, 5, 6, 5}}, {"float", {4.0, 9.0, 5.0, 8.0}}});
  }
  SUBCASE("through pickle") {
    DictSummary summary2;
    summary2.load_state_dict(through_pickle(summary.state_dict()));
    summary2.add({{"numpy", torch::tensor(3.0f)}, {"int", 5}, {"float", 8.0}});
    check_dict_summary(summary2,
                       {{"numpy", {3.0, 1.0, 2.0, 3.0}}, {"int", {1, 5, 6, 5}}, {"float", {4.0, 9.0, 5.0, 8.0}}});
  }
}

TEST_CASE("DictSummary keys with delimiters survive its state") {
  for (std::string d : {"/", "."}) {
    for (bool pickle : {false, true}) {
      CAPTURE(d);
      CAPTURE(pickle);
      const std::string key1 = "a" + d + "b", key2 = d + "a" + d + "b", key3 = "a" + d + "b" + d;
      DictSummary summary;
      summary.add(key1, 3.0);
      summary.add(key2, 1.0);
      summary.add(key3, 4.0);
      summary.add(key1, 1.0);
      summary.add(key2, 5.0);
      summary.add(key3, 9.0);
      summary.add(key1, 2.0);
      summary.add(key2, 6.0);
      summary.add(key3, 5.0);
      DictSummary summary2;
      summary2.load_state_dict(pickle ? through_pickle(summary.state_dict()) : summary.state_dict());
      summary2.add(key1, 3.0);
      summary2.add(key2, 5.0);
      summary2.add(key3, 8.0);
      check_dict_summary(summary2,
                         {{key1, {3.0, 1.0, 2.0, 3.0}}, {key2, {1.0, 5.0, 6.0, 5.0}}, {key3, {4.0, 9.0, 5.0, 8.0}}});
    }
  }
}

TEST_CASE("DictSummary::load_state_dict replaces everything") {
  DictSummary summary;
  summary.add({{"a", 3.0}, {"b", 1.0}});
  summary.add({{"a", 1.0}, {"b", 5.0}});
  DictSummary summary2;
  summary2.add({{"c", 5.0}});
  summary2.load_state_dict(summary.state_dict());
  check_dict_summary(summary2, {{"a", {3.0, 1.0}}, {"b", {1.0, 5.0}}});
  CHECK_FALSE(summary2.contains("c"));
}

TEST_CASE("DictSummary rolls back to an earlier state") {
  DictSummary summary;
  summary.add({{"a", 3.0}, {"b", 1.0}});
  summary.add({{"a", 1.0}, {"b", 5.0}});
  const ppe::State state = summary.state_dict();
  summary.add({{"a", 2.0}, {"b", 6.0}, {"c", 5.0}});
  summary.add({{"a", 3.0}, {"b", 4.0}, {"c", 6.0}});
  summary.load_state_dict(state);
  summary.add({{"a", 3.0}, {"b", 5.0}, {"c", 8.0}});
  check_dict_summary(summary, {{"a", {3.0, 1.0, 3.0}}, {"b", {1.0, 5.0, 5.0}}, {"c", {8.0}}});
}

TEST_CASE("DictSummary with deferred values") {
  DictSummary summary;
  summary.add({{"x", [] { return 1.0; }}, {"y", [] { return 2.0; }}});
  summary.add({{"x", [] { return -1.0; }}});
  check_dict_summary(summary, {{"x", {1.0, -1.0}}, {"y", {2.0}}});
}

TEST_CASE("DictSummary + DictSummary: sorted union of keys") {
  DictSummary s1, s2;
  s1.add({{"a", 1.0}, {"b", 0.1}, {"c", 0.01}});
  s1.add({{"a", 2.0}, {"b", 0.2}, {"c", 0.02}});
  s2.add({{"a", 3.0}, {"b", 0.3}, {"f", 0.03}});
  s2.add({{"a", 4.0}, {"b", 0.4}, {"f", 0.04}});
  s2.add({{"a", 5.0}, {"b", 0.5}, {"f", 0.05}});
  DictSummary s = s1 + s2;
  CHECK(s.keys() == std::vector<std::string>{"a", "b", "c", "f"});
  check_dict_summary(s, {{"a", {1, 2, 3, 4, 5}},
                         {"b", {0.1, 0.2, 0.3, 0.4, 0.5}},
                         {"c", {0.01, 0.02}},
                         {"f", {0.03, 0.04, 0.05}}});
  // Sorted even when the left operand's keys come later in order.
  DictSummary z, y;
  z.add({{"z", 1.0}});
  y.add({{"y", 2.0}, {"a", 3.0}});
  CHECK((z + y).keys() == std::vector<std::string>{"a", "y", "z"});
}

TEST_CASE("DictSummary state_dict, compute_mean, make_statistics (PPE's recorded block)") {
  // PPE's recorded outputs are consistent with these adds (each key twice):
  //   a: 1, 3         → _x 4, _x2 1+9 = 10, mean 2, std sqrt(10/2 - 4) = 1
  //   b: 2, 4         → _x 6, _x2 4+16 = 20, mean 3, std sqrt(20/2 - 9) = 1
  //   c: tensor 3, 5  → _x 8, _x2 9+25 = 34, mean tensor(4.), std tensor(1.)
  //   d: 1 (w 0.5), 3 (w 1.5) → _x 0.5+4.5 = 5, _x2 0.5+13.5 = 14, _n 2,
  //      mean 2.5, std sqrt(14/2 - 6.25) = sqrt(0.75) = 0.8660254037844386
  //   v: a 1-D tensor, n: a 2-D tensor → not scalars, skipped.
  DictSummary summary;
  summary.add({{"a", 1.0}, {"b", 2.0}, {"c", torch::tensor(3.0f)}, {"v", torch::tensor({1.0f, 2.0f})}});
  summary.add("d", 1.0, 0.5);
  summary.add({{"n", torch::ones({2, 2})}, {"a", 3.0}, {"b", 4.0}, {"c", torch::tensor(5.0f)}});
  summary.add("d", 3.0, 1.5);

  // CPU tensors are read when added and summed as doubles, as PPE saves its
  // sums; "_dtype" records that the mean of "c" is a float32 tensor.
  const ppe::State expected_state = ppe::State::dict({
      {"a", ppe::State::dict({{"_x", 4.0}, {"_x2", 10.0}, {"_n", 2.0}})},
      {"b", ppe::State::dict({{"_x", 6.0}, {"_x2", 20.0}, {"_n", 2.0}})},
      {"c", ppe::State::dict({{"_x", 8.0}, {"_x2", 34.0}, {"_n", 2.0}, {"_dtype", "float32"}})},
      {"d", ppe::State::dict({{"_x", 5.0}, {"_x2", 14.0}, {"_n", 2.0}})},
  });
  CHECK(ppe::serialization::state_equal(summary.state_dict(), expected_state));

  Observation mean = summary.compute_mean();
  CHECK(mean.keys() == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(mean.at("a").is_scalar());
  CHECK(mean.at("a").to_double() == 2.0);
  CHECK(mean.at("b").to_double() == 3.0);
  REQUIRE(mean.at("c").is_tensor());
  CHECK(mean.at("c").to_double() == 4.0);
  CHECK(mean.at("d").to_double() == 2.5);

  Observation stats = summary.make_statistics();
  CHECK(stats.keys() == std::vector<std::string>{"a", "a.std", "b", "b.std", "c", "c.std", "d", "d.std"});
  CHECK(stats.at("a").to_double() == 2.0);
  CHECK(stats.at("a.std").to_double() == 1.0);
  CHECK(stats.at("b").to_double() == 3.0);
  CHECK(stats.at("b.std").to_double() == 1.0);
  REQUIRE(stats.at("c").is_tensor());
  REQUIRE(stats.at("c.std").is_tensor());
  CHECK(stats.at("c").to_double() == 4.0);
  CHECK(stats.at("c.std").to_double() == 1.0);
  CHECK(stats.at("d").to_double() == 2.5);
  CHECK(stats.at("d.std").to_double() == doctest::Approx(0.8660254037844386));
}

TEST_CASE("an empty DictSummary has an empty mean") {
  DictSummary summary;
  CHECK(summary.empty());
  CHECK(summary.compute_mean().empty());
  CHECK(summary.make_statistics().empty());
  CHECK(summary.state_dict() == ppe::State::dict());
}

TEST_CASE("DictSummary adds a whole observation") {
  Observation obs{{"x", 1.0}, {"y", torch::tensor(2.0)}};
  DictSummary summary;
  summary.add(obs);
  obs.set("x", 3.0);
  summary.add(obs);
  check_dict_summary(summary, {{"x", {1.0, 3.0}}, {"y", {2.0, 2.0}}});
}

TEST_CASE("Observation: ordered, overwrite in place, erase, bounded key slots") {
  ppe::reporting::Observation obs{{"b", 1.0}, {"a", 2.0}};
  obs.set("b", 3.0);
  CHECK(obs.keys() == std::vector<std::string>{"b", "a"});
  CHECK(obs.at("b").scalar() == 3.0);
  CHECK(obs.erase("b"));
  CHECK_FALSE(obs.erase("b"));
  CHECK(obs.keys() == std::vector<std::string>{"a"});
  CHECK_THROWS_WITH_AS(obs.at("zz"), doctest::Contains("'zz' not found in the observation; keys present: ['a']"),
                       std::out_of_range);
  // A new key every "iteration": the dead slots are dropped once they
  // outnumber the live ones past 256, so the slot count stays bounded.
  for (int i = 0; i < 10000; ++i) {
    obs.clear();
    obs.set("step_" + std::to_string(i), static_cast<double>(i));
    obs.set("loss", 0.5);
    CHECK(obs.size() == 2);
  }
  CHECK(obs.slot_count() <= 257);
  CHECK(obs.at("step_9999").scalar() == 9999.0);
  CHECK(obs.keys() == std::vector<std::string>{"step_9999", "loss"});
}

}  // namespace ppe_test_reporting_tests_test_reporter
