#pragma once
/// \file
/// `ppe::runtime::RuntimeAdapter<R>`: a `BaseRuntime` that forwards to a
/// runtime policy type `R` that is not derived from BaseRuntime, so such types
/// can be registered and recorded by `ppe::to` too; and `runtime_cast<R>`,
/// which finds the `R` behind a `BaseRuntime` either way.

#include <memory>
#include <type_traits>
#include <utility>

#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/runtime.hpp"

namespace ppe::runtime {

template <class R>
class RuntimeAdapter final : public BaseRuntime {
  static_assert(check_runtime<R>());
  static_assert(!std::is_base_of_v<BaseRuntime, R>, "ppe: a BaseRuntime needs no adapter");

 public:
  /// Builds `R(device_spec, options)` when R has that constructor, else `R()`.
  RuntimeAdapter(DeviceSpec device_spec, RuntimeOptions options)
      : BaseRuntime(device_spec, options), inner_(make(device_spec, options)) {}
  /// Wraps an existing runtime object.
  RuntimeAdapter(DeviceSpec device_spec, RuntimeOptions options, R inner)
      : BaseRuntime(std::move(device_spec), std::move(options)), inner_(std::move(inner)) {}

  R& get() noexcept { return inner_; }
  const R& get() const noexcept { return inner_; }

  void move_module(torch::nn::Module& m) override { inner_.move_module(m); }
  at::Tensor move_tensor(const at::Tensor& t) override { return inner_.move_tensor(t); }
  void initialize_module(torch::nn::Module& m, AnyRef l, torch::optim::Optimizer* o) override {
    ppe::runtime::initialize_module(inner_, m, l, o);
  }
  void train_epoch_begin(torch::nn::Module& m) override { ppe::runtime::train_epoch_begin(inner_, m); }
  void train_epoch_end(torch::nn::Module& m) override { ppe::runtime::train_epoch_end(inner_, m); }
  void train_pre_step(AnyRef t, torch::nn::Module& m, std::int64_t i, AnyRef b) override {
    ppe::runtime::train_pre_step(inner_, t, m, i, b);
  }
  void train_post_step(AnyRef t, torch::nn::Module& m, std::int64_t i, AnyRef b, AnyRef o) override {
    ppe::runtime::train_post_step(inner_, t, m, i, b, o);
  }
  void train_validation_begin(torch::nn::Module& m) override { ppe::runtime::train_validation_begin(inner_, m); }
  void train_validation_end(torch::nn::Module& m) override { ppe::runtime::train_validation_end(inner_, m); }
  void eval_pre_step(AnyRef e, torch::nn::Module& m, std::int64_t i, AnyRef b) override {
    ppe::runtime::eval_pre_step(inner_, e, m, i, b);
  }
  void eval_post_step(AnyRef e, torch::nn::Module& m, std::int64_t i, AnyRef b, AnyRef o) override {
    ppe::runtime::eval_post_step(inner_, e, m, i, b, o);
  }
  void train_cleanup(torch::nn::Module& m) override { ppe::runtime::train_cleanup(inner_, m); }
  TensorDict execute(const CodeBlock& c, const TensorDict& b) override {
    if constexpr (hooks::execute<R>)
      return inner_.execute(c, b);
    else
      return BaseRuntime::execute(c, b);
  }
  State state_dict() const override { return runtime_state_dict(inner_); }
  void load_state_dict(const State& s) override { runtime_load_state_dict(inner_, s); }

 private:
  static R make(const DeviceSpec& spec, const RuntimeOptions& options) {
    if constexpr (std::is_constructible_v<R, const DeviceSpec&, const RuntimeOptions&>)
      return R(spec, options);
    else
      return R();
  }
  R inner_;
};

/// A `std::shared_ptr<BaseRuntime>` holding an `R`: `R` itself when it derives
/// from BaseRuntime, else `RuntimeAdapter<R>`.
template <class R>
std::shared_ptr<BaseRuntime> make_runtime(const DeviceSpec& device_spec, const RuntimeOptions& options = {}) {
  if constexpr (std::is_base_of_v<BaseRuntime, R>) {
    static_assert(std::is_constructible_v<R, const DeviceSpec&, const RuntimeOptions&>,
                  "ppe: a runtime class made by name needs a constructor R(ppe::runtime::DeviceSpec, "
                  "ppe::runtime::RuntimeOptions), like PPE's runtime classes");
    return std::make_shared<R>(device_spec, options);
  } else {
    return std::make_shared<RuntimeAdapter<R>>(device_spec, options);
  }
}

/// The `R` behind `rt` (derived from BaseRuntime or adapted), or nullptr.
template <class R>
R* runtime_cast(BaseRuntime* rt) noexcept {
  if constexpr (std::is_base_of_v<BaseRuntime, R>) {
    return dynamic_cast<R*>(rt);
  } else {
    auto* adapter = dynamic_cast<RuntimeAdapter<R>*>(rt);
    return adapter ? &adapter->get() : nullptr;
  }
}
template <class R>
R* runtime_cast(const std::shared_ptr<BaseRuntime>& rt) noexcept {
  return runtime_cast<R>(rt.get());
}

}  // namespace ppe::runtime
