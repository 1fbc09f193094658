#pragma once
/// \file
/// `ppe::amp::GradScaler`: dynamic loss scaling for mixed-precision training
/// (the semantics of `torch.cuda.amp.GradScaler`, torch 1.13), on any device.
/// LibTorch 1.13 has no GradScaler in its C++ API.
///
/// ```cpp
/// ppe::amp::GradScaler scaler;                       // scale 2^16, x2 every 2000 clean steps, x0.5 on inf/NaN
/// optimizer.zero_grad();
/// scaler.scale(loss).backward();
/// scaler.step(optimizer);                            // unscales; skips the step if a gradient is inf/NaN
/// scaler.update();                                   // grows or backs off the scale
/// ```
///
/// Differences from Python: it works on every device (Python's disables
/// itself with a warning when CUDA is missing), `step` returns whether the
/// optimizer stepped, and bad arguments raise exceptions instead of failing
/// assertions. The fused ATen kernels `_amp_foreach_non_finite_check_and_unscale_`
/// and `_amp_update_scale_` exist in LibTorch 1.13 for CUDA only, so they are
/// used for CUDA tensors and the same arithmetic is written with plain tensor
/// operations for every other device (no host synchronisation either way,
/// except in `get_scale()` and `state_dict()`).
///
/// Optimizers are passed by reference (or by a pointer-like handle) and are
/// told apart by their address, as Python tells them apart by `id()`. Any type
/// with `param_groups()` (LibTorch's shape) and `step()` will do; this header
/// does not include the LibTorch optimizer headers.

#include <ATen/core/Tensor.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/state.hpp"

namespace ppe::amp {

/// Constructor options of GradScaler (Python's keyword arguments and defaults).
struct GradScalerOptions {
  /// The scale before the first `update()`.
  PPE_ARG(double, init_scale) = 65536.0;  // 2^16
  /// Multiplies the scale after `growth_interval` consecutive clean steps (> 1).
  PPE_ARG(double, growth_factor) = 2.0;
  /// Multiplies the scale after a step with an inf/NaN gradient (< 1).
  PPE_ARG(double, backoff_factor) = 0.5;
  /// Consecutive clean steps before the scale grows (>= 1).
  PPE_ARG(std::int64_t, growth_interval) = 2000;
  /// False: every method is a pass-through (`step` just steps).
  PPE_ARG(bool, enabled) = true;
};

/// Dynamic loss scaler; see the file comment.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {})
      : enabled_(options.enabled()),
        init_scale_(options.init_scale()),
        growth_factor_(options.growth_factor()),
        backoff_factor_(options.backoff_factor()),
        growth_interval_(options.growth_interval()) {
    // Python only validates an enabled scaler; so do we.
    if (enabled_) {
      check_growth_factor(growth_factor_);
      check_backoff_factor(backoff_factor_);
      check_growth_interval(growth_interval_);
    }
  }

  /// Multiplies `outputs` by the current scale (a copy of the scale on the
  /// output's device). The scale tensor is created on the device of the first
  /// output scaled. Disabled: returns `outputs` unchanged.
  at::Tensor scale(const at::Tensor& outputs) {
    if (!enabled_) return outputs;
    if (!outputs.defined()) throw std::invalid_argument("ppe::amp::GradScaler::scale: the output tensor is undefined");
    lazy_init(outputs.device());
    return outputs.mul(scale_.to(outputs.device(), /*non_blocking=*/true));
  }
  /// Scales each tensor (Python's iterable-of-tensors form).
  std::vector<at::Tensor> scale(const std::vector<at::Tensor>& outputs) {
    if (!enabled_) return outputs;
    std::vector<at::Tensor> out;
    out.reserve(outputs.size());
    for (const auto& t : outputs) out.push_back(scale(t));
    return out;
  }

  /// Divides the gradients of `optimizer`'s parameters by the scale and records
  /// whether any of them is inf or NaN. At most once per optimizer between two
  /// `update()` calls, and not after `step(optimizer)`: both raise. Call it
  /// before inspecting or clipping gradients; `step` calls it otherwise.
  template <class Optimizer>
  void unscale_(Optimizer&& optimizer) {
    if (!enabled_) return;
    auto& opt = deref(optimizer);
    check_initialized("unscale_");
    PerOptimizer& st = state_for(&opt);
    if (st.stage == Stage::Unscaled)
      throw std::runtime_error(
          "ppe::amp::GradScaler::unscale_: already called on this optimizer since the last update()");
    if (st.stage == Stage::Stepped)
      throw std::runtime_error("ppe::amp::GradScaler::unscale_: called after step() on this optimizer; call "
                               "update() first");
    // The reciprocal in double, then float: float division can be inexact under some compile options.
    const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
    st.found_inf_per_device = unscale_grads(opt, inv_scale, /*allow_fp16=*/false);
    st.stage = Stage::Unscaled;
  }

  /// Unscales (unless `unscale_` was called) and runs `optimizer.step()` unless
  /// a gradient is inf or NaN. Returns whether the optimizer stepped. Once per
  /// optimizer between two `update()` calls. Disabled: steps and returns true.
  template <class Optimizer>
  bool step(Optimizer&& optimizer) {
    auto& opt = deref(optimizer);
    if (!enabled_) {
      opt.step();
      return true;
    }
    check_initialized("step");
    PerOptimizer* st = &state_for(&opt);
    if (st->stage == Stage::Stepped)
      throw std::runtime_error("ppe::amp::GradScaler::step: already called on this optimizer since the last update()");
    if (st->stage == Stage::Ready) {
      unscale_(opt);
      st = &state_for(&opt);
    }
    if (st->found_inf_per_device.empty())
      throw std::runtime_error("ppe::amp::GradScaler::step: no inf checks were recorded for this optimizer (none of "
                               "its parameters has a gradient; was backward() called on the scaled loss?)");
    double found = 0.0;  // the one host synchronisation of a step, as in Python
    for (const auto& [device, found_inf] : st->found_inf_per_device) found += found_inf.template item<double>();
    const bool stepped = found == 0.0;
    if (stepped) opt.step();
    st->stage = Stage::Stepped;
    return stepped;
  }

  /// Updates the scale from this iteration's inf checks: any inf/NaN →
  /// scale × backoff_factor and the clean-step count restarts; otherwise the
  /// count grows and, on reaching growth_interval, scale × growth_factor (kept
  /// only if finite) and the count restarts. Then forgets this iteration's
  /// optimizers. Call it once per iteration, after every `step`.
  void update() {
    if (!enabled_) return;
    check_initialized("update");
    std::vector<at::Tensor> found_infs;
    for (const auto& st : per_optimizer_)
      for (const auto& [device, found_inf] : st.found_inf_per_device)
        found_infs.push_back(found_inf.to(scale_.device(), /*non_blocking=*/true));
    if (found_infs.empty())
      throw std::runtime_error(
          "ppe::amp::GradScaler::update: no inf checks were recorded this iteration (call step(optimizer) or "
          "unscale_(optimizer) before update())");
    at::Tensor found = found_infs[0];
    for (std::size_t i = 1; i < found_infs.size(); ++i) found = found.add(found_infs[i]);
    update_scale(found);
    per_optimizer_.clear();
  }
  /// Sets the scale to `new_scale` instead of computing it; forgets this
  /// iteration's optimizers.
  void update(double new_scale) {
    if (!enabled_) return;
    check_initialized("update");
    scale_.fill_(new_scale);
    per_optimizer_.clear();
  }
  /// Sets the scale from a one-element float tensor that does not require grad.
  void update(const at::Tensor& new_scale) {
    if (!enabled_) return;
    check_initialized("update");
    if (!new_scale.defined() || new_scale.numel() != 1 || new_scale.scalar_type() != at::kFloat ||
        new_scale.requires_grad())
      throw std::invalid_argument(
          "ppe::amp::GradScaler::update: new_scale must be a double or a one-element float32 tensor that does not "
          "require grad");
    at::NoGradGuard no_grad;
    scale_.copy_(new_scale.reshape({1}));
    per_optimizer_.clear();
  }

  /// The current scale (synchronises with the device); init_scale before the
  /// first `scale()`; 1.0 when disabled.
  double get_scale() const {
    if (!enabled_) return 1.0;
    return scale_.defined() ? static_cast<double>(scale_.item<float>()) : init_scale_;
  }
  /// The scale tensor (one float32 element, on the device of the first scaled
  /// output); undefined before the first `scale()` or when disabled.
  const at::Tensor& scale_tensor() const noexcept { return scale_; }
  /// Consecutive clean steps so far (Python's `_get_growth_tracker()`).
  std::int64_t growth_tracker() const {
    if (!enabled_) return 0;
    return tracker_.defined() ? static_cast<std::int64_t>(tracker_.item<std::int32_t>()) : init_growth_tracker_;
  }

  double get_growth_factor() const noexcept { return growth_factor_; }
  void set_growth_factor(double f) {
    check_growth_factor(f);
    growth_factor_ = f;
  }
  double get_backoff_factor() const noexcept { return backoff_factor_; }
  void set_backoff_factor(double f) {
    check_backoff_factor(f);
    backoff_factor_ = f;
  }
  std::int64_t get_growth_interval() const noexcept { return growth_interval_; }
  void set_growth_interval(std::int64_t n) {
    check_growth_interval(n);
    growth_interval_ = n;
  }
  bool is_enabled() const noexcept { return enabled_; }

  /// Python's layout: `{"scale": float, "growth_factor": float, "backoff_factor":
  /// float, "growth_interval": int, "_growth_tracker": int}`; an empty dict
  /// when disabled. Take it after `update()`.
  State state_dict() const {
    if (!enabled_) return State::dict();
    return State::dict({{"scale", get_scale()},
                        {"growth_factor", growth_factor_},
                        {"backoff_factor", backoff_factor_},
                        {"growth_interval", growth_interval_},
                        {"_growth_tracker", growth_tracker()}});
  }
  /// Loads a `state_dict()` (also one written by Python). A no-op when
  /// disabled; an empty state (saved from a disabled scaler) or a missing or
  /// mistyped key raises and changes nothing.
  void load_state_dict(const State& state) {
    if (!enabled_) return;
    if (!state.is_dict())
      throw std::invalid_argument("ppe::amp::GradScaler::load_state_dict: expected a dict, got a " +
                                  std::string(State::kind_name(state.kind())));
    if (state.size() == 0)
      throw std::runtime_error(
          "ppe::amp::GradScaler::load_state_dict: the state is empty, possibly because it was saved from a disabled "
          "GradScaler");
    const double scale = number(state, "scale");
    const double growth = number(state, "growth_factor");
    const double backoff = number(state, "backoff_factor");
    const std::int64_t interval = integer(state, "growth_interval");
    const std::int64_t tracker = integer(state, "_growth_tracker");
    init_scale_ = scale;
    growth_factor_ = growth;
    backoff_factor_ = backoff;
    growth_interval_ = interval;
    init_growth_tracker_ = tracker;
    if (scale_.defined()) scale_.fill_(scale);
    if (tracker_.defined()) tracker_.fill_(tracker);
  }

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    const void* optimizer;
    Stage stage = Stage::Ready;
    std::vector<std::pair<at::Device, at::Tensor>> found_inf_per_device;
  };

  template <class O>
  static auto& deref(O& o) {
    if constexpr (requires { o.param_groups(); })
      return o;
    else
      return *o;  // shared_ptr, ModuleHolder-like or raw pointer
  }

  static void check_growth_factor(double f) {
    if (!(f > 1.0))
      throw std::invalid_argument("ppe::amp::GradScaler: growth_factor must be > 1.0, got " + std::to_string(f));
  }
  static void check_backoff_factor(double f) {
    if (!(f < 1.0))
      throw std::invalid_argument("ppe::amp::GradScaler: backoff_factor must be < 1.0, got " + std::to_string(f));
  }
  static void check_growth_interval(std::int64_t n) {
    if (n < 1)
      throw std::invalid_argument("ppe::amp::GradScaler: growth_interval must be >= 1, got " + std::to_string(n));
  }

  static double number(const State& s, std::string_view key) {
    const State& v = s.at(key);
    if (!v.is_number())
      throw StateError("ppe::amp::GradScaler::load_state_dict: '" + std::string(key) + "' is a " +
                       std::string(State::kind_name(v.kind())) + ", expected a number");
    return v.as_double();
  }
  static std::int64_t integer(const State& s, std::string_view key) {
    const State& v = s.at(key);
    if (!v.is_int())
      throw StateError("ppe::amp::GradScaler::load_state_dict: '" + std::string(key) + "' is a " +
                       std::string(State::kind_name(v.kind())) + ", expected an int");
    return v.as_int();
  }

  void lazy_init(at::Device device) {
    if (scale_.defined()) return;
    scale_ = at::full({1}, init_scale_, at::TensorOptions().dtype(at::kFloat).device(device));
    tracker_ = at::full({1}, init_growth_tracker_, at::TensorOptions().dtype(at::kInt).device(device));
  }

  void check_initialized(const char* fn) const {
    if (!scale_.defined())
      throw std::runtime_error(std::string("ppe::amp::GradScaler::") + fn +
                               ": the scale is not initialised; call scale(loss) earlier in the iteration");
  }

  PerOptimizer& state_for(const void* optimizer) {
    for (auto& st : per_optimizer_)
      if (st.optimizer == optimizer) return st;
    per_optimizer_.push_back(PerOptimizer{optimizer, Stage::Ready, {}});
    return per_optimizer_.back();
  }

  // Unscales every gradient in place, grouped by device and dtype; returns one
  // found_inf flag (0.0 or 1.0, float32 [1]) per device that held a gradient.
  template <class O>
  static std::vector<std::pair<at::Device, at::Tensor>> unscale_grads(O& opt, const at::Tensor& inv_scale,
                                                                       bool allow_fp16) {
    struct Group {
      at::Device device;
      at::ScalarType dtype;
      std::vector<at::Tensor> grads;
    };
    std::vector<Group> groups;
    at::NoGradGuard no_grad;
    for (auto& group : opt.param_groups()) {
      for (auto& param : group.params()) {
        at::Tensor grad = param.mutable_grad();
        if (!grad.defined()) continue;
        if (!allow_fp16 && grad.scalar_type() == at::kHalf)
          throw std::invalid_argument("ppe::amp::GradScaler: attempting to unscale FP16 gradients (keep the "
                                      "parameters in float32 and let autocast run the float16 ops)");
        at::Tensor to_unscale = grad;
        if (grad.is_sparse()) {
          // Duplicate indices of a scaled half gradient may overflow only once summed: check the coalesced values.
          if (grad.scalar_type() == at::kHalf) {
            param.mutable_grad() = grad.coalesce();
            grad = param.mutable_grad();
          }
          to_unscale = grad._values();
        }
        Group* g = nullptr;
        for (auto& candidate : groups)
          if (candidate.device == to_unscale.device() && candidate.dtype == to_unscale.scalar_type()) g = &candidate;
        if (!g) g = &groups.emplace_back(Group{to_unscale.device(), to_unscale.scalar_type(), {}});
        g->grads.push_back(to_unscale);
      }
    }
    std::vector<std::pair<at::Device, at::Tensor>> found_per_device;
    for (auto& g : groups) {
      at::Tensor* found = nullptr;
      for (auto& [device, t] : found_per_device)
        if (device == g.device) found = &t;
      if (!found)
        found = &found_per_device
                     .emplace_back(g.device, at::full({1}, 0.0, at::TensorOptions().dtype(at::kFloat).device(g.device)))
                     .second;
      const at::Tensor inv = inv_scale.to(g.device, /*non_blocking=*/true);
      if (g.device.is_cuda()) {
        at::_amp_foreach_non_finite_check_and_unscale_(g.grads, *found, inv);
      } else {
        // The fused kernel's arithmetic: flag any non-finite value, then multiply
        // every element by inv_scale (0-dim, so 0-dim gradients stay 0-dim).
        const at::Tensor inv0 = inv.reshape({});
        for (auto& grad : g.grads) {
          found->masked_fill_(at::isfinite(grad).logical_not().any(), 1.0);
          grad.mul_(inv0);
        }
      }
    }
    return found_per_device;
  }

  // `_amp_update_scale_`'s arithmetic (the products in double, stored as float).
  void update_scale(const at::Tensor& found) {
    at::NoGradGuard no_grad;
    if (scale_.is_cuda()) {
      at::_amp_update_scale_(scale_, tracker_, found, growth_factor_, backoff_factor_, growth_interval_);
      return;
    }
    const at::Tensor inf = found.ne(0);
    const at::Tensor successful = tracker_.add(1);
    const at::Tensor reached = successful.eq(growth_interval_).logical_and(inf.logical_not());
    const at::Tensor scale64 = scale_.to(at::kDouble);
    const at::Tensor grown = scale64.mul(growth_factor_).to(at::kFloat);
    const at::Tensor backed_off = scale64.mul(backoff_factor_).to(at::kFloat);
    const at::Tensor new_scale =
        at::where(inf, backed_off, at::where(reached.logical_and(at::isfinite(grown)), grown, scale_));
    const at::Tensor new_tracker = at::where(inf.logical_or(reached), at::zeros_like(tracker_), successful);
    scale_.copy_(new_scale);
    tracker_.copy_(new_tracker);
  }

  bool enabled_;
  double init_scale_;
  double growth_factor_;
  double backoff_factor_;
  std::int64_t growth_interval_;
  std::int64_t init_growth_tracker_ = 0;
  at::Tensor scale_;    // float32 [1], created by the first scale()
  at::Tensor tracker_;  // int32 [1], consecutive clean steps
  std::vector<PerOptimizer> per_optimizer_;
};

}  // namespace ppe::amp
