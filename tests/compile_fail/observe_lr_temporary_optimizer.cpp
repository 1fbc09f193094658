// expect: observe_lr holds the optimizer by reference, so a temporary would dangle\. Fix: pass an optimizer variable
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <ppe/training/extensions/value_observation.hpp>

int main() {
  torch::nn::Linear model(1, 1);
  auto e = ppe::training::extensions::observe_lr(torch::optim::SGD(model->parameters(), torch::optim::SGDOptions(0.1)));
}
