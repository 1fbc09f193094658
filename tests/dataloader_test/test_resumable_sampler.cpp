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
        saved = ppe::pickle_dumps(sampler.state_dict());
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
  sampler.load_state_dict(ppe::pickle_loads(saved));
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
        saved = ppe::pickle_dumps(s.state_dict());
        break;
      }
    }
  }
  ResumableSampler s = make_sampler(c, 0);
  s.load_state_dict(ppe::pickle_loads(saved));
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
          *saved = ppe::pickle_dumps(s.state_dict());
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
    s.load_state_dict(ppe::pickle_loads(saved));
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
