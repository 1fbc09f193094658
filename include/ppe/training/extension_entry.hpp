#pragma once
/// \file
/// `Entry`: an extension with its trigger, name, priority and
/// `call_before_training` flag (PPE's `ExtensionEntry`), and the factories
/// `entry(...)` and `make_extension(...)`.

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ppe/training/extension.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training {

/// A compile-time priority for `entry(...)`: `entry(ext, trigger, "name", priority<50>)`.
/// Priorities of static entries are compile-time values because the manager
/// orders its entries at compile time.
template <int N>
struct priority_t : std::integral_constant<int, N> {};
template <int N>
inline constexpr priority_t<N> priority{};

/// Tag for `entry(...)`: also call the extension once before the first iteration.
struct call_before_training_t {
  explicit constexpr call_before_training_t() = default;
};
inline constexpr call_before_training_t call_before_training{};

/// An extension registered with the manager, statically typed.
template <class E, class T, int Priority>
struct Entry {
  using extension_type = E;
  using trigger_type = T;
  static constexpr int priority = Priority;

  E extension;
  T trigger;
  std::string name;  ///< empty: the extension's default name
  bool call_before_training = false;
};

namespace detail {
template <class X>
struct is_entry : std::false_type {};
template <class E, class T, int P>
struct is_entry<Entry<E, T, P>> : std::true_type {};

struct entry_options {
  std::string name;
  bool call_before_training = false;
};
inline void apply_option(entry_options& o, std::string_view name) { o.name = std::string(name); }
inline void apply_option(entry_options& o, const char* name) { o.name = name; }
inline void apply_option(entry_options& o, const std::string& name) { o.name = name; }
inline void apply_option(entry_options& o, call_before_training_t) { o.call_before_training = true; }
template <int N>
void apply_option(entry_options&, priority_t<N>) {}
/// Exactly `bool` (an int would otherwise convert to it silently).
template <class B>
  requires std::is_same_v<B, bool>
void apply_option(entry_options& o, B before) {
  o.call_before_training = before;
}
/// Anything else: a diagnostic instead of a silent conversion.
template <class X>
  requires(!std::is_same_v<std::remove_cvref_t<X>, bool> && !std::is_convertible_v<X, std::string_view> &&
           !std::is_same_v<std::remove_cvref_t<X>, call_before_training_t>)
void apply_option(entry_options&, X&&) {
  static_assert(sizeof(X) == 0,
                "ppe: entry/make_extension options are a name (string), ppe::training::priority<N> (a compile-time "
                "priority; an int is not accepted because static entries are ordered at compile time), "
                "ppe::training::call_before_training, or a bool");
}

template <class... Opts>
constexpr int priority_of(int fallback) {
  int p = fallback;
  (
      [&] {
        if constexpr (requires { Opts::value; } && !std::is_same_v<Opts, bool>) p = Opts::value;
      }(),
      ...);
  return p;
}
}  // namespace detail

/// An entry for extension `ext` with `trigger` (a trigger type or a callable
/// `bool(const Manager&)`), followed by any of: a name (string), `priority<N>`,
/// `call_before_training` (or a bool).
template <class E, class T, class... Opts>
auto entry(E ext, T trigger, Opts&&... opts) {
  static_assert(detail::check_extension<E>::value);
  using Trig = decltype(as_trigger(std::move(trigger)));
  constexpr int p = detail::priority_of<std::remove_cvref_t<Opts>...>(extension_traits<E>::priority());
  detail::entry_options o;
  (detail::apply_option(o, std::forward<Opts>(opts)), ...);
  return Entry<E, Trig, p>{std::move(ext), as_trigger(std::move(trigger)), std::move(o.name), o.call_before_training};
}

/// An entry for `ext` with its default trigger, name and priority.
template <class E>
auto entry(E ext) {
  static_assert(detail::check_extension<E>::value);
  using Tr = extension_traits<E>;
  return Entry<E, typename Tr::trigger_type, Tr::priority()>{std::move(ext), Tr::default_trigger(), {}, false};
}

/// The entry for an argument of the manager: an Entry as is, an extension with
/// its defaults.
template <class X>
auto as_entry(X&& x) {
  if constexpr (detail::is_entry<std::remove_cvref_t<X>>::value)
    return std::remove_cvref_t<X>(std::forward<X>(x));
  else
    return entry(std::remove_cvref_t<X>(std::forward<X>(x)));
}
template <class X>
using entry_type_t = decltype(as_entry(std::declval<X>()));

/// An extension made from a callable `void(Manager&)`, with the same optional
/// arguments as `entry` (trigger defaults to every iteration, name to
/// "extension").
template <class F, class T = triggers::IntervalTrigger, class... Opts>
auto make_extension(F fn, T trigger = ppe::iterations(1), Opts&&... opts) {
  static_assert(std::is_invocable_v<F&, Manager&>,
                "ppe::training::make_extension: the callable must be invocable as fn(ppe::training::Manager&)");
  return entry(LambdaExtension<F>(std::move(fn)), std::move(trigger), std::forward<Opts>(opts)...);
}

}  // namespace ppe::training
