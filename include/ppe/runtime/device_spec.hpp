#pragma once
/// \file
/// `ppe::runtime::DeviceSpec`: the device a runtime places modules and tensors
/// on, as PPE's `DeviceLike` (a `torch::Device` or a string such as `"cpu"`,
/// `"cuda:1"`, or a name only a registered runtime knows, e.g. `"counting"`).

#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace ppe::runtime {

/// A device given by name or as a LibTorch device. The *device type* (the
/// text before a `:`) selects the runtime in the registry.
class DeviceSpec {
 public:
  DeviceSpec(std::string spec) : spec_(std::move(spec)) {
    if (spec_.empty()) throw std::invalid_argument("ppe::runtime::DeviceSpec: the device name is empty");
  }
  DeviceSpec(const char* spec) : DeviceSpec(std::string(spec ? spec : "")) {}
  DeviceSpec(std::string_view spec) : DeviceSpec(std::string(spec)) {}
  DeviceSpec(c10::Device device) : spec_(device.str()) {}
  DeviceSpec(c10::DeviceType type) : spec_(c10::Device(type).str()) {}

  /// The text given (`"cuda:1"`), or a LibTorch device's `str()`.
  const std::string& str() const noexcept { return spec_; }
  /// The device type: the text before the first `:` (`"cuda"` for `"cuda:1"`).
  std::string type() const { return spec_.substr(0, spec_.find(':')); }

  /// Whether LibTorch can parse this as a device.
  bool is_torch_device() const noexcept {
    try {
      (void)c10::Device(spec_);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  /// The LibTorch device; throws when this is not a LibTorch device name.
  c10::Device torch_device() const {
    try {
      return c10::Device(spec_);
    } catch (const std::exception& e) {
      throw std::invalid_argument("ppe::runtime: '" + spec_ +
                                  "' is not a LibTorch device (expected e.g. 'cpu', 'cuda:0', 'meta'); a custom "
                                  "device name needs a runtime that places on a LibTorch device");
    }
  }

  friend bool operator==(const DeviceSpec& a, const DeviceSpec& b) noexcept { return a.spec_ == b.spec_; }

 private:
  std::string spec_;
};

}  // namespace ppe::runtime
