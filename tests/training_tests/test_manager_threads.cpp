// Two managers training on two threads at once (ours, not PPE's: Python's
// GIL never lets two training loops run at the same time). Each has its own
// model, optimizer, reporter, LogReport and asynchronous snapshot writer; the
// test proves that nothing one thread reports or saves reaches the other.
// It is among the ThreadSanitizer tests (`./dev tsan`).
#include "ppe_test.hpp"

#include <latch>
#include <thread>

#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_manager_threads {

namespace tr = ppe::training;
namespace ex = ppe::training::extensions;
using ppe_test::TempDir;

struct Run {
  std::vector<ex::LogEntry> log;
  torch::Tensor final_weight;
  torch::Tensor snapshot_weight;
};

// 3 epochs of 4 iterations; every iteration reports `loss`; a snapshot every
// 4 iterations through a ThreadWriter (its own thread). Both runs start
// together (the latch) so their iterations overlap.
Run train(double loss, const std::filesystem::path& out, std::latch& start) {
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  auto writer = std::make_shared<ppe::writing::ThreadWriter>(out);
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(3).iters_per_epoch(4).out_dir(out.string()), model, opt, ex::LogReport(),
      tr::entry(ex::snapshot(ex::SnapshotOptions().writer(writer)), ppe::iterations(4)));
  const auto x = torch::ones({1, 3});
  start.arrive_and_wait();
  while (!manager.stop_trigger()) {
    manager.run_iteration([&] {
      opt.zero_grad();
      model->forward(x).sum().backward();
      opt.step();
      ppe::reporting::report({{"main/loss", loss}});
    });
  }
  writer->finalize();
  Run run;
  run.log = manager.get_extension<ex::LogReport>("LogReport").log();
  run.final_weight = model->weight.detach().clone();
  const ppe::State saved = ppe::serialization::load_file(out / "snapshot_iter_12");
  run.snapshot_weight = saved.at("models").at("main").at("weight").as_tensor();
  return run;
}

TEST_CASE("two managers on two threads: each log and snapshot holds only its own run") {
  TempDir a, b;
  std::latch start(2);
  Run run_a, run_b;
  std::thread ta([&] { run_a = train(1.0, a.path, start); });
  std::thread tb([&] { run_b = train(2.0, b.path, start); });
  ta.join();
  tb.join();
  for (const auto& [run, loss] : {std::pair{&run_a, 1.0}, std::pair{&run_b, 2.0}}) {
    REQUIRE(run->log.size() == 3);  // one entry per epoch
    for (const auto& entry : run->log) CHECK(entry.at("main/loss").to_double() == loss);
    CHECK(run->log.back().at("iteration") == ex::LogValue(12));
    CHECK(torch::equal(run->snapshot_weight, run->final_weight));
  }
  CHECK(std::filesystem::exists(a / "log"));
  CHECK(std::filesystem::exists(b / "log"));
}

}  // namespace ppe_test_training_tests_test_manager_threads
