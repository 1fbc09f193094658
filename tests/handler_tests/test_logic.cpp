// PPE's handler_tests/test_logic.py: the default Logic on each batch form,
// the choice of outputs to back-propagate, the grad scaler, and this
// library's clipping and accumulation, with their arithmetic.

#include <ppe/engine.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_handler_tests_test_logic {

using ppe::handler::Logic;
using ppe::handler::LogicOptions;
using ppe::handler::Outputs;
using ppe_test::error_of;

namespace {

// y = w . x without bias; w starts at 0, so the gradient of sum(y) is x.
struct LinImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  LinImpl() {
    l = register_module("l", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
    torch::NoGradGuard g;
    l->weight.zero_();
  }
  // One tensor: {"0": loss}.
  torch::Tensor forward(const torch::Tensor& x) { return l(x).sum(); }
  // Two tensors: data and target.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) { return (l(x) - t).pow(2).mean(); }
};
TORCH_MODULE(Lin);

// Returns two scalar losses and a non-scalar output, by name.
struct NamedImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  NamedImpl() {
    l = register_module("l", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
    torch::NoGradGuard g;
    l->weight.zero_();
  }
  std::map<std::string, torch::Tensor> forward(const std::map<std::string, torch::Tensor>& b) {
    auto y = l(b.at("x"));
    return {{"a", y.sum()},                  // gradient: the sum of the rows of x
            {"b", (3 * y).sum()},            // 3 times that
            {"y", y},                        // not one element: never chosen automatically
            {"d", y.sum().detach()},         // no grad_fn
            {"i", torch::ones({}, torch::kLong)}};
  }
};
TORCH_MODULE(Named);

// Returns a tuple (loss, prediction).
struct TupleModelImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  TupleModelImpl() { l = register_module("l", torch::nn::Linear(2, 1)); }
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& t) {
    auto y = l(x);
    return {(y - t).pow(2).mean(), y};
  }
};
TORCH_MODULE(TupleModel);

const torch::Tensor& weight(Lin& m) { return m->l->weight; }

}  // namespace

TEST_CASE("Logic: outputs are named as PPE's _normalize_outputs") {
  CHECK(ppe::handler::normalize_outputs(torch::ones({})).keys() == std::vector<std::string>{"0"});
  CHECK(ppe::handler::normalize_outputs(std::make_tuple(torch::ones({}), torch::zeros({2}))).keys() ==
        std::vector<std::string>{"0", "1"});
  CHECK(ppe::handler::normalize_outputs(std::vector<torch::Tensor>(3, torch::ones({}))).keys() ==
        std::vector<std::string>{"0", "1", "2"});
  CHECK(ppe::handler::normalize_outputs(std::map<std::string, torch::Tensor>{{"b", torch::ones({})}, {"a", torch::ones({})}})
            .keys() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("Logic: each batch form reaches forward as PPE passes it, and the step updates the parameters") {
  Lin model;
  torch::optim::SGD opt(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  Logic logic(model);
  SUBCASE("a tensor: forward(x); gradient of sum(w.x) is x") {
    torch::Tensor x = torch::tensor({{3.0f, 4.0f}});
    Outputs outs = logic.train_step(models, optimizers, 0, x);
    CHECK(outs.keys() == std::vector<std::string>{"0"});
    CHECK(torch::equal(weight(model).grad(), torch::tensor({{3.0f, 4.0f}})));
    logic.train_step_optimizers(models, optimizers, 0);
    CHECK(torch::equal(weight(model), torch::tensor({{-3.0f, -4.0f}})));  // w - lr * grad
  }
  SUBCASE("a torch::data::Example: forward(data, target)") {
    torch::data::Example<> b{torch::tensor({{1.0f, 1.0f}}), torch::tensor({{2.0f}})};
    Outputs outs = logic.train_step(models, optimizers, 0, b);
    // loss = (0 - 2)^2 = 4; d/dw = 2 (y - t) x = -4 x
    CHECK(outs["0"].item<float>() == 4.0f);
    CHECK(torch::equal(weight(model).grad(), torch::tensor({{-4.0f, -4.0f}})));
  }
  SUBCASE("a tuple: forward(elements...)") {
    auto b = std::make_tuple(torch::tensor({{1.0f, 1.0f}}), torch::tensor({{2.0f}}));
    Outputs outs = logic.train_step(models, optimizers, 0, b);
    CHECK(outs["0"].item<float>() == 4.0f);
  }
  SUBCASE("zero_grad before each step: gradients do not add up") {
    torch::Tensor x = torch::tensor({{3.0f, 4.0f}});
    logic.train_step(models, optimizers, 0, x);
    logic.train_step(models, optimizers, 1, x);
    CHECK(torch::equal(weight(model).grad(), torch::tensor({{3.0f, 4.0f}})));
  }
}

TEST_CASE("Logic: which outputs are back-propagated (PPE's test_train_step_backward)") {
  Named model;
  torch::optim::SGD opt(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  std::map<std::string, torch::Tensor> batch{{"x", torch::tensor({{1.0f, 2.0f}, {1.0f, 2.0f}})}};  // two rows: y has 2 elements
  auto grad = [&] { return model->l->weight.grad(); };
  SUBCASE("automatic: every one-element floating output with a grad_fn: a and b: [2, 4] + [6, 12] (one pass: they share a graph)") {
    Logic logic(model);
    logic.train_step(models, optimizers, 0, batch);
    CHECK(torch::equal(grad(), torch::tensor({{8.0f, 16.0f}})));
  }
  SUBCASE("backward_outputs {b}: 3 * the sum of the rows") {
    Logic logic(model, LogicOptions().backward_outputs(std::vector<std::string>{"b"}));
    logic.train_step(models, optimizers, 0, batch);
    CHECK(torch::equal(grad(), torch::tensor({{6.0f, 12.0f}})));
  }
  SUBCASE("a requested output without grad_fn is skipped; a missing one warned about (PPE's text)") {
    ppe_test::WarningCollector warnings;
    Logic logic(model, LogicOptions().backward_outputs(std::vector<std::string>{"d", "c", "a"}));
    logic.train_step(models, optimizers, 0, batch);
    CHECK(torch::equal(grad(), torch::tensor({{2.0f, 4.0f}})));
    CHECK(warnings.all().find("Couldn't find requested backward value: c in ['a', 'b', 'd', 'i', 'y']") !=
          std::string::npos);
  }
  SUBCASE("a backward_function replaces v.backward()") {
    int calls = 0;
    Logic logic(model, LogicOptions().backward_function([&](const torch::Tensor& v) {
      ++calls;
      v.backward({}, /*retain_graph=*/true);  // a and b share the graph
    }));
    logic.train_step(models, optimizers, 0, batch);
    CHECK(calls == 2);
  }
  SUBCASE("a grad scaler allows exactly one output") {
    Logic logic(model, LogicOptions().grad_scaler(std::make_shared<ppe::amp::GradScaler>()));
    CHECK(error_of([&] { logic.train_step(models, optimizers, 0, batch); }).find("exactly one output") !=
          std::string::npos);
  }
}

TEST_CASE("Logic: the grad scaler scales, skips non-finite steps, grows and backs off") {
  Lin model;
  torch::optim::SGD opt(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  auto scaler = std::make_shared<ppe::amp::GradScaler>(
      ppe::amp::GradScalerOptions().init_scale(4.0).growth_interval(2).growth_factor(2.0).backoff_factor(0.5));
  Logic logic(model, LogicOptions().grad_scaler(scaler));
  torch::Tensor x = torch::tensor({{1.0f, 2.0f}});
  // Step 1: the gradient is scaled by 4 ([4, 8]); the step unscales it: w = 0 - [1, 2].
  logic.train_step(models, optimizers, 0, x);
  CHECK(torch::equal(weight(model).grad(), torch::tensor({{4.0f, 8.0f}})));
  logic.train_step_optimizers(models, optimizers, 0);
  CHECK(torch::equal(weight(model), torch::tensor({{-1.0f, -2.0f}})));
  CHECK(scaler->get_scale() == 4.0);  // one clean step of two
  // Step 2: second clean step: the scale doubles to 8.
  logic.train_step(models, optimizers, 1, x);
  logic.train_step_optimizers(models, optimizers, 1);
  CHECK(torch::equal(weight(model), torch::tensor({{-2.0f, -4.0f}})));
  CHECK(scaler->get_scale() == 8.0);
  // Step 3: an infinite input makes the gradient infinite: the step is
  // skipped (w unchanged) and the scale backs off to 4.
  torch::Tensor bad = torch::tensor({{INFINITY, 1.0f}});
  logic.train_step(models, optimizers, 2, bad);
  logic.train_step_optimizers(models, optimizers, 2);
  CHECK(torch::equal(weight(model), torch::tensor({{-2.0f, -4.0f}})));
  CHECK(scaler->get_scale() == 4.0);
  CHECK(scaler->growth_tracker() == 0);
}

TEST_CASE("Logic: gradient clipping before the step (torch.nn.utils.clip_grad_norm_ / clip_grad_value_)") {
  Lin model;
  torch::optim::SGD opt(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  torch::Tensor x = torch::tensor({{3.0f, 4.0f}});  // gradient [3, 4]: 2-norm 5, max-norm 4
  auto step = [&](LogicOptions o) {
    Logic logic(model, std::move(o));
    logic.train_step(models, optimizers, 0, x);
    logic.train_step_optimizers(models, optimizers, 0);
    return weight(model).clone();
  };
  SUBCASE("2-norm 5 clipped to 1: gradient * 1 / (5 + 1e-6) = [0.6, 0.8]") {
    auto w = step(LogicOptions().clip_grad_norm(1.0));
    CHECK(torch::allclose(w, torch::tensor({{-0.6f, -0.8f}}), 1e-5, 1e-6));
  }
  SUBCASE("a norm under the limit is kept: 2-norm 5 with limit 10") {
    auto w = step(LogicOptions().clip_grad_norm(10.0));
    CHECK(torch::equal(w, torch::tensor({{-3.0f, -4.0f}})));
  }
  SUBCASE("max-norm 4 clipped to 2: gradient * 2 / 4 = [1.5, 2]") {
    auto w = step(LogicOptions().clip_grad_norm(2.0).clip_grad_norm_type(INFINITY));
    CHECK(torch::allclose(w, torch::tensor({{-1.5f, -2.0f}}), 1e-5, 1e-6));
  }
  SUBCASE("values clamped to [-2, 2]: [2, 2]") {
    auto w = step(LogicOptions().clip_grad_value(2.0));
    CHECK(torch::equal(w, torch::tensor({{-2.0f, -2.0f}})));
  }
  SUBCASE("with a grad scaler the gradient is unscaled before clipping") {
    auto scaler = std::make_shared<ppe::amp::GradScaler>(ppe::amp::GradScalerOptions().init_scale(1024.0));
    auto w = step(LogicOptions().clip_grad_value(2.0).grad_scaler(scaler));
    CHECK(torch::equal(w, torch::tensor({{-2.0f, -2.0f}})));
  }
}

TEST_CASE("Logic: gradient accumulation over k batches equals one step on their union") {
  torch::manual_seed(0);
  std::vector<torch::data::Example<>> micro;
  for (int i = 0; i < 4; ++i) micro.push_back({torch::randn({3, 2}), torch::randn({3, 1})});
  auto train = [&](std::int64_t k, const std::vector<torch::data::Example<>>& batches, std::int64_t epoch_len) {
    Lin model;
    torch::optim::SGD opt(model->parameters(), 0.1);
    ppe::training::Models models(model);
    ppe::training::Optimizers optimizers(opt);
    Logic logic(model, LogicOptions().accumulation_steps(k));
    logic.train_epoch_begin(models, 0, epoch_len);
    std::vector<torch::Tensor> after_each;
    for (std::int64_t i = 0; i < epoch_len; ++i) {
      auto b = batches[static_cast<std::size_t>(i)];
      logic.train_step(models, optimizers, i, b);
      logic.train_step_optimizers(models, optimizers, i);
      after_each.push_back(weight(model).clone());
    }
    return after_each;
  };
  // Each micro-batch's loss is a mean over 3 samples; dividing by k = 2 makes
  // the summed gradient the mean over 6 samples, as the union's mean loss.
  std::vector<torch::data::Example<>> unions = {
      {torch::cat({micro[0].data, micro[1].data}), torch::cat({micro[0].target, micro[1].target})},
      {torch::cat({micro[2].data, micro[3].data}), torch::cat({micro[2].target, micro[3].target})}};
  auto accumulated = train(2, micro, 4);
  auto plain = train(1, unions, 2);
  CHECK(torch::equal(accumulated[0], torch::zeros({1, 2})));  // no step after the first micro-batch
  CHECK(torch::allclose(accumulated[1], plain[0], 1e-5, 1e-6));
  CHECK(torch::allclose(accumulated[3], plain[1], 1e-5, 1e-6));
  // An epoch of 3 with k = 2: the last group (one batch) steps at the epoch's end.
  auto tail = train(2, micro, 3);
  CHECK_FALSE(torch::equal(tail[2], tail[1]));
}

TEST_CASE("Logic: autocast on the CPU runs the forward in bfloat16") {
  struct ProbeImpl : torch::nn::Module {
    torch::nn::Linear l{nullptr};
    torch::ScalarType seen = torch::kFloat;
    ProbeImpl() { l = register_module("l", torch::nn::Linear(2, 1)); }
    torch::Tensor forward(const torch::Tensor& x) {
      auto y = l(x);
      seen = y.scalar_type();
      return y.to(torch::kFloat).sum();
    }
  };
  auto model = std::make_shared<ProbeImpl>();
  torch::optim::SGD opt(model->parameters(), 0.1);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  torch::Tensor x = torch::ones({1, 2});
  Logic plain(model);
  plain.train_step(models, optimizers, 0, x);
  CHECK((model->seen == torch::kFloat));
  Logic cast(model, LogicOptions().autocast(ppe::runtime::AutocastOptions(true)));
  cast.train_step(models, optimizers, 0, x);
  CHECK((model->seen == torch::kBFloat16));
  cast.eval_step(models, 0, x);
  CHECK((model->seen == torch::kBFloat16));
  CHECK_FALSE(ppe::detail::compat::autocast_enabled(torch::kCPU));  // restored after the step
}

TEST_CASE("Logic: train and eval modes around epochs and validations") {
  Lin model;
  torch::optim::SGD opt(model->parameters(), 0.1);
  ppe::training::Models models(model);
  Logic logic(model);
  logic.train_epoch_begin(models, 0, 1);
  CHECK(model->is_training());
  logic.train_validation_begin(models);
  CHECK_FALSE(model->is_training());
  logic.train_validation_end(models);
  CHECK(model->is_training());
  logic.train_epoch_end(models, 0);
  CHECK_FALSE(model->is_training());
}

TEST_CASE("Logic: consume_options pops PPE's keys and checks them") {
  Lin model;
  Logic logic(model);
  ppe::State options = ppe::State::dict({{"backward_outputs", ppe::State::list({"a", "b"})},
                                         {"autocast", false},
                                         {"clip_grad_norm", 1.5},
                                         {"accumulation_steps", 4},
                                         {"other", 1}});
  logic.consume_options(options);
  CHECK(options.size() == 1);
  CHECK(options.contains("other"));
  CHECK(logic.options().backward_outputs() == std::vector<std::string>{"a", "b"});
  CHECK(*logic.options().clip_grad_norm() == 1.5);
  CHECK(logic.options().accumulation_steps() == 4);
  ppe::State bad = ppe::State::dict({{"backward_outputs", 3}});
  CHECK(error_of([&] { logic.consume_options(bad); }).find("'backward_outputs' must be a string or a list") !=
        std::string::npos);
  CHECK(error_of([&] { Logic(model, LogicOptions().accumulation_steps(0)); }).find("accumulation_steps must be >= 1") !=
        std::string::npos);
  CHECK(error_of([&] { Logic(model, LogicOptions().clip_grad_norm(-1.0)); }).find("clip_grad_norm must be > 0") !=
        std::string::npos);
}

TEST_CASE("Logic: a model returning a tuple: the loss output '0' is chosen, the prediction '1' is not") {
  TupleModel model;
  torch::optim::SGD opt(model->parameters(), 0.1);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  Logic logic(model);
  auto b = std::make_tuple(torch::ones({4, 2}), torch::zeros({4, 1}));
  Outputs outs = logic.train_step(models, optimizers, 0, b);
  CHECK(outs.keys() == std::vector<std::string>{"0", "1"});
  CHECK(outs["1"].sizes() == torch::IntArrayRef({4, 1}));
  CHECK(model->l->weight.grad().defined());
}

TEST_CASE("Logic: eval_step returns the model's output (PPE's test_eval_step)") {
  Lin model;
  ppe::training::Models models(model);
  Logic logic(model);
  torch::Tensor x = torch::tensor({{1.0f, 2.0f}});
  {
    torch::NoGradGuard g;
    model->l->weight.copy_(torch::tensor({{0.5f, -1.0f}}));
  }
  Outputs outs = logic.eval_step(models, 0, x);
  CHECK(outs["0"].item<float>() == doctest::Approx(model->forward(x).item<float>()));
  CHECK(outs["0"].item<float>() == -1.5f);  // 0.5 * 1 - 1 * 2
  CHECK_FALSE(model->l->weight.grad().defined());  // no backward in evaluation
}

TEST_CASE("Logic: autocast on CUDA in a build without CUDA is an error at construction") {
  if (at::hasCUDA()) return;  // the error is for machines without CUDA
  Lin model;
  CHECK(error_of([&] {
          Logic(model, LogicOptions().autocast(ppe::runtime::AutocastOptions(true).device_type(c10::DeviceType::CUDA)));
        }).find("Requested AMP features but CUDA is not available") != std::string::npos);
}

TEST_CASE("Logic: merge_options sets exactly the fields the given options set") {
  Lin model;
  auto scaler = std::make_shared<ppe::amp::GradScaler>();
  Logic logic(model, LogicOptions().backward_outputs(std::vector<std::string>{"a"}).clip_grad_value(3.0));
  LogicOptions none;
  CHECK(ppe::handler::merge_options(none, LogicOptions()) == 0);  // nothing set: nothing merged
  logic.merge_options(LogicOptions()
                          .grad_scaler(scaler)
                          .clip_grad_norm(2.0)
                          .clip_grad_norm_type(1.0)
                          .accumulation_steps(3)
                          .autocast(ppe::runtime::AutocastOptions(true)));
  const LogicOptions& o = logic.options();
  CHECK(o.backward_outputs() == std::vector<std::string>{"a"});  // kept
  CHECK(*o.clip_grad_value() == 3.0);                            // kept
  CHECK(o.grad_scaler() == scaler);
  CHECK(*o.clip_grad_norm() == 2.0);
  CHECK(o.clip_grad_norm_type() == 1.0);
  CHECK(o.accumulation_steps() == 3);
  CHECK(o.autocast().enabled());
  // The merged options are checked as the constructor checks them.
  CHECK(error_of([&] { logic.merge_options(LogicOptions().clip_grad_value(-1.0)); }).find("clip_grad_value must be > 0") !=
        std::string::npos);
}

TEST_CASE("Logic: trainer options given with a logic override its options key by key (PPE's test_initialize_logic_with_options)") {
  // PPE's table: the keys set on the logic, the keys set in the trainer's options.
  using Keys = std::vector<std::string>;
  const std::vector<std::pair<Keys, Keys>> table = {
      {{}, {}},
      {{}, {"backward_outputs"}},
      {{}, {"backward_function"}},
      {{}, {"backward_outputs", "backward_function"}},
      {{"backward_outputs"}, {}},
      {{"backward_outputs"}, {"backward_outputs"}},
      {{"backward_outputs"}, {"backward_function"}},
      {{"backward_outputs"}, {"backward_outputs", "backward_function"}},
      {{"backward_function"}, {}},
      {{"backward_function"}, {"backward_outputs"}},
      {{"backward_function"}, {"backward_function"}},
      {{"backward_function"}, {"backward_outputs", "backward_function"}},
      {{"backward_outputs", "backward_function"}, {}},
      {{"backward_outputs", "backward_function"}, {"backward_outputs"}},
      {{"backward_outputs", "backward_function"}, {"backward_function"}},
      {{"backward_outputs", "backward_function"}, {"backward_outputs", "backward_function"}},
  };
  std::string last_called;
  // Options with the given keys; `who` tells the two sides' values apart.
  auto make = [&](const Keys& keys, const std::string& who) {
    LogicOptions o;
    for (const auto& k : keys) {
      if (k == "backward_outputs") o.backward_outputs(std::vector<std::string>{who});
      if (k == "backward_function") o.backward_function([&last_called, who](const torch::Tensor&) { last_called = who; });
    }
    return o;
  };
  auto has = [](const Keys& keys, const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  for (const auto& [logic_keys, trainer_keys] : table) {
    CAPTURE(logic_keys.size());
    CAPTURE(trainer_keys.size());
    Lin model;
    torch::optim::SGD opt(model->parameters(), 0.1);
    auto trainer = ppe::engine::create_trainer(
        model, opt, 1, ppe::engine::TrainerOptions().logic(make(trainer_keys, "trainer")),
        ppe::engine::with_logic(Logic(model, make(logic_keys, "logic"))));
    const LogicOptions& got = trainer.logic().options();
    // Expected: the logic's options updated by the trainer's.
    const char* outputs_from = has(trainer_keys, "backward_outputs") ? "trainer"
                               : has(logic_keys, "backward_outputs") ? "logic"
                                                                     : nullptr;
    if (outputs_from)
      CHECK(got.backward_outputs() == std::vector<std::string>{outputs_from});
    else
      CHECK_FALSE(got.backward_outputs().has_value());
    const char* function_from = has(trainer_keys, "backward_function") ? "trainer"
                                : has(logic_keys, "backward_function") ? "logic"
                                                                       : nullptr;
    last_called.clear();
    if (got.backward_function()) got.backward_function()(torch::ones({}));
    CHECK(last_called == (function_from ? function_from : ""));
  }
}

namespace {
// A logic of its own, which takes no LogicOptions.
struct OwnLogic : ppe::handler::BaseLogic {
  template <class B>
  Outputs train_step(const ppe::training::Models&, const ppe::training::Optimizers&, std::int64_t, B&) {
    return {};
  }
};
}  // namespace

TEST_CASE("Logic: logic options given with a logic that takes none are an error, not silently unused") {
  Lin model;
  torch::optim::SGD opt(model->parameters(), 0.1);
  const std::string err = error_of([&] {
    ppe::engine::create_trainer(model, opt, 1, ppe::engine::TrainerOptions().logic(LogicOptions().clip_grad_norm(1.0)),
                                ppe::engine::with_logic(OwnLogic{}));
  });
  CHECK(err.find("create_trainer: logic options (.logic(LogicOptions...)) were given, but the logic given with "
                 "with_logic(...) takes none") != std::string::npos);
  // Default-constructed logic options are not "given".
  CHECK_NOTHROW(ppe::engine::create_trainer(model, opt, 1, ppe::engine::TrainerOptions(), ppe::engine::with_logic(OwnLogic{})));
}

TEST_CASE("Logic: with accumulation, clipping and the grad scaler act once per group, on the summed gradient") {
  Lin model;
  torch::optim::SGD opt(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(opt);
  auto scaler = std::make_shared<ppe::amp::GradScaler>(ppe::amp::GradScalerOptions().init_scale(1024.0));
  // k = 2 over x = [3, 4] twice: each loss halved, the summed gradient is
  // [3, 4] (scaled by 1024 until the step unscales it), clamped to [2, 2].
  Logic logic(model, LogicOptions().accumulation_steps(2).clip_grad_value(2.0).grad_scaler(scaler));
  logic.train_epoch_begin(models, 0, 2);
  torch::Tensor x = torch::tensor({{3.0f, 4.0f}});
  logic.train_step(models, optimizers, 0, x);
  logic.train_step_optimizers(models, optimizers, 0);
  CHECK(torch::equal(weight(model), torch::zeros({1, 2})));  // no step inside the group
  CHECK(scaler->growth_tracker() == 0);                       // nor a scaler update
  logic.train_step(models, optimizers, 1, x);
  CHECK(torch::equal(weight(model).grad(), torch::tensor({{3072.0f, 4096.0f}})));  // 1024 * [3, 4]
  logic.train_step_optimizers(models, optimizers, 1);
  CHECK(torch::equal(weight(model), torch::tensor({{-2.0f, -2.0f}})));
  CHECK(scaler->growth_tracker() == 1);  // one finite step for the group
}

}  // namespace ppe_test_handler_tests_test_logic
