// ParameterStatistics. PPE 0.9.0 has no test of it: this ports Chainer's
// test_parameter_statistics.py table (key counts per option set, late
// registration, key pattern, custom function) with PPE's numbers, and checks
// values, keys and key order against PPE 0.9.0 runs on a fixed model.
//
// Reference numbers: PPE 0.9.0 (torch 1.13) with
//   m = torch.nn.Linear(3, 2); weight [[0.5, -1, 0], [2, 0, 0.25]], bias [0, -3],
//   weight.grad [[0.1, 0.2, 0.3], [0, 0, -0.4]], bias.grad [1, 0],
//   ExtensionsManager({"main": m}, {}, iters / ipe, iters_per_epoch=ipe),
//   manager.extend(ParameterStatistics(m, ...)), empty iterations, then
//   float() of each value of manager.observation after the last one.
#include "ppe_test.hpp"

#include <ATen/record_function.h>

#include <ppe/training/extensions/parameter_statistics.hpp>

#include <cmath>
#include <limits>
#include <map>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_parameter_statistics {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

torch::nn::Linear fixed_linear() {
  torch::nn::Linear m(3, 2);
  torch::NoGradGuard no_grad;
  m->weight.copy_(torch::tensor({{0.5f, -1.0f, 0.0f}, {2.0f, 0.0f, 0.25f}}));
  m->bias.copy_(torch::tensor({0.0f, -3.0f}));
  m->weight.mutable_grad() = torch::tensor({{0.1f, 0.2f, 0.3f}, {0.0f, 0.0f, -0.4f}});
  m->bias.mutable_grad() = torch::tensor({1.0f, 0.0f});
  return m;
}

ext::Statistics min_only() {
  return {{"min", [](const at::Tensor& x) { return x.min(); }}};
}

using Observed = std::vector<std::pair<std::string, double>>;

/// The observation after the last of `iters` iterations of a manager with
/// `iters_per_epoch` ipe and the extension, in report order; `before(i)`
/// runs before iteration i.
template <class E, class Before>
Observed run(E extension, std::int64_t iters, std::int64_t ipe, Before before) {
  auto manager = ppe_test::make_manager(static_cast<double>(iters) / static_cast<double>(ipe), ipe,
                                        std::move(extension));
  for (std::int64_t i = 0; i < iters; ++i) {
    before(i);
    ppe_test::step(manager);
  }
  Observed out;
  for (const auto& key : manager.observation().keys())
    out.emplace_back(std::string(key), manager.observation().at(key).to_double());
  return out;
}
template <class E>
Observed run(E extension, std::int64_t iters = 1, std::int64_t ipe = 1) {
  return run(std::move(extension), iters, ipe, [](std::int64_t) {});
}

std::vector<std::string> keys_of(const Observed& observed) {
  std::vector<std::string> out;
  for (const auto& [k, v] : observed) out.push_back(k);
  return out;
}

/// Same keys in the same order, values equal (NaN equals NaN) within `eps` (relative).
void check_observed(const Observed& got, const Observed& want, double eps = 0) {
  REQUIRE(keys_of(got) == keys_of(want));
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(got[i].first);
    if (std::isnan(want[i].second))
      CHECK(std::isnan(got[i].second));
    else if (eps == 0)
      CHECK(got[i].second == want[i].second);
    else
      CHECK(got[i].second == doctest::Approx(want[i].second).epsilon(eps));
  }
}

}  // namespace

// Chainer's TestParameterStatistics table (test_report, test_report_late_register,
// test_report_key_pattern) with PPE's key sets: Linear(3, 2), 10 iterations of
// 10 per epoch, reported once at the end.
TEST_CASE("Chainer's table with PPE's keys: statistics, report_params, report_grads, prefix") {
  struct Row {
    bool defaults;
    bool report_params, report_grads;
    std::string prefix;
    std::vector<std::string> keys;  // sorted; from PPE 0.9.0
  };
  const auto stats5 = [](const std::string& head) {
    std::vector<std::string> out;
    for (const char* s : {"max", "mean", "min", "std", "zeros"}) out.push_back(head + s);
    return out;
  };
  const auto concat = [](std::vector<std::vector<std::string>> parts) {
    std::vector<std::string> out;
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  const std::vector<Row> rows = {
      {false, true, true, "", {"bias/data/min", "bias/grad/min", "weight/data/min", "weight/grad/min"}},
      {false, false, true, "test", {"test/bias/grad/min", "test/weight/grad/min"}},
      {false, true, false, "", {"bias/data/min", "weight/data/min"}},
      {false, false, false, "test", {}},
      {true, true, true, "", concat({stats5("bias/data/"), stats5("bias/grad/"), stats5("weight/data/"),
                                     stats5("weight/grad/")})},
      {true, true, false, "test", concat({stats5("test/bias/data/"), stats5("test/weight/data/")})},
      {true, false, true, "", concat({stats5("bias/grad/"), stats5("weight/grad/")})},
      {true, false, false, "test", {}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.defaults);
    CAPTURE(row.report_params);
    CAPTURE(row.report_grads);
    CAPTURE(row.prefix);
    const ext::Statistics statistics = row.defaults ? ext::default_parameter_statistics() : min_only();
    const auto options = ext::ParameterStatisticsOptions()
                             .report_params(row.report_params)
                             .report_grads(row.report_grads)
                             .prefix(row.prefix);
    {  // test_report, test_report_key_pattern
      std::vector<std::string> keys =
          keys_of(run(ext::ParameterStatistics(fixed_linear(), ext::ParameterStatisticsOptions(options).statistics(statistics)), 10, 10));
      std::sort(keys.begin(), keys.end());
      CHECK(keys == row.keys);
      for (const auto& k : keys) CHECK(k.rfind(row.prefix, 0) == 0);
    }
    {  // test_report_late_register
      ext::ParameterStatistics ps(fixed_linear(), ext::ParameterStatisticsOptions(options).statistics({}));
      for (const auto& s : statistics) ps.register_statistics(s.name, s.function);
      std::vector<std::string> keys = keys_of(run(std::move(ps), 10, 10));
      std::sort(keys.begin(), keys.end());
      CHECK(keys == row.keys);
    }
  }
}

// Chainer's TestParameterStatisticsCustomFunction: a statistic that is always 1.
TEST_CASE("Chainer's custom function: every reported value is the function's") {
  const Observed got = run(ext::ParameterStatistics(
                               fixed_linear(), ext::ParameterStatisticsOptions().prefix("test").statistics(
                                                   {{"one", [](const at::Tensor&) { return torch::ones({}); }}})),
                           10, 10);
  CHECK(got.size() == 4);
  for (const auto& [k, v] : got) CHECK(v == 1.0);
}

TEST_CASE("ParameterStatistics: PPE's values, keys and order on a fixed model (one call)") {
  // PPE 0.9.0, ParameterStatistics(m, prefix="pre"), one iteration of one per epoch.
  const Observed want = {
      {"pre/weight/data/mean", 0.2916666567325592}, {"pre/weight/data/std", 0.9800084829330444},
      {"pre/weight/data/min", -1.0},                {"pre/weight/data/max", 2.0},
      {"pre/weight/data/zeros", 2.0},               {"pre/weight/grad/mean", 0.03333333507180214},
      {"pre/weight/grad/std", 0.24221202731132507}, {"pre/weight/grad/min", -0.4000000059604645},
      {"pre/weight/grad/max", 0.30000001192092896}, {"pre/weight/grad/zeros", 2.0},
      {"pre/bias/data/mean", -1.5},                 {"pre/bias/data/std", 2.1213202476501465},
      {"pre/bias/data/min", -3.0},                  {"pre/bias/data/max", 0.0},
      {"pre/bias/data/zeros", 1.0},                 {"pre/bias/grad/mean", 0.5},
      {"pre/bias/grad/std", 0.7071067690849304},    {"pre/bias/grad/min", 0.0},
      {"pre/bias/grad/max", 1.0},                   {"pre/bias/grad/zeros", 1.0},
  };
  // Float statistics read as doubles: exactly PPE's float(value).
  check_observed(run(ext::ParameterStatistics(fixed_linear(), ext::ParameterStatisticsOptions().prefix("pre"))), want);
}

TEST_CASE("ParameterStatistics: the mean over an interval (3 calls, every epoch of 3)") {
  // PPE 0.9.0, ParameterStatistics(m), ipe 3; before each iteration weight += 0.25 and weight.grad *= 2.
  // PPE adds float32 tensors; we add doubles: equal to about 1e-7.
  const Observed want = {
      {"weight/data/mean", 0.7916666865348816},  {"weight/data/std", 0.9800084233283997},
      {"weight/data/min", -0.5},                 {"weight/data/max", 2.5},
      {"weight/data/zeros", 0.0},                {"weight/grad/mean", 0.15555556118488312},
      {"weight/grad/std", 1.130322813987732},    {"weight/grad/min", -1.8666667938232422},
      {"weight/grad/max", 1.4000000953674316},   {"weight/grad/zeros", 2.0},
      {"bias/data/mean", -1.5},                  {"bias/data/std", 2.1213202476501465},
      {"bias/data/min", -3.0},                   {"bias/data/max", 0.0},
      {"bias/data/zeros", 1.0},                  {"bias/grad/mean", 0.5},
      {"bias/grad/std", 0.7071067690849304},     {"bias/grad/min", 0.0},
      {"bias/grad/max", 1.0},                    {"bias/grad/zeros", 1.0},
  };
  auto m = fixed_linear();
  const Observed got = run(ext::ParameterStatistics(m), 3, 3, [&](std::int64_t) {
    torch::NoGradGuard no_grad;
    m->weight.add_(0.25);
    m->weight.mutable_grad().mul_(2.0);
  });
  check_observed(got, want, 1e-6);
}

TEST_CASE("ParameterStatistics: only the interval's last iteration reports") {
  auto manager = ppe_test::make_manager(1, 4, ext::ParameterStatistics(fixed_linear()));
  auto& ps = manager.get_extension<ext::ParameterStatistics<>>("parameter_statistics");
  for (int i = 1; i <= 3; ++i) {
    ppe_test::step(manager);
    CHECK(manager.observation().size() == 0);
    CHECK(ps.pending_calls() == i);
  }
  ppe_test::step(manager);
  CHECK(manager.observation().size() == 20);
  CHECK(ps.pending_calls() == 0);
}

TEST_CASE("ParameterStatistics: percentile_statistic, the sigma percentiles of PPE's docs") {
  // PPE 0.9.0: ParameterStatistics(m, statistics=None, report_grads=False), then
  // register_statistics("percentile", lambda x: torch.quantile(x, torch.tensor([s / 100 for s in sigmas]))).
  const Observed want = {
      {"weight/data/percentile/0", -0.9934999942779541}, {"weight/data/percentile/1", -0.8859999775886536},
      {"weight/data/percentile/2", -0.20649999380111694}, {"weight/data/percentile/3", 0.125},
      {"weight/data/percentile/4", 0.8097500801086426},  {"weight/data/percentile/5", 1.8289995193481445},
      {"weight/data/percentile/6", 1.9902503490447998},  {"bias/data/percentile/0", -2.9960999488830566},
      {"bias/data/percentile/1", -2.9316000938415527},   {"bias/data/percentile/2", -2.523900032043457},
      {"bias/data/percentile/3", -1.5},                  {"bias/data/percentile/4", -0.47609996795654297},
      {"bias/data/percentile/5", -0.06840008497238159},  {"bias/data/percentile/6", -0.0038999319076538086},
  };
  ext::ParameterStatistics ps(fixed_linear(), ext::ParameterStatisticsOptions().statistics({}).report_grads(false));
  ps.register_statistics("percentile", ext::percentile_statistic());
  // torch.quantile interpolates in float32: LibTorch 2.14's lerp differs from
  // 1.13's in the last bits (1.829 and 1.99025 here), so within a few float32
  // ulps (float32's epsilon is 1.2e-7).
  check_observed(run(std::move(ps)), want, 1e-6);

  // Other percentiles; NaN makes them all NaN; an empty tensor has NaN ones.
  const auto p = ext::percentile_statistic({0, 100});
  CHECK(p(torch::tensor({3.0, 1.0, 2.0})).equal(torch::tensor({1.0, 3.0}, torch::kDouble)));
  CHECK(torch::isnan(p(torch::tensor({1.0f, static_cast<float>(kNaN), 3.0f}))).all().item<bool>());
  CHECK(torch::isnan(p(torch::empty({0}))).all().item<bool>());
  CHECK(p(torch::empty({0})).numel() == 2);
  CHECK_THROWS_WITH_AS(ext::percentile_statistic({50, 101}),
                       "ppe::percentile_statistic: a percentile must be in [0, 100], got 101.000000",
                       std::invalid_argument);
  CHECK_THROWS_AS(ext::percentile_statistic({}), std::invalid_argument);
}

TEST_CASE("ParameterStatistics: NaN parameters, with and without skip_nan_params (PPE's values)") {
  auto with_nan = [] {
    auto m = fixed_linear();
    torch::NoGradGuard no_grad;
    m->weight[0][1] = kNaN;
    return m;
  };
  // PPE 0.9.0: the statistics of the NaN weight (zeros still counts), or NaN for all of them.
  const auto want = [](double zeros) {
    return Observed{{"weight/data/mean", kNaN}, {"weight/data/std", kNaN},        {"weight/data/min", kNaN},
                    {"weight/data/max", kNaN},  {"weight/data/zeros", zeros},     {"bias/data/mean", -1.5},
                    {"bias/data/std", 2.1213202476501465},                        {"bias/data/min", -3.0},
                    {"bias/data/max", 0.0},     {"bias/data/zeros", 1.0}};
  };
  const auto options = ext::ParameterStatisticsOptions().report_grads(false);
  check_observed(run(ext::ParameterStatistics(with_nan(), options)), want(2.0));
  check_observed(run(ext::ParameterStatistics(with_nan(), ext::ParameterStatisticsOptions(options).skip_nan_params(true))),
                 want(kNaN));

  // A statistic of several values gives NaN under each of its keys (PPE reports one NaN under
  // ".../percentile" instead, so that the keys change with the values).
  const Observed got = run(ext::ParameterStatistics(
      with_nan(), ext::ParameterStatisticsOptions(options).skip_nan_params(true).statistics(
                      {{"percentile", ext::percentile_statistic({10, 90})}})));
  CHECK(keys_of(got) == std::vector<std::string>{"weight/data/percentile/0", "weight/data/percentile/1",
                                                 "bias/data/percentile/0", "bias/data/percentile/1"});
  CHECK(std::isnan(got[0].second));
  CHECK(std::isnan(got[1].second));
  CHECK(got[2].second == doctest::Approx(-2.7));
  CHECK(got[3].second == doctest::Approx(-0.3));
}

TEST_CASE("ParameterStatistics: nested modules' dotted names; a list of modules") {
  // PPE 0.9.0's keys for Sequential(Linear(2, 2), ReLU(), Linear(2, 1)), prefix "pre", {"max"}.
  torch::nn::Sequential s(torch::nn::Linear(2, 2), torch::nn::ReLU(), torch::nn::Linear(2, 1));
  for (auto& p : s->parameters()) p.mutable_grad() = torch::zeros_like(p);
  const ext::Statistics max_only = {{"max", [](const at::Tensor& x) { return x.max(); }}};
  const auto options = ext::ParameterStatisticsOptions().prefix("pre").statistics(max_only);
  const std::vector<std::string> want = {"pre/0.weight/data/max", "pre/0.weight/grad/max", "pre/0.bias/data/max",
                                         "pre/0.bias/grad/max",   "pre/2.weight/data/max", "pre/2.weight/grad/max",
                                         "pre/2.bias/data/max",   "pre/2.bias/grad/max"};
  CHECK(keys_of(run(ext::ParameterStatistics(s, options))) == want);
  CHECK(keys_of(run(ext::ParameterStatistics(std::vector<torch::nn::Sequential>{s}, options))) == want);

  // Modules of different types in one list: their parameter names must not clash.
  auto lin = torch::nn::Linear(2, 2);
  auto conv = torch::nn::Conv1d(torch::nn::Conv1dOptions(1, 1, 1).bias(false));
  CHECK_THROWS_WITH_AS(run(ext::ParameterStatistics({lin, conv}, ext::ParameterStatisticsOptions().statistics(max_only))),
                       doctest::Contains("two values would be reported under the key 'weight/data/max'"),
                       std::invalid_argument);
  // PPE 0.9.0 reports the last module's value for ParameterStatistics([a, b]) (weight/data/max
  // 20.0 where b's weights are 10 times a's); we refuse: one extension per module, distinct prefixes.
  auto a = fixed_linear();
  const Observed b = run(ext::ParameterStatistics(
      a, ext::ParameterStatisticsOptions().statistics(max_only).report_grads(false).prefix("a")));
  CHECK(b == Observed{{"a/weight/data/max", 2.0}, {"a/bias/data/max", 0.0}});
}

TEST_CASE("ParameterStatistics: parameters without a gradient have no grad keys until they have one") {
  // PPE 0.9.0 raises AttributeError ('NoneType' object has no attribute 'flatten').
  torch::nn::Linear m(3, 2);
  {
    torch::NoGradGuard no_grad;
    m->weight.fill_(1.0);
    m->bias.fill_(2.0);
  }
  const ext::Statistics mean_only = {{"mean", [](const at::Tensor& x) { return x.mean(); }}};
  CHECK(run(ext::ParameterStatistics(m, ext::ParameterStatisticsOptions().statistics(mean_only))) ==
        Observed{{"weight/data/mean", 1.0}, {"bias/data/mean", 2.0}});

  // Gradients appear in the second of 3 calls: data means over 3 calls, grad means over 2.
  const Observed got = run(ext::ParameterStatistics(m, ext::ParameterStatisticsOptions().statistics(mean_only)), 3, 3,
                           [&](std::int64_t i) {
                             torch::NoGradGuard no_grad;
                             m->weight.add_(1.0);  // 2, 3, 4
                             if (i == 1) {
                               m->weight.mutable_grad() = torch::full({2, 3}, 6.0f);
                               m->bias.mutable_grad() = torch::full({2}, -1.0f);
                             }
                             if (i == 2) m->weight.mutable_grad().fill_(10.0);
                           });
  CHECK(got == Observed{{"weight/data/mean", 3.0},
                        {"bias/data/mean", 2.0},
                        {"weight/grad/mean", 8.0},  // (6 + 10) / 2
                        {"bias/grad/mean", -1.0}});
}

TEST_CASE("ParameterStatistics: empty parameters: NaN statistics, no zeros (PPE raises in min)") {
  struct Empty : torch::nn::Module {
    Empty() { register_parameter("e", torch::empty({0})); }
  };
  const Observed got = run(ext::ParameterStatistics(std::make_shared<Empty>(),
                                                    ext::ParameterStatisticsOptions().report_grads(false)));
  check_observed(got, {{"e/data/mean", kNaN},
                       {"e/data/std", kNaN},
                       {"e/data/min", kNaN},
                       {"e/data/max", kNaN},
                       {"e/data/zeros", 0.0}});
}

TEST_CASE("ParameterStatistics: bad statistics are errors that name them") {
  const auto bad = [](ext::StatisticFunction f) {
    return ext::ParameterStatistics(fixed_linear(),
                                    ext::ParameterStatisticsOptions().statistics({{"bad", std::move(f)}}));
  };
  CHECK_THROWS_WITH_AS(run(bad([](const at::Tensor& x) { return x.reshape({-1, 1}); })),
                       "ppe::ParameterStatistics: the statistic 'bad' of 'weight/data' returned a tensor of shape "
                       "[6, 1]; a statistic returns a 0-dim tensor, or a 1-D tensor of one or more values",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run(bad([](const at::Tensor&) { return at::Tensor(); })),
                       doctest::Contains("returned an undefined tensor"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ParameterStatistics(fixed_linear(), ext::ParameterStatisticsOptions().statistics(
                                                                    {{"", [](const at::Tensor& x) { return x; }}})),
                       "ppe::ParameterStatistics: a statistic has an empty name", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      ext::ParameterStatistics(fixed_linear(), ext::ParameterStatisticsOptions().statistics(
                                                   {{"a", [](const at::Tensor& x) { return x.sum(); }},
                                                    {"a", [](const at::Tensor& x) { return x.sum(); }}})),
      "ppe::ParameterStatistics: the statistic 'a' is given twice", std::invalid_argument);
  ext::ParameterStatistics ps(fixed_linear());
  CHECK_THROWS_WITH_AS(ps.register_statistics("x", nullptr), "ppe::ParameterStatistics: the statistic 'x' has no function",
                       std::invalid_argument);
  CHECK_THROWS_AS(ext::ParameterStatistics(std::shared_ptr<torch::nn::Module>()), std::invalid_argument);
}

TEST_CASE("ParameterStatistics: register_statistics replaces in place (a dict) or appends") {
  ext::ParameterStatistics ps(fixed_linear(), ext::ParameterStatisticsOptions().report_grads(false));
  ps.register_statistics("min", [](const at::Tensor& x) { return x.min() * 10; });
  ps.register_statistics("count", [](const at::Tensor& x) { return torch::tensor(x.numel()); });
  std::vector<std::string> names;
  for (const auto& s : ps.statistics()) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"mean", "std", "min", "max", "zeros", "count"});
  const Observed got = run(std::move(ps));
  CHECK(got[2] == std::pair<std::string, double>{"weight/data/min", -10.0});
  CHECK(got[5] == std::pair<std::string, double>{"weight/data/count", 6.0});
}

TEST_CASE("ParameterStatistics: PPE's name, priority and triggers") {
  using T = tr::extension_traits<ext::ParameterStatistics<>>;
  CHECK(T::default_name() == "parameter_statistics");
  CHECK(T::priority() == tr::kPriorityWriter);
  CHECK_FALSE(T::needs_model_state());
  CHECK(T::default_trigger().training_length() == tr::TrainingLength{1, tr::Unit::Iteration});
  ext::ParameterStatistics ps(fixed_linear());
  CHECK(ps.trigger().training_length() == tr::TrainingLength{1, tr::Unit::Epoch});
  ext::ParameterStatistics every5(fixed_linear(), {}, ppe::iterations(5));
  CHECK(every5.trigger().training_length() == tr::TrainingLength{5, tr::Unit::Iteration});
  std::vector<std::string> names;
  for (const auto& s : ps.statistics()) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"mean", "std", "min", "max", "zeros"});
}

TEST_CASE("ParameterStatistics: no host transfer until the report (parameters on the meta device)") {
  // Meta tensors have shapes but no values: any read on the host throws. Two quiet
  // calls pass; the report, which reads the sums once, throws.
  struct OnMeta : torch::nn::Module {
    OnMeta() {
      register_parameter("weight", torch::empty({2, 3}, torch::kMeta));
      register_parameter("bias", torch::empty({2}, torch::kMeta));
    }
  };
  auto m = std::make_shared<OnMeta>();
  m->named_parameters()["weight"].mutable_grad() = torch::empty({2, 3}, torch::kMeta);
  const ext::Statistics meta_ok = {{"mean", [](const at::Tensor& x) { return x.mean(); }},
                                   {"sum", [](const at::Tensor& x) { return x.sum(); }}};
  auto manager = ppe_test::make_manager(
      1, 3, ext::ParameterStatistics(m, ext::ParameterStatisticsOptions().statistics(meta_ok)));
  ppe_test::step(manager);
  ppe_test::step(manager);
  CHECK(manager.get_extension<ext::ParameterStatistics<>>("parameter_statistics").pending_calls() == 2);
  CHECK_THROWS_WITH(ppe_test::step(manager), doctest::Contains("meta"));

  // On the CPU: no value is read with item() in any call (but by LibTorch's CPU std, which
  // reads the mean it computed: left out here).
  ext::Statistics no_std = ext::default_parameter_statistics();
  no_std.erase(no_std.begin() + 1);
  no_std.push_back({"percentile", ext::percentile_statistic()});
  ppe_test::HostReadCounter reads;
  run(ext::ParameterStatistics(fixed_linear(), ext::ParameterStatisticsOptions().statistics(no_std).skip_nan_params(true)),
      4, 2);
  CHECK(reads.count() == 0);
}

TEST_CASE("ParameterStatistics: with an interval as its own trigger, quiet iterations compute nothing") {
  int calls = 0;
  const ext::Statistics counting = {{"mean", [&calls](const at::Tensor& x) {
                                       ++calls;
                                       return x.mean();
                                     }}};
  auto manager = ppe_test::make_manager(
      1, 10,
      tr::entry(ext::ParameterStatistics(fixed_linear(), ext::ParameterStatisticsOptions().statistics(counting),
                                         ppe::iterations(1)),
                ppe::iterations(5)));
  for (int i = 1; i <= 10; ++i) {
    ppe_test::step(manager);
    CAPTURE(i);
    CHECK(calls == (i / 5) * 4);  // weight, bias; data, grad
    CHECK(manager.observation().size() == (i % 5 == 0 ? 4u : 0u));
  }
}

TEST_CASE("ParameterStatistics: state mid-interval (sums in DictSummary's layout), pickled resume") {
  const ext::Statistics mean_only = {{"mean", [](const at::Tensor& x) { return x.mean(); }}};
  const auto make = [&](torch::nn::Linear m) {
    return ext::ParameterStatistics(m, ext::ParameterStatisticsOptions().statistics(mean_only).report_grads(false));
  };
  auto m = fixed_linear();  // weight mean 7/24, bias mean -1.5
  const auto bump = [&] {
    torch::NoGradGuard no_grad;
    m->bias.add_(1.0);
  };
  auto manager = ppe_test::make_manager(2, 4, make(m));
  auto& ps = manager.get_extension<ext::ParameterStatistics<>>("parameter_statistics");
  CHECK(ps.state_dict() == ppe::State::dict({{"_trigger", ppe::State::dict()}, {"_summary", ppe::State::dict()}}));
  for (int i = 0; i < 2; ++i) {
    bump();  // bias means -0.5, 0.5
    ppe_test::step(manager);
  }
  const ppe::State state = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(manager.state_dict()));
  const ppe::State& summary = state.at("extensions").at("parameter_statistics").at("extension").at("_summary");
  const float wmean = torch::tensor({0.5f, -1.0f, 0.0f, 2.0f, 0.0f, 0.25f}).mean().item<float>();
  CHECK(summary.at("weight/data/mean").at("_x").as_double() == 2.0 * wmean);
  CHECK(summary.at("weight/data/mean").at("_x2").as_double() == 2.0 * double(wmean) * double(wmean));
  CHECK(summary.at("weight/data/mean").at("_n").as_int() == 2);
  CHECK(summary.at("bias/data/mean").at("_x").as_double() == 0.0);
  CHECK(summary.at("bias/data/mean").at("_x2").as_double() == 0.5);
  // A DictSummary reads it.
  ppe::reporting::DictSummary ds;
  ds.load_state_dict(summary);
  CHECK(ds.compute_mean().at("bias/data/mean").to_double() == 0.0);

  // The uninterrupted run's epoch mean, and the resumed one's.
  const auto finish = [&](auto& mgr) {
    for (int i = 0; i < 2; ++i) {
      bump();  // 1.5, 2.5
      ppe_test::step(mgr);
    }
    return mgr.observation().at("bias/data/mean").to_double();
  };
  // Both runs go on from the bias the first two bumps left ([2, -1], mean 0.5).
  {
    torch::NoGradGuard no_grad;
    m->bias.copy_(torch::tensor({2.0f, -1.0f}));
  }
  auto resumed = ppe_test::make_manager(2, 4, make(m));
  resumed.load_state_dict(state);
  CHECK(finish(resumed) == doctest::Approx((-0.5 + 0.5 + 1.5 + 2.5) / 4));
  {
    torch::NoGradGuard no_grad;
    m->bias.copy_(torch::tensor({2.0f, -1.0f}));
  }
  CHECK(finish(manager) == doctest::Approx((-0.5 + 0.5 + 1.5 + 2.5) / 4));

  // PPE's state ({}) loads as a no-op; a malformed summary is an error that changes nothing.
  ext::ParameterStatistics fresh = make(m);
  fresh.load_state_dict(ppe::State::dict());
  CHECK(fresh.pending_calls() == 0);
  CHECK_THROWS_WITH_AS(
      fresh.load_state_dict(ppe::State::dict({{"_summary", ppe::State::dict({{"k", ppe::State::dict({{"_x", 1.0}})}})}})),
      "ppe::ParameterStatistics::load_state_dict: '_summary' entry 'k' needs a number '_x2'", std::invalid_argument);
  CHECK(fresh.state_dict().at("_summary") == ppe::State::dict());
}

TEST_CASE("ParameterStatistics: called without a current reporter, it reports nothing and starts over") {
  auto manager = ppe_test::make_manager(10, 10);
  ppe_test::step(manager);
  ext::ParameterStatistics ps(fixed_linear(), {}, ppe::iterations(1));
  ps(manager);  // outside run_iteration: no reporter is current; the trigger fires at iteration 1
  CHECK(ps.pending_calls() == 0);
  CHECK(manager.observation().size() == 0);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_parameter_statistics
