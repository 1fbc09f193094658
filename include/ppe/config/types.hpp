#pragma once
/// \file
/// `ppe::config::Types`: the registry of named factories that a
/// `ppe::config::Config` may call (PPE's `types` mapping, and its
/// `customize_type`). A factory is any function or non-generic lambda; its
/// parameters are named at registration, with a default value or a default
/// path, and receive the configuration's values converted to their C++ types
/// (and checked: a missing or ill-typed argument is an error naming the
/// factory, the parameter and the YAML line).
///
/// ```cpp
/// ppe::config::Types types;
/// types.add("Dataset", {"n_class", ppe::config::arg("n_data", 4)},
///           [](int n_class, int n_data) { return Dataset{n_class, n_data}; });
/// types.customize_type("Dataset", {{"n_class", "/n_class"}});   // PPE's @customize_type(n_class="/n_class")
/// types.attribute<Dataset>("n_data", &Dataset::n_data);           // for `@/dataset.n_data`
/// ```
/// A Boost.Hana struct (`BOOST_HANA_DEFINE_STRUCT` / `BOOST_HANA_ADAPT_STRUCT`)
/// needs no `attribute` calls: its members are its attributes, and a dict
/// converts to it field by field.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "ppe/config/config.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::config {

/// A parameter of a factory: its name, and optionally a default value or a
/// default path (PPE's `customize_type`: absolute `/a/b` or relative to the
/// factory's dict, `../b`; `!/a` for the tree as written). A parameter of
/// type `std::optional<T>` may be left out (then `std::nullopt`).
class Param {
 public:
  Param(const char* name) : name_(name) {}
  Param(std::string name) : name_(std::move(name)) {}
  /// The default value.
  Param& value(Value v) {
    default_value_ = std::move(v);
    default_path_.reset();
    return *this;
  }
  /// The default: the value at `path`.
  Param& path(std::string path) {
    default_path_ = std::move(path);
    default_value_.reset();
    return *this;
  }
  const std::string& name() const noexcept { return name_; }
  const std::optional<Value>& default_value() const noexcept { return default_value_; }
  const std::optional<std::string>& default_path() const noexcept { return default_path_; }

 private:
  std::string name_;
  std::optional<Value> default_value_;
  std::optional<std::string> default_path_;
};

/// A required parameter `name`.
inline Param arg(std::string name) { return Param(std::move(name)); }
/// A parameter `name` with a default value.
template <class T>
Param arg(std::string name, T&& default_value) {
  return Param(std::move(name)).value(to_value(std::forward<T>(default_value)));
}

/// A parameter as the registry keeps it.
struct ParamInfo {
  std::string name;
  /// What it accepts ("an int", "a list of str", "a torch::optim::Optimizer object").
  std::string expected;
  std::optional<Value> default_value;
  std::optional<std::string> default_path;
  /// May be left out (a `std::optional` parameter).
  bool optional = false;
};

/// A registered factory.
struct Factory {
  std::string name;
  std::vector<ParamInfo> params;
  /// Takes every key of its dict (`Types::add_dict`); `params` is empty.
  bool any_keys = false;
  /// Called with the arguments in `params`' order (null: left out, for an
  /// optional parameter), or with one dict for `any_keys`. Throws
  /// `ArgumentError` when an argument does not convert.
  std::function<Value(const std::vector<const Value*>&)> call;
};

/// An argument that did not convert to its parameter's type.
class ArgumentError : public ConversionError {
 public:
  ArgumentError(std::size_t index, const std::string& what) : ConversionError(what), index_(index) {}
  std::size_t index() const noexcept { return index_; }

 private:
  std::size_t index_;
};

namespace detail {

template <class F>
struct signature : signature<decltype(&F::operator())> {};
template <class R, class... A>
struct signature<R (*)(A...)> {
  using result = R;
  using args = std::tuple<A...>;
};
template <class R, class... A>
struct signature<R(A...)> : signature<R (*)(A...)> {};
template <class C, class R, class... A>
struct signature<R (C::*)(A...)> : signature<R (*)(A...)> {};
template <class C, class R, class... A>
struct signature<R (C::*)(A...) const> : signature<R (*)(A...)> {};
template <class C, class R, class... A>
struct signature<R (C::*)(A...) noexcept> : signature<R (*)(A...)> {};
template <class C, class R, class... A>
struct signature<R (C::*)(A...) const noexcept> : signature<R (*)(A...)> {};

/// How an argument is held before the call: a reference to an object binds
/// to the object in the configuration (no copy), the rest are converted values.
template <class A>
inline constexpr bool binds_object = std::is_reference_v<A> && !is_plain<std::remove_cvref_t<A>> &&
                                     !requires { Convert<std::remove_cvref_t<A>>::from(std::declval<const Value&>()); };
template <class A>
using storage_t =
    std::conditional_t<binds_object<A>, std::shared_ptr<std::remove_cvref_t<A>>, std::remove_cvref_t<A>>;

template <class A>
storage_t<A> convert_arg(const Value* v, std::size_t index) {
  using S = storage_t<A>;
  if (!v) {
    if constexpr (is_optional<S>::value) return S();
    throw ArgumentError(index, "missing");
  }
  try {
    return from_value<S>(*v);
  } catch (const ConversionError& e) {
    throw ArgumentError(index, e.what());
  }
}

template <class A>
decltype(auto) pass_arg(storage_t<A>& s) {
  if constexpr (binds_object<A>)
    return static_cast<A>(*s);
  else
    return static_cast<std::conditional_t<std::is_lvalue_reference_v<A>, A, storage_t<A>&&>>(s);
}

template <class F, class... A, std::size_t... I>
Value invoke_factory(F& fn, const std::vector<const Value*>& args, std::index_sequence<I...>) {
  // Braced initialization: the arguments convert in order.
  std::tuple<storage_t<A>...> held{convert_arg<A>(args[I], I)...};
  return to_value(fn(pass_arg<A>(std::get<I>(held))...));
}

template <class F, class Tuple>
struct factory_maker;
template <class F, class... A>
struct factory_maker<F, std::tuple<A...>> {
  static constexpr std::size_t arity = sizeof...(A);
  static std::vector<std::string> expected() { return {expected_text<storage_t<A>>()...}; }
  static std::vector<bool> optional() { return {is_optional<storage_t<A>>::value...}; }
  static std::function<Value(const std::vector<const Value*>&)> make(F fn) {
    return [fn = std::move(fn)](const std::vector<const Value*>& args) mutable {
      return invoke_factory<F, A...>(fn, args, std::index_sequence_for<A...>{});
    };
  }
};

}  // namespace detail

/// The registry of factories a `Config` may call, by the name its `type:`
/// keys give. Copyable; a `Config` keeps its own copy.
class Types {
 public:
  /// Registers `fn` (a function or non-generic lambda) under `name`, its
  /// parameters named by `params` in order (one per parameter of `fn`).
  /// Replaces a factory of the same name. The result may be any type: a
  /// number, string, vector or map becomes that value, anything else an
  /// object (a `std::shared_ptr<T>` result is shared, not copied).
  template <class F>
  Types& add(std::string name, const std::vector<Param>& params, F fn) {
    using Sig = detail::signature<std::remove_cvref_t<F>>;
    using Maker = detail::factory_maker<std::remove_cvref_t<F>, typename Sig::args>;
    static_assert(!std::is_void_v<typename Sig::result>, "ppe::config::Types::add: a factory must return a value");
    check_arity(name, params.size(), Maker::arity);
    Factory f;
    f.name = name;
    const auto expected = Maker::expected();
    const auto optional = Maker::optional();
    for (std::size_t i = 0; i < params.size(); ++i)
      f.params.push_back(
          {params[i].name(), expected[i], params[i].default_value(), params[i].default_path(), optional[i]});
    f.call = Maker::make(std::move(fn));
    return insert(std::move(f));
  }
  /// Registers a factory without parameters.
  template <class F>
  Types& add(std::string name, F fn) {
    return add(std::move(name), {}, std::move(fn));
  }
  /// Registers `fn(const Value& kwargs)`, called with the evaluated dict of
  /// every key but `type` (for factories whose keys are not fixed).
  template <class F>
  Types& add_dict(std::string name, F fn) {
    Factory f;
    f.name = name;
    f.any_keys = true;
    f.call = [fn = std::move(fn)](const std::vector<const Value*>& args) mutable { return to_value(fn(*args[0])); };
    return insert(std::move(f));
  }
  /// Registers a factory made elsewhere.
  PPE_DECL Types& insert(Factory f);

  /// PPE's `customize_type(param="path", ...)` on the registered `name`:
  /// each parameter left out of a dict of that type takes the value at its
  /// path (absolute, or relative to the dict).
  PPE_DECL Types& customize_type(std::string_view name,
                                 const std::vector<std::pair<std::string, std::string>>& default_paths);

  /// Makes `@/path.name` read `getter(object)` on objects of type `T` (or
  /// derived from it); `getter` is a callable taking `const T&` or a member
  /// pointer (`&Dataset::n_data`).
  template <class T, class G>
  Types& attribute(std::string name, G getter) {
    attributes_.push_back(
        {std::type_index(typeid(T)), std::move(name), [getter = std::move(getter)](const Object& o, Value& out) {
           std::shared_ptr<T> p = o.as<T>();
           if (!p) return false;
           out = to_value(std::invoke(getter, static_cast<const T&>(*p)));
           return true;
         }});
    return *this;
  }
  /// `attribute` with the type taken from a member pointer.
  template <class M, class T>
  Types& attribute(std::string name, M T::*member) {
    return attribute<T>(std::move(name), member);
  }

  /// The factory registered as `name`, or null.
  PPE_DECL const Factory* find(std::string_view name) const;
  /// The registered names, sorted.
  PPE_DECL std::vector<std::string> names() const;
  std::size_t size() const noexcept { return factories_.size(); }
  /// Adds (or replaces) every factory and attribute of `other`.
  PPE_DECL Types& merge(const Types& other);

  /// The attribute `name` of an object (registered with `attribute`, or a
  /// Boost.Hana member); false when it has none.
  PPE_DECL bool attribute_of(const Object& object, std::string_view name, Value& out) const;
  /// The attribute names an object has.
  PPE_DECL std::vector<std::string> attribute_names(const Object& object) const;

 private:
  struct Attribute {
    std::type_index type;
    std::string name;
    std::function<bool(const Object&, Value&)> get;
  };
  PPE_DECL static void check_arity(const std::string& name, std::size_t given, std::size_t arity);

  std::map<std::string, Factory, std::less<>> factories_;
  std::vector<Attribute> attributes_;
};

}  // namespace ppe::config

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/config/impl/config.ipp"
#include "ppe/config/impl/types.ipp"
#endif
