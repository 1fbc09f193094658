// Definitions of dataset/tabular/rows.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <string>

#include "ppe/dataset/tabular/rows.hpp"

namespace ppe::dataset::tabular {

namespace detail {

/// The number of items of Python's `range(start, stop, step)`.
inline std::int64_t range_length(std::int64_t start, std::int64_t stop, std::int64_t step) {
  if (step > 0) return start < stop ? (stop - start - 1) / step + 1 : 0;
  return start > stop ? (start - stop - 1) / (-step) + 1 : 0;
}

}  // namespace detail

PPE_DECL std::int64_t Slice::Bounds::length() const noexcept { return detail::range_length(start, stop, step); }

PPE_DECL Slice::Bounds Slice::indices(std::int64_t length) const {
  const std::int64_t s = step.value_or(1);
  if (s == 0) throw std::invalid_argument("ppe::dataset::tabular: slice step cannot be zero");
  const std::int64_t lower = s > 0 ? 0 : -1, upper = s > 0 ? length : length - 1;
  const auto clamp = [&](std::optional<std::int64_t> v, std::int64_t absent) {
    if (!v) return absent;
    std::int64_t x = *v;
    if (x < 0) return std::max(x + length, lower);
    return std::min(x, upper);
  };
  return {clamp(start, s > 0 ? lower : upper), clamp(stop, s > 0 ? upper : lower), s};
}

PPE_DECL const Slice& Rows::slice() const {
  if (kind_ != Kind::Slice) throw std::logic_error("ppe::dataset::tabular::Rows: not a slice");
  return slice_;
}
PPE_DECL const std::vector<std::int64_t>& Rows::list() const {
  if (kind_ != Kind::List) throw std::logic_error("ppe::dataset::tabular::Rows: not a list of indices");
  return list_;
}
PPE_DECL const std::vector<bool>& Rows::mask() const {
  if (kind_ != Kind::Mask) throw std::logic_error("ppe::dataset::tabular::Rows: not a mask");
  return mask_;
}

PPE_DECL std::int64_t Rows::count(std::int64_t length) const {
  switch (kind_) {
    case Kind::All: return length;
    case Kind::Slice: return slice_.indices(length).length();
    case Kind::List: return static_cast<std::int64_t>(list_.size());
    case Kind::Mask: return static_cast<std::int64_t>(std::count(mask_.begin(), mask_.end(), true));
  }
  return 0;
}

PPE_DECL Rows Rows::normalized(std::int64_t length) const {
  if (kind_ == Kind::All || kind_ == Kind::Slice) return *this;
  std::vector<std::int64_t> out;
  if (kind_ == Kind::Mask) {
    if (static_cast<std::int64_t>(mask_.size()) != length)
      throw std::invalid_argument("ppe::dataset::tabular: the number of booleans (" + std::to_string(mask_.size()) +
                                  ") is different from the length of dataset (" + std::to_string(length) + ")");
    for (std::size_t i = 0; i < mask_.size(); ++i)
      if (mask_[i]) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  for (std::int64_t i : list_) {
    const std::int64_t given = i;
    if (i < 0) i += length;
    if (i < 0 || i >= length)
      throw std::out_of_range("ppe::dataset::tabular: index " + std::to_string(given) +
                              " is out of bounds for dataset with size " + std::to_string(length));
    out.push_back(i);
  }
  return out;
}

PPE_DECL std::ostream& operator<<(std::ostream& os, const Rows& rows) {
  const auto bound = [&](const std::optional<std::int64_t>& v) {
    if (v) os << *v;
    else os << "None";
  };
  switch (rows.kind_) {
    case Rows::Kind::All: return os << "None";
    case Rows::Kind::Slice:
      os << "slice(";
      bound(rows.slice_.start);
      os << ", ";
      bound(rows.slice_.stop);
      os << ", ";
      bound(rows.slice_.step);
      return os << ")";
    case Rows::Kind::List:
    case Rows::Kind::Mask: {
      os << "[";
      const std::size_t n = rows.kind_ == Rows::Kind::List ? rows.list_.size() : rows.mask_.size();
      for (std::size_t i = 0; i < n; ++i) {
        os << (i ? ", " : "");
        if (rows.kind_ == Rows::Kind::List) os << rows.list_[i];
        else os << (rows.mask_[i] ? "True" : "False");
      }
      return os << "]";
    }
  }
  return os;
}

}  // namespace ppe::dataset::tabular
