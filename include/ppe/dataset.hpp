#pragma once
/// \file
/// Datasets (PPE's `ppe.dataset` area): `ppe::dataset::FashionMNIST` and the
/// gzipped IDX reader, `SharedDataset`, and the tabular datasets
/// (`ppe::dataset::tabular`). Not part of `<ppe/ppe.hpp>`: it needs LibTorch's
/// data headers and zlib.

#include "ppe/dataset/fashion_mnist.hpp"
#include "ppe/dataset/idx_file.hpp"
#include "ppe/dataset/shared_dataset.hpp"
#include "ppe/dataset/tabular.hpp"
