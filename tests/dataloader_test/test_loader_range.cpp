// ppe::dataloaders::range: LibTorch loaders (and any input range) as range-v3
// input views; lazy stepping; number of batches per pass.
#include "ppe_test.hpp"

#include <ranges>
#include <vector>

#include <range/v3/range/concepts.hpp>
#include <range/v3/view/enumerate.hpp>
#include <range/v3/view/take.hpp>
#include <range/v3/view/transform.hpp>

#include <ppe/dataloaders/loader_range.hpp>

#include "index_dataset.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_dataloader_test_test_loader_range {

using ppe_test::Batch;
using ppe_test::Batches;
using ppe_test::IndexDataset;
namespace dl = ppe::dataloaders;

namespace {

auto sequential_loader(IndexDataset ds, std::size_t batch, std::size_t workers = 0, bool drop_last = false) {
  return torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(ds), torch::data::DataLoaderOptions(batch).workers(workers).drop_last(drop_last));
}
using Loader = decltype(sequential_loader(IndexDataset(1), 1))::element_type;
using View = dl::LoaderRange<Loader>;

// The adapter is what torch::data::Iterator is not: an input range for both
// range-v3 and C++20, and a view (so it pipes).
static_assert(dl::torch_loader<Loader>);
static_assert(!ranges::input_iterator<torch::data::Iterator<Batch>>);
static_assert(ranges::input_range<View>);
static_assert(ranges::view_<View>);
static_assert(!ranges::forward_range<View>);
static_assert(std::ranges::input_range<View>);
static_assert(std::same_as<ranges::range_reference_t<View>, Batch&>);

Batches iota_batches(std::size_t n, std::size_t batch, bool drop_last = false) {
  Batches out;
  for (std::size_t i = 0; i < n; i += batch) {
    Batch b;
    for (std::size_t j = i; j < std::min(n, i + batch); ++j) b.push_back(j);
    if (drop_last && b.size() < batch) break;
    out.push_back(b);
  }
  return out;
}

}  // namespace

TEST_CASE("range-for over a loader yields its batches in order") {
  for (std::size_t workers : {0, 2}) {
    CAPTURE(workers);
    auto loader = sequential_loader(IndexDataset(10), 3, workers);
    Batches got;
    for (auto& batch : dl::range(*loader)) got.push_back(batch);
    CHECK(got == iota_batches(10, 3));
    // A second pass over the same view starts over.
    auto view = dl::range(loader);
    Batches first, second;
    for (auto& b : view) first.push_back(b);
    for (auto& b : view) second.push_back(b);
    CHECK(first == iota_batches(10, 3));
    CHECK(second == first);
  }
}

TEST_CASE("views::take pulls exactly the batches it yields") {
  IndexDataset ds(20);
  auto fetched = ds.fetched;
  auto loader = sequential_loader(ds, 4);
  Batches got;
  for (auto& batch : dl::range(*loader) | ranges::views::take(2)) got.push_back(batch);
  CHECK(got == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}});
  // 2 batches of 4 samples: the loader was not asked for a third batch.
  CHECK(fetched->load() == 8);
}

TEST_CASE("views::enumerate and transform compose with the adapter") {
  auto loader = sequential_loader(IndexDataset(7), 2);
  std::vector<std::size_t> indices, firsts;
  for (auto [i, batch] : dl::range(*loader) | ranges::views::enumerate) {
    indices.push_back(i);
    firsts.push_back(batch.front());
  }
  CHECK(indices == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(firsts == std::vector<std::size_t>{0, 2, 4, 6});
  std::vector<std::size_t> sizes;
  for (std::size_t s : dl::range(*loader) | ranges::views::transform([](Batch& b) { return b.size(); }))
    sizes.push_back(s);
  CHECK(sizes == std::vector<std::size_t>{2, 2, 2, 1});
}

TEST_CASE("a pass left early with workers is drained so that the next pass can start") {
  // LibTorch refuses begin() while prefetched jobs are in flight; the view
  // discards them when a pass was left early.
  auto loader = sequential_loader(IndexDataset(40), 4, /*workers=*/2);
  auto view = dl::range(*loader);
  for (int round = 0; round < 3; ++round) {
    Batches got;
    for (auto& batch : view | ranges::views::take(2)) got.push_back(batch);
    CHECK(got == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}});
  }
  Batches all;
  for (auto& batch : view) all.push_back(batch);
  CHECK(all == iota_batches(40, 4));
}

TEST_CASE("num_batches: given size, drop_last both ways, unknown, other ranges") {
  // ceil(10 / 3) = 4 batches; floor(10 / 3) = 3 with drop_last; 12 / 3 = 4 either way.
  CHECK(dl::num_batches(10, 3, false) == 4);
  CHECK(dl::num_batches(10, 3, true) == 3);
  CHECK(dl::num_batches(12, 3, true) == 4);
  CHECK(dl::num_batches(0, 3, false) == 0);
  CHECK_THROWS_AS(dl::num_batches(10, 0, false), std::invalid_argument);

  auto loader = sequential_loader(IndexDataset(10), 3);
  CHECK_FALSE(dl::range(*loader).num_batches().has_value());
  CHECK(dl::num_batches(dl::range(*loader)) == std::nullopt);
  auto sized = dl::range(*loader, 10);
  CHECK(sized.num_batches() == 4);
  CHECK(dl::num_batches(sized) == 4);
  CHECK(sized.batch_size() == 3);
  CHECK_FALSE(sized.drop_last());

  auto dropping = sequential_loader(IndexDataset(10), 3, 0, /*drop_last=*/true);
  auto view = dl::range(dropping, 10);
  CHECK(view.num_batches() == 3);
  Batches got;
  for (auto& b : view) got.push_back(b);
  CHECK(got.size() == 3);
  CHECK(got == iota_batches(10, 3, true));

  std::vector<int> plain{1, 2, 3};
  CHECK(dl::num_batches(dl::range(plain)) == 3);
}

TEST_CASE("an owning view keeps the loader alive") {
  auto view = dl::range(sequential_loader(IndexDataset(5), 2), 5);
  CHECK(view.num_batches() == 3);
  Batches got;
  for (auto& b : view) got.push_back(b);
  CHECK(got == iota_batches(5, 2));
  std::unique_ptr<Loader> null;
  CHECK_THROWS_AS(dl::range(null), std::invalid_argument);
}

TEST_CASE("any input range goes through range() unchanged") {
  std::vector<Batch> batches = iota_batches(9, 3);
  std::vector<std::size_t> firsts;
  for (auto& b : dl::range(batches) | ranges::views::take(2)) firsts.push_back(b.front());
  CHECK(firsts == std::vector<std::size_t>{0, 3});
  // A view passes through as is, so range() is idempotent.
  auto loader = sequential_loader(IndexDataset(4), 2);
  auto once = dl::range(*loader);
  auto twice = dl::range(once);
  static_assert(std::same_as<decltype(twice), decltype(once)>);
  Batches got;
  for (auto& b : twice) got.push_back(b);
  CHECK(got == iota_batches(4, 2));
}

TEST_CASE("errors: a throwing dataset, misuse of the iterator") {
  for (std::size_t workers : {0, 2}) {
    CAPTURE(workers);
    auto loader = sequential_loader(IndexDataset(10, /*fail_at=*/5), 2, workers);
    auto view = dl::range(*loader);
    std::size_t seen = 0;
    // Sample 5 lies in the third batch; workers wrap the error in a WorkerException.
    CHECK_THROWS_WITH([&] {
      for (auto& b : view) seen += b.size();
    }(), doctest::Contains("IndexDataset: sample 5"));
    CHECK(seen == 4);
    // The failed pass stays failed; a new pass starts normally.
    auto it = view.begin();
    CHECK((*it == Batch{0, 1}));
  }
  auto loader = sequential_loader(IndexDataset(2), 2);
  auto view = dl::range(*loader);
  auto it = view.begin();
  ++it;
  CHECK(it == view.end());
  CHECK_THROWS_AS(*it, std::out_of_range);
  CHECK_THROWS_AS(++it, std::out_of_range);
  CHECK_THROWS_AS(dl::LoaderRange<Loader>().begin(), std::logic_error);
}

}  // namespace ppe_test_dataloader_test_test_loader_range
