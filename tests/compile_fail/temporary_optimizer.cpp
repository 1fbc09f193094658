// expect: an optimizer is held by reference, so a temporary would dangle\. Fix: pass an optimizer variable
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <ppe/training.hpp>

int main() {
  torch::nn::Linear model(1, 1);
  auto opts = ppe::training::ManagerOptions().max_epochs(1).iters_per_epoch(1);
  ppe::training::ExtensionsManager m(opts, model,
                                     torch::optim::SGD(model->parameters(), torch::optim::SGDOptions(0.1)));
}
