// PPE's "How to use" loop in C++: the user owns the training loop and wraps
// each step in manager.run_iteration(...). A small linear regression on
// synthetic data, with an extension of its own that prints per-epoch figures.
//
//   manual_loop [--epochs N] [--batch-size B] [--lr LR]

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include <ppe/ppe.hpp>

namespace tr = ppe::training;

// Averages every reported value over the epoch and prints one line per epoch.
// It runs every iteration (to accumulate) and prints when the epoch ends.
struct EpochPrinter {
  using extension_concept = tr::extension_tag;
  static constexpr std::string_view default_name = "EpochPrinter";
  static constexpr int priority = tr::kPriorityReader;

  ppe::reporting::DictSummary summary;

  void operator()(tr::Manager& m) {
    summary.add(m.observation());
    if (m.iteration() % m.iters_per_epoch() != 0) return;
    std::printf("epoch %3lld  iteration %5lld", static_cast<long long>(m.epoch()),
                static_cast<long long>(m.iteration()));
    for (auto [key, value] : summary.compute_mean()) std::printf("  %s %.6f", key.c_str(), value.to_double());
    std::printf("  elapsed_time %.3fs\n", m.elapsed_time());
    std::fflush(stdout);
    summary.reset();
  }
  ppe::State state_dict() const { return ppe::State::dict(); }
};

namespace {
struct Args {
  int epochs = 10;
  int batch_size = 32;
  double lr = 0.1;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + flag);
      return argv[++i];
    };
    if (flag == "--epochs")
      a.epochs = std::stoi(value());
    else if (flag == "--batch-size")
      a.batch_size = std::stoi(value());
    else if (flag == "--lr")
      a.lr = std::stod(value());
    else
      throw std::invalid_argument("unknown flag " + flag + " (expected --epochs, --batch-size, --lr)");
  }
  if (a.epochs < 1 || a.batch_size < 1 || !(a.lr > 0))
    throw std::invalid_argument("--epochs and --batch-size must be >= 1 and --lr > 0");
  return a;
}
}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  torch::manual_seed(0);

  // y = 3 x0 - 2 x1 + 0.5 + noise
  const int n = 512;
  auto x = torch::randn({n, 2});
  auto y = (x.select(1, 0) * 3 - x.select(1, 1) * 2 + 0.5 + 0.1 * torch::randn({n})).unsqueeze(1);
  const int iters_per_epoch = (n + args.batch_size - 1) / args.batch_size;

  torch::nn::Linear model(2, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(args.lr));

  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(args.epochs).iters_per_epoch(iters_per_epoch).out_dir("result"), model,
      optimizer, EpochPrinter{},
      tr::make_extension(
          [&](tr::Manager& m) { m.observation().set("lr", optimizer.param_groups()[0].options().get_lr()); },
          ppe::iterations(1), "observe_lr", tr::priority<tr::kPriorityWriter>));

  while (!manager.finalized()) {
    auto perm = torch::randperm(n);
    for (int i = 0; i < iters_per_epoch && !manager.finalized(); ++i) {
      auto idx = perm.slice(0, i * args.batch_size, std::min(n, (i + 1) * args.batch_size));
      auto xb = x.index_select(0, idx), yb = y.index_select(0, idx);
      manager.run_iteration([&] {
        optimizer.zero_grad();
        auto loss = torch::nn::functional::mse_loss(model->forward(xb), yb);
        ppe::reporting::report({{"main/loss", loss}});
        loss.backward();
        optimizer.step();
      });
    }
  }
  auto w = model->weight.detach();
  std::printf("learned: y = %.3f x0 %+.3f x1 %+.3f\n", w[0][0].item<double>(), w[0][1].item<double>(),
              model->bias.item<double>());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "manual_loop: " << e.what() << "\n";
  return 2;
}
