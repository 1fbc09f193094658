#include "ppe_test.hpp"
// PPE's tests/runtime_tests/test_registry.py (register, fallback, torch.device
// lookup), plus the process-wide registry: a runtime registered under a custom
// device name, and the error for names nobody registered.

#include "runtime_test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_runtime_tests_test_registry {

using namespace runtime_test;
using ppe::runtime::BaseRuntime;
using ppe::runtime::DeviceSpec;
using ppe::runtime::PyTorchRuntime;
using ppe::runtime::RuntimeOptions;
using ppe::runtime::RuntimeRegistry;

namespace {

struct FallbackRuntime : DummyRuntime {
  using DummyRuntime::DummyRuntime;
};
struct MyCustomRuntime : PyTorchRuntime {
  MyCustomRuntime(const DeviceSpec& d, const RuntimeOptions& o) : PyTorchRuntime(d, o, torch::kCPU) {}
};

template <class R>
bool makes(const RuntimeRegistry& registry, const DeviceSpec& device) {
  const auto rt = registry.make(device);
  const auto& made = *rt;  // typeid of a named object: nothing evaluated inside typeid
  return ppe::runtime::runtime_cast<R>(rt) != nullptr && typeid(made) == typeid(R);
}

// "counting": the CPU runtime, counting what it moves.
struct CountingRuntime : PyTorchRuntime {
  CountingRuntime(const DeviceSpec& d, const RuntimeOptions& o) : PyTorchRuntime(d, o, torch::kCPU) {}
  int modules = 0, tensors = 0;
  void move_module(torch::nn::Module& m) override {
    ++modules;
    PyTorchRuntime::move_module(m);
  }
  at::Tensor move_tensor(const at::Tensor& t) override {
    ++tensors;
    return PyTorchRuntime::move_tensor(t);
  }
};

// Removes a process-wide registration at the end of a test.
struct Registered {
  std::string name;
  ~Registered() { ppe::runtime::runtime_registry().remove(name); }
};

}  // namespace

TEST_CASE("registry: register (PPE's test_registry_register)") {
  RuntimeRegistry registry(
      [](const DeviceSpec& d, const RuntimeOptions& o) { return std::make_shared<FallbackRuntime>(d, o); });
  registry.add<MyCustomRuntime>("dummy_device");
  CHECK(makes<MyCustomRuntime>(registry, "dummy_device"));
  CHECK(registry.contains("dummy_device"));
  CHECK(registry.device_types() == std::vector<std::string>{"dummy_device"});
}

TEST_CASE("registry: fallback (PPE's test_registry_fallback)") {
  RuntimeRegistry registry(
      [](const DeviceSpec& d, const RuntimeOptions& o) { return std::make_shared<FallbackRuntime>(d, o); });
  registry.add<MyCustomRuntime>("dummy_device");
  CHECK(makes<FallbackRuntime>(registry, "unknown_device"));
}

TEST_CASE("registry: a torch::Device is looked up by its type (PPE's test_registry_torch_device)") {
  RuntimeRegistry registry(
      [](const DeviceSpec& d, const RuntimeOptions& o) { return std::make_shared<FallbackRuntime>(d, o); });
  registry.add<MyCustomRuntime>("cpu");
  CHECK(makes<MyCustomRuntime>(registry, torch::Device(torch::kCPU)));
  CHECK(makes<MyCustomRuntime>(registry, "cpu:0"));  // "cpu:0" -> type "cpu"
}

TEST_CASE("registry: without a fallback, an unknown name lists the registered ones") {
  RuntimeRegistry registry;
  registry.add<MyCustomRuntime>("a");
  registry.add<DummyRuntime>("b");
  CHECK(error_of([&] { registry.make("c:1"); }) ==
        "ppe::runtime: no runtime is registered for device type 'c' (device 'c:1'); registered device types: ['a', "
        "'b']. Register one with ppe::runtime::runtime_registry().add<YourRuntime>(\"c\")");
  // add() replaces, as PPE's dict assignment does; remove() forgets.
  registry.add<DummyRuntime>("a");
  CHECK(makes<DummyRuntime>(registry, "a"));
  CHECK(registry.device_types() == std::vector<std::string>{"a", "b"});
  CHECK(registry.remove("a"));
  CHECK_FALSE(registry.remove("a"));
  CHECK_FALSE(registry.contains("a"));
}

TEST_CASE("registry: names must be device types") {
  RuntimeRegistry registry;
  CHECK(contains(error_of([&] { registry.add<DummyRuntime>("cuda:0"); }), "not a device type name"));
  CHECK(contains(error_of([&] { registry.add<DummyRuntime>(""); }), "not a device type name"));
  CHECK(contains(error_of([&] { registry.add("x", ppe::runtime::RuntimeFactory{}); }), "empty factory for 'x'"));
  CHECK(contains(error_of([] { DeviceSpec d(""); }), "the device name is empty"));
}

TEST_CASE("registry: the options reach the runtime") {
  RuntimeRegistry registry;
  registry.add<DummyRuntime>("dummy");
  const auto rt = registry.make("dummy", RuntimeOptions().extra(ppe::State::dict({{"opt", 1}})));
  CHECK(rt->options().extra().at("opt").as_int() == 1);
  CHECK(rt->device_spec().str() == "dummy");
}

TEST_CASE("runtime_registry: LibTorch devices fall back to PyTorchRuntime, other names are errors") {
  auto& registry = ppe::runtime::runtime_registry();
  CHECK(makes<PyTorchRuntime>(registry, "cpu"));
  CHECK(makes<PyTorchRuntime>(registry, "meta"));
  CHECK(makes<PyTorchRuntime>(registry, torch::Device(torch::kCUDA, 1)));  // made; moving would need CUDA
  const std::string err = error_of([&] { registry.make("counting"); });
  CHECK(contains(err, "no runtime is registered for device type 'counting' (device 'counting')"));
  CHECK(contains(err, "LibTorch's device types (cpu, cuda, meta, ...) use the fallback runtime"));
}

TEST_CASE("runtime_registry: a custom device name wrapping the CPU runtime, found by ppe::to") {
  ppe::runtime::runtime_registry().add<CountingRuntime>("counting");
  Registered cleanup{"counting"};
  CHECK(contains(error_of([] { ppe::runtime::runtime_registry().make("unknown"); }), "['counting']"));

  MyModule module;
  ppe::to(module, "counting");
  auto rt = ppe::runtime::module_runtime(*module);
  REQUIRE(rt);
  auto* counting = ppe::runtime::runtime_cast<CountingRuntime>(rt);
  REQUIRE(counting);
  CHECK(counting->modules == 1);
  CHECK(rt->device_spec().str() == "counting");
  CHECK(ppe::runtime::module_runtime(*module->layer1) == rt);  // every submodule shares it
  // The engine converts batches with the module's runtime.
  const auto batch = rt->convert_batch(std::vector<torch::Tensor>{torch::ones(1), torch::ones(2)});
  CHECK(counting->tensors == 2);
  CHECK(batch[1].device().is_cpu());
  // A tensor gets a fresh runtime of its own (nothing is recorded for tensors).
  CHECK(ppe::to(torch::ones(1), "counting:3").device().is_cpu());
}

TEST_CASE("runtime_registry: a runtime policy that is no BaseRuntime is adapted") {
  struct Policy {
    int moves = 0;
    void move_module(torch::nn::Module&) { ++moves; }
    at::Tensor move_tensor(const at::Tensor& t) { return t; }
    void train_epoch_begin(torch::nn::Module&) { ++moves; }
  };
  ppe::runtime::runtime_registry().add<Policy>("policy");
  Registered cleanup{"policy"};
  torch::nn::Linear m(1, 1);
  ppe::to(m, "policy");
  auto rt = ppe::runtime::module_runtime(*m);
  auto* policy = ppe::runtime::runtime_cast<Policy>(rt);
  REQUIRE(policy);
  CHECK(policy->moves == 1);
  ppe::runtime::train_epoch_begin(rt, *m);  // through the adapter's virtual hook
  CHECK(policy->moves == 2);
  CHECK(ppe::runtime::runtime_cast<PyTorchRuntime>(rt) == nullptr);
  CHECK(contains(error_of([&] { rt->execute(ppe::runtime::CodeBlock{}, ppe::runtime::TensorDict{}); }), "does not implement execute"));
}

}  // namespace ppe_test_runtime_tests_test_registry
