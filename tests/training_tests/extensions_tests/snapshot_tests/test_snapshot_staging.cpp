// Asynchronous snapshots stage the state once, into a copy kept between
// snapshots, and stream it from there (issue 48; serialization/staging.hpp):
// a snapshot triggered while the previous write still holds the copy waits
// for it; process writers stream the staged copy in their writing process.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/writing/process_queue_writer.hpp>
#include <ppe/writing/process_writer.hpp>
#include <ppe/writing/thread_queue_writer.hpp>

#include <deque>
#include <fstream>
#include <sstream>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_snapshot_staging {

namespace fs = std::filesystem;
namespace ext = ppe::training::extensions;
namespace wr = ppe::writing;
using ppe::State;
using ppe_test::TempDir;

namespace {

/// A deferred writer that runs nothing until `wait()` (or `run_one()`):
/// writes that are still pending, as a slow disk leaves them.
struct HoldingWriter : wr::Writer {
  std::deque<std::pair<std::string, wr::SaveFn>> pending;
  std::vector<std::pair<std::string, std::string>> written;
  int waits = 0;
  void operator()(const std::string& filename, wr::SaveFn save, bool) override {
    pending.emplace_back(filename, std::move(save));
  }
  void run_one() {
    std::ostringstream os;
    pending.front().second(os);
    written.emplace_back(pending.front().first, os.str());
    pending.pop_front();
  }
  void wait() override {
    ++waits;
    while (!pending.empty()) run_one();
  }
};

State read(const std::string& bytes) {
  return ppe::serialization::pickle_loads(std::vector<char>(bytes.begin(), bytes.end()));
}

}  // namespace

TEST_CASE("an asynchronous snapshot waits for the previous write that holds the staged copy, then stages again") {
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto writer = std::make_shared<HoldingWriter>();
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(5, 4), model, opt,
      ppe::training::entry(ext::snapshot(ext::SnapshotOptions().writer(writer)), ppe::iterations(1)));
  const auto x = torch::ones({1, 3});
  const auto step = [&] {
    opt.zero_grad();
    model->forward(x).sum().backward();
    opt.step();
  };
  manager.run_iteration(step);
  const torch::Tensor at_one = model->weight.detach().clone();
  REQUIRE(writer->pending.size() == 1);
  CHECK(writer->waits == 0);
  // The second snapshot finds the first write pending: it waits for it (the
  // file then holds iteration 1's weights, not the later ones), then stages.
  manager.run_iteration(step);
  CHECK(writer->waits == 1);
  REQUIRE(writer->written.size() == 1);
  CHECK(writer->written[0].first == "snapshot_iter_1");
  CHECK(torch::equal(read(writer->written[0].second).at("models").at("main").at("weight").as_tensor(), at_one));
  REQUIRE(writer->pending.size() == 1);
  writer->run_one();
  const State two = read(writer->written[1].second);
  CHECK(two.at("_start_iteration").as_int() == 2);
  CHECK(torch::equal(two.at("models").at("main").at("weight").as_tensor(), model->weight));
  CHECK(ppe::serialization::state_equal(two.at("optimizers"), manager.state_dict().at("optimizers")));
}

TEST_CASE("process writers stream a staged snapshot in their writing process; the files load as the state was") {
  for (const bool queue : {false, true}) {
    CAPTURE(queue);
    TempDir out;
    torch::nn::Linear model(3, 2);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.1));
    std::shared_ptr<wr::Writer> writer;
    if (queue)
      writer = std::make_shared<wr::ProcessQueueWriter>(out.path);
    else
      writer = std::make_shared<wr::ProcessWriter>(out.path);
    auto manager = ppe::training::ExtensionsManager(
        ppe_test::options(5, 4), model, opt,
        ppe::training::entry(ext::snapshot(ext::SnapshotOptions().writer(writer).safetensors(true)),
                             ppe::iterations(2)));
    const auto x = torch::ones({1, 3});
    std::vector<State> taken;
    for (int i = 0; i < 4; ++i) {
      manager.run_iteration([&] {
        opt.zero_grad();
        model->forward(x).sum().backward();
        opt.step();
      });
      if (i % 2 == 1) taken.push_back(ppe::serialization::owned_copy(manager.state_dict()));
    }
    writer->finalize();
    for (int k = 0; k < 2; ++k) {
      const std::string name = "snapshot_iter_" + std::to_string(2 * (k + 1));
      const State s = ppe::serialization::load_file(out / name);
      CHECK(ppe::serialization::state_equal(s.at("models"), taken[static_cast<std::size_t>(k)].at("models")));
      CHECK(ppe::serialization::state_equal(s.at("optimizers"), taken[static_cast<std::size_t>(k)].at("optimizers")));
      const auto weights = ppe::serialization::load_safetensors(out / (name + ".safetensors"));
      CHECK(weights.tensors.size() == 2);
    }
  }
}

TEST_CASE("a save function made by in_writing_process that throws in the writing process is a WriteError") {
  TempDir out;
  wr::ProcessWriter writer(out.path);
  writer("bad", wr::in_writing_process([](std::ostream&) { throw std::runtime_error("no"); }));
  CHECK_THROWS_WITH_AS(writer.finalize(), doctest::Contains("the save function threw in the writing process"),
                       wr::WriteError);
  CHECK_FALSE(fs::exists(out / "bad"));
  CHECK_FALSE(fs::exists(out / "tmp_bad"));
}

}  // namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_snapshot_staging
