#pragma once
/// \file
/// `ppe::runtime::AnyRef`: a non-owning reference to a value of any type (the
/// trainer, a batch, a step's outputs), so that runtime hooks can be virtual
/// functions with fixed signatures while the engine passes its own types.
/// Like `std::string_view`, it must not outlive the value it refers to; hooks
/// receive it for the duration of the call.

#include <c10/util/Type.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace ppe::runtime {

class AnyRef {
 public:
  /// Refers to nothing (Python's `None`, e.g. no loader).
  AnyRef() noexcept = default;
  /// Refers to `value` (mutable access allowed when `value` is not const).
  template <class T>
    requires(!std::is_same_v<std::remove_cv_t<T>, AnyRef>)
  AnyRef(T& value) noexcept
      : p_(static_cast<const void*>(std::addressof(value))), type_(&typeid(T)), mutable_(!std::is_const_v<T>) {}
  /// Refers to a const value (or a temporary, valid until the end of the full expression).
  template <class T>
    requires(!std::is_same_v<std::remove_cv_t<T>, AnyRef>)
  AnyRef(const T& value) noexcept : p_(static_cast<const void*>(std::addressof(value))), type_(&typeid(T)) {}

  bool has_value() const noexcept { return p_ != nullptr; }
  /// The referred type (`typeid(void)` when empty).
  const std::type_info& type() const noexcept { return type_ ? *type_ : typeid(void); }
  /// Whether the referred value is a `T` (exactly, cv-qualifiers aside).
  template <class T>
  bool is() const noexcept {
    return type_ && *type_ == typeid(std::remove_cv_t<T>);
  }
  /// The value as a `T`, or nullptr when it is another type.
  template <class T>
  const T* get_if() const noexcept {
    return is<T>() ? static_cast<const T*>(p_) : nullptr;
  }
  /// The value as a `T`; throws naming both types when it is another type.
  template <class T>
  const T& get() const {
    if (const T* v = get_if<T>()) return *v;
    throw std::invalid_argument("ppe::runtime::AnyRef: requested " + c10::demangle(typeid(T).name()) +
                                ", but the value is " +
                                (type_ ? c10::demangle(type_->name()) : std::string("empty")));
  }
  /// Mutable access; throws when the value was passed as const.
  template <class T>
  T& get_mutable() const {
    const T& v = get<T>();
    if (!mutable_)
      throw std::invalid_argument("ppe::runtime::AnyRef: the " + c10::demangle(typeid(T).name()) +
                                  " was passed as const; it cannot be modified");
    return const_cast<T&>(v);
  }

 private:
  const void* p_ = nullptr;
  const std::type_info* type_ = nullptr;
  bool mutable_ = false;
};

}  // namespace ppe::runtime
