// LRScheduler: PPE's test_lr_scheduler.py (test cases F5) with LibTorch's
// StepLR standing in for MultiStepLR (LibTorch 1.13 has no MultiStepLR and no
// ReduceLROnPlateau), and a scheduler of our own stepped by a reported value
// for PPE's ReduceLROnPlateau case.
//
// LibTorch's StepLR: step() sets the rates from get_lrs(), which multiplies by
// gamma when step_count % step_size == 0 and step_count != 0, then counts the
// step. So StepLR(step_size 1, gamma 0.1) keeps the rate at its first step and
// multiplies at every later one (Python's constructor takes that first step
// itself, which is why PPE's table starts dividing one step earlier).
#include "ppe_test.hpp"

#include <ppe/training/extensions/lr_scheduler.hpp>

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

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
    saved = ppe::pickle_loads(ppe::pickle_dumps(manager.state_dict()));
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
