// Definitions of dataset/tabular/tabular_dataset.hpp's out-of-line functions:
// included by it when header-only, compiled once by impl/src.hpp with
// PPE_SEPARATE_COMPILATION. The members that make views (slice, astuple,
// concat, ...) are defined with their views, as PPE's methods call into the
// views' modules; the views' headers are included here so that a header-only
// translation unit that includes tabular_dataset.hpp alone has them too.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/dataset/tabular/asmode.hpp"
#include "ppe/dataset/tabular/concat.hpp"
#include "ppe/dataset/tabular/join.hpp"
#include "ppe/dataset/tabular/slice.hpp"
#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/dataset/tabular/transform.hpp"
#include "ppe/dataset/tabular/with_converter.hpp"

namespace ppe::dataset::tabular {

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

}  // namespace ppe::dataset::tabular
