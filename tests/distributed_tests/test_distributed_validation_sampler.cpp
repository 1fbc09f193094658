// ppe::distributed::DistributedValidationSampler: PPE's test table
// (tests/pytorch_pfn_extras_tests/distributed_tests/test_distributed_validation_sampler.py),
// and the exact indices PPE serves, so that C++ and Python ranks split a
// dataset the same way.
#include "ppe_test.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <ppe/distributed/distributed_validation_sampler.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_distributed_tests_test_distributed_validation_sampler {

using ppe::distributed::DistributedValidationSampler;
using Indices = std::vector<std::size_t>;

namespace {

// PPE's fixture: 21 samples over 4 ranks.
constexpr int kWorldSize = 4;
constexpr std::size_t kDatasetLen = 21;

/// What a pass of the sampler serves, batch by batch.
Indices drain(DistributedValidationSampler& sampler, std::size_t batch_size) {
  sampler.reset();
  Indices out;
  while (auto batch = sampler.next(batch_size)) out.insert(out.end(), batch->begin(), batch->end());
  return out;
}

/// The concatenation of the shares of all ranks.
Indices all_ranks(std::size_t n, int replicas, bool shuffle, std::uint64_t seed) {
  Indices out;
  for (int r = 0; r < replicas; ++r) {
    DistributedValidationSampler s(n, replicas, r, shuffle, seed);
    out.insert(out.end(), s.indices().begin(), s.indices().end());
  }
  return out;
}

Indices iota(std::size_t n) {
  Indices v(n);
  std::iota(v.begin(), v.end(), std::size_t{0});
  return v;
}

/// A dataset whose samples are their indices.
struct IndexDataset : torch::data::datasets::Dataset<IndexDataset, std::size_t> {
  explicit IndexDataset(std::size_t n) : n(n) {}
  std::size_t get(std::size_t index) override { return index; }
  c10::optional<std::size_t> size() const override { return n; }
  std::size_t n;
};

}  // namespace

TEST_CASE("default: the ranks' shares have PPE's lengths, cover the dataset once, and are shuffled") {
  const std::vector<std::size_t> expected_lengths{6, 5, 5, 5};
  Indices sample_idxs;
  for (int rank = 0; rank < kWorldSize; ++rank) {
    DistributedValidationSampler sampler(kDatasetLen, kWorldSize, rank);
    CHECK(sampler.size() == expected_lengths[rank]);
    const Indices got = drain(sampler, 4);
    CHECK(got.size() == expected_lengths[rank]);
    sample_idxs.insert(sample_idxs.end(), got.begin(), got.end());
  }
  Indices sorted = sample_idxs;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota(kDatasetLen));  // no duplicates, nothing missing
  CHECK(sample_idxs != sorted);        // ordered randomly by default
}

TEST_CASE("no shuffle: consecutive chunks, the first N % R one longer") {
  const std::vector<Indices> expected_samples{
      {0, 1, 2, 3, 4, 5},
      {6, 7, 8, 9, 10},
      {11, 12, 13, 14, 15},
      {16, 17, 18, 19, 20},
  };
  for (int rank = 0; rank < kWorldSize; ++rank) {
    DistributedValidationSampler sampler(kDatasetLen, kWorldSize, rank, /*shuffle=*/false);
    CHECK(drain(sampler, 2) == expected_samples[rank]);
    CHECK(sampler.indices() == expected_samples[rank]);
  }
}

TEST_CASE("the shuffled shares are PPE's, index for index") {
  // From PPE 0.9.0 with torch 1.13 (LibTorch's randperm and CPU generator):
  //   [list(map(int, DistributedValidationSampler(range(N), num_replicas=R, rank=r, seed=s))) for r in range(R)]
  struct Row {
    std::size_t n;
    int replicas;
    std::uint64_t seed;
    std::vector<Indices> shares;
  };
  const std::vector<Row> rows{
      {21, 4, 0, {{11, 20, 2, 9, 6, 16}, {13, 10, 12, 8, 19}, {17, 18, 1, 5, 0}, {15, 14, 4, 3, 7}}},
      {21, 4, 1, {{7, 20, 12, 17, 18, 14}, {3, 2, 1, 9, 19}, {8, 13, 11, 16, 15}, {4, 5, 0, 10, 6}}},
      {10, 3, 12345, {{0, 7, 1, 6}, {4, 2, 8}, {9, 5, 3}}},
      {3, 5, 0, {{2}, {0}, {1}, {}, {}}},  // more ranks than samples: the last ranks get nothing
  };
  for (const Row& row : rows) {
    CAPTURE(row.n);
    CAPTURE(row.seed);
    for (int rank = 0; rank < row.replicas; ++rank) {
      DistributedValidationSampler sampler(row.n, row.replicas, rank, true, row.seed);
      CHECK(sampler.indices() == row.shares[rank]);
      CHECK(drain(sampler, 4) == row.shares[rank]);
    }
  }
  // PyTorch seeds its generator with the low 32 bits only.
  CHECK(DistributedValidationSampler(21, 4, 0, true, (std::uint64_t{1} << 32) + 1).indices() == rows[1].shares[0]);
}

TEST_CASE("a large dataset matches PPE's shares") {
  // From PPE 0.9.0 with torch 1.13, s = list(map(int, DistributedValidationSampler(range(100003), 4, r,
  // seed=2**31 - 1))): len(s), s[:5], s[-1], sum((i + 1) * x for i, x in enumerate(s)).
  struct Fingerprint {
    std::size_t size;
    Indices head;
    std::size_t last;
    std::uint64_t weighted_sum;
  };
  const std::vector<Fingerprint> expected{
      {25001, {51346, 71775, 12948, 46575, 19863}, 89102, 15651740958441},
      {25001, {30781, 68365, 30360, 68397, 24772}, 63588, 15665365130234},
      {25001, {53580, 64163, 15174, 60041, 99278}, 45722, 15526670235345},
      {25000, {72052, 37069, 74579, 83112, 87255}, 46299, 15653513557665},
  };
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(rank);
    DistributedValidationSampler sampler(100003, 4, rank, true, 2147483647);
    const Indices& s = sampler.indices();
    REQUIRE(s.size() == expected[rank].size);
    CHECK(Indices(s.begin(), s.begin() + 5) == expected[rank].head);
    CHECK(s.back() == expected[rank].last);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < s.size(); ++i) sum += (i + 1) * s[i];
    CHECK(sum == expected[rank].weighted_sum);
  }
}

TEST_CASE("manual num_replicas and ranks: PPE's lengths without a process group") {
  const std::vector<std::size_t> expected_lengths{6, 5, 5, 5};
  for (int rank = 0; rank < kWorldSize; ++rank)
    CHECK(DistributedValidationSampler(kDatasetLen, kWorldSize, rank).size() == expected_lengths[rank]);
}

TEST_CASE("seed: another seed, another order") {
  const DistributedValidationSampler sampler1(kDatasetLen, kWorldSize, 0, true, 1);
  const DistributedValidationSampler sampler2(kDatasetLen, kWorldSize, 0, true, 2);
  CHECK(sampler1.indices() != sampler2.indices());
  // PPE 0.9.0: list(map(int, DistributedValidationSampler(range(21), num_replicas=4, rank=0, seed=2)))
  CHECK(sampler2.indices() == Indices{9, 8, 10, 3, 12, 16});
  // The order is the sampler's own: LibTorch's global generator plays no part.
  torch::manual_seed(123);
  const Indices before = DistributedValidationSampler(kDatasetLen, kWorldSize, 0, true, 1).indices();
  torch::rand({7});
  CHECK(DistributedValidationSampler(kDatasetLen, kWorldSize, 0, true, 1).indices() == before);
}

TEST_CASE("the ranks partition any dataset, with numpy.array_split's lengths") {
  for (std::size_t n : {0, 1, 2, 7, 10, 21, 100})
    for (int replicas : {1, 2, 3, 4, 8})
      for (bool shuffle : {false, true}) {
        CAPTURE(n);
        CAPTURE(replicas);
        CAPTURE(shuffle);
        Indices all = all_ranks(n, replicas, shuffle, 5);
        std::sort(all.begin(), all.end());
        CHECK(all == iota(n));
        for (int r = 0; r < replicas; ++r) {
          const std::size_t expected = n / replicas + (static_cast<std::size_t>(r) < n % replicas ? 1 : 0);
          CHECK(DistributedValidationSampler(n, replicas, r, shuffle, 5).size() == expected);
        }
      }
}

TEST_CASE("invalid rank or num_replicas: std::invalid_argument naming the value and the valid interval") {
  CHECK_THROWS_AS(DistributedValidationSampler(kDatasetLen, kWorldSize, -1), std::invalid_argument);
  CHECK_THROWS_AS(DistributedValidationSampler(kDatasetLen, kWorldSize, kWorldSize), std::invalid_argument);
  const std::string high = ppe_test::error_of([] { DistributedValidationSampler(kDatasetLen, 4, 4); });
  CHECK(high.find("rank is 4") != std::string::npos);
  CHECK(high.find("[0, 3]") != std::string::npos);
  const std::string low = ppe_test::error_of([] { DistributedValidationSampler(kDatasetLen, 4, -1); });
  CHECK(low.find("rank is -1") != std::string::npos);
  for (int replicas : {0, -2}) {
    CHECK_THROWS_AS(DistributedValidationSampler(kDatasetLen, replicas, 0), std::invalid_argument);
    const std::string msg = ppe_test::error_of([&] { DistributedValidationSampler(kDatasetLen, replicas, 0); });
    CHECK(msg.find("num_replicas is " + std::to_string(replicas)) != std::string::npos);
    CHECK(msg.find("at least 1") != std::string::npos);
  }
}

TEST_CASE("it plugs into make_data_loader; passes repeat; reset(new_size) and save/load") {
  const DistributedValidationSampler sampler(10, 3, 1, /*shuffle=*/false);
  auto loader = torch::data::make_data_loader(IndexDataset(10), sampler, torch::data::DataLoaderOptions(2));
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Indices> batches;
    for (auto& batch : *loader) batches.push_back(batch);
    CHECK(batches == std::vector<Indices>{{4, 5}, {6}});
  }

  DistributedValidationSampler s(10, 3, 0, true, 12345);
  s.reset(21);  // the dataset grew: the share of 21 samples with the same seed
  CHECK(s.dataset_size() == 21);
  CHECK(drain(s, 3) == DistributedValidationSampler(21, 3, 0, true, 12345).indices());

  // The position in the share survives save/load.
  s.reset();
  REQUIRE(s.next(3));
  torch::serialize::OutputArchive out;
  s.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  DistributedValidationSampler fresh(21, 3, 0, true, 12345);
  torch::serialize::InputArchive in;
  std::istringstream is(bytes.str());
  in.load_from(is);
  fresh.load(in);
  auto rest = fresh.next(100);
  REQUIRE(rest);
  CHECK(*rest == Indices(s.indices().begin() + 3, s.indices().end()));
  CHECK(!fresh.next(1));
}

}  // namespace ppe_test_distributed_tests_test_distributed_validation_sampler
