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
///
/// Sync-free mode (`GradScalerOptions().sync_free(true)`, with
/// `<ppe/amp/masked_step.hpp>` included in one translation unit of the
/// program): `step` never reads the inf check on the host. It runs ppe's own
/// step of LibTorch's SGD, Adam, AdamW, RMSprop or Adagrad, which computes the
/// update and keeps the old or the new values of every parameter and state
/// tensor on the device (see masked_step.hpp and docs/grad-scaler.md).
///
/// Counting steps: `step(optimizer, counter)` steps as `step(optimizer)` and
/// records in a `StepCounter` the steps really applied, in every mode (the
/// sync-free flag summed on the device); it is the one call that ppe's
/// logics, `PyTorchRuntime::execute` and `OptimizerRef::step(scaler)` make.

#include <ATen/core/Tensor.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Type.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ppe/amp/detail/found_inf.hpp"
#include "ppe/amp/detail/masked_state.hpp"
#include "ppe/amp/detail/masked_step_hooks.hpp"
#include "ppe/amp/step_counter.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/state.hpp"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

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
  /// True: `step` never waits for the device (no host read of the inf check);
  /// it runs ppe's masked step of LibTorch's SGD, Adam, AdamW, RMSprop or
  /// Adagrad and returns true ("issued"). Needs `<ppe/amp/masked_step.hpp>`
  /// in the program. Opt-in because the default keeps PyTorch's semantics
  /// (`step` returns whether it stepped, any optimizer type works) and runs
  /// LibTorch's own step.
  PPE_ARG(bool, sync_free) = false;
};

/// Dynamic loss scaler; see the file comment.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {})
      : enabled_(options.enabled()),
        init_scale_(options.init_scale()),
        growth_factor_(options.growth_factor()),
        backoff_factor_(options.backoff_factor()),
        growth_interval_(options.growth_interval()),
        sync_free_(options.sync_free()) {
    // Python only validates an enabled scaler; so do we.
    if (enabled_) {
      check_growth_factor(growth_factor_);
      check_backoff_factor(backoff_factor_);
      check_growth_interval(growth_interval_);
      if (sync_free_ && !detail::masked_step_hooks().step)
        throw std::invalid_argument(
            "ppe::amp::GradScaler: sync_free(true) needs ppe's masked optimizer steps; include "
            "<ppe/amp/masked_step.hpp> in a translation unit of the program");
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
  ///
  /// Sync-free mode: unscales, then issues ppe's masked step (the optimizer
  /// must be exactly a LibTorch SGD, Adam, AdamW, RMSprop or Adagrad; others
  /// and sparse gradients raise `std::invalid_argument`), which leaves every
  /// parameter and state tensor as it was when a gradient is inf or NaN.
  /// Returns true: the step was issued, not necessarily applied; ask
  /// `step_applied(optimizer)` for that, on the device.
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
    if (sync_free_) {
      masked_step(opt, st->found_inf_per_device);
      st->stage = Stage::Stepped;
      return true;
    }
    double found = 0.0;  // the one host synchronisation of a step, as in Python
    for (const auto& [device, found_inf] : st->found_inf_per_device) found += found_inf.template item<double>();
    const bool stepped = found == 0.0;
    if (stepped) opt.step();
    st->stage = Stage::Stepped;
    return stepped;
  }

  /// Steps as `step(optimizer)` and records the attempt in `counter`, so that
  /// it counts only the steps really applied: the returned bool when the
  /// scaler synchronises or is disabled; in sync-free mode the device flag of
  /// `step_applied` (summed on the device, read only when the count is), and
  /// the settling of the optimizer's host step counts is left on `counter` as
  /// its state hook (run before the optimizer's state is saved or loaded; it
  /// does nothing once the scaler is gone). Returns what `step` returns.
  template <class Optimizer>
  bool step(Optimizer&& optimizer, StepCounter& counter) {
    const bool issued = step(optimizer);
    if (!enabled_ || !sync_free_) {
      counter.record(issued);
      return issued;
    }
    auto& opt = deref(optimizer);
    counter.record(step_applied(opt));
    if constexpr (std::is_convertible_v<decltype(opt)&, torch::optim::Optimizer&>) {
      if (!counter.has_state_hook(masked_.id()))
        counter.set_state_hook(masked_.id(), [states = masked_.handle()](torch::optim::Optimizer& o) {
          if (const auto list = states.lock())
            for (auto& st : *list)
              if (st.optimizer == &o) detail::masked_step_hooks().settle(o, st);
        });
    }
    return issued;
  }

  /// Whether `step(optimizer)` applied the step: a 0-dim int64 tensor, 1 or 0,
  /// on the device of the optimizer's first gradient; no host read. Only
  /// between `step(optimizer)` and `update()` (else it raises). Disabled: 1 on
  /// the CPU.
  template <class Optimizer>
  at::Tensor step_applied(Optimizer&& optimizer) {
    if (!enabled_) return at::full({}, 1, at::TensorOptions().dtype(at::kLong));
    const auto& opt = deref(optimizer);
    for (const auto& st : per_optimizer_) {
      if (st.optimizer != static_cast<const void*>(&opt) || st.stage != Stage::Stepped) continue;
      const at::Tensor found = detail::found_inf_on(st.found_inf_per_device, st.found_inf_per_device.front().first);
      return found.eq(0).to(at::kLong).reshape({});
    }
    throw std::runtime_error("ppe::amp::GradScaler::step_applied: step(optimizer) was not called on this optimizer "
                             "since the last update()");
  }

  /// Sync-free mode: writes the step counts kept on the device into the
  /// optimizer's LibTorch state (`ParamState::step()`), and drops the states
  /// of parameters never really stepped (LibTorch makes them at the first
  /// step), so that the optimizer state reads as after LibTorch's own steps.
  /// One host read for parameters on an accelerator; CPU parameters are
  /// settled at every step already. A no-op otherwise.
  template <class Optimizer>
  void settle(Optimizer&& optimizer) {
    if (!enabled_ || !sync_free_) return;
    auto& opt = deref(optimizer);
    if constexpr (std::is_convertible_v<decltype(opt)&, torch::optim::Optimizer&>) {
      torch::optim::Optimizer& base = opt;
      masked_.for_each([&](detail::MaskedOptimizerState& st) {
        if (st.optimizer == &base) detail::masked_step_hooks().settle(base, st);
      });
    }
  }
  /// Whether `step` runs the masked, sync-free step.
  bool is_sync_free() const noexcept { return sync_free_; }

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
  /// when disabled. Take it after `update()`. Sync-free mode: settles the
  /// optimizers' host step counts first (see `settle`), since a snapshot
  /// saves the optimizers too.
  State state_dict() {
    masked_.for_each(
        [](detail::MaskedOptimizerState& st) { detail::masked_step_hooks().settle(*st.optimizer, st); });
    return const_cast<const GradScaler&>(*this).state_dict();
  }
  /// As above, without settling (for a const scaler).
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

  // Sync-free step: hands the optimizer, as a LibTorch optimizer, to the
  // masked step installed by masked_step.hpp.
  template <class O>
  void masked_step(O& opt, const FoundInfPerDevice& found) {
    if constexpr (!std::is_convertible_v<O&, torch::optim::Optimizer&>) {
      throw std::invalid_argument(std::string("ppe::amp::GradScaler::step: sync-free mode steps LibTorch optimizers "
                                              "(SGD, Adam, AdamW, RMSprop, Adagrad) only, got ") +
                                  c10::demangle(typeid(O).name()) + "; use GradScalerOptions().sync_free(false)");
    } else {
      torch::optim::Optimizer& base = opt;
      detail::masked_step_hooks().step(base, found, masked_.of(base));
    }
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
  bool sync_free_;
  std::int64_t init_growth_tracker_ = 0;
  at::Tensor scale_;    // float32 [1], created by the first scale()
  at::Tensor tracker_;  // int32 [1], consecutive clean steps
  std::vector<PerOptimizer> per_optimizer_;
  // Sync-free mode: the device-side step counts of each optimizer stepped so
  // far (kept across update(), unlike per_optimizer_); the optimizers must
  // outlive the scaler's use of them (state_dict settles them).
  detail::MaskedStates masked_;
};

}  // namespace ppe::amp
