// Ports PPE 0.9.0's tests/pytorch_pfn_extras_tests/dataset_tests/test_shared_dataset.py (its
// DummySharedDataset, test_empty_shared_dataset, test_shared_dataset), and tests what the C++
// cache adds: LibTorch loader worker threads, fork()ed processes, racing writers, bad input.
#include "ppe_test.hpp"

#include <ppe/dataset/shared_dataset.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_dataset_tests_test_shared_dataset {

namespace {

// PPE's DummySharedDataset: data = arange(100).reshape(100, 1); an example is served from the cache,
// else read from `data` and cached.
struct DummySharedDataset : torch::data::datasets::Dataset<DummySharedDataset, at::Tensor>,
                            ppe::dataset::SharedDataset<> {
  DummySharedDataset() : SharedDataset({100, 1}) {}
  at::Tensor data = torch::arange(100).reshape({100, 1});
  std::shared_ptr<std::atomic<int>> loads = std::make_shared<std::atomic<int>>(0);

  at::Tensor get(std::size_t idx) override {
    if (auto x = find(idx)) return *x;
    ++*loads;
    at::Tensor x = data[static_cast<std::int64_t>(idx)];
    cache_item(idx, x);
    return x;
  }
  c10::optional<std::size_t> size() const override { return 100; }
};

}  // namespace

TEST_CASE("SharedDataset: nothing is cached at first (PPE test_empty_shared_dataset)") {
  DummySharedDataset dataset;
  for (std::size_t i = 0; i < 100; ++i) CHECK_FALSE(dataset.is_cached(i));
  const std::string msg = ppe_test::error_of([&] { dataset.SharedDataset::get(7); });
  CHECK(msg.find("item 7 is not in the cache") != std::string::npos);
  CHECK_THROWS_AS(dataset.SharedDataset::get(7), ppe::dataset::ItemNotFoundException);
}

TEST_CASE("SharedDataset: a pass of the loader caches every example (PPE test_shared_dataset)") {
  for (const std::size_t workers : {0, 2}) {
    CAPTURE(workers);
    DummySharedDataset dataset;
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        dataset, torch::data::DataLoaderOptions(4).workers(workers));
    for (auto& batch : *loader) CHECK(batch.size() <= 4);
    // The loader worked on copies of `dataset`: they share its cache.
    for (std::size_t i = 0; i < 100; ++i) CHECK(dataset.is_cached(i));
    CHECK(dataset.loads->load() == 100);
    // The second pass is served from the cache: float32, as PPE's c_float buffer.
    for (auto& batch : *loader)
      for (const auto& x : batch) CHECK((x.scalar_type() == at::kFloat));
    CHECK(dataset.loads->load() == 100);
    for (std::int64_t i = 0; i < 100; ++i)
      CHECK(dataset.SharedDataset::get(static_cast<std::size_t>(i)).item<float>() == static_cast<float>(i));
  }
}

TEST_CASE("SharedDataset: threads racing on the same examples") {
  DummySharedDataset dataset;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([dataset, t]() mutable {
      for (std::size_t k = 0; k < 100; ++k) dataset.get((k * 7 + static_cast<std::size_t>(t) * 13) % 100);
    });
  for (auto& th : threads) th.join();
  for (std::int64_t i = 0; i < 100; ++i) {
    REQUIRE(dataset.is_cached(static_cast<std::size_t>(i)));
    CHECK(dataset.SharedDataset::get(static_cast<std::size_t>(i)).item<float>() == static_cast<float>(i));
  }
  // A slot is written once: a later add is refused and leaves the value.
  CHECK_FALSE(dataset.cache().add_to_cache(5, torch::full({1}, -1.0)));
  CHECK(dataset.SharedDataset::get(5).item<float>() == 5.0f);
}

TEST_CASE("SharedDataset: fork()ed processes share the cache") {
  ppe::dataset::SharedDataset<> dataset({64, 2, 3});
  dataset.cache_item(0, torch::full({2, 3}, 42.0));  // cached before the fork: the children see it
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // The child: no doctest macros (its result is the exit code).
      int status = 0;
      if (!dataset.is_cached(0) || dataset.get(0)[1][2].item<float>() != 42.0f) status = 1;
      for (std::size_t i = 1 + static_cast<std::size_t>(c); i < 64; i += 2)
        dataset.cache_item(i, torch::full({2, 3}, static_cast<double>(i)) + torch::arange(3));
      ::_exit(status);
    }
    children.push_back(pid);
  }
  // Bounded: a child that has not ended after 60 s is killed and fails the test.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (const pid_t pid : children) {
    int status = -1;
    pid_t ended = 0;
    while ((ended = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (ended == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("a forked child did not end within 60 s");
    }
    REQUIRE(ended == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  for (std::size_t i = 1; i < 64; ++i) {
    REQUIRE(dataset.is_cached(i));
    const at::Tensor expected = torch::full({2, 3}, static_cast<double>(i)) + torch::arange(3);
    CHECK(torch::equal(dataset.get(i), expected.to(at::kFloat)));
  }
}

TEST_CASE("SharedDataset: bad input is reported and leaves the slot usable") {
  ppe::dataset::SharedDataset<> dataset({4, 3});
  const std::string msg = ppe_test::error_of([&] { dataset.cache_item(1, torch::ones({4})); });
  CHECK(msg.find("cannot cache example 1") != std::string::npos);
  CHECK(msg.find("[4]") != std::string::npos);
  CHECK(msg.find("[3]") != std::string::npos);
  CHECK_FALSE(dataset.is_cached(1));
  dataset.cache_item(1, torch::full({1}, 2.0));  // broadcast, as numpy's assignment
  CHECK(torch::equal(dataset.get(1), torch::full({3}, 2.0f)));
  CHECK_THROWS_AS(dataset.cache_item(4, torch::ones({3})), std::out_of_range);
  CHECK_THROWS_AS(dataset.is_cached(9), std::out_of_range);
  CHECK_THROWS_AS(ppe::dataset::InfiniteCache({}), std::invalid_argument);
  // Another dtype on request; the cached view outlives the dataset.
  at::Tensor kept;
  {
    ppe::dataset::SharedDataset<> bytes(std::make_shared<ppe::dataset::InfiniteCache>(std::vector<std::int64_t>{2, 2},
                                                                                       at::kByte));
    bytes.cache_item(0, torch::tensor({7, 255}));
    kept = bytes.get(0);
  }
  CHECK((kept.scalar_type() == at::kByte));
  CHECK(kept[1].item<int>() == 255);
}

}  // namespace ppe_test_dataset_tests_test_shared_dataset
