#pragma once
/// \file
/// `ppe::dataset::tabular::Key`: a column named by key or by position, and
/// `key_indices_of`, which turns keys into positions (PPE's
/// `_utils._as_key_indices`); `KeyIndices`, the positions a dataset reads.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular {

/// Which columns to read, by position in `keys()`; `std::nullopt` is all of
/// them (PPE's `key_indices=None`). Positions may repeat.
using KeyIndices = std::optional<std::vector<std::size_t>>;

/// A column named by key or by position (negative counts from the end).
class Key {
 public:
  Key(std::string name) : key_(std::move(name)) {}
  Key(const char* name) : key_(std::string(name)) {}
  Key(std::string_view name) : key_(std::string(name)) {}
  template <std::integral I>
  Key(I position) : key_(static_cast<std::int64_t>(position)) {}

  bool is_position() const noexcept { return key_.index() == 0; }
  std::int64_t position() const { return std::get<0>(key_); }
  const std::string& name() const { return std::get<1>(key_); }
  friend bool operator==(const Key&, const Key&) = default;

 private:
  std::variant<std::int64_t, std::string> key_;
};

/// PPE's `_as_key_indices`: positions of `keys` in `names` (a position out of
/// range or an unknown name is `std::out_of_range` naming it and the keys).
PPE_DECL std::vector<std::size_t> key_indices_of(const std::vector<Key>& keys, const std::vector<std::string>& names);

namespace detail {
/// Throws the error of an unknown key: `where` ("dataset", "record") has no
/// `key`, and its keys are `keys`.
[[noreturn]] PPE_DECL void throw_unknown_key(std::string_view where, std::string_view key,
                                             const std::vector<std::string>& keys);
}  // namespace detail

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/key.ipp"
#endif
