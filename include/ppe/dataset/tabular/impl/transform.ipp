// Definitions of dataset/tabular/transform.hpp (the view and TabularDataset::transform, transform_batch): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "ppe/dataset/tabular/transform.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular {

namespace detail {

inline std::vector<std::size_t> all_key_indices(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

template <class T>
TransformView<T>::TransformView(TabularPtr parent, std::vector<std::string> keys, std::vector<T> transforms)
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
                                ": the transformations must produce exactly the keys " + ppe::detail::python_str_tuple(keys_));
  mode_ = transforms_.empty() ? Mode::Tuple : transforms_[0].mode();
}

template <class T>
std::vector<Column> TransformView<T>::get_examples(const Rows& rows, const KeyIndices& key_indices) const {
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

template <class T>
template <class V>
std::vector<const V*> TransformView<T>::in_output_order(const T& t, const std::vector<V>& result,
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

}  // namespace detail

PPE_DECL TabularPtr TabularDataset::transform(std::vector<std::string> keys,
                                              std::vector<Transformation> transforms) const {
  return std::make_shared<detail::TransformView<Transformation>>(shared(), std::move(keys), std::move(transforms));
}

PPE_DECL TabularPtr TabularDataset::transform_batch(std::vector<std::string> keys,
                                                    std::vector<BatchTransformation> transforms) const {
  return std::make_shared<detail::TransformView<BatchTransformation>>(shared(), std::move(keys),
                                                                      std::move(transforms));
}

}  // namespace ppe::dataset::tabular
