#pragma once
/// \file
/// ppe's masked steps of LibTorch's SGD, Adam, AdamW, RMSprop and Adagrad,
/// for `ppe::amp::GradScaler`'s sync-free mode: each computes the update of
/// the optimizer's own `step()` and then keeps, on the device, the old values
/// of every parameter and state tensor when a gradient was inf or NaN, the
/// new ones otherwise. Including this header (in any one translation unit of
/// the program) installs them in the scaler; it includes LibTorch's optimizer
/// headers, which grad_scaler.hpp leaves out.
///
/// Exactness. The update uses the ATen operations and host `Scalar`s of
/// LibTorch's `step()` (1.13 through 2.x, whose arithmetic is the same). What
/// LibTorch computes on the host from its per-parameter step count (Adam and
/// AdamW's bias corrections, Adagrad's decayed learning rate) is computed here
/// from a device count, as 0-dim float64 tensors with the same IEEE
/// operations, and applied in the form the CPU kernels use (`addcdiv` is
/// `self + value * t1 / t2` in the tensor's dtype, the value cast to it). On
/// the CPU the result equals LibTorch's step bit for bit (tested). Not
/// guaranteed on CUDA: LibTorch's CUDA kernels treat a host scalar unlike a
/// device tensor (a division by a host scalar is a multiplication by its
/// reciprocal; fused multiply-adds), so a value can differ in its last bit
/// from LibTorch's non-capturable CUDA step. LibTorch 2's fused kernels
/// (`_fused_adam_`, `_fused_adamw_`, `_fused_sgd_`, taking `grad_scale` and
/// `found_inf`) would be the CUDA-native alternative; they are not used.
///
/// Host state. LibTorch's `ParamState::step()` cannot follow a device flag
/// without a host read, so the real step counts live on the device
/// (`detail::MaskedParamState::count`) and are written into LibTorch's states
/// by `settle`: after every step for CPU parameters (a memory read, no
/// dispatch), on `GradScaler::settle` / `state_dict()` for the others, and by
/// the state hook that `GradScaler::step(optimizer, counter)` leaves on the
/// optimizer's step counter (`OptimizerRef` runs it before the optimizer's
/// state is saved or loaded).

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/stack_ops.h>  // the operator alone (ATen/ops/stack.h is slow to compile)
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Type.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ppe/amp/detail/found_inf.hpp"
#include "ppe/amp/detail/masked_state.hpp"
#include "ppe/amp/detail/masked_step_hooks.hpp"
#include "ppe/amp/grad_scaler.hpp"
#include "ppe/detail/torch_compat.hpp"

namespace ppe::amp::detail {

/// The "skip" flags of one masked step: per device, a 0-dim bool tensor, true
/// when any device of the optimizer found an inf or NaN (the synchronising
/// step skips the whole optimizer then).
class SkipFlags {
 public:
  explicit SkipFlags(const FoundInfPerDevice& found) : found_(found) {}
  const at::Tensor& on(at::Device device) {
    for (const auto& [d, flag] : flags_)
      if (d == device) return flag;
    return flags_.emplace_back(device, found_inf_on(found_, device).ne(0).reshape({})).second;
  }

 private:
  const FoundInfPerDevice& found_;
  std::vector<std::pair<at::Device, at::Tensor>> flags_;
};

/// Replaces `target`'s values by `updated`'s unless `skip` (in place, so that
/// whoever shares `target` sees it).
inline void keep_or_take(const at::Tensor& target, const at::Tensor& skip, const at::Tensor& updated) {
  target.copy_(at::where(skip, target, updated));
}

/// A scalar computed on the device, as a 0-dim tensor of `dtype` there: what
/// LibTorch passes as a host Scalar, cast as its CPU kernels cast a Scalar.
inline at::Tensor as_operand(const at::Tensor& value64, const at::Tensor& like) {
  return value64.to(like.scalar_type());
}

/// The LibTorch state of `p` (of type `PS`) and this scaler's record of it.
/// A missing state is made by `init` with step 0 (as LibTorch's step does); a
/// state made or changed elsewhere is adopted with its step count
/// `host_count(state)` (`host_step(state)` is the count that tells a change).
template <class PS, class Init, class HostStep, class HostCount>
std::pair<PS*, MaskedParamState*> prepare(torch::optim::Optimizer& opt, const at::Tensor& p,
                                          MaskedOptimizerState& side, Init&& init, HostStep&& host_step,
                                          HostCount&& host_count) {
  auto& states = opt.state();
  const auto key = ppe::detail::compat::optimizer_state_key<std::remove_cvref_t<decltype(states)>>(
      p.unsafeGetTensorImpl());
  MaskedParamState& mine = side.params[p.unsafeGetTensorImpl()];
  auto it = states.find(key);
  const auto count_of = [&](double n) { return at::full({}, n, at::TensorOptions().dtype(at::kDouble).device(p.device())); };
  if (it == states.end()) {
    auto fresh = std::make_unique<PS>();
    init(*fresh);
    mine.state_object = fresh.get();
    mine.host_step = host_step(*fresh);
    mine.made_here = true;
    mine.count = count_of(0.0);
    states[key] = std::move(fresh);
    it = states.find(key);
  } else {
    auto* state = dynamic_cast<PS*>(it->second.get());
    const auto& held = *it->second;
    if (!state)
      throw std::invalid_argument(std::string("ppe::amp::GradScaler::step: the state of a parameter of this ") +
                                  c10::demangle(typeid(opt).name()) + " is a " +
                                  c10::demangle(typeid(held).name()) + ", expected a " +
                                  c10::demangle(typeid(PS).name()));
    if (state != mine.state_object || host_step(*state) != mine.host_step || !mine.count.defined() ||
        mine.count.device() != p.device()) {
      mine.state_object = state;
      mine.host_step = host_step(*state);
      mine.made_here = false;
      mine.count = count_of(static_cast<double>(host_count(*state)));
    }
  }
  return {static_cast<PS*>(it->second.get()), &mine};
}

/// The gradient of `p` for a masked step: dense only.
inline at::Tensor dense_grad(const at::Tensor& p, const torch::optim::Optimizer& opt) {
  const at::Tensor& grad = p.grad();
  if (grad.is_sparse())
    throw std::invalid_argument(std::string("ppe::amp::GradScaler::step: sync-free mode does not step sparse "
                                            "gradients (") +
                                c10::demangle(typeid(opt).name()) +
                                "); use GradScalerOptions().sync_free(false)");
  return grad;
}

/// LibTorch's SGD step, masked. The momentum buffer is made by the first
/// real step (a copy of the update): a device flag (count > 0) tells whether
/// it holds anything yet.
inline void masked_sgd(torch::optim::SGD& opt, SkipFlags& skips, MaskedOptimizerState& side) {
  using torch::optim::SGDParamState;
  for (auto& group : opt.param_groups()) {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    const double weight_decay = options.weight_decay();
    const double momentum = options.momentum();
    const double dampening = options.dampening();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor d_p = dense_grad(p, opt);
      const at::Tensor& skip = skips.on(p.device());
      if (weight_decay != 0) d_p = d_p.add(p, weight_decay);
      if (momentum != 0) {
        auto [state, mine] = prepare<SGDParamState>(
            opt, p, side, [&](SGDParamState& s) { s.momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve)); },
            [](const SGDParamState&) { return std::int64_t{0}; },
            [](const SGDParamState& s) { return std::int64_t{s.momentum_buffer().defined() ? 1 : 0}; });
        if (!state->momentum_buffer().defined())
          state->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
        const at::Tensor& buf = state->momentum_buffer();
        const at::Tensor next = at::where(mine->count.gt(0), buf.mul(momentum).add_(d_p, 1 - dampening), d_p);
        d_p = options.nesterov() ? d_p.add(next, momentum) : next;
        keep_or_take(buf, skip, next);
        keep_or_take(mine->count, skip, mine->count.add(1));
      }
      keep_or_take(p, skip, p.add(d_p, -1 * options.lr()));
    }
  }
}

/// LibTorch's Adam (`decoupled` false) or AdamW (true) step, masked; the bias
/// corrections come from the device step count.
template <class Options, class PS, class O>
void masked_adam(O& opt, SkipFlags& skips, MaskedOptimizerState& side, bool decoupled) {
  for (auto& group : opt.param_groups()) {
    const auto& options = static_cast<const Options&>(group.options());
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = dense_grad(p, opt);
      const at::Tensor& skip = skips.on(p.device());
      auto [state, mine] = prepare<PS>(
          opt, p, side,
          [&](PS& s) {
            s.step(0);
            s.exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
            s.exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
            if (options.amsgrad()) s.max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
          },
          [](const PS& s) { return s.step(); }, [](const PS& s) { return s.step(); });
      if (options.amsgrad() && !state->max_exp_avg_sq().defined())
        state->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      at::Tensor updated_p = p;
      if (options.weight_decay() != 0) {
        if (decoupled)
          updated_p = p.mul(1 - options.lr() * options.weight_decay());
        else
          grad = grad.add(p, options.weight_decay());
      }
      const at::Tensor step = mine->count.add(1);
      // 1 - beta^step in float64, as LibTorch's host `1 - std::pow(beta, step)`.
      const at::Tensor bias_correction1 = at::pow(beta1, step).neg_().add_(1);
      const at::Tensor bias_correction2 = at::pow(beta2, step).neg_().add_(1);
      const at::Tensor exp_avg = state->exp_avg().mul(beta1).add_(grad, 1 - beta1);
      const at::Tensor exp_avg_sq = state->exp_avg_sq().mul(beta2).addcmul_(grad, grad, 1 - beta2);
      at::Tensor max_exp_avg_sq;
      if (options.amsgrad()) max_exp_avg_sq = at::maximum(state->max_exp_avg_sq(), exp_avg_sq);
      const at::Tensor denom = (options.amsgrad() ? max_exp_avg_sq : exp_avg_sq)
                                   .sqrt()
                                   .div_(as_operand(bias_correction2.sqrt(), p))
                                   .add_(options.eps());
      const at::Tensor step_size = at::full({}, options.lr(), bias_correction1.options()).div_(bias_correction1);
      // p.addcdiv_(exp_avg, denom, -step_size): self + value * t1 / t2.
      updated_p = updated_p.add(exp_avg.mul(as_operand(step_size.neg(), p)).div_(denom));
      keep_or_take(state->exp_avg(), skip, exp_avg);
      keep_or_take(state->exp_avg_sq(), skip, exp_avg_sq);
      if (options.amsgrad()) keep_or_take(state->max_exp_avg_sq(), skip, max_exp_avg_sq);
      keep_or_take(p, skip, updated_p);
      keep_or_take(mine->count, skip, step);
    }
  }
}

/// LibTorch's RMSprop step, masked (its step count only counts).
inline void masked_rmsprop(torch::optim::RMSprop& opt, SkipFlags& skips, MaskedOptimizerState& side) {
  using torch::optim::RMSpropParamState;
  for (auto& group : opt.param_groups()) {
    const auto& options = static_cast<const torch::optim::RMSpropOptions&>(group.options());
    const double alpha = options.alpha();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = dense_grad(p, opt);
      const at::Tensor& skip = skips.on(p.device());
      auto [state, mine] = prepare<RMSpropParamState>(
          opt, p, side,
          [&](RMSpropParamState& s) {
            s.step(0);
            s.square_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
            if (options.momentum() > 0) s.momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
            if (options.centered()) s.grad_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
          },
          [](const RMSpropParamState& s) { return s.step(); }, [](const RMSpropParamState& s) { return s.step(); });
      if (options.momentum() > 0 && !state->momentum_buffer().defined())
        state->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
      if (options.centered() && !state->grad_avg().defined())
        state->grad_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
      if (options.weight_decay() != 0) grad = grad.add(p, options.weight_decay());
      const at::Tensor square_avg = state->square_avg().mul(alpha).addcmul_(grad, grad, 1 - alpha);
      at::Tensor avg;
      at::Tensor grad_avg;
      if (options.centered()) {
        grad_avg = state->grad_avg().mul(alpha).add_(grad, 1 - alpha);
        avg = square_avg.addcmul(grad_avg, grad_avg, -1).sqrt_().add_(options.eps());
      } else {
        avg = square_avg.sqrt().add_(options.eps());
      }
      at::Tensor buf;
      at::Tensor updated_p;
      if (options.momentum() > 0) {
        buf = state->momentum_buffer().mul(options.momentum()).addcdiv_(grad, avg);
        updated_p = p.add(buf, -options.lr());
      } else {
        updated_p = p.addcdiv(grad, avg, -options.lr());
      }
      keep_or_take(state->square_avg(), skip, square_avg);
      if (options.centered()) keep_or_take(state->grad_avg(), skip, grad_avg);
      if (options.momentum() > 0) keep_or_take(state->momentum_buffer(), skip, buf);
      keep_or_take(p, skip, updated_p);
      keep_or_take(mine->count, skip, mine->count.add(1));
    }
  }
}

/// LibTorch's Adagrad step, masked; the decayed learning rate comes from the
/// device step count.
inline void masked_adagrad(torch::optim::Adagrad& opt, SkipFlags& skips, MaskedOptimizerState& side) {
  using torch::optim::AdagradParamState;
  for (auto& group : opt.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdagradOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = dense_grad(p, opt);
      const at::Tensor& skip = skips.on(p.device());
      // LibTorch's constructor makes these states; one missing is made as it does.
      auto [state, mine] = prepare<AdagradParamState>(
          opt, p, side,
          [&](AdagradParamState& s) {
            s.step(0);
            s.sum(at::full_like(p, options.initial_accumulator_value(), at::MemoryFormat::Preserve));
          },
          [](const AdagradParamState& s) { return s.step(); }, [](const AdagradParamState& s) { return s.step(); });
      mine->made_here = false;  // LibTorch keeps Adagrad's states from the start
      if (options.weight_decay() != 0) grad = grad.add(p, options.weight_decay());
      const at::Tensor step = mine->count.add(1);
      // lr / (1 + (step - 1) * lr_decay) in float64, as LibTorch's host arithmetic.
      const at::Tensor clr = at::full({}, options.lr(), step.options())
                                 .div_(step.sub(1).mul_(options.lr_decay()).add_(1));
      const at::Tensor sum = state->sum().addcmul(grad, grad, 1.0);
      const at::Tensor std = sum.sqrt().add_(options.eps());
      // p.addcdiv_(grad, std, -clr): self + value * t1 / t2.
      const at::Tensor updated_p = p.add(grad.mul(as_operand(clr.neg(), p)).div_(std));
      keep_or_take(state->sum(), skip, sum);
      keep_or_take(p, skip, updated_p);
      keep_or_take(mine->count, skip, step);
    }
  }
}

/// Writes the device step counts of `side` into `opt`'s LibTorch states
/// (`cpu_only`: only those of CPU parameters, which need no synchronisation)
/// and removes the states this scaler made for parameters never really
/// stepped. `set_step(state, n)` writes a count; null for SGD (no count).
template <class PS>
void settle_states(torch::optim::Optimizer& opt, MaskedOptimizerState& side, bool cpu_only,
                   void (*set_step)(PS&, std::int64_t)) {
  auto& states = opt.state();
  using Map = std::remove_cvref_t<decltype(states)>;
  std::vector<std::pair<const void*, MaskedParamState*>> pending;
  for (auto& [impl, mine] : side.params)
    if (mine.count.defined() && (mine.count.is_cpu() || !cpu_only)) pending.emplace_back(impl, &mine);
  // The accelerator counts: one host read per device (a stack, then a copy).
  std::vector<std::pair<at::Device, std::vector<at::Tensor>>> by_device;
  for (auto& [impl, mine] : pending) {
    if (mine->count.is_cpu()) continue;
    std::vector<at::Tensor>* list = nullptr;
    for (auto& [device, counts] : by_device)
      if (device == mine->count.device()) list = &counts;
    if (!list) list = &by_device.emplace_back(mine->count.device(), std::vector<at::Tensor>{}).second;
    list->push_back(mine->count);
  }
  std::vector<std::pair<at::Device, at::Tensor>> read;
  for (auto& [device, counts] : by_device)
    read.emplace_back(device, at::_ops::stack::call(counts, 0).to(at::kCPU).contiguous());
  std::vector<std::pair<at::Device, std::size_t>> used;
  for (auto& [impl, mine] : pending) {
    double value = 0.0;
    if (mine->count.is_cpu()) {
      value = *mine->count.template data_ptr<double>();  // a memory read, no dispatch
    } else {
      std::size_t* next = nullptr;
      for (auto& [device, n] : used)
        if (device == mine->count.device()) next = &n;
      if (!next) next = &used.emplace_back(mine->count.device(), 0).second;
      for (auto& [device, values] : read)
        if (device == mine->count.device()) value = values.template data_ptr<double>()[(*next)++];
    }
    const auto n = static_cast<std::int64_t>(value);
    const auto key = ppe::detail::compat::optimizer_state_key<Map>(impl);
    auto it = states.find(key);
    if (it == states.end() || it->second.get() != mine->state_object) continue;  // replaced since: not ours to settle
    if (n == 0 && mine->made_here) {
      states.erase(it);
      mine->state_object = nullptr;
      continue;
    }
    if (set_step) {
      set_step(static_cast<PS&>(*it->second), n);
      mine->host_step = n;
    }
  }
}

/// The class name of `opt` for messages.
inline std::string optimizer_name(const torch::optim::Optimizer& opt) { return c10::demangle(typeid(opt).name()); }

/// `GradScaler`'s sync-free step of `opt` (exactly one of LibTorch's SGD,
/// Adam, AdamW, RMSprop, Adagrad; a derived class may step differently, so
/// it is refused like LBFGS and unknown optimizers).
inline void masked_step(torch::optim::Optimizer& opt, const FoundInfPerDevice& found, MaskedOptimizerState& side);
/// Settles every count of `side` (see settle_states).
inline void settle_masked(torch::optim::Optimizer& opt, MaskedOptimizerState& side, bool cpu_only);

inline void settle_masked(torch::optim::Optimizer& opt, MaskedOptimizerState& side, bool cpu_only) {
  const std::type_info& type = typeid(opt);
  if (type == typeid(torch::optim::SGD)) {
    settle_states<torch::optim::SGDParamState>(opt, side, cpu_only, nullptr);
  } else if (type == typeid(torch::optim::Adam)) {
    settle_states<torch::optim::AdamParamState>(
        opt, side, cpu_only, [](torch::optim::AdamParamState& s, std::int64_t n) { s.step(n); });
  } else if (type == typeid(torch::optim::AdamW)) {
    settle_states<torch::optim::AdamWParamState>(
        opt, side, cpu_only, [](torch::optim::AdamWParamState& s, std::int64_t n) { s.step(n); });
  } else if (type == typeid(torch::optim::RMSprop)) {
    settle_states<torch::optim::RMSpropParamState>(
        opt, side, cpu_only, [](torch::optim::RMSpropParamState& s, std::int64_t n) { s.step(n); });
  } else if (type == typeid(torch::optim::Adagrad)) {
    settle_states<torch::optim::AdagradParamState>(
        opt, side, cpu_only, [](torch::optim::AdagradParamState& s, std::int64_t n) { s.step(n); });
  }
}

inline void masked_step(torch::optim::Optimizer& opt, const FoundInfPerDevice& found, MaskedOptimizerState& side) {
  const std::type_info& type = typeid(opt);
  at::NoGradGuard no_grad;
  SkipFlags skips(found);
  if (type == typeid(torch::optim::SGD)) {
    masked_sgd(static_cast<torch::optim::SGD&>(opt), skips, side);
  } else if (type == typeid(torch::optim::Adam)) {
    masked_adam<torch::optim::AdamOptions, torch::optim::AdamParamState>(static_cast<torch::optim::Adam&>(opt), skips,
                                                                         side, /*decoupled=*/false);
  } else if (type == typeid(torch::optim::AdamW)) {
    masked_adam<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(static_cast<torch::optim::AdamW&>(opt),
                                                                           skips, side, /*decoupled=*/true);
  } else if (type == typeid(torch::optim::RMSprop)) {
    masked_rmsprop(static_cast<torch::optim::RMSprop&>(opt), skips, side);
  } else if (type == typeid(torch::optim::Adagrad)) {
    masked_adagrad(static_cast<torch::optim::Adagrad&>(opt), skips, side);
  } else if (type == typeid(torch::optim::LBFGS)) {
    throw std::invalid_argument(
        "ppe::amp::GradScaler::step: sync-free mode cannot step torch::optim::LBFGS (its closure and line search "
        "read values on the host, so its step cannot be masked on the device); use "
        "GradScalerOptions().sync_free(false)");
  } else {
    throw std::invalid_argument("ppe::amp::GradScaler::step: sync-free mode steps exactly torch::optim::SGD, Adam, "
                                "AdamW, RMSprop or Adagrad (ppe repeats their arithmetic), got " +
                                optimizer_name(opt) + "; use GradScalerOptions().sync_free(false)");
  }
  settle_masked(opt, side, /*cpu_only=*/true);
}

/// Installs the masked step in GradScaler at static initialisation.
inline const bool kMaskedStepInstalled = [] {
  masked_step_hooks().step = &masked_step;
  masked_step_hooks().settle = [](torch::optim::Optimizer& opt, MaskedOptimizerState& side) {
    settle_masked(opt, side, /*cpu_only=*/false);
  };
  return true;
}();

}  // namespace ppe::amp::detail
