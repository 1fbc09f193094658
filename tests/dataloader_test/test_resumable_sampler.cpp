// ppe::dataloaders::ResumableSampler: the per-epoch order is a pure function
// of (seed, epoch), and a run interrupted after any batch resumes, in a fresh
// sampler and loader, with exactly the batches of the uninterrupted run.
#include "ppe_test.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <range/v3/view/take.hpp>

#include <ppe/dataloaders/loader_range.hpp>
#include <ppe/dataloaders/resumable_sampler.hpp>

#include "index_dataset.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_dataloader_test_test_resumable_sampler {

using ppe::State;
using ppe::dataloaders::ResumableSampler;
using ppe::dataloaders::ResumableSamplerOptions;
using ppe_test::Batch;
using ppe_test::Batches;
using ppe_test::IndexDataset;
namespace dl = ppe::dataloaders;

namespace {

struct Config {
  std::size_t size;
  std::size_t batch;
  bool drop_last;
  std::size_t workers;
};

auto make_loader(const Config& c, const ResumableSampler& sampler) {
  return torch::data::make_data_loader(
      IndexDataset(c.size), sampler,
      torch::data::DataLoaderOptions(c.batch).workers(c.workers).drop_last(c.drop_last));
}

ResumableSampler make_sampler(const Config& c, std::uint64_t seed = 42) {
  return ResumableSampler(c.size, ResumableSamplerOptions().seed(seed));
}

/// The batches of `epochs` whole passes, uninterrupted. Draws from LibTorch's
/// global generator between batches, as a model would: the order must not care.
Batches uninterrupted(const Config& c, int epochs) {
  ResumableSampler sampler = make_sampler(c);
  auto loader = make_loader(c, sampler);
  auto batches = dl::range(*loader, sampler);
  Batches out;
  for (int e = 0; e < epochs; ++e)
    for (auto& b : batches) {
      out.push_back(b);
      torch::rand({3});
    }
  return out;
}

/// Runs passes until `stop_after` batches were consumed, saves the sampler's
/// state while that batch is processed, then everything is destroyed. Returns
/// the pickled state, as a snapshot file would hold it.
std::vector<char> interrupted(const Config& c, std::size_t stop_after, Batches& out) {
  ResumableSampler sampler = make_sampler(c);
  auto loader = make_loader(c, sampler);
  auto batches = dl::range(*loader, sampler);
  std::vector<char> saved;
  while (saved.empty()) {
    for (auto& b : batches) {
      out.push_back(b);
      if (out.size() == stop_after) {
        saved = ppe::serialization::pickle_dumps(sampler.state_dict());
        break;
      }
    }
  }
  return saved;
}

/// A fresh sampler (another seed: the state brings its own) and loader that
/// load `saved` and run passes until `total` batches exist. Each pass must
/// deliver something: an empty pass would be an epoch the uninterrupted run
/// does not have.
void resumed(const Config& c, const std::vector<char>& saved, std::size_t total, Batches& out) {
  ResumableSampler sampler = make_sampler(c, /*seed=*/0);
  sampler.load_state_dict(ppe::serialization::pickle_loads(saved));
  auto loader = make_loader(c, sampler);
  auto batches = dl::range(*loader, sampler);
  while (out.size() < total) {
    const std::size_t before = out.size();
    for (auto& b : batches) out.push_back(b);
    REQUIRE(out.size() > before);
  }
}

std::string describe(const Config& c) {
  std::ostringstream s;
  s << "size=" << c.size << " batch=" << c.batch << " drop_last=" << c.drop_last << " workers=" << c.workers;
  return s.str();
}

}  // namespace

TEST_CASE("the order of an epoch is a pure function of (seed, epoch)") {
  const std::size_t n = 50;
  ResumableSampler a(n, ResumableSamplerOptions().seed(3));
  torch::manual_seed(1);
  const auto e0 = a.order(0);
  torch::manual_seed(2);  // LibTorch's generator plays no part
  ResumableSampler b(n, ResumableSamplerOptions().seed(3));
  CHECK(b.order(0) == e0);
  CHECK(a.order(0) == e0);
  // A permutation of 0..n-1.
  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == ResumableSampler::sequential(n).order(0));
  // Other epochs and other seeds give other orders (50! orders: a collision
  // here would be a bug, not chance).
  std::set<std::vector<std::size_t>> orders{e0, a.order(1), a.order(2),
                                            ResumableSampler(n, ResumableSamplerOptions().seed(4)).order(0)};
  CHECK(orders.size() == 4);
  CHECK(e0 != sorted);
  // Seeds use all 64 bits.
  CHECK(ResumableSampler(n, ResumableSamplerOptions().seed(1)).order(0) !=
        ResumableSampler(n, ResumableSamplerOptions().seed(1 + (std::uint64_t{1} << 32))).order(0));
  // Degenerate sizes.
  CHECK(ResumableSampler(0).order(0).empty());
  CHECK(ResumableSampler(1).order(5) == std::vector<std::size_t>{0});
}

TEST_CASE("each pass serves the next epoch's order; the sequential variant repeats 0..n-1") {
  const Config c{10, 4, false, 0};
  ResumableSampler sampler = make_sampler(c);
  auto loader = make_loader(c, sampler);
  for (std::int64_t e = 0; e < 3; ++e) {
    std::vector<std::size_t> seen;
    for (auto& b : *loader) seen.insert(seen.end(), b.begin(), b.end());  // LibTorch's own iteration
    CHECK(sampler.epoch() == e);
    CHECK(seen == sampler.order(e));
    CHECK(sampler.position() == 10);
  }
  ResumableSampler seq = ResumableSampler::sequential(5);
  auto seq_loader = make_loader({5, 2, false, 0}, seq);
  for (int e = 0; e < 2; ++e) {
    Batches got;
    for (auto& b : *seq_loader) got.push_back(b);
    CHECK(got == Batches{{0, 1}, {2, 3}, {4}});
  }
  CHECK(seq.epoch() == 1);
}

TEST_CASE("exact resume after any batch: workers 0 and 2, batch sizes that divide and do not") {
  const int epochs = 3;
  const std::vector<Config> configs = {
      {20, 5, false, 0}, {23, 5, false, 0}, {23, 5, true, 0},  // 4, ceil(23/5) = 5, floor(23/5) = 4 batches
      {20, 5, false, 2}, {23, 5, false, 2}, {23, 5, true, 2},
  };
  for (const Config& c : configs) {
    const Batches reference = uninterrupted(c, epochs);
    const std::size_t nb = dl::num_batches(c.size, c.batch, c.drop_last);
    REQUIRE(reference.size() == nb * epochs);
    // Save points: the first batch of all, the last of epoch 0, and the
    // first, a middle and the last batch of epoch 1 (1-based counts).
    for (std::size_t stop : {std::size_t{1}, nb, nb + 1, nb + nb / 2 + 1, 2 * nb}) {
      CAPTURE(describe(c));
      CAPTURE(stop);
      Batches got;
      const std::vector<char> saved = interrupted(c, stop, got);
      REQUIRE(got.size() == stop);
      resumed(c, saved, reference.size(), got);
      CHECK(got == reference);
    }
  }
}

TEST_CASE("the position counts consumed batches, not batches prefetched by workers") {
  const Config c{40, 4, false, 2};  // max_jobs = 2 * workers = 4 batches prefetched
  ResumableSampler sampler = make_sampler(c);
  auto loader = make_loader(c, sampler);
  auto batches = dl::range(*loader, sampler);
  std::size_t consumed = 0;
  for (auto& b : batches) {
    (void)b;
    ++consumed;
    CHECK(sampler.position() == consumed * 4);
    if (consumed == 3) break;
  }
  CHECK(sampler.state_dict().at("position").as_int() == 12);
  CHECK(sampler.state_dict().at("epoch").as_int() == 0);
}

TEST_CASE("state layout, and resets right after a load keep the loaded position") {
  ResumableSampler sampler(23, ResumableSamplerOptions().seed(9));
  const State fresh = sampler.state_dict();
  CHECK(fresh.at("epoch").as_int() == 0);
  CHECK(fresh.at("position").as_int() == 0);
  CHECK(fresh.at("seed").as_int() == 9);
  CHECK(fresh.at("size").as_int() == 23);
  CHECK(fresh.at("shuffle").as_bool());

  sampler.load_state_dict(State::dict({{"epoch", 2}, {"position", 10}, {"seed", 9}, {"size", 23}, {"shuffle", true}}));
  sampler.reset();
  sampler.reset();  // e.g. a loader constructor and then begin()
  auto next = sampler.next(5);
  REQUIRE(next.has_value());
  const auto order = sampler.order(2);
  CHECK(*next == std::vector<std::size_t>(order.begin() + 10, order.begin() + 15));
  CHECK(sampler.epoch() == 2);

  // Loaded at the end of an epoch: the next pass serves the following epoch.
  sampler.reset();  // a new pass: loading in the middle of one would warn
  sampler.load_state_dict(State::dict({{"epoch", 2}, {"position", 23}, {"seed", 9}, {"size", 23}, {"shuffle", true}}));
  sampler.reset();
  CHECK(sampler.epoch() == 3);
  const auto order3 = sampler.order(3);
  CHECK(*sampler.next(5) == std::vector<std::size_t>(order3.begin(), order3.begin() + 5));

  // A seed above 2^63 survives the int64 of the state.
  ResumableSampler big(4, ResumableSamplerOptions().seed(~std::uint64_t{0}));
  ResumableSampler other(4);
  other.load_state_dict(big.state_dict());
  CHECK(other.seed() == ~std::uint64_t{0});
  CHECK(other.order(0) == big.order(0));
}

TEST_CASE("a load in the middle of a pass warns: the fetched batches follow the old order") {
  std::vector<std::string> warnings;
  auto previous = ppe::set_warning_handler([&](std::string_view m) { warnings.emplace_back(m); });
  const Config c{20, 5, false, 0};
  ResumableSampler sampler = make_sampler(c);
  const State start = sampler.state_dict();
  auto loader = make_loader(c, sampler);
  auto batches = dl::range(*loader, sampler);
  sampler.load_state_dict(start);  // before the pass: fine
  CHECK(warnings.empty());
  for (auto& b : batches) {
    (void)b;
    sampler.load_state_dict(start);  // e.g. an autoload inside the first iteration
    break;
  }
  ppe::set_warning_handler(previous);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("a pass over the data is in progress (5 of 20 samples of epoch 0 consumed)") !=
        std::string::npos);
}

TEST_CASE("copies share the state: the loader's copy and the caller's handle") {
  ResumableSampler sampler(6, ResumableSamplerOptions().seed(1));
  ResumableSampler copy = sampler;
  ResumableSampler moved = std::move(copy);
  moved.reset();
  moved.next(4);
  CHECK(sampler.position() == 4);
}

TEST_CASE("range() with a sampler the loader does not use is an error") {
  const Config c{10, 5, false, 0};
  ResumableSampler used = make_sampler(c);
  ResumableSampler other = make_sampler(c);  // same options, separate state
  auto loader = make_loader(c, used);
  auto batches = dl::range(*loader, other);
  CHECK_THROWS_WITH_AS(*batches.begin(), doctest::Contains("is not the one the loader uses"), std::logic_error);
}

TEST_CASE("without the range adapter, workers = 0 still resumes exactly") {
  // Handed-out indices equal consumed ones when the loader does not prefetch.
  const Config c{23, 5, false, 0};
  Batches reference;
  {
    ResumableSampler s = make_sampler(c);
    auto loader = make_loader(c, s);
    for (int e = 0; e < 2; ++e)
      for (auto& b : *loader) reference.push_back(b);
  }
  Batches got;
  std::vector<char> saved;
  {
    ResumableSampler s = make_sampler(c);
    auto loader = make_loader(c, s);
    for (auto& b : *loader) {
      got.push_back(b);
      if (got.size() == 3) {
        saved = ppe::serialization::pickle_dumps(s.state_dict());
        break;
      }
    }
  }
  ResumableSampler s = make_sampler(c, 0);
  s.load_state_dict(ppe::serialization::pickle_loads(saved));
  auto loader = make_loader(c, s);
  for (int pass = 0; pass < 2; ++pass)
    for (auto& b : *loader) got.push_back(b);
  CHECK(got == reference);
}

TEST_CASE("loops whose epochs are not whole passes call set_epoch") {
  // Like PPE's engine with train_len = 3 over a 5-batch loader: each epoch
  // takes 3 batches and leaves the pass; set_epoch(e) says which epoch it is.
  const Config c{25, 5, false, 2};
  auto run = [&](ResumableSampler& s, auto& loader, std::int64_t from, std::int64_t to, Batches& out,
                 std::optional<std::size_t> stop_after, std::vector<char>* saved) {
    auto batches = dl::range(*loader, s);
    for (std::int64_t e = from; e < to; ++e) {
      s.set_epoch(e);
      for (auto& b : batches | ranges::views::take(3)) {
        out.push_back(b);
        if (stop_after && out.size() == *stop_after) {
          *saved = ppe::serialization::pickle_dumps(s.state_dict());
          return;
        }
      }
    }
  };
  Batches reference;
  {
    ResumableSampler s = make_sampler(c);
    auto loader = make_loader(c, s);
    run(s, loader, 0, 3, reference, std::nullopt, nullptr);
  }
  REQUIRE(reference.size() == 9);
  // Epoch 1 starts at the start of its order although epoch 0 left its pass early.
  const auto order1 = make_sampler(c).order(1);
  CHECK(reference[3] == Batch(order1.begin(), order1.begin() + 5));
  // Stop at the last batch of epoch 1 (6) and in its middle (5).
  for (std::size_t stop : {5, 6}) {
    CAPTURE(stop);
    Batches got;
    std::vector<char> saved;
    {
      ResumableSampler s = make_sampler(c);
      auto loader = make_loader(c, s);
      run(s, loader, 0, 3, got, stop, &saved);
    }
    // The loop knows its epoch (a manager's iteration / iters_per_epoch).
    const auto epoch = static_cast<std::int64_t>(stop / 3);
    ResumableSampler s = make_sampler(c, 0);
    s.load_state_dict(ppe::serialization::pickle_loads(saved));
    auto loader = make_loader(c, s);
    auto batches = dl::range(*loader, s);
    s.set_epoch(epoch);
    for (auto& b : batches | ranges::views::take(3 - stop % 3)) got.push_back(b);
    run(s, loader, epoch + 1, 3, got, std::nullopt, nullptr);
    CHECK(got == reference);
  }
}

TEST_CASE("load_state_dict rejects states that cannot resume this sampler, and changes nothing") {
  ResumableSampler sampler(23, ResumableSamplerOptions().seed(5));
  sampler.reset();
  sampler.next(5);
  const State before = sampler.state_dict();
  auto state = [](std::int64_t epoch, std::int64_t position, std::int64_t size, State shuffle) {
    return State::dict({{"epoch", epoch}, {"position", position}, {"seed", 5}, {"size", size}, {"shuffle", shuffle}});
  };
  auto message = [&](const State& s) {
    try {
      sampler.load_state_dict(s);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(state(0, 0, 24, true)).find("the state is for 24 samples, this sampler has 23") != std::string::npos);
  CHECK(message(state(0, 0, 23, false)).find("the state is for a sequential sampler, this one is shuffling") !=
        std::string::npos);
  CHECK(message(state(-1, 0, 23, true)).find("'epoch' is -1, expected >= 0") != std::string::npos);
  CHECK(message(state(0, 24, 23, true)).find("'position' is 24, expected 0 to 23") != std::string::npos);
  CHECK(message(state(0, 0, 23, 1)).find("'shuffle' is a int, expected a bool") != std::string::npos);
  CHECK(message(State::dict({{"epoch", 1.5}})).find("'epoch' is a double, expected an int") != std::string::npos);
  CHECK(message(State::dict({{"epoch", 1}})).find("key 'position' not found") != std::string::npos);
  CHECK(message(State(3)).find("expected a dict, got int") != std::string::npos);
  CHECK(sampler.state_dict() == before);
  CHECK_THROWS_AS(sampler.set_epoch(-1), std::invalid_argument);
}

TEST_CASE("LibTorch's archive form (torch::save / torch::load of a sampler)") {
  ResumableSampler sampler(23, ResumableSamplerOptions().seed(11));
  sampler.reset();
  sampler.next(5);
  sampler.next(5);
  std::stringstream stream;
  torch::save(sampler, stream);
  ResumableSampler restored(23);
  torch::load(restored, stream);
  CHECK(restored.state_dict() == sampler.state_dict());
  CHECK(restored.position() == 10);
}

// ---- the rank split (PyTorch's DistributedSampler) --------------------------

namespace {

ResumableSampler rank_sampler(std::size_t size, int replicas, int rank, bool drop_last = false, bool shuffle = true,
                              std::uint64_t seed = 42) {
  return ResumableSampler(
      size,
      ResumableSamplerOptions().seed(seed).shuffle(shuffle).num_replicas(replicas).rank(rank).drop_last(drop_last));
}

/// `DistributedSampler(range(n), num_replicas, rank=r, shuffle=False,
/// drop_last)` for every rank r: the split alone, as positions in the order.
struct PythonSplit {
  std::size_t n;
  int replicas;
  bool drop_last;
  std::vector<Batch> shares;  // per rank
};

const std::vector<PythonSplit>& python_splits() {
  // From /usr/bin/python3 (torch 1.13), with D = torch.utils.data.DistributedSampler:
  //   [list(D(range(n), num_replicas=R, rank=r, shuffle=False, drop_last=dl)) for r in range(R)]
  static const std::vector<PythonSplit> splits = {
      {10, 4, false, {{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}},    // padded with 0, 1
      {3, 8, false, {{0}, {1}, {2}, {0}, {1}, {2}, {0}, {1}}},         // padding > dataset: repeated
      {10, 4, true, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}},                 // tail 8, 9 dropped
      {12, 4, false, {{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}},  // divisible
      {12, 4, true, {{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}},   // divisible: nothing dropped
      {3, 8, true, {{}, {}, {}, {}, {}, {}, {}, {}}},                  // fewer samples than ranks
      {0, 2, false, {{}, {}}},                                         // empty dataset
  };
  return splits;
}

/// The batches of each rank, with one sampler, loader and range per rank run
/// in lockstep in this process as the processes of a distributed run would
/// be (each rank has as many batches), until each has `total` batches or, if
/// `stop_after` is given, until that batch, then every rank's state is saved
/// into `saved` while that batch is processed. `load[r]` (when given) is
/// loaded first into rank r's sampler, made with another seed (the state
/// brings its own).
std::vector<Batches> run_ranks(const Config& c, int replicas, bool drop_last, std::size_t total,
                               std::optional<std::size_t> stop_after = std::nullopt,
                               std::vector<std::vector<char>>* saved = nullptr,
                               const std::vector<std::vector<char>>* load = nullptr) {
  using Loader = decltype(make_loader(c, std::declval<const ResumableSampler&>()));
  using Range = decltype(dl::range(*std::declval<Loader&>(), std::declval<ResumableSampler>()));
  std::vector<ResumableSampler> samplers;
  std::vector<Loader> loaders;
  std::vector<Range> views;
  for (int r = 0; r < replicas; ++r) {
    samplers.push_back(rank_sampler(c.size, replicas, r, drop_last, true, load ? 0 : 42));
    if (load) samplers.back().load_state_dict(ppe::serialization::pickle_loads((*load)[static_cast<std::size_t>(r)]));
    loaders.push_back(make_loader(c, samplers.back()));
    views.push_back(dl::range(*loaders.back(), samplers.back()));
  }
  std::vector<Batches> out(static_cast<std::size_t>(replicas));
  while (out[0].size() < total) {
    std::vector<typename Range::iterator> its;
    for (Range& v : views) its.push_back(v.begin());
    std::size_t before = out[0].size();
    while (its[0] != views[0].end()) {
      for (std::size_t r = 0; r < views.size(); ++r) {
        REQUIRE(its[r] != views[r].end());
        out[r].push_back(*its[r]);
      }
      if (stop_after && out[0].size() == *stop_after) {
        for (const ResumableSampler& s : samplers) saved->push_back(ppe::serialization::pickle_dumps(s.state_dict()));
        return out;
      }
      for (auto& it : its) ++it;
    }
    for (std::size_t r = 1; r < views.size(); ++r) CHECK(its[r] == views[r].end());
    REQUIRE(out[0].size() > before);  // an empty pass would be an epoch the reference does not have
  }
  return out;
}

}  // namespace

TEST_CASE("distributed: each rank's share is DistributedSampler's split (padding, drop_last, striding)") {
  for (const PythonSplit& p : python_splits()) {
    CAPTURE(p.n);
    CAPTURE(p.replicas);
    CAPTURE(p.drop_last);
    for (int r = 0; r < p.replicas; ++r) {
      CAPTURE(r);
      const Batch& expected = p.shares[static_cast<std::size_t>(r)];
      // shuffle off: the indices are DistributedSampler's own.
      ResumableSampler seq = rank_sampler(p.n, p.replicas, r, p.drop_last, /*shuffle=*/false);
      CHECK(seq.indices(0) == expected);
      CHECK(seq.indices(3) == expected);
      CHECK(seq.size() == expected.size());  // len(sampler)
      CHECK(seq.total_size() == expected.size() * static_cast<std::size_t>(p.replicas));
      CHECK(seq.dataset_length() == p.n);
      // shuffle on: the same split applied to this sampler's permutation.
      ResumableSampler shuf = rank_sampler(p.n, p.replicas, r, p.drop_last);
      const auto order = shuf.order(1);
      Batch mapped;
      for (std::size_t k : expected) mapped.push_back(order[k]);
      CHECK(shuf.indices(1) == mapped);
      // What the loader serves in a pass is that share.
      shuf.set_epoch(1);
      shuf.reset();
      Batch served;
      while (auto b = shuf.next(2)) served.insert(served.end(), b->begin(), b->end());
      CHECK(served == mapped);
    }
  }
  // One rank is the sampler of before: the share is the whole order.
  ResumableSampler one(23, ResumableSamplerOptions().seed(42).drop_last(true));
  CHECK(one.indices(2) == one.order(2));
  CHECK(one.size() == 23);
}

TEST_CASE("distributed: every rank shuffles the same permutation; the shares cover the dataset") {
  for (std::size_t n : {20, 23}) {  // divisible by 4, and not: 23 pads 1, drop_last drops 3
    for (bool drop_last : {false, true}) {
      CAPTURE(n);
      CAPTURE(drop_last);
      const int replicas = 4;
      for (std::int64_t e = 0; e < 3; ++e) {
        CAPTURE(e);
        const auto order = rank_sampler(n, replicas, 0, drop_last).order(e);
        std::vector<std::size_t> all;
        for (int r = 0; r < replicas; ++r) {
          ResumableSampler s = rank_sampler(n, replicas, r, drop_last);
          CHECK(s.order(e) == order);  // the same permutation on every rank
          const auto share = s.indices(e);
          CHECK(share.size() == (drop_last ? n / 4 : (n + 3) / 4));
          all.insert(all.end(), share.begin(), share.end());
        }
        // Expected: the order, padded with its first indices or cut to a multiple of 4.
        std::vector<std::size_t> expected(order.begin(),
                                          order.begin() + static_cast<std::ptrdiff_t>(drop_last ? n / 4 * 4 : n));
        if (!drop_last && n % 4 != 0)
          expected.insert(expected.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(4 - n % 4));
        std::sort(all.begin(), all.end());
        std::sort(expected.begin(), expected.end());
        CHECK(all == expected);
      }
    }
  }
  // The orders differ across epochs, and the loader's length is per rank.
  CHECK(rank_sampler(23, 2, 1).indices(0) != rank_sampler(23, 2, 1).indices(1));
  const Config c{23, 5, false, 0};
  ResumableSampler s = rank_sampler(c.size, 2, 1);
  auto loader = make_loader(c, s);
  CHECK(dl::range(*loader, s).num_batches() == 3);  // ceil(12 / 5)
}

TEST_CASE("distributed: a 2-rank run stopped mid-epoch resumes exactly in fresh samplers") {
  const int epochs = 3;
  for (const Config& c : std::vector<Config>{{23, 5, false, 0}, {23, 5, false, 2}, {23, 5, true, 2}}) {
    for (bool drop_last : {false, true}) {  // the split's: 12 (one padded) or 11 samples per rank
      CAPTURE(describe(c));
      CAPTURE(drop_last);
      const std::size_t share = drop_last ? 11 : 12;
      const std::size_t nb = dl::num_batches(share, c.batch, c.drop_last);
      const std::vector<Batches> reference = run_ranks(c, 2, drop_last, nb * epochs);
      // Each epoch of each rank is its share (a prefix of it when the loader drops its last, partial batch).
      for (int r = 0; r < 2; ++r) {
        const ResumableSampler s = rank_sampler(c.size, 2, r, drop_last);
        for (std::int64_t e = 0; e < epochs; ++e) {
          Batch got;
          for (std::size_t b = 0; b < nb; ++b) {
            const Batch& batch = reference[static_cast<std::size_t>(r)][static_cast<std::size_t>(e) * nb + b];
            got.insert(got.end(), batch.begin(), batch.end());
          }
          const auto expected = s.indices(e);
          CHECK(got == Batch(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(got.size())));
        }
      }
      for (std::size_t stop : {std::size_t{1}, nb, nb + 1, 2 * nb}) {
        CAPTURE(stop);
        std::vector<std::vector<char>> saved;
        std::vector<Batches> got = run_ranks(c, 2, drop_last, nb * epochs, stop, &saved);
        REQUIRE(saved.size() == 2);
        CHECK(ppe::serialization::pickle_loads(saved[0]).at("rank").as_int() == 0);
        CHECK(ppe::serialization::pickle_loads(saved[1]).at("rank").as_int() == 1);
        std::vector<Batches> rest = run_ranks(c, 2, drop_last, nb * epochs - stop, std::nullopt, nullptr, &saved);
        // A snapshot written by rank 0 alone resumes both ranks too: the ranks' states differ only in "rank".
        const std::vector<std::vector<char>> rank0_only = {saved[0], saved[0]};
        std::vector<Batches> rest0 = run_ranks(c, 2, drop_last, nb * epochs - stop, std::nullopt, nullptr, &rank0_only);
        for (std::size_t r = 0; r < 2; ++r) {
          CHECK(rest0[r] == rest[r]);
          got[r].insert(got[r].end(), rest[r].begin(), rest[r].end());
          CHECK(got[r] == reference[r]);
        }
      }
    }
  }
}

TEST_CASE("elastic: a run stopped on W ranks continues on W' ranks; each epoch serves its order once") {
  // Per rank, the loader's batch is 2; the split pads (or, with the split's
  // drop_last, truncates) as DistributedSampler does. The epoch stopped in
  // is served as its order's prefix [0, consumed) by the W ranks, then as
  // the rest [consumed, n) split over W' ranks (padded or truncated the
  // same way); later epochs split whole over W'.
  const std::size_t n = 24;
  const int epochs = 3;
  for (const auto& [w, w2] : std::vector<std::pair<int, int>>{{2, 1}, {1, 2}, {2, 3}, {3, 2}, {4, 2}}) {
    for (bool split_drop : {false, true}) {
      const Config c{n, 2, false, 0};
      const std::size_t share = split_drop ? n / static_cast<std::size_t>(w) : (n + w - 1) / static_cast<std::size_t>(w);
      const std::size_t nb = dl::num_batches(share, c.batch, c.drop_last);
      for (std::size_t stop : {std::size_t{1}, nb - 1, nb, nb + 2}) {
        CAPTURE(w);
        CAPTURE(w2);
        CAPTURE(split_drop);
        CAPTURE(stop);
        std::vector<std::vector<char>> saved;
        const std::vector<Batches> first = run_ranks(c, w, split_drop, nb * epochs, stop, &saved);
        const std::int64_t e0 = static_cast<std::int64_t>(stop / nb);  // the epoch stopped in (or after)
        const std::size_t done = stop - static_cast<std::size_t>(e0) * nb;  // its batches served per rank
        const std::size_t consumed = std::min(n, done * c.batch * static_cast<std::size_t>(w));
        // The rest of epoch e0 over W' ranks, as a fresh sampler split sees it.
        const std::size_t rest = n - consumed;
        const std::size_t share2 = split_drop ? rest / static_cast<std::size_t>(w2)
                                              : (rest + w2 - 1) / static_cast<std::size_t>(w2);
        const std::size_t left = done == 0 ? 0 : dl::num_batches(share2, c.batch, c.drop_last);
        const std::size_t whole2 = dl::num_batches(
            split_drop ? n / static_cast<std::size_t>(w2) : (n + w2 - 1) / static_cast<std::size_t>(w2), c.batch,
            c.drop_last);
        // Rank 0's state resumes every rank of the new world.
        const std::vector<std::vector<char>> rank0(static_cast<std::size_t>(w2), saved[0]);
        ResumableSampler probe = rank_sampler(n, w2, 0, split_drop, true, 0);
        probe.load_state_dict(ppe::serialization::pickle_loads(saved[0]));
        probe.batching(c.batch, c.drop_last);
        const auto pos = probe.resized_position();
        REQUIRE(pos.has_value());
        CHECK(pos->iters_per_epoch == static_cast<std::int64_t>(whole2));
        if (done == 0) {  // stopped at an epoch's end: the next pass serves epoch e0 whole
          CHECK(pos->epoch == e0 - 1);
          CHECK(pos->iteration == e0 * static_cast<std::int64_t>(whole2));
        } else {
          CHECK(pos->epoch == e0);
          CHECK(pos->iteration == e0 * static_cast<std::int64_t>(whole2) + static_cast<std::int64_t>(whole2 - left));
        }
        const std::int64_t first_whole = done == 0 ? e0 : e0 + 1;  // the first epoch split whole over W'
        const std::size_t later = whole2 * static_cast<std::size_t>(epochs - first_whole);
        const std::vector<Batches> second =
            run_ranks(c, w2, split_drop, left + later, std::nullopt, nullptr, &rank0);
        const std::vector<std::size_t> order0 = rank_sampler(n, 1, 0).order(e0);
        // Epoch e0: what the W ranks served of it, then the first pass of the W' ranks.
        std::multiset<std::size_t> got, want;
        for (int r = 0; r < w; ++r)
          for (std::size_t b = static_cast<std::size_t>(e0) * nb; b < stop; ++b)
            for (std::size_t i : first[static_cast<std::size_t>(r)][b]) got.insert(i);
        for (int r = 0; r < w2; ++r)
          for (std::size_t b = 0; b < left; ++b)
            for (std::size_t i : second[static_cast<std::size_t>(r)][b]) got.insert(i);
        if (done > 0) {
          for (std::size_t j = 0; j < consumed; ++j) want.insert(order0[j]);
          for (std::size_t j = 0; j < share2 * static_cast<std::size_t>(w2); ++j)
            want.insert(order0[consumed + j % rest]);
          CHECK(got == want);
          // Nothing repeated, nothing skipped, when the rest divides by W' (or is cut to it).
          if (rest % static_cast<std::size_t>(w2) == 0) CHECK(got == std::multiset<std::size_t>(order0.begin(), order0.end()));
        }
        // Later epochs: split whole over W'.
        for (int r = 0; r < w2; ++r) {
          const ResumableSampler s2 = rank_sampler(n, w2, r, split_drop);
          for (std::int64_t e = first_whole; e < epochs; ++e) {
            Batch all;
            const std::size_t from = left + static_cast<std::size_t>(e - first_whole) * whole2;
            for (std::size_t b = from; b < from + whole2; ++b)
              all.insert(all.end(), second[static_cast<std::size_t>(r)][b].begin(),
                         second[static_cast<std::size_t>(r)][b].end());
            const auto expected = s2.indices(e);
            CHECK(all == Batch(expected.begin(), expected.end()));
          }
        }
      }
    }
  }
}

// The rule docs/distributed.md states, over many worlds: the rest of the
// interrupted epoch (r = n - consumed samples) is split over W' ranks as
// DistributedSampler splits an epoch. Without the split's drop_last every
// sample of the rest is served, and the first ceil(r / W') * W' - r samples of
// the rest (cycling when r < W') once more: at most W' - 1 repeats in all.
// With it, the last r mod W' samples of the rest are not served that epoch:
// at most W' - 1 (all of the rest when r < W'). Batch 1, so any count of
// samples per rank can be the stopping point.
TEST_CASE("elastic: the rest of the interrupted epoch over any W': what is repeated, what is dropped") {
  for (const std::size_t n : {std::size_t{10}, std::size_t{13}}) {
    for (const int w : {1, 2, 3}) {
      for (const int w2 : {1, 2, 3, 5, 8}) {
        if (w2 == w) continue;
        for (const bool split_drop : {false, true}) {
          const Config c{n, 1, false, 0};
          const std::size_t share =
              split_drop ? n / static_cast<std::size_t>(w) : (n + w - 1) / static_cast<std::size_t>(w);
          for (const std::size_t stop : {std::size_t{1}, share / 2, share - 1}) {
            if (stop == 0 || stop >= share) continue;
            CAPTURE(n);
            CAPTURE(w);
            CAPTURE(w2);
            CAPTURE(split_drop);
            CAPTURE(stop);
            std::vector<std::vector<char>> saved;
            const std::vector<Batches> first = run_ranks(c, w, split_drop, share, stop, &saved);
            const std::size_t consumed = stop * static_cast<std::size_t>(w);
            const std::size_t rest = n - consumed;
            const std::size_t share2 =
                split_drop ? rest / static_cast<std::size_t>(w2) : (rest + w2 - 1) / static_cast<std::size_t>(w2);
            std::multiset<std::size_t> got;
            for (int r = 0; r < w; ++r)
              for (const Batch& b : first[static_cast<std::size_t>(r)]) got.insert(b.begin(), b.end());
            if (share2 > 0) {
              const std::vector<std::vector<char>> rank0(static_cast<std::size_t>(w2), saved[0]);
              const std::vector<Batches> second = run_ranks(c, w2, split_drop, share2, std::nullopt, nullptr, &rank0);
              for (int r = 0; r < w2; ++r)
                for (std::size_t b = 0; b < share2; ++b)
                  got.insert(second[static_cast<std::size_t>(r)][b].begin(), second[static_cast<std::size_t>(r)][b].end());
            }
            const std::vector<std::size_t> order = rank_sampler(n, 1, 0).order(0);
            std::size_t repeated = 0, dropped = 0;
            for (std::size_t j = 0; j < n; ++j) {
              const std::size_t times = got.count(order[j]);
              if (j < consumed) {
                CHECK(times == 1);  // the prefix the W ranks served, once
              } else if (times == 0) {
                ++dropped;
                CHECK(split_drop);
                CHECK(j >= consumed + share2 * static_cast<std::size_t>(w2));  // the end of the rest
              } else {
                repeated += times - 1;
              }
            }
            CHECK(got.size() == consumed + share2 * static_cast<std::size_t>(w2));
            if (split_drop) {
              CHECK(repeated == 0);
              CHECK(dropped == rest % static_cast<std::size_t>(w2));
            } else {
              CHECK(dropped == 0);
              CHECK(repeated == share2 * static_cast<std::size_t>(w2) - rest);
            }
            CHECK(repeated + dropped <= static_cast<std::size_t>(w2 - 1));
          }
        }
      }
    }
  }
  // The example of docs/distributed.md: n = 10, 4 samples consumed on each of
  // 2 ranks, 8 ranks after: the rest (2 samples) is served 4 times each.
  std::vector<std::vector<char>> saved;
  const Config c{10, 1, false, 0};
  run_ranks(c, 2, false, 5, 4, &saved);
  const std::vector<std::vector<char>> rank0(8, saved[0]);
  const std::vector<Batches> after = run_ranks(c, 8, false, 1, std::nullopt, nullptr, &rank0);
  std::multiset<std::size_t> rest;
  for (const Batches& b : after) rest.insert(b[0].begin(), b[0].end());
  const std::vector<std::size_t> order = rank_sampler(10, 1, 0).order(0);
  CHECK(rest.size() == 8);
  CHECK(rest.count(order[8]) == 4);
  CHECK(rest.count(order[9]) == 4);
}

TEST_CASE("distributed: invalid ranks and states are errors; a state of another world size re-splits") {
  CHECK_THROWS_WITH_AS(rank_sampler(10, 0, 0), "ppe::dataloaders::ResumableSampler: num_replicas is 0, expected >= 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rank_sampler(10, 2, 2),
                       "ppe::dataloaders::ResumableSampler: rank is 2, expected 0 <= rank < 2 (num_replicas)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rank_sampler(10, 2, -1),
                       "ppe::dataloaders::ResumableSampler: rank is -1, expected 0 <= rank < 2 (num_replicas)",
                       std::invalid_argument);

  ResumableSampler two = rank_sampler(23, 2, 1);
  const State st = two.state_dict();
  CHECK(st.at("num_replicas").as_int() == 2);
  CHECK(st.at("rank").as_int() == 1);
  CHECK(st.at("drop_last").as_bool() == false);
  CHECK(st.at("size").as_int() == 23);  // the dataset's, not the share's
  CHECK(st.at("segment_start").as_int() == 0);
  // Another world size re-splits (the test below checks the samples): 2 ranks
  // had consumed 5 samples each, so the order from 10 on is split over 4.
  ResumableSampler four = rank_sampler(23, 4, 0);
  State mid = st;
  mid.set("position", 5);
  four.load_state_dict(mid);
  CHECK(four.segment_start() == 10);
  CHECK(four.position() == 0);
  CHECK(four.segment_size() == 4);  // ceil(13 / 4)
  CHECK(four.size() == 6);          // a whole epoch over 4: ceil(23 / 4)
  CHECK(four.state_dict().at("segment_start").as_int() == 10);
  // The batch size is needed to place the data in this world's batches.
  CHECK_THROWS_WITH_AS(four.resized_position(), doctest::Contains("make ppe::dataloaders::range(loader, sampler) "
                                                                  "before the state is loaded"),
                       std::logic_error);
  four.batching(2, false);
  const auto p = four.resized_position();
  REQUIRE(p.has_value());
  CHECK(p->epoch == 0);
  CHECK(p->iters_per_epoch == 3);  // ceil(6 / 2)
  CHECK(p->iteration == 1);        // 2 batches of this world left (ceil(4 / 2)) of 3
  // A state of the single-process layout (no num_replicas) is a world of one.
  const State old = State::dict({{"epoch", 0}, {"position", 0}, {"seed", 42}, {"size", 23}, {"shuffle", true}});
  four.load_state_dict(old);
  CHECK(four.segment_start() == 0);
  CHECK(four.resized_position().has_value());  // one rank then, four now
  // The same split: no re-split, nothing to place.
  ResumableSampler other = rank_sampler(23, 2, 0);
  other.load_state_dict(mid);
  CHECK(other.position() == 5);
  CHECK_FALSE(other.resized_position().has_value());
  // Another drop_last where it changes the shares (23 over 2) re-splits too,
  // and does not where it does not (20 over 2).
  ResumableSampler dropping = rank_sampler(23, 2, 0, /*drop_last=*/true);
  dropping.load_state_dict(mid);
  CHECK(dropping.segment_start() == 10);
  ResumableSampler even = rank_sampler(20, 2, 0, true);
  even.load_state_dict(rank_sampler(20, 2, 1).state_dict());
  CHECK(even.segment_start() == 0);
  even.batching(2, false);
  CHECK_FALSE(even.resized_position().has_value());
  // segment_start is bounded by the dataset.
  State beyond = st;
  beyond.set("segment_start", 24);
  CHECK_THROWS_WITH_AS(two.load_state_dict(beyond), doctest::Contains("'segment_start' is 24, expected 0 to 23"),
                       std::invalid_argument);
  // The position is bounded by the share (12 of 23 samples).
  State far = st;
  far.set("position", 13);
  CHECK_THROWS_WITH_AS(two.load_state_dict(far), doctest::Contains("'position' is 13, expected 0 to 12"),
                       std::invalid_argument);
  State bad_rank = st;
  bad_rank.set("rank", 2);
  CHECK_THROWS_WITH_AS(two.load_state_dict(bad_rank),
                       doctest::Contains("the state is for rank 2 of num_replicas 2, expected num_replicas >= 1 and "
                                         "0 <= rank < num_replicas"),
                       std::invalid_argument);
  State bad_type = st;
  bad_type.set("drop_last", 0);
  CHECK_THROWS_WITH_AS(two.load_state_dict(bad_type), doctest::Contains("'drop_last' is a int, expected a bool"),
                       std::invalid_argument);

  // LibTorch's archives carry the split too.
  two.reset();
  two.next(5);
  std::stringstream stream;
  torch::save(two, stream);
  ResumableSampler restored = rank_sampler(23, 2, 1, false, true, 0);
  torch::load(restored, stream);
  CHECK(restored.state_dict() == two.state_dict());
  std::stringstream again;
  torch::save(two, again);
  torch::load(four, again);  // re-split: 2 ranks consumed 5 samples each
  CHECK(four.segment_start() == 10);
}

}  // namespace ppe_test_dataloader_test_test_resumable_sampler
