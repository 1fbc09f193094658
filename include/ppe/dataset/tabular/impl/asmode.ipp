// Definitions of dataset/tabular/asmode.hpp (TabularDataset::astuple and asdict): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include "ppe/dataset/tabular/asmode.hpp"

namespace ppe::dataset::tabular {

PPE_DECL TabularPtr TabularDataset::astuple() const { return std::make_shared<detail::AsMode>(shared(), Mode::Tuple); }

PPE_DECL TabularPtr TabularDataset::asdict() const { return std::make_shared<detail::AsMode>(shared(), Mode::Dict); }

}  // namespace ppe::dataset::tabular
