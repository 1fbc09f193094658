#pragma once
/// \file
/// `ppe::profiler::record` (PPE's `ppe.profiler.record`, `record_function`,
/// `record_iterable`): named scopes whose time goes into a TimeSummary, into
/// a timeline tracer, and into LibTorch's profiler as a user-scope range.

#include <atomic>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/profiler/time_summary.hpp"
#include "ppe/profiler/tracing.hpp"

namespace ppe::profiler {

/// Options of `record`, `record_function` and `record_iterable` (PPE's
/// keyword arguments). Cheap to construct: it owns no strings.
struct RecordOptions {
  // Pointer aliases: PPE_ARG spells its getter `const T&`, which must mean `Tracer* const&`.
  using TracerPtr = Tracer*;
  using TimeSummaryPtr = TimeSummary*;
  /// The TimeSummary key; empty: the tag. Borrowed (a string literal, or a
  /// string that outlives the scope).
  PPE_ARG(std::string_view, metric);
  /// Also time the scope on the current CUDA stream (CUDA events, reported as
  /// `<metric>.cuda`). Where LibTorch has no CUDA (Debian's packages), it is
  /// accepted and ignored.
  PPE_ARG(bool, use_cuda) = false;
  /// Add the scope's time to the TimeSummary.
  PPE_ARG(bool, enable) = true;
  /// Add the scope as an event to the tracer.
  PPE_ARG(bool, trace) = false;
  /// Also open a LibTorch user-scope range (seen by LibTorch's profilers).
  /// Whether a profiler is on is asked of LibTorch at most once per
  /// millisecond per thread while none is (see `notify_torch_profiler_started`).
  PPE_ARG(bool, torch_range) = true;
  /// The tracer; null: `get_tracer()`.
  PPE_ARG(TracerPtr, tracer) = nullptr;
  /// The TimeSummary; null: `get_time_summary()`.
  PPE_ARG(TimeSummaryPtr, summary) = nullptr;
};

namespace detail {
/// Opens a LibTorch user-scope range named `tag` if one of LibTorch's
/// profilers (or any RecordFunction callback) is on; else returns null.
PPE_DECL void* torch_scope_begin(std::string_view tag);
/// Closes a range from `torch_scope_begin`.
PPE_DECL void torch_scope_end(void* scope) noexcept;
/// CUDA builds: records a begin event on the current stream (null without a GPU).
PPE_DECL void* cuda_begin();
/// CUDA builds: records the end event and adds `<metric>.cuda` to `summary`
/// as a deferred value; frees `begin`.
PPE_DECL void cuda_end(TimeSummary& summary, std::string_view metric, void* begin);
/// Frees a begin event that will not be completed.
PPE_DECL void cuda_discard(void* begin) noexcept;
/// `"<file stem>:<line>:<function>"` of a call site, interned (valid for the
/// program's lifetime): PPE's tag inferred from the caller's frame. The
/// function is cut to its name (no return type, scope or parameters).
PPE_DECL std::string_view inferred_tag(const char* file, std::uint_least32_t line, const char* function);

/// Asking LibTorch whether a profiler is on costs ~25 ns (a call into
/// libtorch_cpu and its thread-local state), a third of an enabled scope. So a
/// thread that was told "no" keeps that answer for `kTorchRecheckNs` of the
/// profiler's clock, unless `torch_profiler_epoch` moved in between (ppe's
/// own profiler sessions and `notify_torch_profiler_started` move it). While a
/// profiler is on, LibTorch is asked on every scope (it hands out the callbacks).
inline constexpr std::int64_t kTorchRecheckNs = 1'000'000;
inline std::atomic<std::uint64_t> torch_profiler_epoch{0};
struct TorchRangeCache {
  std::int64_t quiet_until = 0;  // fast_clock_ns time up to which "no profiler" holds
  std::uint64_t epoch = ~std::uint64_t{0};
};
inline thread_local TorchRangeCache torch_range_cache;
}  // namespace detail

/// Makes every thread ask LibTorch again, at its next scope, whether one of
/// its profilers is on. Call it after starting LibTorch's profiler yourself
/// (e.g. `torch::autograd::profiler::RecordProfile`) so that the ranges of
/// scopes opened in the next millisecond are not missed; ppe's `Profile`
/// calls it itself.
inline void notify_torch_profiler_started() noexcept {
  detail::torch_profiler_epoch.fetch_add(1, std::memory_order_relaxed);
}

/// A profiled scope (PPE's `with record(tag) as notification:`): from its
/// construction to its destruction it is a range named `tag` in LibTorch's
/// profiler (`at::RecordFunction`, user scope) and, with `trace`, an event of
/// the tracer; with `enable`, its duration is added to the TimeSummary under
/// the metric when it is destroyed, unless `defer()` was called (then
/// `complete()` adds it, e.g. once asynchronous work has finished).
///
/// Difference from PPE 0.9.0, whose `record` feeds the TimeSummary only when
/// `enable` is false (a regression there): `enable` feeds the TimeSummary,
/// `trace` the tracer; with both false the scope does nothing at all, not
/// even a clock read.
///
/// `tag` (and the metric) are borrowed until the destruction. No allocation
/// when the scope is off, nor when it is on and LibTorch's profiler is off,
/// after the tag's first use on the thread (tracing allocates the event).
class [[nodiscard]] Record {
 public:
  explicit Record(std::string_view tag, const RecordOptions& options = {}) {
    if (options.enable() || options.trace()) open(tag, options);
  }
  /// Moves the scope (the moved-from object records nothing).
  Record(Record&& o) noexcept
      : summary_(std::exchange(o.summary_, nullptr)),
        slot_(std::exchange(o.slot_, nullptr)),
        tracer_(std::exchange(o.tracer_, nullptr)),
        torch_(std::exchange(o.torch_, nullptr)),
        cuda_(std::exchange(o.cuda_, nullptr)),
        tag_(o.tag_),
        begin_(o.begin_),
        trace_token_(std::exchange(o.trace_token_, Tracer::kNoEvent)),
        deferred_(o.deferred_),
        done_(std::exchange(o.done_, true)) {}
  /// A temporary std::string would be gone before the scope ends: keep the
  /// tag in a variable (or use a literal).
  template <class S>
    requires std::same_as<S, std::string>
  Record(S&& tag, const RecordOptions& options = {}) = delete;
  Record(const Record&) = delete;
  Record& operator=(const Record&) = delete;
  Record& operator=(Record&&) = delete;
  ~Record() { close(); }

  /// A closed scope that records nothing until `reopen()`: a member that
  /// opens and closes a scope repeatedly (no std::optional, whose payload
  /// GCC 12 reports as maybe-uninitialized).
  Record() noexcept = default;
  /// Ends the scope now, as its destruction would (the time is added unless
  /// deferred; the LibTorch range and the tracer event end). A deferred time
  /// can still be `complete()`d.
  void close() noexcept {
    if (!done_ && !deferred_) {
      try {
        complete();
      } catch (...) {  // the scope must end; the time is lost
      }
    }
    if (cuda_) detail::cuda_discard(std::exchange(cuda_, nullptr));
    if (torch_) detail::torch_scope_end(std::exchange(torch_, nullptr));
    if (trace_token_ != Tracer::kNoEvent) tracer_->event_end(tag_, std::exchange(trace_token_, Tracer::kNoEvent));
  }
  /// Closes the scope, then opens it again as `Record(tag, options)` would.
  void reopen(std::string_view tag, const RecordOptions& options = {}) {
    close();
    deferred_ = false;
    done_ = true;
    if (options.enable() || options.trace()) open(tag, options);
  }

  /// PPE's `notification.defer()`: the destruction does not add the time;
  /// call `complete()` when the measured work is done.
  void defer() noexcept { deferred_ = true; }
  /// Adds the time from the construction until now to the TimeSummary (once;
  /// later calls and the destruction add nothing).
  void complete() {
    if (done_) return;
    done_ = true;
    const std::int64_t end = summary_->now();
    summary_->add(*slot_, static_cast<double>(end - begin_) / 1e9);
    if (cuda_) detail::cuda_end(*summary_, slot_->tag(), std::exchange(cuda_, nullptr));
  }

  /// The scope's tag.
  std::string_view tag() const noexcept { return tag_; }
  /// Whether the scope adds a time to a TimeSummary (enabled, not yet completed).
  bool pending() const noexcept { return !done_; }

 private:
  void open(std::string_view tag, const RecordOptions& o) {
    tag_ = tag;
    if (o.trace()) {
      tracer_ = o.tracer() ? o.tracer() : &get_tracer();
      trace_token_ = tracer_->event_begin(tag);
    }
    if (o.enable()) {
      summary_ = o.summary() ? o.summary() : &get_time_summary();
      slot_ = &summary_->slot(o.metric().empty() ? tag : o.metric());
      if (o.use_cuda()) cuda_ = detail::cuda_begin();
      done_ = false;
    }
    // The clock is read last, so the set-up above is not timed. The reading
    // that decides whether to ask LibTorch again is also the scope's start
    // when no range was opened and the TimeSummary uses the default clock.
    if (!o.torch_range()) {
      if (o.enable()) begin_ = summary_->now();
      return;
    }
    const std::int64_t now = detail::fast_clock_ns();
    const bool opened = open_torch_range(tag, now);
    if (o.enable()) begin_ = opened || summary_->clock() != &detail::fast_clock_ns ? summary_->now() : now;
  }
  bool open_torch_range(std::string_view tag, std::int64_t now) {
    detail::TorchRangeCache& c = detail::torch_range_cache;
    const std::uint64_t epoch = detail::torch_profiler_epoch.load(std::memory_order_relaxed);
    if (now < c.quiet_until && c.epoch == epoch) return false;
    torch_ = detail::torch_scope_begin(tag);
    if (torch_) return true;
    c.quiet_until = now + detail::kTorchRecheckNs;
    c.epoch = epoch;
    return false;
  }

  TimeSummary* summary_ = nullptr;
  TimeSummary::Slot* slot_ = nullptr;
  Tracer* tracer_ = nullptr;
  void* torch_ = nullptr;  // an at::RecordFunction, only while a LibTorch profiler is on
  void* cuda_ = nullptr;   // the CUDA begin event (CUDA builds with use_cuda)
  std::string_view tag_;
  std::int64_t begin_ = 0;
  std::int64_t trace_token_ = Tracer::kNoEvent;
  bool deferred_ = false;
  bool done_ = true;
};

/// `auto r = ppe::profiler::record("tag");`: a `Record` scope.
inline Record record(std::string_view tag, const RecordOptions& options = {}) { return Record(tag, options); }
/// Rejected: the temporary string would be gone before the scope ends.
template <class S>
  requires std::same_as<S, std::string>
Record record(S&& tag, const RecordOptions& options = {}) = delete;

/// A `Record` whose tag is inferred from the caller (PPE's `record(None)`):
/// `"<file stem>:<line>:<function>"`, the function as the compiler names it
/// without its return type, scope and parameters.
#if defined(__cpp_lib_source_location)
inline Record record(const RecordOptions& options = {},
                     std::source_location where = std::source_location::current()) {
  if (!options.enable() && !options.trace()) return Record(std::string_view(), options);
  return Record(detail::inferred_tag(where.file_name(), where.line(), where.function_name()), options);
}
#else
// Standard libraries whose <source_location> the compiler cannot back (clang
// 14 with libstdc++ 12): the same call site from the builtins behind it.
inline Record record(const RecordOptions& options = {}, const char* file = __builtin_FILE(),
                     std::uint_least32_t line = __builtin_LINE(), const char* function = __builtin_FUNCTION()) {
  if (!options.enable() && !options.trace()) return Record(std::string_view(), options);
  return Record(detail::inferred_tag(file, line, function), options);
}
#endif

/// Wraps a callable so that each call runs inside `record(tag, options)`
/// (PPE's `@record_function(tag)` decorator). The wrapper owns a copy of
/// the tag; a metric in `options` is borrowed.
template <class F>
auto record_function(std::string_view tag, F f, RecordOptions options = {}) {
  return [tag = std::string(tag), f = std::move(f), options]<class... A>(A&&... args) mutable -> decltype(auto) {
    Record scope(tag, options);
    return std::invoke(f, std::forward<A>(args)...);
  };
}

namespace detail {
template <class R>
decltype(auto) adl_begin(R& r) {
  using std::begin;
  return begin(r);
}
template <class R>
decltype(auto) adl_end(R& r) {
  using std::end;
  return end(r);
}
}  // namespace detail

/// The end of a `RecordIterable`.
struct RecordIterableEnd {};

/// The range `record_iterable` returns: iterating it yields the elements of
/// the wrapped range, each inside a `Record` named `<tag>-<i>`.
template <class R>
class RecordIterable {
  using Range = std::remove_reference_t<R>;
  using BaseIterator = std::decay_t<decltype(detail::adl_begin(std::declval<Range&>()))>;
  using BaseSentinel = std::decay_t<decltype(detail::adl_end(std::declval<Range&>()))>;

  struct State {
    std::string tag;
    std::string name;  // "<tag>-<i>", rebuilt in place
    bool divide_metric;
    RecordOptions options;
    std::optional<Record> scope;
  };

 public:
  /// An input iterator; element `i`'s scope is open while the iterator
  /// stands on it (from reaching it until it is incremented or destroyed).
  class iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = std::iter_value_t<BaseIterator>;
    using difference_type = std::ptrdiff_t;

    iterator(BaseIterator it, BaseSentinel end, std::unique_ptr<State> state)
        : it_(std::move(it)), end_(std::move(end)), state_(std::move(state)) {
      open();
    }
    iterator(iterator&&) noexcept = default;
    iterator& operator=(iterator&&) noexcept = default;

    decltype(auto) operator*() const { return *it_; }
    iterator& operator++() {
      state_->scope.reset();
      ++it_;
      ++index_;
      open();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& a, RecordIterableEnd) { return !(a.it_ != a.end_); }

   private:
    void open() {
      if (!(it_ != end_)) return;
      State& s = *state_;
      if (!s.options.enable() && !s.options.trace()) return;
      s.name.resize(s.tag.size() + 1);
      char digits[24];
      const auto r = std::to_chars(digits, digits + sizeof digits, index_);
      s.name.append(digits, r.ptr);
      RecordOptions o = s.options;
      o.metric(s.divide_metric ? std::string_view(s.name) : std::string_view(s.tag));
      s.scope.emplace(s.name, o);
    }

    BaseIterator it_;
    BaseSentinel end_;
    std::unique_ptr<State> state_;  // on the heap: the scope borrows its name
    std::size_t index_ = 0;
  };

  RecordIterable(std::string tag, R&& range, bool divide_metric, RecordOptions options)
      : range_(std::forward<R>(range)), tag_(std::move(tag)), divide_metric_(divide_metric), options_(options) {}

  /// Starts an iteration (element 0's scope opens here).
  iterator begin() {
    auto state = std::make_unique<State>(State{tag_, tag_ + "-", divide_metric_, options_, std::nullopt});
    return iterator(detail::adl_begin(range_), detail::adl_end(range_), std::move(state));
  }
  RecordIterableEnd end() const noexcept { return {}; }

 private:
  R range_;  // a reference for an lvalue range, else the range itself
  std::string tag_;
  bool divide_metric_;
  RecordOptions options_;
};

/// Iterates `range` with element `i` inside `record("<tag>-<i>", ...)` (PPE's
/// `record_iterable`): each element's scope is open from the moment the
/// iteration reaches it until it moves on, i.e. it times the loop body's
/// work on that element, as PPE's generator does (its `yield` is inside the
/// `with record(...)`). The metric is `tag` (all elements in one entry)
/// unless `divide_metric` (one entry per element). An lvalue range is
/// referenced, an rvalue range is moved in.
template <class R>
auto record_iterable(std::string_view tag, R&& range, bool divide_metric = false, RecordOptions options = {}) {
  return RecordIterable<R>(std::string(tag), std::forward<R>(range), divide_metric, options);
}

}  // namespace ppe::profiler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/profiler/impl/record.ipp"
#endif
