// Definitions of dataset/tabular/tabular_dataset.hpp's out-of-line functions and of its views
// (PPE's private modules _asmode, _concat, _join, _slice, _transform, _with_converter, _utils):
// included by it when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/stack.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular {

namespace detail {

/// Python's `a % b` (the result has the sign of `b`).
inline std::int64_t py_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/// The number of items of Python's `range(start, stop, step)`.
inline std::int64_t range_length(std::int64_t start, std::int64_t stop, std::int64_t step) {
  if (step > 0) return start < stop ? (stop - start - 1) / step + 1 : 0;
  return start > stop ? (start - stop - 1) / (-step) + 1 : 0;
}

/// An int64 tensor holding `values`.
inline at::Tensor long_tensor(std::vector<std::int64_t> values) {
  return at::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, at::kLong).clone();
}

[[noreturn]] PPE_DECL void throw_unknown_key(std::string_view where, std::string_view key,
                                             const std::vector<std::string>& keys) {
  throw std::out_of_range("ppe::dataset::tabular: the " + std::string(where) + " has no key '" + std::string(key) +
                          "'; its keys are " + ppe::detail::python_str_tuple(keys));
}

[[noreturn]] PPE_DECL void throw_wrong_type(std::string_view key, const Value& value, std::string_view wanted) {
  static constexpr std::string_view names[] = {"an integer", "a double", "a string", "a tensor"};
  throw std::invalid_argument("ppe::dataset::tabular: the value of '" + std::string(key) + "' is " +
                              std::string(names[value.index()]) + " (" + repr(value) + "), not " +
                              std::string(wanted));
}

PPE_DECL bool equal_values(const at::Tensor& a, const at::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.device() == b.device() && a.equal(b);
}

PPE_DECL bool equal_values(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const auto* t = std::get_if<at::Tensor>(&a)) return equal_values(*t, std::get<at::Tensor>(b));
  if (const auto* s = std::get_if<std::string>(&a)) return *s == std::get<std::string>(b);
  if (const auto* i = std::get_if<std::int64_t>(&a)) return *i == std::get<std::int64_t>(b);
  return std::get<double>(a) == std::get<double>(b);
}

PPE_DECL bool equal_values(const Column& a, const Column& b) { return a == b; }

PPE_DECL void print_value(std::ostream& os, const at::Tensor& t) {
  if (!t.defined()) {
    os << "tensor(undefined)";
    return;
  }
  const at::Tensor flat = t.detach().cpu().reshape({-1}).to(at::kDouble).contiguous();
  os << "tensor([";
  const auto n = std::min<std::int64_t>(flat.numel(), 8);
  for (std::int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << flat.data_ptr<double>()[i];
  if (flat.numel() > n) os << ", ...";
  os << "], shape=" << ppe::detail::python_shape(t.sizes()) << ", dtype=" << t.scalar_type() << ")";
}

PPE_DECL void print_value(std::ostream& os, const Value& v) {
  if (const auto* t = std::get_if<at::Tensor>(&v)) print_value(os, *t);
  else if (const auto* s = std::get_if<std::string>(&v)) os << ppe::detail::python_str_repr(*s);
  else if (const auto* i = std::get_if<std::int64_t>(&v)) os << *i;
  else os << std::get<double>(v);
}

PPE_DECL void print_value(std::ostream& os, const Column& v) { os << v; }

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

inline std::vector<std::size_t> all_key_indices(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

/// `astuple()` / `asdict()`: another mode, same data and converter.
class AsMode final : public TabularDataset {
 public:
  AsMode(TabularPtr parent, Mode mode) : parent_(std::move(parent)), mode_(mode) {}
  std::int64_t size() const override { return parent_->size(); }
  const std::vector<std::string>& keys() const override { return parent_->keys(); }
  Mode mode() const override { return mode_; }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return parent_->get_examples(rows, key_indices);
  }
  Columns convert(const Columns& data) const override { return parent_->convert(data); }

 private:
  TabularPtr parent_;
  Mode mode_;
};

/// `with_converter()`.
class WithConverter final : public TabularDataset {
 public:
  WithConverter(TabularPtr parent, Converter converter) : parent_(std::move(parent)), converter_(std::move(converter)) {
    if (!converter_) throw std::invalid_argument("ppe::dataset::tabular::with_converter: the converter is empty");
  }
  std::int64_t size() const override { return parent_->size(); }
  const std::vector<std::string>& keys() const override { return parent_->keys(); }
  Mode mode() const override { return parent_->mode(); }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return parent_->get_examples(rows, key_indices);
  }
  Columns convert(const Columns& data) const override { return converter_(data); }

 private:
  TabularPtr parent_;
  Converter converter_;
};

/// `slice[rows]`, `slice[rows, keys]`, `slice[rows, key]`.
class SliceView final : public TabularDataset {
 public:
  SliceView(TabularPtr parent, Rows rows, KeyIndices key_indices, std::optional<bool> unary)
      : parent_(std::move(parent)), rows_(std::move(rows)), key_indices_(std::move(key_indices)), unary_(unary) {
    size_ = rows_.count(parent_->size());
    if (key_indices_)
      for (const auto i : *key_indices_) keys_.push_back(parent_->keys()[i]);
  }
  std::int64_t size() const override { return size_; }
  const std::vector<std::string>& keys() const override { return key_indices_ ? keys_ : parent_->keys(); }
  Mode mode() const override {
    if (!unary_) return parent_->mode();
    if (*unary_) return Mode::Unary;
    return parent_->mode() == Mode::Unary ? Mode::Tuple : parent_->mode();
  }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return parent_->get_examples(merge_rows(rows_, rows, parent_->size(), size_),
                                 merge_key_indices(key_indices_, key_indices));
  }
  Columns convert(const Columns& data) const override { return parent_->convert(data); }

 private:
  TabularPtr parent_;
  Rows rows_;
  KeyIndices key_indices_;
  std::optional<bool> unary_;
  std::int64_t size_ = 0;
  std::vector<std::string> keys_;
};

/// `concat()`: rows of several datasets with the same keys.
class Concat final : public TabularDataset {
 public:
  explicit Concat(std::vector<TabularPtr> datasets) : datasets_(std::move(datasets)) {
    for (std::size_t i = 1; i < datasets_.size(); ++i)
      if (datasets_[i]->keys() != datasets_[0]->keys())
        throw std::invalid_argument("ppe::dataset::tabular::concat: all datasets must have the same keys; dataset " +
                                    std::to_string(i) + " has " + ppe::detail::python_str_tuple(datasets_[i]->keys()) +
                                    ", the first " + ppe::detail::python_str_tuple(datasets_[0]->keys()));
  }
  std::int64_t size() const override {
    std::int64_t n = 0;
    for (const auto& d : datasets_) n += d->size();
    return n;
  }
  const std::vector<std::string>& keys() const override { return datasets_[0]->keys(); }
  Mode mode() const override { return datasets_[0]->mode(); }
  Columns convert(const Columns& data) const override { return datasets_[0]->convert(data); }

  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
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
        if (range_length(sub_start, sub_stop, b.step) > 0) {
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
    std::vector<std::int64_t> part_base;  // where each contributing part starts in the concatenation
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

 private:
  static std::vector<Column> concat_parts(const std::vector<std::vector<Column>>& parts, std::size_t n_cols) {
    std::vector<Column> out;
    for (std::size_t c = 0; c < n_cols; ++c) {
      std::vector<Column> pieces;
      for (const auto& p : parts) pieces.push_back(p.at(c));
      out.push_back(Column::concat(pieces));
    }
    return out;
  }

  std::vector<TabularPtr> datasets_;
};

/// `join()`: columns of several datasets with the same number of rows.
class Join final : public TabularDataset {
 public:
  explicit Join(std::vector<TabularPtr> datasets) : datasets_(std::move(datasets)) {
    std::set<std::string> seen(datasets_[0]->keys().begin(), datasets_[0]->keys().end());
    for (std::size_t i = 1; i < datasets_.size(); ++i) {
      if (datasets_[i]->size() != datasets_[0]->size())
        throw std::invalid_argument("ppe::dataset::tabular::join: all datasets must have the same length; dataset " +
                                    std::to_string(i) + " has " + std::to_string(datasets_[i]->size()) +
                                    " rows, the first " + std::to_string(datasets_[0]->size()));
      for (const auto& k : datasets_[i]->keys())
        if (!seen.insert(k).second)
          throw std::invalid_argument("ppe::dataset::tabular::join: all keys must be unique among the datasets; '" +
                                      k + "' is in dataset " + std::to_string(i) + " and an earlier one");
    }
    for (const auto& d : datasets_) keys_.insert(keys_.end(), d->keys().begin(), d->keys().end());
  }
  std::int64_t size() const override { return datasets_[0]->size(); }
  const std::vector<std::string>& keys() const override { return keys_; }
  Mode mode() const override {
    for (const auto& d : datasets_)
      if (d->mode() != Mode::Unary) return d->mode();
    return Mode::Tuple;
  }
  Columns convert(const Columns& data) const override { return datasets_[0]->convert(data); }

  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    std::vector<Column> out;
    if (!key_indices) {
      for (const auto& d : datasets_) {
        auto cols = d->get_examples(rows, std::nullopt);
        out.insert(out.end(), cols.begin(), cols.end());
      }
      return out;
    }
    std::map<std::size_t, Column> columns;
    std::size_t key_offset = 0;
    for (const auto& d : datasets_) {
      const std::size_t n_keys = d->keys().size();
      std::vector<std::size_t> sub;
      for (const auto k : *key_indices)
        if (k >= key_offset && k < key_offset + n_keys &&
            std::find(sub.begin(), sub.end(), k - key_offset) == sub.end())
          sub.push_back(k - key_offset);
      if (!sub.empty()) {
        const auto cols = d->get_examples(rows, sub);
        for (std::size_t j = 0; j < sub.size(); ++j) columns[key_offset + sub[j]] = cols.at(j);
      }
      key_offset += n_keys;
    }
    for (const auto k : *key_indices) {
      const auto it = columns.find(k);
      if (it == columns.end())
        throw std::out_of_range("ppe::dataset::tabular::join: key index " + std::to_string(k) +
                                " is out of bounds for " + std::to_string(keys_.size()) + " keys");
      out.push_back(it->second);
    }
    return out;
  }

 private:
  std::vector<TabularPtr> datasets_;
  std::vector<std::string> keys_;
};

/// What `transform` and `transform_batch` share: the checked signatures.
template <class T>
class TransformView final : public TabularDataset {
 public:
  TransformView(TabularPtr parent, std::vector<std::string> keys, std::vector<T> transforms)
      : parent_(std::move(parent)), keys_(std::move(keys)), transforms_(std::move(transforms)) {
    constexpr bool batch = std::is_same_v<T, BatchTransformation>;
    const std::string what = batch ? "transform_batch" : "transform";
    std::vector<Key> out_keys(keys_.begin(), keys_.end());
    std::set<std::string> produced;
    for (std::size_t i = 0; i < transforms_.size(); ++i) {
      const T& t = transforms_[i];
      for (const auto& o : t.outputs())
        if (!produced.insert(o).second)
          throw std::invalid_argument("ppe::dataset::tabular::" + what +
                                      ": transformations must be disjoint; the output '" + o +
                                      "' is produced twice");
      if (t.mode() == Mode::Unary && t.outputs().size() != 1)
        throw std::invalid_argument("ppe::dataset::tabular::" + what + ": transformation " + std::to_string(i) +
                                    " returns one value but declares " + std::to_string(t.outputs().size()) +
                                    " outputs " + ppe::detail::python_str_tuple(t.outputs()));
      if (i > 0 && t.mode() != transforms_[0].mode())
        throw std::invalid_argument("ppe::dataset::tabular::" + what +
                                    ": all transformations must return the same kind of result (transformation 0 "
                                    "returns a " + std::string(mode_name(transforms_[0].mode())) +
                                    ", transformation " + std::to_string(i) + " a " +
                                    std::string(mode_name(t.mode())) + ")");
      ops_.push_back(key_indices_of(t.inputs(), parent_->keys()));
      std::vector<Key> outs(t.outputs().begin(), t.outputs().end());
      res_.push_back(key_indices_of(outs, keys_));
    }
    if (produced != std::set<std::string>(keys_.begin(), keys_.end()) || produced.size() != keys_.size())
      throw std::invalid_argument("ppe::dataset::tabular::" + what +
                                  ": the transformations must produce exactly the keys " +
                                  ppe::detail::python_str_tuple(keys_));
    mode_ = transforms_.empty() ? Mode::Tuple : transforms_[0].mode();
  }

  std::int64_t size() const override { return parent_->size(); }
  const std::vector<std::string>& keys() const override { return keys_; }
  Mode mode() const override { return mode_; }
  Columns convert(const Columns& data) const override { return parent_->convert(data); }

  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    const std::vector<std::size_t> ki = key_indices ? *key_indices : all_key_indices(keys_.size());
    // The transformations producing a requested key, and the parent's columns they read.
    std::vector<std::size_t> needed;
    std::set<std::size_t> operand_set;
    for (std::size_t t = 0; t < transforms_.size(); ++t)
      for (const auto r : res_[t])
        if (std::find(ki.begin(), ki.end(), r) != ki.end()) {
          needed.push_back(t);
          operand_set.insert(ops_[t].begin(), ops_[t].end());
          break;
        }
    const std::vector<std::size_t> operands(operand_set.begin(), operand_set.end());
    const auto in = parent_->get_examples(rows, operands);
    const std::int64_t n = rows.count(parent_->size());
    const Mode in_mode = parent_->mode();

    // For each transformation, where its inputs are in `in`, their keys, and
    // which outputs go to which requested positions.
    struct Plan {
      std::vector<std::size_t> in_pos;
      std::shared_ptr<const std::vector<std::string>> in_keys;
      Mode in_mode;
      std::vector<std::vector<std::size_t>> out_pos;  // per output of the transformation
    };
    std::vector<Plan> plans;
    for (const auto t : needed) {
      Plan p;
      std::vector<std::string> in_keys;
      for (const auto o : ops_[t]) {
        p.in_pos.push_back(static_cast<std::size_t>(std::find(operands.begin(), operands.end(), o) - operands.begin()));
        in_keys.push_back(parent_->keys()[o]);
      }
      p.in_mode = (in_mode == Mode::Unary && in_keys.size() != 1) ? Mode::Tuple : in_mode;
      p.in_keys = std::make_shared<const std::vector<std::string>>(std::move(in_keys));
      for (const auto r : res_[t]) {
        std::vector<std::size_t> pos;
        for (std::size_t q = 0; q < ki.size(); ++q)
          if (ki[q] == r) pos.push_back(q);
        p.out_pos.push_back(std::move(pos));
      }
      plans.push_back(std::move(p));
    }

    if constexpr (std::is_same_v<T, BatchTransformation>) {
      std::vector<Column> out(ki.size());
      for (std::size_t j = 0; j < needed.size(); ++j) {
        const Plan& p = plans[j];
        const T& t = transforms_[needed[j]];
        std::vector<Column> args;
        for (const auto i : p.in_pos) args.push_back(in.at(i));
        std::vector<std::string> dict_keys;
        const auto result = t(Columns(p.in_mode, p.in_keys, std::move(args)), &dict_keys);
        const auto values = in_output_order(t, result, dict_keys);
        for (std::size_t o = 0; o < values.size(); ++o) {
          if (values[o]->size() != n)
            throw std::invalid_argument("ppe::dataset::tabular::transform_batch must not change the length of data: "
                                        "the output '" + t.outputs()[o] + "' has " +
                                        std::to_string(values[o]->size()) + " rows, the input " + std::to_string(n));
          for (const auto q : p.out_pos[o]) out[q] = *values[o];
        }
      }
      return out;
    } else {
      std::vector<std::vector<Value>> out(ki.size());
      for (auto& c : out) c.reserve(static_cast<std::size_t>(n));
      std::vector<std::string> dict_keys;
      for (std::int64_t r = 0; r < n; ++r) {
        for (std::size_t j = 0; j < needed.size(); ++j) {
          const Plan& p = plans[j];
          const T& t = transforms_[needed[j]];
          std::vector<Value> args;
          args.reserve(p.in_pos.size());
          for (const auto i : p.in_pos) args.push_back(in.at(i).at(r));
          dict_keys.clear();
          const auto result = t(Example(p.in_mode, p.in_keys, std::move(args)), &dict_keys);
          const auto values = in_output_order(t, result, dict_keys);
          for (std::size_t o = 0; o < values.size(); ++o)
            for (const auto q : p.out_pos[o]) out[q].push_back(*values[o]);
        }
      }
      std::vector<Column> cols;
      for (auto& c : out) cols.emplace_back(std::move(c));
      return cols;
    }
  }

 private:
  /// The results of `t` in the order of its outputs (pointers into `result`).
  template <class V>
  static std::vector<const V*> in_output_order(const T& t, const std::vector<V>& result,
                                               const std::vector<std::string>& dict_keys) {
    std::vector<const V*> out;
    if (t.mode() == Mode::Dict) {
      for (const auto& o : t.outputs()) {
        const auto it = std::find(dict_keys.begin(), dict_keys.end(), o);
        if (it == dict_keys.end())
          throw std::out_of_range("ppe::dataset::tabular: a transformation returned a dict without its output '" + o +
                                  "'; the dict's keys are " + ppe::detail::python_str_tuple(dict_keys));
        out.push_back(&result[static_cast<std::size_t>(it - dict_keys.begin())]);
      }
      return out;
    }
    if (result.size() != t.outputs().size())
      throw std::invalid_argument("ppe::dataset::tabular: a transformation returned " + std::to_string(result.size()) +
                                  " values for its " + std::to_string(t.outputs().size()) + " outputs " +
                                  ppe::detail::python_str_tuple(t.outputs()));
    for (const auto& v : result) out.push_back(&v);
    return out;
  }

  TabularPtr parent_;
  std::vector<std::string> keys_;
  std::vector<T> transforms_;
  std::vector<std::vector<std::size_t>> ops_, res_;
  Mode mode_ = Mode::Tuple;
};

PPE_DECL Columns fetch_rows(const TabularDataset& dataset, c10::ArrayRef<std::size_t> indices) {
  std::vector<std::int64_t> list(indices.begin(), indices.end());
  const Rows rows = Rows(std::move(list)).normalized(dataset.size());
  return Columns(dataset.mode(), dataset.keys(), dataset.get_examples(rows, std::nullopt));
}

}  // namespace detail

PPE_DECL std::string_view mode_name(Mode mode) noexcept {
  switch (mode) {
    case Mode::Tuple: return "tuple";
    case Mode::Dict: return "dict";
    case Mode::Unary: return "None";
  }
  return "?";
}

PPE_DECL bool equal(const Value& a, const Value& b) { return detail::equal_values(a, b); }

PPE_DECL std::string repr(const Value& value) {
  std::ostringstream os;
  detail::print_value(os, value);
  return os.str();
}

// --- Slice and Rows -------------------------------------------------------------------------------

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

// --- Column ---------------------------------------------------------------------------------------

PPE_DECL Column::Column(at::Tensor array) : data_(std::move(array)) {
  const auto& t = std::get<1>(data_);
  if (!t.defined()) throw std::invalid_argument("ppe::dataset::tabular::Column: the tensor is undefined");
  if (t.dim() == 0)
    throw std::invalid_argument(
        "ppe::dataset::tabular::Column: a tensor column needs a dimension for the rows (got a 0-d tensor)");
}

PPE_DECL const at::Tensor& Column::array() const {
  if (!is_array()) throw std::logic_error("ppe::dataset::tabular::Column: array() of a list column");
  return std::get<1>(data_);
}

PPE_DECL const std::vector<Value>& Column::list() const {
  if (is_array()) throw std::logic_error("ppe::dataset::tabular::Column: list() of a tensor column");
  return *std::get<0>(data_);
}

PPE_DECL std::int64_t Column::size() const {
  return is_array() ? std::get<1>(data_).size(0) : static_cast<std::int64_t>(std::get<0>(data_)->size());
}

PPE_DECL Value Column::at(std::int64_t i) const {
  if (i < 0 || i >= size())
    throw std::out_of_range("ppe::dataset::tabular::Column: row " + std::to_string(i) +
                            " is out of bounds for a column of " + std::to_string(size()) + " rows");
  if (!is_array()) return (*std::get<0>(data_))[static_cast<std::size_t>(i)];
  const at::Tensor& t = std::get<1>(data_);
  if (t.dim() == 1) {
    const auto dtype = t.scalar_type();
    if (c10::isIntegralType(dtype, /*includeBool=*/true)) return t[i].item<std::int64_t>();
    if (c10::isFloatingType(dtype)) return t[i].item<double>();
  }
  return t[i];
}

PPE_DECL Column Column::take(const Rows& rows) const {
  switch (rows.kind()) {
    case Rows::Kind::All: return *this;
    case Rows::Kind::Mask: return take(rows.normalized(size()));
    case Rows::Kind::Slice: {
      const auto b = rows.slice().indices(size());
      const std::int64_t n = b.length();
      if (is_array() && b.step > 0) return Column(std::get<1>(data_).slice(0, b.start, b.start + n * b.step, b.step));
      std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = b[i];
      return take(Rows(std::move(idx)));
    }
    case Rows::Kind::List: {
      const auto& idx = rows.list();
      const std::int64_t len = size();
      for (const auto i : idx)
        if (i < 0 || i >= len)
          throw std::out_of_range("ppe::dataset::tabular: index " + std::to_string(i) +
                                  " is out of bounds for a column of " + std::to_string(len) + " rows");
      if (is_array()) {
        const at::Tensor& t = std::get<1>(data_);
        return Column(t.index_select(0, detail::long_tensor(idx).to(t.device())));
      }
      const auto& values = *std::get<0>(data_);
      std::vector<Value> out;
      out.reserve(idx.size());
      for (const auto i : idx) out.push_back(values[static_cast<std::size_t>(i)]);
      return Column(std::move(out));
    }
  }
  return *this;
}

PPE_DECL Column Column::concat(const std::vector<Column>& parts) {
  if (parts.size() == 1) return parts[0];
  const bool arrays = !parts.empty() && std::all_of(parts.begin(), parts.end(), [](const Column& c) {
    return c.is_array();
  });
  if (arrays) {
    std::vector<at::Tensor> tensors;
    for (const auto& p : parts) tensors.push_back(p.array());
    return Column(at::cat(tensors, 0));
  }
  std::vector<Value> out;
  for (const auto& p : parts)
    for (std::int64_t i = 0, n = p.size(); i < n; ++i) out.push_back(p.at(i));
  return Column(std::move(out));
}

PPE_DECL at::Tensor Column::to_tensor(std::string_view what) const {
  if (is_array()) return std::get<1>(data_);
  const auto& values = *std::get<0>(data_);
  bool any_double = false, any_tensor = false;
  for (const auto& v : values) {
    if (std::holds_alternative<std::string>(v))
      throw std::invalid_argument("ppe::dataset::tabular: " + std::string(what) + " holds a string (" + repr(v) +
                                  "), which cannot become a tensor");
    any_double |= std::holds_alternative<double>(v);
    any_tensor |= std::holds_alternative<at::Tensor>(v);
  }
  if (any_tensor) {
    std::vector<at::Tensor> tensors;
    for (const auto& v : values) {
      if (const auto* t = std::get_if<at::Tensor>(&v)) tensors.push_back(*t);
      else
        throw std::invalid_argument("ppe::dataset::tabular: " + std::string(what) +
                                    " mixes tensors and numbers, which cannot be stacked");
    }
    return at::stack(tensors, 0);
  }
  if (any_double || values.empty()) {
    std::vector<double> out;
    for (const auto& v : values)
      out.push_back(std::holds_alternative<double>(v) ? std::get<double>(v)
                                                      : static_cast<double>(std::get<std::int64_t>(v)));
    double dummy = 0;
    return at::from_blob(out.empty() ? &dummy : out.data(), {static_cast<std::int64_t>(out.size())}, at::kDouble)
        .clone();
  }
  std::vector<std::int64_t> out;
  for (const auto& v : values) out.push_back(std::get<std::int64_t>(v));
  return detail::long_tensor(std::move(out));
}

PPE_DECL bool operator==(const Column& a, const Column& b) {
  if (a.is_array() != b.is_array()) return false;
  if (a.is_array()) return detail::equal_values(a.array(), b.array());
  const auto& x = a.list();
  const auto& y = b.list();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!detail::equal_values(x[i], y[i])) return false;
  return true;
}

PPE_DECL std::ostream& operator<<(std::ostream& os, const Column& column) {
  if (column.is_array()) {
    detail::print_value(os, column.array());
    return os;
  }
  os << "[";
  const auto& values = column.list();
  for (std::size_t i = 0; i < values.size(); ++i) {
    os << (i ? ", " : "");
    detail::print_value(os, values[i]);
  }
  return os << "]";
}

PPE_DECL std::vector<std::size_t> key_indices_of(const std::vector<Key>& keys, const std::vector<std::string>& names) {
  std::vector<std::size_t> out;
  const auto n = static_cast<std::int64_t>(names.size());
  for (const auto& k : keys) {
    if (k.is_position()) {
      std::int64_t i = k.position();
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        throw std::out_of_range("ppe::dataset::tabular: key index " + std::to_string(k.position()) +
                                " is out of bounds for keys with size " + std::to_string(n) + " " +
                                ppe::detail::python_str_tuple(names));
      out.push_back(static_cast<std::size_t>(i));
    } else {
      const auto it = std::find(names.begin(), names.end(), k.name());
      if (it == names.end()) detail::throw_unknown_key("dataset", k.name(), names);
      out.push_back(static_cast<std::size_t>(it - names.begin()));
    }
  }
  return out;
}

// --- TabularDataset -------------------------------------------------------------------------------

PPE_DECL Columns TabularDataset::convert(const Columns& data) const {
  std::vector<Column> out;
  for (std::size_t i = 0; i < data.size(); ++i)
    out.emplace_back(data[i].to_tensor("the column '" + data.keys()[i] + "'"));
  return Columns(data.mode(), data.shared_keys(), std::move(out));
}

PPE_DECL Columns TabularDataset::fetch() const { return Columns(mode(), keys(), get_examples(Rows(), std::nullopt)); }

PPE_DECL Example TabularDataset::get_example(std::int64_t i) const {
  const Rows rows = Rows({i}).normalized(size());
  const auto cols = get_examples(rows, std::nullopt);
  std::vector<Value> values;
  values.reserve(cols.size());
  for (const auto& c : cols) values.push_back(c.at(0));
  return Example(mode(), keys(), std::move(values));
}

PPE_DECL std::vector<Example> TabularDataset::get_example_list(const Rows& rows) const {
  const Rows normalized = rows.normalized(size());
  const auto cols = get_examples(normalized, std::nullopt);
  const auto keys_ptr = std::make_shared<const std::vector<std::string>>(keys());
  const Mode m = mode();
  std::vector<Example> out;
  for (std::int64_t r = 0, n = normalized.count(size()); r < n; ++r) {
    std::vector<Value> values;
    for (const auto& c : cols) values.push_back(c.at(r));
    out.emplace_back(m, keys_ptr, std::move(values));
  }
  return out;
}

PPE_DECL TabularPtr TabularDataset::shared() const {
  TabularPtr self = weak_from_this().lock();
  if (!self)
    throw std::logic_error(
        "ppe::dataset::tabular: a view needs its dataset in a std::shared_ptr; create the dataset with "
        "std::make_shared");
  return self;
}

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

PPE_DECL TabularPtr TabularDataset::astuple() const { return std::make_shared<detail::AsMode>(shared(), Mode::Tuple); }

PPE_DECL TabularPtr TabularDataset::asdict() const { return std::make_shared<detail::AsMode>(shared(), Mode::Dict); }

PPE_DECL TabularPtr TabularDataset::concat(std::vector<TabularPtr> others) const {
  others.insert(others.begin(), shared());
  for (const auto& d : others)
    if (!d) throw std::invalid_argument("ppe::dataset::tabular::concat: a dataset is null");
  return std::make_shared<detail::Concat>(std::move(others));
}

PPE_DECL TabularPtr TabularDataset::join(std::vector<TabularPtr> others) const {
  others.insert(others.begin(), shared());
  for (const auto& d : others)
    if (!d) throw std::invalid_argument("ppe::dataset::tabular::join: a dataset is null");
  return std::make_shared<detail::Join>(std::move(others));
}

PPE_DECL TabularPtr TabularDataset::transform(std::vector<std::string> keys,
                                              std::vector<Transformation> transforms) const {
  return std::make_shared<detail::TransformView<Transformation>>(shared(), std::move(keys), std::move(transforms));
}

PPE_DECL TabularPtr TabularDataset::transform_batch(std::vector<std::string> keys,
                                                    std::vector<BatchTransformation> transforms) const {
  return std::make_shared<detail::TransformView<BatchTransformation>>(shared(), std::move(keys),
                                                                      std::move(transforms));
}

PPE_DECL TabularPtr TabularDataset::with_converter(Converter converter) const {
  return std::make_shared<detail::WithConverter>(shared(), std::move(converter));
}

// --- collation and the LibTorch adapters ----------------------------------------------------------

PPE_DECL Batch collate(const std::vector<Example>& examples) {
  if (examples.empty()) throw std::invalid_argument("ppe::dataset::tabular::collate: no examples to collate");
  const Example& first = examples[0];
  std::vector<at::Tensor> out;
  for (std::size_t k = 0; k < first.size(); ++k) {
    std::vector<Value> values;
    values.reserve(examples.size());
    for (const auto& ex : examples) {
      if (ex.mode() != first.mode() || ex.keys() != first.keys())
        throw std::invalid_argument("ppe::dataset::tabular::collate: the examples differ in mode or keys");
      values.push_back(ex[k]);
    }
    out.push_back(Column(std::move(values)).to_tensor("the key '" + first.keys()[k] + "'"));
  }
  return Batch(first.mode(), first.shared_keys(), std::move(out));
}

PPE_DECL std::vector<Example> TorchDataset::get_batch(c10::ArrayRef<std::size_t> indices) const {
  const Columns cols = detail::fetch_rows(*dataset_, indices);
  std::vector<Example> out;
  out.reserve(indices.size());
  for (std::size_t r = 0; r < indices.size(); ++r) {
    std::vector<Value> values;
    for (const auto& c : cols.values()) values.push_back(c.at(static_cast<std::int64_t>(r)));
    out.emplace_back(cols.mode(), cols.shared_keys(), std::move(values));
  }
  return out;
}

PPE_DECL Batch CollatedTorchDataset::get_batch(c10::ArrayRef<std::size_t> indices) const {
  const Columns cols = detail::fetch_rows(*dataset_, indices);
  std::vector<at::Tensor> out;
  for (std::size_t k = 0; k < cols.size(); ++k) out.push_back(cols[k].to_tensor("the key '" + cols.keys()[k] + "'"));
  return Batch(cols.mode(), cols.shared_keys(), std::move(out));
}

}  // namespace ppe::dataset::tabular
