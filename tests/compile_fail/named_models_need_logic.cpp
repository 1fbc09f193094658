// expect: named models need a logic of your own \(with_logic\(...\)\)
#include <ppe/engine.hpp>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

int main() {
  torch::nn::Linear g(1, 1), d(1, 1);
  torch::optim::SGD og(g->parameters(), 0.1), od(d->parameters(), 0.1);
  auto trainer = ppe::engine::create_trainer(ppe::training::Models{{"gen", g}, {"dis", d}},
                                             ppe::training::Optimizers{{"gen", og}, {"dis", od}}, 1,
                                             ppe::engine::TrainerOptions());
}
