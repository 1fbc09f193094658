// LRScheduler: PPE's test_lr_scheduler.py (test cases F5) with LibTorch's
// StepLR standing in for MultiStepLR (LibTorch 1.13 has no MultiStepLR), a
// scheduler of our own stepped by a reported value, ppe::optim::lr_scheduler's
// ReduceLROnPlateau with PPE's default stepper, and
// wait_for_first_optimizer_step (with a Logic and a GradScaler that skips).
//
// LibTorch's StepLR: step() sets the rates from get_lrs(), which multiplies by
// gamma when step_count % step_size == 0 and step_count != 0, then counts the
// step. So StepLR(step_size 1, gamma 0.1) keeps the rate at its first step and
// multiplies at every later one (Python's constructor takes that first step
// itself, which is why PPE's table starts dividing one step earlier).
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <cmath>

#include <ppe/engine.hpp>
#include <ppe/optim/lr_scheduler/reduce_lr_on_plateau.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/training/extensions/lr_scheduler.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_lr_scheduler {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace lrs = ppe::optim::lr_scheduler;

namespace {

double lr_of(torch::optim::Optimizer& o) { return o.param_groups()[0].options().get_lr(); }

/// Halves the rate when the value did not improve for `patience` steps (the
/// part of ReduceLROnPlateau the PPE test uses), with its own state.
struct Plateau {
  torch::optim::Optimizer* opt;
  int patience = 1, bad = 0;
  double best = 1e300;
  void step(double v) {
    if (v < best) {
      best = v;
      bad = 0;
    } else if (++bad > patience) {
      for (auto& g : opt->param_groups()) g.options().set_lr(g.options().get_lr() * 0.1);
      bad = 0;
    }
  }
  ppe::State state_dict() const { return ppe::State::dict({{"best", best}, {"num_bad_epochs", bad}}); }
  void load_state_dict(const ppe::State& s) {
    best = s.at("best").as_double();
    bad = static_cast<int>(s.at("num_bad_epochs").as_int());
  }
};

}  // namespace

TEST_CASE("LRScheduler steps the scheduler at its trigger; the rate is seen by the next iteration") {
  // PPE's setup: SGD(lr=1.0), trigger 1 iteration, ipe 40. Bodies 0..3 see 1.0; then steps with counts
  // 0 (keep), 1 (x0.1), 2 (x0.1): 1.0, 0.1, 0.01.
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::StepLR sched(opt, 1, 0.1);
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 40), model, opt,
                                       tr::entry(ext::LRScheduler(sched), ppe::iterations(1)));
  std::vector<double> seen;
  for (int i = 0; i < 4; ++i) manager.run_iteration({"main"}, [&] { seen.push_back(lr_of(opt)); });
  CHECK(seen[0] == doctest::Approx(1.0));
  CHECK(seen[1] == doctest::Approx(1.0));
  CHECK(seen[2] == doctest::Approx(0.1));
  CHECK(seen[3] == doctest::Approx(0.01));
}

TEST_CASE("LRScheduler resumes the schedule from a manager state") {
  // PPE: the state after 2 iterations loaded into a fresh setup continues the schedule. After two
  // steps (counts 0: keep, 1: x0.1) the rate is 0.1 and the count 2.
  ppe::State saved;
  {
    torch::nn::Linear model(2, 1);
    torch::optim::SGD opt(model->parameters(), 1.0);
    torch::optim::StepLR sched(opt, 1, 0.1);
    auto manager = tr::ExtensionsManager(ppe_test::options(1, 40), model, opt,
                                         tr::entry(ext::LRScheduler(sched), ppe::iterations(1)));
    for (int i = 0; i < 2; ++i) manager.run_iteration({"main"}, [] {});
    saved = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(manager.state_dict()));
    // Python's layout: last_epoch 2 after two steps, _step_count one more (the constructor's step).
    CHECK(saved.at("extensions").at("LRScheduler").at("extension") ==
          ppe::State::dict({{"scheduler", ppe::State::dict({{"last_epoch", 2}, {"_step_count", 3}})}}));
  }
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::StepLR sched(opt, 1, 0.1);
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 40), model, opt,
                                       tr::entry(ext::LRScheduler(sched), ppe::iterations(1)));
  manager.load_state_dict(saved);
  std::vector<double> seen;
  for (int i = 0; i < 3; ++i) manager.run_iteration({"main"}, [&] { seen.push_back(lr_of(opt)); });
  // The optimizer state brings lr 0.1. With the restored count the steps are counts 2 and 3 (x0.1
  // each): 0.1, 0.01, 0.001. A scheduler counting from 0 would keep the rate once: 0.1, 0.1, 0.01.
  CHECK(seen[0] == doctest::Approx(0.1));
  CHECK(seen[1] == doctest::Approx(0.01));
  CHECK(seen[2] == doctest::Approx(0.001));
}

TEST_CASE("LRScheduler with a value stepper: a reported value drives the schedule; a missing key names the keys") {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  Plateau plateau{&opt};
  auto manager = tr::ExtensionsManager(
      ppe_test::options(1, 40), model, opt,
      tr::entry(ext::LRScheduler(plateau, ext::LRSchedulerOptions<Plateau>().stepper(ext::step_by_value<Plateau>("val/loss"))),
                ppe::iterations(1)));
  // PPE: val/loss 1.0 for 4 iterations with patience 1 -> the final rate is 0.1 (step 1 sets the
  // best, steps 2 and 3 do not improve, the 2nd such exceeds the patience: x0.1).
  for (int i = 0; i < 4; ++i) manager.run_iteration([] { ppe::reporting::report({{"val/loss", 1.0}}); });
  CHECK(lr_of(opt) == doctest::Approx(0.1));
  CHECK(manager.state_dict().at("extensions").at("LRScheduler").at("extension").at("scheduler").at("best").as_double() ==
        1.0);

  torch::optim::SGD opt2(model->parameters(), 1.0);
  Plateau p2{&opt2};
  auto missing = tr::ExtensionsManager(
      ppe_test::options(1, 40), model, opt2,
      tr::entry(ext::LRScheduler(p2, ext::LRSchedulerOptions<Plateau>().stepper(ext::step_by_value<Plateau>("val/loss"))),
                ppe::iterations(1)));
  CHECK_THROWS_WITH_AS(missing.run_iteration([] { ppe::reporting::report({{"main/loss", 1.0}}); }),
                       "ppe::LRScheduler: 'val/loss' is not found in the reported values ['main/loss']",
                       std::out_of_range);
}

TEST_CASE("LRScheduler: a state without the step count is an error") {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::StepLR sched(opt, 1, 0.1);
  ext::LRScheduler ls(sched);
  CHECK_THROWS_WITH_AS(ls.load_state_dict(ppe::State::dict()), doctest::Contains("no 'scheduler' entry"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ls.load_state_dict(ppe::State::dict({{"scheduler", ppe::State::dict()}})),
                       doctest::Contains("'last_epoch'"), std::invalid_argument);
}

// ---- ReduceLROnPlateau's default stepper and wait_for_first_optimizer_step (PPE 0.9.0) ----

TEST_CASE("LRScheduler: a ReduceLROnPlateau steps on val/loss without a stepper (PPE's test_reduce_lr_on_plateau)") {
  // PPE: ReduceLROnPlateau(SGD(lr=1.0), patience=1), val/loss 1.0 for 4 iterations -> lr 0.1 (the
  // first step sets the best, the 2nd and 3rd are bad, the 3rd exceeds the patience).
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  lrs::ReduceLROnPlateau sched(opt, lrs::ReduceLROnPlateauOptions().patience(1));
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 4), model, opt,
                                       tr::entry(ext::LRScheduler(sched), ppe::iterations(1)));
  std::vector<double> after;
  for (int i = 0; i < 4; ++i) {
    manager.run_iteration([] { ppe::reporting::report({{"val/loss", 1.0}}); });
    after.push_back(lr_of(opt));
  }
  CHECK(after == std::vector<double>{1.0, 1.0, 0.1, 0.1});
  CHECK(sched.last_epoch() == 4);
  // PPE saves the scheduler's own state_dict: Python's ReduceLROnPlateau layout.
  const ppe::State saved = manager.state_dict().at("extensions").at("LRScheduler").at("extension").at("scheduler");
  CHECK(saved.at("last_epoch").as_int() == 4);
  CHECK(saved.at("best").as_double() == 1.0);
  CHECK(saved.at("_last_lr") == ppe::State::list({0.1}));
  // The key it steps on is declared to the manager's report-key check.
  CHECK(manager.get_extension<ext::LRScheduler<lrs::ReduceLROnPlateau>>("LRScheduler").consumed_keys() ==
        std::vector<std::string>{"val/loss"});
}

TEST_CASE("LRScheduler: a value stepper's misspelled key is named, with the keys present, when it steps") {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  lrs::ReduceLROnPlateau sched(opt);
  // Stepped every 2 epochs: the first epoch passes (nothing needs the key yet).
  auto manager = tr::ExtensionsManager(ppe_test::options(4, 3), model, opt,
                                       tr::entry(ext::LRScheduler(sched), ppe::epochs(2)));
  for (int i = 0; i < 5; ++i) manager.run_iteration([] { ppe::reporting::report({{"val/los", 1.0}}); });
  CHECK_THROWS_WITH_AS(manager.run_iteration([] { ppe::reporting::report({{"val/los", 1.0}}); }),
                       "ppe::LRScheduler: 'val/loss' is not found in the reported values ['val/los']",
                       std::out_of_range);
  CHECK(manager.iteration() == 6);
  // A plain scheduler reads no key.
  torch::optim::StepLR step(opt, 1, 0.5);
  CHECK(ext::LRScheduler(step).consumed_keys().empty());
}

TEST_CASE("LRScheduler: ReduceLROnPlateau without a val/loss report is an error naming the keys (PPE's "
          "test_reduce_lr_on_plateau_no_report)") {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  lrs::ReduceLROnPlateau sched(opt, lrs::ReduceLROnPlateauOptions().patience(1));
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 4), model, opt,
                                       tr::entry(ext::LRScheduler(sched), ppe::iterations(1)));
  CHECK_THROWS_WITH_AS(manager.run_iteration([] {}),
                       "ppe::LRScheduler: 'val/loss' is not found in the reported values []", std::out_of_range);
}

TEST_CASE("LRScheduler: wait_for_first_optimizer_step (PPE's test_lr_scheduler_wait_for_first_optimizer_step)") {
  // PPE: a stepper mock with the wait, trigger 1 iteration: 4 iterations without an optimizer step
  // call it 0 times, 4 with step_optimizers=["main"] 4 times, 4 more without still step (8).
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::StepLR sched(opt, 1, 0.1);
  int calls = 0;
  auto manager = tr::ExtensionsManager(
      ppe_test::options(1, 40), model, opt,
      tr::entry(ext::LRScheduler(sched, ext::LRSchedulerOptions<torch::optim::StepLR>()
                                            .stepper([&](tr::Manager&, torch::optim::StepLR&) { ++calls; })
                                            .wait_for_first_optimizer_step(true)),
                ppe::iterations(1)));
  for (int i = 0; i < 4; ++i) manager.run_iteration([] {});
  CHECK(calls == 0);
  for (int i = 0; i < 4; ++i) manager.run_iteration({"main"}, [] {});
  CHECK(calls == 4);
  CHECK(manager.optimizers().find("main")->step_count() == 4);
  for (int i = 0; i < 4; ++i) manager.run_iteration([] {});
  CHECK(calls == 8);
}

TEST_CASE("LRScheduler: without the wait the scheduler steps before the optimizer does") {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::StepLR sched(opt, 1, 0.1);
  int calls = 0;
  auto manager = tr::ExtensionsManager(
      ppe_test::options(1, 40), model, opt,
      tr::entry(ext::LRScheduler(sched, ext::LRSchedulerOptions<torch::optim::StepLR>().stepper(
                                            [&](tr::Manager&, torch::optim::StepLR&) { ++calls; })),
                ppe::iterations(1)));
  for (int i = 0; i < 4; ++i) manager.run_iteration([] {});
  CHECK(calls == 4);
}

TEST_CASE("LRScheduler: the optimizer the wait watches; an unknown one is an error at the start") {
  torch::nn::Linear g(2, 1), d(2, 1);
  torch::optim::SGD og(g->parameters(), 1.0), od(d->parameters(), 1.0);
  auto data = [] { ppe::reporting::report({{"val/loss", 1.0}}); };
  SUBCASE("a ReduceLROnPlateau's own optimizer, found by address among several") {
    lrs::ReduceLROnPlateau sched(od, lrs::ReduceLROnPlateauOptions().patience(0));
    auto manager = tr::ExtensionsManager(
        ppe_test::options(1, 40), tr::Models{{"gen", g}, {"dis", d}}, tr::Optimizers{{"gen", og}, {"dis", od}},
        tr::entry(ext::LRScheduler(sched, ext::LRSchedulerOptions<lrs::ReduceLROnPlateau>()
                                              .wait_for_first_optimizer_step(true)),
                  ppe::iterations(1)));
    manager.run_iteration({"gen"}, data);  // the other optimizer's step does not count
    CHECK(sched.last_epoch() == 0);
    manager.run_iteration({"dis"}, data);
    CHECK(sched.last_epoch() == 1);
  }
  SUBCASE("a named one") {
    torch::optim::StepLR sched(od, 1, 0.1);
    int calls = 0;
    auto manager = tr::ExtensionsManager(
        ppe_test::options(1, 40), tr::Models{{"gen", g}, {"dis", d}}, tr::Optimizers{{"gen", og}, {"dis", od}},
        tr::entry(ext::LRScheduler(sched, ext::LRSchedulerOptions<torch::optim::StepLR>()
                                              .stepper([&](tr::Manager&, torch::optim::StepLR&) { ++calls; })
                                              .wait_for_first_optimizer_step(true)
                                              .optimizer("dis")),
                  ppe::iterations(1)));
    manager.run_iteration({"gen"}, [] {});
    CHECK(calls == 0);
    // A loop of its own stepping the optimizer records the step itself.
    manager.run_iteration([&] {
      od.step();
      manager.optimizers().record_step("dis");
    });
    CHECK(calls == 1);
    CHECK_THROWS_WITH_AS(manager.optimizers().record_step("main"),
                         "ppe: record_step: no optimizer named 'main'; optimizers: ['gen', 'dis']", std::out_of_range);
  }
  SUBCASE("PPE's test_wait_for_first_optimizer_step_with_non_torch_lr_scheduler: PPE cannot tell and steps; "
          "here a scheduler whose optimizer the manager does not have is an error at the start") {
    torch::optim::StepLR sched(og, 1, 0.1);
    auto manager = ppe_test::make_manager(
        1, 40,
        tr::entry(ext::LRScheduler(sched, ext::LRSchedulerOptions<torch::optim::StepLR>().wait_for_first_optimizer_step(
                                              true)),
                  ppe::iterations(1)));
    CHECK_THROWS_WITH_AS(manager.run_iteration([] {}),
                         "ppe::LRScheduler: wait_for_first_optimizer_step: no optimizer named 'main' (name the one to "
                         "watch with LRSchedulerOptions::optimizer); the manager's optimizers: []",
                         std::invalid_argument);
    lrs::ReduceLROnPlateau plateau(og);
    auto other = tr::ExtensionsManager(
        ppe_test::options(1, 40), d, od,
        tr::entry(ext::LRScheduler(plateau, ext::LRSchedulerOptions<lrs::ReduceLROnPlateau>()
                                                .wait_for_first_optimizer_step(true)),
                  ppe::iterations(1)));
    CHECK_THROWS_WITH_AS(other.run_iteration(data),
                         "ppe::LRScheduler: wait_for_first_optimizer_step: the scheduler's optimizer is not one of the "
                         "manager's (register it, or name the one to watch with LRSchedulerOptions::optimizer); the "
                         "manager's optimizers: ['main']",
                         std::invalid_argument);
  }
}

TEST_CASE("LRScheduler: after a resume the wait holds until the resumed run's first optimizer step") {
  // The step count is not saved (nor is Python's optimizer._step_count): a resumed manager waits
  // again, and its first optimizer step releases the schedule, which continues from the saved count.
  ppe::State saved;
  auto make = [](torch::nn::Linear& model, torch::optim::SGD& opt, torch::optim::StepLR& sched) {
    return tr::ExtensionsManager(
        ppe_test::options(1, 40), model, opt,
        tr::entry(ext::LRScheduler(sched, ext::LRSchedulerOptions<torch::optim::StepLR>().wait_for_first_optimizer_step(
                                              true)),
                  ppe::iterations(1)));
  };
  {
    torch::nn::Linear model(2, 1);
    torch::optim::SGD opt(model->parameters(), 1.0);
    torch::optim::StepLR sched(opt, 1, 0.1);
    auto manager = make(model, opt, sched);
    for (int i = 0; i < 2; ++i) manager.run_iteration({"main"}, [] {});  // scheduler counts 0 (keep), 1 (x0.1)
    saved = manager.state_dict();
  }
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::StepLR sched(opt, 1, 0.1);
  auto manager = make(model, opt, sched);
  manager.load_state_dict(saved);
  CHECK(lr_of(opt) == doctest::Approx(0.1));
  manager.run_iteration([] {});  // no optimizer step yet in this run: the schedule waits
  CHECK(lr_of(opt) == doctest::Approx(0.1));
  manager.run_iteration({"main"}, [] {});  // count 2: x0.1
  CHECK(lr_of(opt) == doctest::Approx(0.01));
}

namespace {
// loss = w * x with x = 4 and w = 1: the gradient of the scaled loss is 4 * scale.
struct ScaledLossImpl : torch::nn::Module {
  torch::nn::Linear lin{nullptr};
  ScaledLossImpl() {
    lin = register_module("lin", torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
    torch::NoGradGuard no_grad;
    lin->weight.fill_(1.0);
  }
  torch::Tensor forward(const torch::Tensor& x) { return lin(x).sum(); }
};
TORCH_MODULE(ScaledLoss);
}  // namespace

TEST_CASE("LRScheduler: with a Logic and a GradScaler whose first steps overflow, the schedule starts at the "
          "first real optimizer step") {
  // init_scale 2^127 (the largest power of two a float holds): the gradient 4 * 2^127 overflows
  // to inf, the step is skipped and the scale halves; 4 * 2^126 = 2^128 overflows too; at 2^125
  // the gradient 2^127 is finite and the optimizer steps. So iterations 1 and 2 skip, 3.. step.
  // The scheduler (StepLR, step 1, gamma 0.5; LibTorch keeps the rate at its first step) runs
  // every iteration after the logic; we record the rate after each iteration.
  auto run = [](bool wait) {
    ppe_test::TempDir dir;
    ScaledLoss model;
    ppe::to(model, "cpu");
    torch::optim::SGD opt(model->parameters(), 1.0);
    torch::optim::StepLR sched(opt, 1, 0.5);
    auto scaler =
        std::make_shared<ppe::amp::GradScaler>(ppe::amp::GradScalerOptions().init_scale(std::ldexp(1.0, 127)));
    std::vector<double> rates;
    std::vector<std::int64_t> counts;
    auto trainer = ppe::engine::create_trainer(
        model, opt, 1,
        ppe::engine::TrainerOptions().out_dir(dir.str()).logic(ppe::handler::LogicOptions().grad_scaler(scaler)),
        tr::entry(ext::LRScheduler(
                      sched, ext::LRSchedulerOptions<torch::optim::StepLR>().wait_for_first_optimizer_step(wait)),
                  ppe::iterations(1)),
        tr::make_extension(
            [&](tr::Manager& m) {
              rates.push_back(lr_of(opt));
              counts.push_back(m.optimizers().find("main")->step_count());
            },
            ppe::iterations(1), "record"));
    std::vector<torch::Tensor> data(5, torch::full({1, 1}, 4.0));
    trainer.run(data);
    CHECK(scaler->get_scale() == std::ldexp(1.0, 125));
    CHECK(model->lin->weight.item<double>() != 1.0);  // it did step
    return std::make_pair(rates, counts);
  };
  const auto [waited, counts] = run(true);
  CHECK(counts == std::vector<std::int64_t>{0, 0, 1, 2, 3});  // the skipped steps are not counted
  // Iterations 1-2: no scheduler step; 3: its first (keep 1.0); 4: x0.5; 5: x0.5.
  CHECK(waited == std::vector<double>{1.0, 1.0, 1.0, 0.5, 0.25});
  // Without the wait the schedule runs ahead of the optimizer by the two skipped steps.
  CHECK(run(false).first == std::vector<double>{1.0, 0.5, 0.25, 0.125, 0.0625});
}

}  // namespace ppe_test_training_tests_extensions_tests_test_lr_scheduler
