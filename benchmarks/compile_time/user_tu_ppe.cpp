// Compile-time benchmark, user TU with ppe: what a user's training program
// compiles (issue 13's scenario): <torch/torch.h>, a small model, Adam,
// StepLR, a manager with LogReport, observe_lr, LRScheduler, ProgressBar,
// PrintReport, an epoch snapshot and two lambdas. user_tu_hand.cpp is the
// same program written by hand; compile_time_bench.sh compares the two.

#include <torch/torch.h>

#include "user_tu_model.hpp"

// The headers of what it uses, as docs/build-cost.md advises where compile
// time matters (<ppe/ppe.hpp>, the whole core, costs more: build-cost.md).
#include <ppe/reporting/reporter.hpp>
#include <ppe/training/extension_entry.hpp>
#include <ppe/training/extensions/log_report.hpp>
#include <ppe/training/extensions/lr_scheduler.hpp>
#include <ppe/training/extensions/print_report.hpp>
#include <ppe/training/extensions/progress_bar.hpp>
#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/training/extensions/value_observation.hpp>
#include <ppe/training/extensions_manager.hpp>
#include <ppe/training/triggers/interval_trigger.hpp>

#include <cstdio>

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

int main() {
  Net model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::StepLR scheduler(optimizer, 3, 0.5);
  const auto x = torch::randn({64, 8});
  const auto y = torch::randn({64, 1});
  double best = 1e300;
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(4).iters_per_epoch(16).out_dir("user_tu_result"), model, optimizer,
      ext::LogReport(), ext::observe_lr(optimizer), ext::LRScheduler(scheduler), ext::ProgressBar(),
      ext::PrintReport({"epoch", "iteration", "main/loss", "lr"}), tr::entry(ext::snapshot(), ppe::epochs(1)),
      tr::make_extension([&](tr::Manager& m) { std::printf("epoch %lld\n", static_cast<long long>(m.epoch())); },
                         ppe::epochs(1), "epoch_printer"),
      tr::make_extension(
          [&](tr::Manager& m) {
            if (const auto* v = m.observation().find("main/loss")) best = std::min(best, v->to_double());
          },
          ppe::iterations(1), "best_loss"));
  while (!manager.finalized())
    manager.run_iteration([&] {
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(x), y);
      ppe::reporting::report({{"main/loss", loss}});
      loss.backward();
      optimizer.step();
    });
  return best < 1e300 ? 0 : 1;
}
