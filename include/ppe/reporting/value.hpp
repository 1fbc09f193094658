#pragma once
/// \file
/// `ppe::reporting::Value`: what can be reported (PPE's observation values).

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/ScalarType.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::reporting {

/// `t` without autograd history, sharing its storage: what reporting keeps.
/// `detach()` builds an autograd view (about 0.5 µs); a reported value needs
/// only a shallow copy of the tensor without autograd metadata (one TensorImpl,
/// sharing the storage and the version counter).
inline at::Tensor detached(const at::Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return t;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  return at::Tensor(impl->shallow_copy_and_detach(impl->version_counter(), /*allow_tensor_metadata_change=*/false));
}

class Value;
/// A value computed only when a summary is read (PPE's zero-argument callable).
using Deferred = std::function<Value()>;

/// A reported value: a number, a tensor (kept on its device, never read on the
/// host by reporting itself) or a deferred callable.
class Value {
 public:
  Value() : v_(0.0) {}
  Value(double v) : v_(v) {}
  /// Integers and floats are held as double (exact for |v| < 2^53).
  template <class N>
    requires(std::is_arithmetic_v<N> && !std::is_same_v<N, bool> && !std::is_same_v<N, double>)
  Value(N v) : v_(static_cast<double>(v)) {}
  Value(at::Tensor t) : v_(std::move(t)) {}
  Value(Deferred f) : v_(std::move(f)) {}
  /// Any callable with no arguments whose result converts to a Value.
  template <class F>
    requires(std::invocable<F&> && !std::is_same_v<std::remove_cvref_t<F>, Value> &&
             !std::is_same_v<std::remove_cvref_t<F>, Deferred> &&
             std::convertible_to<std::invoke_result_t<F&>, Value>)
  Value(F f) : v_(Deferred([g = std::move(f)]() mutable -> Value { return g(); })) {}

  bool is_scalar() const noexcept { return v_.index() == 0; }
  bool is_tensor() const noexcept { return v_.index() == 1; }
  bool is_deferred() const noexcept { return v_.index() == 2; }

  double scalar() const { return get<double>("a number"); }
  const at::Tensor& tensor() const { return get<at::Tensor>("a tensor"); }
  const Deferred& deferred() const { return get<Deferred>("a deferred callable"); }

  /// The value with every deferred callable evaluated.
  Value resolved() const {
    Value v = *this;
    while (v.is_deferred()) v = v.deferred()();
    return v;
  }
  /// The value as a host double. Reads a tensor's single element (a device
  /// synchronisation); evaluates a deferred callable.
  double to_double() const;

 private:
  template <class T>
  const T& get(const char* what) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    static constexpr const char* kinds[] = {"a number", "a tensor", "a deferred callable"};
    throw std::logic_error(std::string("ppe::reporting::Value: expected ") + what + ", holds " + kinds[v_.index()]);
  }

  std::variant<double, at::Tensor, Deferred> v_;
};

/// The values as host doubles, as `to_double` reads each, but with one
/// device-to-host transfer per device for all the tensors among them (one
/// synchronisation where `to_double` would make one per tensor). Deferred
/// callables are evaluated; one-element CPU tensors are read in place.
PPE_DECL std::vector<double> to_doubles(const std::vector<Value>& values);

namespace detail {

/// Reads the single element of `t` as a double when that is a plain memory
/// read: a strided CPU tensor of a floating (float, double) or integer dtype
/// with storage and no wrapper (negative view, zero tensor, functionalization,
/// vmap, Python subclass). Returns false for anything else (other devices,
/// half precision, complex, bool, ...), which must be read lazily. Neither
/// the dispatcher nor `item()` is involved: a CPU value costs a few loads.
/// On success `*mean_dtype` is the dtype a mean of such tensors has (the
/// floating dtype itself; double for integers).
inline bool read_cpu_scalar(const at::Tensor& t, double* value, at::ScalarType* mean_dtype) {
  static constexpr c10::DispatchKeySet kWrapped({c10::DispatchKey::Negative, c10::DispatchKey::ZeroTensor,
                                                 c10::DispatchKey::Functionalize, c10::DispatchKey::Python,
                                                 c10::DispatchKey::FuncTorchBatched});
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->is_cpu() || impl->layout() != at::kStrided || impl->key_set().has_any(kWrapped) || !impl->has_storage())
    return false;
  const void* p = impl->data();
  switch (t.scalar_type()) {
    case at::kFloat: *value = *static_cast<const float*>(p); *mean_dtype = at::kFloat; return true;
    case at::kDouble: *value = *static_cast<const double*>(p); *mean_dtype = at::kDouble; return true;
    case at::kLong: *value = static_cast<double>(*static_cast<const std::int64_t*>(p)); break;
    case at::kInt: *value = *static_cast<const std::int32_t*>(p); break;
    case at::kShort: *value = *static_cast<const std::int16_t*>(p); break;
    case at::kChar: *value = *static_cast<const std::int8_t*>(p); break;
    case at::kByte: *value = *static_cast<const std::uint8_t*>(p); break;
    default: return false;
  }
  *mean_dtype = at::kDouble;
  return true;
}

}  // namespace detail

/// The value as reporting stores it: a tensor without autograd history, so a
/// stored value never keeps an autograd graph alive.
inline Value detached(const Value& v) {
  if (v.is_tensor() && v.tensor().defined() && v.tensor().requires_grad()) return Value(detached(v.tensor()));
  return v;
}

}  // namespace ppe::reporting

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/reporting/impl/value.ipp"
#endif
