#pragma once
/// \file
/// `ppe::runtime::RuntimeRegistry`: device type name -> runtime factory (PPE's
/// `ppe.runtime.runtime_registry`), and the process-wide `runtime_registry()`
/// that `ppe::to` and the engine consult.
///
/// ```cpp
/// ppe::runtime::runtime_registry().add<CountingRuntime>("counting");
/// ppe::to(model, "counting");   // CountingRuntime("counting", options)
/// ```
///
/// Lookup is by the device type (`"cuda"` for `"cuda:1"`). The process-wide
/// registry falls back to `PyTorchRuntime` for LibTorch's own device types, as
/// PPE does; any other unregistered name is an error that lists the
/// registered names (PPE would build a PyTorchRuntime that fails later).

#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/pytorch_runtime.hpp"
#include "ppe/runtime/runtime_adapter.hpp"

namespace ppe::runtime {

/// Makes a runtime for a device (PPE's runtime class called as `cls(device, options)`).
using RuntimeFactory = std::function<std::shared_ptr<BaseRuntime>(const DeviceSpec&, const RuntimeOptions&)>;

class RuntimeRegistry {
 public:
  /// No fallback: unregistered device types are errors.
  RuntimeRegistry() = default;
  /// PPE's `_RuntimeRegistry(fallback_class)`: `fallback` serves every
  /// unregistered device type that `accepts` (default: all of them).
  explicit RuntimeRegistry(RuntimeFactory fallback, std::function<bool(const DeviceSpec&)> accepts = {})
      : fallback_(std::move(fallback)), fallback_accepts_(std::move(accepts)) {}

  /// Registers (or replaces) the factory for `device_type` (PPE's `register`).
  void add(std::string device_type, RuntimeFactory factory) {
    if (device_type.empty() || device_type.find(':') != std::string::npos)
      throw std::invalid_argument("ppe::runtime::RuntimeRegistry::add: '" + device_type +
                                  "' is not a device type name (expected a non-empty name without ':', e.g. 'cpu')");
    if (!factory)
      throw std::invalid_argument("ppe::runtime::RuntimeRegistry::add: empty factory for '" + device_type + "'");
    std::lock_guard lock(mutex_);
    for (auto& [name, f] : entries_)
      if (name == device_type) {
        f = std::move(factory);
        return;
      }
    entries_.emplace_back(std::move(device_type), std::move(factory));
  }
  /// Registers runtime type `R`, made as `R(device_spec, options)` (a
  /// BaseRuntime) or adapted (runtime_adapter.hpp).
  template <class R>
  void add(std::string device_type) {
    add(std::move(device_type), [](const DeviceSpec& d, const RuntimeOptions& o) { return make_runtime<R>(d, o); });
  }
  /// Removes the entry for `device_type`; returns whether there was one.
  bool remove(std::string_view device_type) {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == device_type) {
        entries_.erase(it);
        return true;
      }
    return false;
  }
  bool contains(std::string_view device_type) const {
    std::lock_guard lock(mutex_);
    for (const auto& e : entries_)
      if (e.first == device_type) return true;
    return false;
  }
  /// The registered device types, in registration order.
  std::vector<std::string> device_types() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.first);
    return out;
  }

  /// PPE's `get_runtime_class_for_device_spec`: the factory for the device's
  /// type, else the fallback, else an error listing the registered names.
  RuntimeFactory factory_for(const DeviceSpec& device) const {
    const std::string type = device.type();
    {
      std::lock_guard lock(mutex_);
      for (const auto& e : entries_)
        if (e.first == type) return e.second;
    }
    if (fallback_ && (!fallback_accepts_ || fallback_accepts_(device))) return fallback_;
    throw std::invalid_argument(
        "ppe::runtime: no runtime is registered for device type '" + type + "' (device '" + device.str() +
        "'); registered device types: " + ppe::detail::python_str_list(device_types()) +
        (fallback_ ? "; LibTorch's device types (cpu, cuda, meta, ...) use the fallback runtime" : "") +
        ". Register one with ppe::runtime::runtime_registry().add<YourRuntime>(\"" + type + "\")");
  }
  /// A runtime for `device`, made by `factory_for(device)`.
  std::shared_ptr<BaseRuntime> make(const DeviceSpec& device, const RuntimeOptions& options = {}) const {
    auto rt = factory_for(device)(device, options);
    if (!rt) throw std::runtime_error("ppe::runtime: the factory for '" + device.str() + "' returned no runtime");
    return rt;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, RuntimeFactory>> entries_;
  RuntimeFactory fallback_;
  std::function<bool(const DeviceSpec&)> fallback_accepts_;
};

/// The process-wide registry: empty, with `PyTorchRuntime` as the fallback for
/// LibTorch's device types.
inline RuntimeRegistry& runtime_registry() {
  static RuntimeRegistry registry(
      [](const DeviceSpec& d, const RuntimeOptions& o) { return std::make_shared<PyTorchRuntime>(d, o); },
      [](const DeviceSpec& d) { return d.is_torch_device(); });
  return registry;
}

}  // namespace ppe::runtime
