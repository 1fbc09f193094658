#pragma once
// Modules and runtimes shared by the runtime tests (PPE's MyModule, SplitModule, DummyRuntime).

#include <ppe/runtime/base_runtime.hpp>
#include <ppe/runtime/module_runtime.hpp>
#include <ppe/runtime/pytorch_runtime.hpp>
#include <ppe/runtime/registry.hpp>
#include <ppe/runtime/runtime.hpp>
#include <ppe/runtime/to.hpp>

#include <exception>
#include <string>

#include "test_util.hpp"

namespace runtime_test {

using ppe_test::error_of;

// PPE's DummyRuntime: moves nothing.
struct DummyRuntime : ppe::runtime::BaseRuntime {
  using BaseRuntime::BaseRuntime;
  void move_module(torch::nn::Module&) override {}
  at::Tensor move_tensor(const at::Tensor& t) override { return t; }
};

// PPE's MyModule: two Linear(10, 10).
struct MyModuleImpl : torch::nn::Module {
  torch::nn::Linear layer1{nullptr}, layer2{nullptr};
  MyModuleImpl() {
    layer1 = register_module("layer1", torch::nn::Linear(10, 10));
    layer2 = register_module("layer2", torch::nn::Linear(10, 10));
  }
};
TORCH_MODULE(MyModule);

// PPE's SplitModule: layer2 gets its own runtime in the constructor.
struct SplitModuleImpl : torch::nn::Module {
  torch::nn::Linear layer1{nullptr}, layer2{nullptr};
  SplitModuleImpl() {
    layer1 = register_module("layer1", torch::nn::Linear(10, 10));
    layer2 = register_module("layer2", torch::nn::Linear(10, 10));
    ppe::to<DummyRuntime>(layer2, "dummy");
  }
};
TORCH_MODULE(SplitModule);

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace runtime_test
