// Port of PPE's tests/.../extensions_tests/test_fail_on_non_number.py
// (test_valid, test_nan, test_inf, test_check_grad, test_no_check_grad), plus
// what we add: the error names the model and the parameter, one host read
// per call, snapshot_on_error, several models, dtypes, the trigger.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <ATen/record_function.h>

#include <ppe/training/extensions/fail_on_non_number.hpp>
#include <ppe/training/extensions/snapshot.hpp>

#include <cmath>
#include <limits>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_fail_on_non_number {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// PPE's ErroneousFunc: adds 1 forward; its backward makes every gradient NaN.
struct ErroneousFunc : torch::autograd::Function<ErroneousFunc> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& i) { return i + 1.0; }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grad) {
    return {grad[0] + kNaN};
  }
};

// PPE's Model: Linear(1, 3), optionally followed by ErroneousFunc.
struct ModelImpl : torch::nn::Module {
  explicit ModelImpl(bool grad_error) : l1(register_module("l1", torch::nn::Linear(1, 3))), grad_error(grad_error) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = l1(x);
    return grad_error ? ErroneousFunc::apply(y) : y;
  }
  torch::nn::Linear l1;
  bool grad_error;
};
TORCH_MODULE(Model);

// PPE's run_train: 3 iterations, each over the 4 samples x = i, y = i % 2
// (batch size 1), nll_loss on the raw outputs, SGD with lr 1.0.
template <class M>
void run_train(M& manager, Model& model, torch::optim::SGD& optimizer, bool optimizer_step = true) {
  for (int it = 0; it < 3; ++it)
    manager.run_iteration([&] {
      for (int i = 0; i < 4; ++i) {
        const torch::Tensor x = torch::full({1, 1}, static_cast<float>(i));
        const torch::Tensor y = torch::full({1}, i % 2, torch::kLong);
        optimizer.zero_grad();
        torch::nll_loss(model->forward(x), y).backward();
        if (optimizer_step) optimizer.step();
      }
    });
}

// PPE's get_manager_model_optimizer: 3 epochs of 4 iterations, FailOnNonNumber extended.
struct Setup {
  Model model;
  torch::optim::SGD optimizer;
  Setup(bool grad_error) : model(grad_error), optimizer(model->parameters(), torch::optim::SGDOptions(1.0)) {}
  auto manager(bool check_grad) {
    return tr::ExtensionsManager(ppe_test::options(3, 4), tr::Models{{"main", model}},
                                 tr::Optimizers{{"main", optimizer}},
                                 ext::FailOnNonNumber(ext::FailOnNonNumberOptions().check_grad(check_grad)));
  }
};

/// The error `f()` throws (fails the test when none).
template <class F>
ext::NonFiniteParameterError error_of(F&& f) {
  try {
    f();
  } catch (const ext::NonFiniteParameterError& e) {
    return e;
  }
  FAIL("no NonFiniteParameterError");
  return ext::NonFiniteParameterError("", "", false, false);
}

}  // namespace

TEST_CASE("PPE test_valid") {
  Setup s(false);
  auto manager = s.manager(true);
  CHECK_NOTHROW(run_train(manager, s.model, s.optimizer));
  CHECK(manager.iteration() == 3);
}

TEST_CASE("PPE test_nan") {
  Setup s(false);
  auto manager = s.manager(true);
  {
    torch::NoGradGuard no_grad;
    s.model->l1->weight[1][0] = kNaN;
  }
  const auto e = error_of([&] { run_train(manager, s.model, s.optimizer); });
  CHECK(std::string(e.what()) ==
        "ppe::FailOnNonNumber: Kill the process since parameters in model 'main' diverge: parameter 'l1.weight' "
        "contains NaN. R.I.P.");
  CHECK(e.model() == "main");
  CHECK(e.parameter() == "l1.weight");
  CHECK_FALSE(e.gradient());
  CHECK(e.nan());
  CHECK(manager.iteration() == 1);  // the first iteration's check
}

TEST_CASE("PPE test_inf") {
  Setup s(false);
  auto manager = s.manager(true);
  {
    torch::NoGradGuard no_grad;
    s.model->l1->weight[2][0] = kInf;
  }
  // Output 2 is never a target: its gradient is 0 and the weight stays inf (not NaN).
  const auto e = error_of([&] { run_train(manager, s.model, s.optimizer); });
  CHECK(std::string(e.what()) ==
        "ppe::FailOnNonNumber: Kill the process since parameters in model 'main' diverge: parameter 'l1.weight' "
        "contains infinity. R.I.P.");
  CHECK(e.parameter() == "l1.weight");
  CHECK_FALSE(e.nan());
  CHECK_FALSE(e.gradient());
}

TEST_CASE("PPE test_check_grad") {
  Setup s(true);
  auto manager = s.manager(true);
  const auto e = error_of([&] { run_train(manager, s.model, s.optimizer, /*optimizer_step=*/false); });
  CHECK(std::string(e.what()) ==
        "ppe::FailOnNonNumber: Kill the process since parameters in model 'main' diverge: the gradient of parameter "
        "'l1.weight' contains NaN. R.I.P.");
  CHECK(e.gradient());
  CHECK(e.parameter() == "l1.weight");
}

TEST_CASE("PPE test_no_check_grad") {
  Setup s(true);
  auto manager = s.manager(false);
  CHECK_NOTHROW(run_train(manager, s.model, s.optimizer, /*optimizer_step=*/false));
  CHECK(std::isnan(s.model->l1->weight.grad()[0][0].item<double>()));  // the gradients were NaN indeed
}

TEST_CASE("FailOnNonNumber: PPE's name, priority, trigger; needs the model state") {
  using T = tr::extension_traits<ext::FailOnNonNumber>;
  CHECK(T::default_name() == "FailOnNonNumber");
  CHECK(T::priority() == tr::kPriorityReader);
  CHECK(T::needs_model_state());
  CHECK(T::default_trigger().training_length() == tr::TrainingLength{1, tr::Unit::Iteration});
  CHECK(ext::FailOnNonNumber().check_grad());
  CHECK_FALSE(ext::FailOnNonNumber(ext::FailOnNonNumberOptions().check_grad(false)).check_grad());
}

TEST_CASE("FailOnNonNumber: several models; the first culprit in model, then parameter, value-then-gradient order") {
  torch::nn::Sequential gen(torch::nn::Linear(2, 3), torch::nn::Linear(3, 2));
  torch::nn::Sequential dis(torch::nn::Linear(2, 4), torch::nn::Linear(4, 1));
  for (auto& p : gen->parameters()) p.mutable_grad() = torch::zeros_like(p);
  for (auto& p : dis->parameters()) p.mutable_grad() = torch::zeros_like(p);
  const tr::Models models{{"gen", gen}, {"dis", dis}};
  ext::FailOnNonNumber check;
  CHECK_NOTHROW(check.check(models));

  dis[1]->named_parameters()["bias"].mutable_grad()[0] = -kInf;
  auto e = error_of([&] { check.check(models); });
  CHECK(e.model() == "dis");
  CHECK(e.parameter() == "1.bias");
  CHECK(e.gradient());
  CHECK_FALSE(e.nan());
  CHECK(std::string(e.what()) ==
        "ppe::FailOnNonNumber: Kill the process since parameters in model 'dis' diverge: the gradient of parameter "
        "'1.bias' contains infinity. R.I.P.");

  // An earlier parameter's value wins over the later gradient; NaN and inf together say NaN.
  {
    torch::NoGradGuard no_grad;
    dis[0]->named_parameters()["weight"][0][0] = kNaN;
    dis[0]->named_parameters()["weight"][1][0] = kInf;
  }
  e = error_of([&] { check.check(models); });
  CHECK(e.parameter() == "0.weight");
  CHECK_FALSE(e.gradient());
  CHECK(e.nan());

  // check_grad(false) ignores the gradient once the values are finite again.
  {
    torch::NoGradGuard no_grad;
    dis[0]->named_parameters()["weight"].zero_();
  }
  ext::FailOnNonNumber values_only(ext::FailOnNonNumberOptions().check_grad(false));
  CHECK_NOTHROW(values_only.check(models));
  CHECK_THROWS_AS(check.check(models), ext::NonFiniteParameterError);
}

TEST_CASE("FailOnNonNumber: one host read per call, whatever the number of tensors") {
  // 8 parameters with gradients: 16 tensors, one fused check.
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::Linear(16, 16), torch::nn::Linear(16, 16),
                            torch::nn::Linear(16, 4));
  for (auto& p : mlp->parameters()) p.mutable_grad() = torch::ones_like(p);
  const tr::Models models(mlp);
  ppe_test::HostReadCounter reads;
  ext::FailOnNonNumber check;
  check.check(models);
  check.check(models);
  CHECK(reads.count() == 2);
  // The check builds no autograd graph.
  CHECK_FALSE(mlp->parameters()[0].grad().requires_grad());
}

TEST_CASE("FailOnNonNumber: finite values whose sum overflows are not an error") {
  auto m = torch::nn::Linear(2, 2);
  {
    torch::NoGradGuard no_grad;
    m->weight.fill_(3e38f);  // float max is 3.4e38: the float sum is inf
  }
  ext::FailOnNonNumber check;
  CHECK_NOTHROW(check.check(tr::Models(m)));
  {
    torch::NoGradGuard no_grad;
    m->weight[1][1] = kInf;
  }
  CHECK(error_of([&] { check.check(tr::Models(m)); }).parameter() == "weight");
}

TEST_CASE("FailOnNonNumber: dtypes: half, double, complex are checked; integers and empty tensors are skipped") {
  struct Mixed : torch::nn::Module {
    Mixed() {
      register_parameter("h", torch::ones({4}, torch::kHalf));
      register_parameter("d", torch::ones({3}, torch::kDouble));
      register_parameter("c", torch::ones({2}, torch::kComplexFloat));
      register_parameter("i", torch::ones({2}, torch::kLong), /*requires_grad=*/false);
      register_parameter("e", torch::ones({0}));
    }
  };
  auto m = std::make_shared<Mixed>();
  const tr::Models models(m);
  ext::FailOnNonNumber check;
  CHECK_NOTHROW(check.check(models));
  const auto set = [&](const char* name, auto value) {
    torch::NoGradGuard no_grad;
    m->named_parameters()[name][0] = value;
  };
  set("h", kNaN);
  CHECK(error_of([&] { check.check(models); }).parameter() == "h");
  set("h", 1.0);
  set("d", -kInf);
  CHECK(error_of([&] { check.check(models); }).parameter() == "d");
  set("d", 1.0);
  {
    torch::NoGradGuard no_grad;
    m->named_parameters()["c"][1] = c10::complex<float>(1.0f, static_cast<float>(kNaN));
  }
  const auto e = error_of([&] { check.check(models); });
  CHECK(e.parameter() == "c");
  CHECK(e.nan());
}

TEST_CASE("FailOnNonNumber: runs when its trigger fires, so a NaN is found at the next check") {
  auto model = torch::nn::Linear(2, 2);
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 10), model, tr::Optimizers{},
                                       tr::entry(ext::FailOnNonNumber(), ppe::iterations(3)));
  ppe_test::step(manager);
  {
    torch::NoGradGuard no_grad;
    model->bias[0] = kNaN;
  }
  ppe_test::step(manager);  // iteration 2: not checked
  CHECK_THROWS_AS(ppe_test::step(manager), ext::NonFiniteParameterError);
  CHECK(manager.iteration() == 3);
}

TEST_CASE("FailOnNonNumber with snapshot_on_error: the diverged state is saved, on_error runs once") {
  struct ErrorCounter {
    using extension_concept = tr::extension_tag;
    int* count;
    void on_error(tr::Manager&, std::exception_ptr) { ++*count; }
  };
  ppe_test::TempDir out;
  auto model = torch::nn::Linear(2, 2);
  int on_errors = 0;
  auto manager = tr::ExtensionsManager(ppe_test::options(10, 100).out_dir(out.str()), model, tr::Optimizers{},
                                       ext::FailOnNonNumber(),
                                       ext::snapshot(ext::SnapshotOptions().snapshot_on_error(true)),
                                       ErrorCounter{&on_errors});
  ppe_test::step(manager);
  CHECK(ppe_test::list_dir(out.path).empty());  // the snapshot's trigger (every epoch) did not fire
  {
    torch::NoGradGuard no_grad;
    model->weight[0][1] = kNaN;
  }
  CHECK_THROWS_WITH_AS(ppe_test::step(manager), doctest::Contains("parameter 'weight' contains NaN"),
                       ext::NonFiniteParameterError);
  CHECK(on_errors == 1);
  REQUIRE(ppe_test::list_dir(out.path) == std::set<std::string>{"snapshot_iter_2"});
  const ppe::State saved = ppe::serialization::load_file(out / "snapshot_iter_2");
  CHECK(saved.at("_start_iteration").as_int() == 2);
  const torch::Tensor w = saved.at("models").at("main").at("weight").as_tensor();
  CHECK(std::isnan(w[0][1].item<double>()));
  CHECK(torch::isfinite(w[1]).all().item<bool>());

  // A second failing iteration runs no on_error again (once per manager).
  CHECK_THROWS_AS(ppe_test::step(manager), ext::NonFiniteParameterError);
  CHECK(on_errors == 1);
  CHECK(ppe_test::list_dir(out.path).size() == 1);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_fail_on_non_number
