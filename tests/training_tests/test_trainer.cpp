// PPE's training_tests/test_trainer.py: the Trainer made by create_trainer,
// and the call sequence of spec §5.3 recorded by an instrumented handler.

#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/training/extensions/snapshot.hpp>

#include <map>
#include <range/v3/view/filter.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

namespace ext = ppe::training::extensions;
using engine_test::MyModel;
using engine_test::RecordingHandler;
using engine_test::WithLoss;
using ppe_test::error_of;

namespace {

auto options(const ppe_test::TempDir& dir) { return ppe::engine::TrainerOptions().out_dir(dir.str()); }

// A model placed on the CPU runtime, its loss wrapper and an SGD optimizer.
struct Setup {
  MyModel model;
  WithLoss with_loss{model};
  torch::optim::SGD optimizer{model->parameters(), 0.1};
  Setup() { ppe::to(model, "cpu"); }
};

}  // namespace

TEST_CASE("Trainer: PPE's test_trainer trains 20 epochs with the standard extensions") {
  ppe_test::TempDir dir;
  Setup s;
  auto data = engine_test::random_data(10);
  std::ostringstream out;
  auto trainer = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 20, options(dir), ppe::training::entry(ext::LogReport(), ppe::iterations(10)),
      ext::ProgressBar(ext::ProgressBarOptions().out(&out).update_interval(2)),
      ext::PrintReport(ext::PrintReportOptions().out(&out).entries({"epoch", "iteration", "train/loss", "val/loss"})));
  CHECK_THROWS_WITH_AS(trainer.manager(), doctest::Contains("not started"), std::logic_error);
  trainer.run(data);
  CHECK(trainer.epoch() == 20);
  CHECK(trainer.iteration() == 200);
  CHECK(trainer.manager().finalized());
  // Each logged row holds the mean of the step's reported loss and elapsed_time.
  const auto& log = trainer.manager().get_extension<ext::LogReport>("LogReport").log();
  REQUIRE(log.size() == 20);
  CHECK(log[0].find("train/loss") != nullptr);
  CHECK(out.str().find("train/loss") != std::string::npos);
}

TEST_CASE("Trainer: a model without ppe::to is an error naming ppe::to (PPE's test_trainer_no_to)") {
  ppe_test::TempDir dir;
  MyModel model;
  WithLoss with_loss(model);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto data = engine_test::random_data(10);
  auto trainer = ppe::engine::create_trainer(with_loss, optimizer, 20, options(dir));
  CHECK_THROWS_WITH_AS(trainer.run(data), doctest::Contains("ppe::to(module, device)"), std::runtime_error);
}

TEST_CASE("Trainer: unknown free-form options are an error naming them (PPE's test_trainer_invalid_options)") {
  ppe_test::TempDir dir;
  Setup s;
  const std::string err = error_of([&] {
    ppe::engine::create_trainer(s.with_loss, s.optimizer, 20,
                                options(dir).options(ppe::State::dict({{"UNKNOWN_OPTIONS", true}})));
  });
  CHECK(err.find("Unknown options: ['UNKNOWN_OPTIONS']") != std::string::npos);
  // Known keys are consumed by the handler and the logic.
  auto t = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 20,
      options(dir).options(ppe::State::dict({{"train_report_keys", ppe::State::list({"0"})},
                                             {"backward_outputs", "0"},
                                             {"async", false}})));
  CHECK(t.handler().options().train_report_keys() == std::vector<std::string>{"0"});
  CHECK(t.logic().options().backward_outputs() == std::vector<std::string>{"0"});
}

TEST_CASE("Trainer: the evaluator runs when its trigger fires (PPE's evaluator trigger and dict tables)") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(10);
  SUBCASE("every epoch by default: 20") {
    Setup s;
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 20, options(dir),
                                               ppe::engine::create_evaluator(s.with_loss));
    trainer.run(data, data);
    CHECK(trainer.evaluator().runs() == 20);
  }
  SUBCASE("(evaluator, (5, iteration)): 40") {
    Setup s;
    auto trainer = ppe::engine::create_trainer(
        s.with_loss, s.optimizer, 20, options(dir),
        ppe::engine::evaluate(ppe::engine::create_evaluator(s.with_loss), ppe::iterations(5)));
    trainer.run(data, data);
    CHECK(trainer.evaluator().runs() == 40);
  }
  SUBCASE("named evaluators: '1' every epoch (20) and '2' every 5 iterations (40)") {
    Setup s;
    auto trainer = ppe::engine::create_trainer(
        s.with_loss, s.optimizer, 20, options(dir),
        ppe::engine::evaluate(ppe::engine::create_evaluator(s.with_loss), ppe::epochs(1), "1"),
        ppe::engine::evaluate(ppe::engine::create_evaluator(s.with_loss), ppe::iterations(5), "2"));
    trainer.run(data, data);
    CHECK(trainer.evaluator_at<0>().runs() == 20);
    CHECK(trainer.evaluator_at<1>().runs() == 40);
    CHECK(trainer.manager().has_extension("1"));
    CHECK(trainer.manager().has_extension("2"));
  }
  SUBCASE("the validation values reach the trainer's observation and log") {
    Setup s;
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 2, options(dir),
                                               ppe::engine::create_evaluator(s.with_loss), ext::LogReport());
    trainer.run(data, data);
    const auto& log = trainer.manager().get_extension<ext::LogReport>("LogReport").log();
    REQUIRE(log.size() == 2);
    CHECK(log[1].find("val/loss") != nullptr);
    CHECK(log[1].find("train/loss") != nullptr);
  }
}

TEST_CASE("Trainer: loaders and evaluators must match") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(4);
  SUBCASE("an evaluator without a validation loader") {
    Setup s;
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir),
                                               ppe::engine::create_evaluator(s.with_loss));
    CHECK_THROWS_WITH_AS(trainer.run(data), doctest::Contains("`val_loader` is required"), std::invalid_argument);
  }
  SUBCASE("a validation loader without an evaluator: PPE's warning") {
    Setup s;
    ppe_test::WarningCollector warnings;
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir));
    trainer.run(data, data);
    CHECK(warnings.all().find("`val_loader` is given whereas the evaluator is missing.") != std::string::npos);
  }
  SUBCASE("two evaluators with one name") {
    Setup s;
    const std::string err = error_of([&] {
      ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir),
                                  ppe::engine::create_evaluator(s.with_loss), ppe::engine::create_evaluator(s.with_loss));
    });
    CHECK(err.find("two evaluators are named 'Evaluator'") != std::string::npos);
  }
  SUBCASE("an unsized range needs train_len") {
    Setup s;
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir));
    auto unsized = data | ranges::views::filter([](const auto&) { return true; });
    CHECK_THROWS_WITH_AS(trainer.run(unsized), doctest::Contains("train_len"), std::invalid_argument);
  }
}

TEST_CASE("Trainer: the same parameters as the hand-written loop (PPE's test_train_result_equal)") {
  ppe_test::TempDir dir;
  auto train = engine_test::random_data(10);
  std::vector<torch::Tensor> inputs;
  for (int i = 0; i < 30; ++i) inputs.push_back(torch::rand({1, 20}));
  auto predict = [&](MyModel& m) {
    m->eval();
    torch::NoGradGuard g;
    std::vector<torch::Tensor> out;
    for (auto& x : inputs) out.push_back(m(x));
    return out;
  };
  Setup a;
  auto trainer = ppe::engine::create_trainer(a.with_loss, a.optimizer, 20, options(dir));
  trainer.run(train);
  const auto from_trainer = predict(a.model);

  Setup b;
  b.with_loss->train();
  for (int epoch = 0; epoch < 20; ++epoch)
    for (auto& [x, t] : train) {
      b.optimizer.zero_grad();
      auto loss = b.with_loss(x, t);
      loss.backward();
      b.optimizer.step();
    }
  const auto from_loop = predict(b.model);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    CHECK_FALSE(from_trainer[i].requires_grad());
    CHECK(torch::equal(from_trainer[i], from_loop[i]));
  }
}

TEST_CASE("Trainer: state_dict and load_state_dict before the start (PPE's TestTrainerState)") {
  ppe_test::TempDir dir;
  std::vector<engine_test::Batch> data;
  for (int i = 0; i < 10; ++i) data.emplace_back(torch::ones({1, 20}), torch::ones({1, 10}));
  auto make = [&](Setup& s, double epochs) { return ppe::engine::create_trainer(s.with_loss, s.optimizer, epochs, options(dir)); };
  torch::manual_seed(0);
  Setup s1;
  auto trainer = make(s1, 20);
  trainer.run(data);
  const ppe::State state = trainer.state_dict();

  torch::manual_seed(0);
  Setup s2;
  auto shorter = make(s2, 10);
  shorter.run(data);
  CHECK_FALSE(engine_test::states_equal(state.at("models"), shorter.state_dict().at("models")));

  Setup s3;
  auto resumed = make(s3, 20);
  CHECK_THROWS_WITH_AS(resumed.state_dict(), doctest::Contains("not started"), std::logic_error);
  resumed.load_state_dict(state);
  CHECK(engine_test::states_equal(resumed.state_dict().at("models"), state.at("models")));  // kept until the start
  resumed.run(data);  // already at the end: loads the state, trains nothing
  CHECK(resumed.iteration() == 200);
  CHECK(engine_test::states_equal(resumed.state_dict().at("models"), state.at("models")));
  CHECK(engine_test::states_equal(resumed.state_dict().at("optimizers"), state.at("optimizers")));
}

TEST_CASE("Trainer: autoload of a snapshot (PPE's test_trainer_autoload and results consistency)") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(10);
  Setup s1;
  auto trainer = ppe::engine::create_trainer(
      s1.with_loss, s1.optimizer, 20, options(dir),
      ppe::training::entry(ext::snapshot(), ppe::training::triggers::ManualScheduleTrigger({10}, ppe::training::Unit::Epoch)));
  trainer.run(data);

  Setup s2;
  auto resumed = ppe::engine::create_trainer(s2.with_loss, s2.optimizer, 20, options(dir),
                                             ext::snapshot(ext::SnapshotOptions().autoload(true)));
  resumed.setup(10).start_extensions();  // autoload happens when the extensions start
  CHECK(resumed.epoch() == 10);
  resumed.run(data);
  CHECK(resumed.epoch() == 20);
  // Batches of one sample in a fixed order: the second half retrains exactly.
  CHECK(engine_test::states_equal(resumed.state_dict().at("models"), trainer.state_dict().at("models")));
}

TEST_CASE("Trainer: batch forms (PPE's dict and tuple inputs)") {
  ppe_test::TempDir dir;
  SUBCASE("a name->tensor map is passed whole to forward") {
    struct DictModelImpl : torch::nn::Module {
      torch::nn::Linear l{nullptr};
      DictModelImpl() { l = register_module("l", torch::nn::Linear(20, 10)); }
      torch::Tensor forward(const std::map<std::string, torch::Tensor>& b) {
        auto loss = torch::l1_loss(l(b.at("x")), b.at("t"));
        ppe::reporting::report({{"train/loss", loss}});
        return loss;
      }
    };
    auto model = std::make_shared<DictModelImpl>();
    ppe::to(model, "cpu");
    torch::optim::SGD opt(model->parameters(), 0.1);
    std::vector<std::map<std::string, torch::Tensor>> data;
    for (int i = 0; i < 4; ++i) data.push_back({{"x", torch::rand({1, 20})}, {"t", torch::rand({1, 10})}});
    auto before = model->l->weight.clone();
    auto trainer = ppe::engine::create_trainer(model, opt, 2, options(dir));
    trainer.run(data);
    CHECK(trainer.iteration() == 8);
    CHECK_FALSE(torch::equal(before, model->l->weight));
  }
  SUBCASE("torch::data::Example as forward(data, target)") {
    Setup s;
    std::vector<torch::data::Example<>> data;
    for (int i = 0; i < 4; ++i) data.push_back({torch::rand({1, 20}), torch::rand({1, 10})});
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir), ext::LogReport());
    trainer.run(data);
    CHECK(trainer.manager().get_extension<ext::LogReport>("LogReport").log()[0].find("train/loss") != nullptr);
  }
}

TEST_CASE("Trainer: train_len and eval_len limit the passes") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(10);
  std::vector<std::string> log;
  Setup s;
  auto trainer = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 2, options(dir),
      ppe::engine::create_evaluator(s.with_loss, {}, ppe::engine::with_handler(RecordingHandler(log))));
  trainer.run(data, data, ppe::engine::RunOptions().train_len(3).eval_len(2));
  CHECK(trainer.iteration() == 6);
  CHECK(trainer.manager().iters_per_epoch() == 3);
  CHECK(std::count(log.begin(), log.end(), "eval_step 0") == 2);
  CHECK(std::count(log.begin(), log.end(), "eval_step 1") == 2);
  CHECK(std::count(log.begin(), log.end(), "eval_step 2") == 0);
}

TEST_CASE("Trainer: PPE's call sequence (spec 5.3), recorded by instrumented handlers") {
  ppe_test::TempDir dir;
  auto train = engine_test::random_data(2);
  auto val = engine_test::random_data(2);
  std::vector<std::string> log;
  Setup s;
  auto trainer = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 2, options(dir), ppe::engine::with_handler(RecordingHandler(log)),
      ppe::engine::create_evaluator(s.with_loss, {}, ppe::engine::with_handler(RecordingHandler(log))));
  trainer.run(train, val);
  const std::vector<std::string> epoch = {
      "train_epoch_begin", "train_step 0", "train_post_step 0", "train_step 1", "train_post_step 1",
      // The evaluator runs among the extensions of the epoch's last iteration.
      "train_validation_begin", "eval_loop_begin", "eval_step 0", "eval_post_step 0", "eval_step 1",
      "eval_post_step 1", "eval_loop_end", "train_validation_end", "train_epoch_end"};
  std::vector<std::string> expected = {"train_setup", "eval_setup"};
  expected.insert(expected.end(), epoch.begin(), epoch.end());
  expected.insert(expected.end(), epoch.begin(), epoch.end());
  expected.push_back("train_cleanup");
  CHECK(log == expected);
}

TEST_CASE("Trainer: after a resume in the middle of an epoch, the epoch finishes at its own end") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(10);
  Setup s1;
  auto first = ppe::engine::create_trainer(s1.with_loss, s1.optimizer, 2, options(dir),
                                           ppe::engine::stop_when(ppe::iterations(15)));
  first.run(data);
  REQUIRE(first.iteration() == 15);

  std::vector<std::string> log;
  Setup s2;
  auto second = ppe::engine::create_trainer(s2.with_loss, s2.optimizer, 2, options(dir),
                                            ppe::engine::with_handler(RecordingHandler(log)));
  second.load_state_dict(first.state_dict());
  second.run(data);
  CHECK(second.iteration() == 20);
  // PPE would run a whole epoch's count (indices 0..9) from iteration 15.
  CHECK(std::count(log.begin(), log.end(), "train_epoch_begin") == 1);
  CHECK(log[2] == "train_step 5");
}

TEST_CASE("Trainer: extend before the start; not after") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(3);
  Setup s;
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir));
  int calls = 0;
  trainer.extend(ppe::training::make_extension([&](ppe::training::Manager&) { ++calls; }, ppe::iterations(1), "count"));
  trainer.run(data);
  CHECK(calls == 3);
  CHECK_THROWS_WITH_AS(trainer.extend(ext::LogReport()), doctest::Contains("cannot extend after starting"),
                       std::logic_error);
}

TEST_CASE("Trainer: the grad scaler's state is saved under PPE's key") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(3);
  Setup s;
  auto scaler = std::make_shared<ppe::amp::GradScaler>(ppe::amp::GradScalerOptions().init_scale(1024.0));
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1,
                                             options(dir).logic(ppe::handler::LogicOptions().grad_scaler(scaler)));
  trainer.run(data);
  const ppe::State state = trainer.state_dict();
  const ppe::State& saved = state.at("state_objects").at("options___::__grad_scaler");
  CHECK(saved.at("scale").as_double() == 1024.0);  // 3 finite steps, growth interval 2000: unchanged
  CHECK(saved.at("_growth_tracker").as_int() == 3);
}

namespace {
// A logic whose step returns one bare tensor (PPE accepts any output).
struct TensorLogic : ppe::handler::BaseLogic {
  WithLoss model;
  torch::Tensor train_step(const ppe::training::Models&, const ppe::training::Optimizers& opts, std::int64_t,
                           engine_test::Batch& b) {
    opts.find("main")->optimizer().zero_grad();
    auto loss = model(std::get<0>(b), std::get<1>(b));
    loss.backward();
    opts.find("main")->optimizer().step();
    return loss;
  }
};
// A runtime with a state of its own.
struct StatefulRuntime : ppe::runtime::PyTorchRuntime {
  std::int64_t marker = 7;
  StatefulRuntime() : PyTorchRuntime("cpu") {}
  ppe::State state_dict() const override { return ppe::State::dict({{"marker", marker}}); }
  void load_state_dict(const ppe::State& s) override { marker = s.at("marker").as_int(); }
};
}  // namespace

TEST_CASE("Trainer: a logic returning one tensor; its output '0' is reported by train_report_keys") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(3);
  Setup s;
  auto trainer = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 1,
      options(dir).handler(ppe::handler::HandlerOptions().train_report_keys({"0"})),
      ppe::engine::with_logic(TensorLogic{{}, s.with_loss}), ext::LogReport());
  trainer.run(data);
  const auto log = trainer.manager().get_extension<ext::LogReport>("LogReport").log();
  REQUIRE(log.size() == 1);
  CHECK(log[0].find("train/0")->to_double() == doctest::Approx(log[0].find("train/loss")->to_double()));
}

TEST_CASE("Trainer: the entry runtime's state is saved and restored as the state object 'runtime'") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(2);
  Setup s;
  auto rt = std::make_shared<StatefulRuntime>();
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir), ppe::engine::with_runtime(rt));
  trainer.run(data);
  ppe::State state = trainer.state_dict();
  CHECK(state.at("state_objects").at("runtime").at("marker").as_int() == 7);
  // A trainer whose runtime has no state saves none (PPE's layout).
  Setup s2;
  auto plain = ppe::engine::create_trainer(s2.with_loss, s2.optimizer, 1, options(dir));
  plain.run(data);
  CHECK_FALSE(plain.state_dict().at("state_objects").contains("runtime"));
  // Restoring into another trainer sets the runtime's state.
  state.at("state_objects").at("runtime").set("marker", 9);
  Setup s3;
  auto rt3 = std::make_shared<StatefulRuntime>();
  auto restored = ppe::engine::create_trainer(s3.with_loss, s3.optimizer, 1, options(dir), ppe::engine::with_runtime(rt3));
  restored.load_state_dict(state);
  restored.run(data);
  CHECK(rt3->marker == 9);
}
