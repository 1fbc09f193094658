#pragma once
/// \file
/// `ResumableSampler`: a `torch::data` sampler whose order is a pure function
/// of (seed, epoch) and whose position can be saved and restored, so that a
/// run killed mid-epoch resumes with exactly the next batch.
///
/// \code
///   auto sampler = ppe::dataloaders::ResumableSampler(*dataset.size(),
///                                                      ppe::dataloaders::ResumableSamplerOptions().seed(7));
///   auto loader = torch::data::make_data_loader(dataset, sampler, torch::data::DataLoaderOptions(64).workers(2));
///   auto batches = ppe::dataloaders::range(*loader, sampler);  // counts what the loop consumes
///   manager.register_state_object("sampler", sampler);          // saved in snapshots
///   while (!manager.stop_trigger())                             // autoload runs before the pass
///     for (auto& batch : batches) {
///       manager.run_iteration([&] { ... });
///       if (manager.stop_trigger()) break;
///     }
/// \endcode
///
/// The resume rule (see docs/dataloaders.md):
/// - The state is (epoch, position): how many samples of that epoch's order
///   the loop has *consumed*. Through `ppe::dataloaders::range(loader,
///   sampler)` a batch counts as consumed as soon as the loop gets it, so a
///   state saved while batch k is processed resumes with batch k+1; batches
///   that worker threads prefetched do not count. Without the range, the
///   position counts the indices handed to the loader, which equals what the
///   loop consumed only with `workers == 0`.
/// - A pass (one `begin()` of the loader) after a pass that delivered a batch
///   serves the next epoch from its start; the first pass after construction,
///   `load_state_dict` or `set_epoch` serves the current epoch from the
///   current position (the next epoch when that position is already the end
///   of the epoch). So a reset right after a load keeps the loaded position.
/// - Loops whose epochs are not whole passes (leaving a pass early) call
///   `set_epoch(e)` before each epoch, as with PyTorch's DistributedSampler.
///
/// The sampler is a handle: copies share one state. `make_data_loader` keeps
/// a copy, the caller keeps another to read and restore the state.
///
/// Distributed: with `num_replicas` and `rank` each rank serves its share of
/// the epoch's order, split as PyTorch's `DistributedSampler` splits its
/// permutation (padding or `drop_last`, then every `num_replicas`-th index
/// from `rank`). The permutation itself is this sampler's own (below), the
/// same on every rank, not `torch.randperm`. Positions count this rank's share.

#include <torch/data/samplers/base.h>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/state.hpp"
#include "ppe/warnings.hpp"

namespace ppe::dataloaders {

/// Options of `ResumableSampler`.
struct ResumableSamplerOptions {
  /// The seed of the shuffled orders (each epoch's order depends on it and on
  /// the epoch only).
  PPE_ARG(std::uint64_t, seed) = 0;
  /// Shuffle each epoch (false: 0, 1, 2, ... every epoch).
  PPE_ARG(bool, shuffle) = true;
  /// The number of ranks that split each epoch (the world size), >= 1.
  PPE_ARG(int, num_replicas) = 1;
  /// This sampler's rank, in [0, num_replicas).
  PPE_ARG(int, rank) = 0;
  /// When the dataset does not divide by `num_replicas`: drop the tail of the
  /// order (true) or pad it with its first indices (false), so that every rank
  /// gets as many samples. Not the loader's `drop_last`.
  PPE_ARG(bool, drop_last) = false;
};

/// Where a re-split state leaves the data, in the loader's batches of this
/// world (`ResumableSampler::resized_position`).
struct ResizedPosition {
  /// The epoch being served.
  std::int64_t epoch = 0;
  /// `epoch * iters_per_epoch` plus this epoch's batches served so far,
  /// counted as this world serves them (its batches left subtracted from a
  /// whole epoch's).
  std::int64_t iteration = 0;
  /// The batches of a whole epoch in this world.
  std::int64_t iters_per_epoch = 0;
};

/// A sampler with a reproducible per-epoch order and a resumable position.
/// Derives from `torch::data::samplers::Sampler<>`, so it plugs into
/// `torch::data::make_data_loader(dataset, sampler, options)`.
class ResumableSampler : public torch::data::samplers::Sampler<> {
 public:
  /// Over a dataset of `size` samples. Throws `std::invalid_argument` when
  /// `num_replicas < 1` or `rank` is outside [0, num_replicas).
  explicit ResumableSampler(std::size_t size, const ResumableSamplerOptions& options = {})
      : s_(std::make_shared<Shared>()) {
    const std::string where = "ppe::dataloaders::ResumableSampler: ";
    if (options.num_replicas() < 1)
      throw std::invalid_argument(where + "num_replicas is " + std::to_string(options.num_replicas()) +
                                  ", expected >= 1");
    if (options.rank() < 0 || options.rank() >= options.num_replicas())
      throw std::invalid_argument(where + "rank is " + std::to_string(options.rank()) + ", expected 0 <= rank < " +
                                  std::to_string(options.num_replicas()) + " (num_replicas)");
    s_->size = size;
    s_->seed = options.seed();
    s_->shuffle = options.shuffle();
    s_->replicas = static_cast<std::size_t>(options.num_replicas());
    s_->rank = static_cast<std::size_t>(options.rank());
    s_->split_drop_last = options.drop_last();
  }
  /// The sequential variant: the order 0, 1, 2, ... in every epoch.
  static ResumableSampler sequential(std::size_t size) {
    return ResumableSampler(size, ResumableSamplerOptions().shuffle(false));
  }
  // Copies (and moves, which copy) share the state: the loader's copy and the
  // caller's handle must stay connected.
  ResumableSampler(const ResumableSampler&) = default;
  ResumableSampler& operator=(const ResumableSampler&) = default;
  ~ResumableSampler() override = default;

  // ---- torch::data::samplers::Sampler -------------------------------------
  /// Called by the loader at each `begin()`: starts a pass (see the rule
  /// above). A `new_size` (of the dataset) different from the current one
  /// starts the current epoch over with the new size.
  void reset(c10::optional<std::size_t> new_size = c10::nullopt) override {
    Shared& s = *s_;
    if (new_size && *new_size != s.size) {
      s.size = *new_size;
      s.position = 0;
      s.segment_start = 0;
      s.order_epoch = -1;
    } else if (s.consumed_in_pass || epoch_complete(s)) {
      ++s.epoch;
      s.position = 0;
      s.segment_start = 0;
    }
    s.consumed_in_pass = false;
    s.resized = false;
    s.served = s.position;
    s.tracked = s.tracked_next;
    s.tracked_next = false;
  }

  /// The next `batch_size` indices of this rank's share of this epoch's order
  /// (fewer at its end, none after it).
  c10::optional<std::vector<std::size_t>> next(std::size_t batch_size) override {
    Shared& s = *s_;
    const std::size_t share = segment_share(s);
    if (s.served >= share) return c10::nullopt;
    const std::size_t n = std::min(batch_size, share - s.served);
    std::vector<std::size_t> out(n);
    const std::vector<std::size_t>* order = s.shuffle ? &order_of(s, s.epoch) : nullptr;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = slot(s, s.served + i, s.segment_start);
      out[i] = order ? (*order)[k] : k;
    }
    s.served += n;
    if (!s.tracked) {  // nobody counts consumption: what is handed out counts
      s.position = s.served;
      s.consumed_in_pass = true;
      s.batch_size = batch_size;
    }
    return out;
  }

  /// LibTorch's archive form of `state_dict()` (same keys).
  void save(torch::serialize::OutputArchive& archive) const override {
    const State st = state_dict();
    for (const auto& [key, value] : st.as_dict())
      archive.write(key, value.is_bool() ? c10::IValue(value.as_bool()) : c10::IValue(value.as_int()));
  }
  void load(torch::serialize::InputArchive& archive) override {
    State st = State::dict();
    for (const char* key : {"epoch", "position", "seed", "size"}) {
      c10::IValue v;
      archive.read(key, v);
      if (!v.isInt())
        throw std::invalid_argument(std::string("ppe::dataloaders::ResumableSampler::load: '") + key +
                                    "' is not an integer in the archive");
      st.set(key, v.toInt());
    }
    c10::IValue shuffle;
    archive.read("shuffle", shuffle);
    if (!shuffle.isBool())
      throw std::invalid_argument("ppe::dataloaders::ResumableSampler::load: 'shuffle' is not a bool in the archive");
    st.set("shuffle", shuffle.toBool());
    // Archives written before the rank split (or the re-split) lack these
    // keys: load_state_dict then takes the single-process defaults.
    for (const char* key : {"num_replicas", "rank", "drop_last", "segment_start"}) {
      c10::IValue v;
      if (!archive.try_read(key, v)) continue;
      if (v.isBool()) {
        st.set(key, v.toBool());
      } else if (v.isInt()) {
        st.set(key, v.toInt());
      } else {
        throw std::invalid_argument(std::string("ppe::dataloaders::ResumableSampler::load: '") + key +
                                    "' is neither an integer nor a bool in the archive");
      }
    }
    load_state_dict(st);
  }

  // ---- state -------------------------------------------------------------
  /// `{epoch, position, seed, size, shuffle, num_replicas, rank, drop_last,
  /// segment_start}`: the epoch being served and the number of samples of
  /// this rank's share the loop consumed; `size` is the dataset's. The seed
  /// is stored as the int64 with the same bits. `segment_start` is where in
  /// the epoch's order the current split began: 0, unless the epoch was
  /// re-split for another world size (below).
  State state_dict() const {
    const Shared& s = *s_;
    return State::dict({{"epoch", s.epoch},
                        {"position", static_cast<std::int64_t>(s.position)},
                        {"seed", static_cast<std::int64_t>(s.seed)},
                        {"size", static_cast<std::int64_t>(s.size)},
                        {"shuffle", s.shuffle},
                        {"num_replicas", static_cast<std::int64_t>(s.replicas)},
                        {"rank", static_cast<std::int64_t>(s.rank)},
                        {"drop_last", s.split_drop_last},
                        {"segment_start", static_cast<std::int64_t>(s.segment_start)}});
  }
  /// Restores a state from `state_dict()`. The next pass continues that epoch
  /// from that position. Load before the loop begins its pass: a load in the
  /// middle of a pass warns (batches already fetched follow the old order).
  /// The size and the shuffle flag must match this sampler's (a state for
  /// another dataset cannot resume it); the seed is taken from the state.
  /// The rank may differ: ranks in step have equal states, so a snapshot
  /// written by rank 0 resumes every rank.
  ///
  /// A state of another world size (`num_replicas`), or of another
  /// `drop_last` where that changes the shares, is re-split: the ranks in
  /// step have consumed, together, a prefix of the epoch's order (rank r's
  /// j-th sample is element r + j * num_replicas of it), so the rest of the
  /// order from there is split anew over this sampler's world, and later
  /// epochs are split whole. Every sample of the epoch is then served once
  /// over the whole job (padding and `drop_last` apply to the rest as they
  /// do to a whole epoch). `resized_position()` then tells a manager where
  /// the data stands in this world's batches. A state without
  /// `num_replicas`, `rank`, `drop_last` and `segment_start` (written before
  /// they existed) is a single-process one starting at 0. Nothing changes
  /// when the state is rejected.
  void load_state_dict(const State& state) {
    const std::string where = "ppe::dataloaders::ResumableSampler::load_state_dict: ";
    if (!state.is_dict()) throw std::invalid_argument(where + "expected a dict, got " + kind(state));
    auto get_int = [&](const char* key) {
      const State& v = state.at(key);
      if (!v.is_int()) throw std::invalid_argument(where + "'" + key + "' is a " + kind(v) + ", expected an int");
      return v.as_int();
    };
    auto get_optional_int = [&](const char* key, std::int64_t fallback) {
      return state.find(key) ? get_int(key) : fallback;
    };
    const std::int64_t epoch = get_int("epoch");
    const std::int64_t position = get_int("position");
    const std::int64_t seed = get_int("seed");
    const std::int64_t size = get_int("size");
    const State& shuffle = state.at("shuffle");
    if (!shuffle.is_bool())
      throw std::invalid_argument(where + "'shuffle' is a " + kind(shuffle) + ", expected a bool");
    const std::int64_t replicas = get_optional_int("num_replicas", 1);
    const std::int64_t rank = get_optional_int("rank", 0);
    const std::int64_t segment_start = get_optional_int("segment_start", 0);
    const State* drop_last_v = state.find("drop_last");
    if (drop_last_v && !drop_last_v->is_bool())
      throw std::invalid_argument(where + "'drop_last' is a " + kind(*drop_last_v) + ", expected a bool");
    const bool drop_last = drop_last_v && drop_last_v->as_bool();
    Shared& s = *s_;
    if (size != static_cast<std::int64_t>(s.size))
      throw std::invalid_argument(where + "the state is for " + std::to_string(size) + " samples, this sampler has " +
                                  std::to_string(s.size) + " (expected the same dataset)");
    if (shuffle.as_bool() != s.shuffle)
      throw std::invalid_argument(where + "the state is for a " + (shuffle.as_bool() ? "shuffling" : "sequential") +
                                  " sampler, this one is " + (s.shuffle ? "shuffling" : "sequential"));
    if (replicas < 1 || rank < 0 || rank >= replicas)
      throw std::invalid_argument(where + "the state is for rank " + std::to_string(rank) + " of num_replicas " +
                                  std::to_string(replicas) +
                                  ", expected num_replicas >= 1 and 0 <= rank < num_replicas");
    if (epoch < 0) throw std::invalid_argument(where + "'epoch' is " + std::to_string(epoch) + ", expected >= 0");
    if (segment_start < 0 || segment_start > size)
      throw std::invalid_argument(where + "'segment_start' is " + std::to_string(segment_start) + ", expected 0 to " +
                                  std::to_string(size));
    // The split the state was saved in, and its share of the segment.
    const auto saved_replicas = static_cast<std::size_t>(replicas);
    const auto saved_start = static_cast<std::size_t>(segment_start);
    const std::size_t share = share_of(s.size - saved_start, saved_replicas, drop_last);
    if (position < 0 || static_cast<std::uint64_t>(position) > share)
      throw std::invalid_argument(where + "'position' is " + std::to_string(position) + ", expected 0 to " +
                                  std::to_string(share));
    if (s.consumed_in_pass && !epoch_complete(s))
      ppe::warn(where + "a pass over the data is in progress (" + std::to_string(s.position) + " of " +
                std::to_string(segment_share(s)) + " samples of epoch " + std::to_string(s.epoch) +
                " consumed); the batches it already fetched follow the old order. Load the state before the "
                "loop begins its pass (before the first batch), or begin a new pass.");
    // The same shares: the position carries over. Otherwise the ranks
    // together consumed the order up to `consumed`: the rest is split anew.
    const bool same_split =
        saved_replicas == s.replicas && share == share_of(s.size - saved_start, s.replicas, s.split_drop_last);
    s.epoch = epoch;
    if (same_split) {
      s.segment_start = saved_start;
      s.position = static_cast<std::size_t>(position);
    } else if (static_cast<std::size_t>(position) == share) {
      s.segment_start = 0;  // the epoch was served to its end: the next pass serves the next one
      s.position = share_size(s);
    } else {
      s.segment_start = saved_start + static_cast<std::size_t>(position) * saved_replicas;
      s.position = 0;
    }
    s.resized = !same_split;
    s.served = s.position;
    if (static_cast<std::uint64_t>(seed) != s.seed) s.order_epoch = -1;
    s.seed = static_cast<std::uint64_t>(seed);
    s.consumed_in_pass = false;
  }

  /// Where the data stands, in this world's batches, after `load_state_dict`
  /// re-split a state of another world size (nullopt otherwise): the epoch,
  /// the iteration that a loop counting this world's batches from the start
  /// would be at (`epoch * iters_per_epoch` plus the batches of this epoch
  /// already served, as this world would have served them), and the batches
  /// of a whole epoch. A manager that has this sampler as a state object
  /// continues from there (`Manager::load_state_dict`). Throws
  /// `std::logic_error` when the loader's batch size is not known yet
  /// (`ppe::dataloaders::range(loader, sampler)` tells it: make the range
  /// before the state is loaded).
  std::optional<ResizedPosition> resized_position() const {
    const Shared& s = *s_;
    if (!s.resized) return std::nullopt;
    if (s.batch_size == 0)
      throw std::logic_error(
          "ppe::dataloaders::ResumableSampler: a state of another world size was re-split, but the loader's batch "
          "size is not known, so the position in this world's batches is not either: make "
          "ppe::dataloaders::range(loader, sampler) before the state is loaded");
    auto batches = [&s](std::size_t samples) {
      return static_cast<std::int64_t>(s.loader_drop_last ? samples / s.batch_size
                                                          : (samples + s.batch_size - 1) / s.batch_size);
    };
    const std::int64_t per_epoch = batches(share_size(s));
    const std::int64_t left = epoch_complete(s) ? 0 : batches(segment_share(s) - s.position);
    return ResizedPosition{s.epoch, s.epoch * per_epoch + (per_epoch - left), per_epoch};
  }

  /// Serve epoch `epoch` from the next pass on: from the current position
  /// when it is the epoch being served and nothing was consumed since the
  /// last pass started or the state was loaded (a resumed epoch), else from
  /// its start. Call it before each epoch's pass when the loop's epochs are
  /// not whole passes.
  void set_epoch(std::int64_t epoch) {
    if (epoch < 0) throw std::invalid_argument("ppe::dataloaders::ResumableSampler::set_epoch: epoch must be >= 0");
    Shared& s = *s_;
    if (epoch != s.epoch || s.consumed_in_pass) {
      s.epoch = epoch;
      s.position = 0;
      s.segment_start = 0;
    } else if (epoch_complete(s)) {
      s.position = 0;  // resumed at the end of this epoch, and asked for it again
      s.segment_start = 0;
    }
    s.consumed_in_pass = false;
    s.served = s.position;
  }

  // ---- consumption tracking (called by ppe::dataloaders::range) -----------
  /// A pass through `range` is about to start: from now on, consumption is
  /// counted by `batch_consumed` instead of by the indices handed out.
  /// `drop_last` is the loader's.
  void begin_pass(std::size_t batch_size, bool drop_last) {
    s_->tracked_next = true;
    batching(batch_size, drop_last);
  }
  /// The loader's batch size and `drop_last`, known before any pass
  /// (`range(loader, sampler)` tells them when it is made): what
  /// `resized_position()` counts batches with.
  void batching(std::size_t batch_size, bool drop_last) {
    s_->batch_size = batch_size;
    s_->loader_drop_last = drop_last;
  }
  /// The loop got the next batch (a full batch, or the rest of the epoch).
  void batch_consumed() {
    Shared& s = *s_;
    if (s.tracked_next)  // begin_pass came, but the loader never reset this sampler
      throw std::logic_error(
          "ppe::dataloaders::range: the ResumableSampler given to range() is not the one the loader uses "
          "(the loader did not reset it when the pass began); pass a copy of the sampler given to make_data_loader");
    if (!s.tracked) return;  // a pass not started through range(): counted in next()
    s.position = std::min(segment_share(s), s.position + s.batch_size);
    s.consumed_in_pass = true;
  }
  /// The samples a pass of this rank covers (`size()`), for the range's
  /// `num_batches()`.
  std::optional<std::size_t> dataset_size() const { return size(); }

  // ---- queries -------------------------------------------------------------
  /// The epoch being served (or to be served by the next pass).
  std::int64_t epoch() const noexcept { return s_->epoch; }
  /// Samples of this rank's share of the current epoch (of its current
  /// segment, after a re-split) consumed so far.
  std::size_t position() const noexcept { return s_->position; }
  /// Where in the current epoch's order this rank's share begins to be
  /// split: 0, or, after a state of another world size was re-split, the
  /// samples the ranks had consumed together.
  std::size_t segment_start() const noexcept { return s_->segment_start; }
  /// This rank's samples in the current epoch's segment: `size()`, unless
  /// the epoch was re-split.
  std::size_t segment_size() const noexcept { return segment_share(*s_); }
  /// This rank's samples per epoch: `DistributedSampler`'s `num_samples`
  /// (`len(sampler)`); the dataset's size when `num_replicas` is 1.
  std::size_t size() const noexcept { return share_size(*s_); }
  /// The samples of all ranks per epoch, padding included: `size() *
  /// num_replicas()`.
  std::size_t total_size() const noexcept { return share_size(*s_) * s_->replicas; }
  /// The dataset's size (what the sampler was constructed with).
  std::size_t dataset_length() const noexcept { return s_->size; }
  std::uint64_t seed() const noexcept { return s_->seed; }
  bool shuffle() const noexcept { return s_->shuffle; }
  int num_replicas() const noexcept { return static_cast<int>(s_->replicas); }
  int rank() const noexcept { return static_cast<int>(s_->rank); }
  /// The option of the split (not the loader's `drop_last`).
  bool drop_last() const noexcept { return s_->split_drop_last; }

  /// The order of epoch `epoch`: a pure function of (seed, epoch, size).
  /// Shuffled with the standard library's `mt19937_64` seeded through
  /// `seed_seq` from the seed and the epoch, and a Fisher-Yates pass, never
  /// with LibTorch's global generator (model initialisation or dropout cannot
  /// change the data order).
  std::vector<std::size_t> order(std::int64_t epoch) const {
    if (!s_->shuffle) {
      std::vector<std::size_t> v(s_->size);
      std::iota(v.begin(), v.end(), std::size_t{0});
      return v;
    }
    return make_order(s_->size, s_->seed, epoch);
  }

  /// This rank's share of epoch `epoch`: what a whole pass serves. Element j
  /// is `order(epoch)[(rank + j * num_replicas) % dataset_length()]`, which is
  /// `DistributedSampler`'s padding (or truncation) and striding.
  std::vector<std::size_t> indices(std::int64_t epoch) const {
    const std::vector<std::size_t> full = order(epoch);
    std::vector<std::size_t> v(share_size(*s_));
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = full[slot(*s_, j, 0)];
    return v;
  }

 private:
  struct Shared {
    std::size_t size = 0;
    std::uint64_t seed = 0;
    bool shuffle = true;
    std::int64_t epoch = 0;
    std::size_t position = 0;       // samples of `epoch` the loop consumed
    std::size_t served = 0;         // next index of the order to hand out
    bool consumed_in_pass = false;  // a batch was consumed since the pass began
    bool tracked = false;           // this pass's consumption is counted by range()
    bool tracked_next = false;      // begin_pass was called for the coming reset
    std::size_t replicas = 1;
    std::size_t rank = 0;
    bool split_drop_last = false;  // the option: truncate rather than pad
    std::size_t batch_size = 0;    // of the loader (0: not known yet)
    bool loader_drop_last = false;
    std::size_t segment_start = 0;  // where this epoch's split begins in its order (a re-split epoch: > 0)
    bool resized = false;           // the last load re-split a state of another world size
    std::int64_t order_epoch = -1;  // epoch of the cached order
    std::vector<std::size_t> order;
  };

  /// Whether a pass starting at the current position would deliver nothing.
  static bool epoch_complete(const Shared& s) {
    const std::size_t share = segment_share(s);
    if (s.position >= share) return true;
    return s.loader_drop_last && s.batch_size > 0 && share - s.position < s.batch_size;
  }

  /// A rank's share of `n` samples split over `replicas`: floor(n / replicas)
  /// when dropping the tail, else ceil(n / replicas) (DistributedSampler's
  /// num_samples).
  static std::size_t share_of(std::size_t n, std::size_t replicas, bool drop_last) {
    return drop_last ? n / replicas : (n + replicas - 1) / replicas;
  }
  /// This rank's samples per epoch.
  static std::size_t share_size(const Shared& s) { return share_of(s.size, s.replicas, s.split_drop_last); }

  /// This rank's samples in the segment [segment_start, size) of the order,
  /// split as share_size splits a whole epoch.
  static std::size_t segment_share(const Shared& s) {
    return share_of(s.size - s.segment_start, s.replicas, s.split_drop_last);
  }

  /// Where element `j` of this rank's share of the segment that begins at
  /// `start` sits in the epoch's order. The modulo is the padding: the padded
  /// segment repeats the segment from its start.
  static std::size_t slot(const Shared& s, std::size_t j, std::size_t start) {
    return start + (s.rank + j * s.replicas) % (s.size - start);
  }

  static const std::vector<std::size_t>& order_of(Shared& s, std::int64_t epoch) {
    if (s.order_epoch != epoch) {
      s.order = make_order(s.size, s.seed, epoch);
      s.order_epoch = epoch;
    }
    return s.order;
  }

  static std::vector<std::size_t> make_order(std::size_t n, std::uint64_t seed, std::int64_t epoch) {
    std::vector<std::size_t> v(n);
    std::iota(v.begin(), v.end(), std::size_t{0});
    const auto e = static_cast<std::uint64_t>(epoch);
    std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                      static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(e >> 32)};
    std::mt19937_64 gen(seq);
    for (std::size_t i = n; i > 1; --i) std::swap(v[i - 1], v[bounded(gen, i)]);
    return v;
  }

  /// Uniform in [0, range) by rejection (the standard distributions are not
  /// specified bit for bit, and the order must not change across toolchains).
  static std::size_t bounded(std::mt19937_64& gen, std::uint64_t range) {
    const std::uint64_t threshold = (0 - range) % range;  // 2^64 mod range
    for (;;) {
      const std::uint64_t r = gen();
      if (r >= threshold) return static_cast<std::size_t>(r % range);
    }
  }

  static std::string kind(const State& s) { return std::string(State::kind_name(s.kind())); }

  std::shared_ptr<Shared> s_;
};

}  // namespace ppe::dataloaders
