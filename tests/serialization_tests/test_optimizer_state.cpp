// The state of torch::optim optimizers (ppe/serialization/optimizer_state.hpp):
// resuming from a saved state continues bitwise identically, the layout is
// Python's, and with a Python that has torch, states cross between C++ and
// Python's optimizers (skipped with a message when there is none).
#include "ppe_test.hpp"
#include "python.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iterator>
#include <random>
#include <sstream>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_serialization_tests_test_optimizer_state {

namespace fs = std::filesystem;
namespace tr = ppe::training;
using ppe::State;

namespace {

// ---- a tiny deterministic problem -------------------------------------------

torch::nn::Linear make_model() {
  torch::nn::Linear model(3, 2);
  torch::NoGradGuard no_grad;
  model->weight.copy_(torch::arange(6, torch::kFloat).reshape({2, 3}).div(10).sub(0.2));
  model->bias.copy_(torch::tensor({0.1f, -0.1f}));
  return model;
}
const torch::Tensor& inputs() {
  static const torch::Tensor x =
      torch::tensor({{1.0f, 2.0f, -1.0f}, {0.5f, -0.5f, 2.0f}, {-1.5f, 1.0f, 0.0f}, {2.0f, 0.0f, 1.0f}});
  return x;
}
const torch::Tensor& targets() {
  static const torch::Tensor y = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {-1.0f, 0.5f}, {0.5f, -0.5f}});
  return y;
}

/// One optimizer step on the squared error (through a closure, which LBFGS
/// needs and the others accept).
template <class Opt>
void train_step(torch::nn::Linear& model, Opt& opt) {
  opt.step([&] {
    opt.zero_grad();
    auto loss = (model->forward(inputs()) - targets()).pow(2).sum();
    loss.backward();
    return loss;
  });
}

/// A deep copy of a State (tensors cloned), to see that a later step leaves
/// a taken state alone.
State deep_copy(const State& s) {
  if (s.is_tensor()) return State(s.as_tensor().clone());
  if (s.is_list()) {
    State out = State::list();
    for (const auto& x : s.as_list()) out.as_list().push_back(deep_copy(x));
    return out;
  }
  if (s.is_dict()) {
    State out = State::dict();
    for (const auto& [k, v] : s.as_dict()) out.set(k, deep_copy(v));
    return out;
  }
  return s;
}

std::vector<std::string> keys(const State& s) {
  std::vector<std::string> out;
  for (const auto& item : s.as_dict()) out.push_back(item.first);
  return out;
}

// ---- Python --------------------------------------------------------------------

using ppe_test::Output;
using ppe_test::TempDir;
using ppe_test::python_with_torch;
using ppe_test::read_bytes;
using ppe_test::run;
using ppe_test::run_python;
using ppe_test::write_file;

/// The problem above in Python, and helpers of the scripts.
const std::string kPythonPrelude = R"PY(
import sys, torch
torch.set_printoptions(precision=10)
def make_model():
    m = torch.nn.Linear(3, 2)
    with torch.no_grad():
        m.weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3).div(10).sub(0.2))
        m.bias.copy_(torch.tensor([0.1, -0.1]))
    return m
x = torch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0], [-1.5, 1.0, 0.0], [2.0, 0.0, 1.0]])
y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5], [0.5, -0.5]])
def train_step(m, o):
    def closure():
        o.zero_grad()
        loss = (m(x) - y).pow(2).sum()
        loss.backward()
        return loss
    o.step(closure)
def same_layout(ours, theirs, where):
    # torch 1.13's keys in its order, the same option values (tuples are lists
    # here). Later torch adds group options (differentiable, fused, ...) that
    # its load_state_dict fills in with their defaults (and 2.14's AdamW
    # orders them as Adam does): there, ours are among theirs, and an unset
    # fused (None) is ppe's False.
    ok, tk = list(ours["param_groups"][0].keys()), list(theirs["param_groups"][0].keys())
    if torch.__version__.startswith("1.13"):
        assert ok == tk, (where, ok, tk)
    else:
        assert set(ok) <= set(tk), (where, ok, tk)
    for g, h in zip(ours["param_groups"], theirs["param_groups"]):
        for k in g:
            a, b = g[k], h[k]
            if isinstance(b, tuple): b = list(b)
            if k == "fused" and b is None: b = False
            assert a == b, (where, k, a, b)
    # Python's SGD without momentum keeps {"momentum_buffer": None}; LibTorch keeps nothing.
    state = {k: v for k, v in theirs["state"].items() if any(x is not None for x in v.values())}
    # Same integer keys (string ids would make Python's load_state_dict drop the state).
    assert sorted(ours["state"].keys()) == sorted(state.keys()), (where, ours["state"].keys())
    for k, v in state.items():
        mine = ours["state"][k]
        assert list(mine.keys()) == list(v.keys()), (where, k, list(mine.keys()), list(v.keys()))
        for kk, vv in v.items():
            # torch 2.x keeps RMSprop's (and others') step as a tensor where
            # 1.13 kept an int: ppe writes 1.13's form, which 2.x loads as is.
            if kk == "step" and isinstance(vv, torch.Tensor) and type(mine[kk]) is int \
                    and not torch.__version__.startswith("1.13"):
                assert mine[kk] == int(vv), (where, k, kk, mine[kk], vv)
                continue
            if isinstance(vv, torch.Tensor):
                assert isinstance(mine[kk], torch.Tensor) and mine[kk].dtype == vv.dtype \
                    and mine[kk].shape == vv.shape, (where, k, kk, mine[kk], vv)
            elif vv is not None and not isinstance(vv, list):
                assert type(mine[kk]) is type(vv), (where, k, kk, mine[kk], vv)
)PY";

// ---- the cases ----------------------------------------------------------------

/// An optimizer configuration: a C++ factory of the static type Opt and the
/// same constructor in Python (`{}` stands for the parameters).
template <class Opt>
struct Case {
  std::string name;
  std::function<std::unique_ptr<Opt>(std::vector<torch::Tensor>)> make;
  std::string python;  ///< e.g. "torch.optim.SGD(PARAMS, lr=0.1)"
  int warm = 3;        ///< steps before the state is taken
};

/// Train `warm` steps, take the state, continue `k` steps; a second model
/// loads the parameters and (through pickle bytes) the optimizer state and
/// continues `k` steps: parameters must be bitwise equal.
template <class Opt>
State check_resume(const Case<Opt>& c, int k = 3) {
  auto model = make_model();
  auto opt = c.make(model->parameters());
  for (int i = 0; i < c.warm; ++i) train_step(model, *opt);
  const State taken = ppe::serialization::optimizer_state_dict(*opt);
  const State snapshot = deep_copy(taken);
  const State params = deep_copy(tr::detail::module_state_dict(*model));
  for (int i = 0; i < k; ++i) train_step(model, *opt);
  // The taken state owns its tensors: the later steps did not touch them.
  CHECK(ppe::serialization::state_equal(taken, snapshot));

  auto resumed = make_model();
  tr::detail::module_load_state_dict(*resumed, params, "main");
  auto opt2 = c.make(resumed->parameters());
  ppe::serialization::optimizer_load_state_dict(*opt2, ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(taken)), "main");
  // Loading copies: stepping the loaded optimizer leaves the State alone.
  for (int i = 0; i < k; ++i) train_step(resumed, *opt2);
  CHECK(ppe::serialization::state_equal(taken, snapshot));
  CHECK(torch::equal(model->weight, resumed->weight));
  CHECK(torch::equal(model->bias, resumed->bias));
  // The resumed optimizer's state equals the original's again.
  CHECK(ppe::serialization::state_equal(ppe::serialization::optimizer_state_dict(*opt), ppe::serialization::optimizer_state_dict(*opt2)));
  return taken;
}

/// C++ state -> Python's optimizer of the same kind: its next step matches
/// C++'s; and the layout (keys, order, option values, state kinds) is what
/// Python's own optimizer writes after the same steps. Then Python's state ->
/// C++ (a PPE-shaped snapshot written by torch.save): C++'s next step matches
/// Python's.
template <class Opt>
void check_python(const Case<Opt>& c) {
  if (python_with_torch().empty()) {
    MESSAGE("no Python with torch (python3-torch): skipping the Python cross-check of " << c.name);
    return;
  }
  TempDir dir;
  auto model = make_model();
  auto opt = c.make(model->parameters());
  for (int i = 0; i < c.warm; ++i) train_step(model, *opt);
  const State snapshot = State::dict({{"models", State::dict({{"main", tr::detail::module_state_dict(*model)}})},
                                      {"optimizers", State::dict({{"main", ppe::serialization::optimizer_state_dict(*opt)}})}});
  write_file(dir.path / "cpp.pt", ppe::serialization::pickle_dumps(snapshot));
  train_step(model, *opt);
  write_file(dir.path / "cpp_next.pt",
             ppe::serialization::pickle_dumps(State::dict({{"weight", model->weight.detach()}, {"bias", model->bias.detach()}})));

  const std::string script = kPythonPrelude + R"PY(
d = sys.argv[1]
WARM = int(sys.argv[2])
def make_opt(params):
    return )PY" + c.python + R"PY(
# C++ -> Python
snap = torch.load(d + "/cpp.pt")
m = make_model()
m.load_state_dict(snap["models"]["main"])
o = make_opt(m.parameters())
# Python keys the per-parameter state by int: string ids would be ignored.
assert all(isinstance(k, int) for k in snap["optimizers"]["main"]["state"]), snap["optimizers"]["main"]["state"].keys()
o.load_state_dict(snap["optimizers"]["main"])
assert len(o.state) == len(snap["optimizers"]["main"]["state"]), "per-parameter state not loaded"
train_step(m, o)
want = torch.load(d + "/cpp_next.pt")
for name in ("weight", "bias"):
    got = getattr(m, name).detach()
    assert torch.allclose(got, want[name], rtol=0, atol=1e-6), (name, got, want[name])
# The layout equals Python's own after the same steps.
ref = make_model()
ro = make_opt(ref.parameters())
for _ in range(WARM):
    train_step(ref, ro)
same_layout(snap["optimizers"]["main"], ro.state_dict(), "layout")
# Python -> C++: a PPE-shaped snapshot of Python's model and optimizer.
torch.save({"_start_iteration": WARM, "models": {"main": ref.state_dict()},
            "optimizers": {"main": ro.state_dict()}}, d + "/py.pt")
train_step(ref, ro)
torch.save({"weight": ref.weight.detach(), "bias": ref.bias.detach()}, d + "/py_next.pt")
print("ok")
)PY";
  const Output out = run_python(dir, script, "'" + dir.path.string() + "' " + std::to_string(c.warm));
  INFO(c.name << ": " << out.text);
  REQUIRE(out.status == 0);

  const State py = ppe::serialization::pickle_loads(read_bytes(dir.path / "py.pt"));
  auto loaded = make_model();
  tr::detail::module_load_state_dict(*loaded, py.at("models").at("main"), "main");
  auto opt2 = c.make(loaded->parameters());
  ppe::serialization::optimizer_load_state_dict(*opt2, py.at("optimizers").at("main"), "main");
  train_step(loaded, *opt2);
  const State want = ppe::serialization::pickle_loads(read_bytes(dir.path / "py_next.pt"));
  CHECK(torch::allclose(loaded->weight, want.at("weight").as_tensor(), /*rtol=*/0, /*atol=*/1e-6));
  CHECK(torch::allclose(loaded->bias, want.at("bias").as_tensor(), 0, 1e-6));
}

template <class Opt>
void check_all(const Case<Opt>& c) {
  INFO(c.name);
  check_resume(c);
  check_python(c);
}

namespace to = torch::optim;

Case<to::SGD> sgd_nesterov() {
  return {"SGD nesterov",
          [](auto p) { return std::make_unique<to::SGD>(p, to::SGDOptions(0.05).momentum(0.9).nesterov(true)); },
          "torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True)"};
}
Case<to::Adam> adam_amsgrad() {
  return {"Adam amsgrad",
          [](auto p) {
            return std::make_unique<to::Adam>(
                p, to::AdamOptions(0.01).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1).amsgrad(true));
          },
          "torch.optim.Adam(params, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True)"};
}

}  // namespace

TEST_CASE("optimizer state: SGD (momentum, dampening, nesterov, none) resumes bitwise and crosses to Python") {
  check_all(sgd_nesterov());
  check_all(Case<to::SGD>{
      "SGD dampening",
      [](auto p) {
        return std::make_unique<to::SGD>(p, to::SGDOptions(0.05).momentum(0.5).dampening(0.1).weight_decay(0.01));
      },
      "torch.optim.SGD(params, lr=0.05, momentum=0.5, dampening=0.1, weight_decay=0.01)"});
  // No momentum: LibTorch keeps no state, Python a None buffer; both load.
  check_all(Case<to::SGD>{"SGD plain", [](auto p) { return std::make_unique<to::SGD>(p, to::SGDOptions(0.1)); },
                          "torch.optim.SGD(params, lr=0.1)"});
}

TEST_CASE("optimizer state: Adam and AdamW resume bitwise and cross to Python") {
  check_all(adam_amsgrad());
  check_all(Case<to::Adam>{"Adam", [](auto p) { return std::make_unique<to::Adam>(p, to::AdamOptions(0.02)); },
                           "torch.optim.Adam(params, lr=0.02)"});
  check_all(Case<to::AdamW>{
      "AdamW amsgrad",
      [](auto p) { return std::make_unique<to::AdamW>(p, to::AdamWOptions(0.01).weight_decay(0.05).amsgrad(true)); },
      "torch.optim.AdamW(params, lr=0.01, weight_decay=0.05, amsgrad=True)"});
}

TEST_CASE("optimizer state: Adagrad, RMSprop and LBFGS resume bitwise and cross to Python") {
  check_all(Case<to::Adagrad>{
      "Adagrad",
      [](auto p) {
        return std::make_unique<to::Adagrad>(
            p, to::AdagradOptions(0.1).lr_decay(0.01).initial_accumulator_value(0.1).weight_decay(0.01));
      },
      "torch.optim.Adagrad(params, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.01)"});
  check_all(Case<to::RMSprop>{
      "RMSprop centered momentum",
      [](auto p) {
        return std::make_unique<to::RMSprop>(p, to::RMSpropOptions(0.01).momentum(0.5).centered(true).alpha(0.9));
      },
      "torch.optim.RMSprop(params, lr=0.01, momentum=0.5, centered=True, alpha=0.9)"});
  check_all(Case<to::RMSprop>{"RMSprop",
                              [](auto p) { return std::make_unique<to::RMSprop>(p, to::RMSpropOptions(0.01)); },
                              "torch.optim.RMSprop(params, lr=0.01)"});
  // A short history that fills up and wraps within the warm-up.
  check_all(Case<to::LBFGS>{
      "LBFGS",
      [](auto p) { return std::make_unique<to::LBFGS>(p, to::LBFGSOptions(0.5).max_iter(3).history_size(2)); },
      "torch.optim.LBFGS(params, lr=0.5, max_iter=3, history_size=2)", 2});
}

TEST_CASE("optimizer state: Python's layout, with every option") {
  auto model = make_model();
  auto opt = adam_amsgrad().make(model->parameters());
  train_step(model, *opt);
  const State s = ppe::serialization::optimizer_state_dict(*opt);
  CHECK(keys(s) == std::vector<std::string>{"state", "param_groups"});
  const State& g = s.at("param_groups").as_list().at(0);
  CHECK(keys(g) == std::vector<std::string>{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                                            "capturable", "differentiable", "fused", "params"});
  CHECK(g.at("betas") == State::list({0.8, 0.99}));
  CHECK(g.at("eps").as_double() == 1e-6);
  CHECK(g.at("amsgrad").as_bool());
  CHECK(g.at("foreach").is_none());
  CHECK(g.at("params") == State::list({0, 1}));
  CHECK(keys(s.at("state")) == std::vector<std::string>{"0", "1"});
  const State& p0 = s.at("state").at("0");
  CHECK(keys(p0) == std::vector<std::string>{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"});
  // Python 1.13 keeps the step as a float32 scalar tensor.
  CHECK(p0.at("step").as_tensor().dim() == 0);
  CHECK((p0.at("step").as_tensor().scalar_type() == torch::kFloat));
  CHECK(p0.at("step").as_tensor().item<double>() == 1.0);
  CHECK(p0.at("exp_avg").as_tensor().sizes() == model->weight.sizes());
  CHECK(!p0.at("exp_avg").as_tensor().requires_grad());

  auto model2 = make_model();
  to::SGD sgd(model2->parameters(), to::SGDOptions(0.1).momentum(0.9));
  const State sg = ppe::serialization::optimizer_state_dict(sgd).at("param_groups").as_list().at(0);
  CHECK(keys(sg) == std::vector<std::string>{"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize",
                                             "foreach", "differentiable", "params"});
  to::LBFGS lbfgs(model2->parameters(), to::LBFGSOptions(1));
  const State lg = ppe::serialization::optimizer_state_dict(lbfgs).at("param_groups").as_list().at(0);
  CHECK(keys(lg) == std::vector<std::string>{"lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change",
                                             "history_size", "line_search_fn", "params"});
  CHECK(lg.at("max_eval").as_int() == 25);  // max_iter * 5 / 4, as in Python
  CHECK(lg.at("line_search_fn").is_none());
}

TEST_CASE("optimizer state: several param groups keep their own options, indices run across groups") {
  auto make = [](torch::nn::Linear& m) {
    std::vector<to::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{m->weight});
    groups.emplace_back(std::vector<torch::Tensor>{m->bias}, std::make_unique<to::SGDOptions>(
                                                                 to::SGDOptions(0.02).momentum(0.5).nesterov(true)));
    return std::make_unique<to::SGD>(groups, to::SGDOptions(0.1).momentum(0.9));
  };
  auto model = make_model();
  auto opt = make(model);
  for (int i = 0; i < 3; ++i) train_step(model, *opt);
  const State s = ppe::serialization::optimizer_state_dict(*opt);
  const auto& groups = s.at("param_groups").as_list();
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].at("params") == State::list({0}));
  CHECK(groups[1].at("params") == State::list({1}));
  CHECK(groups[1].at("lr").as_double() == 0.02);
  CHECK(groups[1].at("nesterov").as_bool());
  const State params = deep_copy(tr::detail::module_state_dict(*model));
  for (int i = 0; i < 2; ++i) train_step(model, *opt);

  auto model2 = make_model();
  tr::detail::module_load_state_dict(*model2, params, "main");
  auto opt2 = make(model2);
  // Different options in the new optimizer: the saved ones win.
  static_cast<to::SGDOptions&>(opt2->param_groups()[1].options()).momentum(0.1).lr(1.0);
  ppe::serialization::optimizer_load_state_dict(*opt2, s, "main");
  CHECK(static_cast<to::SGDOptions&>(opt2->param_groups()[1].options()).momentum() == 0.5);
  for (int i = 0; i < 2; ++i) train_step(model2, *opt2);
  CHECK(torch::equal(model->weight, model2->weight));
  CHECK(torch::equal(model->bias, model2->bias));
}

TEST_CASE("optimizer state: the manager's snapshot holds the full optimizer state") {
  auto model = make_model();
  to::Adam opt(model->parameters(), to::AdamOptions(0.01));
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 10), model, opt);
  for (int i = 0; i < 2; ++i) manager.run_iteration([&] { train_step(model, opt); });
  const State state = manager.state_dict();
  const State& o = state.at("optimizers").at("main");
  CHECK(o.at("state").size() == 2);
  CHECK(o.at("param_groups").as_list().at(0).contains("betas"));

  auto model2 = make_model();
  to::Adam opt2(model2->parameters(), to::AdamOptions(0.5));
  auto manager2 = tr::ExtensionsManager(ppe_test::options(1, 10), model2, opt2);
  manager2.load_state_dict(ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(state)));
  CHECK(opt2.param_groups()[0].options().get_lr() == 0.01);
  manager.run_iteration([&] { train_step(model, opt); });
  manager2.run_iteration([&] { train_step(model2, opt2); });
  CHECK(torch::equal(model->weight, model2->weight));
}

TEST_CASE("optimizer state: mismatches are clear errors and change nothing") {
  auto model = make_model();
  auto opt = adam_amsgrad().make(model->parameters());
  train_step(model, *opt);
  const State good = ppe::serialization::optimizer_state_dict(*opt);

  // Parameters of another shape: the error names optimizer, group, parameter.
  torch::nn::Linear other(3, 3);
  to::Adam wrong(other->parameters(), to::AdamOptions(0.01).amsgrad(true));
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(wrong, good, "main"),
                       "ppe: cannot load the state of optimizer 'main' (torch::optim::Adam): param group 0, "
                       "parameter 0 (id 0, shape [3, 3]): 'exp_avg' has shape [2, 3], expected [3, 3]",
                       std::runtime_error);
  CHECK(wrong.state().empty());  // nothing loaded

  // Another parameter count.
  to::Adam fewer(std::vector<torch::Tensor>{model->weight}, to::AdamOptions(0.01));
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(fewer, good, "gen"),
                       "ppe: cannot load the state of optimizer 'gen' (torch::optim::Adam): param group 0: it has 1 "
                       "parameters, the saved group has 2",
                       std::runtime_error);
  // Another group count.
  State two_groups = good;
  two_groups.at("param_groups").as_list().push_back(two_groups.at("param_groups").as_list()[0]);
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(*opt, two_groups, "main"),
                       doctest::Contains("it has 1 param groups, the saved state has 2"), std::runtime_error);

  // A missing moment, a wrong kind, an id no group lists, maximize=True.
  State missing = good;
  missing.at("state").at("1").as_dict().erase(missing.at("state").at("1").as_dict().begin() + 1);
  auto fresh = adam_amsgrad().make(make_model()->parameters());
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(*fresh, missing, "main"),
                       doctest::Contains("param group 0, parameter 1 (id 1, shape [2]): 'exp_avg' is missing"),
                       std::runtime_error);
  State bad_lr = good;
  bad_lr.at("param_groups").as_list()[0].set("lr", "fast");
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(*fresh, bad_lr, "main"),
                       doctest::Contains("param group 0: option 'lr' is a string, expected a number"),
                       std::runtime_error);
  State stray = good;
  stray.at("state").set("7", State::dict());
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(*fresh, stray, "main"),
                       doctest::Contains("an entry for parameter id 7, which no saved group lists"),
                       std::runtime_error);
  State maximize = good;
  maximize.at("param_groups").as_list()[0].set("maximize", true);
  CHECK_THROWS_WITH_AS(ppe::serialization::optimizer_load_state_dict(*fresh, maximize, "main"),
                       doctest::Contains("maximize=True cannot be loaded"), std::runtime_error);
  CHECK(fresh->state().empty());
  CHECK(static_cast<to::AdamOptions&>(fresh->param_groups()[0].options()).lr() == 0.01);

  // A state written with lr only (before the full state was saved) loads.
  auto old = adam_amsgrad().make(make_model()->parameters());
  ppe::serialization::optimizer_load_state_dict(
      *old,
      State::dict({{"state", State::dict()},
                   {"param_groups", State::list({State::dict({{"lr", 0.5}, {"params", State::list({0, 1})}})})}}),
      "main");
  CHECK(old->param_groups()[0].options().get_lr() == 0.5);
  CHECK(static_cast<to::AdamOptions&>(old->param_groups()[0].options()).amsgrad());
}

namespace {
/// A user's optimizer: plain gradient descent with its own options type.
struct MyOptions : to::OptimizerCloneableOptions<MyOptions> {
  double lr_ = 0.1;
  double get_lr() const override { return lr_; }
  void set_lr(const double lr) override { lr_ = lr; }
};
struct MyOptimizer : to::Optimizer {
  explicit MyOptimizer(std::vector<torch::Tensor> params)
      : Optimizer({to::OptimizerParamGroup(std::move(params))}, std::make_unique<MyOptions>()) {}
  torch::Tensor step(LossClosure closure) override {
    torch::Tensor loss = closure ? closure() : torch::Tensor();
    torch::NoGradGuard no_grad;
    for (auto& g : param_groups())
      for (auto& p : g.params()) p.sub_(p.grad() * g.options().get_lr());
    return loss;
  }
};
}  // namespace

TEST_CASE("optimizer state: an unknown optimizer type keeps lr and warns once") {
  std::vector<std::string> warnings;
  auto previous = ppe::set_warning_handler([&](std::string_view m) { warnings.emplace_back(m); });
  auto model = make_model();
  MyOptimizer opt(model->parameters());
  train_step(model, opt);
  const State s = ppe::serialization::optimizer_state_dict(opt);
  ppe::serialization::optimizer_state_dict(opt);
  CHECK(s.at("param_groups").as_list().at(0) == State::dict({{"lr", 0.1}, {"params", State::list({0, 1})}}));
  CHECK(s.at("state").size() == 0);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("MyOptimizer") != std::string::npos);
  MyOptimizer opt2(make_model()->parameters());
  ppe::serialization::optimizer_load_state_dict(opt2, State::dict({{"state", State::dict()},
                                                   {"param_groups", State::list({State::dict(
                                                                        {{"lr", 0.25}, {"params", State::list({0, 1})}})})}}),
                                "main");
  CHECK(opt2.param_groups()[0].options().get_lr() == 0.25);
  CHECK(warnings.size() == 1);

  // The same optimizer held through its base class is an unknown type too.
  auto sgd = std::make_shared<to::SGD>(make_model()->parameters(), to::SGDOptions(0.3));
  std::shared_ptr<to::Optimizer> base = sgd;
  tr::OptimizerRef ref(base);
  CHECK(ref.state_dict().at("param_groups").as_list().at(0).at("lr").as_double() == 0.3);
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[1].find("torch::optim::SGD") != std::string::npos);
  // Held as itself, the full state.
  tr::OptimizerRef full(sgd);
  CHECK(full.state_dict().at("param_groups").as_list().at(0).contains("momentum"));
  ppe::set_warning_handler(previous);
}

}  // namespace ppe_test_serialization_tests_test_optimizer_state
