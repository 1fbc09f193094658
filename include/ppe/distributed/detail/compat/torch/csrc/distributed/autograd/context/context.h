#pragma once
// Stands in for PyTorch's distributed-autograd context header, which Debian's
// libtorch-dev omits although c10d/reducer.hpp includes it. The reducer uses
// two names from it, both plain aliases in PyTorch 1.13; nothing of the RPC
// framework is declared or needed. The directory holding this file comes last
// in the include path (-idirafter), so a LibTorch that ships the real header
// uses it instead.
// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).
#include <functional>
#include <memory>

namespace at {
class Tensor;
}

namespace torch::distributed::autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace torch::distributed::autograd
