// PPE's training_tests/test_trainer.py: the Trainer made by create_trainer,
// and the call sequence of spec §5.3 recorded by an instrumented handler.

#include <ppe/dataloaders/resumable_sampler.hpp>
#include <ppe/engine.hpp>
#include <ppe/profiler/profile.hpp>
#include <ppe/profiler/time_summary.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/training/extensions/snapshot.hpp>

#include <algorithm>
#include <map>
#include <range/v3/view/filter.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_trainer {

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
  // PPE's test prints 'val/loss' without an evaluator (a blank column): the
  // report-key check would warn about it at the end, so it is off here.
  auto trainer = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 20, options(dir).check_report_keys(false),
      ppe::training::entry(ext::LogReport(), ppe::iterations(10)),
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
  // The whole state, as PPE compares it; the elapsed time (which PPE does not
  // keep) went on while the resumed trainer ran.
  auto timeless = [](ppe::State st) {
    CHECK(st.pop("_elapsed_time").has_value());
    return st;
  };
  CHECK(engine_test::states_equal(timeless(resumed.state_dict()), timeless(state)));
}

TEST_CASE("Trainer: autoload of a snapshot (PPE's test_trainer_autoload and results consistency)") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(10);
  Setup s1;
  auto trainer = ppe::engine::create_trainer(
      s1.with_loss, s1.optimizer, 20, options(dir),
      ppe::training::entry(ext::snapshot(), ppe::training::triggers::ManualScheduleTrigger(10, ppe::training::Unit::Epoch)));
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

TEST_CASE("Trainer: the state after setup is a fresh manager's, and loads after setup (PPE's test_engine state tables)") {
  ppe_test::TempDir dir;
  Setup s;
  ppe::training::ExtensionsManager manager(
      ppe::training::ManagerOptions().max_epochs(10).iters_per_epoch(100).out_dir(dir.str()), s.model, s.optimizer);
  SUBCASE("test_engine_state_dict: setup(100) gives the manager's state") {
    auto trainer = ppe::engine::create_trainer(s.model, s.optimizer, 10, options(dir));
    trainer.setup(100);
    CHECK(engine_test::states_equal(trainer.state_dict(), manager.state_dict()));
  }
  SUBCASE("test_engine_load_state_dict: loaded before setup") {
    auto trainer = ppe::engine::create_trainer(s.model, s.optimizer, 1, options(dir));
    trainer.load_state_dict(manager.state_dict());
    trainer.setup(20);
    CHECK(engine_test::states_equal(trainer.state_dict(), manager.state_dict()));
  }
  SUBCASE("test_engine_load_state_dict_2: loaded after setup") {
    auto trainer = ppe::engine::create_trainer(s.model, s.optimizer, 1, options(dir));
    trainer.setup(20);
    CHECK_THROWS_WITH_AS(trainer.setup(20), doctest::Contains("already started"), std::logic_error);
    trainer.load_state_dict(manager.state_dict());
    CHECK(engine_test::states_equal(trainer.state_dict(), manager.state_dict()));
  }
  SUBCASE("a state with a different iteration count moves the trainer there") {
    Setup other;
    auto donor = ppe::engine::create_trainer(other.with_loss, other.optimizer, 3, options(dir));
    auto data = engine_test::random_data(4);
    donor.run(data);
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 3, options(dir));
    trainer.setup(4);
    trainer.load_state_dict(donor.state_dict());
    CHECK(trainer.iteration() == 12);
    CHECK(torch::equal(s.model->l1->weight, other.model->l1->weight));
  }
}

TEST_CASE("Trainer: each iteration reports elapsed_time, the step's seconds on the trainer's clock") {
  ppe_test::TempDir dir;
  // The clock moves only inside forward: 0.25 s per step.
  double now = 100.0;
  struct TimedImpl : torch::nn::Module {
    WithLoss inner;
    double* now;
    TimedImpl(WithLoss w, double* n) : inner(register_module("inner", w)), now(n) {}
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
      *now += 0.25;
      return inner(x, t);
    }
  };
  Setup s;
  auto timed = std::make_shared<TimedImpl>(s.with_loss, &now);
  std::vector<double> seen;
  auto trainer = ppe::engine::create_trainer(
      timed, s.optimizer, 1, options(dir).clock([&] { return now; }),
      ppe::training::make_extension(
          [&](ppe::training::Manager& m) { seen.push_back(m.observation().at("elapsed_time").to_double()); },
          ppe::iterations(1), "read"));
  auto data = engine_test::random_data(3);
  trainer.run(data);
  CHECK(seen == std::vector<double>{0.25, 0.25, 0.25});
}

namespace {
// The model with its loss, failing in its third step.
struct FailingImpl : torch::nn::Module {
  WithLoss inner;
  int calls = 0;
  explicit FailingImpl(WithLoss w) : inner(register_module("inner", w)) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
    if (++calls == 3) throw std::runtime_error("step 3 failed");
    return inner(x, t);
  }
};

// Counts the on_error and finalize calls it receives.
struct Watch {
  using extension_concept = ppe::training::extension_tag;
  int* errors;
  int* finals;
  void operator()(ppe::training::Manager&) {}
  void on_error(ppe::training::Manager&, std::exception_ptr) { ++*errors; }
  void finalize(ppe::training::Manager&) { ++*finals; }
};
}  // namespace

TEST_CASE("Trainer: an exception in a step runs on_error, finalizes the extensions and propagates") {
  ppe_test::TempDir dir;
  Setup s;
  auto failing = std::make_shared<FailingImpl>(s.with_loss);
  int errors = 0, finals = 0;
  std::vector<std::string> log;
  auto trainer = ppe::engine::create_trainer(failing, s.optimizer, 2, options(dir),
                                             ppe::engine::with_handler(RecordingHandler(log)), Watch{&errors, &finals});
  auto data = engine_test::random_data(4);
  CHECK_THROWS_WITH_AS(trainer.run(data), "step 3 failed", std::runtime_error);
  CHECK(errors == 1);
  CHECK(finals == 1);
  CHECK(trainer.manager().finalized());
  CHECK(trainer.iteration() == 2);  // the failed iteration is not counted
  CHECK(std::count(log.begin(), log.end(), "train_cleanup") == 0);  // the loop was left by the exception
  // A second run fails on the finalized manager (docs/engine.md, "After an error").
  CHECK_THROWS_WITH_AS(trainer.run(data), doctest::Contains("finalized manager"), std::logic_error);
  CHECK(finals == 1);
}

namespace {
// Records which sample each step saw: sample i has its inputs filled with i.
struct RecordImpl : torch::nn::Module {
  WithLoss inner;
  std::vector<int> seen;
  explicit RecordImpl(WithLoss w) : inner(register_module("inner", w)) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
    seen.push_back(static_cast<int>(x[0][0].item<float>()));
    return inner(x, t);
  }
};
}  // namespace

TEST_CASE("Trainer: a loader shorter than train_len starts a new pass within the epoch (PPE's StopIteration case)") {
  ppe_test::TempDir dir;
  Setup s;
  auto rec = std::make_shared<RecordImpl>(s.with_loss);
  std::vector<engine_test::Batch> data;
  for (int i = 0; i < 3; ++i) data.emplace_back(torch::full({1, 20}, static_cast<float>(i)), torch::zeros({1, 10}));
  auto trainer = ppe::engine::create_trainer(rec, s.optimizer, 2, options(dir));
  trainer.run(data, ppe::engine::RunOptions().train_len(5));
  CHECK(trainer.iteration() == 10);
  // Each epoch starts a pass of its own: 0 1 2 0 1 | 0 1 2 0 1.
  CHECK(rec->seen == std::vector<int>{0, 1, 2, 0, 1, 0, 1, 2, 0, 1});
}

namespace {
// A dataset whose sample i has inputs filled with i.
struct FilledDataset : torch::data::datasets::Dataset<FilledDataset> {
  std::size_t n;
  explicit FilledDataset(std::size_t n) : n(n) {}
  torch::data::Example<> get(std::size_t i) override {
    return {torch::full({20}, static_cast<double>(i)), torch::zeros({10})};
  }
  c10::optional<std::size_t> size() const override { return n; }
};
}  // namespace

TEST_CASE("Trainer: the sampler of the training range gets set_epoch(epoch) before each epoch (PPE's Logic)") {
  ppe_test::TempDir dir;
  // 4 samples in batches of 1, 6 iterations per epoch: an epoch is a pass and
  // a half, so passes and epochs do not line up. Each epoch must still begin
  // with its own order (the sampler's order is a function of seed and epoch).
  Setup s;
  auto rec = std::make_shared<RecordImpl>(s.with_loss);
  ppe::dataloaders::ResumableSampler sampler(4, ppe::dataloaders::ResumableSamplerOptions().seed(5));
  auto loader = torch::data::make_data_loader(FilledDataset(4).map(torch::data::transforms::Stack<>()), sampler,
                                              torch::data::DataLoaderOptions(1));
  auto trainer = ppe::engine::create_trainer(rec, s.optimizer, 2, options(dir));
  trainer.run(ppe::dataloaders::range(*loader, sampler), ppe::engine::RunOptions().train_len(6));
  REQUIRE(rec->seen.size() == 12);
  // The orders of epochs 0, 1 and 2 from a sampler of the same seed.
  auto order = [](std::int64_t epoch) {
    ppe::dataloaders::ResumableSampler reference(4, ppe::dataloaders::ResumableSamplerOptions().seed(5));
    reference.set_epoch(epoch);
    reference.reset();
    std::vector<int> out;
    const auto indices = reference.next(4);
    for (std::size_t i : indices.value()) out.push_back(static_cast<int>(i));
    return out;
  };
  const std::vector<int> e0 = order(0), e1 = order(1), e2 = order(2);
  REQUIRE(e0 != e1);
  // Epoch 0: its order, then 2 of epoch 1's (the loader's next pass).
  CHECK(std::vector<int>(rec->seen.begin(), rec->seen.begin() + 4) == e0);
  CHECK(std::vector<int>(rec->seen.begin() + 4, rec->seen.begin() + 6) == std::vector<int>(e1.begin(), e1.begin() + 2));
  // Epoch 1 starts epoch 1's order from its beginning, not where the pass was.
  CHECK(std::vector<int>(rec->seen.begin() + 6, rec->seen.begin() + 10) == e1);
  CHECK(std::vector<int>(rec->seen.begin() + 10, rec->seen.end()) == std::vector<int>(e2.begin(), e2.begin() + 2));
}

TEST_CASE("Trainer: gradient accumulation through the trainer, with the short last group's arithmetic") {
  ppe_test::TempDir dir;
  // loss = w * x with w = 1 and no bias: d loss / d w = x, whatever w is.
  // Batches x = 1, 2, 3, 4; k = 3; SGD with lr 0.1. An epoch's groups are
  // {1, 2, 3} (mean gradient 2) and {4} (the short last group: gradient 4):
  // w = 1 - 0.1 * 2 - 0.1 * 4 = 0.4 after one epoch, 0.4 - 0.6 = -0.2 after two.
  struct ScaleImpl : torch::nn::Module {
    torch::nn::Linear l{nullptr};
    ScaleImpl() {
      l = register_module("l", torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
      torch::NoGradGuard g;
      l->weight.fill_(1.0);
    }
    torch::Tensor forward(const torch::Tensor& x) { return l(x).sum(); }
  };
  std::vector<torch::Tensor> data;
  for (int i = 1; i <= 4; ++i) data.push_back(torch::full({1, 1}, static_cast<float>(i)));
  auto train = [&](double epochs, auto... stop) {
    auto model = std::make_shared<ScaleImpl>();
    ppe::to(model, "cpu");
    torch::optim::SGD opt(model->parameters(), 0.1);
    auto trainer = ppe::engine::create_trainer(
        model, opt, epochs, options(dir).logic(ppe::handler::LogicOptions().accumulation_steps(3)), stop...);
    trainer.run(data);
    return model->l->weight.item<double>();
  };
  CHECK(train(1) == doctest::Approx(0.4));
  CHECK(train(2) == doctest::Approx(-0.2));
  // A stop inside a group leaves that group's gradients unapplied (documented).
  CHECK(train(1, ppe::engine::stop_when(ppe::iterations(2))) == 1.0);
}

namespace {
// A default Logic that counts the steps that find the model not in train mode.
struct CheckedLogic : ppe::handler::Logic<WithLoss> {
  int* not_training;
  CheckedLogic(WithLoss m, ppe::handler::LogicOptions o, int* n) : Logic(std::move(m), std::move(o)), not_training(n) {}
  template <class B>
  ppe::handler::Outputs train_step(const ppe::training::Models& models, const ppe::training::Optimizers& opts,
                                   std::int64_t idx, B& batch) {
    if (!model()->is_training()) ++*not_training;
    return Logic::train_step(models, opts, idx, batch);
  }
};
}  // namespace

TEST_CASE("Trainer: the model is in train mode at every train_step, whatever the evaluator's trigger (PPE's test_train_step_mode_with_evaluator)") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(10);
  // PPE's table: (1, epoch), (0.5, epoch), (10, iteration), (5, iteration), (1, iteration).
  const std::vector<std::pair<ppe::training::triggers::IntervalTrigger, int>> table = {
      {ppe::epochs(1), 20}, {ppe::epochs(0.5), 40}, {ppe::iterations(10), 20}, {ppe::iterations(5), 40},
      {ppe::iterations(1), 200}};
  for (const auto& [trigger, evaluations] : table) {
    CAPTURE(evaluations);
    Setup s;
    int not_training = 0, backward_calls = 0;
    // PPE's mock backward_function: counts the calls, back-propagates nothing.
    const auto counting = ppe::handler::LogicOptions().backward_function([&](const torch::Tensor&) { ++backward_calls; });
    auto trainer = ppe::engine::create_trainer(
        s.with_loss, s.optimizer, 20, options(dir),
        ppe::engine::with_logic(CheckedLogic(s.with_loss, counting, &not_training)),
        ppe::engine::evaluate(ppe::engine::create_evaluator(s.with_loss, {},
                                                            ppe::engine::with_logic(CheckedLogic(s.with_loss, {}, &not_training))),
                              trigger));
    trainer.run(data, data);
    CHECK(not_training == 0);
    CHECK(backward_calls == 20 * 10);  // PPE's test_trainer: epochs * iterations
    CHECK(trainer.evaluator().runs() == evaluations);
  }
}

TEST_CASE("Trainer: set_optimizer replaces the optimizer the logic steps and the manager saves (PPE's set_optimizer)") {
  ppe_test::TempDir dir;
  Setup s;
  torch::optim::SGD frozen(s.model->parameters(), 0.0);  // learning rate 0: its steps change nothing
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir));
  trainer.set_optimizer("main", frozen);
  CHECK(&trainer.get_optimizer("main") == &frozen);
  const torch::Tensor before = s.model->l1->weight.clone();
  auto data = engine_test::random_data(3);
  trainer.run(data);
  CHECK(torch::equal(before, s.model->l1->weight));
  CHECK(&trainer.manager().optimizer("main") == &frozen);
  // After the start the manager takes it too: a new name is saved.
  trainer.set_optimizer("extra", s.optimizer);
  CHECK(trainer.state_dict().at("optimizers").contains("extra"));
  CHECK_THROWS_WITH_AS(trainer.set_optimizer("", s.optimizer), doctest::Contains("must not be empty"),
                       std::invalid_argument);
}

// ---- the stop trigger (issue: defects found against PPE 0.9.0) ---------------

namespace {
namespace tr = ppe::training;

// Reports x = 1 at every iteration, so value triggers have a value to watch.
auto report_x() {
  return tr::make_extension([](tr::Manager&) { ppe::reporting::report({{"x", 1.0}}); }, ppe::iterations(1), "x",
                            tr::priority<tr::kPriorityWriter>);
}

// The iteration at which `stop` ends a hand-written loop (3 iterations per
// epoch, the README's form: run until the manager finalizes), and whether the
// manager was finalized there.
template <class T>
std::int64_t hand_written_stop(T stop) {
  torch::nn::Linear model(1, 1);
  torch::optim::SGD opt(model->parameters(), 0.0);
  auto m = tr::ExtensionsManager(tr::ManagerOptions().max_epochs(100).iters_per_epoch(3), model, opt,
                                 tr::stop_when(std::move(stop)), report_x());
  while (!m.finalized())
    for (int idx = 0; idx < 3 && !m.finalized(); ++idx) m.run_iteration([] {});
  return m.iteration();
}

// The iteration at which the trainer stops with `stop` (3 batches per epoch);
// the manager must be finalized there.
template <class T>
std::int64_t trainer_stop(T stop) {
  ppe_test::TempDir dir;
  Setup s;
  auto data = engine_test::random_data(3);
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 100, options(dir),
                                             ppe::engine::stop_when(std::move(stop)), report_x());
  trainer.run(data);
  CHECK(trainer.manager().finalized());
  return trainer.iteration();
}

// A user's trigger type: fires from epoch 1.5 on (iteration 5: 5/3 >= 1.5 > 4/3).
struct FromEpochAndAHalf {
  bool operator()(const tr::Manager& m) const { return m.epoch_detail() >= 1.5; }
};

// Records each call with the copy that received it (the manager keeps a
// public copy and an internal one).
struct CountingStop {
  std::shared_ptr<std::vector<std::pair<const void*, std::int64_t>>> calls =
      std::make_shared<std::vector<std::pair<const void*, std::int64_t>>>();
  bool operator()(const tr::Manager& m) {
    calls->emplace_back(this, m.iteration());
    return m.iteration() >= 6;
  }
};
}  // namespace

TEST_CASE("Trainer: stop_when takes every trigger type and stops where a hand-written loop stops") {
  namespace trg = ppe::training::triggers;
  // Expected iterations (3 per epoch, x = 1 reported at every iteration):
  SUBCASE("a callable: iteration >= 7") {
    auto t = [](const tr::Manager& m) { return m.iteration() >= 7; };
    CHECK(hand_written_stop(t) == 7);
    CHECK(trainer_stop(t) == 7);
  }
  SUBCASE("EarlyStoppingTrigger(patience 2, x constant): checks at 3 (best), 6 (count 1), 9 (count 2: stop)") {
    auto t = trg::EarlyStoppingTrigger(trg::EarlyStoppingOptions().monitor("x").patience(2));
    CHECK(hand_written_stop(t) == 9);
    CHECK(trainer_stop(t) == 9);
  }
  // Inside an epoch (iteration 4 of 3 per epoch). PPE 0.9.0's trainer asks the
  // trigger again at the same iteration, gets false (no new best) and raises
  // "Attempted to run a finalized manager"; here it is asked once.
  SUBCASE("MaxValueTrigger every 4 iterations: the first check is a new best") {
    auto t = trg::MaxValueTrigger("x", ppe::iterations(4));
    CHECK(hand_written_stop(t) == 4);
    CHECK(trainer_stop(t) == 4);
  }
  SUBCASE("MinValueTrigger every 2 epochs") {
    auto t = trg::MinValueTrigger("x", ppe::epochs(2));
    CHECK(hand_written_stop(t) == 6);
    CHECK(trainer_stop(t) == 6);
  }
  SUBCASE("ManualScheduleTrigger at iteration 5") {
    auto t = trg::ManualScheduleTrigger(5, ppe::training::Unit::Iteration);
    CHECK(hand_written_stop(t) == 5);
    CHECK(trainer_stop(t) == 5);
  }
  SUBCASE("any_of(every 100 iterations, a callable: iteration >= 8)") {
    auto t = trg::any_of(ppe::iterations(100), [](const tr::Manager& m) { return m.iteration() >= 8; });
    CHECK(hand_written_stop(t) == 8);
    CHECK(trainer_stop(t) == 8);
  }
  SUBCASE("a user-defined trigger type: epoch_detail >= 1.5") {
    CHECK(hand_written_stop(FromEpochAndAHalf{}) == 5);
    CHECK(trainer_stop(FromEpochAndAHalf{}) == 5);
  }
}

TEST_CASE("Trainer: EarlyStopping on a constant val/loss stops at iteration 9 and finalizes every extension (PPE)") {
  ppe_test::TempDir dir;
  MyModel model;
  WithLoss with_loss(model);
  ppe::to(model, "cpu");
  torch::optim::SGD optimizer(model->parameters(), 0.0);  // lr 0: val/loss stays constant
  auto data = engine_test::random_data(3);
  int errors = 0, finals = 0;
  auto trainer = ppe::engine::create_trainer(
      with_loss, optimizer, 100, options(dir), ppe::engine::create_evaluator(with_loss),
      ppe::engine::stop_when(ppe::training::triggers::EarlyStoppingTrigger(
          ppe::training::triggers::EarlyStoppingOptions().monitor("val/loss").patience(2))),
      Watch{&errors, &finals});
  trainer.run(data, data);
  // Checks at the ends of epochs 1 (best), 2 (count 1) and 3 (count 2 = patience).
  CHECK(trainer.iteration() == 9);
  CHECK(trainer.evaluator().runs() == 3);
  CHECK(trainer.manager().finalized());
  CHECK(finals == 1);
  CHECK(errors == 0);
}

TEST_CASE("Trainer: the stop trigger is asked once per iteration (and once before the first), each copy alike") {
  ppe_test::TempDir dir;
  Setup s;
  auto data = engine_test::random_data(3);
  CountingStop stop;
  auto calls = stop.calls;
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 100, options(dir), ppe::engine::stop_when(stop));
  trainer.run(data);
  REQUIRE(trainer.iteration() == 6);  // 2 epochs of 3 iterations
  std::map<const void*, std::vector<std::int64_t>> by_copy;
  for (const auto& [copy, it] : *calls) by_copy[copy].push_back(it);
  REQUIRE(by_copy.size() == 2);
  std::vector<std::vector<std::int64_t>> seen;
  for (auto& [copy, its] : by_copy) seen.push_back(its);
  std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  // The internal copy after each iteration; the public one also before the first.
  CHECK(seen[0] == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(seen[1] == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
}

TEST_CASE("Trainer: extend()ed extensions register after create_trainer's and before the evaluators (PPE's order)") {
  ppe_test::TempDir dir;
  Setup s;
  auto data = engine_test::random_data(2);
  std::vector<std::string> log;
  auto record = [&log](std::string name) {
    return [&log, name](tr::Manager& m) {
      log.push_back(name + (m.observation().find("val/loss") ? " (after validation)" : ""));
    };
  };
  auto trainer = ppe::engine::create_trainer(
      s.with_loss, s.optimizer, 1, options(dir), ppe::engine::with_handler(RecordingHandler(log)),
      ppe::engine::create_evaluator(s.with_loss, {}, ppe::engine::with_handler(RecordingHandler(log))),
      tr::make_extension(record("given writer"), ppe::epochs(1), "given_writer", tr::priority<tr::kPriorityWriter>));
  trainer.extend(tr::make_extension(record("extended writer"), ppe::epochs(1), "extended_writer",
                                    tr::priority<tr::kPriorityWriter>));
  trainer.extend(tr::make_extension(record("extended reader"), ppe::epochs(1), "extended_reader",
                                    tr::priority<tr::kPriorityReader>));
  trainer.extend(tr::make_extension(record("extended 400"), ppe::epochs(1), "extended_400", tr::priority<400>));
  trainer.run(data, data);
  std::vector<std::string> at_epoch_end;
  for (const auto& l : log)
    if (l.find("step") == std::string::npos && l.find("setup") == std::string::npos &&
        l.find("eval_loop") == std::string::npos)
      at_epoch_end.push_back(l);
  // Priority first (400 > writer 300 > reader 100); at equal priority,
  // registration order: given, extended, then the evaluator.
  CHECK(at_epoch_end == std::vector<std::string>{"train_epoch_begin", "extended 400", "given writer",
                                                 "extended writer", "train_validation_begin", "train_validation_end",
                                                 "extended reader (after validation)", "train_epoch_end",
                                                 "train_cleanup"});
  // The state lists the extensions in registration order.
  std::vector<std::string> names;
  const ppe::State state = trainer.state_dict();
  for (const auto& [name, value] : state.at("extensions").as_dict()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"given_writer", "extended_writer", "extended_reader", "extended_400",
                                          "Evaluator"});
}

// ---- profiling (issue 16): PPE's profile=, enable_profile, enable_trace ----

namespace {
namespace prof = ppe::profiler;

// The time summary's count of each tag starting with `prefix`.
std::map<std::string, std::int64_t> summary_counts(std::string_view prefix) {
  std::map<std::string, std::int64_t> out;
  for (const auto& [tag, stats] : prof::get_time_summary().summary())
    if (tag.starts_with(prefix)) out[tag] = stats.count;
  return out;
}

const std::vector<std::string> kTrainerTags = {"ppe.training.Trainer:iteration", "ppe.training.Trainer:get_data",
                                               "ppe.training.Trainer:run_iteration",
                                               "pytorch_pfn_extras.training.Trainer:train_step"};
}  // namespace

TEST_CASE("Trainer: PPE's test_trainer_profile: the trace handler is called once per epoch, then cleared") {
  ppe_test::TempDir dir;
  Setup s;
  auto data = engine_test::random_data(10);
  int calls = 0;
  // PPE: warmup 1, active len(data) - 1: one trace per 10-iteration epoch.
  auto profile = std::make_shared<prof::Profile>(
      prof::ProfileOptions()
          .schedule(prof::schedule(prof::ScheduleOptions().wait(0).warmup(1).active(9)))
          .on_trace_ready([&](prof::Profile&) { ++calls; }));
  auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 20, options(dir).profile(profile),
                                             ppe::engine::create_evaluator(s.with_loss),
                                             ext::LogReport());
  trainer.run(data, data);
  CHECK(calls == 20);  // n_epochs
  CHECK(profile->step_num() == 200);
  CHECK_FALSE(profile->running());
  CHECK_FALSE(profile->on_trace_ready());  // PPE's `prof.on_trace_ready = None`
  // The last trace (the 20th epoch's active steps) has the trainer's scopes
  // (enable_profile defaults to "a profile is given") and LibTorch's operators.
  REQUIRE(profile->result());
  CHECK(profile->result()->count("ppe.training.Trainer:iteration") == 9);
  CHECK(profile->result()->count("pytorch_pfn_extras.training.Trainer:train_step") == 9);
  CHECK(profile->result()->count("aten::addmm") >= 9);
  CHECK(profile->result()->count("ProfilerStep#199") == 1);
}

TEST_CASE("Trainer: enable_profile records PPE's scopes into the time summary, once per iteration") {
  ppe_test::TempDir dir;
  Setup s;
  auto data = engine_test::random_data(3);
  prof::get_time_summary().clear();
  auto trainer =
      ppe::engine::create_trainer(s.with_loss, s.optimizer, 2, options(dir).enable_profile(true), ext::LogReport());
  CHECK(trainer.profiling().enable_profile);
  trainer.run(data);
  const auto counts = summary_counts("");
  for (const std::string& tag : kTrainerTags) {
    CAPTURE(tag);
    REQUIRE(counts.contains(tag));
    CHECK(counts.at(tag) == trainer.iteration());  // 6
  }
  CHECK(trainer.iteration() == 6);
  // The manager got enable_profile too: its extension scopes are recorded
  // (LogReport runs every iteration, PPE's default trigger, and writes on its own).
  const std::string log_report = "ppe.training.ExtensionsManager.run_extensions:LogReport";
  REQUIRE(counts.contains(log_report));
  CHECK(counts.at(log_report) == 6);
  prof::get_time_summary().clear();
}

TEST_CASE("Trainer: without profile or enable_profile no scope is recorded; a profile alone turns them on") {
  ppe_test::TempDir dir;
  auto data = engine_test::random_data(3);
  SUBCASE("off") {
    Setup s;
    prof::get_time_summary().clear();
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir), ext::LogReport());
    CHECK_FALSE(trainer.profiling().enable_profile);
    trainer.run(data);
    CHECK(summary_counts("ppe.training.").empty());
    CHECK(summary_counts("pytorch_pfn_extras.").empty());
  }
  SUBCASE("a profile: the trainer's scopes; the manager's only when enable_profile is given (PPE)") {
    Setup s;
    prof::get_time_summary().clear();
    auto profile = std::make_shared<prof::Profile>();
    auto trainer =
        ppe::engine::create_trainer(s.with_loss, s.optimizer, 1, options(dir).profile(profile), ext::LogReport());
    CHECK(trainer.profiling().enable_profile);
    trainer.run(data);
    CHECK(summary_counts("ppe.training.Trainer:iteration").at("ppe.training.Trainer:iteration") == 3);
    CHECK(summary_counts("ppe.training.ExtensionsManager").empty());
    // No schedule: one recording over the whole run, its handler cleared
    // before the stop, so the trace is kept but not handed over.
    CHECK(profile->traces() == 1);
    REQUIRE(profile->result());
    CHECK(profile->result()->count("ppe.training.Trainer:get_data") == 3);
    CHECK(profile->result()->count("ppe.training.Trainer:run_iteration") == 3);
  }
  SUBCASE("a profile with enable_profile(false): a session without the trainer's scopes") {
    Setup s;
    prof::get_time_summary().clear();
    auto profile = std::make_shared<prof::Profile>();
    auto trainer = ppe::engine::create_trainer(s.with_loss, s.optimizer, 1,
                                               options(dir).profile(profile).enable_profile(false));
    trainer.run(data);
    CHECK(summary_counts("ppe.training.").empty());
    REQUIRE(profile->result());
    CHECK(profile->result()->count("ppe.training.Trainer:iteration") == 0);
    CHECK(profile->result()->count("aten::addmm") >= 3);
  }
  prof::get_time_summary().clear();
}

TEST_CASE("Trainer: an exception in a step stops the profile session, calling its handler (PPE's __exit__)") {
  ppe_test::TempDir dir;
  Setup s;
  auto failing = std::make_shared<FailingImpl>(s.with_loss);
  int calls = 0;
  auto profile =
      std::make_shared<prof::Profile>(prof::ProfileOptions().on_trace_ready([&](prof::Profile&) { ++calls; }));
  auto trainer = ppe::engine::create_trainer(failing, s.optimizer, 2, options(dir).profile(profile));
  auto data = engine_test::random_data(4);
  CHECK_THROWS_WITH_AS(trainer.run(data), "step 3 failed", std::runtime_error);
  CHECK_FALSE(profile->running());
  CHECK(calls == 1);
  CHECK(profile->step_num() == 2);
  // The profiler is free again: another session can start on this thread.
  prof::Profile next;
  next.start();
  next.stop();
  prof::get_time_summary().clear();
}

}  // namespace ppe_test_training_tests_test_trainer
