// Definitions of dataset/tabular/concat.hpp (the view and TabularDataset::concat): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/dataset/tabular/concat.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular {

namespace detail {

/// Python's `a % b` (the result has the sign of `b`).
inline std::int64_t py_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

PPE_DECL Concat::Concat(std::vector<TabularPtr> datasets) : datasets_(std::move(datasets)) {
  for (std::size_t i = 1; i < datasets_.size(); ++i)
    if (datasets_[i]->keys() != datasets_[0]->keys())
      throw std::invalid_argument("ppe::dataset::tabular::concat: all datasets must have the same keys; dataset " +
                                  std::to_string(i) + " has " + ppe::detail::python_str_tuple(datasets_[i]->keys()) + ", the first " +
                                  ppe::detail::python_str_tuple(datasets_[0]->keys()));
}

PPE_DECL std::vector<Column> Concat::get_examples(const Rows& rows, const KeyIndices& key_indices) const {
  const std::size_t n_cols = key_indices ? key_indices->size() : keys().size();
  std::vector<std::vector<Column>> parts;
  if (rows.is_all()) {
    for (const auto& d : datasets_) parts.push_back(d->get_examples(rows, key_indices));
    return concat_parts(parts, n_cols);
  }
  if (rows.kind() == Rows::Kind::Slice) {
    const auto b = rows.slice().indices(size());
    std::int64_t offset = 0;
    for (const auto& d : datasets_) {
      const std::int64_t len = d->size();
      std::int64_t sub_start = b.start - offset, sub_stop = b.stop - offset;
      if (b.step > 0) {
        if (sub_start < 0) sub_start = py_mod(sub_start, b.step);
        sub_stop = std::min(sub_stop, len);
      } else {
        if (sub_start >= len) sub_start = len + py_mod(sub_start - len, b.step);
        sub_stop = std::max<std::int64_t>(sub_stop, -1);
      }
      if (Slice::Bounds{sub_start, sub_stop, b.step}.length() > 0) {
        std::optional<std::int64_t> start = sub_start, stop = sub_stop;
        if (sub_start < 0 && b.step > 0) start.reset();
        if (sub_stop < 0 && b.step < 0) stop.reset();
        parts.push_back(d->get_examples(Slice(start, stop, b.step), key_indices));
      }
      offset += len;
    }
    if (parts.size() == 1) return parts[0];
    if (b.step < 0) std::reverse(parts.begin(), parts.end());
    return concat_parts(parts, n_cols);
  }
  // A list: each dataset reads its own rows once, then the rows are put back in order.
  const auto& indices = rows.list();
  std::vector<std::int64_t> order(indices.size(), -1);
  std::int64_t offset = 0, base = 0;
  for (const auto& d : datasets_) {
    const std::int64_t len = d->size();
    std::vector<std::int64_t> sub;
    for (std::size_t p = 0; p < indices.size(); ++p)
      if (indices[p] >= offset && indices[p] < offset + len) {
        order[p] = base + static_cast<std::int64_t>(sub.size());
        sub.push_back(indices[p] - offset);
      }
    if (!sub.empty()) {
      base += static_cast<std::int64_t>(sub.size());
      parts.push_back(d->get_examples(std::move(sub), key_indices));
    }
    offset += len;
  }
  for (std::size_t p = 0; p < indices.size(); ++p)
    if (order[p] < 0)
      throw std::out_of_range("ppe::dataset::tabular::concat: index " + std::to_string(indices[p]) +
                              " is out of bounds for a dataset of size " + std::to_string(offset));
  if (parts.size() == 1) return parts[0];
  auto cols = concat_parts(parts, n_cols);
  if (parts.empty()) return cols;
  for (auto& c : cols) c = c.take(order);
  return cols;
}

PPE_DECL std::vector<Column> Concat::concat_parts(const std::vector<std::vector<Column>>& parts, std::size_t n_cols) {
  std::vector<Column> out;
  for (std::size_t c = 0; c < n_cols; ++c) {
    std::vector<Column> pieces;
    for (const auto& p : parts) pieces.push_back(p.at(c));
    out.push_back(Column::concat(pieces));
  }
  return out;
}

}  // namespace detail

PPE_DECL TabularPtr TabularDataset::concat(std::vector<TabularPtr> others) const {
  others.insert(others.begin(), shared());
  for (const auto& d : others)
    if (!d) throw std::invalid_argument("ppe::dataset::tabular::concat: a dataset is null");
  return std::make_shared<detail::Concat>(std::move(others));
}

}  // namespace ppe::dataset::tabular
