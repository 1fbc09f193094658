// Definitions of training/extensions/micro_average.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "ppe/reporting/summary.hpp"
#include "ppe/training/extensions/micro_average.hpp"

namespace ppe::training::extensions::detail {

PPE_DECL MicroSum MicroSum::of(const reporting::Value& value, std::string_view key) {
  MicroSum out;
  const reporting::Value resolved = value.resolved();
  if (resolved.is_scalar()) {
    out.host_ = resolved.scalar();
    return out;
  }
  const at::Tensor& t = resolved.tensor();
  if (!t.defined() || t.numel() != 1)
    throw std::invalid_argument("ppe::MicroAverage: the value reported under \"" + std::string(key) +
                                "\" must be a number or a one-element tensor, got a tensor of " +
                                (t.defined() ? std::to_string(t.numel()) + " elements" : std::string("no data")));
  at::ScalarType unused;
  if (!reporting::detail::read_cpu_scalar(t, &out.host_, &unused)) out.device_ = t.reshape({});
  return out;
}

PPE_DECL MicroSum MicroSum::from_state(const State& state, std::string_view name) {
  if (state.is_number()) {
    MicroSum out;
    out.host_ = state.as_double();
    return out;
  }
  if (state.is_tensor()) {
    MicroSum out = of(reporting::Value(state.as_tensor()), name);
    if (out.device_.defined()) out.device_ = out.device_.to(at::kDouble, /*non_blocking=*/false, /*copy=*/true);
    return out;
  }
  throw std::invalid_argument("ppe::MicroAverage::load_state_dict: \"" + std::string(name) +
                              "\" must be a number or a one-element tensor, got " +
                              std::string(State::kind_name(state.kind())));
}

PPE_DECL MicroSum& MicroSum::operator+=(const MicroSum& other) {
  host_ += other.host_;
  if (other.device_.defined()) {
    // The first device term is copied: the reported tensor may be changed in place later.
    device_ = device_.defined() ? device_.add(other.device_)
                                : other.device_.to(at::kDouble, /*non_blocking=*/false, /*copy=*/true);
  }
  return *this;
}

PPE_DECL State MicroSum::state_dict() const {
  if (!device_.defined()) return State(host_);
  return State(device_.add(host_));
}

PPE_DECL reporting::Value micro_ratio(const MicroSum& numerator, const MicroSum& denominator) {
  if (!numerator.has_device() && !denominator.has_device()) return numerator.host() / denominator.host();
  if (!denominator.has_device()) return numerator.device().add(numerator.host()).div(denominator.host());
  const at::Tensor d = denominator.device().add(denominator.host());
  const at::Tensor n =
      numerator.has_device() ? numerator.device().add(numerator.host()) : d.new_full({}, numerator.host());
  return n.div(d);
}

PPE_DECL std::string micro_average_missing_message(const std::string& numerator_key, const std::string& denominator_key,
                                                   const reporting::Observation& observation) {
  return "ppe::MicroAverage: no iteration of this interval reported both \"" + numerator_key + "\" and \"" +
         denominator_key + "\" (keys reported in this iteration: " + observation.keys_text() + ")";
}

PPE_DECL void check_micro_average_keys(const std::string& numerator_key, const std::string& denominator_key,
                                       const std::string& result_key) {
  if (numerator_key.empty() || denominator_key.empty() || result_key.empty())
    throw std::invalid_argument("ppe::MicroAverage: the numerator, denominator and result keys must not be empty");
}

}  // namespace ppe::training::extensions::detail
