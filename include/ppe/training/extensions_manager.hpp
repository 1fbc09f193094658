#pragma once
/// \file
/// `ExtensionsManager<Stop, Entries...>`: the statically typed manager (PPE's
/// `ppe.training.ExtensionsManager`). Its entries are types; their priority
/// order is computed at compile time and the per-iteration dispatch is
/// unrolled, so an entry whose trigger does not fire costs what a hand-written
/// `if` costs.

#include <boost/hana/first.hpp>
#include <boost/hana/greater.hpp>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/sort.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/unpack.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <string_view>
#include <vector>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/profiler/record.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training {

/// Wraps the trigger that stops training: `ExtensionsManager(opts, model, opt,
/// stop_when(EarlyStoppingTrigger(...)), extensions...)`.
template <class S>
struct StopWhen {
  S trigger;
};
template <class S>
auto stop_when(S trigger) {
  auto t = as_trigger(std::move(trigger));
  return StopWhen<decltype(t)>{std::move(t)};
}

namespace detail {
template <class X>
struct is_stop_when : std::false_type {};
template <class S>
struct is_stop_when<StopWhen<S>> : std::true_type {};

/// The entry type of a constructor argument; a `StopWhen` has none. Clang
/// substitutes into a deduction guide's result before checking the guide's
/// constraint, so the guide for managers without a `StopWhen` must not ask
/// for the entry type of one (entry() rejects it with a static_assert).
template <class X, class = std::remove_cvref_t<X>>
struct argument_entry {
  using type = entry_type_t<X>;
};
template <class X, class S>
struct argument_entry<X, StopWhen<S>> {
  using type = void;
};

/// The entry indices in run order: by descending priority, entries of equal
/// priority in the order given (Hana's sort is stable).
template <int... Priority, std::size_t... I>
constexpr std::array<std::size_t, sizeof...(I)> priority_order(std::index_sequence<I...>) {
  namespace hana = boost::hana;
  constexpr auto sorted = hana::sort(hana::make_tuple(hana::make_pair(hana::int_c<Priority>, hana::size_c<I>)...),
                                     [](auto a, auto b) { return hana::first(a) > hana::first(b); });
  return hana::unpack(sorted, [](auto... e) {
    return std::array<std::size_t, sizeof...(I)>{std::remove_cvref_t<decltype(hana::second(e))>::value...};
  });
}
}  // namespace detail

template <class Stop, class... Entries>
class ExtensionsManager final : public Manager {
  static_assert((detail::is_entry<Entries>::value && ...),
                "ppe: ExtensionsManager's entry types must be ppe::training::Entry<...>; pass extensions or "
                "entry(...) to the constructor and let class template argument deduction build the type");
  static_assert(trigger<Stop>, "ppe: the stop trigger must be a trigger type");
  static_assert(std::is_copy_constructible_v<Stop>,
                "ppe: the stop trigger must be copyable (the manager keeps a second copy that decides finalization)");

  static constexpr std::size_t N = sizeof...(Entries);
  static constexpr std::array<int, N> kPriority{Entries::priority...};
  static constexpr std::array<std::size_t, N> kOrder =
      detail::priority_order<Entries::priority...>(std::make_index_sequence<N>{});
  static constexpr bool kNeedsModel[N + 1] = {
      extension_traits<typename Entries::extension_type>::needs_model_state()..., false};
  static constexpr bool kAnyNeedsModel = (extension_traits<typename Entries::extension_type>::needs_model_state() || ... || false);
  static constexpr std::size_t kSnapshots = ((Entries::priority == kPrioritySnapshot ? 1 : 0) + ... + 0);
  // Every static trigger (and the stop trigger) can say until when it stays
  // quiet: run_iteration then skips the dispatch in quiet iterations.
  static constexpr bool kSkippable =
      trigger_hooks::next_possible<Stop> && (trigger_hooks::next_possible<typename Entries::trigger_type> && ...);
  // Position of static entry I among the snapshot-priority entries, in run order.
  static constexpr std::array<std::size_t, N> kSnapSlot = [] {
    std::array<std::size_t, N> slot{};
    std::size_t k = 0;
    for (std::size_t pos = 0; pos < N; ++pos)
      if (kPriority[kOrder[pos]] == kPrioritySnapshot) slot[kOrder[pos]] = k++;
    return slot;
  }();

 public:
  /// `ExtensionsManager(options, models, optimizers, extensions...)` with the
  /// default stop trigger: `max_epochs` epochs.
  template <class M, class O, class... Es>
    requires(sizeof...(Es) == N)
  ExtensionsManager(const ManagerOptions& options, M&& models, O&& optimizers, Es&&... entries)
      : Manager(options, Models(std::forward<M>(models)), Optimizers(std::forward<O>(optimizers))),
        stop_(default_stop(options)),
        internal_stop_(stop_),
        entries_(as_entry(std::forward<Es>(entries))...) {
    register_entries();
  }
  /// As above, stopping when `stop.trigger` fires.
  template <class M, class O, class... Es>
    requires(sizeof...(Es) == N)
  ExtensionsManager(const ManagerOptions& options, M&& models, O&& optimizers, StopWhen<Stop> stop, Es&&... entries)
      : Manager(options, Models(std::forward<M>(models)), Optimizers(std::forward<O>(optimizers))),
        stop_(std::move(stop.trigger)),
        internal_stop_(stop_),
        entries_(as_entry(std::forward<Es>(entries))...) {
    register_entries();
  }

  /// Runs one iteration: starts the extensions on first use, makes the manager's
  /// reporter current over a fresh observation, calls `body`, counts the
  /// iteration, runs the extensions whose triggers fire, and finalizes when the
  /// stop trigger fires. If anything throws, every extension's `on_error` runs
  /// (once per manager) and the exception propagates; a body that throws does
  /// not count as an iteration.
  ///
  /// With `ManagerOptions::enable_profile` (or `enable_trace`) each iteration
  /// is recorded as `ppe.training.ExtensionsManager:run_iteration` and each
  /// extension call as `ppe.training.ExtensionsManager.run_extensions:<name>`
  /// (`ppe::profiler::Record`). The profiled dispatch is a second
  /// instantiation, chosen once per dispatch; the iteration's record opens in
  /// the start-up check the loop makes anyway: without profiling no iteration
  /// and no extension call reads a clock, and a quiet iteration runs the
  /// instructions it ran before profiling existed.
  template <class F>
  void run_iteration(F&& body) {
    if (cold_) [[unlikely]]
      begin_iteration();
    observation_.clear();
    bool dispatched = false;
    {
      auto scope = reporter_.scope(observation_);
      try {
        std::forward<F>(body)();
        ++iteration_;
        // In a quiet iteration no trigger can fire: nothing else to do.
        if (!kSkippable || iteration_ >= quiet_until_ || stop_requested_.load(std::memory_order_relaxed)) {
          dispatched = true;
          run_extensions();
        }
      } catch (...) {
        model_available_ = true;  // an extension may have thrown mid-dispatch
        run_on_error(std::current_exception());
        if (communicator_) rethrow_naming_lost_ranks(std::current_exception());
        throw;
      }
    }
    if (dispatched) end_iteration();
  }

  /// As `run_iteration(body)`, and also calls `zero_grad()` on the named
  /// optimizers before the body and `step()` after it (PPE's `step_optimizers`).
  template <class F>
  void run_iteration(std::initializer_list<std::string_view> step_optimizers, F&& body) {
    for (std::string_view name : step_optimizers) step_optimizer(name);  // checks every name first
    run_iteration([&] {
      for (std::string_view name : step_optimizers) step_optimizer(name).zero_grad();
      std::forward<F>(body)();
      for (std::string_view name : step_optimizers) step_optimizer(name).step();
    });
  }

  /// The static entry `I` (registration order).
  template <std::size_t I>
  auto& entry() noexcept {
    reset_quiet_window();  // the caller may change the trigger
    return std::get<I>(entries_);
  }

  std::optional<TrainingLength> training_length() const override { return trigger_training_length(stop_); }

 protected:
  State stop_trigger_state() const override {
    return State::dict({{"public", trigger_state_dict(stop_)}, {"internal", trigger_state_dict(internal_stop_)}});
  }
  void load_stop_trigger_state(const State& s) override {
    if (const State* p = s.find("public")) trigger_load_state_dict(stop_, *p);
    if (const State* i = s.find("internal")) trigger_load_state_dict(internal_stop_, *i);
  }

 private:
  const OptimizerRef& step_optimizer(std::string_view name) const {
    if (const OptimizerRef* o = optimizers_.find(name)) return *o;
    throw std::out_of_range("ppe: run_iteration: no optimizer named '" + std::string(name) +
                            "'; optimizers: " + ppe::detail::python_str_list(optimizers_.names()));
  }

  static Stop default_stop(const ManagerOptions& options) {
    if constexpr (std::is_same_v<Stop, triggers::IntervalTrigger>) {
      if (!(options.max_epochs() > 0))
        throw std::invalid_argument("ppe: max_epochs must be > 0 when no stop trigger is given (got " +
                                    std::to_string(options.max_epochs()) + ")");
      return triggers::IntervalTrigger(options.max_epochs(), Unit::Epoch);
    } else {
      static_assert(std::is_same_v<Stop, triggers::IntervalTrigger>,
                    "ppe: a manager with a custom stop trigger type must be given stop_when(trigger)");
    }
  }

  void register_entries() {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (register_entry<I>(), ...);
    }(std::make_index_sequence<N>{});
  }
  template <std::size_t I>
  void register_entry() {
    auto& e = std::get<I>(entries_);
    using E = typename std::tuple_element_t<I, std::tuple<Entries...>>::extension_type;
    e.name = register_name(std::move(e.name), extension_traits<E>::default_name(), detail::type_id<E>(),
                           &e.extension, detail::type_name<E>(), kPriority[I], I, /*is_runtime=*/false);
  }

  // ---- the hot path ----------------------------------------------------------
  [[gnu::noinline]] void run_extensions() {
    if (profiling_) [[unlikely]]
      dispatch<true>();
    else
      dispatch<false>();
  }
  template <bool Profiled>
  [[gnu::always_inline]] inline void dispatch() {
    // As PPE: models are reachable in this iteration only if an extension
    // that declared needs_model_state may run.
    if constexpr (kAnyNeedsModel)
      model_available_ = needs_model_state(iteration_);
    else
      model_available_ = any_runtime_needs_model_ && needs_model_state(iteration_);
    std::array<bool, kSnapshots> fired{};
    // Counters read once: counter-based triggers get them as arguments, kept
    // in registers across the unrolled entries.
    const std::int64_t it = iteration_, len = iters_per_epoch_;
    const bool has_runtime = !runtime_.empty();
    if (!has_runtime) {
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (step<kOrder[K], Profiled>(fired, it, len), ...);
      }(std::make_index_sequence<N>{});
    } else {
      deferred_runtime_.clear();
      std::size_t r = 0;
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((run_runtime_until<Profiled>(r, K), step<kOrder[K], Profiled>(fired, it, len)), ...);
      }(std::make_index_sequence<N>{});
      run_runtime_until<Profiled>(r, N);
    }
    // Snapshot-priority extensions run last, once every trigger was evaluated.
    if constexpr (kSnapshots > 0) {
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (run_deferred<kOrder[K], Profiled>(fired), ...);
      }(std::make_index_sequence<N>{});
    }
    if (has_runtime)
      for (std::size_t i : deferred_runtime_) call_runtime<Profiled>(i);
    model_available_ = true;
  }

  // The rare parts of run_iteration stay out of line, so that a quiet
  // iteration saves and restores no registers for them.
  [[gnu::noinline]] void begin_iteration() {
    if (finalized_ || !started_) {
      if (stopped_on_request_) throw StopRequested();
      if (finalized_)
        throw std::logic_error("ppe: attempted to run a finalized manager (training already ended; create a new "
                               "manager or load a state into one)");
      start_extensions();
    }
    if (profiling_) open_iteration_record();
  }
  [[gnu::noinline]] void end_iteration() {
    if (fire_trigger(internal_stop_))
      finalize();
    else if (stop_requested_.load(std::memory_order_relaxed))
      stop_on_request();
    else if constexpr (kSkippable)
      // Profiling dispatches every iteration: this closes its record.
      if (!profiling_) update_quiet_window();
    if (profiling_) close_iteration_record();
  }

  // A trigger's answer now: from the counters when it depends only on them.
  template <class T>
  bool fire_trigger(T& t) {
    if constexpr (trigger_hooks::fires<T>)
      return t.fires(iteration_, iters_per_epoch_);
    else
      return static_cast<bool>(t(static_cast<const Manager&>(*this)));
  }

  // After a dispatch: the iteration before which no trigger can fire.
  void update_quiet_window() {
    // Skipped while a runtime trigger must be asked every iteration, and for a
    // while after a window of one iteration.
    if (!runtime_skippable_ || iteration_ < window_retry_) return;
    const std::int64_t it = iteration_, len = iters_per_epoch_;
    std::int64_t q = trigger_next_possible(internal_stop_, it, len);
    std::apply([&](const auto&... e) { ((q = std::min(q, trigger_next_possible(e.trigger, it, len))), ...); },
               entries_);
    for (const RuntimeEntry& e : runtime_) q = std::min(q, e.trigger.next_possible(it, len));
    quiet_until_ = q;
    if (q == it + 1) window_retry_ = it + kWindowRetry;
  }
  static constexpr std::int64_t kWindowRetry = 64;

  template <std::size_t I, bool Profiled>
  void step(std::array<bool, kSnapshots>& fired, std::int64_t it, std::int64_t len) {
    auto& e = std::get<I>(entries_);
    bool fire;
    if constexpr (trigger_hooks::fires<decltype(e.trigger)>)
      fire = e.trigger.fires(it, len);
    else
      fire = static_cast<bool>(e.trigger(static_cast<const Manager&>(*this)));
    if (fire) {
      if constexpr (kPriority[I] == kPrioritySnapshot)
        fired[kSnapSlot[I]] = true;
      else
        call_static<I, Profiled>();
    }
  }
  template <std::size_t I, bool Profiled>
  void run_deferred(const std::array<bool, kSnapshots>& fired) {
    if constexpr (kPriority[I] == kPrioritySnapshot)
      if (fired[kSnapSlot[I]]) call_static<I, Profiled>();
  }
  template <std::size_t I, bool Profiled>
  void call_static() {
    if constexpr (Profiled) {
      profiler::Record record(static_tags_[I], record_options());
      call_extension(std::get<I>(entries_).extension, *this);
    } else {
      call_extension(std::get<I>(entries_).extension, *this);
    }
  }
  template <bool Profiled>
  void call_runtime(std::size_t r) {
    if constexpr (Profiled) {
      profiler::Record record(runtime_tags_[r], record_options());
      runtime_[r].ext(*this);
    } else {
      runtime_[r].ext(*this);
    }
  }
  // Runs the runtime entries placed before static position `pos`.
  template <bool Profiled>
  void run_runtime_until(std::size_t& r, std::size_t pos) {
    for (; r < runtime_.size() && runtime_[r].slot <= pos; ++r) {
      RuntimeEntry& e = runtime_[r];
      if (e.trigger(*this)) {
        if (e.priority == kPrioritySnapshot)
          deferred_runtime_.push_back(r);
        else
          call_runtime<Profiled>(r);
      }
    }
  }

  // ---- cold paths ------------------------------------------------------------
  std::size_t static_slot(int priority) const noexcept override {
    std::size_t slot = 0;
    for (std::size_t pos = 0; pos < N; ++pos)
      if (kPriority[kOrder[pos]] >= priority) slot = pos + 1;
    return slot;
  }

  bool static_needs_model_state(std::int64_t it) const override {
    bool needed = false;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((needed = needed || (kNeedsModel[I] && trigger_may_fire(std::get<I>(entries_).trigger, it, iters_per_epoch_))),
       ...);
    }(std::make_index_sequence<N>{});
    return needed;
  }

  bool evaluate_stop_trigger() override { return stop_(static_cast<const Manager&>(*this)); }

  State static_entry_state(std::size_t index) const override {
    State out;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((index == I ? (out = entry_state_of(extension_state_dict(std::get<I>(entries_).extension),
                                           trigger_state_dict(std::get<I>(entries_).trigger)),
                      0)
                   : 0),
       ...);
    }(std::make_index_sequence<N>{});
    return out;
  }
  std::string static_trigger_description(std::size_t index) const override {
    std::string out;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((index == I ? (out = trigger_description(std::get<I>(entries_).trigger), 0) : 0), ...);
    }(std::make_index_sequence<N>{});
    return out;
  }
  void static_consumed_keys(const std::function<void(const std::string&, const std::string&)>& use) const override {
    for (auto& k : consumed_keys_of(stop_)) use("the stop trigger", k);
    std::apply(
        [&](const auto&... e) {
          [[maybe_unused]] auto one = [&](const auto& entry) {
            for (auto& k : consumed_keys_of(entry.extension)) use("'" + entry.name + "'", k);
            for (auto& k : consumed_keys_of(entry.trigger)) use("the trigger of '" + entry.name + "'", k);
          };
          (one(e), ...);
        },
        entries_);
  }
  void load_static_entry_state(std::size_t index, const State& s) override {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((index == I ? (load_one(std::get<I>(entries_), s), 0) : 0), ...);
    }(std::make_index_sequence<N>{});
  }
  template <class En>
  static void load_one(En& e, const State& s) {
    if (const State* x = s.find("extension")) extension_load_state_dict(e.extension, *x);
    if (const State* t = s.find("trigger")) trigger_load_state_dict(e.trigger, *t);
  }

  void cold_pass(ColdOp op, std::exception_ptr ex) override {
    std::size_t r = 0;
    auto runtime_until = [&](std::size_t pos) {
      for (; r < runtime_.size() && runtime_[r].slot <= pos; ++r) cold_runtime(runtime_[r], op, ex);
    };
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((runtime_until(K), cold_static(std::get<kOrder[K]>(entries_), op, ex)), ...);
    }(std::make_index_sequence<N>{});
    runtime_until(N);
  }
  template <class En>
  void cold_static(En& e, ColdOp op, std::exception_ptr ex) {
    switch (op) {
      case ColdOp::Initialize:
        if (!trigger_finished(e.trigger)) initialize_extension(e.extension, *this);
        break;
      case ColdOp::CallBeforeTraining:
        if (e.call_before_training) call_extension(e.extension, *this);
        break;
      case ColdOp::Finalize: finalize_extension(e.extension, *this); break;
      case ColdOp::OnError: extension_on_error(e.extension, *this, ex); break;
      case ColdOp::Stop: extension_on_stop(e.extension, *this); break;
    }
  }

  Stop stop_;
  Stop internal_stop_;  // a separate copy decides finalization, as in PPE
  std::tuple<Entries...> entries_;
};

template <class M, class O, class... Es>
  requires(!(detail::is_stop_when<std::remove_cvref_t<Es>>::value || ...))
ExtensionsManager(const ManagerOptions&, M&&, O&&, Es&&...)
    -> ExtensionsManager<triggers::IntervalTrigger, typename detail::argument_entry<Es>::type...>;
template <class M, class O, class S, class... Es>
ExtensionsManager(const ManagerOptions&, M&&, O&&, StopWhen<S>, Es&&...) -> ExtensionsManager<S, entry_type_t<Es>...>;

}  // namespace ppe::training
