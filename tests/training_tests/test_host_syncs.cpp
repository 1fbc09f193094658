// What a managed iteration makes the host wait for (issue 29): no operation
// that would synchronise with a CUDA device on an iteration where no
// extension has work to do, and at most one read per extension that must
// show a number when they do. Run on the CPU with ppe_test::SyncCounter,
// which flags the operations that synchronise when their tensors are CUDA
// tensors (tests/cuda_tests run the same loop under c10's sync debug mode).
// The "device" values are meta tensors where a CPU tensor would be read in
// place: reporting must keep them without reading them (a meta tensor has no
// data, so a read would fail as well as be counted).

#include <sstream>

#include "ppe_test.hpp"
#include "engine_test_util.hpp"
#include "sync_counter.hpp"
#include "temp_dir.hpp"

namespace ppe_test_training_host_syncs {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
using ppe_test::SyncCounter;

struct Loop {
  torch::nn::Linear model{4, 1};
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)};
  torch::Tensor x = torch::randn({8, 4});
  torch::Tensor y = torch::randn({8, 1});

  // One training step reporting CPU tensors (read in place) and, with
  // `meta`, values that only a device could give.
  template <class M>
  void step(M& manager, bool meta) {
    manager.run_iteration([&] {
      optimizer.zero_grad();
      auto loss = torch::nn::functional::mse_loss(model->forward(x), y);
      loss.backward();
      optimizer.step();
      ppe::reporting::report({{"main/loss", loss},
                              {"main/correct", torch::tensor(3.0)},
                              {"main/total", torch::tensor(8.0)}});
      if (meta)
        ppe::reporting::report({{"device/loss", torch::empty({}, torch::TensorOptions().device(torch::kMeta))}});
    });
  }
};

TEST_CASE("a quiet iteration issues no operation that would synchronise with the device") {
  ppe_test::TempDir dir;
  Loop loop;
  std::ostringstream print_out, bar_out;
  // Every extension the issue names, with triggers that do not fire in the
  // first 150 iterations (epochs of 200); observe_lr fires every iteration
  // and reads only the optimizer's options.
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(2).iters_per_epoch(200).out_dir(dir.str()), loop.model,
      loop.optimizer, ext::observe_lr(loop.optimizer), ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().out(&print_out)),
      ext::ProgressBar(ext::ProgressBarOptions().out(&bar_out).update_interval(1000)),
      tr::entry(ext::snapshot(ext::SnapshotOptions().writer(std::make_shared<ppe::writing::ThreadWriter>())),
                ppe::epochs(1)),
      tr::entry(ext::MicroAverage("main/correct", "main/total", "main/accuracy", ppe::epochs(1))),
      ext::AverageAccumulate({"main/loss", "main/loss/mean"}),
      ext::ParameterStatistics(loop.model), tr::entry(ext::FailOnNonNumber(), ppe::epochs(1)));
  manager.start_extensions();
  // More than Summary::kFoldEvery device values, so that the summary folds
  // (reduces its kept tensors on their device) at least twice.
  for (int i = 0; i < 150; ++i) {
    SyncCounter syncs;
    loop.step(manager, /*meta=*/true);
    INFO("iteration ", manager.iteration(), ": ", syncs.text());
    CHECK(syncs.count() == 0);
  }
}

TEST_CASE("an emitting iteration reads each extension's numbers in one transfer") {
  ppe_test::TempDir dir;
  Loop loop;
  std::ostringstream print_out;
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(2).iters_per_epoch(10).out_dir(dir.str()), loop.model,
      loop.optimizer, ext::observe_lr(loop.optimizer), ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().out(&print_out)), tr::entry(ext::FailOnNonNumber(), ppe::epochs(1)));
  manager.start_extensions();
  for (int i = 0; i < 9; ++i) loop.step(manager, /*meta=*/false);
  SyncCounter syncs;
  loop.step(manager, /*meta=*/false);
  // LogReport reads its CPU means in place (on a device: one stacked
  // transfer, where reading mean by mean made one per key: 3 here);
  // FailOnNonNumber reads one flag for every parameter and gradient.
  INFO(syncs.text());
  CHECK(syncs.count() == 1);
  CHECK(syncs.text() == "aten::item");
  CHECK(print_out.str().find("main/loss") != std::string::npos);
}

TEST_CASE("a trainer with an evaluator issues no read of its own on the CPU") {
  // Three epochs of 10 training and 10 validation batches, logged and
  // printed each epoch: the reported CPU losses are read in place, so any
  // flagged operation would be one that the engine issues itself.
  ppe_test::TempDir dir;
  engine_test::MyModel model;
  engine_test::WithLoss with_loss{model};
  torch::optim::SGD optimizer{model->parameters(), 0.1};
  ppe::to(model, "cpu");
  const auto data = engine_test::random_data(10);
  std::ostringstream out;
  auto trainer = ppe::engine::create_trainer(with_loss, optimizer, 3, ppe::engine::TrainerOptions().out_dir(dir.str()),
                                             ext::LogReport(), ext::PrintReport(ext::PrintReportOptions().out(&out)),
                                             ppe::engine::evaluate(ppe::engine::create_evaluator(with_loss)));
  SyncCounter syncs;
  trainer.run(data, data);
  CHECK(syncs.text() == "none");
  CHECK(out.str().find("val/loss") != std::string::npos);
}

}  // namespace ppe_test_training_host_syncs
