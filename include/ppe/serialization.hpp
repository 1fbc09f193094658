#pragma once
/// \file
/// Umbrella of `ppe/serialization/`: the State's IValue form, the pickle
/// format that Python's `torch.load` reads (sealed with a CRC-32), Python's
/// pickles rewritten for LibTorch's reader, tensor-aware State copies and
/// comparison, the optimizer state in Python's layout, and the safetensors
/// format (read memory-mapped, written in its reference layout) and weights
/// loaded into a module by name. `ppe/ppe.hpp` includes it.

#include "ppe/serialization/ivalue.hpp"
#include "ppe/serialization/module_weights.hpp"
#include "ppe/serialization/optimizer_state.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/serialization/python_pickle.hpp"
#include "ppe/serialization/safetensors.hpp"
#include "ppe/serialization/seal.hpp"
#include "ppe/serialization/staging.hpp"
#include "ppe/serialization/state_copy.hpp"
