#pragma once
/// \file
/// `ppe::reporting::LogEntry`: one line of a LogReport's log (PPE's
/// `stats_cpu` dictionary), an insertion-ordered map from keys to numbers that
/// keeps integers apart from floats (`"epoch": 1` is not `"epoch": 1.0`).
/// It lives in reporting, below training, because the writers take it too
/// (`Writer::write_log`, `TensorBoardWriter`).

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ppe/detail/python_repr.hpp"

namespace ppe::reporting {

/// A number of a log entry: an integer or a float, written as Python writes an
/// `int` or a `float`.
class LogValue {
 public:
  LogValue() : v_(std::int64_t{0}) {}
  /// Any integer type (not bool) is an integer.
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  LogValue(I v) : v_(static_cast<std::int64_t>(v)) {}
  /// Any floating-point type is a float.
  template <class F>
    requires std::is_floating_point_v<F>
  LogValue(F v) : v_(static_cast<double>(v)) {}

  bool is_int() const noexcept { return v_.index() == 0; }
  bool is_double() const noexcept { return v_.index() == 1; }
  /// The integer; an error for a float (use `to_double()` for either).
  std::int64_t as_int() const {
    if (!is_int()) throw std::logic_error("ppe::LogValue: expected an integer, holds a float");
    return std::get<0>(v_);
  }
  /// The value as a double, integer or float.
  double to_double() const noexcept {
    return is_int() ? static_cast<double>(std::get<0>(v_)) : std::get<1>(v_);
  }

  /// Same kind and same value (a float NaN equals nothing, as in Python).
  friend bool operator==(const LogValue& a, const LogValue& b) noexcept { return a.v_ == b.v_; }
  /// Prints as Python prints the number (`1`, `0.5`, `1e-07`, `nan`).
  friend std::ostream& operator<<(std::ostream& os, const LogValue& v) {
    return v.is_int() ? os << v.as_int() : os << ppe::detail::python_float_repr(v.to_double());
  }

 private:
  std::variant<std::int64_t, double> v_;
};

/// One entry of the log: keys in insertion order, each with a `LogValue`.
/// Setting an existing key keeps its position (as a Python dict does).
class LogEntry {
 public:
  using Item = std::pair<std::string, LogValue>;

  LogEntry() = default;
  LogEntry(std::initializer_list<Item> items) {
    for (const auto& [k, v] : items) set(k, v);
  }

  /// Sets `key`: in place when present, else appended.
  LogValue& set(std::string_view key, LogValue value) {
    if (LogValue* v = find(key)) return *v = value;
    return items_.emplace_back(std::string(key), value).second;
  }
  /// The value under `key`, or nullptr.
  const LogValue* find(std::string_view key) const noexcept {
    for (const auto& [k, v] : items_)
      if (k == key) return &v;
    return nullptr;
  }
  LogValue* find(std::string_view key) noexcept {
    return const_cast<LogValue*>(static_cast<const LogEntry&>(*this).find(key));
  }
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// The value under `key`; an error naming the key and the keys present.
  const LogValue& at(std::string_view key) const {
    if (const LogValue* v = find(key)) return *v;
    throw std::out_of_range("ppe::LogEntry: key '" + std::string(key) +
                            "' not found; keys present: " + ppe::detail::python_key_list(items_));
  }
  /// Removes `key`; whether it was present.
  bool erase(std::string_view key) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == key) {
        items_.erase(it);
        return true;
      }
    return false;
  }

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  auto begin() const noexcept { return items_.begin(); }
  auto end() const noexcept { return items_.end(); }
  auto begin() noexcept { return items_.begin(); }
  auto end() noexcept { return items_.end(); }
  const std::vector<Item>& items() const noexcept { return items_; }

  friend bool operator==(const LogEntry& a, const LogEntry& b) { return a.items_ == b.items_; }
  /// Prints as `{"key": value, ...}` (for diagnostics: keys are not escaped).
  friend std::ostream& operator<<(std::ostream& os, const LogEntry& e) {
    os << '{';
    for (std::size_t i = 0; i < e.items_.size(); ++i)
      os << (i ? ", \"" : "\"") << e.items_[i].first << "\": " << e.items_[i].second;
    return os << '}';
  }

 private:
  std::vector<Item> items_;
};

}  // namespace ppe::reporting
