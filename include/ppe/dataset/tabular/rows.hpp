#pragma once
/// \file
/// `ppe::dataset::tabular::Rows`: which rows of a tabular dataset to read
/// (all, a Python slice `Slice`, a list of indices or a boolean mask; PPE
/// takes `None`, a `slice`, a list or an array), and PPE's rules for them
/// (`_utils._as_indices`, Python's `slice.indices`).

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular {

/// A Python slice `start:stop:step`; an absent bound is Python's `None`.
struct Slice {
  std::optional<std::int64_t> start, stop, step;

  Slice() = default;
  Slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_,
        std::optional<std::int64_t> step_ = std::nullopt)
      : start(start_), stop(stop_), step(step_) {}

  /// Python's `slice.indices(length)`: the bounds clamped to a sequence of
  /// `length` items, and the step. A zero step is `std::invalid_argument`.
  struct Bounds {
    std::int64_t start, stop, step;
    /// The number of indices `range(start, stop, step)` holds.
    PPE_DECL std::int64_t length() const noexcept;
    /// The `i`-th of them.
    std::int64_t operator[](std::int64_t i) const noexcept { return start + i * step; }
  };
  PPE_DECL Bounds indices(std::int64_t length) const;

  friend bool operator==(const Slice&, const Slice&) = default;
};

/// Which rows to read: all, a slice, a list of indices, or a boolean mask
/// (one flag per row). `TabularDataset::slice` accepts every kind (negative
/// indices count from the end); `get_examples` receives all rows, a slice, or
/// a list of valid non-negative indices, never a mask.
class Rows {
 public:
  enum class Kind { All, Slice, List, Mask };

  /// All rows (PPE's `None`).
  Rows() = default;
  static Rows all() { return Rows(); }
  Rows(Slice slice) : kind_(Kind::Slice), slice_(slice) {}
  Rows(std::vector<std::int64_t> indices) : kind_(Kind::List), list_(std::move(indices)) {}
  Rows(std::initializer_list<std::int64_t> indices) : kind_(Kind::List), list_(indices) {}
  /// A boolean mask: the rows whose flag is true.
  Rows(std::vector<bool> mask) : kind_(Kind::Mask), mask_(std::move(mask)) {}

  Kind kind() const noexcept { return kind_; }
  bool is_all() const noexcept { return kind_ == Kind::All; }
  /// The slice; `std::logic_error` unless `kind() == Kind::Slice`.
  PPE_DECL const Slice& slice() const;
  /// The indices; `std::logic_error` unless `kind() == Kind::List`.
  PPE_DECL const std::vector<std::int64_t>& list() const;
  /// The flags; `std::logic_error` unless `kind() == Kind::Mask`.
  PPE_DECL const std::vector<bool>& mask() const;

  /// The number of rows selected from a dataset of `length` rows.
  PPE_DECL std::int64_t count(std::int64_t length) const;
  /// PPE's `_as_indices`: a mask becomes the list of its true rows (its length
  /// must be `length`: `std::invalid_argument`), negative indices count from
  /// the end and an index out of range is `std::out_of_range`.
  PPE_DECL Rows normalized(std::int64_t length) const;

  friend bool operator==(const Rows&, const Rows&) = default;
  PPE_DECL friend std::ostream& operator<<(std::ostream& os, const Rows& rows);

 private:
  Kind kind_ = Kind::All;
  Slice slice_;
  std::vector<std::int64_t> list_;
  std::vector<bool> mask_;
};

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/rows.ipp"
#endif
