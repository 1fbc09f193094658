// expect: used as a runtime but has no `at::Tensor move_tensor\(const at::Tensor&\)`
#include <ppe/runtime.hpp>

struct Runtime {
  void move_module(torch::nn::Module&) {}
};

static_assert(ppe::runtime::check_runtime<Runtime>());

int main() {}
