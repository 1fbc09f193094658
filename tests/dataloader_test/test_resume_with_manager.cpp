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
  if (resume_from) manager.load_state_dict(ppe::serialization::pickle_loads(*resume_from));
  while (!manager.stop_trigger()) {
    for (auto& batch : batches) {
      manager.run_iteration([&] { steps.emplace_back(batch, torch::rand({1}).item<float>()); });
      if (stop_after && manager.iteration() == *stop_after) return ppe::serialization::pickle_dumps(manager.state_dict());
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


namespace {

/// One rank (rank 0) of a world of `world` with `batch` samples per step:
/// runs until `stop_after` iterations and returns the pickled state, or,
/// given `resume_from`, loads it and runs to the end. `epochs_at` gets the
/// iterations at which an every-epoch extension fired; `seen` each step's
/// (epoch, batch).
struct ElasticRun {
  int world;
  std::size_t batch;
  std::vector<std::int64_t> epochs_at;
  std::vector<std::pair<std::int64_t, Batch>> seen;
  std::int64_t loaded_iteration = -1, loaded_iters_per_epoch = -1;

  std::vector<char> run(std::optional<std::int64_t> stop_after, const std::vector<char>* resume_from) {
    namespace tr = ppe::training;
    ResumableSampler sampler(24, ResumableSamplerOptions().seed(3).num_replicas(world).rank(0));
    auto loader = torch::data::make_data_loader(IndexDataset(24), sampler, torch::data::DataLoaderOptions(batch));
    auto batches = dl::range(*loader, sampler);
    auto manager = tr::ExtensionsManager(
        ppe_test::options(3, static_cast<std::int64_t>(*batches.num_batches())).world_size(world), tr::Models{},
        tr::Optimizers{},
        tr::make_extension([this](tr::Manager& m) { epochs_at.push_back(m.iteration()); }, ppe::epochs(1), "epochs"));
    manager.register_state_object("sampler", sampler);
    if (resume_from) {
      manager.load_state_dict(ppe::serialization::pickle_loads(*resume_from));
      loaded_iteration = manager.iteration();
      loaded_iters_per_epoch = manager.iters_per_epoch();
    }
    while (!manager.stop_trigger()) {
      for (auto& b : batches) {
        manager.run_iteration([&] { seen.emplace_back(sampler.epoch(), b); });
        if (stop_after && manager.iteration() == *stop_after) return ppe::serialization::pickle_dumps(manager.state_dict());
        if (manager.stop_trigger()) break;
      }
    }
    return {};
  }
};

}  // namespace

TEST_CASE("elastic: a state saved in a world of 2 continues in a world of 1 or 3 where the samples say") {
  // 24 samples, 3 epochs. Rank 0 of 2 with 3 samples a step: 4 iterations an
  // epoch; stopped after 5, one batch into epoch 1: the 2 ranks consumed 6
  // samples of its order.
  ElasticRun two{2, 3, {}, {}};
  const std::vector<char> saved = two.run(5, nullptr);
  REQUIRE(two.seen.size() == 5);
  CHECK(two.epochs_at == std::vector<std::int64_t>{4});

  SUBCASE("one rank, the same 3 samples a step: the iterations are this world's") {
    // 18 samples left: 6 steps of 3; an epoch is 8 steps, so the data is at
    // iteration 1 * 8 + (8 - 6) = 10.
    ElasticRun one{1, 3, {}, {}};
    one.run(std::nullopt, &saved);
    CHECK(one.loaded_iteration == 10);
    CHECK(one.loaded_iters_per_epoch == 8);
    // The epoch ends when its samples do (6 steps), then one more epoch of 8.
    CHECK(one.epochs_at == std::vector<std::int64_t>{16, 24});
    REQUIRE(one.seen.size() == 14);
    const auto order = ResumableSampler(24, ResumableSamplerOptions().seed(3)).order(1);
    Batch epoch1;
    for (std::size_t i = 0; i < 6; ++i) {
      CHECK(one.seen[i].first == 1);
      epoch1.insert(epoch1.end(), one.seen[i].second.begin(), one.seen[i].second.end());
    }
    // The rest of epoch 1's order, from where the two ranks together stopped.
    CHECK(epoch1 == Batch(order.begin() + 6, order.end()));
    CHECK(one.seen.back().first == 2);
  }
  SUBCASE("three ranks, 2 samples a step (the global batch kept at 6): the count goes on") {
    // 18 left: 6 each, 3 steps of 2; an epoch is 4 steps: iteration 4 + 1 = 5, as saved.
    ElasticRun three{3, 2, {}, {}};
    three.run(std::nullopt, &saved);
    CHECK(three.loaded_iteration == 5);
    CHECK(three.loaded_iters_per_epoch == 4);
    CHECK(three.epochs_at == std::vector<std::int64_t>{8, 12});
    CHECK(three.seen.size() == 7);
  }
}

}  // namespace ppe_test_dataloader_test_test_resume_with_manager
