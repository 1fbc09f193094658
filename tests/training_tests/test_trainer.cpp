// PPE's training_tests/test_trainer.py: the Trainer made by create_trainer.

#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>

#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

namespace ext = ppe::training::extensions;
using engine_test::MyModel;
using engine_test::WithLoss;
using ppe_test::error_of;

namespace {

auto options(const std::string& out) { return ppe::engine::TrainerOptions().out_dir(out); }

}  // namespace

TEST_CASE("Trainer: PPE's test_trainer trains 20 epochs with the standard extensions") {
  ppe_test::TempDir dir;
  MyModel model;
  ppe::to(model, "cpu");
  WithLoss with_loss(model);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto data = engine_test::random_data(10);
  std::ostringstream out;
  auto trainer = ppe::engine::create_trainer(
      with_loss, optimizer, 20, options(dir.str()), ppe::training::entry(ext::LogReport(), ppe::iterations(10)),
      ext::PrintReport(ext::PrintReportOptions().out(&out).entries({"epoch", "iteration", "train/loss", "val/loss"})));
  trainer.run(data);
  CHECK(trainer.epoch() == 20);
  CHECK(trainer.iteration() == 200);
  CHECK(trainer.manager().finalized());
}
