// Port of PPE's tests/.../training_tests/test_evaluator_metrics.py
// (AccuracyMetric with an evaluator), plus AccuracyMetric's forms and errors
// and the per-key reducers (Determined's; PPE only averages), which are ours.
#include "ppe_test.hpp"

#include <ppe/training/extensions/evaluator.hpp>
#include <ppe/training/metrics.hpp>
#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>

#include <map>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_evaluator_metrics {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace m = ppe::training::metrics;
namespace rep = ppe::reporting;

namespace {

using Batch = std::map<std::string, torch::Tensor>;

double value(const rep::Observation& o, std::string_view key) { return o.at(key).to_double(); }

/// PPE's MyModel: the outputs "y" are the labels with the first
/// int(10 * (1 - correct_ratio)) of them decremented (so wrong).
struct MyModelImpl : torch::nn::Module {
  double correct_ratio;
  explicit MyModelImpl(double r) : correct_ratio(r) {}
  Batch forward(const torch::Tensor& /*x*/, const torch::Tensor& t) {
    auto g = t.clone();
    const auto to_alter = static_cast<std::int64_t>(10 * (1 - correct_ratio));
    g.slice(0, 0, to_alter) -= 1;
    return {{"y", g}};
  }
};
TORCH_MODULE(MyModel);

}  // namespace

// PPE test_evaluator_with_metric: one batch of 10 examples {"x": rand(20),
// "t": rand(1)}; the accuracy is the model's correct ratio (0, 0.5, 1).
TEST_CASE("PPE test_evaluator_with_metric") {
  for (double accuracy : {0.0, 0.5, 1.0}) {
    CAPTURE(accuracy);
    MyModel model(accuracy);
    std::vector<Batch> data{{{"x", torch::rand({10, 20})}, {"t", torch::rand({10, 1})}}};
    ext::Evaluator evaluator(data, model, [&](const Batch& b) { return model->forward(b.at("x"), b.at("t")); });
    evaluator.add_metric(m::AccuracyMetric("t", "y"));
    const rep::Observation result = evaluator();
    CHECK(value(result, "accuracy") == doctest::Approx(accuracy));
  }
}

TEST_CASE("AccuracyMetric: PPE's two-argument form returns {'accuracy': correct / n}") {
  // labels [0, 1, 2, 3], predictions [0, 1, 0, 3, 9]: the first 4 are compared, 3 equal.
  Batch batch{{"t", torch::tensor({0, 1, 2, 3})}};
  Batch out{{"y", torch::tensor({0, 1, 0, 3, 9})}};
  const m::AccuracyMetric metric("t", "y");
  const rep::Observation r = metric(batch, out);
  CHECK(r.keys() == std::vector<std::string>{"accuracy"});
  CHECK(value(r, "accuracy") == 0.75);
  CHECK((r.at("accuracy").tensor().scalar_type() == torch::kDouble));  // a tensor: no host read per batch
}

TEST_CASE("AccuracyMetric: Example batches, a tensor as the outputs, a report key, unordered and ordered maps") {
  const torch::data::Example<> example(torch::zeros({2, 3}), torch::tensor({1, 2}));
  CHECK(value(m::AccuracyMetric("target", "unused")(example, torch::tensor({1, 5})), "accuracy") == 0.5);
  std::unordered_map<std::string, torch::Tensor> u{{"t", torch::tensor({4, 4})}};
  torch::OrderedDict<std::string, torch::Tensor> o;
  o.insert("y", torch::tensor({4, 4}));
  CHECK(value(m::AccuracyMetric("t", "y", "acc")(u, o), "acc") == 1.0);
}

TEST_CASE("AccuracyMetric as an evaluator's metric reports into each batch's observation") {
  // Batches of 2: predictions right in 2, 1 and 0 of 2 → per-batch 1, 0.5, 0; mean 0.5 (PPE averages per batch).
  std::vector<torch::data::Example<>> data{{torch::tensor({1, 2}), torch::tensor({1, 2})},
                                           {torch::tensor({1, 2}), torch::tensor({1, 0})},
                                           {torch::tensor({1, 2}), torch::tensor({0, 0})}};
  ext::Evaluator evaluator(data, {}, [](const torch::Tensor& x, const torch::Tensor&) { return x; });
  evaluator.add_metric(m::AccuracyMetric("target", "y"));
  CHECK(value(evaluator(), "accuracy") == 0.5);
}

TEST_CASE("AccuracyMetric errors name the key and what was expected") {
  const m::AccuracyMetric metric("t", "y");
  Batch batch{{"t", torch::tensor({1, 2})}, {"u", torch::tensor({1})}};
  Batch out{{"y", torch::tensor({1, 2})}};
  CHECK_THROWS_WITH_AS(metric(Batch{{"label", torch::tensor({1})}}, out),
                       "ppe: AccuracyMetric: key 't' not found in the batch; keys present: ['label']",
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(metric(batch, Batch{}), "ppe: AccuracyMetric: key 'y' not found in the outputs; keys present: []",
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(metric(batch, Batch{{"y", torch::zeros({2, 3})}}),
                       "ppe: AccuracyMetric: the labels 't' [2] and the first 2 predictions 'y' [2, 3] have different "
                       "numbers of elements; expected one prediction per label",
                       std::invalid_argument);
  CHECK_THROWS_AS(metric(Batch{{"t", torch::tensor(1)}}, out), std::invalid_argument);
  const torch::data::Example<> example(torch::zeros({2}), torch::zeros({2}));
  CHECK_THROWS_AS(m::AccuracyMetric("label", "y")(example, out), std::out_of_range);
  CHECK_THROWS_AS(m::AccuracyMetric("t", "y", ""), std::invalid_argument);
}

// ---- reducers -----------------------------------------------------------------------

namespace {
/// Per-batch observations with numbers, tensors and a deferred value.
void add_batches(m::ReducedSummary& s) {
  s.add(rep::Observation{{"a", 1.0}, {"b", torch::tensor(4.0)}, {"c", 2.0}});
  s.add(rep::Observation{{"a", 3.0}, {"b", torch::tensor(-2.0)}, {"c", torch::tensor(7.0)}});
  s.add(rep::Observation{{"a", rep::Value([] { return rep::Value(8.0); })}, {"b", torch::tensor(1.0)}, {"c", -1.0}});
}
}  // namespace

TEST_CASE("Reducers: mean by default, sum, min, max per key; numbers and tensors mixed; key order kept") {
  // a: 1, 3, 8 (deferred); b: 4, -2, 1 (tensors); c: 2, 7 (tensor), -1.
  SUBCASE("mean (PPE)") {
    m::ReducedSummary s;
    add_batches(s);
    const rep::Observation r = s.compute();
    CHECK(r.keys() == std::vector<std::string>{"a", "b", "c"});
    CHECK(value(r, "a") == 4.0);  // 12 / 3
    CHECK(value(r, "b") == 1.0);  // 3 / 3
    CHECK(value(r, "c") == doctest::Approx(8.0 / 3));
  }
  SUBCASE("sum, min, max") {
    m::ReducedSummary s({{"a", m::Reducer::sum()}, {"b", m::Reducer::min()}, {"c", m::Reducer::max()}});
    add_batches(s);
    const rep::Observation r = s.compute();
    CHECK(r.keys() == std::vector<std::string>{"a", "b", "c"});
    CHECK(r.at("a").is_scalar());  // numbers stay numbers
    CHECK(value(r, "a") == 12.0);
    CHECK(r.at("b").is_tensor());  // tensors stay tensors
    CHECK(value(r, "b") == -2.0);
    CHECK(value(r, "c") == 7.0);
  }
  SUBCASE("a fallback for every other key") {
    m::ReducedSummary s({{"a", m::Reducer::mean()}}, m::Reducer::max());
    add_batches(s);
    const rep::Observation r = s.compute();
    CHECK(value(r, "a") == 4.0);
    CHECK(value(r, "b") == 4.0);
    CHECK(value(r, "c") == 7.0);
    CHECK(s.reducer_for("zzz").kind() == m::Reducer::Kind::Max);
  }
  SUBCASE("min and max mix numbers into tensor results") {
    m::ReducedSummary s({{"c", m::Reducer::min()}});
    add_batches(s);
    CHECK(value(s.compute(), "c") == -1.0);  // the number -1 beats the tensor 7
  }
}

TEST_CASE("Reducers: a custom function gets every per-batch value, vectors included") {
  // Concatenating per-batch predictions, e.g. for a metric over the whole set.
  m::ReducedSummary s({{"pred", m::Reducer([](const std::vector<rep::Value>& vs) {
                          std::vector<torch::Tensor> ts;
                          for (const auto& v : vs) ts.push_back(v.tensor());
                          return rep::Value(torch::cat(ts).max());
                        })},
                       {"n", m::Reducer([](const std::vector<rep::Value>& vs) { return rep::Value(double(vs.size())); })}});
  s.add(rep::Observation{{"pred", torch::tensor({1.0, 5.0})}, {"n", 0.0}});
  s.add(rep::Observation{{"pred", torch::tensor({3.0})}, {"n", rep::Value([] { return rep::Value(1.0); })}});
  const rep::Observation r = s.compute();
  CHECK(value(r, "pred") == 5.0);
  CHECK(value(r, "n") == 2.0);
  CHECK(s.reducer_for("n").name() == "custom");
}

TEST_CASE("Reducers: mean skips vectors (PPE); sum, min and max reject them naming the key") {
  m::ReducedSummary mean;
  mean.add(rep::Observation{{"v", torch::ones({3})}, {"s", 1.0}});
  CHECK(mean.compute().keys() == std::vector<std::string>{"s"});
  m::ReducedSummary sum({{"v", m::Reducer::sum()}});
  CHECK_THROWS_WITH_AS(sum.add(rep::Observation{{"v", torch::ones({3})}}),
                       "ppe: the sum reducer of key 'v' needs numbers or one-element tensors, got a tensor of shape [3]",
                       std::invalid_argument);
  CHECK_THROWS_AS(m::Reducer{m::Reducer::Function{}}, std::invalid_argument);
}

TEST_CASE("Reducers: many tensors are folded in batches; the result is the same") {
  // 0 + 1 + ... + 2999 = 2999 * 3000 / 2 = 4498500 (more than two folds of 1024).
  m::ReducedSummary s({{"x", m::Reducer::sum()}, {"lo", m::Reducer::min()}, {"hi", m::Reducer::max()}});
  for (int i = 0; i < 3000; ++i) {
    const auto t = torch::tensor(static_cast<double>(i));
    s.add(rep::Observation{{"x", t}, {"lo", t}, {"hi", t}});
  }
  const rep::Observation r = s.compute();
  CHECK(value(r, "x") == 4498500.0);
  CHECK(value(r, "lo") == 0.0);
  CHECK(value(r, "hi") == 2999.0);
  s.reset();
  CHECK(s.empty());
  CHECK(s.compute().empty());
}

TEST_CASE("Reducers lazy: sums of meta tensors need no host read until the result is read") {
  // The meta device has no data: any host read would throw.
  m::ReducedSummary s({{"x", m::Reducer::sum()}});
  for (int i = 0; i < 3; ++i) s.add(rep::Observation{{"x", torch::empty({}, torch::device(torch::kMeta))}});
  const rep::Observation r = s.compute();
  CHECK(r.at("x").tensor().device().type() == torch::kMeta);
}

TEST_CASE("Reducers through an Evaluator: an exact accuracy over unequal batches") {
  // Batches of 2, 2 and 1 examples with 2, 1 and 1 right: PPE's per-batch mean of
  // accuracies is (1 + 0.5 + 1) / 3 = 0.8333, the accuracy over the set 4 / 5 = 0.8.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> data{{torch::tensor({1, 2}), torch::tensor({1, 2})},
                                                            {torch::tensor({1, 2}), torch::tensor({1, 0})},
                                                            {torch::tensor({7}), torch::tensor({7})}};
  ext::Evaluator evaluator(data, {}, [](const torch::Tensor& pred, const torch::Tensor& label) {
    rep::report({{"correct", pred.eq(label).sum()}, {"count", pred.size(0)}, {"batch_accuracy", pred.eq(label).sum().div(pred.size(0))}});
  }, ext::EvaluatorOptions().reducer("correct", m::Reducer::sum()).reducer("count", m::Reducer::sum()));
  const rep::Observation r = evaluator();
  CHECK(value(r, "correct") / value(r, "count") == 0.8);
  CHECK(value(r, "batch_accuracy") == doctest::Approx(2.5 / 3));
  CHECK(evaluator.options().reducers().size() == 2);
  CHECK_THROWS_AS(ext::EvaluatorOptions().reducer("", m::Reducer::sum()), std::invalid_argument);
}

// PPE's model(**batch) for the engine: forward(x, t) from the dict batch.
struct Split : ppe::handler::BaseLogic {
  MyModel m;
  template <class B>
  ppe::handler::Outputs eval_step(const tr::Models&, std::int64_t, B& b) {
    return ppe::handler::normalize_outputs(m->forward(b.at("x"), b.at("t")));
  }
};

// The same PPE table through the engine: create_evaluator with the metric and
// options={"eval_report_keys": ["accuracy"]} reports "val/accuracy" into the
// current reporter.
TEST_CASE("PPE test_evaluator_with_metric: engine evaluator, eval_report_keys") {
  for (double accuracy : {0.0, 0.5, 1.0}) {
    CAPTURE(accuracy);
    MyModel model(accuracy);
    ppe::to(model, "cpu");
    std::vector<Batch> data{{{"x", torch::rand({10, 20})}, {"t", torch::rand({10, 1})}}};
    auto evaluator = ppe::engine::create_evaluator(
        model,
        ppe::engine::EvaluatorOptions().options(
            ppe::State::dict({{"eval_report_keys", ppe::State::list({"accuracy"})}})),
        ppe::engine::with_logic(Split{{}, model}), m::AccuracyMetric("t", "y"));
    rep::Reporter reporter;
    rep::Observation observation;
    {
      auto scope = reporter.scope(observation);
      evaluator.run(data);
    }
    CHECK(value(observation, "val/accuracy") == doctest::Approx(accuracy));
  }
}

}  // namespace ppe_test_training_tests_test_evaluator_metrics
