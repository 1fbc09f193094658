#include "ppe_test.hpp"
// ppe::amp::GradScaler: torch.cuda.amp.GradScaler's semantics (torch 1.13,
// torch/cuda/amp/grad_scaler.py and the CUDA kernels _amp_update_scale_ /
// _amp_foreach_non_finite_check_and_unscale_) on the CPU. Expected numbers are
// derived in comments; powers of two keep every product exact in float32.

#include <ppe/amp/grad_scaler.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "python.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_amp_tests_test_grad_scaler {

namespace {

using ppe::amp::GradScaler;
using ppe::amp::GradScalerOptions;
using ppe_test::error_of;

// y = w * x + b with w = 1, b = 0: dy/dw = x, dy/db = 1.
struct Tiny {
  torch::nn::Linear model{torch::nn::LinearOptions(1, 1)};
  torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(1.0)};
  Tiny() {
    torch::NoGradGuard g;
    model->weight.fill_(1.0);
    model->bias.fill_(0.0);
  }
  torch::Tensor loss(double x) { return model->forward(torch::full({1, 1}, x)).sum(); }
  float w() const { return model->weight.item<float>(); }
  float b() const { return model->bias.item<float>(); }
};

// One training step of the documented protocol; returns whether the optimizer stepped.
bool train_step(GradScaler& scaler, Tiny& t, double x) {
  t.opt.zero_grad();
  scaler.scale(t.loss(x)).backward();
  const bool stepped = scaler.step(t.opt);
  scaler.update();
  return stepped;
}

}  // namespace

TEST_CASE("GradScaler: Python's defaults") {
  GradScaler s;
  CHECK(s.is_enabled());
  CHECK(s.get_scale() == 65536.0);  // init_scale = 2.**16, before the first scale()
  CHECK(s.get_growth_factor() == 2.0);
  CHECK(s.get_backoff_factor() == 0.5);
  CHECK(s.get_growth_interval() == 2000);
  CHECK(s.growth_tracker() == 0);
  CHECK_FALSE(s.scale_tensor().defined());  // created lazily, on the first scaled output's device
}

TEST_CASE("GradScaler: scale multiplies by the scale, on the output's device") {
  GradScaler s;
  const auto out = s.scale(torch::tensor({1.5f, -2.0f}));
  CHECK(torch::equal(out, torch::tensor({98304.0f, -131072.0f})));  // 1.5 * 2^16, -2 * 2^16
  REQUIRE(s.scale_tensor().defined());
  CHECK((s.scale_tensor().scalar_type() == torch::kFloat));
  CHECK(s.scale_tensor().sizes() == torch::IntArrayRef{1});
  const auto many = s.scale(std::vector<torch::Tensor>{torch::ones({1}), torch::full({2}, 0.5)});
  REQUIRE(many.size() == 2);
  CHECK(many[0].item<float>() == 65536.0f);
  CHECK(torch::equal(many[1], torch::full({2}, 32768.0f)));
}

TEST_CASE("GradScaler: a finite step unscales the gradients and steps") {
  Tiny t;
  GradScaler s;
  t.opt.zero_grad();
  s.scale(t.loss(3.0)).backward();
  // Scaled gradients: dw = 3 * 2^16, db = 2^16.
  CHECK(t.model->weight.grad().item<float>() == 196608.0f);
  s.unscale_(t.opt);
  CHECK(t.model->weight.grad().item<float>() == 3.0f);
  CHECK(t.model->bias.grad().item<float>() == 1.0f);
  CHECK(s.step(t.opt));
  CHECK(t.w() == -2.0f);  // 1 - lr 1 * 3
  CHECK(t.b() == -1.0f);  // 0 - 1
  s.update();
  CHECK(s.get_scale() == 65536.0);  // 1 of 2000 clean steps: unchanged
  CHECK(s.growth_tracker() == 1);
}

TEST_CASE("GradScaler: an inf gradient skips the step and halves the scale") {
  Tiny t;
  GradScaler s;
  // dw = 2^16 * 1e34 = 6.6e38 > FLT_MAX (3.4e38): the scaled gradient overflows to inf.
  t.opt.zero_grad();
  s.scale(t.loss(1e34)).backward();
  CHECK(std::isinf(t.model->weight.grad().item<float>()));
  CHECK_FALSE(s.step(t.opt));
  CHECK(t.w() == 1.0f);  // untouched
  CHECK(t.b() == 0.0f);
  s.update();
  CHECK(s.get_scale() == 32768.0);  // 2^16 * backoff 0.5
  CHECK(s.growth_tracker() == 0);

  // The halved scale no longer overflows for x = 1e33 (2^15 * 1e33 = 3.3e37): the next step runs.
  CHECK(train_step(s, t, 1e33));
  CHECK(s.get_scale() == 32768.0);
  CHECK(s.growth_tracker() == 1);
}

TEST_CASE("GradScaler: a NaN gradient counts as non-finite") {
  Tiny t;
  GradScaler s;
  t.opt.zero_grad();
  s.scale(t.loss(1.0)).backward();
  t.model->bias.mutable_grad().fill_(std::numeric_limits<float>::quiet_NaN());
  CHECK_FALSE(s.step(t.opt));
  s.update();
  CHECK(s.get_scale() == 32768.0);
  CHECK(t.w() == 1.0f);
}

TEST_CASE("GradScaler: growth_interval clean steps double the scale") {
  Tiny t;
  GradScaler s(GradScalerOptions().growth_interval(3));
  // Python's _amp_update_scale_: tracker 1, 2, then 3 == interval -> scale * 2, tracker 0.
  CHECK(train_step(s, t, 1.0));
  CHECK(s.get_scale() == 65536.0);
  CHECK(s.growth_tracker() == 1);
  CHECK(train_step(s, t, 1.0));
  CHECK(s.get_scale() == 65536.0);
  CHECK(s.growth_tracker() == 2);
  CHECK(train_step(s, t, 1.0));
  CHECK(s.get_scale() == 131072.0);
  CHECK(s.growth_tracker() == 0);
  // An inf step in between restarts the count: 2 clean, 1 inf (x 0.5), 3 clean (x 2).
  CHECK(train_step(s, t, 1.0));
  CHECK(train_step(s, t, 1.0));
  CHECK_FALSE(train_step(s, t, 1e34));  // 2^17 * 1e34 overflows
  CHECK(s.get_scale() == 65536.0);
  CHECK(s.growth_tracker() == 0);
  for (int i = 0; i < 3; ++i) CHECK(train_step(s, t, 1.0));
  CHECK(s.get_scale() == 131072.0);
}

TEST_CASE("GradScaler: custom factors, and growth that would overflow is not applied") {
  Tiny t;
  GradScaler s(GradScalerOptions().init_scale(8.0).growth_factor(4.0).backoff_factor(0.25).growth_interval(1));
  CHECK(train_step(s, t, 1.0));
  CHECK(s.get_scale() == 32.0);  // 8 * 4
  CHECK_FALSE(train_step(s, t, std::numeric_limits<float>::infinity()));
  CHECK(s.get_scale() == 8.0);  // 32 * 0.25

  // The kernel keeps the old scale when scale * growth is not finite, and still restarts the count.
  GradScaler big(GradScalerOptions().init_scale(2e38).growth_interval(1));
  Tiny t2;
  CHECK(train_step(big, t2, 1.0));
  CHECK(big.get_scale() == static_cast<double>(2e38f));  // 4e38 > FLT_MAX: not applied
  CHECK(big.growth_tracker() == 0);
}

TEST_CASE("GradScaler: update(new_scale) sets the scale") {
  Tiny t;
  GradScaler s;
  t.opt.zero_grad();
  s.scale(t.loss(1.0)).backward();
  s.step(t.opt);
  s.update(1024.0);
  CHECK(s.get_scale() == 1024.0);
  CHECK(train_step(s, t, 1.0));  // a new iteration starts after update(new_scale)
  s.update(torch::full({1}, 4.0f));
  CHECK(s.get_scale() == 4.0);
  CHECK(error_of([&] { s.update(torch::full({2}, 4.0f)); }).find("one-element float32") != std::string::npos);
}

TEST_CASE("GradScaler: misuse raises with Python's rules") {
  Tiny t;
  GradScaler s;
  // Nothing scaled yet.
  CHECK(error_of([&] { s.unscale_(t.opt); }).find("call scale(loss)") != std::string::npos);
  CHECK(error_of([&] { s.step(t.opt); }).find("call scale(loss)") != std::string::npos);
  CHECK(error_of([&] { s.update(); }).find("call scale(loss)") != std::string::npos);

  t.opt.zero_grad();
  s.scale(t.loss(1.0)).backward();
  s.unscale_(t.opt);
  // unscale_ twice in one iteration: the gradients would be divided twice.
  CHECK(error_of([&] { s.unscale_(t.opt); }) ==
        "ppe::amp::GradScaler::unscale_: already called on this optimizer since the last update()");
  CHECK(t.model->bias.grad().item<float>() == 1.0f);  // divided once only
  s.step(t.opt);
  CHECK(error_of([&] { s.unscale_(t.opt); }).find("called after step()") != std::string::npos);
  CHECK(error_of([&] { s.step(t.opt); }).find("already called on this optimizer") != std::string::npos);
  s.update();
  // A fresh iteration accepts unscale_ again.
  t.opt.zero_grad();
  s.scale(t.loss(1.0)).backward();
  CHECK_NOTHROW(s.unscale_(t.opt));
  CHECK_NOTHROW(s.step(t.opt));
  CHECK_NOTHROW(s.update());

  // update() with no inf check this iteration.
  s.scale(t.loss(1.0));
  CHECK(error_of([&] { s.update(); }).find("no inf checks were recorded") != std::string::npos);
  // step() on an optimizer whose parameters have no gradient.
  for (auto& p : t.model->parameters()) p.mutable_grad() = torch::Tensor();
  CHECK(error_of([&] { s.step(t.opt); }).find("none of its parameters has a gradient") != std::string::npos);
}

TEST_CASE("GradScaler: FP16 gradients are refused, as in Python") {
  auto p = torch::ones({2}, torch::kHalf).requires_grad_();
  p.mutable_grad() = torch::ones({2}, torch::kHalf);
  torch::optim::SGD opt({p}, torch::optim::SGDOptions(1.0));
  GradScaler s;
  s.scale(torch::ones({1}));
  CHECK(error_of([&] { s.unscale_(opt); }).find("FP16 gradients") != std::string::npos);
}

TEST_CASE("GradScaler: optimizers are tracked separately; any inf backs off the shared scale") {
  Tiny a, b;
  GradScaler s;
  a.opt.zero_grad();
  b.opt.zero_grad();
  s.scale(a.loss(1e34)).backward();  // overflows
  s.scale(b.loss(2.0)).backward();
  CHECK_FALSE(s.step(a.opt));
  CHECK(s.step(std::addressof(b.opt)));  // a pointer to an optimizer works too
  CHECK(a.w() == 1.0f);
  CHECK(b.w() == -1.0f);  // 1 - 2
  s.update();
  CHECK(s.get_scale() == 32768.0);
}

TEST_CASE("GradScaler: 0-dim parameters keep their gradient's shape") {
  auto p = torch::tensor(2.0f).requires_grad_();
  torch::optim::SGD opt({p}, torch::optim::SGDOptions(0.5));
  GradScaler s;
  s.scale(p * 3.0f).backward();  // d/dp = 3, scaled 3 * 2^16
  CHECK(s.step(opt));
  CHECK(p.grad().dim() == 0);
  CHECK(p.grad().item<float>() == 3.0f);
  CHECK(p.item<float>() == 0.5f);  // 2 - 0.5 * 3
}

TEST_CASE("GradScaler: disabled is a pass-through") {
  Tiny t;
  GradScaler s(GradScalerOptions().enabled(false).growth_factor(0.5));  // options are not validated when disabled
  CHECK_FALSE(s.is_enabled());
  const auto loss = t.loss(3.0);
  const auto scaled = s.scale(loss);
  CHECK(scaled.unsafeGetTensorImpl() == loss.unsafeGetTensorImpl());
  t.opt.zero_grad();
  scaled.backward();
  CHECK_NOTHROW(s.unscale_(t.opt));
  CHECK(t.model->weight.grad().item<float>() == 3.0f);  // not divided
  CHECK(s.step(t.opt));
  CHECK(t.w() == -2.0f);
  CHECK_NOTHROW(s.update());
  CHECK(s.get_scale() == 1.0);
  CHECK(s.growth_tracker() == 0);
  CHECK(s.state_dict() == ppe::State::dict());
  CHECK_NOTHROW(s.load_state_dict(ppe::State::dict()));  // no-op, even for an empty state
}

TEST_CASE("GradScaler: invalid options") {
  CHECK(error_of([] { GradScaler(GradScalerOptions().growth_factor(1.0)); }) ==
        "ppe::amp::GradScaler: growth_factor must be > 1.0, got 1.000000");
  CHECK(error_of([] { GradScaler(GradScalerOptions().backoff_factor(1.0)); }).find("backoff_factor must be < 1.0") !=
        std::string::npos);
  CHECK(error_of([] { GradScaler(GradScalerOptions().growth_interval(0)); }).find("growth_interval must be >= 1") !=
        std::string::npos);
  GradScaler s;
  CHECK_THROWS_AS(s.set_growth_factor(0.9), std::invalid_argument);
  CHECK(s.get_growth_factor() == 2.0);
}

TEST_CASE("GradScaler: state_dict has Python's keys and round-trips") {
  Tiny t;
  GradScaler s(GradScalerOptions().growth_interval(3));
  CHECK(train_step(s, t, 1.0));
  CHECK_FALSE(train_step(s, t, 1e34));
  CHECK(train_step(s, t, 1.0));
  CHECK(train_step(s, t, 1.0));
  // 2^16 -> backoff 2^15, then 2 clean steps: tracker 2.
  const ppe::State state = s.state_dict();
  std::vector<std::string> keys;
  for (const auto& [k, v] : state.as_dict()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"scale", "growth_factor", "backoff_factor", "growth_interval",
                                         "_growth_tracker"});
  CHECK(state.at("scale").is_double());
  CHECK(state.at("scale").as_double() == 32768.0);
  CHECK(state.at("growth_factor").as_double() == 2.0);
  CHECK(state.at("backoff_factor").as_double() == 0.5);
  CHECK(state.at("growth_interval").as_int() == 3);
  CHECK(state.at("_growth_tracker").as_int() == 2);

  // Into a fresh scaler (through the pickle format snapshots use): one more clean step grows.
  GradScaler r;
  r.load_state_dict(ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(state)));
  CHECK(r.get_scale() == 32768.0);
  CHECK(r.get_growth_interval() == 3);
  CHECK(r.growth_tracker() == 2);
  Tiny t2;
  CHECK(train_step(r, t2, 1.0));
  CHECK(r.get_scale() == 65536.0);
  CHECK(r.growth_tracker() == 0);

  // Into a scaler whose scale tensor already exists: the tensors are overwritten.
  GradScaler live;
  Tiny t3;
  train_step(live, t3, 1.0);
  live.load_state_dict(state);
  CHECK(live.scale_tensor().item<float>() == 32768.0f);
  CHECK(live.growth_tracker() == 2);
}

TEST_CASE("GradScaler: bad states are refused and change nothing") {
  GradScaler s;
  CHECK(error_of([&] { s.load_state_dict(ppe::State::dict()); }).find("saved from a disabled GradScaler") !=
        std::string::npos);
  CHECK(error_of([&] { s.load_state_dict(ppe::State(3)); }).find("expected a dict, got a int") != std::string::npos);
  auto state = GradScaler(GradScalerOptions().init_scale(4.0)).state_dict();
  auto missing = state;
  missing.as_dict().pop_back();
  CHECK(error_of([&] { s.load_state_dict(missing); }).find("key '_growth_tracker' not found") != std::string::npos);
  auto mistyped = state;
  mistyped.set("growth_interval", 2.5);
  CHECK(error_of([&] { s.load_state_dict(mistyped); }) ==
        "ppe::amp::GradScaler::load_state_dict: 'growth_interval' is a double, expected an int");
  CHECK(s.get_scale() == 65536.0);
  CHECK(s.get_growth_interval() == 2000);
}

TEST_CASE("GradScaler: states move between C++ and Python's torch.cuda.amp.GradScaler") {
  if (ppe_test::python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping");
    return;
  }
  ppe_test::TempDir dir;
  GradScaler s(GradScalerOptions().growth_interval(7).backoff_factor(0.25));
  Tiny t;
  train_step(s, t, 1.0);
  train_step(s, t, 1.0);
  ppe_test::write_file(dir / "cpp.pt", ppe::serialization::pickle_dumps(s.state_dict()));
  // Python's scaler disables itself without CUDA; pretend AMP is available so
  // that load_state_dict / state_dict run (neither touches a device).
  const std::string script = R"PY(
import sys, torch
import torch.cuda.amp.common as common
import torch.cuda.amp.grad_scaler as gs
gs.amp_definitely_not_available = lambda: False  # torch 1.13 imported the name
common.amp_definitely_not_available = lambda: False  # torch 2.x calls it through the module
d = torch.load(sys.argv[1] + "/cpp.pt")
s = torch.cuda.amp.GradScaler()
s.load_state_dict(d)
assert s.get_scale() == 65536.0 and type(s.state_dict()["scale"]) is float, s.state_dict()
assert s.get_growth_interval() == 7 and s.get_backoff_factor() == 0.25 and s._get_growth_tracker() == 2
assert list(s.state_dict().keys()) == list(d.keys())
p = torch.cuda.amp.GradScaler(init_scale=512.0, growth_factor=3.0, growth_interval=11)
p._init_growth_tracker = 5
torch.save(p.state_dict(), sys.argv[1] + "/py.pt")
print("OK")
)PY";
  const auto out = ppe_test::run_python(dir, script, "'" + dir.str() + "'");
  INFO(out.text);
  REQUIRE(out.status == 0);
  GradScaler r;
  r.load_state_dict(ppe::serialization::pickle_loads(ppe_test::read_bytes(dir / "py.pt")));
  CHECK(r.get_scale() == 512.0);
  CHECK(r.get_growth_factor() == 3.0);
  CHECK(r.get_growth_interval() == 11);
  CHECK(r.growth_tracker() == 5);
}

}  // namespace ppe_test_amp_tests_test_grad_scaler
