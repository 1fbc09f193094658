#pragma once
/// \file
/// `ppe::nn::LazyModule`: the machinery shared by the lazy modules
/// (`LazyLinear`, `LazyConv1d/2d/3d`, `LazyBatchNorm1d/2d/3d`; PPE's
/// `LazyInitializationMixin`): parameters whose shapes are decided by the
/// first input.
///
/// A lazy parameter or buffer is registered at construction as a placeholder,
/// a tensor of shape `[0]`. The first forward (or a load of a saved state)
/// gives it its shape *in place* (`Tensor::set_` on the same TensorImpl), so
/// every handle to it stays valid: an optimizer built from `parameters()`
/// before the first forward updates the materialized parameters, and Adam's
/// per-parameter state (keyed by the TensorImpl, created at the first step)
/// has the right shape. PPE cannot do this (Python replaces the parameter
/// object; PPE warns when an optimizer sees one).
///
/// Saving and loading follow PPE: a model state (`ppe::training::ModelRef`,
/// snapshots) leaves placeholder parameters out and keeps placeholder buffers
/// as empty tensors; loading an initialized state into an uninitialized
/// module materializes it; loading an uninitialized state into an
/// initialized module is an error. `torch::save`/`torch::load` archives work
/// too (there the placeholders are saved as empty tensors).

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/serialize/input-archive.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/nn/modules/lazy_state_hooks.hpp"

namespace ppe::nn::detail {

/// Whether `t` is a lazy placeholder (a defined tensor of shape `[0]`).
PPE_DECL bool is_placeholder(const at::Tensor& t);
/// A placeholder (shape `[0]`) with the given dtype and device.
PPE_DECL at::Tensor placeholder(const at::TensorOptions& options = {});
/// Gives `t` the shape `sizes` (uninitialized values) keeping its TensorImpl,
/// so that every handle to `t` (an optimizer's) sees the new tensor.
PPE_DECL void materialize_tensor(const at::Tensor& t, at::IntArrayRef sizes);
/// Points a helper module's tensor member at ours, dropping the storage of
/// the helper's own (which its parameter dict still holds).
PPE_DECL void bind_tensor(at::Tensor& inner_member, const at::Tensor& ours);
/// Throws the error of a saved entry whose shape does not fit the module.
[[noreturn]] PPE_DECL void throw_bad_saved_shape(const std::string& module, const std::string& name,
                                                 at::IntArrayRef sizes, const std::string& expected);
/// Throws PPE's error for an uninitialized state loaded into an initialized module.
[[noreturn]] PPE_DECL void throw_uninitialized_into_initialized(const std::string& module, const std::string& name);

/// Restores the default CPU generator's state when it goes out of scope: the
/// LibTorch module a lazy module forwards to is built (and initialized by its
/// constructor) under it, so that only the real initialization draws numbers.
class CpuRngRestore {
 public:
  PPE_DECL CpuRngRestore();
  PPE_DECL ~CpuRngRestore();
  CpuRngRestore(const CpuRngRestore&) = delete;
  CpuRngRestore& operator=(const CpuRngRestore&) = delete;

 private:
  at::Tensor state_;
};

}  // namespace ppe::nn::detail

namespace ppe::nn {

/// A module that re-initializes its parameters on request (PPE's
/// `reset_parameters` protocol): `ExtendedSequential::repeat` in mode
/// `init` calls it on the copies. The lazy modules implement it; LibTorch's
/// modules are recognized without it; a user module opts in by deriving
/// from it.
class ResetParameters {
 public:
  /// Draws new initial values for the parameters (and resets buffers).
  virtual void reset_parameters() = 0;

 protected:
  ~ResetParameters() = default;
};

/// Base of the lazy modules (CRTP): `Derived` is the lazy module, `Inner`
/// the LibTorch module it behaves as once its shapes are known
/// (`torch::nn::LinearImpl`, ...). The lazy module owns the parameters and
/// buffers (registered under LibTorch's names); an `Inner` built when the
/// shapes are known is pointed at them and does the initialization
/// (`reset_parameters`) and the forward, so both are exactly LibTorch's.
///
/// `Derived` has a `weight` member (a placeholder until materialized; all
/// placeholders are materialized together) and provides `lazy_type_name()`
/// (for errors), `lazy_names()` (its placeholder parameters and buffers),
/// `features_from(name, sizes)` (the inferred size from a saved entry,
/// throwing when the shape does not fit), `lazy_shapes(n)` (each
/// placeholder's shape for size `n`), `inner_options()` (Inner's options for
/// the current shapes) and `bind_inner(Inner&)` (points Inner's members at
/// this module's tensors, with `detail::bind_tensor`). Its `forward` calls
/// `materialize_features(n)` while `!is_materialized()`, then
/// `inner().forward(...)`.
///
/// `Hooks` is the class that provides those members, `Derived` by default.
/// A class template that provides them for several `Derived` (the convolutions
/// and batch norms of each dimension) names itself: its constructor calls
/// `reset()`, which reaches the hooks before `Derived`'s part of the object
/// is constructed, and a cast to `Derived` there would be undefined behaviour
/// (UBSan's downcast check found it).
template <class Derived, class Inner, class Hooks = Derived>
class LazyModule : public torch::nn::Cloneable<Derived>, public LazyStateHooks, public ResetParameters {
 public:
  /// Initializes the parameters again, as LibTorch's `Inner` does (a no-op
  /// before the shapes are known: the first forward initializes them).
  void reset_parameters() override {
    if (!is_materialized()) return;
    Inner& in = inner();
    at::NoGradGuard no_grad;
    in.reset_parameters();
  }

  /// Whether the shapes are known (after the first forward or a load).
  bool is_materialized() const { return !detail::is_placeholder(derived().weight); }

  /// LazyStateHooks: whether `name` is one of this module's placeholders.
  bool is_placeholder(const std::string& name) const override {
    for (const auto& n : derived().lazy_names())
      if (n == name) {
        return detail::is_placeholder(find(name));
      }
    return false;
  }

  /// LazyStateHooks: materializes (and initializes) the module so that its
  /// entry `name` has the shape `sizes`; a no-op once materialized, or when
  /// `sizes` is a placeholder's (a saved buffer of an uninitialized module).
  void materialize(const std::string& name, at::IntArrayRef sizes) override {
    if (is_materialized() || (sizes.size() == 1 && sizes[0] == 0)) return;
    materialize_features(derived().features_from(name, sizes));
  }

  /// Loads a `torch::save` archive (PPE's load rules: an initialized archive
  /// materializes an uninitialized module; an uninitialized archive cannot
  /// be loaded into an initialized module).
  void load(torch::serialize::InputArchive& archive) override {
    if (is_materialized())
      for (const auto& name : derived().lazy_names()) {
        at::Tensor saved;
        const bool buffer = !this->named_parameters(false).contains(name);
        if (archive.try_read(name, saved, buffer) && detail::is_placeholder(saved))
          detail::throw_uninitialized_into_initialized(derived().lazy_type_name(), name);
      }
    torch::nn::Module::load(archive);  // Tensor::set_: the placeholders take the saved shapes in place
    inner_.reset();
  }

 protected:
  /// Gives the placeholders the shapes for size `n`, then initializes the
  /// module as LibTorch's `Inner` does.
  void materialize_features(std::int64_t n) {
    for (const auto& [name, shape] : derived().lazy_shapes(n)) detail::materialize_tensor(find(name), shape);
    bind(/*init=*/true);
  }

  /// The LibTorch module that runs the forward (built on first use, e.g.
  /// after a clone or a load), in this module's training mode.
  Inner& inner() {
    if (!inner_) bind(/*init=*/false);
    inner_->train(this->is_training());
    return *inner_;
  }

  /// Forgets the helper module (in `reset()`: a clone must not share it).
  void drop_inner() noexcept { inner_.reset(); }

 private:
  const Hooks& derived() const { return static_cast<const Hooks&>(*this); }
  Hooks& derived() { return static_cast<Hooks&>(*this); }

  // A handle to the parameter or buffer `name` (undefined when there is none).
  at::Tensor find(const std::string& name) const {
    if (const at::Tensor* p = this->parameters_.find(name)) return *p;
    const auto buffers = this->named_buffers(/*recurse=*/false);
    const at::Tensor* b = buffers.find(name);
    return b ? *b : at::Tensor();
  }

  void bind(bool init) {
    {
      detail::CpuRngRestore keep;  // Inner's constructor initializes its own tensors
      inner_ = std::make_shared<Inner>(derived().inner_options());
    }
    at::NoGradGuard no_grad;
    derived().bind_inner(*inner_);
    if (init) inner_->reset_parameters();
  }

  std::shared_ptr<Inner> inner_;
};

}  // namespace ppe::nn

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/nn/modules/impl/lazy.ipp"
#endif
