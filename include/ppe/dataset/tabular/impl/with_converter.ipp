// Definitions of dataset/tabular/with_converter.hpp (TabularDataset::with_converter): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include "ppe/dataset/tabular/with_converter.hpp"

namespace ppe::dataset::tabular {

PPE_DECL TabularPtr TabularDataset::with_converter(Converter converter) const {
  return std::make_shared<detail::WithConverter>(shared(), std::move(converter));
}

}  // namespace ppe::dataset::tabular
