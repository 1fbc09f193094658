// The shift extensions (Chainer v7.8.1's ExponentialShift, LinearShift,
// MultistepShift, PolynomialShift, StepShift, WarmupShift): Chainer's test
// tables (tests/chainer_tests/training_tests/extensions_tests/test_*_shift.py)
// ported, values from the formulas (arithmetic in the comments), other
// optimizer options and param groups, resumption from snapshot files, and bad
// input.
//
// Chainer's protocol (_run_trainer): initialize, then per iteration: update,
// read the attribute, call the extension when its trigger fires. Here the body
// of each iteration reads the optimizer's lr, and the manager calls the
// extension after the body when its trigger fires: the same sequence. Chainer's
// mock attribute `x` is the lr of an SGD (set_lr does not check the sign, so
// negative values work as in Chainer's tables).
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <ppe/training/extensions/exponential_shift.hpp>
#include <ppe/training/extensions/linear_shift.hpp>
#include <ppe/training/extensions/multistep_shift.hpp>
#include <ppe/training/extensions/polynomial_shift.hpp>
#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/training/extensions/step_shift.hpp>
#include <ppe/training/extensions/warmup_shift.hpp>

#include <cmath>
#include <optional>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_shifts {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace optim = torch::optim;

namespace {

double lr_of(optim::Optimizer& o, std::size_t group = 0) { return o.param_groups()[group].options().get_lr(); }

/// A model with the manager's optimizer ("main") and another one.
struct Net {
  torch::nn::Linear model{2, 1};
  optim::SGD main{model->parameters(), optim::SGDOptions(0.0)};
  optim::SGD other{model->parameters(), optim::SGDOptions(0.0)};
};

/// Each value `interval` times (Chainer's `[e for e in expect for _ in range(interval)]`).
std::vector<double> repeat(const std::vector<double>& values, std::int64_t interval) {
  std::vector<double> out;
  for (double v : values)
    for (std::int64_t i = 0; i < interval; ++i) out.push_back(v);
  return out;
}

/// The lr of `watched` seen by `n` iteration bodies, with `shift` called every
/// `interval` iterations by a manager whose "main" optimizer is `net.main`.
template <class E>
std::vector<double> run(Net& net, E shift, std::int64_t interval, std::size_t n, optim::Optimizer& watched) {
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), net.model, net.main,
                                       tr::entry(std::move(shift), ppe::iterations(interval)));
  std::vector<double> seen;
  for (std::size_t i = 0; i < n; ++i) manager.run_iteration([&] { seen.push_back(lr_of(watched)); });
  return seen;
}

/// Chainer's test_resume: `shift` runs `iterations` iterations (called every
/// `interval`), its state goes through pickle bytes into `fresh` (which
/// shifts its own optimizer, lr 0), whose initialize must set the lr the
/// first one left.
template <class E>
void check_chainer_resume(E shift, E fresh, optim::Optimizer& fresh_optimizer, std::int64_t interval,
                          std::int64_t iterations) {
  Net net;
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), net.model, net.main,
                                       tr::entry(std::move(shift), ppe::iterations(interval)));
  for (std::int64_t i = 0; i < iterations; ++i) ppe_test::step(manager);
  const std::string name(tr::extension_traits<E>::default_name());
  const ppe::State state = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(manager.template get_extension<E>(name).state_dict()));
  fresh.load_state_dict(state);
  auto other = ppe_test::make_manager(1, 1);
  fresh.initialize(other);
  CHECK(lr_of(fresh_optimizer) == lr_of(net.main));
}

}  // namespace

// ---- ExponentialShift ---------------------------------------------------------

namespace {
struct ExponentialRow {
  double init, rate;
  std::optional<double> target;
  std::vector<double> expect;
};
// Chainer's table; interval 4. init * rate^t: 2 * 0.5^1 = 1, 2 * 0.5^2 = 0.5; with target 1.2 the
// value 1.0 has ratio 1/1.2 < 1 (rate <= 1), so it becomes 1.2; with rate 2: 2 * 2 = 4, 2 * 4 = 8,
// and 4 / 3 > 1 becomes 3; negative values by the same ratios (-1 / -1.2 < 1, -4 / -3 > 1).
const std::vector<ExponentialRow> kExponentialRows = {
    {2.0, 0.5, std::nullopt, {2.0, 1.0, 0.5}}, {2.0, 0.5, 1.2, {2.0, 1.2, 1.2}},
    {-2.0, 0.5, -1.2, {-2.0, -1.2, -1.2}},     {2.0, 2.0, std::nullopt, {2.0, 4.0, 8.0}},
    {2.0, 2.0, 3.0, {2.0, 3.0, 3.0}},          {-2.0, 2.0, -3.0, {-2.0, -3.0, -3.0}},
};
}  // namespace

TEST_CASE("ExponentialShift: Chainer's table (basic, without init, with an optimizer, resume)") {
  for (const auto& row : kExponentialRows) {
    CAPTURE(row.init);
    CAPTURE(row.rate);
    const std::vector<double> expect = repeat(row.expect, 4);
    const auto options = [&] { return ext::ExponentialShiftOptions().init(row.init).target(row.target); };
    {  // test_basic: the optimizer's value is 0, init is given
      Net net;
      CHECK(run(net, ext::ExponentialShift("lr", row.rate, options()), 4, expect.size(), net.main) == expect);
    }
    {  // test_without_init: the optimizer holds init
      Net net;
      net.main.param_groups()[0].options().set_lr(row.init);
      CHECK(run(net, ext::ExponentialShift("lr", row.rate, ext::ExponentialShiftOptions().target(row.target)), 4,
                expect.size(), net.main) == expect);
    }
    {  // test_with_optimizer: another optimizer than the manager's
      Net net;
      CHECK(run(net, ext::ExponentialShift("lr", row.rate, options().optimizer(net.other)), 4, expect.size(),
                net.other) == expect);
      CHECK(lr_of(net.main) == 0.0);
    }
    {  // test_resume: 4 iterations (one call), then a fresh extension on a fresh optimizer
      Net fresh;
      check_chainer_resume(ext::ExponentialShift("lr", row.rate, options()),
                           ext::ExponentialShift("lr", row.rate, options().optimizer(fresh.other)), fresh.other, 4, 4);
    }
  }
}

TEST_CASE("ExponentialShift: a negative rate is an error (Chainer's TestExponentialShiftInvalidArgument)") {
  CHECK_THROWS_WITH_AS(ext::ExponentialShift("lr", -1.0),
                       "ppe::ExponentialShift: rate must be >= 0 (the value is multiplied by it at each call; Chainer "
                       "does not support a negative rate either), got -1.0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ExponentialShift("lr", 0.5, ext::ExponentialShiftOptions().target(0.0)),
                       "ppe::ExponentialShift: target must not be 0 (the value is compared with the target by their "
                       "ratio, as in Chainer); leave target unset for no clipping",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ExponentialShift("lr", std::nan("")),
                       "ppe::ExponentialShift: rate must be a finite number, got nan", std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ExponentialShift("lr", 0.5, ext::ExponentialShiftOptions().init(INFINITY)),
                       "ppe::ExponentialShift: init must be a finite number, got inf", std::invalid_argument);
}

TEST_CASE("ExponentialShift: state layout, counters, and an overflow is an error") {
  Net net;
  net.main.param_groups()[0].options().set_lr(0.1);
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), net.model, net.main,
                                       ext::ExponentialShift("lr", 0.5));
  auto& shift = manager.get_extension<ext::ExponentialShift>("ExponentialShift");
  CHECK(shift.state_dict() == ppe::State::dict({{"_t", 0}, {"_last_value", ppe::State()}, {"_init", ppe::State()}}));
  for (int i = 0; i < 3; ++i) ppe_test::step(manager);
  // Every iteration (the default trigger): 0.1 * 0.5^3 = 0.0125 (exact in binary: 0.1 / 8).
  CHECK(shift.count() == 3);
  CHECK(lr_of(net.main) == 0.1 * 0.125);
  CHECK(shift.state_dict() == ppe::State::dict({{"_t", 3}, {"_last_value", 0.1 * 0.125}, {"_init", 0.1}}));

  // 1 * 1e300^2 overflows: an error at the second call, and the lr keeps the first call's 1e300.
  Net big;
  big.main.param_groups()[0].options().set_lr(1.0);
  auto m2 = tr::ExtensionsManager(ppe_test::options(10, 1000), big.model, big.main, ext::ExponentialShift("lr", 1e300));
  ppe_test::step(m2);
  CHECK_THROWS_WITH_AS(ppe_test::step(m2),
                       "ppe::ExponentialShift: the value of 'lr' at call 2 is inf, not a finite number; nothing was "
                       "written (check the shift's arguments)",
                       std::domain_error);
  CHECK(lr_of(big.main) == 1e300);
  CHECK(m2.get_extension<ext::ExponentialShift>("ExponentialShift").count() == 1);
}

// ---- LinearShift ------------------------------------------------------------------

TEST_CASE("LinearShift: Chainer's table (basic, with an optimizer, resume)") {
  // value_range (2, 6), time_range (1, 3), interval 2: t = 0, 1 -> 2 (t <= 1); t = 2 -> 2 + (2 - 1) / (3 - 1)
  // * (6 - 2) = 4; t >= 3 -> 6.
  const std::vector<double> expect = {2.0, 2.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, 6.0, 6.0};
  {
    Net net;
    CHECK(run(net, ext::LinearShift("lr", {2.0, 6.0}, {1, 3}), 2, expect.size(), net.main) == expect);
  }
  {
    Net net;
    CHECK(run(net, ext::LinearShift("lr", {2.0, 6.0}, {1, 3}, ext::LinearShiftOptions().optimizer(net.other)), 2,
              expect.size(), net.other) == expect);
    CHECK(lr_of(net.main) == 0.0);
  }
  {  // Chainer: a trainer stopped after 2 iterations (one call), a fresh one resumed with 5
    Net fresh;
    check_chainer_resume(ext::LinearShift("lr", {2.0, 6.0}, {1, 3}),
                         ext::LinearShift("lr", {2.0, 6.0}, {1, 3}, ext::LinearShiftOptions().optimizer(fresh.other)),
                         fresh.other, 2, 4);
  }
}

TEST_CASE("LinearShift: the formula between the ends, and other optimizer options (momentum, beta1)") {
  ext::LinearShift shift("lr", {0.1, 0.5}, {2, 6});
  // v1 + (t - t1) / (t2 - t1) * (v2 - v1): t = 3 -> 0.1 + 1/4 * 0.4; t = 4 -> 0.1 + 2/4 * 0.4 = 0.3.
  CHECK(shift.value_at(2) == 0.1);
  CHECK(shift.value_at(3) == 0.1 + 0.25 * (0.5 - 0.1));
  CHECK(shift.value_at(4) == 0.1 + 0.5 * (0.5 - 0.1));
  CHECK(shift.value_at(6) == 0.5);
  CHECK(shift.value_at(100) == 0.5);

  // Chainer's typical use: a momentum warm-up. SGD momentum 0.5 -> 0.9 over calls 0..4: 0.5 + t/4 * 0.4.
  torch::nn::Linear model(2, 1);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1).momentum(0.1));
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, sgd,
                                       ext::LinearShift("momentum", {0.5, 0.9}, {0, 4}));
  std::vector<double> seen;
  const auto momentum = [&] { return static_cast<optim::SGDOptions&>(sgd.param_groups()[0].options()).momentum(); };
  for (int i = 0; i < 6; ++i) manager.run_iteration([&] { seen.push_back(momentum()); });
  CHECK(seen == std::vector<double>{0.5, 0.5 + 0.25 * 0.4, 0.5 + 0.5 * 0.4, 0.5 + 0.75 * 0.4, 0.9, 0.9});
  CHECK(lr_of(sgd) == 0.1);  // the lr is not touched

  // Adam's first beta (Chainer's `beta1`) 0.9 -> 0.5 over calls 0..2.
  optim::Adam adam(model->parameters(), optim::AdamOptions(1e-3));
  auto m2 = tr::ExtensionsManager(ppe_test::options(10, 1000), model, adam,
                                  ext::LinearShift("beta1", {0.9, 0.5}, {0, 2}));
  for (int i = 0; i < 2; ++i) ppe_test::step(m2);
  const auto& betas = static_cast<optim::AdamOptions&>(adam.param_groups()[0].options()).betas();
  CHECK(std::get<0>(betas) == 0.5);
  CHECK(std::get<1>(betas) == 0.999);
}

// ---- MultistepShift -------------------------------------------------------------

TEST_CASE("MultistepShift: Chainer's table (basic, 'without init', with an optimizer), and init read") {
  struct Row {
    double init, gamma;
    std::vector<double> expect;
  };
  // step_value {1, 3, 5}, interval 1: k = 0 before call 1, 1 from call 1, 2 from 3, 3 from 5:
  // 2 * 0.1^k = 2, 0.2, 0.2, 0.02, 0.02, 0.002; 2 * 2^k = 2, 4, 4, 8, 8, 16.
  const std::vector<Row> rows = {{2.0, 0.1, {2.0, 0.2, 0.2, 0.02, 0.02, 0.002}},
                                 {-2.0, 0.1, {-2.0, -0.2, -0.2, -0.02, -0.02, -0.002}},
                                 {2.0, 2, {2.0, 4.0, 4.0, 8.0, 8.0, 16.0}},
                                 {-2.0, 2, {-2.0, -4.0, -4.0, -8.0, -8.0, -16.0}}};
  const auto close = [](const std::vector<double>& actual, const std::vector<double>& expect) {
    REQUIRE(actual.size() == expect.size());
    for (std::size_t i = 0; i < expect.size(); ++i) CHECK(actual[i] == doctest::Approx(expect[i]).epsilon(1e-12));
  };
  for (const auto& row : rows) {
    CAPTURE(row.init);
    CAPTURE(row.gamma);
    {  // test_basic
      Net net;
      close(run(net, ext::MultistepShift("lr", row.gamma, {1, 3, 5}, row.init), 1, 6, net.main), row.expect);
    }
    {  // Chainer's test_without_init (which still gives init), and with init read from the optimizer
      Net net;
      net.main.param_groups()[0].options().set_lr(row.init);
      close(run(net, ext::MultistepShift("lr", row.gamma, {1, 3, 5}, row.init), 1, 6, net.main), row.expect);
      Net read;
      read.main.param_groups()[0].options().set_lr(row.init);
      close(run(read, ext::MultistepShift("lr", row.gamma, {1, 3, 5}, std::nullopt), 1, 6, read.main), row.expect);
    }
    {  // test_with_optimizer
      Net net;
      close(run(net,
                ext::MultistepShift("lr", row.gamma, {1, 3, 5}, row.init,
                                    ext::MultistepShiftOptions().optimizer(net.other)),
                1, 6, net.other),
            row.expect);
      CHECK(lr_of(net.main) == 0.0);
    }
  }
}

TEST_CASE("MultistepShift: state layout; step_value must be increasing call counts") {
  Net net;
  auto manager =
      tr::ExtensionsManager(ppe_test::options(10, 1000), net.model, net.main, ext::MultistepShift("lr", 0.5, {2, 4}, 1.0));
  for (int i = 0; i < 3; ++i) ppe_test::step(manager);
  // Calls 1, 2 (k = 1 at count 2), 3: 1 * 0.5^1.
  CHECK(lr_of(net.main) == 0.5);
  CHECK(manager.get_extension<ext::MultistepShift>("MultistepShift").state_dict() ==
        ppe::State::dict({{"_t", 3}, {"_current_step", 1}, {"_init", 1.0}}));

  CHECK_THROWS_WITH_AS(ext::MultistepShift("lr", 0.1, {}, 1.0),
                       "ppe::MultistepShift: step_value is empty; give the calls at which the value is multiplied by "
                       "gamma",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::MultistepShift("lr", 0.1, {3, 3}, 1.0),
                       "ppe::MultistepShift: step_value must be strictly increasing call counts from 1, but entry 1 "
                       "is 3 after 3",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::MultistepShift("lr", 0.1, {0, 3}, 1.0),
                       "ppe::MultistepShift: step_value must be strictly increasing call counts from 1, but entry 0 "
                       "is 0",
                       std::invalid_argument);
  ext::MultistepShift shift("lr", 0.1, {1, 3}, 1.0);
  CHECK_THROWS_WITH_AS(shift.load_state_dict(ppe::State::dict({{"_t", 9}, {"_current_step", 3}})),
                       "ppe::MultistepShift: the saved '_current_step' is 3, but step_value has 2 entries",
                       std::invalid_argument);
}

// ---- PolynomialShift ------------------------------------------------------------

TEST_CASE("PolynomialShift: Chainer's table (basic, without init, with an optimizer, resume)") {
  struct Row {
    double init, rate;
    std::int64_t max_count;
    std::optional<double> target;
    std::vector<double> expect;
  };
  // Interval 4; init * max(1 - t / max_count, 0)^rate: 2 * 0.9^0.5 = 1.8973665961010275,
  // 2 * 0.8^0.5 = 1.7888543819998317; max_count 5: 2 * 0.6^0.5 = 1.5491933384829668 (target 1.2
  // not reached); target 1.8 with rate > 0: 1.8 / 1.78885 > 1, so 1.8; rate -0.5: 2 * 0.9^-0.5 =
  // 2.1081851067789197, 2 * 0.8^-0.5 = 2.23606797749979, whose ratio 2.2 / 2.236 < 1 gives 2.2.
  const std::vector<Row> rows = {
      {2.0, 0.5, 10, std::nullopt, {2.0, 1.8973665961010275, 1.7888543819998317}},
      {2.0, 0.5, 5, 1.2, {2.0, 1.7888543819998317, 1.5491933384829668}},
      {-2.0, 0.5, 10, std::nullopt, {-2.0, -1.8973665961010275, -1.7888543819998317}},
      {2.0, 0.5, 10, 1.8, {2.0, 1.8973665961010275, 1.8}},
      {2.0, -0.5, 10, 2.2, {2.0, 2.1081851067789197, 2.2}},
      {2.0, -0.5, 10, std::nullopt, {2.0, 2.1081851067789197, 2.23606797749979}},
      {0.0, -0.5, 10, std::nullopt, {0.0, 0.0, 0.0}},
  };
  for (const auto& row : rows) {
    CAPTURE(row.init);
    CAPTURE(row.rate);
    CAPTURE(row.max_count);
    const std::vector<double> expect = repeat(row.expect, 4);
    const auto options = [&] { return ext::PolynomialShiftOptions().init(row.init).target(row.target); };
    {
      Net net;
      CHECK(run(net, ext::PolynomialShift("lr", row.rate, row.max_count, options()), 4, expect.size(), net.main) ==
            expect);
    }
    {
      Net net;
      net.main.param_groups()[0].options().set_lr(row.init);
      CHECK(run(net,
                ext::PolynomialShift("lr", row.rate, row.max_count, ext::PolynomialShiftOptions().target(row.target)),
                4, expect.size(), net.main) == expect);
    }
    {
      Net net;
      CHECK(run(net, ext::PolynomialShift("lr", row.rate, row.max_count, options().optimizer(net.other)), 4,
                expect.size(), net.other) == expect);
      CHECK(lr_of(net.main) == 0.0);
    }
    {
      Net fresh;
      check_chainer_resume(ext::PolynomialShift("lr", row.rate, row.max_count, options()),
                           ext::PolynomialShift("lr", row.rate, row.max_count, options().optimizer(fresh.other)),
                           fresh.other, 4, 4);
    }
  }
}

TEST_CASE("PolynomialShift: max_count from the training length; 0^negative is an error; bad max_count") {
  // max_epochs 2 * 5 iterations per epoch = max_count 10. lr 1, rate 2: (1 - t/10)^2 = 0.81, 0.64, ...,
  // t = 5: 0.25, t = 10: 0.
  Net net;
  net.main.param_groups()[0].options().set_lr(1.0);
  auto manager = tr::ExtensionsManager(ppe_test::options(2, 5), net.model, net.main,
                                       ext::PolynomialShift("lr", 2.0, std::nullopt));
  std::vector<double> seen;
  for (int i = 0; i < 10; ++i) manager.run_iteration([&] { seen.push_back(lr_of(net.main)); });
  CHECK(manager.get_extension<ext::PolynomialShift>("PolynomialShift").max_count() == 10);
  CHECK(seen[1] == std::pow(0.9, 2.0));
  CHECK(seen[5] == 0.25);
  CHECK(lr_of(net.main) == 0.0);

  // Fractional epochs: 1.5 * 3 = 4.5 iterations, rounded up to 5.
  Net frac;
  auto m2 = tr::ExtensionsManager(ppe_test::options(1.5, 3), frac.model, frac.main,
                                  ext::PolynomialShift("lr", 1.0, std::nullopt, ext::PolynomialShiftOptions().init(1.0)));
  ppe_test::step(m2);
  CHECK(m2.get_extension<ext::PolynomialShift>("PolynomialShift").max_count() == 5);
  CHECK(lr_of(frac.main) == 1.0 - 1.0 / 5);

  // rate -0.5 at t = max_count: 0^-0.5 is infinite (Chainer: ZeroDivisionError). With a target,
  // the ratio 2.2 / inf = 0 < 1 gives the target.
  Net neg;
  auto m3 = tr::ExtensionsManager(ppe_test::options(10, 1000), neg.model, neg.main,
                                  ext::PolynomialShift("lr", -0.5, 2, ext::PolynomialShiftOptions().init(2.0)));
  ppe_test::step(m3);
  CHECK_THROWS_WITH_AS(ppe_test::step(m3),
                       "ppe::PolynomialShift: the value of 'lr' at call 2 is inf, not a finite number; nothing was "
                       "written (check the shift's arguments)",
                       std::domain_error);
  Net clipped;
  auto m4 = tr::ExtensionsManager(
      ppe_test::options(10, 1000), clipped.model, clipped.main,
      ext::PolynomialShift("lr", -0.5, 2, ext::PolynomialShiftOptions().init(2.0).target(2.2)));
  for (int i = 0; i < 3; ++i) ppe_test::step(m4);
  CHECK(lr_of(clipped.main) == 2.2);

  CHECK_THROWS_WITH_AS(ext::PolynomialShift("lr", 0.5, 0),
                       "ppe::PolynomialShift: max_count must be >= 1 (the call at which the value reaches 0), got 0",
                       std::invalid_argument);
  Net none;  // a stop trigger that knows no training length
  auto m5 = tr::ExtensionsManager(ppe_test::options(1, 5), none.model, none.main,
                                  tr::stop_when([](const tr::Manager&) { return false; }),
                                  ext::PolynomialShift("lr", 0.5, std::nullopt));
  CHECK_THROWS_WITH_AS(m5.start_extensions(),
                       "ppe::PolynomialShift: no max_count was given, and the manager's stop trigger has no training "
                       "length to take it from; give max_count",
                       std::invalid_argument);
}

// ---- StepShift ------------------------------------------------------------------

TEST_CASE("StepShift: Chainer's table (basic, without init, with an optimizer, resume)") {
  struct Row {
    double init, gamma;
    std::optional<double> target;
    std::vector<double> expect;
  };
  // step 2, interval 1: init * gamma^floor(t / 2) = 2, 2, 2 * 0.5, 2 * 0.5, 2 * 0.25, ...; clipped as
  // ExponentialShift (1 / 1.2 < 1 with gamma <= 1 gives 1.2; 4 / 3 > 1 with gamma > 1 gives 3).
  const std::vector<Row> rows = {
      {2.0, 0.5, std::nullopt, {2.0, 2.0, 1.0, 1.0, 0.5, 0.5}}, {2.0, 0.5, 1.2, {2.0, 2.0, 1.2, 1.2, 1.2, 1.2}},
      {-2.0, 0.5, -1.2, {-2.0, -2.0, -1.2, -1.2, -1.2, -1.2}}, {2.0, 2.0, std::nullopt, {2.0, 2.0, 4.0, 4.0, 8.0, 8.0}},
      {2.0, 2.0, 3.0, {2.0, 2.0, 3.0, 3.0, 3.0, 3.0}},         {-2.0, 2.0, -3.0, {-2.0, -2.0, -3.0, -3.0, -3.0, -3.0}},
  };
  for (const auto& row : rows) {
    CAPTURE(row.init);
    CAPTURE(row.gamma);
    const auto options = [&] { return ext::StepShiftOptions().init(row.init).target(row.target); };
    {
      Net net;
      CHECK(run(net, ext::StepShift("lr", row.gamma, 2, options()), 1, 6, net.main) == row.expect);
    }
    {  // Chainer's test_without_init gives init; this one reads it
      Net net;
      net.main.param_groups()[0].options().set_lr(row.init);
      CHECK(run(net, ext::StepShift("lr", row.gamma, 2, ext::StepShiftOptions().target(row.target)), 1, 6,
                net.main) == row.expect);
    }
    {
      Net net;
      CHECK(run(net, ext::StepShift("lr", row.gamma, 2, options().optimizer(net.other)), 1, 6, net.other) ==
            row.expect);
      CHECK(lr_of(net.main) == 0.0);
    }
    {  // Chainer: one trainer stopped after 1 iteration (one call)
      Net fresh;
      check_chainer_resume(ext::StepShift("lr", row.gamma, 2, options()),
                           ext::StepShift("lr", row.gamma, 2, options().optimizer(fresh.other)), fresh.other, 1, 3);
    }
  }
  CHECK_THROWS_WITH_AS(ext::StepShift("lr", 0.5, 0),
                       "ppe::StepShift: step must be >= 1 (the value is multiplied by gamma every step calls), got 0",
                       std::invalid_argument);
}

// ---- WarmupShift ------------------------------------------------------------------

TEST_CASE("WarmupShift: Chainer's table (basic, without init, with an optimizer)") {
  struct Row {
    double init, warmup_start;
    std::int64_t warmup_iter;
    std::vector<double> expect;  // at iterations 0, warmup_iter - 1, warmup_iter, warmup_iter + 1
  };
  // (t * init + (n - t) * start) / n: n = 100, t = 99: (99 + 0.1) / 100 = 0.991; n = 10, t = 9:
  // (0.9 + 1) / 10 = 0.19 and (9 - 1) / 10 = 0.8; n = 2, t = 1: (1 - 1) / 2 = 0, (0.1 + 1) / 2 = 0.55.
  const std::vector<Row> rows = {{1, 0.1, 100, {0.1, 0.991, 1, 1}},
                                 {0.1, 1, 10, {1, 0.19, 0.1, 0.1}},
                                 {1, -1, 10, {-1, 0.8, 1, 1}},
                                 {1, -1, 2, {-1, 0, 1, 1}},
                                 {0.1, 1, 2, {1, 0.55, 0.1, 0.1}}};
  for (const auto& row : rows) {
    CAPTURE(row.init);
    CAPTURE(row.warmup_iter);
    const auto n = static_cast<std::size_t>(row.warmup_iter);
    const auto check = [&](const std::vector<double>& actual) {
      REQUIRE(actual.size() == n + 2);
      CHECK(actual[0] == doctest::Approx(row.expect[0]).epsilon(1e-7));
      CHECK(actual[n - 1] == doctest::Approx(row.expect[1]).epsilon(1e-7));
      CHECK(actual[n] == doctest::Approx(row.expect[2]).epsilon(1e-7));
      CHECK(actual[n + 1] == doctest::Approx(row.expect[3]).epsilon(1e-7));
    };
    {
      Net net;
      check(run(net, ext::WarmupShift("lr", row.warmup_start, row.warmup_iter, row.init), 1, n + 2, net.main));
    }
    {  // warmup_start read from the optimizer
      Net net;
      net.main.param_groups()[0].options().set_lr(row.warmup_start);
      check(run(net, ext::WarmupShift("lr", std::nullopt, row.warmup_iter, row.init), 1, n + 2, net.main));
    }
    {
      Net net;
      check(run(net,
                ext::WarmupShift("lr", row.warmup_start, row.warmup_iter, row.init,
                                 ext::WarmupShiftOptions().optimizer(net.other)),
                1, n + 2, net.other));
      CHECK(lr_of(net.main) == 0.0);
    }
  }
}

TEST_CASE("WarmupShift: after the warmup the option is left alone; state layout; bad warmup_iter") {
  Net net;
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), net.model, net.main,
                                       ext::WarmupShift("lr", 0.0, 2, 1.0));
  for (int i = 0; i < 2; ++i) ppe_test::step(manager);
  CHECK(lr_of(net.main) == 1.0);  // (2 * 1 + 0 * 0) / 2
  net.main.param_groups()[0].options().set_lr(0.25);  // e.g. another schedule takes over
  ppe_test::step(manager);
  CHECK(lr_of(net.main) == 0.25);
  CHECK(manager.get_extension<ext::WarmupShift>("WarmupShift").state_dict() ==
        ppe::State::dict({{"_t", 3}, {"_warmup_start", 0.0}}));
  CHECK_THROWS_WITH_AS(ext::WarmupShift("lr", 0.0, 0, 1.0),
                       "ppe::WarmupShift: warmup_iter must be >= 1 (the call at which the value reaches init), got 0",
                       std::invalid_argument);
}

// ---- all six: resumption from a snapshot file ---------------------------------------

namespace {

/// The lr seen by each of `total` iteration bodies of a manager (SGD lr `lr0`,
/// `shift` from `make()`, a snapshot every `resume_at` iterations), run
/// without interruption, and run until the snapshot at `resume_at`, then
/// resumed from that file by a fresh model, optimizer and extension. The two
/// must agree exactly. Returns the state saved for the extension.
template <class Make>
ppe::State check_snapshot_resume(Make make, std::string_view name, std::int64_t resume_at, std::int64_t total,
                                 double lr0) {
  ppe_test::TempDir dir;
  const auto manager_of = [&](torch::nn::Linear& model, optim::SGD& opt) {
    return tr::ExtensionsManager(ppe_test::options(10, 100).out_dir(dir.str()), model, opt, make(),
                                 tr::entry(ext::snapshot(), ppe::iterations(resume_at)));
  };
  std::vector<double> whole, resumed;
  {
    torch::nn::Linear model(2, 1);
    optim::SGD opt(model->parameters(), optim::SGDOptions(lr0));
    auto m = manager_of(model, opt);
    for (std::int64_t i = 0; i < total; ++i) m.run_iteration([&] { whole.push_back(lr_of(opt)); });
  }
  {
    torch::nn::Linear model(2, 1);
    optim::SGD opt(model->parameters(), optim::SGDOptions(lr0));
    auto m = manager_of(model, opt);
    for (std::int64_t i = 0; i < resume_at; ++i) m.run_iteration([&] { resumed.push_back(lr_of(opt)); });
  }
  const ppe::State saved = ppe::serialization::load_file(dir / ("snapshot_iter_" + std::to_string(resume_at)));
  {
    torch::nn::Linear model(2, 1);
    optim::SGD opt(model->parameters(), optim::SGDOptions(lr0));  // as the run's script would make it
    auto m = manager_of(model, opt);
    m.load_state_dict(saved);
    for (std::int64_t i = resume_at; i < total; ++i) m.run_iteration([&] { resumed.push_back(lr_of(opt)); });
  }
  REQUIRE(whole.size() == static_cast<std::size_t>(total));
  CHECK(resumed == whole);
  return saved.at("extensions").at(name).at("extension");
}

}  // namespace

TEST_CASE("Shifts resume from a snapshot file exactly as an uninterrupted run") {
  SUBCASE("ExponentialShift, init read from the optimizer") {
    // Resumed, the optimizer's lr is 0.1 * 0.5^4 (the optimizer's state): "_init" keeps 0.1.
    const ppe::State s = check_snapshot_resume([] { return ext::ExponentialShift("lr", 0.5); }, "ExponentialShift", 4,
                                               9, 0.1);
    CHECK(s == ppe::State::dict({{"_t", 4}, {"_last_value", 0.1 * 0.0625}, {"_init", 0.1}}));
  }
  SUBCASE("LinearShift") {
    // t = 4 of (1, 0.5) over (0, 8): 1 + 4/8 * (0.5 - 1) = 0.75.
    const ppe::State s = check_snapshot_resume([] { return ext::LinearShift("lr", {1.0, 0.5}, {0, 8}); },
                                               "LinearShift", 4, 10, 1.0);
    CHECK(s == ppe::State::dict({{"_t", 4}, {"_last_value", 0.75}}));
  }
  SUBCASE("MultistepShift, init read from the optimizer") {
    // Steps at 2, 5, 7; resumed after 4 calls (k = 1): Chainer would set init again at the start.
    const ppe::State s = check_snapshot_resume(
        [] { return ext::MultistepShift("lr", 0.5, {2, 5, 7}, std::nullopt); }, "MultistepShift", 4, 10, 1.0);
    CHECK(s == ppe::State::dict({{"_t", 4}, {"_current_step", 1}, {"_init", 1.0}}));
  }
  SUBCASE("PolynomialShift, init read, max_count from the training length") {
    // max_count 10 * 100; t = 4: (1 - 4/1000)^2.
    const ppe::State s = check_snapshot_resume([] { return ext::PolynomialShift("lr", 2.0, std::nullopt); },
                                               "PolynomialShift", 4, 10, 1.0);
    CHECK(s == ppe::State::dict({{"_t", 4}, {"_last_value", std::pow(1.0 - 4.0 / 1000.0, 2.0)}, {"_init", 1.0}}));
  }
  SUBCASE("StepShift, init read from the optimizer") {
    // t = 4, step 3: 1 * 0.1^1.
    const ppe::State s =
        check_snapshot_resume([] { return ext::StepShift("lr", 0.1, 3); }, "StepShift", 4, 10, 1.0);
    CHECK(s == ppe::State::dict({{"_t", 4}, {"_last_value", 0.1}, {"_init", 1.0}}));
  }
  SUBCASE("WarmupShift, resumed during the warmup, start read from the optimizer") {
    const ppe::State s = check_snapshot_resume([] { return ext::WarmupShift("lr", std::nullopt, 6, 1.0); },
                                               "WarmupShift", 4, 10, 0.1);
    CHECK(s == ppe::State::dict({{"_t", 4}, {"_warmup_start", 0.1}}));
  }
  SUBCASE("WarmupShift, resumed after the warmup") {
    // Chainer would set warmup_start again, and leave it for the rest of training.
    check_snapshot_resume([] { return ext::WarmupShift("lr", 0.1, 3, 1.0); }, "WarmupShift", 4, 8, 0.5);
  }
}

TEST_CASE("Shifts load Chainer's and pytorch-extensions' layouts (no '_init')") {
  // pytorch-extensions' ExponentialShift.state_dict(): {'_t': 2, '_last_value': 0.5}; init given.
  Net net;
  ext::ExponentialShift shift("lr", 0.5, ext::ExponentialShiftOptions().init(2.0).optimizer(net.other));
  shift.load_state_dict(ppe::State::dict({{"_t", 2}, {"_last_value", 0.5}}));
  auto manager = ppe_test::make_manager(1, 1);
  shift.initialize(manager);
  CHECK(lr_of(net.other) == 0.5);
  shift(manager);  // t = 3: 2 * 0.5^3
  CHECK(lr_of(net.other) == 0.25);
  CHECK(shift.count() == 3);
}

// ---- optimizers, attributes, param groups ---------------------------------------------

TEST_CASE("Shifts: param groups (every group by default, or one), and groups that disagree") {
  torch::nn::Linear model(2, 1);
  const auto make_sgd = [&] {
    std::vector<optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{model->weight}, std::make_unique<optim::SGDOptions>(0.1));
    groups.emplace_back(std::vector<torch::Tensor>{model->bias}, std::make_unique<optim::SGDOptions>(0.01));
    return optim::SGD(std::move(groups), optim::SGDOptions(0.1));
  };
  {
    optim::SGD sgd = make_sgd();
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, sgd, ext::StepShift("lr", 0.5, 1));
    CHECK_THROWS_WITH_AS(manager.start_extensions(),
                         "ppe::StepShift: the optimizer's param groups hold different values of 'lr' (0.1 in group 0, "
                         "0.01 in group 1), so there is no one initial value to read: give init, or select one group "
                         "with param_group",
                         std::invalid_argument);
  }
  {  // init given: every group gets the same value
    optim::SGD sgd = make_sgd();
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, sgd,
                                         ext::StepShift("lr", 0.5, 1, ext::StepShiftOptions().init(1.0)));
    ppe_test::step(manager);
    CHECK(lr_of(sgd, 0) == 0.5);
    CHECK(lr_of(sgd, 1) == 0.5);
  }
  {  // one group (negative: from the end)
    optim::SGD sgd = make_sgd();
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, sgd,
                                         ext::StepShift("lr", 0.5, 1, ext::StepShiftOptions().param_group(-1)));
    ppe_test::step(manager);
    CHECK(lr_of(sgd, 0) == 0.1);
    CHECK(lr_of(sgd, 1) == 0.005);
  }
  {
    optim::SGD sgd = make_sgd();
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, sgd,
                                         ext::StepShift("lr", 0.5, 1, ext::StepShiftOptions().param_group(2)));
    CHECK_THROWS_WITH_AS(manager.start_extensions(),
                         "ppe::StepShift: param_group 2 is out of range: the optimizer has 2 param group(s), so the "
                         "index must be in [-2, 1]",
                         std::out_of_range);
  }
}

TEST_CASE("Shifts: attributes by name, custom attributes, and the optimizer by name") {
  CHECK_THROWS_WITH_AS(ext::ExponentialShift("lrr", 0.5),
                       "ppe: unknown optimizer attribute 'lrr' to shift; by name: lr, momentum, dampening, "
                       "weight_decay, beta1, beta2, eps, alpha, lr_decay, tolerance_grad, tolerance_change (which of "
                       "them an optimizer has depends on its type); for another option, give a ShiftAttribute with a "
                       "getter and a setter",
                       std::invalid_argument);

  torch::nn::Linear model(2, 1);
  optim::Adam adam(model->parameters(), optim::AdamOptions(1e-3));
  {
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, adam,
                                         ext::LinearShift("momentum", {0.5, 0.9}, {0, 4}));
    CHECK_THROWS_WITH_AS(manager.start_extensions(),
                         "ppe: the optimizer's options (torch::optim::AdamOptions) have no option 'momentum' to shift "
                         "(by name: lr, beta1, beta2, eps, weight_decay); for another option, give a ShiftAttribute "
                         "with a getter and a setter",
                         std::invalid_argument);
  }
  {  // a custom attribute: Adam's weight decay through a getter and a setter, halved each call
    ext::ShiftAttribute decay(
        "adam_weight_decay",
        [](const optim::OptimizerOptions& o) { return static_cast<const optim::AdamOptions&>(o).weight_decay(); },
        [](optim::OptimizerOptions& o, double v) { static_cast<optim::AdamOptions&>(o).weight_decay(v); });
    static_cast<optim::AdamOptions&>(adam.param_groups()[0].options()).weight_decay(0.4);
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), model, adam, ext::ExponentialShift(decay, 0.5));
    for (int i = 0; i < 2; ++i) ppe_test::step(manager);
    CHECK(static_cast<optim::AdamOptions&>(adam.param_groups()[0].options()).weight_decay() == 0.1);  // 0.4 / 4
    CHECK(manager.get_extension<ext::ExponentialShift>("ExponentialShift").attribute().name() == "adam_weight_decay");
  }
  CHECK_THROWS_WITH_AS(ext::ShiftAttribute("x", nullptr, [](optim::OptimizerOptions&, double) {}),
                       "ppe: the ShiftAttribute 'x' needs a getter and a setter, got an empty getter",
                       std::invalid_argument);

  {  // no optimizer "main": the error names the manager's optimizers
    Net net;
    auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), tr::Models{{"main", net.model}},
                                         tr::Optimizers{{"gen", net.main}}, ext::ExponentialShift("lr", 0.5));
    CHECK_THROWS_WITH_AS(manager.start_extensions(),
                         "ppe::ExponentialShift: no optimizer was given and the manager has no optimizer named 'main' "
                         "(its optimizers: ['gen']); give one with options.optimizer(opt), or its name with "
                         "options.optimizer_name(name)",
                         std::out_of_range);
  }
  {  // by name
    Net net;
    net.other.param_groups()[0].options().set_lr(1.0);
    auto manager = tr::ExtensionsManager(
        ppe_test::options(10, 1000), tr::Models{{"main", net.model}},
        tr::Optimizers{{"main", net.main}, {"dis", net.other}},
        ext::ExponentialShift("lr", 0.5, ext::ExponentialShiftOptions().optimizer_name("dis")));
    ppe_test::step(manager);
    CHECK(lr_of(net.other) == 0.5);
    CHECK(lr_of(net.main) == 0.0);
  }
}

TEST_CASE("Shifts: names, priority, default trigger; a bad state changes nothing") {
  CHECK(tr::extension_traits<ext::ExponentialShift>::default_name() == "ExponentialShift");
  CHECK(tr::extension_traits<ext::LinearShift>::default_name() == "LinearShift");
  CHECK(tr::extension_traits<ext::MultistepShift>::default_name() == "MultistepShift");
  CHECK(tr::extension_traits<ext::PolynomialShift>::default_name() == "PolynomialShift");
  CHECK(tr::extension_traits<ext::StepShift>::default_name() == "StepShift");
  CHECK(tr::extension_traits<ext::WarmupShift>::default_name() == "WarmupShift");
  CHECK(tr::extension_traits<ext::StepShift>::priority() == tr::kPriorityReader);
  CHECK(tr::extension_traits<ext::WarmupShift>::default_trigger().training_length() ==
        tr::TrainingLength{1, tr::Unit::Iteration});

  ext::ExponentialShift shift("lr", 0.5, ext::ExponentialShiftOptions().init(1.0));
  CHECK_THROWS_WITH_AS(shift.load_state_dict(ppe::State::dict({{"_last_value", 0.5}})),
                       "ppe::ExponentialShift: the saved state has no '_t' entry", std::invalid_argument);
  CHECK_THROWS_WITH_AS(shift.load_state_dict(ppe::State::dict({{"_t", -1}, {"_last_value", 0.5}})),
                       "ppe::ExponentialShift: the saved '_t' is -1, expected a non-negative int (a call count)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(shift.load_state_dict(ppe::State::dict({{"_t", 3}, {"_last_value", "x"}})),
                       "ppe::ExponentialShift: the saved '_last_value' is a string, expected a number or None",
                       std::invalid_argument);
  CHECK(shift.count() == 0);
  CHECK_FALSE(shift.last_value().has_value());
  CHECK_THROWS_WITH_AS(ext::LinearShift("lr", {1.0, 2.0}, {3, 1}),
                       "ppe::LinearShift: time_range must be (first, last) with first <= last (the calls over which "
                       "the value moves), got (3, 1)",
                       std::invalid_argument);
}

TEST_CASE("Shifts as runtime extensions (AnyExtension): initialize, calls and state go through") {
  Net net;
  net.main.param_groups()[0].options().set_lr(1.0);
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 1000), net.model, net.main);
  manager.extend(ext::StepShift("lr", 0.5, 2));
  for (int i = 0; i < 4; ++i) ppe_test::step(manager);
  // 1 * 0.5^floor(4 / 2) = 0.25
  CHECK(lr_of(net.main) == 0.25);
  CHECK(manager.state_dict().at("extensions").at("StepShift").at("extension") ==
        ppe::State::dict({{"_t", 4}, {"_last_value", 0.25}, {"_init", 1.0}}));
}

}  // namespace ppe_test_training_tests_extensions_tests_test_shifts
