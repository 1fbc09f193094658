// PPE's "How to use" loop in C++: the user owns the training loop and wraps
// each step in manager.run_iteration(...). A small linear regression on
// synthetic data, with PPE's standard extensions (LogReport writing
// result/log, PrintReport printing one row per epoch, ProgressBar, observe_lr)
// and an extension of its own that adds the weight norm to each epoch's row.
//
//   manual_loop [--epochs N] [--batch-size B] [--lr LR]
//
// On a terminal the progress bar is PPE's live display; piped or redirected,
// it prints plain status lines instead.

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include <ppe/ppe.hpp>

namespace tr = ppe::training;

// An extension of our own: once per epoch, puts the norm of the weights into
// the observation, where LogReport (which runs after it: lower priority) picks
// it up. Reading the model needs `needs_model_state`.
struct WeightNorm {
  using extension_concept = tr::extension_tag;
  static constexpr std::string_view default_name = "WeightNorm";
  static constexpr int priority = tr::kPriorityWriter;
  static constexpr bool needs_model_state = true;
  static auto default_trigger() { return ppe::epochs(1); }

  void operator()(tr::Manager& m) {
    torch::NoGradGuard no_grad;
    m.observation().set("main/weight_norm", m.model()->parameters()[0].norm().item<double>());
  }
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

  namespace ext = tr::extensions;
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(args.epochs).iters_per_epoch(iters_per_epoch).out_dir("result"), model,
      optimizer, ext::observe_lr(optimizer), WeightNorm{}, ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().entries(
          {"epoch", "iteration", "main/loss", "main/weight_norm", "lr", "elapsed_time"})),
      ext::ProgressBar(ext::ProgressBarOptions().update_interval(std::max(1, iters_per_epoch / 2))));

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
  const auto& log = manager.get_extension<ext::LogReport>("LogReport");
  std::printf("wrote %s/%s (%zu entries)\n", manager.out().c_str(), log.filename().c_str(), log.log().size());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "manual_loop: " << e.what() << "\n";
  return 2;
}
