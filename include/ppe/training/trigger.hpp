#pragma once
/// \file
/// The trigger protocol (PPE's `ppe.training.trigger` / `_trigger_util`).
///
/// A trigger is any movable type with `bool operator()(const Manager&)`,
/// deciding whether its extension runs at the current iteration. Optional
/// members, detected by the concepts below:
///  - `bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const` —
///    pure look-ahead: could the trigger fire at `iteration`? (default: true)
///  - `ppe::State state_dict() const` / `void load_state_dict(const ppe::State&)`
///  - `std::optional<TrainingLength> training_length() const` — the length of
///    training it stands for, used by progress displays when it stops training.
///  - `bool finished() const` — true once it can never fire again (OnceTrigger);
///    the manager then skips the extension's `initialize`.
///  - `bool fires(std::int64_t iteration, std::int64_t epoch_len)` — for
///    counter-based triggers: `operator()`'s answer from the two counters,
///    which the manager then passes in registers.
///  - `std::int64_t next_possible(std::int64_t after, std::int64_t epoch_len) const`
///    — with `fires`: the first iteration after `after` at which the trigger
///    could fire, given its state. The trigger promises that its answers do not
///    depend on being asked in between, so the manager skips every trigger
///    until the earliest such iteration of all of them (one comparison per
///    quiet iteration, whatever the number of extensions).
///
/// This header needs no LibTorch header; neither do the counter-based triggers.

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/state.hpp"
#include "ppe/training/detail/type_name.hpp"

namespace ppe::training {

class Manager;

/// Unit of a trigger period.
enum class Unit { Iteration, Epoch };

/// "iteration" / "epoch", as PPE spells units.
constexpr const char* unit_name(Unit u) noexcept { return u == Unit::Iteration ? "iteration" : "epoch"; }

/// Parses "iteration" or "epoch"; anything else is an error naming the value.
inline Unit parse_unit(std::string_view s) {
  if (s == "iteration") return Unit::Iteration;
  if (s == "epoch") return Unit::Epoch;
  throw std::invalid_argument("ppe: trigger unit must be either 'epoch' or 'iteration', got '" + std::string(s) + "'");
}

/// A length of training: `length` iterations or epochs.
struct TrainingLength {
  double length;
  Unit unit;
  friend bool operator==(const TrainingLength&, const TrainingLength&) = default;
};

/// A trigger: callable on the manager, answering whether to fire now.
template <class T>
concept trigger = std::move_constructible<std::remove_cvref_t<T>> &&
                  requires(std::remove_cvref_t<T>& t, const Manager& m) {
                    { t(m) } -> std::convertible_to<bool>;
                  };

namespace trigger_hooks {
template <class T>
concept may_fire = requires(const T& t, std::int64_t it, std::int64_t len) {
  { t.may_fire(it, len) } -> std::convertible_to<bool>;
};
template <class T>
concept state_dict = requires(const T& t) {
  { t.state_dict() } -> std::convertible_to<State>;
};
template <class T>
concept load_state_dict = requires(T& t, const State& s) { t.load_state_dict(s); };
template <class T>
concept training_length = requires(const T& t) {
  { t.training_length() } -> std::convertible_to<std::optional<TrainingLength>>;
};
/// `bool fires(std::int64_t iteration, std::int64_t epoch_len)`: the answer
/// of `operator()` for a trigger that depends only on those two counters. The
/// manager calls it with counters it read once per iteration.
template <class T>
concept fires = requires(T& t, std::int64_t it, std::int64_t len) {
  { t.fires(it, len) } -> std::convertible_to<bool>;
};
/// `fires` plus `std::int64_t next_possible(after, epoch_len) const`: the
/// trigger can be skipped until that iteration.
template <class T>
concept next_possible = fires<T> && requires(const T& t, std::int64_t it, std::int64_t len) {
  { t.next_possible(it, len) } -> std::convertible_to<std::int64_t>;
};
/// `std::vector<std::string> consumed_keys() const`: the report keys the
/// trigger (or an extension: the same hook) reads from the observation, which
/// the manager checks at the end of a run (`ManagerOptions::check_report_keys`).
template <class T>
concept consumed_keys = requires(const T& t) {
  { t.consumed_keys() } -> std::convertible_to<std::vector<std::string>>;
};
template <class T>
concept finished = requires(const T& t) {
  { t.finished() } -> std::convertible_to<bool>;
};
}  // namespace trigger_hooks

/// `t.may_fire(iteration, epoch_len)` when the trigger has it, else true.
template <class T>
bool trigger_may_fire(const T& t, std::int64_t iteration, std::int64_t epoch_len) {
  if constexpr (trigger_hooks::may_fire<T>)
    return t.may_fire(iteration, epoch_len);
  else
    return true;
}
/// The trigger's state, or an empty dictionary for a stateless trigger.
template <class T>
State trigger_state_dict(const T& t) {
  if constexpr (trigger_hooks::state_dict<T>)
    return t.state_dict();
  else
    return State::dict();
}
template <class T>
void trigger_load_state_dict(T& t, const State& s) {
  if constexpr (trigger_hooks::load_state_dict<T>) t.load_state_dict(s);
}
/// The trigger's `str()` when it has one (IntervalTrigger: its type and
/// period, as Python prints it), else its type's name: what the distributed
/// composition handshake compares.
template <class T>
std::string trigger_description(const T& t) {
  if constexpr (requires { { t.str() } -> std::convertible_to<std::string>; })
    return t.str();
  else
    return std::string(detail::type_name<T>());
}
template <class T>
std::optional<TrainingLength> trigger_training_length(const T& t) {
  if constexpr (trigger_hooks::training_length<T>)
    return t.training_length();
  else
    return std::nullopt;
}
/// The first iteration after `after` at which `t` could fire: its
/// `next_possible` when it has one, else `after + 1` (ask every iteration).
template <class T>
std::int64_t trigger_next_possible(const T& t, std::int64_t after, std::int64_t epoch_len) {
  if constexpr (trigger_hooks::next_possible<T>)
    return t.next_possible(after, epoch_len);
  else
    return after + 1;
}
/// The report keys a trigger or an extension reads (`consumed_keys()`), or none.
template <class T>
std::vector<std::string> consumed_keys_of(const T& t) {
  if constexpr (trigger_hooks::consumed_keys<T>)
    return t.consumed_keys();
  else
    return {};
}
template <class T>
bool trigger_finished(const T& t) {
  if constexpr (trigger_hooks::finished<T>)
    return t.finished();
  else
    return false;
}

namespace triggers {
/// A trigger that never fires (PPE's trigger `None`).
struct NeverTrigger {
  bool operator()(const Manager&) const noexcept { return false; }
  bool fires(std::int64_t, std::int64_t) const noexcept { return false; }
  bool may_fire(std::int64_t, std::int64_t) const noexcept { return false; }
  std::int64_t next_possible(std::int64_t, std::int64_t) const noexcept {
    return std::numeric_limits<std::int64_t>::max();
  }
};
}  // namespace triggers

/// The trigger given; a callable `bool(const Manager&)` already is one. Any
/// other type is rejected with a message saying what a trigger is.
template <class T>
auto as_trigger(T&& t) {
  using D = std::remove_cvref_t<T>;
  static_assert(trigger<D>,
                "ppe: a trigger must be a trigger type (IntervalTrigger, ppe::epochs(1), ...) or a callable "
                "bool(const ppe::training::Manager&)");
  return D(std::forward<T>(t));
}

}  // namespace ppe::training
