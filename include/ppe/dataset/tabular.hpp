#pragma once
/// \file
/// Umbrella header of `ppe::dataset::tabular` (PPE's `ppe.dataset.tabular`):
/// `TabularDataset` and its views, `from_data`, `DelegateDataset`, and the
/// LibTorch adapters.

#include "ppe/dataset/tabular/asmode.hpp"
#include "ppe/dataset/tabular/column.hpp"
#include "ppe/dataset/tabular/concat.hpp"
#include "ppe/dataset/tabular/delegate_dataset.hpp"
#include "ppe/dataset/tabular/from_data.hpp"
#include "ppe/dataset/tabular/join.hpp"
#include "ppe/dataset/tabular/key.hpp"
#include "ppe/dataset/tabular/record.hpp"
#include "ppe/dataset/tabular/rows.hpp"
#include "ppe/dataset/tabular/slice.hpp"
#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/dataset/tabular/torch_dataset.hpp"
#include "ppe/dataset/tabular/transform.hpp"
#include "ppe/dataset/tabular/transformation.hpp"
#include "ppe/dataset/tabular/value.hpp"
#include "ppe/dataset/tabular/with_converter.hpp"
