// The core as a downstream program uses it (ppe::ppe / ppe, tests/install): two epochs of
// three empty iterations, with an extension that runs once per epoch.
#include <ppe/ppe.hpp>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <iostream>
int main() {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  int calls = 0;
  auto manager = ppe::training::ExtensionsManager(
      ppe::training::ManagerOptions().max_epochs(2).iters_per_epoch(3).out_dir("consumer_result"),
      model, opt,
      ppe::training::make_extension([&](ppe::training::Manager&) { ++calls; }, ppe::epochs(1), "count"));
  while (!manager.finalized()) manager.run_iteration([&] {});
  std::cout << "iterations=" << manager.iteration() << " calls=" << calls << "\n";
  return (manager.iteration() == 6 && calls == 2) ? 0 : 1;
}
