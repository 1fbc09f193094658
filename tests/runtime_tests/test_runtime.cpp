#include "ppe_test.hpp"
// PPE's tests/runtime_tests/test_runtime.py, plus the C++ protocol: the
// runtime concept and hook dispatch, batch conversion of nested structures,
// PyTorchRuntime::execute (PPE's CodeBlock execution) and the autocast guard.
// PPE moves between "cpu" and "cuda"; on this CPU-only machine the second
// device is "meta" (tensors without storage), which LibTorch moves to as to
// any device.

#include <ppe/amp/grad_scaler.hpp>
#include <ppe/runtime/autocast.hpp>
#include <ppe/runtime/convert_batch.hpp>

#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime_test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_runtime_tests_test_runtime {

using namespace runtime_test;
using ppe::runtime::AnyRef;
using ppe::runtime::AutocastGuard;
using ppe::runtime::CodeBlock;
using ppe::runtime::PyTorchRuntime;
using ppe::runtime::RuntimeOptions;
using ppe::runtime::TensorDict;

namespace {

bool on(const torch::Tensor& t, const std::string& type) { return t.device().str().rfind(type, 0) == 0; }

// A user batch type that converts itself (found by argument-dependent lookup).
struct UserBatch {
  torch::Tensor image;
  int label = 0;
};
template <class Move>
void ppe_convert_batch(UserBatch& b, const Move& move) {
  b.image = move(b.image);
}

// A runtime policy that is no BaseRuntime: moves and two hooks, counted.
struct CountingPolicy {
  int moves = 0, pre_steps = 0, epochs = 0;
  std::int64_t last_idx = -1;
  void move_module(torch::nn::Module&) { ++moves; }
  torch::Tensor move_tensor(const torch::Tensor& t) {
    ++moves;
    return t;
  }
  // Concrete types are fine: the engine passes its own objects.
  void train_pre_step(const std::string& trainer, torch::nn::Module&, std::int64_t idx, const torch::Tensor&) {
    CHECK(trainer == "trainer");
    ++pre_steps;
    last_idx = idx;
  }
  void train_epoch_begin(torch::nn::Module&) { ++epochs; }
};

}  // namespace

// ---- the concept ------------------------------------------------------------

static_assert(ppe::runtime::runtime<PyTorchRuntime>);
static_assert(ppe::runtime::runtime<DummyRuntime>);
static_assert(ppe::runtime::runtime<CountingPolicy>);
static_assert(!ppe::runtime::runtime<int>);
static_assert(!ppe::runtime::runtime<std::shared_ptr<ppe::runtime::BaseRuntime>>);  // a handle; dispatch derefs it
static_assert(ppe::runtime::hooks::train_pre_step<PyTorchRuntime>);
static_assert(ppe::runtime::hooks::execute<PyTorchRuntime>);
static_assert(ppe::runtime::hooks::state_dict<PyTorchRuntime>);
static_assert(!ppe::runtime::hooks::train_post_step<CountingPolicy>);
static_assert(ppe::runtime::check_runtime<CountingPolicy>());

// ---- PPE's TestPytorchRuntime ----------------------------------------------

TEST_CASE("PyTorchRuntime: convert_batch (PPE's table: dict, list, tensor, other object)") {
  for (const std::string device : {"cpu", "meta"}) {
    CAPTURE(device);
    PyTorchRuntime rt(device);
    const auto dict = rt.convert_batch(std::map<std::string, torch::Tensor>{{"x", torch::zeros(1)}});
    for (const auto& [k, v] : dict) CHECK(on(v, device));
    const auto list = rt.convert_batch(std::vector<torch::Tensor>{torch::zeros(1)});
    for (const auto& v : list) CHECK(on(v, device));
    CHECK(on(rt.convert_batch(torch::zeros(1)), device));
    // A non-tensor comes back unchanged.
    const std::string object = "object()";
    CHECK(rt.convert_batch(object) == object);
  }
}

TEST_CASE("PyTorchRuntime: move_module and move_tensor") {
  for (const std::string device : {"cpu", "meta"}) {
    CAPTURE(device);
    PyTorchRuntime rt(device);
    CHECK(on(rt.move_tensor(torch::zeros(10)), device));
  }
  // Modules: LibTorch's Module::to cannot move parameters to "meta" (set_data refuses the tensor type),
  // so on this machine the module case runs on the CPU only.
  PyTorchRuntime cpu("cpu");
  torch::nn::Linear module(1, 1);
  cpu.move_module(*module);
  CHECK(on(module->weight, "cpu"));
  PyTorchRuntime rt("meta");
  CHECK_FALSE(rt.move_tensor(torch::Tensor()).defined());  // undefined stays undefined
  CHECK(rt.device_spec().str() == "meta");
  CHECK(rt.device() == c10::Device(c10::kMeta));
  CHECK(PyTorchRuntime(torch::kCPU).device_spec().str() == "cpu");
}

TEST_CASE("PyTorchRuntime: a device LibTorch does not know is refused") {
  CHECK(contains(error_of([] { PyTorchRuntime rt("counting"); }), "'counting' is not a LibTorch device"));
  // ... unless a LibTorch device is given for it (a custom name placed on the CPU).
  PyTorchRuntime rt("counting", {}, torch::kCPU);
  CHECK(rt.device_spec().str() == "counting");
  CHECK(on(rt.move_tensor(torch::zeros(1)), "cpu"));
}

TEST_CASE("convert_batch: nested structures, Example, and user types; non-tensors unchanged") {
  PyTorchRuntime rt("meta");
  using Nested = std::tuple<torch::Tensor, std::pair<int, torch::Tensor>,
                            std::vector<std::unordered_map<std::string, torch::Tensor>>, std::optional<torch::Tensor>,
                            std::array<torch::Tensor, 2>, std::string>;
  Nested batch{torch::ones(2),
               {7, torch::ones(1)},
               {{{"a", torch::ones(1)}}, {{"b", torch::ones(1)}}},
               torch::ones(3),
               {torch::ones(1), torch::ones(1)},
               "label"};
  const Nested out = ppe::runtime::convert_batch(rt, batch);
  CHECK(on(std::get<0>(out), "meta"));
  CHECK(std::get<1>(out).first == 7);
  CHECK(on(std::get<1>(out).second, "meta"));
  CHECK(on(std::get<2>(out)[0].at("a"), "meta"));
  CHECK(on(std::get<2>(out)[1].at("b"), "meta"));
  CHECK(on(*std::get<3>(out), "meta"));
  CHECK(on(std::get<4>(out)[1], "meta"));
  CHECK(std::get<5>(out) == "label");
  CHECK(on(std::get<0>(batch), "cpu"));  // the input is not modified

  const auto ex = ppe::runtime::convert_batch(rt, torch::data::Example<>(torch::ones(2), torch::ones(1)));
  CHECK(on(ex.data, "meta"));
  CHECK(on(ex.target, "meta"));
  const auto unlabeled = rt.convert_batch(torch::data::Example<torch::Tensor, torch::data::example::NoTarget>(
      torch::ones(1)));
  CHECK(on(unlabeled.data, "meta"));
  TensorDict ordered;
  ordered.insert("z", torch::ones(1));
  ordered.insert("a", torch::ones(1));
  const auto od = rt.convert_batch(ordered);
  CHECK(od.keys() == std::vector<std::string>{"z", "a"});
  CHECK(on(od["a"], "meta"));
  const auto user = rt.convert_batch(UserBatch{torch::ones(1), 3});
  CHECK(on(user.image, "meta"));
  CHECK(user.label == 3);
  std::vector<torch::data::Example<>> examples{{torch::ones(1), torch::ones(1)}};
  CHECK(on(ppe::runtime::convert_batch_with(examples, [](const torch::Tensor& t) { return t.to(torch::kMeta); })[0]
               .target,
           "meta"));
}

// ---- named_runtime_modules (PPE's container tests) ---------------------------

TEST_CASE("named_runtime_modules: a module without runtimes has none") {
  MyModule module;
  CHECK(ppe::runtime::named_runtime_modules(*module).empty());
}

TEST_CASE("named_runtime_modules: a split module yields the submodule that has one") {
  SplitModule module;
  const auto found = ppe::runtime::named_runtime_modules(*module);
  REQUIRE(found.size() == 1);
  CHECK(found[0].first == "layer2");
  CHECK(found[0].second.get() == module->layer2.get());
}

TEST_CASE("named_runtime_modules: recursive search, and only direct children without recursion") {
  struct MultiLevelSplitModuleImpl : torch::nn::Module {
    SplitModule layer1{nullptr}, layer2{nullptr};
    MultiLevelSplitModuleImpl() {
      layer1 = register_module("layer1", SplitModule());
      layer2 = register_module("layer2", SplitModule());
    }
  };
  auto module = std::make_shared<MultiLevelSplitModuleImpl>();
  const auto found = ppe::runtime::named_runtime_modules(*module);
  REQUIRE(found.size() == 2);
  CHECK(found[0].first == "layer2");  // PPE names the child, not the dotted path
  CHECK(found[0].second.get() == module->layer1->layer2.get());
  CHECK(found[1].first == "layer2");
  CHECK(found[1].second.get() == module->layer2->layer2.get());
  CHECK(ppe::runtime::named_runtime_modules(*module, "", /*recursive=*/false).empty());
}

TEST_CASE("named_runtime_modules: the top module itself, and nested runtimes are ignored") {
  SplitModule module;
  ppe::to<DummyRuntime>(module, "outer");  // now every submodule has the outer runtime
  const auto found = ppe::runtime::named_runtime_modules(*module, "main");
  REQUIRE(found.size() == 1);
  CHECK(found[0].first == "main");
  CHECK(found[0].second.get() == module.get());
}

// ---- hooks and dispatch ------------------------------------------------------

TEST_CASE("dispatch: hooks a policy declares are called, absent ones are no-ops") {
  CountingPolicy p;
  torch::nn::Linear m(1, 1);
  const std::string trainer = "trainer";
  ppe::runtime::train_pre_step(p, trainer, *m, 4, torch::zeros(1));
  ppe::runtime::train_post_step(p, trainer, *m, 4, torch::zeros(1), 1.5);  // absent: no-op
  ppe::runtime::train_epoch_begin(p, *m);
  ppe::runtime::train_epoch_end(p, *m);
  ppe::runtime::initialize_module(p, *m, std::vector<int>{1});
  ppe::runtime::train_validation_begin(p, *m);
  ppe::runtime::train_validation_end(p, *m);
  ppe::runtime::eval_pre_step(p, trainer, *m, 0, 1);
  ppe::runtime::eval_post_step(p, trainer, *m, 0, 1, 2);
  ppe::runtime::train_cleanup(p, *m);
  CHECK(p.pre_steps == 1);
  CHECK(p.last_idx == 4);
  CHECK(p.epochs == 1);
  CHECK(ppe::runtime::runtime_state_dict(p) == ppe::State::dict());
  CHECK(ppe::runtime::convert_batch(p, torch::zeros(1)).numel() == 1);
  CHECK(p.moves == 1);
}

TEST_CASE("dispatch: virtual hooks of a BaseRuntime get AnyRef views of the engine's objects") {
  struct Recorder : ppe::runtime::PyTorchRuntime {
    using PyTorchRuntime::PyTorchRuntime;
    std::vector<std::string> calls;
    void initialize_module(torch::nn::Module&, AnyRef loader, torch::optim::Optimizer* opt) override {
      calls.push_back("initialize_module " + std::to_string(loader.get<std::vector<int>>().size()) +
                      (opt ? " opt" : " no-opt"));
    }
    void train_pre_step(AnyRef trainer, torch::nn::Module&, std::int64_t idx, AnyRef batch) override {
      calls.push_back("train_pre_step " + trainer.get<std::string>() + " " + std::to_string(idx) + " " +
                      std::to_string(batch.get<torch::data::Example<>>().data.item<float>()));
    }
    void train_post_step(AnyRef, torch::nn::Module&, std::int64_t idx, AnyRef, AnyRef outs) override {
      calls.push_back("train_post_step " + std::to_string(idx) + " " + std::to_string(outs.get<double>()));
    }
    void eval_post_step(AnyRef evaluator, torch::nn::Module&, std::int64_t, AnyRef, AnyRef) override {
      calls.push_back(std::string("eval_post_step ") + (evaluator.is<int>() ? "int" : "?"));
    }
    void train_cleanup(torch::nn::Module&) override { calls.push_back("train_cleanup"); }
    ppe::State state_dict() const override { return ppe::State::dict({{"calls", calls.size()}}); }
  };
  std::shared_ptr<ppe::runtime::BaseRuntime> rt = std::make_shared<Recorder>("cpu");
  torch::nn::Linear m(1, 1);
  torch::optim::SGD opt(m->parameters(), 0.1);
  std::string trainer = "T";
  const torch::data::Example<> batch(torch::full({1}, 2.0), torch::zeros(1));
  ppe::runtime::initialize_module(rt, *m, std::vector<int>{1, 2, 3}, &opt);
  ppe::runtime::train_pre_step(rt, trainer, *m, 7, batch);
  ppe::runtime::train_post_step(rt, trainer, *m, 7, batch, 0.5);
  ppe::runtime::eval_post_step(rt, 3, *m, 0, batch, batch);
  ppe::runtime::train_cleanup(rt, *m);
  const auto& calls = dynamic_cast<Recorder&>(*rt).calls;
  CHECK(calls == std::vector<std::string>{"initialize_module 3 opt", "train_pre_step T 7 2.000000",
                                          "train_post_step 7 0.500000", "eval_post_step int", "train_cleanup"});
  CHECK(ppe::runtime::runtime_state_dict(rt).at("calls").as_int() == 5);
  // A hook asking for the wrong type gets a clear error.
  CHECK(contains(error_of([&] { ppe::runtime::train_post_step(rt, trainer, *m, 1, batch, std::string("x")); }),
                 "requested double, but the value is std::"));
}

TEST_CASE("AnyRef: empty, typed access, constness") {
  AnyRef empty;
  CHECK_FALSE(empty.has_value());
  CHECK(empty.type() == typeid(void));
  CHECK(contains(error_of([&] { (void)empty.get<int>(); }), "the value is empty"));
  int x = 3;
  AnyRef r(x);
  CHECK(r.is<int>());
  CHECK(r.get<int>() == 3);
  r.get_mutable<int>() = 4;
  CHECK(x == 4);
  CHECK(r.get_if<double>() == nullptr);
  const int cx = 5;
  AnyRef c(cx);
  CHECK(c.get<int>() == 5);
  CHECK(contains(error_of([&] { c.get_mutable<int>() = 1; }), "was passed as const"));
}

TEST_CASE("BaseRuntime: options, default hooks, and execute left to subclasses") {
  DummyRuntime rt("dummy", RuntimeOptions().extra(ppe::State::dict({{"opt", 1}})));
  CHECK(rt.device_spec().str() == "dummy");
  CHECK(rt.device_spec().type() == "dummy");
  CHECK(rt.options().extra().at("opt").as_int() == 1);
  CHECK(rt.state_dict() == ppe::State::dict());
  CHECK(contains(error_of([&] { rt.execute(CodeBlock{}, TensorDict{}); }), "does not implement execute"));
}

// ---- execute (PPE's PyTorchRuntime.execute) ----------------------------------

namespace {
struct Regression {
  torch::nn::Linear model{torch::nn::LinearOptions(1, 1).bias(false)};
  torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(0.5)};
  Regression() {
    torch::NoGradGuard g;
    model->weight.fill_(1.0);
  }
  // Outputs: "loss" = (w x)^2 (one float element with a grad_fn: back-propagated), "count" (an
  // integer tensor) and "detached" (no grad_fn): never back-propagated by PPE's rule.
  CodeBlock block() {
    CodeBlock b;
    b.func = [this](const TensorDict& batch) {
      TensorDict out;
      const auto y = model->forward(batch["x"]);
      out.insert("loss", y.pow(2).sum());
      out.insert("count", torch::ones({1}, torch::kLong));
      out.insert("detached", y.detach().sum());
      return out;
    };
    b.optimizers = {&opt};
    return b;
  }
  float w() const { return model->weight.item<float>(); }
};
TensorDict batch_x(double x) {
  TensorDict d;
  d.insert("x", torch::full({1, 1}, x));
  return d;
}
}  // namespace

TEST_CASE("PyTorchRuntime::execute: zero_grad, forward, backward of the scalar outputs, step") {
  Regression r;
  PyTorchRuntime rt("cpu");
  r.model->weight.mutable_grad() = torch::full({1, 1}, 100.0);  // stale: execute zeroes it first
  const TensorDict out = rt.execute(r.block(), batch_x(2.0));
  CHECK(out.keys() == std::vector<std::string>{"loss", "count", "detached"});
  CHECK(out["loss"].item<float>() == 4.0f);  // (1 * 2)^2
  // d/dw (w x)^2 = 2 w x^2 = 8; w = 1 - 0.5 * 8 = -3.
  CHECK(r.model->weight.grad().item<float>() == 8.0f);
  CHECK(r.w() == -3.0f);

  // backprop=false: forward only, the optimizer still steps on zeroed gradients (SGD: no change).
  Regression r2;
  auto b = r2.block();
  b.backprop = false;
  rt.execute(b, batch_x(2.0));
  CHECK(r2.w() == 1.0f);
  // No optimizers: outputs only.
  Regression r3;
  auto b3 = r3.block();
  b3.optimizers.clear();
  rt.execute(b3, batch_x(2.0));
  CHECK(r3.w() == 1.0f);
  CHECK(r3.model->weight.grad().item<float>() == 8.0f);
  // An unknown backprop_from names the outputs.
  auto b4 = r3.block();
  b4.backprop_from = "los";
  CHECK(error_of([&] { rt.execute(b4, batch_x(2.0)); }) ==
        "ppe::runtime::PyTorchRuntime::execute: backprop_from 'los' is not an output; outputs: ['loss', 'count', "
        "'detached']");
}

TEST_CASE("PyTorchRuntime::execute: through a grad scaler") {
  auto scaler = std::make_shared<ppe::amp::GradScaler>(ppe::amp::GradScalerOptions().growth_interval(1));
  PyTorchRuntime rt("cpu", RuntimeOptions().grad_scaler(scaler));
  CHECK(rt.grad_scaler() == scaler);
  Regression r;
  rt.execute(r.block(), batch_x(2.0));
  CHECK(r.w() == -3.0f);                   // unscaled gradient 8, as without a scaler
  CHECK(scaler->get_scale() == 131072.0);  // growth_interval 1: 2^16 * 2 after the clean step
  // An overflowing loss: the step is skipped and the scale backs off.
  Regression big;
  rt.execute(big.block(), batch_x(1e17));  // grad 2 x^2 * 2^17 = 2.6e39 > FLT_MAX
  CHECK(big.w() == 1.0f);
  CHECK(scaler->get_scale() == 65536.0);
  // Two back-propagated outputs cannot share one scale.
  Regression r2;
  auto b = r2.block();
  auto f = b.func;
  b.func = [f](const TensorDict& batch) {
    auto out = f(batch);
    out.insert("loss2", out["loss"] * 2);
    return out;
  };
  CHECK(contains(error_of([&] { rt.execute(b, batch_x(1.0)); }), "exactly one output"));
  b.backprop_from = "loss2";
  CHECK_NOTHROW(rt.execute(b, batch_x(1.0)));
}

TEST_CASE("PyTorchRuntime::execute: records each step in the block's step counters, applied or not") {
  SUBCASE("through a grad scaler: the overflowing step is recorded as not applied") {
    auto scaler = std::make_shared<ppe::amp::GradScaler>();
    PyTorchRuntime rt("cpu", RuntimeOptions().grad_scaler(scaler));
    ppe::amp::StepCounter counter;
    Regression r;
    auto b = r.block();
    b.step_counters = {&counter};
    rt.execute(b, batch_x(2.0));
    rt.execute(b, batch_x(1e17));  // grad 2 x^2 * 2^16 > FLT_MAX: skipped
    CHECK(counter.recorded() == 2);
    CHECK(counter.count() == 1);
  }
  SUBCASE("without a scaler: every optimizer's step") {
    PyTorchRuntime rt("cpu");
    Regression r;
    torch::optim::SGD other(r.model->parameters(), torch::optim::SGDOptions(0.0));
    ppe::amp::StepCounter c0, c1;
    auto b = r.block();
    b.optimizers.push_back(&other);
    b.step_counters = {&c0, &c1};
    rt.execute(b, batch_x(2.0));
    CHECK(c0.count() == 1);
    CHECK(c1.count() == 1);
    b.step_counters = {&c0};
    CHECK(error_of([&] { rt.execute(b, batch_x(2.0)); }) ==
          "ppe::runtime::PyTorchRuntime::execute: the code block has 1 step counters for 2 optimizers (give none or "
          "one each)");
    b.step_counters = {&c0, nullptr};
    CHECK(contains(error_of([&] { rt.execute(b, batch_x(2.0)); }), "a null step counter"));
  }
}

TEST_CASE("PyTorchRuntime::execute: the autocast option runs the forward in bfloat16 on the CPU") {
  PyTorchRuntime off("cpu");
  PyTorchRuntime on_cpu("cpu", RuntimeOptions().autocast(true));
  auto probe = [](const TensorDict& batch) {
    TensorDict out;
    out.insert("mm", torch::mm(batch["x"], batch["x"]));
    return out;
  };
  CodeBlock b;
  b.func = probe;
  b.backprop = false;
  CHECK((off.execute(b, batch_x(1.0))["mm"].scalar_type() == torch::kFloat));
  CHECK((on_cpu.execute(b, batch_x(1.0))["mm"].scalar_type() == torch::kBFloat16));
  CHECK_FALSE(ppe::detail::compat::autocast_enabled(torch::kCPU));  // restored after the step
  // PPE raises in the constructor for an unusable autocast request.
  CHECK(contains(error_of([] {
                   PyTorchRuntime rt("cpu", RuntimeOptions().autocast(
                                                ppe::runtime::AutocastOptions(true).dtype(torch::kDouble)));
                 }),
                 "CPU autocast runs in bfloat16"));
}

// ---- AutocastGuard -----------------------------------------------------------

TEST_CASE("AutocastGuard: scoped, nested, restored") {
  const auto a = torch::ones({2, 2});
  CHECK_FALSE(ppe::detail::compat::autocast_enabled(torch::kCPU));
  {
    AutocastGuard outer(torch::kCPU);
    CHECK(ppe::detail::compat::autocast_enabled(torch::kCPU));
    CHECK((torch::mm(a, a).scalar_type() == torch::kBFloat16));
    {
      AutocastGuard inner(torch::kCPU, /*enabled=*/false);
      CHECK_FALSE(ppe::detail::compat::autocast_enabled(torch::kCPU));
      CHECK((torch::mm(a, a).scalar_type() == torch::kFloat));
    }
    CHECK(ppe::detail::compat::autocast_enabled(torch::kCPU));
    CHECK((ppe::detail::compat::autocast_dtype(torch::kCPU) == torch::kBFloat16));
  }
  CHECK_FALSE(ppe::detail::compat::autocast_enabled(torch::kCPU));
  CHECK((torch::mm(a, a).scalar_type() == torch::kFloat));
  {
    AutocastGuard cache_off(ppe::runtime::AutocastOptions(true).cache_enabled(false), torch::kCPU);
    CHECK_FALSE(at::autocast::is_autocast_cache_enabled());
  }
  CHECK(at::autocast::is_autocast_cache_enabled());
}

TEST_CASE("AutocastGuard: unsupported requests raise") {
  CHECK(contains(error_of([] { AutocastGuard g(torch::kCPU, true, torch::kDouble); }),
                 "CPU autocast runs in bfloat16 (and in float16 from LibTorch 2.4), got Double"));
  // float16 is refused only where LibTorch's CPU autocast lacks it.
  CHECK(contains(error_of([] { AutocastGuard g(torch::kCPU, true, torch::kHalf); }), "got Half") ==
        !ppe::detail::compat::cpu_autocast_supports(torch::kHalf));
  CHECK(contains(error_of([] { AutocastGuard g(torch::kMeta); }), "supports the device types 'cpu' and 'cuda'"));
  if (!at::hasCUDA()) {
    CHECK(contains(error_of([] { AutocastGuard g(torch::kCUDA); }), "CUDA is not available"));
    CHECK_NOTHROW(AutocastGuard(torch::kCUDA, /*enabled=*/false));  // a disabled region is fine anywhere
  }
  CHECK_FALSE(ppe::detail::compat::autocast_enabled(torch::kCPU));
  CHECK((ppe::detail::compat::autocast_dtype(torch::kCPU) == torch::kBFloat16));
}

}  // namespace ppe_test_runtime_tests_test_runtime
