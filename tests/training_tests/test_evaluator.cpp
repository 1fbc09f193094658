// The engine Evaluator (PPE's ppe.training.Evaluator, spec 5.6): a fresh
// observation per step (PPE re-averages stale values), reducers, eval_len,
// the progress bar, and the handler's report keys.

#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "test_util.hpp"

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
