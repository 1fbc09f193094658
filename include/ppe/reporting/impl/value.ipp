// Definitions of reporting/value.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/stack_ops.h>  // the operator alone: ATen/ops/stack.h costs ~2.5 s per translation unit

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/reporting/value.hpp"

namespace ppe::reporting {

namespace {
const at::Tensor& single_element(const at::Tensor& t) {
  if (t.numel() != 1)
    throw std::invalid_argument("ppe::reporting::Value: a tensor with " + std::to_string(t.numel()) +
                                " elements has no single number");
  return t;
}
}  // namespace

PPE_DECL double Value::to_double() const {
  Value v = resolved();
  if (v.is_scalar()) return v.scalar();
  return single_element(v.tensor()).item<double>();
}

PPE_DECL std::vector<double> to_doubles(const std::vector<Value>& values) {
  std::vector<double> out(values.size());
  // The tensors to transfer, by device: (index into out, 0-dim double tensor).
  std::vector<std::pair<at::Device, std::vector<std::pair<std::size_t, at::Tensor>>>> by_device;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Value v = values[i].resolved();
    if (v.is_scalar()) {
      out[i] = v.scalar();
      continue;
    }
    const at::Tensor& t = single_element(v.tensor());
    at::ScalarType unused;
    if (detail::read_cpu_scalar(t, &out[i], &unused)) continue;
    if (t.is_complex()) {  // item() refuses a nonzero imaginary part, where a cast would drop it
      out[i] = t.item<double>();
      continue;
    }
    auto it = by_device.begin();
    while (it != by_device.end() && it->first != t.device()) ++it;
    if (it == by_device.end()) it = by_device.insert(it, {t.device(), {}});
    it->second.emplace_back(i, t.reshape({}).to(at::kDouble));
  }
  for (const auto& [device, items] : by_device) {
    std::vector<at::Tensor> ts;
    ts.reserve(items.size());
    for (const auto& item : items) ts.push_back(item.second);
    const at::Tensor host = at::_ops::stack::call(ts, 0).to(at::kCPU).contiguous();
    const double* p = host.data_ptr<double>();
    for (std::size_t k = 0; k < items.size(); ++k) out[items[k].first] = p[k];
  }
  return out;
}

}  // namespace ppe::reporting
