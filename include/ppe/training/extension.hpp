#pragma once
/// \file
/// The extension protocol (PPE's `ppe.training.extension`): priorities, the
/// opt-in tag, one concept per hook, the static traits, and `make_extension`.
///
/// An extension is a type that opts in with
/// `using extension_concept = ppe::training::extension_tag;` and declares any
/// of these hooks (all take the non-template `ppe::training::Manager&`):
///
/// | hook | called |
/// |---|---|
/// | `void operator()(Manager&)` | when its trigger fires |
/// | `void initialize(Manager&)` | once, when the manager starts its extensions |
/// | `void finalize(Manager&)` | once, when training ends (stop trigger or `finalize()`) |
/// | `void on_error(Manager&, std::exception_ptr)` | once per manager, when an iteration throws |
/// | `void on_stop(Manager&)` | once, when training stops on request (`Manager::request_stop`, a signal), before `finalize` |
/// | `ppe::State state_dict() const` | when the manager's state is taken |
/// | `void load_state_dict(const ppe::State&)` | when the manager's state is restored |
///
/// and optionally these static members (defaults in brackets):
/// `static constexpr std::string_view default_name` [the type's name],
/// `static constexpr int priority` [kPriorityReader],
/// `static auto default_trigger()` [every iteration],
/// `static constexpr bool needs_model_state` [false].
///
/// A type that opts in but declares none of the hooks is rejected at compile
/// time with a message saying how to fix it (a misspelled hook would otherwise
/// be ignored silently).

#include <concepts>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ppe/state.hpp"
#include "ppe/training/detail/type_name.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training {

class Manager;

/// Extensions that write to the observation (e.g. evaluators) run first.
inline constexpr int kPriorityWriter = 300;
/// Extensions that edit the observation (e.g. MicroAverage).
inline constexpr int kPriorityEditor = 200;
/// Extensions that only read the observation (the default).
inline constexpr int kPriorityReader = 100;
/// Snapshots: run after every other extension of the iteration, once all
/// triggers of the iteration have been evaluated.
inline constexpr int kPrioritySnapshot = -100;

/// The opt-in tag: `using extension_concept = ppe::training::extension_tag;`.
struct extension_tag {};

/// Whether `E` opted in to the extension protocol.
template <class E>
concept opts_in = requires { typename E::extension_concept; } &&
                  std::same_as<typename E::extension_concept, extension_tag>;

/// One concept per hook.
namespace hooks {
template <class E>
concept call = requires(E& e, Manager& m) { e(m); };
template <class E>
concept initialize = requires(E& e, Manager& m) { e.initialize(m); };
template <class E>
concept finalize = requires(E& e, Manager& m) { e.finalize(m); };
template <class E>
concept on_error = requires(E& e, Manager& m, std::exception_ptr ex) { e.on_error(m, ex); };
template <class E>
concept on_stop = requires(E& e, Manager& m) { e.on_stop(m); };
template <class E>
concept state_dict = requires(const E& e) {
  { e.state_dict() } -> std::convertible_to<State>;
};
template <class E>
concept load_state_dict = requires(E& e, const State& s) { e.load_state_dict(s); };

template <class E>
concept any =
    call<E> || initialize<E> || finalize<E> || on_error<E> || on_stop<E> || state_dict<E> || load_state_dict<E>;
}  // namespace hooks

/// An extension: opted in, with at least one hook.
template <class E>
concept extension = opts_in<E> && hooks::any<E>;

namespace detail {
/// Stands in for a type in a diagnostic, so the error names it.
template <class E>
struct check_extension {
  static_assert(opts_in<E>,
                "ppe: this type is used as an extension but does not opt in. Fix: add "
                "`using extension_concept = ppe::training::extension_tag;` to the type and declare "
                "`void operator()(ppe::training::Manager&)`, or wrap a callable with ppe::training::make_extension(...).");
  static_assert(!opts_in<E> || hooks::any<E>,
                "ppe: this type opts in with extension_concept = extension_tag but declares none of the extension "
                "hooks (a misspelled hook?). Fix: declare one of `void operator()(ppe::training::Manager&)`, "
                "`void initialize(ppe::training::Manager&)`, `void finalize(ppe::training::Manager&)`, "
                "`void on_error(ppe::training::Manager&, std::exception_ptr)`, `void on_stop(ppe::training::Manager&)`, "
                "`ppe::State state_dict() const`, "
                "`void load_state_dict(const ppe::State&)`.");
  static constexpr bool value = true;
};
}  // namespace detail

/// Static traits of an extension type, with PPE's defaults.
template <class E>
struct extension_traits {
  static constexpr std::string_view default_name() noexcept {
    if constexpr (requires { std::string_view(E::default_name); })
      return std::string_view(E::default_name);
    else
      return detail::type_name<E>();
  }
  static constexpr int priority() noexcept {
    if constexpr (requires { static_cast<int>(E::priority); })
      return static_cast<int>(E::priority);
    else
      return kPriorityReader;
  }
  static constexpr bool needs_model_state() noexcept {
    if constexpr (requires { static_cast<bool>(E::needs_model_state); })
      return static_cast<bool>(E::needs_model_state);
    else
      return false;
  }
  static auto default_trigger() {
    if constexpr (requires { E::default_trigger(); })
      return E::default_trigger();
    else
      return ppe::iterations(1);
  }
  using trigger_type = decltype(default_trigger());
};

// ---- hook dispatch (no-ops for hooks the type does not declare) -------------
template <class E>
void call_extension(E& e, Manager& m) {
  if constexpr (hooks::call<E>) e(m);
}
template <class E>
void initialize_extension(E& e, Manager& m) {
  if constexpr (hooks::initialize<E>) e.initialize(m);
}
template <class E>
void finalize_extension(E& e, Manager& m) {
  if constexpr (hooks::finalize<E>) e.finalize(m);
}
template <class E>
void extension_on_error(E& e, Manager& m, std::exception_ptr ex) {
  if constexpr (hooks::on_error<E>) e.on_error(m, ex);
}
template <class E>
void extension_on_stop(E& e, Manager& m) {
  if constexpr (hooks::on_stop<E>) e.on_stop(m);
}
template <class E>
State extension_state_dict(const E& e) {
  if constexpr (hooks::state_dict<E>)
    return e.state_dict();
  else
    return State::dict();
}
template <class E>
void extension_load_state_dict(E& e, const State& s) {
  if constexpr (hooks::load_state_dict<E>) e.load_state_dict(s);
}

/// An extension made from a callable `void(Manager&)` (PPE's `make_extension`).
/// Its name, trigger and priority are given to `make_extension`.
template <class F>
class LambdaExtension {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "extension";

  explicit LambdaExtension(F f) : f_(std::move(f)) {}
  void operator()(Manager& m) { f_(m); }

 private:
  F f_;
};

}  // namespace ppe::training
