// ReduceLROnPlateau against PyTorch 1.13's torch.optim.lr_scheduler.ReduceLROnPlateau.
//
// The tables were produced once by PyTorch 1.13.1 (Debian's python3-torch): an SGD optimizer
// with one parameter per group, the scheduler with the settings named in each case, then
// step(v) for every v of kValues (min mode) or of 2.0 - v (max mode), reading each group's lr
// after every step; written here as (lr, number of steps) runs. The final best,
// num_bad_epochs and cooldown_counter come from the same runs' state_dict().
#include "ppe_test.hpp"

#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include <ppe/optim/lr_scheduler/reduce_lr_on_plateau.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_optim_tests_test_reduce_lr_on_plateau {

using ppe::optim::lr_scheduler::PlateauMode;
using ppe::optim::lr_scheduler::ReduceLROnPlateau;
using ppe::optim::lr_scheduler::ReduceLROnPlateauOptions;
using ppe::optim::lr_scheduler::ThresholdMode;

namespace {

// 40 values with plateaus of 1 to 13 steps, small improvements and a relapse (0.75).
const std::vector<double> kValues = {1.0,  0.9,  0.8,  0.8,  0.8,  0.8,  0.79, 0.7,  0.7,  0.7,
                                     0.7,  0.7,  0.75, 0.6,  0.6,  0.6,  0.6,  0.6,  0.6,  0.55,
                                     0.5,  0.5,  0.5,  0.5,  0.49, 0.48, 0.48, 0.48, 0.48, 0.48,
                                     0.48, 0.48, 0.48, 0.48, 0.48, 0.48, 0.48, 0.48, 0.3,  0.3};

std::vector<double> mirrored() {
  std::vector<double> out;
  for (double v : kValues) out.push_back(2.0 - v);  // the same arithmetic as the Python run
  return out;
}

/// Expands (value, count) runs.
std::vector<double> runs(std::initializer_list<std::pair<double, int>> rs) {
  std::vector<double> out;
  for (const auto& [v, n] : rs) out.insert(out.end(), static_cast<std::size_t>(n), v);
  return out;
}

/// An SGD optimizer with one parameter group per rate.
struct Setup {
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::SGD> opt;
  explicit Setup(const std::vector<double>& lrs) {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (double lr : lrs) {
      params.push_back(torch::zeros({1}, torch::requires_grad()));
      groups.emplace_back(std::vector<torch::Tensor>{params.back()},
                          std::make_unique<torch::optim::SGDOptions>(lr));
    }
    opt = std::make_unique<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(lrs.at(0)));
  }
  double lr(std::size_t group) const { return opt->param_groups().at(group).options().get_lr(); }
};

struct Case {
  const char* name;
  std::vector<double> values;
  std::vector<double> initial_lrs;
  ReduceLROnPlateauOptions options;
  std::vector<std::vector<double>> lrs;  // per group, the lr after each step
  double best;
  std::int64_t num_bad_epochs, cooldown_counter;
};

std::vector<Case> cases() {
  return {
      {"A: min, rel threshold 0.1, factor 0.5, patience 2",
       kValues,
       {1.0},
       ReduceLROnPlateauOptions().factor(0.5).patience(2).threshold(0.1),
       {runs({{1.0, 5}, {0.5, 5}, {0.25, 6}, {0.125, 3}, {0.0625, 4}, {0.03125, 3}, {0.015625, 3}, {0.0078125, 3},
              {0.00390625, 3}, {0.001953125, 5}})},
       0.3, 1, 0},
      {"B: min, abs threshold 0.05, factor 0.3, patience 1, cooldown 2, min_lr [0.05, 0.2] over two groups",
       kValues,
       {1.0, 2.0},
       ReduceLROnPlateauOptions()
           .factor(0.3)
           .patience(1)
           .threshold(0.05)
           .threshold_mode(ThresholdMode::Abs)
           .cooldown(2)
           .min_lrs({0.05, 0.2}),
       {runs({{1.0, 4}, {0.3, 5}, {0.09, 6}, {0.05, 25}}), runs({{2.0, 4}, {0.6, 5}, {0.2, 31}})},
       0.3, 1, 0},
      {"C: max, rel threshold 0.01, factor 0.1, patience 3, cooldown 1, min_lr 1e-3",
       mirrored(),
       {1.0},
       ReduceLROnPlateauOptions().mode(PlateauMode::Max).factor(0.1).patience(3).threshold(0.01).cooldown(1).min_lr(
           1e-3),
       {runs({{1.0, 6}, {0.1, 5}, {0.010000000000000002, 6}, {0.0010000000000000002, 23}})},
       1.7, 1, 0},
      {"D: max, abs threshold 0, factor 0.9, patience 0, eps 0.05 (reductions stop below lr 0.5)",
       mirrored(),
       {1.0},
       ReduceLROnPlateauOptions()
           .mode(PlateauMode::Max)
           .factor(0.9)
           .patience(0)
           .threshold(0.0)
           .threshold_mode(ThresholdMode::Abs)
           .eps(0.05),
       {runs({{1.0, 3}, {0.9, 1}, {0.81, 1}, {0.7290000000000001, 3}, {0.6561000000000001, 1},
              {0.5904900000000002, 1}, {0.5314410000000002, 1}, {0.47829690000000014, 29}})},
       1.7, 0, 0},
      {"E: the defaults (min, rel 1e-4, factor 0.1, patience 10)",
       kValues,
       {1.0},
       ReduceLROnPlateauOptions(),
       {runs({{1.0, 36}, {0.1, 4}})},
       0.3, 1, 0},
  };
}

}  // namespace

TEST_CASE("ReduceLROnPlateau: the rates of PyTorch 1.13 on the same values") {
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    REQUIRE(c.values.size() == 40);
    Setup s(c.initial_lrs);
    ReduceLROnPlateau sched(*s.opt, c.options);
    for (std::size_t step = 0; step < c.values.size(); ++step) {
      CAPTURE(step);
      sched.step(c.values[step]);
      for (std::size_t g = 0; g < c.lrs.size(); ++g) {
        CAPTURE(g);
        REQUIRE(c.lrs[g].size() == 40);
        CHECK(s.lr(g) == c.lrs[g][step]);  // exact: the same double arithmetic as Python's
        CHECK(sched.get_last_lr().at(g) == c.lrs[g][step]);
      }
    }
    CHECK(sched.best() == c.best);
    CHECK(sched.num_bad_epochs() == c.num_bad_epochs);
    CHECK(sched.cooldown_counter() == c.cooldown_counter);
    CHECK(sched.last_epoch() == 40);
  }
}

TEST_CASE("ReduceLROnPlateau: verbose prints Python's line for each reduction") {
  // Python (case B, first 16 steps, verbose=True) printed these lines.
  Setup s({1.0, 2.0});
  ReduceLROnPlateau sched(*s.opt, ReduceLROnPlateauOptions()
                                      .factor(0.3)
                                      .patience(1)
                                      .threshold(0.05)
                                      .threshold_mode(ThresholdMode::Abs)
                                      .cooldown(2)
                                      .min_lrs({0.05, 0.2})
                                      .verbose(true));
  std::ostringstream out;
  std::streambuf* previous = std::cout.rdbuf(out.rdbuf());
  for (std::size_t i = 0; i < 16; ++i) sched.step(kValues[i]);
  std::cout.rdbuf(previous);
  CHECK(out.str() ==
        "Epoch 00005: reducing learning rate of group 0 to 3.0000e-01.\n"
        "Epoch 00005: reducing learning rate of group 1 to 6.0000e-01.\n"
        "Epoch 00010: reducing learning rate of group 0 to 9.0000e-02.\n"
        "Epoch 00010: reducing learning rate of group 1 to 2.0000e-01.\n"
        "Epoch 00016: reducing learning rate of group 0 to 5.0000e-02.\n");
}

TEST_CASE("ReduceLROnPlateau: state_dict has Python's keys, order and values") {
  // Python 1.13, ReduceLROnPlateau(SGD(lr=1.0)).state_dict() before any step:
  // {'factor': 0.1, 'min_lrs': [0], 'patience': 10, 'verbose': False, 'cooldown': 0,
  //  'cooldown_counter': 0, 'mode': 'min', 'threshold': 0.0001, 'threshold_mode': 'rel',
  //  'best': inf, 'num_bad_epochs': 0, 'mode_worse': inf, 'eps': 1e-08, 'last_epoch': 0}
  // and after step(1.0) also '_last_lr': [1.0], with best 1.0 and last_epoch 1.
  // (Python keeps its int default 0 in min_lrs; ours is the float 0.0.)
  Setup s({1.0});
  ReduceLROnPlateau sched(*s.opt);
  const double inf = std::numeric_limits<double>::infinity();
  auto expected = ppe::State::dict({{"factor", 0.1},
                                    {"min_lrs", ppe::State::list({0.0})},
                                    {"patience", 10},
                                    {"verbose", false},
                                    {"cooldown", 0},
                                    {"cooldown_counter", 0},
                                    {"mode", "min"},
                                    {"threshold", 0.0001},
                                    {"threshold_mode", "rel"},
                                    {"best", inf},
                                    {"num_bad_epochs", 0},
                                    {"mode_worse", inf},
                                    {"eps", 1e-08},
                                    {"last_epoch", 0}});
  const ppe::State before = sched.state_dict();
  CHECK(before == expected);
  std::vector<std::string> keys;
  for (const auto& [k, v] : before.as_dict()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"factor", "min_lrs", "patience", "verbose", "cooldown", "cooldown_counter",
                                         "mode", "threshold", "threshold_mode", "best", "num_bad_epochs",
                                         "mode_worse", "eps", "last_epoch"});
  CHECK(before.at("patience").is_int());
  CHECK(before.at("best").is_double());

  sched.step(1.0);
  expected.set("best", 1.0);
  expected.set("last_epoch", 1);
  expected.set("_last_lr", ppe::State::list({1.0}));
  CHECK(sched.state_dict() == expected);

  // Max mode and abs threshold are saved as Python's strings; mode_worse is -inf.
  ReduceLROnPlateau max(*s.opt, ReduceLROnPlateauOptions().mode(PlateauMode::Max).threshold_mode(ThresholdMode::Abs));
  const ppe::State m = max.state_dict();
  CHECK(m.at("mode").as_string() == "max");
  CHECK(m.at("threshold_mode").as_string() == "abs");
  CHECK(m.at("best").as_double() == -inf);
  CHECK(m.at("mode_worse").as_double() == -inf);
}

TEST_CASE("ReduceLROnPlateau: a state pickled mid-run resumes the schedule exactly") {
  // Case B (cooldown, per-group min_lr) saved after 11 steps, in the cooldown that followed
  // the reduction at step 10, then continued by a fresh scheduler.
  const Case b = cases()[1];
  Setup first(b.initial_lrs);
  ReduceLROnPlateau sched(*first.opt, b.options);
  for (std::size_t i = 0; i < 11; ++i) sched.step(b.values[i]);
  CHECK(sched.in_cooldown());
  const ppe::State saved = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(sched.state_dict()));
  CHECK(saved == sched.state_dict());

  // A fresh setup with other settings: the state brings them all (as Python's __dict__ update),
  // and the rates come with the optimizer (set here as its state would).
  Setup second({0.09, 0.2});
  ReduceLROnPlateau resumed(*second.opt, ReduceLROnPlateauOptions().mode(PlateauMode::Max).factor(0.5));
  resumed.load_state_dict(saved);
  CHECK(resumed.options().mode() == PlateauMode::Min);
  CHECK(resumed.options().threshold_mode() == ThresholdMode::Abs);
  CHECK(resumed.options().factor() == 0.3);
  CHECK(resumed.options().min_lrs() == std::vector<double>{0.05, 0.2});
  CHECK(resumed.last_epoch() == 11);
  CHECK(resumed.get_last_lr() == std::vector<double>{0.09, 0.2});
  for (std::size_t i = 11; i < b.values.size(); ++i) {
    CAPTURE(i);
    resumed.step(b.values[i]);
    CHECK(second.lr(0) == b.lrs[0][i]);
    CHECK(second.lr(1) == b.lrs[1][i]);
  }
  CHECK(resumed.best() == b.best);
}

TEST_CASE("ReduceLROnPlateau: a state as Python writes it (int min_lrs, no _last_lr) loads") {
  Setup s({1.0});
  ReduceLROnPlateau sched(*s.opt);
  const double inf = std::numeric_limits<double>::infinity();
  sched.load_state_dict(ppe::State::dict({{"factor", 0.5},
                                          {"min_lrs", ppe::State::list({0})},
                                          {"patience", 0},
                                          {"verbose", false},
                                          {"cooldown", 0},
                                          {"cooldown_counter", 0},
                                          {"mode", "min"},
                                          {"threshold", 0.0001},
                                          {"threshold_mode", "rel"},
                                          {"best", inf},
                                          {"num_bad_epochs", 0},
                                          {"mode_worse", inf},
                                          {"eps", 1e-08},
                                          {"last_epoch", 0},
                                          {"unknown_in_1_13", 1}}));
  CHECK(sched.state_dict().find("_last_lr") == nullptr);
  sched.step(1.0);
  sched.step(1.0);  // patience 0: the first bad step halves the rate
  CHECK(s.lr(0) == 0.5);
}

TEST_CASE("ReduceLROnPlateau: bad settings and states are errors that change nothing") {
  Setup s({1.0, 2.0});
  CHECK_THROWS_WITH_AS(ReduceLROnPlateau(*s.opt, ReduceLROnPlateauOptions().factor(1.0)),
                       "ppe::ReduceLROnPlateau: factor must be < 1, got 1.0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(ReduceLROnPlateau(*s.opt, ReduceLROnPlateauOptions().min_lrs({0.1})),
                       "ppe::ReduceLROnPlateau: min_lrs must hold one rate per param group: expected 2, got 1",
                       std::invalid_argument);

  ReduceLROnPlateau sched(*s.opt, ReduceLROnPlateauOptions().patience(3));
  sched.step(1.0);
  const ppe::State good = sched.state_dict();
  auto broken = [&](const char* key, ppe::State value) {
    ppe::State st = good;
    if (value.is_none())
      st.pop(key);
    else
      st.set(key, std::move(value));
    return st;
  };
  CHECK_THROWS_WITH_AS(sched.load_state_dict(broken("patience", ppe::State())),
                       "ppe::ReduceLROnPlateau: the saved state has no 'patience'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(sched.load_state_dict(broken("mode", "mean")),
                       "ppe::ReduceLROnPlateau: the saved state's 'mode' must be 'min' or 'max'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sched.load_state_dict(broken("threshold_mode", "ratio")),
                       "ppe::ReduceLROnPlateau: the saved state's 'threshold_mode' must be 'rel' or 'abs'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sched.load_state_dict(broken("best", "low")),
                       "ppe::ReduceLROnPlateau: the saved state's 'best' must be a number",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sched.load_state_dict(broken("last_epoch", 1.5)),
                       "ppe::ReduceLROnPlateau: the saved state's 'last_epoch' must be an int",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sched.load_state_dict(broken("min_lrs", ppe::State::list({0.0}))),
                       "ppe::ReduceLROnPlateau: the saved state's 'min_lrs' holds 1 rates, the optimizer has 2 "
                       "param groups",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sched.load_state_dict(ppe::State(3)),
                       "ppe::ReduceLROnPlateau: the saved state is a int, expected a dict",
                       std::invalid_argument);
  // A late error (min_lrs is checked after the settings were read) left everything as it was.
  ppe::State late = broken("min_lrs", ppe::State::list({0.0}));
  late.set("patience", 7);
  CHECK_THROWS_AS(sched.load_state_dict(late), std::invalid_argument);
  CHECK(sched.state_dict() == good);
}

TEST_CASE("ReduceLROnPlateau: is_better under each mode and threshold mode (Python's formulas)") {
  Setup s({1.0});
  auto make = [&](PlateauMode m, ThresholdMode t) {
    return ReduceLROnPlateau(*s.opt, ReduceLROnPlateauOptions().mode(m).threshold_mode(t).threshold(0.1));
  };
  // min rel: a < best * 0.9; min abs: a < best - 0.1; max rel: a > best * 1.1; max abs: a > best + 0.1.
  CHECK(make(PlateauMode::Min, ThresholdMode::Rel).is_better(8.9, 10.0));
  CHECK_FALSE(make(PlateauMode::Min, ThresholdMode::Rel).is_better(9.5, 10.0));
  CHECK(make(PlateauMode::Min, ThresholdMode::Abs).is_better(9.8, 10.0));
  CHECK_FALSE(make(PlateauMode::Min, ThresholdMode::Abs).is_better(9.95, 10.0));
  CHECK(make(PlateauMode::Max, ThresholdMode::Rel).is_better(11.1, 10.0));
  CHECK_FALSE(make(PlateauMode::Max, ThresholdMode::Rel).is_better(10.5, 10.0));
  CHECK(make(PlateauMode::Max, ThresholdMode::Abs).is_better(10.2, 10.0));
  CHECK_FALSE(make(PlateauMode::Max, ThresholdMode::Abs).is_better(10.05, 10.0));
  // A NaN never improves (Python's comparisons are false too): it is a bad step.
  auto nan_case = make(PlateauMode::Min, ThresholdMode::Rel);
  nan_case.step(1.0);
  nan_case.step(std::nan(""));
  CHECK(nan_case.num_bad_epochs() == 1);
}

}  // namespace ppe_test_optim_tests_test_reduce_lr_on_plateau
