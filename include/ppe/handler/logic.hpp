#pragma once
/// \file
/// `ppe::handler::Logic` (PPE's default `ppe.handler.Logic`): one training or
/// evaluation step of a model with its optimizer, and its options.
///
/// The protocol a logic type follows, and how the engine calls it, is in
/// handler/base_logic.hpp.
///
/// `Logic<Model>` is PPE's default `Logic`, plus gradient clipping and
/// gradient accumulation (which PPE lacks).

#include <ATen/core/Tensor.h>
#include <ATen/ops/stack_ops.h>  // the operator alone (ATen/ops/stack.h is slow to compile)
#include <c10/core/ScalarType.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppe/amp/grad_scaler.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/batch.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/handler/base_logic.hpp"
#include "ppe/handler/outputs.hpp"
#include "ppe/runtime/autocast.hpp"
#include "ppe/state.hpp"
#include "ppe/training/models.hpp"
#include "ppe/warnings.hpp"

namespace ppe::handler {

/// Options of the default `Logic` (PPE's logic `options` keys, plus
/// clipping and accumulation).
struct LogicOptions {
  /// Names of the outputs to back-propagate (PPE's `backward_outputs`);
  /// unset: every output that is a one-element floating or complex tensor
  /// with a gradient function. A named output that is missing is warned
  /// about; one without a gradient function is skipped.
  PPE_ARG(std::optional<std::vector<std::string>>, backward_outputs);
  /// Called instead of `v.backward()` on each back-propagated value (PPE's
  /// `backward_function`).
  PPE_ARG(std::function<void(const at::Tensor&)>, backward_function);
  /// Autocast around the zero_grad and forward (PPE's `autocast`); the device
  /// type defaults to the model's.
  PPE_ARG(runtime::AutocastOptions, autocast);
  /// Scales the loss, unscales before clipping, skips steps with non-finite
  /// gradients and adapts the scale (PPE's `grad_scaler`). Exactly one
  /// output may be back-propagated with it. Its state is saved with the
  /// trainer (`state_objects/options___::__grad_scaler`, PPE's key).
  PPE_ARG(std::shared_ptr<amp::GradScaler>, grad_scaler);
  /// Clips the gradients of the optimizer's parameters to this total norm
  /// before each step (`torch.nn.utils.clip_grad_norm_`).
  PPE_ARG(std::optional<double>, clip_grad_norm);
  /// The norm of `clip_grad_norm`: 2 by default; infinity for the max norm.
  PPE_ARG(double, clip_grad_norm_type) = 2.0;
  /// Clamps each gradient element to [-v, v] before each step
  /// (`torch.nn.utils.clip_grad_value_`); applied after norm clipping.
  PPE_ARG(std::optional<double>, clip_grad_value);
  /// Accumulates gradients over this many consecutive batches and steps once
  /// per group: each loss is divided by its group's size, so a step sees the
  /// mean gradient of the group. The last group of an epoch may be shorter;
  /// it steps at the epoch's end. A stop (stop trigger, `request_stop`) or a
  /// resume inside a group loses the micro-batches of that group seen before
  /// it: put stop and snapshot iterations at multiples of k. 1: a step per
  /// batch (PPE).
  PPE_ARG(std::int64_t, accumulation_steps) = 1;
};

/// Copies into `into` each field of `over` that is set (differs from a
/// default-constructed `LogicOptions`) and returns how many were: PPE's
/// trainer `options` updating the options of a given logic key by key.
inline int merge_options(LogicOptions& into, const LogicOptions& over) {
  const LogicOptions unset;
  int merged = 0;
  auto take = [&merged](bool set, auto apply) {
    if (set) {
      apply();
      ++merged;
    }
  };
  take(over.backward_outputs().has_value(), [&] { into.backward_outputs(over.backward_outputs()); });
  take(static_cast<bool>(over.backward_function()), [&] { into.backward_function(over.backward_function()); });
  const runtime::AutocastOptions& ac = over.autocast();
  take(ac.enabled() || ac.device_type() || ac.dtype() || ac.cache_enabled(), [&] { into.autocast(ac); });
  take(over.grad_scaler() != nullptr, [&] { into.grad_scaler(over.grad_scaler()); });
  take(over.clip_grad_norm().has_value(), [&] { into.clip_grad_norm(over.clip_grad_norm()); });
  take(over.clip_grad_norm_type() != unset.clip_grad_norm_type(),
       [&] { into.clip_grad_norm_type(over.clip_grad_norm_type()); });
  take(over.clip_grad_value().has_value(), [&] { into.clip_grad_value(over.clip_grad_value()); });
  take(over.accumulation_steps() != unset.accumulation_steps(),
       [&] { into.accumulation_steps(over.accumulation_steps()); });
  return merged;
}

/// PPE's default `Logic` for one model of type `Model` (a module holder or a
/// `std::shared_ptr` to a module), named `model_name` among the trainer's
/// models and optimizers:
/// - `train_epoch_begin`: train mode; `train_epoch_end`: eval mode;
/// - `train_step`: under autocast, `zero_grad` of the model's optimizer and the
///   forward pass (a `torch::data::Example` as `forward(data, target)`, a tuple
///   as `forward(elements...)`, anything else as `forward(batch)`); outputs
///   normalised to names; then back-propagation of the selected outputs
///   (scaled by the grad scaler); returns the named outputs;
/// - `train_step_optimizers`: clipping, then `step` (through the scaler and
///   `update()`), counted when it happened (`OptimizerRef::step(scaler)`;
///   with a sync-free scaler, as a device flag read only when the count is);
/// - `train_validation_begin`/`_end`: eval mode / train mode;
/// - `eval_step`: autocast and forward; returns the named outputs.
template <class Model>
class Logic : public BaseLogic {
  static_assert(ppe::detail::module_handle<Model>,
                "ppe::handler::Logic<Model>: Model must be a LibTorch module holder (torch::nn::Linear, a "
                "TORCH_MODULE type) or a std::shared_ptr to a module");

 public:
  explicit Logic(Model model, LogicOptions options = {}, std::string model_name = "main")
      : model_(std::move(model)), options_(std::move(options)), model_name_(std::move(model_name)) {
    check_options();
  }

  const Model& model() const noexcept { return model_; }
  const std::string& model_name() const noexcept { return model_name_; }
  const LogicOptions& options() const noexcept { return options_; }
  /// The grad scaler option (null when none); the trainer saves its state.
  const std::shared_ptr<amp::GradScaler>& grad_scaler() const noexcept { return options_.grad_scaler(); }

  /// PPE's option keys, popped from `options`: `backward_outputs` (a string
  /// or a list of strings), `autocast` (a bool), and this library's
  /// `clip_grad_norm`, `clip_grad_norm_type`, `clip_grad_value` (numbers) and
  /// `accumulation_steps` (an int). A grad scaler or backward function is
  /// not a value: give it in `LogicOptions`.
  void consume_options(State& options) {
    if (auto v = options.pop("backward_outputs")) {
      std::vector<std::string> names;
      if (v->is_string()) {
        names.push_back(v->as_string());
      } else if (v->is_list()) {
        for (const State& s : v->as_list()) {
          if (!s.is_string()) throw std::invalid_argument(bad_option("backward_outputs", "a string or a list of strings"));
          names.push_back(s.as_string());
        }
      } else {
        throw std::invalid_argument(bad_option("backward_outputs", "a string or a list of strings"));
      }
      options_.backward_outputs(std::move(names));
    }
    if (auto v = options.pop("autocast")) {
      if (!v->is_bool()) throw std::invalid_argument(bad_option("autocast", "a bool"));
      options_.autocast().enabled(v->as_bool());
    }
    if (auto v = options.pop("clip_grad_norm")) options_.clip_grad_norm(number(*v, "clip_grad_norm"));
    if (auto v = options.pop("clip_grad_norm_type")) options_.clip_grad_norm_type(number(*v, "clip_grad_norm_type"));
    if (auto v = options.pop("clip_grad_value")) options_.clip_grad_value(number(*v, "clip_grad_value"));
    if (auto v = options.pop("accumulation_steps")) {
      if (!v->is_int()) throw std::invalid_argument(bad_option("accumulation_steps", "an int"));
      options_.accumulation_steps(v->as_int());
    }
    check_options();
  }

  /// Sets the fields that `options` sets (see `merge_options`): the
  /// engine's `TrainerOptions().logic(...)` given together with this logic
  /// override its own options, as PPE's trainer options do.
  void merge_options(const LogicOptions& options) {
    handler::merge_options(options_, options);
    check_options();
  }

  void train_epoch_begin(const training::Models& models, std::int64_t /*epoch*/, std::int64_t iters_per_epoch) {
    module(models).train(true);
    epoch_length_ = iters_per_epoch;
  }
  void train_epoch_end(const training::Models& models, std::int64_t /*epoch*/) { module(models).train(false); }

  template <class Batch>
  Outputs train_step(const training::Models& /*models*/, const training::Optimizers& optimizers,
                     std::int64_t batch_idx, Batch& batch) {
    const std::int64_t k = options_.accumulation_steps();
    Outputs outs;
    {
      std::optional<runtime::AutocastGuard> autocast;
      enter_autocast(autocast);
      if (k == 1 || batch_idx % k == 0) optimizer(optimizers).zero_grad();
      // A data-parallel model (ppe::nn::parallel::DistributedDataParallel)
      // averages gradients only on the last batch of an accumulation group:
      // the others accumulate locally (its no_sync).
      if constexpr (requires { model_.set_require_backward_grad_sync(true); })
        model_.set_require_backward_grad_sync(steps_after(batch_idx));
      outs = forward(batch);
    }
    backward(outs, group_size(batch_idx));
    return outs;
  }

  void train_step_optimizers(const training::Models& /*models*/, const training::Optimizers& optimizers,
                             std::int64_t batch_idx) {
    if (!steps_after(batch_idx)) return;
    const training::OptimizerRef& ref = optimizer_ref(optimizers);
    auto& opt = static_cast<Optimizer&>(ref.optimizer());
    const auto& scaler = options_.grad_scaler();
    if (clipping()) {
      if (scaler) scaler->unscale_(opt);
      clip(opt);
    }
    // Counts only the steps taken (a scaler skips those with inf/NaN
    // gradients): LRScheduler's wait_for_first_optimizer_step reads the count.
    if (scaler) {
      ref.step(*scaler);
      scaler->update();
    } else {
      ref.step();
    }
  }

  void train_validation_begin(const training::Models& models) { module(models).train(false); }
  void train_validation_end(const training::Models& models) { module(models).train(true); }

  template <class Batch>
  Outputs eval_step(const training::Models& /*models*/, std::int64_t /*batch_idx*/, Batch& batch) {
    std::optional<runtime::AutocastGuard> autocast;
    enter_autocast(autocast);
    return forward(batch);
  }

 private:
  using Module = ppe::detail::dependent_t<torch::nn::Module, Model>;
  using Optimizer = ppe::detail::dependent_t<torch::optim::Optimizer, Model>;

  Module& module(const training::Models& models) const {
    if (const training::ModelRef* m = models.find(model_name_)) return static_cast<Module&>(*m->module());
    throw std::out_of_range("ppe::handler::Logic: no model named '" + model_name_ + "'; models: " +
                            ppe::detail::python_str_list(models.names()));
  }
  Optimizer& optimizer(const training::Optimizers& optimizers) const {
    return static_cast<Optimizer&>(optimizer_ref(optimizers).optimizer());
  }
  const training::OptimizerRef& optimizer_ref(const training::Optimizers& optimizers) const {
    if (const training::OptimizerRef* o = optimizers.find(model_name_)) return *o;
    throw std::out_of_range("ppe::handler::Logic: no optimizer named '" + model_name_ + "' (the logic steps the "
                            "optimizer named as its model); optimizers: " +
                            ppe::detail::python_str_list(optimizers.names()));
  }

  template <class Batch>
  Outputs forward(Batch& batch) {
    if constexpr (std::is_void_v<ppe::detail::raw_output_t<Model, Batch>>) {
      ppe::detail::call_on_batch(model_, batch);
      return Outputs();
    } else {
      return normalize_outputs(ppe::detail::call_on_batch(model_, batch));
    }
  }

  // Enters autocast when enabled (a disabled guard would still touch the
  // thread's autocast state at every step).
  void enter_autocast(std::optional<runtime::AutocastGuard>& guard) const {
    if (options_.autocast().enabled()) guard.emplace(options_.autocast(), model_device_type());
  }
  c10::DeviceType model_device_type() const {
    for (const auto& p : static_cast<Module&>(*model_ptr()).parameters()) return p.device().type();
    return c10::DeviceType::CPU;
  }
  std::shared_ptr<torch::nn::Module> model_ptr() const {
    if constexpr (requires { model_.ptr(); })
      return model_.ptr();
    else
      return model_;
  }

  // Whether the optimizer steps after `batch_idx`: the last batch of an
  // accumulation group, or of the epoch.
  bool steps_after(std::int64_t batch_idx) const {
    const std::int64_t k = options_.accumulation_steps();
    return k == 1 || (batch_idx + 1) % k == 0 || (epoch_length_ > 0 && batch_idx + 1 >= epoch_length_);
  }

  // The number of batches whose gradients the step after `batch_idx` sums.
  std::int64_t group_size(std::int64_t batch_idx) const {
    const std::int64_t k = options_.accumulation_steps();
    if (k == 1) return 1;
    const std::int64_t start = batch_idx - batch_idx % k;
    if (epoch_length_ > 0) return std::min(k, epoch_length_ - start);
    return k;
  }

  // PPE's `_backward`, with the loss divided over an accumulation group.
  void backward(const Outputs& outs, std::int64_t group) {
    c10::SmallVector<at::Tensor, 4> selected;  // no allocation per step for a few outputs
    auto add = [&selected](const at::Tensor& v) {
      for (const auto& s : selected)
        if (s.is_same(v)) return;  // PPE's set: one tensor under two names back-propagates once
      selected.push_back(v);
    };
    if (!options_.backward_outputs()) {
      for (const auto& item : outs) {
        const at::Tensor& v = item.value();
        if (v.defined() && v.grad_fn() != nullptr && v.numel() == 1 &&
            (c10::isFloatingType(v.scalar_type()) || c10::isComplexType(v.scalar_type())))
          add(v);
      }
    } else {
      for (const std::string& k : *options_.backward_outputs()) {
        const at::Tensor* v = outs.find(k);
        if (v == nullptr) {
          ppe::warn("Couldn't find requested backward value: " + k + " in " + ppe::detail::python_key_list(outs));
          continue;
        }
        if (v->defined() && v->grad_fn() != nullptr) add(*v);
      }
    }
    const auto& scaler = options_.grad_scaler();
    if (scaler && selected.size() != 1)
      throw std::invalid_argument("ppe::handler::Logic: loss scaling with a grad scaler needs exactly one output to "
                                  "back-propagate, got " + std::to_string(selected.size()) + " among " +
                                  ppe::detail::python_key_list(outs) + " (set backward_outputs)");
    if (options_.backward_function()) {
      for (at::Tensor v : selected) options_.backward_function()(scaled(v, group));
      return;
    }
    if (selected.empty()) return;
    // One backward pass for the sum: the gradients are those of separate
    // passes, and outputs that share a graph work (PPE's one pass per output
    // fails on the second with "backward through the graph a second time").
    at::Tensor total = selected[0];
    for (std::size_t i = 1; i < selected.size(); ++i) total = total + selected[i];
    scaled(total, group).backward();
  }

  at::Tensor scaled(at::Tensor v, std::int64_t group) const {
    if (group > 1) v = v / static_cast<double>(group);
    if (const auto& scaler = options_.grad_scaler()) v = scaler->scale(v);
    return v;
  }

  bool clipping() const { return options_.clip_grad_norm().has_value() || options_.clip_grad_value().has_value(); }

  // torch.nn.utils.clip_grad_norm_ and clip_grad_value_ over the optimizer's
  // parameters, without a host synchronisation.
  void clip(Optimizer& opt) const {
    std::vector<at::Tensor> grads;
    for (auto& group : opt.param_groups())
      for (auto& p : group.params())
        if (p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty()) return;
    at::NoGradGuard no_grad;
    if (const auto& max_norm = options_.clip_grad_norm()) {
      const double type = options_.clip_grad_norm_type();
      std::vector<at::Tensor> norms;
      norms.reserve(grads.size());
      const bool inf = std::isinf(type);
      for (const auto& g : grads) norms.push_back(inf ? g.abs().max() : g.norm(type));
      const at::Tensor stacked = at::_ops::stack::call(norms, 0);
      const at::Tensor total = inf ? stacked.max() : stacked.norm(type);
      const at::Tensor coef = (*max_norm / (total + 1e-6)).clamp_max(1.0);
      for (auto& g : grads) g.mul_(coef.to(g.device()));
    }
    if (const auto& v = options_.clip_grad_value())
      for (auto& g : grads) g.clamp_(-*v, *v);
  }

  void check_options() const {
    if (options_.accumulation_steps() < 1)
      throw std::invalid_argument("ppe::handler::Logic: accumulation_steps must be >= 1, got " +
                                  std::to_string(options_.accumulation_steps()));
    if (options_.clip_grad_norm() && !(*options_.clip_grad_norm() > 0))
      throw std::invalid_argument("ppe::handler::Logic: clip_grad_norm must be > 0, got " +
                                  std::to_string(*options_.clip_grad_norm()));
    if (!(options_.clip_grad_norm_type() > 0))
      throw std::invalid_argument("ppe::handler::Logic: clip_grad_norm_type must be > 0, got " +
                                  std::to_string(options_.clip_grad_norm_type()));
    if (options_.clip_grad_value() && !(*options_.clip_grad_value() > 0))
      throw std::invalid_argument("ppe::handler::Logic: clip_grad_value must be > 0, got " +
                                  std::to_string(*options_.clip_grad_value()));
    const auto& ac = options_.autocast();
    if (ac.enabled() && ac.device_type() == c10::DeviceType::CUDA && !at::hasCUDA())
      throw std::invalid_argument("ppe::handler::Logic: Requested AMP features but CUDA is not available (autocast on "
                                  "cuda)");
  }

  static double number(const State& v, const char* key) {
    if (!v.is_number()) throw std::invalid_argument(bad_option(key, "a number"));
    return v.as_double();
  }
  static std::string bad_option(const char* key, const char* expected) {
    return std::string("ppe::handler::Logic: option '") + key + "' must be " + expected;
  }

  Model model_;
  LogicOptions options_;
  std::string model_name_;
  std::int64_t epoch_length_ = 0;
};

template <class M>
Logic(M, LogicOptions = {}, std::string = "main") -> Logic<M>;

}  // namespace ppe::handler
