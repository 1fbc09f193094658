// Definitions of dataset/tabular/slice.hpp (the view and TabularDataset::slice): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/dataset/tabular/slice.hpp"

namespace ppe::dataset::tabular {

namespace detail {

/// PPE's `_merge_indices`: the rows of the parent that the rows `b` of a view
/// (of `len_b` rows) selecting the rows `a` of the parent (of `len_a` rows) are.
inline Rows merge_rows(const Rows& a, const Rows& b, std::int64_t len_a, std::int64_t len_b) {
  if (a.is_all()) return b;
  if (b.is_all()) return a;
  if (a.kind() == Rows::Kind::Slice && b.kind() == Rows::Kind::Slice) {
    const auto ab = a.slice().indices(len_a);
    const auto bb = b.slice().indices(len_b);
    std::optional<std::int64_t> start = ab.start + ab.step * bb.start;
    std::optional<std::int64_t> stop = ab.start + ab.step * bb.stop;
    const std::int64_t step = ab.step * bb.step;
    // A negative bound would count from the end: Python's None is meant.
    if (*start < 0 && step > 0) start.reset();
    if (*stop < 0 && step < 0) stop.reset();
    return Slice(start, stop, step);
  }
  std::vector<std::int64_t> out;
  if (a.kind() == Rows::Kind::Slice) {
    const auto ab = a.slice().indices(len_a);
    for (const auto i : b.list()) out.push_back(ab[i]);
    return out;
  }
  const auto& al = a.list();
  if (b.kind() == Rows::Kind::Slice) {
    const auto bb = b.slice().indices(static_cast<std::int64_t>(al.size()));
    for (std::int64_t i = 0, n = bb.length(); i < n; ++i) out.push_back(al[static_cast<std::size_t>(bb[i])]);
    return out;
  }
  for (const auto i : b.list()) {
    if (i < 0 || i >= static_cast<std::int64_t>(al.size()))
      throw std::out_of_range("ppe::dataset::tabular: index " + std::to_string(i) +
                              " is out of bounds for a view of size " + std::to_string(al.size()));
    out.push_back(al[static_cast<std::size_t>(i)]);
  }
  return out;
}

/// PPE's `_merge_key_indices`.
inline KeyIndices merge_key_indices(const KeyIndices& a, const KeyIndices& b) {
  if (!a) return b;
  if (!b) return a;
  std::vector<std::size_t> out;
  for (const auto i : *b) {
    if (i >= a->size())
      throw std::out_of_range("ppe::dataset::tabular: key index " + std::to_string(i) +
                              " is out of bounds for a view of " + std::to_string(a->size()) + " keys");
    out.push_back((*a)[i]);
  }
  return out;
}

PPE_DECL std::vector<Column> SliceView::get_examples(const Rows& rows, const KeyIndices& key_indices) const {
  return parent_->get_examples(merge_rows(rows_, rows, parent_->size(), size_),
                               merge_key_indices(key_indices_, key_indices));
}

}  // namespace detail

PPE_DECL TabularPtr TabularDataset::slice(Rows rows) const {
  return std::make_shared<detail::SliceView>(shared(), rows.normalized(size()), std::nullopt, std::nullopt);
}

PPE_DECL TabularPtr TabularDataset::slice(Rows rows, std::vector<Key> keys) const {
  Rows normalized = rows.normalized(size());  // PPE checks the rows first
  auto indices = key_indices_of(keys, this->keys());
  return std::make_shared<detail::SliceView>(shared(), std::move(normalized), std::move(indices), false);
}

PPE_DECL TabularPtr TabularDataset::slice_key(Rows rows, Key key) const {
  Rows normalized = rows.normalized(size());
  auto indices = key_indices_of({std::move(key)}, keys());
  return std::make_shared<detail::SliceView>(shared(), std::move(normalized), std::move(indices), true);
}

}  // namespace ppe::dataset::tabular
