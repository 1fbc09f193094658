#pragma once
/// \file
/// Trigger combinators: `any_of(t...)` / `t1 || t2` fire when any part fires,
/// `all_of(t...)` / `t1 && t2` when every part fires. PPE has none; they let a
/// user say "every epoch or every 1000 iterations" without a custom trigger.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training::triggers {

namespace detail {
/// The common body of AnyOf (`All == false`) and AllOf (`All == true`).
template <bool All, class... Ts>
class Combination {
  static_assert(sizeof...(Ts) >= 1, "ppe: any_of/all_of need at least one trigger");
  static_assert((trigger<Ts> && ...), "ppe: every part of any_of/all_of must be a trigger type");

 public:
  static constexpr std::size_t size() noexcept { return sizeof...(Ts); }

  /// Evaluates every part, in order, then combines the answers. There is no
  /// short-circuit: triggers are stateful (IntervalTrigger caches the next
  /// firing, OnceTrigger and BestValueTrigger change on every call, value
  /// triggers accumulate the observation), so a part skipped on one iteration
  /// would miss values or answer differently later.
  template <class M>
  bool operator()(const M& manager) {
    return std::apply(
        [&](auto&... part) {
          // A braced list is evaluated left to right, each element in full.
          const bool fired[] = {static_cast<bool>(part(manager))...};
          bool out = All;
          for (bool f : fired) out = All ? (out && f) : (out || f);
          return out;
        },
        parts_);
  }

  /// For parts that all depend only on the counters: the same answer as
  /// `operator()`, from the two counters (every part evaluated, as there).
  bool fires(std::int64_t iteration, std::int64_t epoch_len)
    requires(trigger_hooks::fires<Ts> && ...)
  {
    return std::apply(
        [&](auto&... part) {
          const bool fired[] = {static_cast<bool>(part.fires(iteration, epoch_len))...};
          bool out = All;
          for (bool f : fired) out = All ? (out && f) : (out || f);
          return out;
        },
        parts_);
  }
  /// The first iteration after `after` that may fire: the earliest of the
  /// parts' (AnyOf), or the latest (AllOf: every part must fire then).
  std::int64_t next_possible(std::int64_t after, std::int64_t epoch_len) const
    requires(trigger_hooks::next_possible<Ts> && ...)
  {
    return std::apply(
        [&](const auto&... part) {
          const std::int64_t next[] = {static_cast<std::int64_t>(part.next_possible(after, epoch_len))...};
          std::int64_t out = next[0];
          for (std::int64_t n : next) out = All ? std::max(out, n) : std::min(out, n);
          return out;
        },
        parts_);
  }

  /// Look-ahead: any (AnyOf) or all (AllOf) of the parts' `may_fire`. Parts
  /// without the hook count as "may fire". The look-ahead is pure, so it may
  /// stop at the first decisive part.
  bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const {
    return std::apply(
        [&](const auto&... part) {
          if constexpr (All)
            return (trigger_may_fire(part, iteration, epoch_len) && ...);
          else
            return (trigger_may_fire(part, iteration, epoch_len) || ...);
        },
        parts_);
  }

  /// AnyOf is finished when every part is; AllOf when any part is.
  bool finished() const {
    return std::apply(
        [](const auto&... part) {
          if constexpr (All)
            return (trigger_finished(part) || ...);
          else
            return (trigger_finished(part) && ...);
        },
        parts_);
  }

  /// `{"0": <state of part 0>, "1": ...}`.
  State state_dict() const {
    State out = State::dict();
    for_each_index([&](auto i) {
      constexpr std::size_t I = decltype(i)::value;
      out.set(std::to_string(I), trigger_state_dict(std::get<I>(parts_)));
    });
    return out;
  }
  void load_state_dict(const State& state) {
    for_each_index([&](auto i) {
      constexpr std::size_t I = decltype(i)::value;
      trigger_load_state_dict(std::get<I>(parts_), state.at(std::to_string(I)));
    });
  }

  /// Every part's consumed keys (the manager's report-key check).
  std::vector<std::string> consumed_keys() const {
    std::vector<std::string> out;
    std::apply(
        [&](const auto&... part) {
          auto add = [&](std::vector<std::string> keys) {
            for (auto& k : keys) out.push_back(std::move(k));
          };
          (add(consumed_keys_of(part)), ...);
        },
        parts_);
    return out;
  }

  /// The training length of the first part that has one.
  std::optional<TrainingLength> training_length() const {
    std::optional<TrainingLength> out;
    std::apply(
        [&](const auto&... part) {
          static_cast<void>((... || (out = trigger_training_length(part)).has_value()));
        },
        parts_);
    return out;
  }

  /// Part `I`, in the order given.
  template <std::size_t I>
  auto& part() noexcept {
    return std::get<I>(parts_);
  }
  template <std::size_t I>
  const auto& part() const noexcept {
    return std::get<I>(parts_);
  }

 protected:
  explicit Combination(Ts... parts) : parts_(std::move(parts)...) {}

 private:
  template <class G>
  static void for_each_index(G&& g) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (g(std::integral_constant<std::size_t, I>{}), ...);
    }(std::index_sequence_for<Ts...>{});
  }

  std::tuple<Ts...> parts_;
};

/// A trigger type the `||` / `&&` operators accept: a class type satisfying
/// `trigger` that does not convert to bool, so built-in boolean operators
/// (and types with `operator bool`, captureless lambdas, std::function) keep
/// their meaning.
template <class T>
concept composable_trigger = std::is_class_v<std::remove_cvref_t<T>> && trigger<std::remove_cvref_t<T>> &&
                             !std::is_constructible_v<bool, std::remove_cvref_t<T>>;
}  // namespace detail

/// Fires when at least one part fires; every part is evaluated on each call.
template <class... Ts>
class AnyOf : public detail::Combination<false, Ts...> {
 public:
  explicit AnyOf(Ts... parts) : detail::Combination<false, Ts...>(std::move(parts)...) {}
};

/// Fires when every part fires; every part is evaluated on each call.
template <class... Ts>
class AllOf : public detail::Combination<true, Ts...> {
 public:
  explicit AllOf(Ts... parts) : detail::Combination<true, Ts...>(std::move(parts)...) {}
};

/// A trigger firing when any of `ts` fires. Each argument is a trigger type or
/// a callable `bool(const Manager&)`; they are copied (or moved) in.
template <class... Ts>
auto any_of(Ts&&... ts) {
  return AnyOf<decltype(as_trigger(std::forward<Ts>(ts)))...>(as_trigger(std::forward<Ts>(ts))...);
}

/// A trigger firing when all of `ts` fire. Arguments as for `any_of`.
template <class... Ts>
auto all_of(Ts&&... ts) {
  return AllOf<decltype(as_trigger(std::forward<Ts>(ts)))...>(as_trigger(std::forward<Ts>(ts))...);
}

/// `a || b` = `any_of(a, b)`. Both operands are evaluated on every call (no
/// short-circuit, see AnyOf). `a || b || c` nests: `any_of(any_of(a, b), c)`.
/// Found by argument-dependent lookup when an operand is one of this
/// namespace's triggers; for two user-defined triggers, use `any_of` or
/// `using ppe::training::triggers::operator||;`.
template <class A, class B>
  requires(detail::composable_trigger<A> && detail::composable_trigger<B>)
auto operator||(A&& a, B&& b) {
  return AnyOf<std::remove_cvref_t<A>, std::remove_cvref_t<B>>(std::forward<A>(a), std::forward<B>(b));
}

/// `a && b` = `all_of(a, b)`. Both operands are evaluated on every call (no
/// short-circuit, see AllOf).
template <class A, class B>
  requires(detail::composable_trigger<A> && detail::composable_trigger<B>)
auto operator&&(A&& a, B&& b) {
  return AllOf<std::remove_cvref_t<A>, std::remove_cvref_t<B>>(std::forward<A>(a), std::forward<B>(b));
}

}  // namespace ppe::training::triggers
