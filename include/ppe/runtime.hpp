#pragma once
/// \file
/// The runtime policies (PPE's `ppe.runtime`): the `runtime` concept and its
/// hooks, `BaseRuntime`, `PyTorchRuntime`, the registry of runtimes by device
/// type, `ppe::to`, batch conversion and autocast. Not part of
/// `<ppe/ppe.hpp>`: it needs `torch/nn/module.h`.

#include "ppe/runtime/any_ref.hpp"
#include "ppe/runtime/autocast.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/code_block.hpp"
#include "ppe/runtime/convert_batch.hpp"
#include "ppe/runtime/device_spec.hpp"
#include "ppe/runtime/module_runtime.hpp"
#include "ppe/runtime/pytorch_runtime.hpp"
#include "ppe/runtime/registry.hpp"
#include "ppe/runtime/runtime.hpp"
#include "ppe/runtime/runtime_adapter.hpp"
#include "ppe/runtime/runtime_options.hpp"
#include "ppe/runtime/to.hpp"
