// ppe::distributed::create_distributed_subset_indices: PPE's test table
// (tests/pytorch_pfn_extras_tests/distributed_tests/test_distributed_subset_indices.py),
// NumPy's legacy shuffle reproduced bit for bit, and PPE's overlapping split.
#include "ppe_test.hpp"

#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <ppe/distributed/dataset_util.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_distributed_tests_test_distributed_subset_indices {

using ppe::distributed::create_distributed_subset_indices;
using Indices = std::vector<std::int64_t>;

TEST_CASE("not shuffled: PPE's table") {
  CHECK(create_distributed_subset_indices(10, 3, 0, false) == Indices{0, 1, 2, 3});
  CHECK(create_distributed_subset_indices(10, 3, 1, false) == Indices{3, 4, 5, 6});
  CHECK(create_distributed_subset_indices(10, 3, 2, false) == Indices{6, 7, 8, 9});
}

TEST_CASE("shuffled: PPE's table, and PPE's exact indices") {
  const Indices indices0 = create_distributed_subset_indices(10, 3, 0, true, 0);
  const Indices indices1 = create_distributed_subset_indices(10, 3, 1, true, 0);
  const Indices indices2 = create_distributed_subset_indices(10, 3, 2, true, 0);
  CHECK(indices0.size() + indices1.size() + indices2.size() == 12);
  // PPE 0.9.0 (NumPy 1.24): [create_distributed_subset_indices(10, 3, r, True, 0) for r in range(3)]
  CHECK(indices0 == Indices{2, 8, 4, 9});
  CHECK(indices1 == Indices{9, 1, 6, 7});
  CHECK(indices2 == Indices{7, 3, 0, 5});
}

TEST_CASE("the shuffle is numpy.random.RandomState(seed).shuffle, bit for bit") {
  // NumPy 1.24: v = list(range(10)); numpy.random.RandomState(seed).shuffle(v); v
  struct Row {
    std::uint32_t seed;
    Indices permutation;
  };
  const std::vector<Row> rows{
      {0, {2, 8, 4, 9, 1, 6, 7, 3, 0, 5}},          {1, {2, 9, 6, 4, 0, 3, 1, 7, 8, 5}},
      {12345, {0, 7, 3, 9, 6, 4, 1, 8, 5, 2}},      {2147483647, {4, 5, 2, 6, 3, 1, 7, 0, 8, 9}},
      {4294967295, {6, 9, 5, 1, 8, 0, 7, 4, 2, 3}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.seed);
    CHECK(create_distributed_subset_indices(10, 1, 0, true, row.seed) == row.permutation);
    Indices v(10);
    std::iota(v.begin(), v.end(), 0);
    ppe::distributed::detail::numpy_legacy_shuffle(v, row.seed);
    CHECK(v == row.permutation);
  }
  // Sizes 1 and 2 (a single element draws nothing; seed 0 swaps the pair, seed 1 does not).
  CHECK(create_distributed_subset_indices(1, 1, 0, true, 7) == Indices{0});
  CHECK(create_distributed_subset_indices(2, 1, 0, true, 0) == Indices{1, 0});
  CHECK(create_distributed_subset_indices(2, 1, 0, true, 1) == Indices{0, 1});
}

TEST_CASE("large datasets match PPE's indices") {
  // PPE 0.9.0 (NumPy 1.24), s = create_distributed_subset_indices(N, R, r, True, seed):
  // len(s), s[:5], s[-1], sum((i + 1) * x for i, x in enumerate(s)).
  struct Row {
    std::size_t n;
    std::uint32_t seed;
    int replicas;
    int rank;
    std::size_t size;
    Indices head;
    std::int64_t last;
    std::int64_t weighted_sum;
  };
  const std::vector<Row> rows{
      {1000, 12345, 1, 0, 1000, {144, 833, 270, 468, 962}, 482, 247866174},
      {1000, 12345, 3, 0, 334, {144, 833, 270, 468, 962}, 61, 27607951},
      {1000, 12345, 3, 1, 334, {61, 305, 587, 359, 544}, 16, 28540188},
      {1000, 12345, 3, 2, 334, {16, 798, 669, 932, 707}, 482, 26237092},
      {100003, 2147483647, 1, 0, 100003, {17, 24461, 42794, 29928, 51560}, 83951, 250090673097995},
      {100003, 2147483647, 3, 0, 33335, {17, 24461, 42794, 29928, 51560}, 82764, 27868212203687},
      {100003, 2147483647, 3, 1, 33335, {82764, 80476, 83618, 67356, 9095}, 88924, 27702621803697},
      {100003, 2147483647, 3, 2, 33335, {88924, 89325, 6532, 17206, 74898}, 83951, 27845412073757},
  };
  for (const Row& row : rows) {
    CAPTURE(row.n);
    CAPTURE(row.replicas);
    CAPTURE(row.rank);
    const Indices s = create_distributed_subset_indices(row.n, row.replicas, row.rank, true, row.seed);
    REQUIRE(s.size() == row.size);
    CHECK(Indices(s.begin(), s.begin() + 5) == row.head);
    CHECK(s.back() == row.last);
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < s.size(); ++i) sum += static_cast<std::int64_t>(i + 1) * s[i];
    CHECK(sum == row.weighted_sum);
  }
}

TEST_CASE("PPE's split: every rank gets ceil(N / R) samples, neighbours overlap") {
  // PPE 0.9.0: [create_distributed_subset_indices(N, R, r, shuffle, seed) for r in range(R)]
  CHECK(create_distributed_subset_indices(7, 4, 0, false) == Indices{0, 1});
  CHECK(create_distributed_subset_indices(7, 4, 1, false) == Indices{1, 2});  // 1 twice
  CHECK(create_distributed_subset_indices(7, 4, 2, false) == Indices{3, 4});
  CHECK(create_distributed_subset_indices(7, 4, 3, false) == Indices{5, 6});
  CHECK(create_distributed_subset_indices(7, 4, 1, true, 1) == Indices{2, 1});
  // More ranks than samples: ranks share samples.
  CHECK(create_distributed_subset_indices(2, 3, 0, true, 0) == Indices{1});
  CHECK(create_distributed_subset_indices(2, 3, 1, true, 0) == Indices{1});
  CHECK(create_distributed_subset_indices(2, 3, 2, true, 0) == Indices{0});
  CHECK(create_distributed_subset_indices(0, 3, 2, true, 5).empty());
  // Whatever N and R: equal counts, and the union is the dataset.
  for (std::size_t n : {0, 1, 5, 10, 33})
    for (int replicas : {1, 2, 3, 7}) {
      CAPTURE(n);
      CAPTURE(replicas);
      std::vector<int> seen(n, 0);
      for (int r = 0; r < replicas; ++r) {
        const Indices s = create_distributed_subset_indices(n, replicas, r, true, 42);
        CHECK(s.size() == (n + replicas - 1) / replicas);
        for (std::int64_t i : s) ++seen[static_cast<std::size_t>(i)];
      }
      for (int count : seen) CHECK(count >= 1);
    }
}

TEST_CASE("NumPy's bounded draw above 32 bits takes the high word first") {
  // NumPy 1.24: numpy.random.RandomState(0).randint(0, 2**40 + 12346, dtype=numpy.uint64, size=4), which
  // draws as the shuffle does for more than 2^32 elements.
  std::mt19937 gen(0);
  const std::vector<std::uint64_t> expected{741280623151, 506137267392, 841157541223, 41332891347};
  for (std::uint64_t e : expected)
    CHECK(ppe::distributed::detail::numpy_random_interval(gen, (std::uint64_t{1} << 40) + 12345) == e);
}

TEST_CASE("errors: a bad rank or num_replicas, or shuffling without a seed") {
  CHECK_THROWS_AS(create_distributed_subset_indices(10, 3, 3, false), std::invalid_argument);
  CHECK_THROWS_AS(create_distributed_subset_indices(10, 3, -1, false), std::invalid_argument);
  CHECK_THROWS_AS(create_distributed_subset_indices(10, 0, 0, false), std::invalid_argument);
  const std::string rank = ppe_test::error_of([] { create_distributed_subset_indices(10, 3, 3, false); });
  CHECK(rank.find("rank is 3") != std::string::npos);
  CHECK(rank.find("[0, 2]") != std::string::npos);
  const std::string replicas = ppe_test::error_of([] { create_distributed_subset_indices(10, -1, 0, false); });
  CHECK(replicas.find("num_replicas is -1") != std::string::npos);
  CHECK_THROWS_AS(create_distributed_subset_indices(10, 3, 0), std::invalid_argument);
  const std::string seed = ppe_test::error_of([] { create_distributed_subset_indices(10, 3, 0, true); });
  CHECK(seed.find("no seed") != std::string::npos);
  CHECK(create_distributed_subset_indices(10, 3, 0, false, std::nullopt).size() == 4);  // no seed needed
}

}  // namespace ppe_test_distributed_tests_test_distributed_subset_indices
