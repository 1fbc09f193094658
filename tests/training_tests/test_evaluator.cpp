// The engine Evaluator (PPE's ppe.training.Evaluator, spec 5.6): a fresh
// observation per step (PPE re-averages stale values), reducers, eval_len,
// the progress bar, and the handler's report keys.

#include <ppe/engine.hpp>
#include <ppe/profiler/profile.hpp>
#include <ppe/runtime/to.hpp>

#include <algorithm>
#include <range/v3/view/filter.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_evaluator {

namespace rep = ppe::reporting;
using engine_test::MyModel;
using engine_test::WithLoss;

namespace {

// Reports "a" = the batch's value, and "b" only for the first batch.
struct ReportingImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  ReportingImpl() { l = register_module("l", torch::nn::Linear(1, 1)); }
  torch::Tensor forward(const torch::Tensor& x) {
    const double v = x.item<double>();
    rep::report({{"a", v}});
    if (v == 1.0) rep::report({{"b", 10.0}});
    rep::report({{"loss", l(x).sum()}}, *this);  // observer name: "main/loss"
    return x.sum();
  }
};
TORCH_MODULE(Reporting);

rep::Observation run_in_scope(auto& evaluator, auto& data, std::optional<std::int64_t> eval_len = std::nullopt) {
  rep::Reporter reporter;
  rep::Observation observation;
  auto scope = reporter.scope(observation);
  evaluator.run(data, eval_len);
  return observation;
}

}  // namespace

TEST_CASE("engine Evaluator: each step starts from an empty observation (PPE re-adds stale values)") {
  Reporting model;
  ppe::to(model, "cpu");
  // Values 1, 3, 5: "a" averages to 3 (PPE: its one shared observation gives
  // the same here, but "b", reported once, would count three times: 10, not 10/1).
  std::vector<torch::Tensor> data = {torch::tensor({{1.0}}), torch::tensor({{3.0}}), torch::tensor({{5.0}})};
  auto evaluator = ppe::engine::create_evaluator(model);
  const rep::Observation result = run_in_scope(evaluator, data);
  CHECK(result.at("a").to_double() == 3.0);
  CHECK(result.at("b").to_double() == 10.0);
  CHECK(result.contains("main/loss"));  // the models are the evaluator's observers
  CHECK(evaluator.runs() == 1);
}

TEST_CASE("engine Evaluator: reducers per key, eval_len") {
  Reporting model;
  ppe::to(model, "cpu");
  std::vector<torch::Tensor> data = {torch::tensor({{1.0}}), torch::tensor({{3.0}}), torch::tensor({{5.0}})};
  auto evaluator = ppe::engine::create_evaluator(
      model, ppe::engine::EvaluatorOptions().reducer("a", ppe::training::metrics::Reducer::sum()));
  CHECK(run_in_scope(evaluator, data).at("a").to_double() == 9.0);   // 1 + 3 + 5
  CHECK(run_in_scope(evaluator, data, 2).at("a").to_double() == 4.0);  // 1 + 3
}

TEST_CASE("engine Evaluator: the handler's eval_report_keys report val/<output>") {
  MyModel inner;
  WithLoss model(inner);
  ppe::to(model, "cpu");
  auto data = engine_test::random_data(4);
  auto evaluator = ppe::engine::create_evaluator(
      model, ppe::engine::EvaluatorOptions().handler(ppe::handler::HandlerOptions().eval_report_keys({"0"})));
  const rep::Observation result = run_in_scope(evaluator, data);
  // The model reports "val/loss" itself; the handler reports its output "0" (the same loss) as "val/0".
  CHECK(result.at("val/0").to_double() == doctest::Approx(result.at("val/loss").to_double()));
  CHECK_FALSE(model->is_training());  // eval_setup: eval mode
}

TEST_CASE("engine Evaluator: the progress bar writes PPE's lines to a non-terminal stream") {
  MyModel inner;
  WithLoss model(inner);
  ppe::to(model, "cpu");
  auto data = engine_test::random_data(3);
  std::ostringstream out;
  double now = 0;
  auto evaluator = ppe::engine::create_evaluator(
      model, ppe::engine::EvaluatorOptions().progress_bar(true).out(&out).terminal(false).clock([&] { return now += 1; }));
  run_in_scope(evaluator, data);
  CHECK(out.str().find("validation") != std::string::npos);
  CHECK(out.str().find("3 iterations") != std::string::npos);
}

TEST_CASE("engine Evaluator: a model without ppe::to is an error naming ppe::to") {
  MyModel inner;
  WithLoss model(inner);
  auto data = engine_test::random_data(2);
  auto evaluator = ppe::engine::create_evaluator(model);
  CHECK_THROWS_WITH_AS(run_in_scope(evaluator, data), doctest::Contains("ppe::to(module, device)"), std::runtime_error);
}

TEST_CASE("engine Evaluator: default_reducer reduces the keys without their own reducer") {
  Reporting model;
  ppe::to(model, "cpu");
  std::vector<torch::Tensor> data = {torch::tensor({{1.0}}), torch::tensor({{5.0}}), torch::tensor({{3.0}})};
  auto evaluator = ppe::engine::create_evaluator(model, ppe::engine::EvaluatorOptions()
                                                            .default_reducer(ppe::training::metrics::Reducer::max())
                                                            .reducer("a", ppe::training::metrics::Reducer::min()));
  const rep::Observation result = run_in_scope(evaluator, data);
  CHECK(result.at("a").to_double() == 1.0);   // its own reducer: min of 1, 5, 3
  CHECK(result.at("b").to_double() == 10.0);  // max of the one value
  // main/loss = w * x + b per batch: the max is at x = 5 when w > 0, at x = 1 otherwise.
  const double w = model->l->weight.item<double>(), b = model->l->bias.item<double>();
  CHECK(result.at("main/loss").to_double() == doctest::Approx(std::max(w * 1 + b, w * 5 + b)));
}

TEST_CASE("engine Evaluator: unknown free-form options are an error naming them") {
  Reporting model;
  const std::string err = ppe_test::error_of([&] {
    ppe::engine::create_evaluator(model, ppe::engine::EvaluatorOptions().options(ppe::State::dict({{"NOPE", 1}})));
  });
  CHECK(err.find("create_evaluator: Unknown options: ['NOPE']") != std::string::npos);
}

namespace {
// A metric of the three-argument form recording the last_batch flags.
struct LastBatchFlags {
  std::vector<bool>* flags;
  template <class B, class O>
  void operator()(const B&, const O&, bool last_batch) const {
    flags->push_back(last_batch);
  }
};
}  // namespace

TEST_CASE("engine Evaluator: metrics see last_batch on the last batch, whether or not the length is known") {
  Reporting model;
  ppe::to(model, "cpu");
  std::vector<torch::Tensor> data = {torch::tensor({{1.0}}), torch::tensor({{3.0}}), torch::tensor({{5.0}})};
  std::vector<bool> flags;
  auto evaluator = ppe::engine::create_evaluator(model, {}, LastBatchFlags{&flags});
  SUBCASE("a sized range") {
    run_in_scope(evaluator, data);
    CHECK(flags == std::vector<bool>{false, false, true});
  }
  SUBCASE("eval_len stops early: its last batch is the last") {
    run_in_scope(evaluator, data, 2);
    CHECK(flags == std::vector<bool>{false, true});
  }
  SUBCASE("an unsized range: looked one ahead, the elements left intact") {
    auto unsized = data | ranges::views::filter([](const torch::Tensor&) { return true; });
    const rep::Observation result = run_in_scope(evaluator, unsized);
    CHECK(flags == std::vector<bool>{false, false, true});
    CHECK(result.at("a").to_double() == 3.0);
    for (const auto& t : data) CHECK(t.defined());  // a multi-pass range is not moved from
  }
  SUBCASE("a LibTorch loader without a known length: each batch taken out before the loader advances") {
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        torch::data::datasets::TensorDataset(torch::tensor({{1.0}, {3.0}, {5.0}})).map(
            torch::data::transforms::Stack<torch::data::TensorExample>()),
        torch::data::DataLoaderOptions(1));
    const rep::Observation result = run_in_scope(evaluator, *loader);
    CHECK(flags == std::vector<bool>{false, false, true});
    CHECK(result.at("a").to_double() == 3.0);  // (1 + 3 + 5) / 3: every batch intact
  }
}

TEST_CASE("engine Evaluator: a profile session per run, stepped after every batch") {
  // schedule(wait=0, warmup=1, active=2) over 6 batches, run twice: PyTorch
  // 1.13's profile entered twice around 6 steps each calls its handler at
  // step_num [3, 6] after the first and [3, 6, 9, 12] after the second
  // (generated with /usr/bin/python3; PPE itself skips the step after the
  // eval_len-th batch, see docs/profile.md).
  namespace prof = ppe::profiler;
  MyModel model;
  WithLoss with_loss(model);
  ppe::to(with_loss, "cpu");
  auto data = engine_test::random_data(6);
  std::vector<std::int64_t> calls;
  auto profile = std::make_shared<prof::Profile>(
      prof::ProfileOptions()
          .schedule(prof::schedule(prof::ScheduleOptions().wait(0).warmup(1).active(2)))
          .on_trace_ready([&](prof::Profile& p) { calls.push_back(p.step_num()); }));
  auto evaluator = ppe::engine::create_evaluator(with_loss, ppe::engine::EvaluatorOptions().profile(profile));
  run_in_scope(evaluator, data);
  CHECK(calls == std::vector<std::int64_t>{3, 6});
  CHECK_FALSE(profile->running());
  // The last trace: batches 4 and 5 (steps 4, 5), each a ProfilerStep range with the model's operators.
  REQUIRE(profile->result());
  CHECK(profile->result()->count("ProfilerStep#4") == 1);
  CHECK(profile->result()->count("ProfilerStep#5") == 1);
  CHECK(profile->result()->count("aten::addmm") == 4);  // two Linear layers, two batches
  run_in_scope(evaluator, data);
  CHECK(calls == std::vector<std::int64_t>{3, 6, 9, 12});
  CHECK(profile->step_num() == 12);
}

namespace {
// A metric that fails at the first batch.
struct ThrowingMetric {
  void operator()(const auto&, const auto&, bool) const { throw std::runtime_error("metric failed"); }
};
}  // namespace

TEST_CASE("engine Evaluator: an error in a step stops the profile session") {
  namespace prof = ppe::profiler;
  MyModel model;
  WithLoss with_loss(model);
  ppe::to(with_loss, "cpu");
  auto data = engine_test::random_data(2);
  int calls = 0;
  auto profile =
      std::make_shared<prof::Profile>(prof::ProfileOptions().on_trace_ready([&](prof::Profile&) { ++calls; }));
  auto evaluator =
      ppe::engine::create_evaluator(with_loss, ppe::engine::EvaluatorOptions().profile(profile), ThrowingMetric{});
  CHECK_THROWS_WITH_AS(run_in_scope(evaluator, data), "metric failed", std::runtime_error);
  CHECK_FALSE(profile->running());
  CHECK(calls == 1);
}

}  // namespace ppe_test_training_tests_test_evaluator
