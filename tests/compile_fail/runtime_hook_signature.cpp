// expect: the runtime declares train_epoch_begin but the engine cannot call it with these arguments; expected: void train_epoch_begin\(torch::nn::Module&\)
#include <ppe/runtime.hpp>

struct Runtime {
  void move_module(torch::nn::Module&) {}
  at::Tensor move_tensor(const at::Tensor& t) { return t; }
  void train_epoch_begin(int) {}  // wrong argument
};

int main() {
  Runtime rt;
  torch::nn::Module m;
  ppe::runtime::train_epoch_begin(rt, m);
}
