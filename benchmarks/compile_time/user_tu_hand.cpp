// Compile-time benchmark, user TU by hand: user_tu_ppe.cpp's program without
// ppe: the loss mean per epoch written as a JSON log, the learning rate, the
// schedule, a progress line, a printed row, an epoch checkpoint with
// torch::save, and the two lambdas' work inline.

#include <torch/torch.h>

#include "user_tu_model.hpp"

#include <cstdio>
#include <fstream>
#include <string>

int main() {
  Net model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::StepLR scheduler(optimizer, 3, 0.5);
  const auto x = torch::randn({64, 8});
  const auto y = torch::randn({64, 1});
  double best = 1e300;
  std::string log = "[";
  const int epochs = 4, iters = 16;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    double sum = 0;
    for (int i = 0; i < iters; ++i) {
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(x), y);
      loss.backward();
      optimizer.step();
      const double l = loss.item<double>();
      sum += l;
      best = std::min(best, l);
      std::printf("\r%d iterations", (epoch - 1) * iters + i + 1);
    }
    const double lr = optimizer.param_groups()[0].options().get_lr();
    std::printf("\n%d %d %g %g\nepoch %d\n", epoch, epoch * iters, sum / iters, lr, epoch);
    log += (epoch > 1 ? ",\n" : "\n") + std::string("    {\"main/loss\": ") + std::to_string(sum / iters) +
           ", \"epoch\": " + std::to_string(epoch) + ", \"lr\": " + std::to_string(lr) + "}";
    std::ofstream("user_tu_log") << log << "\n]";
    scheduler.step();
    torch::save(model, "user_tu_model_" + std::to_string(epoch) + ".pt");
  }
  return best < 1e300 ? 0 : 1;
}
