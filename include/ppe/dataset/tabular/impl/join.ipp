// Definitions of dataset/tabular/join.hpp (the view and TabularDataset::join): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/dataset/tabular/join.hpp"

namespace ppe::dataset::tabular {

namespace detail {

PPE_DECL Join::Join(std::vector<TabularPtr> datasets) : datasets_(std::move(datasets)) {
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

PPE_DECL std::vector<Column> Join::get_examples(const Rows& rows, const KeyIndices& key_indices) const {
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

}  // namespace detail

PPE_DECL TabularPtr TabularDataset::join(std::vector<TabularPtr> others) const {
  others.insert(others.begin(), shared());
  for (const auto& d : others)
    if (!d) throw std::invalid_argument("ppe::dataset::tabular::join: a dataset is null");
  return std::make_shared<detail::Join>(std::move(others));
}

}  // namespace ppe::dataset::tabular
