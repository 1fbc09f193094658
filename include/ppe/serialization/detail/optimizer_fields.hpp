#pragma once
/// \file
/// Reading and writing the fields of an optimizer's state (optimizer_state.hpp):
/// options and per-parameter values in Python's forms, with loading errors
/// that name the optimizer, the group and the parameter.

#include <ATen/core/Tensor.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/detail/torch_compat.hpp"
#include "ppe/serialization/detail/file_records.hpp"
#include "ppe/state.hpp"

namespace ppe::detail::optim_state {

/// Thrown (as std::runtime_error) with the optimizer, group and parameter that
/// a loading problem concerns.
struct Where {
  std::string optimizer;  ///< "optimizer 'main' (torch::optim::Adam)"
  std::string place;      ///< "param group 0, parameter 1 (index 1)", or empty

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("ppe: cannot load the state of " + optimizer + ": " +
                             (place.empty() ? what : place + ": " + what));
  }
  Where at(std::string p) const { return Where{optimizer, std::move(p)}; }
};

/// The key type of optimizer `O`'s per-parameter state map (it changed in LibTorch 2).
template <class O>
using state_key_t = typename std::remove_cvref_t<decltype(std::declval<O&>().state())>::key_type;

/// The key optimizer `O` files parameter `p`'s state under.
template <class O>
state_key_t<O> state_key(const at::Tensor& p) {
  return compat::optimizer_state_key<std::remove_cvref_t<decltype(std::declval<O&>().state())>>(p.unsafeGetTensorImpl());
}

/// A state tensor as the State holds it: a copy (`StateCopy::Clone`: a later
/// step updates the optimizer's tensors in place, and must not reach a state
/// already taken) or the optimizer's own (`StateCopy::Share`).
inline State owned(const at::Tensor& t, StateCopy copy) {
  return State(copy == StateCopy::Clone ? t.detach().clone() : t.detach());
}

/// Python keeps Adam's, AdamW's and Adagrad's step count as a float32 scalar
/// tensor on the CPU (torch 1.13); LibTorch keeps an integer.
inline State step_tensor(std::int64_t step, const at::Tensor& like) {
  return State(like.new_full({}, static_cast<double>(step), at::TensorOptions().dtype(at::kFloat).device(at::kCPU)));
}

// ---- reading saved values, with errors that say where -----------------------

inline const State* option(const State& group, std::string_view key, std::string_view want, const Where& w,
                           bool (State::*is)() const) {
  const State* v = group.find(key);
  if (v && !(v->*is)())
    w.fail("option '" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected " +
           std::string(want));
  return v;
}

/// A numeric option; a missing key keeps `current` (states written before the
/// option was saved still load).
inline double num(const State& group, std::string_view key, double current, const Where& w) {
  const State* v = option(group, key, "a number", w, &State::is_number);
  return v ? v->as_double() : current;
}
inline std::int64_t integer(const State& group, std::string_view key, std::int64_t current, const Where& w) {
  const State* v = option(group, key, "an int", w, &State::is_int);
  return v ? v->as_int() : current;
}
inline bool flag(const State& group, std::string_view key, bool current, const Where& w) {
  const State* v = option(group, key, "a bool", w, &State::is_bool);
  return v ? v->as_bool() : current;
}

/// Python-only options: `maximize=True` changes the result and LibTorch's
/// optimizers cannot do it, so it is refused; `foreach`, `capturable`,
/// `differentiable` and `fused` choose an implementation of the same update
/// and are ignored.
inline void refuse_maximize(const State& group, const Where& w) {
  if (const State* v = group.find("maximize"); v && !v->is_none() && (!v->is_bool() || v->as_bool()))
    w.fail("maximize=True cannot be loaded: LibTorch's optimizers have no maximize option");
}

/// Python's `betas`: a 2-tuple (a 2-list here) of numbers.
inline std::pair<double, double> betas(const State& group, std::pair<double, double> current, const Where& w) {
  const State* v = group.find("betas");
  if (!v) return current;
  if (!v->is_list() || v->size() != 2 || !v->as_list()[0].is_number() || !v->as_list()[1].is_number())
    w.fail("option 'betas' must be a list of two numbers");
  return {v->as_list()[0].as_double(), v->as_list()[1].as_double()};
}

/// A per-parameter count saved as an int, a float or a scalar tensor (Python's
/// form for Adam's `step`).
inline std::int64_t count(const State& s, std::string_view key, const Where& w) {
  const State* v = s.find(key);
  if (!v) w.fail("'" + std::string(key) + "' is missing from the saved state");
  if (v->is_int()) return v->as_int();
  if (v->is_double()) return static_cast<std::int64_t>(std::llround(v->as_double()));
  if (v->is_tensor() && v->as_tensor().numel() == 1)
    return static_cast<std::int64_t>(std::llround(v->as_tensor().item().toDouble()));
  w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected a count");
}

/// A scalar saved as a number or a one-element tensor (Python's LBFGS keeps
/// `t` either way).
inline double scalar(const State& s, std::string_view key, const Where& w) {
  const State* v = s.find(key);
  if (!v) w.fail("'" + std::string(key) + "' is missing from the saved state");
  if (v->is_number()) return v->as_double();
  if (v->is_tensor() && v->as_tensor().numel() == 1) return v->as_tensor().item().toDouble();
  w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected a number");
}

/// A saved tensor copied to `param`'s device (and dtype, when the parameter is
/// floating point, as Python's load_state_dict casts). With `sizes`, the shape
/// must match. An undefined tensor when absent (or None) and not `required`.
inline at::Tensor tensor(const State& s, std::string_view key, const at::Tensor& param, bool required,
                         std::optional<at::IntArrayRef> sizes, const Where& w) {
  const State* v = s.find(key);
  if (!v || v->is_none()) {
    if (required) w.fail("'" + std::string(key) + "' is missing from the saved state");
    return at::Tensor();
  }
  if (!v->is_tensor())
    w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected a tensor");
  const at::Tensor& t = v->as_tensor();
  if (sizes && t.sizes() != *sizes)
    w.fail("'" + std::string(key) + "' has shape " + ppe::detail::python_shape(t.sizes()) + ", expected " +
           ppe::detail::python_shape(*sizes));
  const auto dtype = param.is_floating_point() ? param.scalar_type() : t.scalar_type();
  // A copy, or a tensor still in its file read into memory of its own and
  // handed over (a resume: serialization/detail/file_records.hpp).
  return ppe::detail::take_saved(t, param.device(), dtype);
}

inline std::vector<at::Tensor> tensor_list(const State& s, std::string_view key, const at::Tensor& param,
                                           std::optional<at::IntArrayRef> sizes, const Where& w) {
  const State* v = s.find(key);
  if (!v) w.fail("'" + std::string(key) + "' is missing from the saved state");
  if (!v->is_list()) w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) +
                            ", expected a list");
  std::vector<at::Tensor> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const State one = State::dict({{"item", v->as_list()[i]}});
    out.push_back(tensor(one, "item", param, /*required=*/false, sizes,
                         w.at(w.place + ", '" + std::string(key) + "'[" + std::to_string(i) + "]")));
  }
  return out;
}

inline State list_of(const auto& tensors, StateCopy copy) {
  State out = State::list();
  for (const at::Tensor& t : tensors) out.as_list().push_back(t.defined() ? owned(t, copy) : State());
  return out;
}

}  // namespace ppe::detail::optim_state
