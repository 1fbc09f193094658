#pragma once
/// \file
/// `ppe::config::Config` (PPE's `ppe.config.Config`): a YAML tree whose
/// `type:` dictionaries are built by registered factories (`ppe::config::Types`,
/// `<ppe/config/types.hpp>`), with PPE's substitutions: `@/abs/path`,
/// `@rel/path`, `@/path.attr`, default values by path (`customize_type`),
/// `!/path` for the tree as written, and lazy, cached evaluation.
///
/// ```cpp
/// ppe::config::Types types;
/// types.add("concat", {"x0", "x1"}, [](std::string a, std::string b) { return a + " " + b; });
/// auto config = ppe::config::Config::parse("name: {type: concat, x0: First, x1: Last}", types);
/// config.get<std::string>("/name");   // "First Last"
/// ```
///
/// Values (`ppe::config::Value`) are null, bool, int, double, string, list,
/// dict (in the file's order) or an object made by a factory (any C++ type,
/// held by `std::shared_ptr`). Nothing a file names runs unless the program
/// registered it. See docs/config.md.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/detail/is_optional.hpp"

namespace YAML {
class Node;
}

namespace ppe::config {

class Types;
class Value;

/// Every error of the configuration: the message names the path, the
/// factory, the parameter and the YAML line where they apply, and the chain
/// of evaluations that led there (PPE's trace, `/a -> /b.attr -> !/c`).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value that does not convert to the C++ type asked for; `Config` turns it
/// into a `ConfigError` naming the path or parameter.
class ConversionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

/// The full name of `T` as the compiler spells it (for messages).
template <class T>
std::string_view full_type_name() noexcept {
  std::string_view s = __PRETTY_FUNCTION__;
  const auto start = s.find("T = ") + 4;
  return s.substr(start, s.find_first_of(";]", start) - start);
}

/// Per-type operations of an object held by a `Value`.
struct ObjectOps {
  const std::type_info& (*type)() noexcept;
  std::string_view (*name)() noexcept;
  /// Throws the held pointer as `T*`: a `catch (U*)` converts it to any
  /// public base `U` (how an object converts to a base-class pointer).
  void (*throw_ptr)(void*);
  /// For a holder (a type with `ptr()` returning a `std::shared_ptr`, as
  /// LibTorch's module holders): the held pointer and its thrower; else null.
  std::shared_ptr<void> (*pointee)(const void*);
  void (*throw_pointee)(void*);
  /// The attributes of a Boost.Hana struct; null for other types.
  bool (*attribute)(const void*, std::string_view, Value&);
  std::vector<std::string> (*attribute_names)();
};

template <class T>
concept hana_struct = boost::hana::Struct<T>::value;

template <class T>
concept holder = requires(const T& t) {
  { t.ptr() };
  requires std::is_pointer_v<decltype(t.ptr().get())>;
};

template <class T>
const ObjectOps& object_ops() noexcept;

}  // namespace detail

/// An object made by a factory: any C++ type, shared. It converts to a
/// `std::shared_ptr` of its type or of a public base class; a holder type
/// (LibTorch's module holders: `ptr()`) also to its pointee's.
class Object {
 public:
  /// Holds `p` (not null).
  template <class T>
  explicit Object(std::shared_ptr<T> p) : ptr_(std::move(p)), ops_(&detail::object_ops<T>()) {}

  const std::type_info& type() const noexcept { return ops_->type(); }
  /// The held type's name, as the compiler spells it.
  std::string_view type_name() const noexcept { return ops_->name(); }
  /// The held object if it is a `U` or derives from one (or, for a holder,
  /// if its pointee does), else null.
  template <class U>
  std::shared_ptr<U> as() const;
  /// The attribute `name` of a Boost.Hana struct (`BOOST_HANA_DEFINE_STRUCT`,
  /// `BOOST_HANA_ADAPT_STRUCT`); false when the type has none of that name.
  bool hana_attribute(std::string_view name, Value& out) const;
  /// The Boost.Hana attribute names (empty for other types).
  std::vector<std::string> hana_attribute_names() const {
    return ops_->attribute_names ? ops_->attribute_names() : std::vector<std::string>{};
  }
  const void* get() const noexcept { return ptr_.get(); }
  const std::shared_ptr<void>& shared() const noexcept { return ptr_; }
  /// Identity.
  friend bool operator==(const Object& a, const Object& b) noexcept { return a.ptr_ == b.ptr_; }

 private:
  std::shared_ptr<void> ptr_;
  const detail::ObjectOps* ops_;
};

/// A configuration value: null, bool, int, double, string, list, dict (keys
/// in the file's order) or `Object`. Immutable; copies share the lists and dicts.
class Value {
 public:
  enum class Kind { Null, Bool, Int, Double, String, List, Dict, Object };
  using List = std::vector<Value>;
  using Dict = std::vector<std::pair<std::string, Value>>;

  Value() noexcept = default;
  Value(std::nullptr_t) noexcept {}
  Value(bool b) : v_(b) {}
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  Value(T i) : v_(static_cast<std::int64_t>(i)) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t))
      if (i > static_cast<T>(std::numeric_limits<std::int64_t>::max()))
        throw std::out_of_range("ppe::config::Value: integer out of the int64 range");
  }
  template <class T>
    requires std::is_floating_point_v<T>
  Value(T d) : v_(static_cast<double>(d)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(List l) : v_(std::make_shared<const List>(std::move(l))) {}
  Value(Dict d) : v_(std::make_shared<const Dict>(std::move(d))) {}
  Value(Object o) : v_(std::move(o)) {}

  /// `Value::list({1, "a"})`, `Value::dict({{"a", 1}})`.
  static Value list(std::initializer_list<Value> l) { return Value(List(l)); }
  static Value dict(std::initializer_list<std::pair<std::string, Value>> d) { return Value(Dict(d)); }

  Kind kind() const noexcept { return static_cast<Kind>(v_.index()); }
  bool is_null() const noexcept { return kind() == Kind::Null; }
  bool is_bool() const noexcept { return kind() == Kind::Bool; }
  bool is_int() const noexcept { return kind() == Kind::Int; }
  bool is_double() const noexcept { return kind() == Kind::Double; }
  /// An int or a double.
  bool is_number() const noexcept { return is_int() || is_double(); }
  bool is_string() const noexcept { return kind() == Kind::String; }
  bool is_list() const noexcept { return kind() == Kind::List; }
  bool is_dict() const noexcept { return kind() == Kind::Dict; }
  bool is_object() const noexcept { return kind() == Kind::Object; }

  /// The value; `ConversionError` for another kind.
  bool as_bool() const { return std::get<bool>(check(Kind::Bool)); }
  std::int64_t as_int() const { return std::get<std::int64_t>(check(Kind::Int)); }
  /// An int or a double, as a double.
  PPE_DECL double as_double() const;
  const std::string& as_string() const { return std::get<std::string>(check(Kind::String)); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(check(Kind::List)); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(check(Kind::Dict)); }
  const Object& as_object() const { return std::get<Object>(check(Kind::Object)); }

  /// The entry `key` of a dict; null when absent or not a dict.
  PPE_DECL const Value* find(std::string_view key) const noexcept;
  /// The entry `key` of a dict; `ConversionError` when absent.
  PPE_DECL const Value& operator[](std::string_view key) const;
  /// The element `i` of a list; `ConversionError` when out of range.
  PPE_DECL const Value& at(std::size_t i) const;
  /// Elements of a list or entries of a dict; 0 otherwise.
  PPE_DECL std::size_t size() const noexcept;

  /// "null", "bool", "int", "float", "str", "list", "dict", "object".
  PPE_DECL static std::string_view kind_name(Kind k) noexcept;
  /// A short Python-like rendering (`{'a': [1, 'x', None]}`, long contents
  /// elided with `...`), for messages.
  PPE_DECL std::string repr() const;
  /// The kind and a short rendering: "a str 'abc'", "a list [1, 2]".
  PPE_DECL std::string describe() const;

  /// Deep equality; objects compare by identity, ints and doubles by value.
  friend PPE_DECL bool operator==(const Value& a, const Value& b);

 private:
  using Storage = std::variant<std::monostate, bool, std::int64_t, double, std::string, std::shared_ptr<const List>,
                               std::shared_ptr<const Dict>, Object>;
  const Storage& check(Kind k) const {
    if (kind() != k) throw_kind(k);
    return v_;
  }
  [[noreturn]] PPE_DECL void throw_kind(Kind expected) const;
  Storage v_;
};

// ---- conversions ------------------------------------------------------------

/// Customization point: specialize `Convert<T>` with `static T from(const
/// Value&)` (throwing `ConversionError`) and `static std::string expected()`
/// ("a trigger") to make parameters and `get<T>` accept `T` from values
/// other than an object of type `T` (the standard registrations do it for
/// triggers: `[1, epoch]`).
template <class T>
struct Convert {};

template <class T>
T from_value(const Value& v);
/// What `from_value<T>` accepts, for messages ("an int", "a list of str").
template <class T>
std::string expected_text();
/// `v` as a `Value`: scalars, strings, vectors and maps of them as such,
/// `Value` as is, anything else as an `Object` (`std::shared_ptr<T>` shared,
/// other values moved into a new shared object).
template <class T>
Value to_value(T&& v);

namespace detail {

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
using ppe::detail::is_optional;
template <class T>
struct is_shared_ptr : std::false_type {};
template <class T>
struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class T, class C, class A>
struct is_string_map<std::map<std::string, T, C, A>> : std::true_type {};
template <class T, class H, class E, class A>
struct is_string_map<std::unordered_map<std::string, T, H, E, A>> : std::true_type {};

/// The types `from_value` converts by kind (the rest are objects).
template <class T>
inline constexpr bool is_plain = std::is_arithmetic_v<T> || std::is_same_v<T, std::string> ||
                                 std::is_same_v<T, Value> || is_vector<T>::value || is_optional<T>::value ||
                                 is_shared_ptr<T>::value || is_string_map<T>::value;

[[noreturn]] PPE_DECL void throw_conversion(const std::string& expected, const Value& got);
PPE_DECL std::int64_t checked_int(const Value& v, std::int64_t lo, std::uint64_t hi, const std::string& expected);

template <class T>
bool hana_attribute(const void* p, std::string_view name, Value& out) {
  bool found = false;
  boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
    if (!found && name == boost::hana::to<const char*>(boost::hana::first(pair))) {
      found = true;
      out = to_value(boost::hana::second(pair)(*static_cast<const T*>(p)));
    }
  });
  return found;
}
template <class T>
std::vector<std::string> hana_attribute_names() {
  std::vector<std::string> names;
  boost::hana::for_each(boost::hana::accessors<T>(),
                        [&](auto pair) { names.emplace_back(boost::hana::to<const char*>(boost::hana::first(pair))); });
  return names;
}

/// A Boost.Hana struct from a dict: each entry sets the member of that name
/// (the others keep their default); an unknown key is an error.
template <class T>
T hana_from_dict(const Value& v) {
  T out{};
  const auto names = hana_attribute_names<T>();
  for (const auto& [key, value] : v.as_dict()) {
    bool found = false;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      if (found || key != boost::hana::to<const char*>(boost::hana::first(pair))) return;
      found = true;
      auto& member = boost::hana::second(pair)(out);
      try {
        member = from_value<std::remove_cvref_t<decltype(member)>>(value);
      } catch (const ConversionError& e) {
        throw ConversionError("field '" + key + "': " + e.what());
      }
    });
    if (!found) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw ConversionError("no field '" + key + "' in " + std::string(full_type_name<T>()) + " (fields: " + list +
                            ")");
    }
  }
  return out;
}

template <class T>
void throw_as(void* p) {
  throw static_cast<T*>(p);
}

template <class T>
const ObjectOps& object_ops() noexcept {
  static const ObjectOps ops = [] {
    ObjectOps o{};
    o.type = []() noexcept -> const std::type_info& { return typeid(T); };
    o.name = []() noexcept { return full_type_name<T>(); };
    o.throw_ptr = &throw_as<T>;
    if constexpr (holder<T>) {
      using P = std::remove_pointer_t<decltype(std::declval<const T&>().ptr().get())>;
      o.pointee = [](const void* p) -> std::shared_ptr<void> {
        return std::const_pointer_cast<std::remove_cv_t<P>>(
            std::shared_ptr<const P>(static_cast<const T*>(p)->ptr()));
      };
      o.throw_pointee = &throw_as<std::remove_cv_t<P>>;
    }
    if constexpr (hana_struct<T>) {
      o.attribute = &hana_attribute<T>;
      o.attribute_names = &hana_attribute_names<T>;
    }
    return o;
  }();
  return ops;
}

}  // namespace detail

template <class U>
std::shared_ptr<U> Object::as() const {
  using M = std::remove_cv_t<U>;
  if (ops_->type() == typeid(M)) return std::static_pointer_cast<U>(ptr_);
  // A base class of the held type: the thrown pointer converts in the catch.
  if constexpr (std::is_class_v<M>) {
    try {
      ops_->throw_ptr(ptr_.get());
    } catch (M* base) {
      return std::shared_ptr<U>(ptr_, base);
    } catch (...) {
    }
    if (ops_->pointee) {
      std::shared_ptr<void> inner = ops_->pointee(ptr_.get());
      try {
        ops_->throw_pointee(inner.get());
      } catch (M* base) {
        return std::shared_ptr<U>(inner, base);
      } catch (...) {
      }
    }
  }
  return nullptr;
}

inline bool Object::hana_attribute(std::string_view name, Value& out) const {
  return ops_->attribute && ops_->attribute(ptr_.get(), name, out);
}

template <class T>
std::string expected_text() {
  using D = std::remove_cvref_t<T>;
  if constexpr (requires { Convert<D>::expected(); }) {
    return Convert<D>::expected();
  } else if constexpr (std::is_same_v<D, Value>) {
    return "any value";
  } else if constexpr (std::is_same_v<D, bool>) {
    return "a bool";
  } else if constexpr (std::is_integral_v<D>) {
    return "an int";
  } else if constexpr (std::is_floating_point_v<D>) {
    return "a number";
  } else if constexpr (std::is_same_v<D, std::string>) {
    return "a str";
  } else if constexpr (detail::is_vector<D>::value) {
    return "a list of " + expected_text<typename D::value_type>();
  } else if constexpr (detail::is_string_map<D>::value) {
    return "a dict of " + expected_text<typename D::mapped_type>();
  } else if constexpr (detail::is_optional<D>::value) {
    return "null or " + expected_text<typename D::value_type>();
  } else if constexpr (detail::is_shared_ptr<D>::value) {
    return "a " + std::string(detail::full_type_name<typename D::element_type>()) + " object";
  } else if constexpr (detail::hana_struct<D>) {
    return "a " + std::string(detail::full_type_name<D>()) + " object or a dict of its fields";
  } else {
    return "a " + std::string(detail::full_type_name<D>()) + " object";
  }
}

template <class T>
T from_value(const Value& v) {
  using D = std::remove_cvref_t<T>;
  if constexpr (requires { Convert<D>::from(v); }) {
    return Convert<D>::from(v);
  } else if constexpr (std::is_same_v<D, Value>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    if (!v.is_bool()) detail::throw_conversion(expected_text<D>(), v);
    return v.as_bool();
  } else if constexpr (std::is_integral_v<D>) {
    return static_cast<D>(detail::checked_int(v, static_cast<std::int64_t>(std::numeric_limits<D>::min()),
                                              static_cast<std::uint64_t>(std::numeric_limits<D>::max()),
                                              expected_text<D>()));
  } else if constexpr (std::is_floating_point_v<D>) {
    if (!v.is_number()) detail::throw_conversion(expected_text<D>(), v);
    return static_cast<D>(v.as_double());
  } else if constexpr (std::is_same_v<D, std::string>) {
    if (!v.is_string()) detail::throw_conversion(expected_text<D>(), v);
    return v.as_string();
  } else if constexpr (detail::is_vector<D>::value) {
    if (!v.is_list()) detail::throw_conversion(expected_text<D>(), v);
    D out;
    out.reserve(v.size());
    std::size_t i = 0;
    for (const Value& e : v.as_list()) {
      try {
        out.push_back(from_value<typename D::value_type>(e));
      } catch (const ConversionError& err) {
        throw ConversionError("element " + std::to_string(i) + ": " + err.what());
      }
      ++i;
    }
    return out;
  } else if constexpr (detail::is_string_map<D>::value) {
    if (!v.is_dict()) detail::throw_conversion(expected_text<D>(), v);
    D out;
    for (const auto& [k, e] : v.as_dict()) {
      try {
        out.emplace(k, from_value<typename D::mapped_type>(e));
      } catch (const ConversionError& err) {
        throw ConversionError("entry '" + k + "': " + err.what());
      }
    }
    return out;
  } else if constexpr (detail::is_optional<D>::value) {
    if (v.is_null()) return D();
    return D(from_value<typename D::value_type>(v));
  } else if constexpr (detail::is_shared_ptr<D>::value) {
    if (v.is_object())
      if (auto p = v.as_object().template as<typename D::element_type>()) return p;
    detail::throw_conversion(expected_text<D>(), v);
  } else {
    static_assert(std::is_copy_constructible_v<D>,
                  "ppe::config: this type cannot be copied out of the configuration; ask for a std::shared_ptr of "
                  "it (get<std::shared_ptr<T>>, or a T& / std::shared_ptr<T> factory parameter)");
    if (v.is_object())
      if (auto p = v.as_object().template as<D>()) return *p;
    if constexpr (detail::hana_struct<D>)
      if (v.is_dict()) return detail::hana_from_dict<D>(v);
    detail::throw_conversion(expected_text<D>(), v);
  }
}

template <class T>
Value to_value(T&& v) {
  using D = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<D, Value>) {
    return std::forward<T>(v);
  } else if constexpr (std::is_arithmetic_v<D> || std::is_same_v<D, std::string> ||
                       std::is_same_v<D, std::string_view> || std::is_same_v<D, const char*> ||
                       std::is_same_v<D, char*>) {
    return Value(v);
  } else if constexpr (detail::is_vector<D>::value) {
    Value::List l;
    l.reserve(v.size());
    for (auto& e : v) l.push_back(to_value(e));
    return Value(std::move(l));
  } else if constexpr (detail::is_string_map<D>::value) {
    Value::Dict d;
    for (auto& [k, e] : v) d.emplace_back(k, to_value(e));
    return Value(std::move(d));
  } else if constexpr (detail::is_optional<D>::value) {
    if (!v) return Value();
    return to_value(*std::forward<T>(v));
  } else if constexpr (detail::is_shared_ptr<D>::value) {
    if (!v) return Value();
    return Value(Object(std::shared_ptr<typename D::element_type>(std::forward<T>(v))));
  } else {
    return Value(Object(std::make_shared<D>(std::forward<T>(v))));
  }
}

// ---- the configuration ------------------------------------------------------

/// Limits of a `Config`.
struct ConfigOptions {
  /// Deepest nesting of the YAML tree and longest chain of evaluations
  /// (references, factory arguments, attributes) before an error: bounds the
  /// recursion, so a 10,000-level file is an error, not a stack overflow.
  PPE_ARG(std::size_t, max_depth) = 256;
  /// Most nodes a YAML document may expand to (aliases repeat nodes: a
  /// "billion laughs" file is an error, not an allocation of gigabytes).
  /// Each node costs a few microseconds and a few hundred bytes to read and
  /// as much again to evaluate: 10^5 nodes stay well under a second and
  /// 100 MB (a real configuration has hundreds).
  PPE_ARG(std::size_t, max_nodes) = 100000;
  /// Most bytes the paths of all nodes may add up to, and so may the keys of
  /// the evaluated values: both are kept (each node's line for messages,
  /// each value in the cache), so long keys nested deep and repeated by
  /// aliases are refused before they take gigabytes.
  PPE_ARG(std::size_t, max_path_bytes) = std::size_t{16} << 20;
};

namespace detail {
struct ConfigState;
}

/// PPE's `Config`: the tree as written (`!/path`) and its evaluation
/// (`/path`), built once per path and cached. Holds a copy of the `Types`.
/// Not thread-safe.
class Config {
 public:
  /// A tree of values (PPE's `Config(dict, types)`).
  PPE_DECL explicit Config(Value tree, ConfigOptions options = {});
  PPE_DECL Config(Value tree, const Types& types, ConfigOptions options = {});
  /// A YAML document (the text).
  PPE_DECL static Config parse(std::string_view yaml, ConfigOptions options = {});
  PPE_DECL static Config parse(std::string_view yaml, const Types& types, ConfigOptions options = {});
  /// A YAML file (PPE's `load_path`, without its `import` key).
  PPE_DECL static Config load(const std::string& path, ConfigOptions options = {});
  PPE_DECL static Config load(const std::string& path, const Types& types, ConfigOptions options = {});
  /// A yaml-cpp node.
  PPE_DECL static Config from_yaml(const YAML::Node& node, const Types& types, ConfigOptions options = {});

  PPE_DECL Config(Config&&) noexcept;
  PPE_DECL Config& operator=(Config&&) noexcept;
  PPE_DECL ~Config();

  /// PPE's `config[key]`: `/path` evaluated, `/path.attr.attr` an attribute
  /// of the value there, `!/path` the tree as written. Paths are absolute.
  PPE_DECL Value operator[](std::string_view key);
  /// `(*this)[key]` converted to `T` (`from_value`): a number, a string, a
  /// vector, a `std::shared_ptr` to an object made by a factory, a copy of
  /// one, ... A value of another type is a `ConfigError` naming the path.
  template <class T>
  T get(std::string_view key) {
    Value v = (*this)[key];
    try {
      return from_value<T>(v);
    } catch (const ConversionError& e) {
      throw_get_error(key, e.what());
    }
  }
  /// Whether the tree as written has `path` (absolute, no attributes).
  PPE_DECL bool contains(std::string_view path) const;

  /// Replaces the tree at `path` (absolute) by `yaml` (a YAML scalar or flow
  /// collection: `0.01`, `true`, `[1, epoch]`, `{type: SGD}`): the command
  /// line's `--set /optimizer/lr=0.01`. A new key may be added to an existing
  /// dict; a list index must exist. Where the file has a bool, an int, a
  /// float or a string, the new scalar converts to that type (PPE's
  /// `update_via_args`: `16` stays a string where the file has one, `alse`
  /// for a bool is an error). Forgets every evaluated value.
  PPE_DECL void set(std::string_view path, std::string_view yaml);
  /// `set` from `"/path=yaml"`.
  PPE_DECL void set(std::string_view assignment);
  /// PPE's `update_via_args`: `set` for each (path, text).
  PPE_DECL void update_via_args(const std::vector<std::pair<std::string, std::string>>& args);

  /// The YAML line (1-based) of the node at `path` (absolute, as written), or
  /// 0 when unknown (a tree given as values, or set later).
  PPE_DECL int line_of(std::string_view path) const;
  /// The registered types.
  PPE_DECL const Types& types() const noexcept;

 private:
  PPE_DECL explicit Config(std::unique_ptr<detail::ConfigState> s);
  [[noreturn]] PPE_DECL void throw_get_error(std::string_view key, const std::string& what) const;
  std::unique_ptr<detail::ConfigState> s_;
};

/// Splits the command line's overrides out of `args`: each `--set
/// /path=value` (or `--set=/path=value`) is applied to `config` in order;
/// the other arguments are returned. Errors name the argument.
PPE_DECL std::vector<std::string> apply_set_args(Config& config, const std::vector<std::string>& args);

}  // namespace ppe::config

// Config's definitions need the registry: config/types.hpp ends by including both.
#include "ppe/config/types.hpp"
