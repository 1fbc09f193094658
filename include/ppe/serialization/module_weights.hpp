#pragma once
/// \file
/// A module's weights as named tensors, and named tensors loaded into a
/// module (Python's `state_dict()` of tensors and `load_state_dict(strict)`):
/// what a safetensors file holds (serialization/safetensors.hpp) going into a
/// `torch::nn::Module`, with the key, shape and dtype differences named.

#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/serialization/safetensors.hpp"

namespace ppe::serialization {

/// Pairs (from, to): a name that starts with `from` starts with `to`
/// instead; the first pair that matches applies.
using PrefixMap = std::vector<std::pair<std::string, std::string>>;

/// Options of `load_weights`.
struct LoadWeightsOptions {
  /// Every key of the module in the tensors, no other key, every shape and
  /// dtype equal; else an error listing each difference, and nothing loaded.
  /// False: what matches by name and shape is loaded (converted to the
  /// module's dtype), the rest reported.
  PPE_ARG(bool, strict) = true;
  /// Applied to the tensors' names before they are matched: `{{"module.",
  /// ""}}` loads weights saved from a model wrapped in DistributedDataParallel
  /// into the bare model; `{{"", "encoder."}}` loads a part into a larger one.
  PPE_ARG(PrefixMap, prefixes);
};

/// What `load_weights` found.
struct LoadWeightsReport {
  /// The module's parameters and buffers that no tensor named.
  std::vector<std::string> missing;
  /// The tensors that name nothing of the module.
  std::vector<std::string> unexpected;
  /// Names whose shapes differ, each with both shapes (not loaded).
  std::vector<std::string> shape_mismatches;
  /// Names whose dtypes differ, each with both (converted when not strict).
  std::vector<std::string> dtype_mismatches;
  /// The names loaded.
  std::vector<std::string> loaded;
  /// No difference at all.
  bool ok() const noexcept {
    return missing.empty() && unexpected.empty() && shape_mismatches.empty() && dtype_mismatches.empty();
  }
  /// The differences in the words of Python's `load_state_dict` ("Missing
  /// key(s) in state_dict: ...", "size mismatch for ..."), one per line; ""
  /// when there are none.
  std::string message() const;
};

/// The module's parameters, then its buffers, named as `state_dict()` names
/// them (`encoder.0.weight`), recursively: what `write_safetensors` writes
/// for a model.
PPE_DECL NamedTensors module_weights(const torch::nn::Module& module);

/// Copies `tensors` into the module's parameters and buffers of the same
/// names (after `options.prefixes`), without recording gradients, to the
/// module's devices. Strict (the default): `std::runtime_error` naming the
/// module and listing every missing and unexpected key and every shape and
/// dtype difference, and nothing is copied. Not strict: copies each tensor
/// whose name and shape match, converting its dtype, and reports the rest.
PPE_DECL LoadWeightsReport load_weights(torch::nn::Module& module, const NamedTensors& tensors,
                                        const LoadWeightsOptions& options = {});

}  // namespace ppe::serialization

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/module_weights.ipp"
#endif
