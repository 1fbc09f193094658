// Definitions of serialization/module_weights.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/core/grad_mode.h>
#include <torch/nn/module.h>

#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/serialization/module_weights.hpp"

namespace ppe::serialization {
namespace module_weights_impl {

// `torch.Size([3, 4])`, as Python prints a shape in load_state_dict's messages.
inline std::string torch_size(at::IntArrayRef sizes) {
  return "torch.Size(" + ::ppe::detail::python_shape(std::span<const std::int64_t>(sizes.data(), sizes.size())) + ")";
}

inline std::string torch_dtype(c10::ScalarType t) {
  const std::string_view name = ::ppe::detail::python_dtype_name(t);
  return name.empty() ? std::string(c10::toString(t)) : "torch." + std::string(name);
}

// `"a", "b"`, as Python lists keys.
inline std::string quoted_list(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "\"" : ", \"") + k + "\"";
  return out;
}

}  // namespace module_weights_impl

PPE_DECL std::string LoadWeightsReport::message() const {
  std::string out;
  auto line = [&out](const std::string& s) { out += (out.empty() ? "" : "\n") + s; };
  if (!missing.empty()) line("Missing key(s) in state_dict: " + module_weights_impl::quoted_list(missing) + ".");
  if (!unexpected.empty()) line("Unexpected key(s) in state_dict: " + module_weights_impl::quoted_list(unexpected) + ".");
  for (const auto& m : shape_mismatches) line(m);
  for (const auto& m : dtype_mismatches) line(m);
  return out;
}

PPE_DECL NamedTensors module_weights(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true)) out.emplace_back(b.key(), b.value());
  return out;
}

PPE_DECL LoadWeightsReport load_weights(torch::nn::Module& module, const NamedTensors& tensors,
                                        const LoadWeightsOptions& options) {
  std::map<std::string, at::Tensor> targets;
  std::vector<std::string> order;  // the module's order, for the report
  for (auto& [name, t] : module_weights(module)) {
    order.push_back(name);
    targets.emplace(name, t);
  }
  LoadWeightsReport report;
  std::map<std::string, bool> named;  // the module's names a tensor named
  std::vector<std::pair<at::Tensor, const at::Tensor*>> copies;
  for (const auto& [file_name, source] : tensors) {
    std::string name = file_name;
    for (const auto& [from, to] : options.prefixes())
      if (name.starts_with(from)) {
        name = to + name.substr(from.size());
        break;
      }
    const auto it = targets.find(name);
    if (it == targets.end()) {
      report.unexpected.push_back(name);
      continue;
    }
    named[name] = true;
    const at::Tensor& target = it->second;
    if (source.sizes() != target.sizes()) {
      report.shape_mismatches.push_back("size mismatch for " + name + ": copying a param with shape " +
                                        module_weights_impl::torch_size(source.sizes()) +
                                        " from checkpoint, the shape in current model is " +
                                        module_weights_impl::torch_size(target.sizes()) + ".");
      continue;
    }
    if (source.scalar_type() != target.scalar_type())
      report.dtype_mismatches.push_back("dtype mismatch for " + name + ": copying a param of dtype " +
                                        module_weights_impl::torch_dtype(source.scalar_type()) +
                                        " from checkpoint, the dtype in current model is " +
                                        module_weights_impl::torch_dtype(target.scalar_type()) + ".");
    copies.emplace_back(target, &source);
    report.loaded.push_back(name);
  }
  for (const auto& name : order)
    if (!named.count(name)) report.missing.push_back(name);
  if (options.strict() && !report.ok())
    throw std::runtime_error("Error(s) in loading state_dict for " + module.name() + ":\n\t" +
                             [&] {
                               std::string m = report.message(), out;
                               for (const char c : m) out += c == '\n' ? std::string("\n\t") : std::string(1, c);
                               return out;
                             }() +
                             "\n(ppe::serialization::load_weights, strict: nothing was loaded)");
  at::NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(*source);
  return report;
}

}  // namespace ppe::serialization
