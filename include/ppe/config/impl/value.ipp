// Definitions of the Value tree's out-of-line functions (config/config.hpp's
// `Value`): access, Python-style repr for messages, equality, and the
// conversion errors that `Convert<T>` throws. Included by impl/config.ipp.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "ppe/config/config.hpp"

namespace ppe::config {

PPE_DECL double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(v_));
  return std::get<double>(check(Kind::Double));
}

// A linear search: dicts keep the file's order in a vector, and a
// configuration's dicts are small.
PPE_DECL const Value* Value::find(std::string_view key) const noexcept {
  if (!is_dict()) return nullptr;
  for (const auto& [k, v] : as_dict())
    if (k == key) return &v;
  return nullptr;
}

PPE_DECL const Value& Value::operator[](std::string_view key) const {
  (void)check(Kind::Dict);
  const Value* v = find(key);
  if (!v) throw ConversionError("no key '" + std::string(key) + "' in " + repr());
  return *v;
}

PPE_DECL const Value& Value::at(std::size_t i) const {
  const List& l = as_list();
  if (i >= l.size())
    throw ConversionError("index " + std::to_string(i) + " out of range for a list of " + std::to_string(l.size()));
  return l[i];
}

PPE_DECL std::size_t Value::size() const noexcept {
  if (is_list()) return as_list().size();
  if (is_dict()) return as_dict().size();
  return 0;
}

// Python's type names, as PPE's messages say them.
PPE_DECL std::string_view Value::kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::Null: return "null";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Double: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Object: return "object";
  }
  return "?";
}

namespace detail {

inline std::string repr_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // Python's 1.0, not 1
  return s;
}

// Python's reprlib limits, roughly: 6 elements, 30 characters of a string,
// 3 levels.
inline void repr_to(std::string& out, const Value& v, int level) {
  switch (v.kind()) {
    case Value::Kind::Null: out += "None"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Double: out += repr_double(v.as_double()); return;
    case Value::Kind::String: {
      const std::string& s = v.as_string();
      out += '\'';
      if (s.size() > 30) out += s.substr(0, 13) + "..." + s.substr(s.size() - 14);
      else out += s;
      out += '\'';
      return;
    }
    case Value::Kind::List: {
      if (level >= 3) {
        out += "[...]";
        return;
      }
      out += '[';
      std::size_t i = 0;
      for (const Value& e : v.as_list()) {
        if (i) out += ", ";
        if (i == 6) {
          out += "...";
          break;
        }
        repr_to(out, e, level + 1);
        ++i;
      }
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (level >= 3) {
        out += "{...}";
        return;
      }
      out += '{';
      std::size_t i = 0;
      for (const auto& [k, e] : v.as_dict()) {
        if (i) out += ", ";
        if (i == 6) {
          out += "...";
          break;
        }
        out += '\'' + k + "': ";
        repr_to(out, e, level + 1);
        ++i;
      }
      out += '}';
      return;
    }
    case Value::Kind::Object: out += "<" + std::string(v.as_object().type_name()) + " object>"; return;
  }
}

}  // namespace detail

PPE_DECL std::string Value::repr() const {
  std::string out;
  detail::repr_to(out, *this, 0);
  return out;
}

PPE_DECL std::string Value::describe() const {
  if (is_object()) return "a " + std::string(as_object().type_name()) + " object";
  if (is_null()) return "null";
  const std::string_view k = kind_name(kind());
  return std::string(k == "int" ? "an " : "a ") + std::string(k) + " " + repr();
}

// As Python's `==`: 1 == 1.0 across int and float; objects by identity
// (Object's ==).
PPE_DECL bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Null: return true;
    case Value::Kind::Bool: return a.as_bool() == b.as_bool();
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::List: return a.as_list() == b.as_list();
    case Value::Kind::Dict: return a.as_dict() == b.as_dict();
    case Value::Kind::Object: return a.as_object() == b.as_object();
    default: return false;
  }
}

PPE_DECL void Value::throw_kind(Kind expected) const {
  throw ConversionError("expected " + std::string(expected == Kind::Int ? "an " : "a ") +
                        std::string(kind_name(expected)) + ", got " + describe());
}

namespace detail {

PPE_DECL void throw_conversion(const std::string& expected, const Value& got) {
  throw ConversionError("expected " + expected + ", got " + got.describe());
}

PPE_DECL std::int64_t checked_int(const Value& v, std::int64_t lo, std::uint64_t hi, const std::string& expected) {
  if (!v.is_int()) throw_conversion(expected, v);
  const std::int64_t i = v.as_int();
  if (i < lo || (i >= 0 && static_cast<std::uint64_t>(i) > hi))
    throw ConversionError("expected " + expected + " in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], got " + std::to_string(i));
  return i;
}

}  // namespace detail
}  // namespace ppe::config
