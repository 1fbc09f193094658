// Exact resume through a manager snapshot: the sampler and LibTorch's
// generator are registered state objects; a run stopped after any iteration
// and rebuilt from nothing but the saved bytes continues with the same batches
// and the same random draws as the uninterrupted run.
#include "ppe_test.hpp"

#include <optional>
#include <utility>
#include <vector>

#include <ppe/dataloaders/loader_range.hpp>
#include <ppe/dataloaders/resumable_sampler.hpp>
#include <ppe/utils/rng_state.hpp>

#include "index_dataset.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_dataloader_test_test_resume_with_manager {

using ppe::dataloaders::ResumableSampler;
using ppe::dataloaders::ResumableSamplerOptions;
using ppe_test::Batch;
using ppe_test::IndexDataset;
namespace dl = ppe::dataloaders;

namespace {

/// What one iteration saw: its batch and a draw from LibTorch's generator
/// (standing in for dropout or augmentation).
using Step = std::pair<Batch, float>;

/// Trains until the manager stops, or until `stop_after` iterations, then
/// returns the pickled manager state. `resume_from` is loaded first.
std::vector<char> train(std::vector<Step>& steps, std::optional<std::int64_t> stop_after,
                        const std::vector<char>* resume_from) {
  torch::manual_seed(resume_from ? 1234 : 0);  // the resumed process starts elsewhere
  ResumableSampler sampler(23, ResumableSamplerOptions().seed(17));
  auto loader = torch::data::make_data_loader(IndexDataset(23), sampler,
                                              torch::data::DataLoaderOptions(5).workers(2));
  auto batches = dl::range(*loader, sampler);
  ppe::utils::RngState rng;
  auto manager = ppe_test::make_manager(3, static_cast<std::int64_t>(*batches.num_batches()));
  manager.register_state_object("sampler", sampler);
  manager.register_state_object("rng", rng);
  if (resume_from) manager.load_state_dict(ppe::pickle_loads(*resume_from));
  while (!manager.stop_trigger()) {
    for (auto& batch : batches) {
      manager.run_iteration([&] { steps.emplace_back(batch, torch::rand({1}).item<float>()); });
      if (stop_after && manager.iteration() == *stop_after) return ppe::pickle_dumps(manager.state_dict());
      if (manager.stop_trigger()) break;
    }
  }
  return {};
}

}  // namespace

TEST_CASE("a manager snapshot with the sampler and RngState resumes exactly") {
  std::vector<Step> reference;
  train(reference, std::nullopt, nullptr);
  // ceil(23 / 5) = 5 iterations per epoch, 3 epochs.
  REQUIRE(reference.size() == 15);
  // Stop after the first iteration, in the middle of epoch 1, at the last
  // iteration of epoch 1 and one iteration before the end.
  for (std::int64_t stop : {1, 7, 10, 14}) {
    CAPTURE(stop);
    std::vector<Step> steps;
    const std::vector<char> saved = train(steps, stop, nullptr);
    REQUIRE(static_cast<std::int64_t>(steps.size()) == stop);
    train(steps, std::nullopt, &saved);
    REQUIRE(steps.size() == reference.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      CAPTURE(i);
      CHECK(steps[i].first == reference[i].first);
      CHECK(steps[i].second == reference[i].second);  // bitwise: the same generator state
    }
  }
}

}  // namespace ppe_test_dataloader_test_test_resume_with_manager
