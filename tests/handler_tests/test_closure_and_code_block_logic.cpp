// ClosureLogic and CodeBlockLogic (ppe/handler/closure_logic.hpp,
// ppe/handler/code_block_logic.hpp). Ports PPE's
// training_tests/test_trainer.py cases test_trainer_with_clousure_logic,
// test_trainer_with_code_block and test_trainer_with_code_block_with_multiple_optimizers,
// and handler_tests/test_handler.py's test_use_grad_scaler_with_clousure; adds
// LBFGS converging on a least-squares problem against its exact solution, and
// the arithmetic of each step.

#include "ppe_test.hpp"

#include <ppe/amp/masked_step.hpp>  // the sync-free scaler's masked steps
#include <ppe/engine.hpp>
#include <ppe/handler/closure_logic.hpp>
#include <ppe/handler/code_block_logic.hpp>
#include <ppe/runtime/to.hpp>

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine_test_util.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_handler_tests_test_closure_and_code_block_logic {

using ppe::handler::ClosureLogic;
using ppe::handler::CodeBlockLogic;
using ppe::handler::LogicOptions;
using ppe::handler::Outputs;
using ppe::runtime::TensorDict;
using ppe_test::error_of;

namespace {

// Linear regression y = x . w + b with the mean squared error as loss;
// counts its forward calls.
struct RegressionImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  int calls = 0;
  RegressionImpl() { l = register_module("l", torch::nn::Linear(3, 1)); }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
    ++calls;
    return torch::mse_loss(l(x), t);
  }
};
TORCH_MODULE(Regression);

// Returns the loss and the prediction, or two losses: closure mode needs one.
struct TwoOutputsImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  TwoOutputsImpl() { l = register_module("l", torch::nn::Linear(3, 1)); }
  std::map<std::string, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& t) {
    auto y = l(x);
    return {{"loss", torch::mse_loss(y, t)}, {"l1", torch::l1_loss(y, t)}, {"y", y}};
  }
};
TORCH_MODULE(TwoOutputs);

// A least-squares problem: 64 samples, 3 features, noise.
struct Problem {
  torch::Tensor x, y;
  Problem() {
    torch::manual_seed(0);
    x = torch::randn({64, 3});
    y = torch::matmul(x, torch::tensor({{1.5f}, {-2.0f}, {0.5f}})) + 0.3f + 0.1f * torch::randn({64, 1});
  }
  // The smallest mean squared error of an affine fit: the exact solution of
  // the normal equations (A^T A) beta = A^T y with A = [x, 1], in double.
  double min_loss() const {
    auto a = torch::cat({x, torch::ones({64, 1})}, 1).to(torch::kDouble);
    auto yd = y.to(torch::kDouble);
    auto beta = torch::linalg_solve(torch::matmul(a.t(), a), torch::matmul(a.t(), yd), /*left=*/true);
    return (torch::matmul(a, beta) - yd).pow(2).mean().item<double>();
  }
};

}  // namespace

TEST_CASE("ClosureLogic: LBFGS through the trainer reaches the least-squares optimum") {
  ppe_test::TempDir dir;
  Problem p;
  const double best = p.min_loss();
  Regression model;
  ppe::to(model, "cpu");
  const double initial = model(p.x, p.y).item<double>();
  REQUIRE(initial > 10 * best);  // the test can fail: training has work to do
  torch::optim::LBFGS lbfgs(model->parameters(),
                            torch::optim::LBFGSOptions(1.0).max_iter(20).line_search_fn("strong_wolfe"));
  std::vector<std::tuple<torch::Tensor, torch::Tensor>> data{{p.x, p.y}};  // full batch
  auto trainer = ppe::engine::create_trainer(
      model, lbfgs, /*max_epochs=*/5,
      ppe::engine::TrainerOptions().out_dir(dir.str()).handler(
          ppe::handler::HandlerOptions().train_report_keys({"0"})),
      ppe::engine::with_logic(ClosureLogic(model)));
  model->calls = 0;
  trainer.run(data);
  CHECK(model->calls > 5);  // LBFGS evaluates the loss several times per step
  CHECK(trainer.optimizers().find("main")->step_count() == 5);  // one counted step per iteration
  torch::NoGradGuard g;
  const double final_loss = model(p.x, p.y).item<double>();
  // float32 training vs the double optimum: within 1e-4 relative.
  CHECK(final_loss <= best * (1 + 1e-4));
  CHECK(final_loss >= best * (1 - 1e-4));
}

TEST_CASE("ClosureLogic: the step's outputs are the first evaluation's; the optimizer steps in train_step") {
  Problem p;
  Regression model;
  ppe::training::Models models(model);
  auto batch = std::make_tuple(p.x, p.y);
  SUBCASE("SGD: one closure call; w <- w - lr * grad") {
    torch::optim::SGD sgd(model->parameters(), 0.1);
    ppe::training::Optimizers optimizers(sgd);
    ClosureLogic logic(model);
    const auto w0 = model->l->weight.detach().clone();
    const double loss0 = model(p.x, p.y).item<double>();
    model->zero_grad();
    model(p.x, p.y).backward();
    const auto expected = w0 - 0.1 * model->l->weight.grad();
    model->calls = 0;
    Outputs outs = logic.train_step(models, optimizers, 0, batch);
    CHECK(model->calls == 1);
    CHECK(outs.keys() == std::vector<std::string>{"0"});
    CHECK(outs["0"].item<double>() == doctest::Approx(loss0));
    CHECK(torch::allclose(model->l->weight, expected));
    logic.train_step_optimizers(models, optimizers, 0);  // a no-op: no second step
    CHECK(torch::allclose(model->l->weight, expected));
    CHECK(optimizers.find("main")->step_count() == 1);
  }
  SUBCASE("LBFGS: several calls; the outputs are those at the starting parameters") {
    torch::optim::LBFGS lbfgs(model->parameters(), torch::optim::LBFGSOptions(1.0).max_iter(5));
    ppe::training::Optimizers optimizers(lbfgs);
    ClosureLogic logic(model);
    const double loss0 = model(p.x, p.y).item<double>();
    model->calls = 0;
    Outputs outs = logic.train_step(models, optimizers, 0, batch);
    CHECK(model->calls > 1);
    CHECK(outs["0"].item<double>() == doctest::Approx(loss0));
    CHECK(model(p.x, p.y).item<double>() < loss0);
  }
}

TEST_CASE("ClosureLogic: which output is the loss") {
  Problem p;
  TwoOutputs model;
  torch::optim::SGD sgd(model->parameters(), 0.1);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(sgd);
  auto batch = std::make_tuple(p.x, p.y);
  SUBCASE("two one-element losses: an error naming them (PPE: multiple outputs are not supported)") {
    ClosureLogic logic(model);
    const std::string err = error_of([&] { logic.train_step(models, optimizers, 0, batch); });
    CHECK(err.find("2 outputs are to be back-propagated: ['l1', 'loss']") != std::string::npos);
  }
  SUBCASE("backward_outputs names the loss; the other outputs come along") {
    ClosureLogic logic(model, LogicOptions().backward_outputs(std::vector<std::string>{"loss"}));
    Outputs outs = logic.train_step(models, optimizers, 0, batch);
    CHECK(outs.keys() == std::vector<std::string>{"l1", "loss", "y"});
    CHECK(outs["y"].sizes() == torch::IntArrayRef{64, 1});
  }
  SUBCASE("no output to back-propagate: PPE's 'No backward target found'") {
    ClosureLogic logic(model, LogicOptions().backward_outputs(std::vector<std::string>{"missing"}));
    CHECK_THROWS_WITH_AS(logic.train_step(models, optimizers, 0, batch), doctest::Contains("no backward target found"),
                         std::runtime_error);
  }
  SUBCASE("a backward_function replaces loss.backward()") {
    int calls = 0;
    ClosureLogic logic(model, LogicOptions()
                                  .backward_outputs(std::vector<std::string>{"loss"})
                                  .backward_function([&](const torch::Tensor& v) {
                                    ++calls;
                                    v.backward();
                                  }));
    logic.train_step(models, optimizers, 0, batch);
    CHECK(calls == 1);
  }
}

TEST_CASE("ClosureLogic: refuses a grad scaler (PPE's test_use_grad_scaler_with_clousure), clipping, accumulation") {
  Regression model;
  CHECK_THROWS_WITH_AS(ClosureLogic(model, LogicOptions().grad_scaler(std::make_shared<ppe::amp::GradScaler>(
                                               ppe::amp::GradScalerOptions().enabled(false)))),
                       doctest::Contains("grad scaler does not support the closure step mode"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ClosureLogic(model, LogicOptions().accumulation_steps(2)),
                       doctest::Contains("accumulation_steps must be 1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ClosureLogic(model, LogicOptions().clip_grad_norm(1.0)), doctest::Contains("clipping"),
                       std::invalid_argument);
  // Through the trainer's options too (merge_options).
  torch::optim::SGD sgd(model->parameters(), 0.1);
  CHECK_THROWS_WITH_AS(ppe::engine::create_trainer(model, sgd, 1,
                                                   ppe::engine::TrainerOptions().logic(LogicOptions().accumulation_steps(3)),
                                                   ppe::engine::with_logic(ClosureLogic(model))),
                       doctest::Contains("accumulation_steps must be 1"), std::invalid_argument);
}

TEST_CASE("ClosureLogic: PPE's test_trainer_with_clousure_logic (SGD, 20 epochs, with an evaluator)") {
  ppe_test::TempDir dir;
  engine_test::MyModel m;
  engine_test::WithLoss with_loss(m);
  ppe::to(with_loss, "cpu");
  torch::optim::SGD sgd(m->parameters(), 0.1);
  auto data = engine_test::random_data(10);
  auto trainer = ppe::engine::create_trainer(
      with_loss, sgd, 20, ppe::engine::TrainerOptions().out_dir(dir.str()),
      ppe::engine::create_evaluator(with_loss, {}, ppe::engine::with_logic(ClosureLogic(with_loss))),
      ppe::engine::with_logic(ClosureLogic(with_loss)));
  trainer.run(data, data);
  CHECK(trainer.iteration() == 200);
  CHECK(trainer.evaluator().runs() == 20);
  CHECK(trainer.optimizers().find("main")->step_count() == 200);
}

// ---------------------------------------------------------------------------

namespace {

// y = w . x without bias, w starting at 0: the gradient of sum(y) is the sum
// of the rows of x. Takes and returns named tensors (PPE's code blocks).
struct DictModelImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  int calls = 0;
  DictModelImpl() {
    l = register_module("l", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
    torch::NoGradGuard g;
    l->weight.zero_();
  }
  TensorDict forward(const TensorDict& b) {
    ++calls;
    auto y = l(b["x"]);
    TensorDict out;
    out.insert("a", y.sum());
    // Its own graph: PyTorchRuntime::execute back-propagates each selected
    // output separately (PPE's loop), so outputs sharing a graph would fail
    // on the second backward.
    out.insert("b", (3 * l(b["x"])).sum());
    out.insert("y", y);
    return out;
  }
};
TORCH_MODULE(DictModel);

// PPE's MyModelWithLossDictOutput: a std::map batch {"x", "t"} -> {"loss"}.
struct MapModelImpl : torch::nn::Module {
  engine_test::MyModel model{nullptr};
  explicit MapModelImpl(engine_test::MyModel m) { model = register_module("model", m); }
  std::map<std::string, torch::Tensor> forward(const std::map<std::string, torch::Tensor>& b) {
    auto loss = torch::l1_loss(model(b.at("x")), b.at("t"));
    ppe::reporting::report({{is_training() ? "train/loss" : "val/loss", loss}});
    return {{"loss", loss}};
  }
};
TORCH_MODULE(MapModel);

// A CPU runtime that counts the code blocks it executes.
struct CountingRuntime : ppe::runtime::PyTorchRuntime {
  using PyTorchRuntime::PyTorchRuntime;
  CountingRuntime(ppe::runtime::DeviceSpec d, ppe::runtime::RuntimeOptions o)
      : PyTorchRuntime(d, std::move(o), c10::Device(c10::kCPU)) {}
  int executed = 0;
  TensorDict execute(const ppe::runtime::CodeBlock& block, const TensorDict& batch) override {
    ++executed;
    return PyTorchRuntime::execute(block, batch);
  }
};

}  // namespace

TEST_CASE("CodeBlockLogic: train_step executes update_parameters on the model's runtime") {
  DictModel model;
  ppe::to<CountingRuntime>(model, "cpu");
  auto* rt = ppe::runtime::runtime_cast<CountingRuntime>(ppe::runtime::module_runtime(*model));
  REQUIRE(rt != nullptr);
  ppe::training::Models models(model);
  TensorDict batch;
  batch.insert("x", torch::tensor({{1.0f, 2.0f}, {1.0f, 2.0f}}));  // the sum of the rows: [2, 4]
  const auto w = [&] { return model->l->weight.detach(); };
  SUBCASE("automatic outputs a and b: one SGD step, lr 1: w = -([2, 4] + [6, 12])") {
    torch::optim::SGD sgd(model->parameters(), 1.0);
    ppe::training::Optimizers optimizers(sgd);
    CodeBlockLogic logic(model);
    Outputs outs = logic.train_step(models, optimizers, 0, batch);
    CHECK(outs.keys() == std::vector<std::string>{"a", "b", "y"});
    CHECK(rt->executed == 1);
    CHECK(torch::equal(w(), torch::tensor({{-8.0f, -16.0f}})));
    CHECK(optimizers.find("main")->step_count() == 1);
  }
  SUBCASE("backward_outputs 'b' (from the free-form options): w = -[6, 12]") {
    torch::optim::SGD sgd(model->parameters(), 1.0);
    ppe::training::Optimizers optimizers(sgd);
    CodeBlockLogic logic(model);
    ppe::State opts = ppe::State::dict({{"backward_outputs", "b"}});
    logic.consume_options(opts);
    CHECK(opts.size() == 0);
    logic.train_step(models, optimizers, 0, batch);
    CHECK(torch::equal(w(), torch::tensor({{-6.0f, -12.0f}})));
    ppe::State bad = ppe::State::dict({{"backward_outputs", ppe::State::list({"a", "b"})}});
    CHECK_THROWS_WITH_AS(logic.consume_options(bad), doctest::Contains("must be one string"), std::invalid_argument);
  }
  SUBCASE("every optimizer of the trainer steps (PPE's multiple optimizers): lr 1 and 0.5 -> w = -1.5 * [8, 16]") {
    torch::optim::SGD sgd0(model->parameters(), 1.0);
    torch::optim::SGD sgd1(model->parameters(), 0.5);
    ppe::training::Optimizers optimizers{{"0", sgd0}, {"1", sgd1}};
    CodeBlockLogic logic(model);
    logic.train_step(models, optimizers, 0, batch);
    CHECK(torch::equal(w(), torch::tensor({{-12.0f, -24.0f}})));
    // zero_grad before the next block: the gradient does not add up.
    logic.train_step(models, optimizers, 1, batch);
    CHECK(torch::equal(w(), torch::tensor({{-24.0f, -48.0f}})));
  }
  SUBCASE("eval_step: the forward only (no backward), through the runtime") {
    {
      torch::NoGradGuard g;
      model->l->weight.fill_(1.0f);
    }
    CodeBlockLogic logic(model);
    Outputs outs = logic.eval_step(models, 0, batch);
    CHECK(rt->executed == 1);
    CHECK(outs["a"].item<float>() == 6.0f);
    CHECK(!model->l->weight.grad().defined());
  }
}

TEST_CASE("CodeBlockLogic: no runtime is an error naming ppe::to; a batch of std::map works") {
  DictModel model;
  torch::optim::SGD sgd(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(sgd);
  CodeBlockLogic logic(model);
  std::map<std::string, torch::Tensor> batch{{"x", torch::ones({2, 2})}};  // two rows: y is not one element
  CHECK_THROWS_WITH_AS(logic.train_step(models, optimizers, 0, batch), doctest::Contains("call ppe::to(model, device)"),
                       std::runtime_error);
  ppe::to(model, "cpu");
  logic.train_step(models, optimizers, 0, batch);
  CHECK(torch::equal(model->l->weight.detach(), torch::tensor({{-8.0f, -8.0f}})));  // -([2, 2] + 3 * [2, 2])
}

TEST_CASE("CodeBlockLogic: PPE's test_trainer_with_code_block(_with_multiple_optimizers)") {
  ppe_test::TempDir dir;
  engine_test::MyModel m;
  MapModel with_loss(m);
  ppe::to(with_loss, "cpu");
  std::vector<std::map<std::string, torch::Tensor>> data;
  for (int i = 0; i < 10; ++i) data.push_back({{"x", torch::rand({1, 20})}, {"t", torch::rand({1, 10})}});
  auto evaluator = ppe::engine::create_evaluator(with_loss, {}, ppe::engine::with_logic(CodeBlockLogic(with_loss)));
  SUBCASE("one optimizer") {
    torch::optim::SGD sgd(m->parameters(), 0.1);
    auto trainer = ppe::engine::create_trainer(with_loss, sgd, 20, ppe::engine::TrainerOptions().out_dir(dir.str()),
                                               std::move(evaluator),
                                               ppe::engine::with_logic(CodeBlockLogic(with_loss)));
    trainer.run(data, data);
    CHECK(trainer.iteration() == 200);
    CHECK(trainer.evaluator().runs() == 20);
    CHECK(trainer.optimizers().find("main")->step_count() == 200);
  }
  SUBCASE("two optimizers, SGD and Adam") {
    torch::optim::SGD sgd(m->parameters(), 0.1);
    torch::optim::Adam adam(m->parameters(), 0.1);
    auto trainer = ppe::engine::create_trainer(
        ppe::training::Models(with_loss), ppe::training::Optimizers{{"0", sgd}, {"1", adam}}, 2,
        ppe::engine::TrainerOptions().out_dir(dir.str()), std::move(evaluator),
        ppe::engine::with_logic(CodeBlockLogic(with_loss)));
    trainer.run(data, data);
    CHECK(trainer.iteration() == 20);
    CHECK(trainer.optimizers().find("0")->step_count() == 20);
    CHECK(trainer.optimizers().find("1")->step_count() == 20);
  }
}

namespace {

// loss = (w . x)^2 with w = [0.5, 0.5]: an inf or NaN in x makes the
// gradient inf or NaN, and the grad scaler skips that step.
struct OverflowModelImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  OverflowModelImpl() {
    l = register_module("l", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
    torch::NoGradGuard g;
    l->weight.fill_(0.5);
  }
  std::map<std::string, torch::Tensor> forward(const std::map<std::string, torch::Tensor>& b) {
    return {{"loss", l(b.at("x")).pow(2).sum()}};
  }
};
TORCH_MODULE(OverflowModel);

// Six batches; the 1st, 2nd and 4th overflow (inf, NaN, inf): three real
// steps, the first at iteration 3.
std::vector<std::map<std::string, torch::Tensor>> overflow_batches() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::map<std::string, torch::Tensor>> out;
  for (const auto& row :
       std::vector<std::vector<float>>{{inf, 1.0f}, {nan, 2.0f}, {1.0f, 2.0f}, {3.0f, inf}, {-1.0f, 3.0f}, {2.0f, 0.5f}})
    out.push_back({{"x", torch::tensor(row).reshape({1, 2})}});
  return out;
}

// What a training run saw: the optimizer's step count after each iteration,
// the iterations at which an LRScheduler waiting for the first optimizer step
// stepped, Adam's step count in the saved optimizer state, the final weight.
struct CountedRun {
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> scheduled;
  double saved_step = 0;
  torch::Tensor weight;
};

enum class StepPath { Logic, CodeBlockLogic, OwnLoop };

// Trains OverflowModel with Adam over overflow_batches() through `path`, with
// a synchronising or a sync-free GradScaler.
CountedRun run_with_overflows(StepPath path, bool sync_free) {
  namespace tr = ppe::training;
  namespace ext = ppe::training::extensions;
  ppe_test::TempDir dir;
  OverflowModel model;
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.1));
  torch::optim::StepLR sched(opt, 1, 0.5);
  auto scaler = std::make_shared<ppe::amp::GradScaler>(
      ppe::amp::GradScalerOptions().init_scale(1024.0).sync_free(sync_free));
  CountedRun run;
  auto scheduler = tr::entry(
      ext::LRScheduler(sched, ext::LRSchedulerOptions<torch::optim::StepLR>()
                                  .stepper([&](tr::Manager& m, torch::optim::StepLR&) {
                                    run.scheduled.push_back(m.iteration());
                                  })
                                  .wait_for_first_optimizer_step(true)),
      ppe::iterations(1));
  auto record = tr::make_extension(
      [&](tr::Manager& m) { run.counts.push_back(m.optimizers().find("main")->step_count()); }, ppe::iterations(1),
      "record");
  const auto data = overflow_batches();
  const auto finish = [&](const tr::Optimizers& optimizers) {
    const ppe::State state = optimizers.find("main")->state_dict();
    run.saved_step = state.at("state").at("0").at("step").as_tensor().item<double>();
    run.weight = model->l->weight.detach().clone();
  };
  switch (path) {
    case StepPath::Logic: {
      ppe::to(model, "cpu");
      auto trainer = ppe::engine::create_trainer(
          model, opt, 1, ppe::engine::TrainerOptions().out_dir(dir.str()).logic(LogicOptions().grad_scaler(scaler)),
          std::move(scheduler), std::move(record));
      trainer.run(data);
      finish(trainer.optimizers());
      break;
    }
    case StepPath::CodeBlockLogic: {
      ppe::to(model, "cpu", ppe::runtime::RuntimeOptions().grad_scaler(scaler));
      auto trainer = ppe::engine::create_trainer(model, opt, 1, ppe::engine::TrainerOptions().out_dir(dir.str()),
                                                 ppe::engine::with_logic(CodeBlockLogic(model)), std::move(scheduler),
                                                 std::move(record));
      trainer.run(data);
      finish(trainer.optimizers());
      break;
    }
    case StepPath::OwnLoop: {  // docs/grad-scaler.md's loop
      auto manager = tr::ExtensionsManager(
          tr::ManagerOptions().max_epochs(1).iters_per_epoch(static_cast<std::int64_t>(data.size())).out_dir(dir.str()),
          model, opt, std::move(scheduler), std::move(record));
      ppe::amp::GradScaler& s = *scaler;
      for (const auto& batch : data)
        manager.run_iteration([&] {
          opt.zero_grad();
          s.scale(model->forward(batch).at("loss")).backward();
          manager.optimizers().step(s);  // steps "main" through the scaler; counts only real steps
          s.update();
        });
      finish(manager.optimizers());
      break;
    }
  }
  return run;
}

// Executes the block on PyTorchRuntime without its step counters: a runtime
// written before code blocks carried them.
struct UncountingRuntime : ppe::runtime::PyTorchRuntime {
  using PyTorchRuntime::PyTorchRuntime;
  UncountingRuntime(ppe::runtime::DeviceSpec d, ppe::runtime::RuntimeOptions o)
      : PyTorchRuntime(d, std::move(o), c10::Device(c10::kCPU)) {}
  TensorDict execute(const ppe::runtime::CodeBlock& block, const TensorDict& batch) override {
    ppe::runtime::CodeBlock uncounted = block;
    uncounted.step_counters.clear();
    return PyTorchRuntime::execute(uncounted, batch);
  }
};

}  // namespace

TEST_CASE("CodeBlockLogic with a GradScaler counts only the steps applied, as Logic and the own loop do") {
  const std::vector<std::int64_t> counts{0, 0, 1, 1, 2, 3};
  const std::vector<std::int64_t> scheduled{3, 4, 5, 6};  // from the first real step on
  torch::Tensor weight;
  for (const bool sync_free : {false, true}) {
    for (const StepPath path : {StepPath::Logic, StepPath::CodeBlockLogic, StepPath::OwnLoop}) {
      CAPTURE(sync_free);
      CAPTURE(static_cast<int>(path));
      const CountedRun run = run_with_overflows(path, sync_free);
      CHECK(run.counts == counts);
      CHECK(run.scheduled == scheduled);
      CHECK(run.saved_step == 3.0);  // Adam's count in the state: LibTorch's own steps would leave 3
      if (!weight.defined()) weight = run.weight;
      CHECK(torch::equal(run.weight, weight));  // every path and scaler: the same training, bit for bit
    }
  }
  CHECK(!torch::equal(weight, torch::full({1, 2}, 0.5f)));  // it did train
}

TEST_CASE("CodeBlockLogic: a runtime that records no steps gets every step counted, as before") {
  DictModel model;
  ppe::to<UncountingRuntime>(model, "cpu");
  torch::optim::SGD sgd(model->parameters(), 1.0);
  ppe::training::Models models(model);
  ppe::training::Optimizers optimizers(sgd);
  CodeBlockLogic logic(model);
  TensorDict batch;
  batch.insert("x", torch::tensor({{1.0f, 2.0f}, {1.0f, 2.0f}}));
  logic.train_step(models, optimizers, 0, batch);
  logic.train_step(models, optimizers, 1, batch);
  CHECK(optimizers.find("main")->step_count() == 2);
  CHECK(optimizers.find("main")->step_counter().recorded() == 2);
}

}  // namespace ppe_test_handler_tests_test_closure_and_code_block_logic
