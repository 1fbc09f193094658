// expect: used as a training logic but does not opt in: declare `using logic_concept = ppe::handler::logic_tag;`
#include <ppe/engine.hpp>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

struct NotALogic {  // has train_step, but no logic_concept tag
  template <class B>
  ppe::handler::Outputs train_step(const ppe::training::Models&, const ppe::training::Optimizers&, std::int64_t, B&) {
    return {};
  }
};

int main() {
  torch::nn::Linear model(1, 1);
  torch::optim::SGD opt(model->parameters(), 0.1);
  auto logic = ppe::engine::with_logic(NotALogic{});
  (void)logic;
}
