#pragma once
/// \file
/// `ppe::dataloaders::range`: a LibTorch data loader (or any input range) as a
/// range-v3 input view, with the number of batches per pass when it is known.
///
/// `torch::data::Iterator` has no postfix `++` and a non-const `operator*`, so
/// it satisfies neither range-v3's nor C++20's input-iterator concepts and
/// cannot feed `ranges::views::take`, `enumerate`, ... This header adapts it:
/// \code
///   auto loader = torch::data::make_data_loader(dataset, torch::data::DataLoaderOptions(64));
///   for (auto& batch : ppe::dataloaders::range(*loader) | ranges::views::take(10)) ...
///   for (auto [i, batch] : ppe::dataloaders::range(loader) | ranges::views::enumerate) ...
/// \endcode
///
/// Stepping is lazy: `++it` only marks the batch as done, the next one is
/// pulled from the loader when it is first looked at. So `views::take(10)`
/// pulls exactly 10 batches, and a consumption tracker (a `ResumableSampler`)
/// counts exactly the batches the loop saw.

#include <torch/data/dataloader/base.h>
#include <torch/data/dataloader_options.h>
#include <torch/data/iterator.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <range/v3/range/access.hpp>
#include <range/v3/range/concepts.hpp>
#include <range/v3/range/primitives.hpp>
#include <range/v3/view/all.hpp>

namespace ppe::dataloaders {

/// A LibTorch data loader: `torch::data::StatelessDataLoader` or
/// `StatefulDataLoader` (anything whose `begin()` yields `torch::data::Iterator`
/// and that has `options()`).
template <class L>
concept torch_loader = requires(L& loader) {
  typename L::BatchType;
  { loader.begin() } -> std::same_as<torch::data::Iterator<typename L::BatchType>>;
  { loader.end() } -> std::same_as<torch::data::Iterator<typename L::BatchType>>;
  { loader.options() } -> std::convertible_to<const torch::data::FullDataLoaderOptions&>;
};

/// Something that counts the batches a loop consumed (`ResumableSampler` is
/// one). `begin_pass` is called just before each pass starts (before the
/// loader resets its sampler), `batch_consumed` once per batch the loop gets,
/// `dataset_size` gives the number of samples when known.
template <class T>
concept consumption_tracker = std::copy_constructible<T> && requires(T& t, std::size_t batch_size, bool drop_last) {
  t.begin_pass(batch_size, drop_last);
  t.batch_consumed();
  { t.dataset_size() } -> std::convertible_to<std::optional<std::size_t>>;
};

/// The tracker of a range that counts nothing.
struct NoTracker {
  void begin_pass(std::size_t, bool) noexcept {}
  void batch_consumed() noexcept {}
  std::optional<std::size_t> dataset_size() const noexcept { return std::nullopt; }
};

/// Batches in one pass over `dataset_size` samples: `ceil(size / batch_size)`,
/// or `floor(size / batch_size)` with `drop_last` (LibTorch's and PyTorch's rule).
inline std::size_t num_batches(std::size_t dataset_size, std::size_t batch_size, bool drop_last) {
  if (batch_size == 0) throw std::invalid_argument("ppe::dataloaders::num_batches: batch_size must be > 0");
  return drop_last ? dataset_size / batch_size : (dataset_size + batch_size - 1) / batch_size;
}

namespace detail {

/// Discards the jobs a LibTorch loader prefetched for a pass the loop left
/// early (waiting for those a worker already runs). LibTorch's `begin()`
/// refuses to start a pass while jobs are in flight, and only its protected
/// `shuttle_` can drop them; a pointer to that member is formed inside a
/// derived class, where access allows it.
template <class D, class B, class R>
void drain_in_flight(torch::data::DataLoaderBase<D, B, R>& loader) {
  struct Access : torch::data::DataLoaderBase<D, B, R> {
    static auto shuttle() { return &Access::shuttle_; }
  };
  (loader.*Access::shuttle()).drain();
}

}  // namespace detail

/// An input view over a LibTorch loader: each `begin()` starts a pass (the
/// loader resets its sampler), the iterator yields `Loader::BatchType&`.
/// Copies share the loader and the current pass (a view is a handle). The
/// loader is either referenced (it must outlive the view) or owned.
template <torch_loader Loader, consumption_tracker Tracker = NoTracker>
class LoaderRange : public ranges::view_base {
 public:
  using Batch = typename Loader::BatchType;

 private:
  struct Shared {
    Shared(Loader* l, std::unique_ptr<Loader> o, Tracker t, std::optional<std::size_t> n)
        : loader(l), owned(std::move(o)), tracker(std::move(t)), dataset_size(n) {}

    Loader* loader;
    std::unique_ptr<Loader> owned;
    Tracker tracker;
    std::optional<std::size_t> dataset_size;
    std::optional<torch::data::Iterator<Batch>> it;
    std::optional<torch::data::Iterator<Batch>> end;
    bool need_advance = false;  // `++` was called; the loader is asked on the next look
    bool settled = false;       // `ended` is known for the current position
    bool ended = true;          // the pass is over (or none started)
    bool failed = false;        // the loader threw during this pass

    /// Makes the current position concrete: pulls the next batch if `++` was
    /// called, learns whether the pass ended, counts a new batch as consumed.
    void settle() {
      if (settled) return;
      if (failed)
        throw std::logic_error("ppe::dataloaders::range: the loader threw during this pass; start a new pass with begin()");
      try {
        if (need_advance) {
          need_advance = false;
          ++*it;
        }
        ended = (*it == *end);
      } catch (...) {
        failed = true;
        throw;
      }
      settled = true;
      if (!ended) tracker.batch_consumed();
    }
  };

 public:
  class sentinel {};

  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using reference = Batch&;
    using pointer = Batch*;
    using iterator_concept = std::input_iterator_tag;
    using iterator_category = std::input_iterator_tag;

    iterator() = default;
    explicit iterator(std::shared_ptr<Shared> s) : s_(std::move(s)) {}

    Batch& operator*() const {
      s_->settle();
      if (s_->ended) throw std::out_of_range("ppe::dataloaders::range: dereferencing the end of the pass");
      return **s_->it;
    }
    Batch* operator->() const { return &**this; }
    iterator& operator++() {
      s_->settle();
      if (s_->ended) throw std::out_of_range("ppe::dataloaders::range: incrementing past the end of the pass");
      s_->need_advance = true;
      s_->settled = false;
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& i, sentinel) {
      i.s_->settle();
      return i.s_->ended;
    }

   private:
    std::shared_ptr<Shared> s_;
  };

  LoaderRange() = default;
  /// Over `loader`, which must outlive the range.
  explicit LoaderRange(Loader& loader, Tracker tracker = {}, std::optional<std::size_t> dataset_size = std::nullopt)
      : s_(make(&loader, nullptr, std::move(tracker), dataset_size)) {}
  /// Owning `loader`.
  explicit LoaderRange(std::unique_ptr<Loader> loader, Tracker tracker = {},
                       std::optional<std::size_t> dataset_size = std::nullopt) {
    Loader* raw = loader.get();  // before the move: argument order is unspecified
    s_ = make(raw, std::move(loader), std::move(tracker), dataset_size);
  }

  /// Starts a pass, as Python's `iter(loader)` does: an unfinished pass of
  /// the loader (left early by a loop, through this view or another) is
  /// abandoned first, and the jobs prefetched for it are discarded, not counted.
  iterator begin() {
    if (!s_) throw std::logic_error("ppe::dataloaders::range: begin() on a default-constructed range");
    Shared& s = *s_;
    if constexpr (requires { detail::drain_in_flight(*s.loader); })
      detail::drain_in_flight(*s.loader);  // nothing to do unless jobs are in flight
    s.it.reset();
    s.end.reset();
    s.need_advance = false;
    s.settled = false;
    s.ended = true;
    s.failed = false;
    s.tracker.begin_pass(batch_size(), drop_last());
    s.it.emplace(s.loader->begin());  // resets the loader's sampler
    s.end.emplace(s.loader->end());
    s.ended = false;
    return iterator(s_);
  }
  sentinel end() const noexcept { return {}; }

  /// Batches per full pass, when the number of samples is known (given, or
  /// from the tracker); `std::nullopt` otherwise.
  std::optional<std::size_t> num_batches() const {
    if (!s_) return std::nullopt;
    std::optional<std::size_t> n = s_->dataset_size ? s_->dataset_size : s_->tracker.dataset_size();
    if (!n) return std::nullopt;
    return ppe::dataloaders::num_batches(*n, batch_size(), drop_last());
  }
  std::size_t batch_size() const { return loader().options().batch_size; }
  bool drop_last() const { return loader().options().drop_last; }
  Loader& loader() const {
    if (!s_) throw std::logic_error("ppe::dataloaders::range: no loader (default-constructed range)");
    return *s_->loader;
  }
  const Tracker& tracker() const { return s_->tracker; }
  Tracker& tracker() { return s_->tracker; }

 private:
  static std::shared_ptr<Shared> make(Loader* loader, std::unique_ptr<Loader> owned, Tracker tracker,
                                      std::optional<std::size_t> dataset_size) {
    if (!loader) throw std::invalid_argument("ppe::dataloaders::range: the loader is null");
    // A tracker that counts in batches (a ResumableSampler) learns the
    // loader's batching now: a state loaded before the first pass may need it.
    if constexpr (requires { tracker.batching(std::size_t{}, bool{}); })
      tracker.batching(loader->options().batch_size, loader->options().drop_last);
    return std::make_shared<Shared>(loader, std::move(owned), std::move(tracker), dataset_size);
  }

  std::shared_ptr<Shared> s_;
};

namespace detail {
template <class T>
inline constexpr bool is_unique_ptr_to_loader = false;
template <class L>
inline constexpr bool is_unique_ptr_to_loader<std::unique_ptr<L>> = torch_loader<L>;
}  // namespace detail

/// A LibTorch loader as an input view (referenced: it must outlive the view).
template <torch_loader L>
LoaderRange<L> range(L& loader) {
  return LoaderRange<L>(loader);
}
/// ... whose dataset has `dataset_size` samples (for `num_batches()`).
template <torch_loader L>
LoaderRange<L> range(L& loader, std::size_t dataset_size) {
  return LoaderRange<L>(loader, {}, dataset_size);
}
/// ... with a tracker that counts the consumed batches (a `ResumableSampler`:
/// pass the handle whose copy the loader holds).
template <torch_loader L, consumption_tracker T>
LoaderRange<L, T> range(L& loader, T tracker) {
  return LoaderRange<L, T>(loader, std::move(tracker));
}
/// The loader that `make_data_loader` returned, referenced.
template <torch_loader L, class... Args>
auto range(std::unique_ptr<L>& loader, Args&&... args) {
  if (!loader) throw std::invalid_argument("ppe::dataloaders::range: the loader is null");
  return range(*loader, std::forward<Args>(args)...);
}
/// The loader that `make_data_loader` returned, owned by the view.
template <torch_loader L>
LoaderRange<L> range(std::unique_ptr<L>&& loader) {
  return LoaderRange<L>(std::move(loader));
}
template <torch_loader L>
LoaderRange<L> range(std::unique_ptr<L>&& loader, std::size_t dataset_size) {
  return LoaderRange<L>(std::move(loader), {}, dataset_size);
}
template <torch_loader L, consumption_tracker T>
LoaderRange<L, T> range(std::unique_ptr<L>&& loader, T tracker) {
  return LoaderRange<L, T>(std::move(loader), std::move(tracker));
}
/// Any other input range: a view as it is, a container by reference
/// (`ranges::views::all`), so one code path takes loaders, views and vectors.
template <class R>
  requires(!torch_loader<std::remove_cvref_t<R>> && !detail::is_unique_ptr_to_loader<std::remove_cvref_t<R>>)
auto range(R&& r) {
  static_assert(ranges::input_range<R>, "ppe::dataloaders::range: expected a LibTorch loader or an input range");
  static_assert(ranges::viewable_range<R>,
                "ppe::dataloaders::range: a container must be passed as an lvalue (the view refers to it)");
  return ranges::views::all(std::forward<R>(r));
}

/// Batches per pass of anything `range` accepts or returns: a `LoaderRange`'s
/// `num_batches()`, the size of a sized range, else `std::nullopt`.
template <class R>
std::optional<std::size_t> num_batches(const R& r) {
  if constexpr (requires { { r.num_batches() } -> std::convertible_to<std::optional<std::size_t>>; })
    return r.num_batches();
  else if constexpr (ranges::sized_range<const R>)
    return static_cast<std::size_t>(ranges::size(r));
  else
    return std::nullopt;
}

/// Tells the sampler of `r` that epoch `epoch` begins, when `r` was made with
/// one that has `set_epoch` (a `ResumableSampler`); otherwise does nothing.
/// PPE's `Logic.train_epoch_begin` does this for a `DistributedSampler`; the
/// engine's trainer calls it before each epoch's pass, so an epoch's batches
/// follow that epoch's order even when epochs are not whole passes.
template <class R>
void set_epoch(R& r, std::int64_t epoch) {
  if constexpr (requires { r.tracker().set_epoch(epoch); }) r.tracker().set_epoch(epoch);
}

}  // namespace ppe::dataloaders
