#include "ppe_test.hpp"
// PPE's tests/runtime_tests/test_to.py. PPE's "cuda:0" tensor case uses "meta"
// here (the second LibTorch device on a CPU-only machine); modules stay on the
// CPU, since LibTorch's Module::to cannot move parameters to "meta".

#include <sstream>

#include "runtime_test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_runtime_tests_test_to {

using namespace runtime_test;
using ppe::runtime::RuntimeOptions;

namespace {

// PPE's MyRuntime: records, moves nothing.
struct MyRuntime : DummyRuntime {
  using DummyRuntime::DummyRuntime;
};

// A module's handle and a tensor are accepted; anything else does not compile
// (PPE: ValueError("Unsupported type for module_or_tensor")).
template <class T>
concept movable_by_ppe_to = requires(T t) { ppe::to(t, "cpu"); };
static_assert(movable_by_ppe_to<torch::Tensor>);
static_assert(movable_by_ppe_to<torch::nn::Linear>);
static_assert(movable_by_ppe_to<std::shared_ptr<torch::nn::LinearImpl>>);
static_assert(!movable_by_ppe_to<std::string>);
static_assert(!movable_by_ppe_to<int>);

}  // namespace

TEST_CASE("ppe::to: a tensor (PPE's test_tensor_ppe_to)") {
  const auto out = ppe::to(torch::zeros(10), "meta");
  CHECK(out.device().str() == "meta");
  CHECK(ppe::to(torch::zeros(1), torch::Device(torch::kCPU)).device().is_cpu());
}

TEST_CASE("ppe::to: a module is moved and every submodule records the runtime (PPE's test_module_ppe_to)") {
  MyModule module;
  ppe::to(module, "cpu:0");
  for (const auto& p : module->parameters()) CHECK(p.device().is_cpu());
  const auto rt = ppe::runtime::module_runtime(*module);
  REQUIRE(rt);
  CHECK(ppe::runtime::runtime_cast<ppe::runtime::PyTorchRuntime>(rt) != nullptr);
  CHECK(ppe::runtime::module_runtime(*module->layer1) == rt);
  CHECK(ppe::runtime::module_runtime(*module->layer2) == rt);
}

TEST_CASE("ppe::to: a submodule with a given runtime class and options (PPE's test_module_split_ppe_to)") {
  MyModule module;
  ppe::to<MyRuntime>(module->layer2, "dummy", RuntimeOptions().extra(ppe::State::dict({{"opt", 1}})));
  CHECK(module->layer1->weight.device().is_cpu());
  CHECK(ppe::runtime::module_runtime(*module->layer1) == nullptr);
  CHECK(ppe::runtime::module_runtime(*module) == nullptr);
  const auto rt2 = ppe::runtime::module_runtime(*module->layer2);
  REQUIRE(rt2);
  CHECK(ppe::runtime::runtime_cast<MyRuntime>(rt2) != nullptr);
  CHECK(rt2->device_spec().str() == "dummy");
  CHECK(rt2->options().extra().at("opt").as_int() == 1);
}

TEST_CASE("ppe::to: handles and references") {
  auto impl = std::make_shared<torch::nn::LinearImpl>(torch::nn::LinearOptions(2, 2));
  auto same = ppe::to(impl, "cpu");
  CHECK(same.get() == impl.get());
  CHECK(ppe::runtime::runtime_cast<ppe::runtime::PyTorchRuntime>(ppe::runtime::module_runtime(*impl)) != nullptr);
  torch::nn::Module& ref = *impl;
  CHECK(&ppe::to<MyRuntime>(ref, "dummy") == &ref);
  CHECK(ppe::runtime::runtime_cast<MyRuntime>(ppe::runtime::module_runtime(*impl)) != nullptr);  // replaced
  // A module on the stack has no shared ownership to record the runtime by.
  torch::nn::LinearImpl on_stack(torch::nn::LinearOptions(1, 1));
  CHECK(contains(error_of([&] { ppe::to(on_stack, "cpu"); }), "is not owned by a std::shared_ptr"));
  CHECK(on_stack.weight.device().is_cpu());  // refused before moving
  CHECK(ppe::runtime::module_runtime(on_stack) == nullptr);
  CHECK(contains(error_of([] { ppe::to(std::shared_ptr<torch::nn::LinearImpl>(), "cpu"); }), "null"));
}

TEST_CASE("ppe::to: the record ends with the module") {
  std::weak_ptr<ppe::runtime::BaseRuntime> runtime;
  {
    torch::nn::Linear m(1, 1);
    ppe::to<MyRuntime>(m, "dummy");
    runtime = ppe::runtime::module_runtime(*m);
    CHECK_FALSE(runtime.expired());
  }
  // The next record purges the destroyed module's entry and releases its runtime.
  torch::nn::Linear other(1, 1);
  ppe::to(other, "cpu");
  CHECK(runtime.expired());
}

TEST_CASE("ppe::to: the module is unchanged for saving (PPE's test_save_module)") {
  MyModule module;
  const auto keys_before = module->named_parameters().keys();
  ppe::to<MyRuntime>(module, "dummy");
  CHECK(module->named_parameters().keys() == keys_before);
  CHECK(module->children().size() == 2);  // nothing was registered on the module
  std::stringstream buffer;
  torch::save(module, buffer);
  MyModule loaded;
  torch::load(loaded, buffer);
  for (const auto& item : module->named_parameters())
    CHECK(torch::equal(loaded->named_parameters()[item.key()], item.value()));
  CHECK(ppe::runtime::module_runtime(*loaded) == nullptr);
}

TEST_CASE("ppe::to: an unknown device name is a clear error and nothing is recorded") {
  MyModule module;
  CHECK(contains(error_of([&] { ppe::to(module, "nowhere:0"); }),
                 "no runtime is registered for device type 'nowhere' (device 'nowhere:0')"));
  CHECK(ppe::runtime::module_runtime(*module) == nullptr);
}

}  // namespace ppe_test_runtime_tests_test_to
