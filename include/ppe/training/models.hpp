#pragma once
/// \file
/// `Models` and `Optimizers`: the named models and optimizers a manager works
/// on (PPE's `models` / `optimizers` dictionaries; a single one is "main").
///
/// This header does not include the LibTorch module or optimizer headers: it
/// only forward-declares them, and the code that touches them is templated so
/// that it is compiled where the caller has them complete.

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/amp/step_counter.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/nn/modules/lazy_state_hooks.hpp"
#include "ppe/state.hpp"
#include "ppe/serialization/detail/file_records.hpp"
#include "ppe/serialization/optimizer_state.hpp"

namespace torch::nn {
class Module;
}  // namespace torch::nn
namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::training {

namespace detail {

/// A placeholder of a lazy module found in a model: its dotted name, the
/// module and the module's own name for it.
struct LazyPlaceholder {
  std::string key;
  nn::LazyStateHooks* owner;
  std::string local;
};

/// Every parameter and buffer of `module`'s lazy submodules that is still a
/// placeholder (see `nn::LazyStateHooks`).
template <class M>
std::vector<LazyPlaceholder> lazy_placeholders(M& module) {
  std::vector<LazyPlaceholder> out;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    auto* hooks = dynamic_cast<nn::LazyStateHooks*>(item.value().get());
    if (!hooks) continue;
    const std::string prefix = item.key().empty() ? std::string() : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(false))
      if (hooks->is_placeholder(p.key())) out.push_back({prefix + p.key(), hooks, p.key()});
    for (const auto& b : item.value()->named_buffers(false))
      if (hooks->is_placeholder(b.key())) out.push_back({prefix + b.key(), hooks, b.key()});
  }
  return out;
}

/// PPE's model state: parameters and buffers by their dotted names. A lazy
/// module's placeholder parameters are left out (PPE's
/// LazyInitializationMixin.state_dict); its placeholder buffers are saved
/// (as empty tensors), as PPE's are.
template <class M>
State module_state_dict(M& module) {
  State out = State::dict();
  const std::vector<LazyPlaceholder> lazy = lazy_placeholders(module);
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    bool placeholder = false;
    for (const auto& l : lazy) placeholder = placeholder || l.key == item.key();
    if (!placeholder) out.set(item.key(), item.value().detach());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) out.set(item.key(), item.value().detach());
  return out;
}

/// Checks a saved model state against the module and returns the function
/// that loads it: on any missing, unexpected or mis-shaped entry nothing is
/// loaded and the error lists every difference.
template <class M>
std::function<void()> module_prepare_load(M& module, const State& state, std::string_view model_name) {
  if (!state.is_dict())
    throw std::invalid_argument("ppe: the state of model '" + std::string(model_name) + "' is a " +
                                std::string(State::kind_name(state.kind())) + ", expected a dict");
  // A lazy module's placeholders take their shapes from the saved tensors
  // (PPE's _lazy_load_hook): the modules are materialized (and initialized,
  // as at their first forward) before the shapes are compared; a placeholder
  // the state lacks stays one (the module was saved before its first forward).
  std::vector<std::string> lazy_absent;
  for (const auto& l : lazy_placeholders(module)) {
    const State* s = state.find(l.key);
    if (!s)
      lazy_absent.push_back(l.key);
    else if (s->is_tensor() && l.owner->is_placeholder(l.local))
      l.owner->materialize(l.local, s->as_tensor().sizes());
  }
  std::vector<std::pair<std::string, at::Tensor>> targets;
  for (const auto& item : module.named_parameters(true)) targets.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(true)) targets.emplace_back(item.key(), item.value());
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : targets) {
    const State* s = state.find(name);
    if (!s) {
      bool absent_placeholder = false;
      for (const auto& a : lazy_absent) absent_placeholder = absent_placeholder || a == name;
      if (!absent_placeholder) missing.push_back(name);
    } else if (!s->is_tensor() || s->as_tensor().sizes() != t.sizes()) {
      mismatched.push_back(name + (s->is_tensor() ? " (saved " + ppe::detail::python_shape(s->as_tensor().sizes()) +
                                                        ", model " + ppe::detail::python_shape(t.sizes()) + ")"
                                                  : " (saved value is not a tensor)"));
    }
  }
  for (const auto& [key, v] : state.as_dict()) {
    bool known = false;
    for (const auto& target : targets) known = known || target.first == key;
    if (!known) unexpected.push_back(key);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string msg = "ppe: cannot load the state of model '" + std::string(model_name) + "':";
    if (!missing.empty()) msg += " missing keys " + ppe::detail::python_str_list(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected keys " + ppe::detail::python_str_list(unexpected) + ";";
    if (!mismatched.empty()) msg += " shape mismatch " + ppe::detail::python_str_list(mismatched) + ";";
    msg.pop_back();
    throw std::runtime_error(msg);
  }
  // A tensor still in its file (a resume: serialization/detail/file_records.hpp)
  // is read straight into the parameter.
  return [targets = std::move(targets), &state] {
    for (const auto& [name, t] : targets)
      if (const State* s = state.find(name)) ppe::detail::copy_saved(t, s->as_tensor());
  };
}

/// Checks and loads in one step (see `module_prepare_load`).
template <class M>
void module_load_state_dict(M& module, const State& state, std::string_view model_name) {
  module_prepare_load(module, state, model_name)();
}

/// `(dotted name, address)` of every submodule of `module` (not itself).
template <class M>
std::vector<std::pair<std::string, const void*>> module_submodules(M& module) {
  std::vector<std::pair<std::string, const void*>> out;
  for (const auto& item : module.named_modules("", /*include_self=*/false))
    out.emplace_back(item.key(), static_cast<const void*>(item.value().get()));
  return out;
}

#if defined(PPE_SEPARATE_COMPILATION)
// ModelRef instantiates these for torch::nn::Module only; with separate
// compilation that happens once (training/impl/models.ipp, compiled by
// ppe/impl/src.hpp), not in every TU that gives the manager a model.
extern template State module_state_dict<torch::nn::Module>(torch::nn::Module&);
extern template std::function<void()> module_prepare_load<torch::nn::Module>(torch::nn::Module&, const State&,
                                                                             std::string_view);
extern template std::vector<std::pair<std::string, const void*>> module_submodules<torch::nn::Module>(
    torch::nn::Module&);
#endif

/// The optimizer type OptimizerRef was given: `O` itself or what a pointer
/// `O` points to. It decides which state is saved (serialization/optimizer_state.hpp).
template <class O>
struct held_optimizer {
  using type = std::remove_cvref_t<O>;
};
template <class O>
  requires requires(O& o) { o->param_groups(); }
struct held_optimizer<O> {
  using type = std::remove_cvref_t<decltype(*std::declval<O&>())>;
};

}  // namespace detail

/// A model held by a manager: a shared handle plus its state functions.
class ModelRef {
 public:
  /// A LibTorch module holder (`torch::nn::Linear`, `TORCH_MODULE` types) or a
  /// `std::shared_ptr` to a module.
  template <class H>
    requires(!std::is_same_v<std::remove_cvref_t<H>, ModelRef> &&
             (requires(H& h) { h.ptr(); } || requires(H& h) { h->named_parameters(); }))
  ModelRef(H&& holder) {
    auto ptr = [&] {
      if constexpr (requires { holder.ptr(); })
        return holder.ptr();
      else
        return holder;
    }();
    module_ = ptr;  // upcast to torch::nn::Module, complete where this is instantiated
    // Plain function pointers on torch::nn::Module: the functions are
    // instantiated for Module only (once, in ppe_separate, with separate
    // compilation; see the extern templates above).
    state_ = [](auto& m) { return detail::module_state_dict(m); };
    prepare_ = [](auto& m, const State& s, std::string_view n) { return detail::module_prepare_load(m, s, n); };
    submodules_ = [](auto& m) { return detail::module_submodules(m); };
  }

  const std::shared_ptr<torch::nn::Module>& module() const noexcept { return module_; }
  State state_dict() const { return state_(*module_); }
  void load_state_dict(const State& s, std::string_view name) const { prepare_(*module_, s, name)(); }
  /// Checks `s` (errors name the model `name`) and returns the function that
  /// loads it; `s` must outlive that function.
  std::function<void()> prepare_load(const State& s, std::string_view name) const {
    return prepare_(*module_, s, name);
  }
  /// `(dotted name, address)` of every submodule, for reporter observers.
  std::vector<std::pair<std::string, const void*>> submodules() const { return submodules_(*module_); }

 private:
  std::shared_ptr<torch::nn::Module> module_;
  std::vector<std::pair<std::string, const void*>> (*submodules_)(torch::nn::Module&) = nullptr;
  State (*state_)(torch::nn::Module&) = nullptr;
  std::function<void()> (*prepare_)(torch::nn::Module&, const State&, std::string_view) = nullptr;
};

/// An optimizer held by a manager (not owned when given by reference).
///
/// It also counts the optimizer's real steps (`amp::StepCounter`), because
/// LibTorch optimizers do not (Python's `optimizer._step_count`): `step()`
/// counts one; `step(scaler)` steps through a `ppe::amp::GradScaler` and
/// counts only the steps it applied, whether the scaler synchronises or not
/// (`GradScaler::step(optimizer, counter)`, the call ppe's logics and runtime
/// make too); code that steps the optimizer itself calls `record_step()`
/// after each step that really happened. Copies share the count, so the
/// manager, a trainer and its logic see the same one. It is not saved in
/// states (nor is Python's). LRScheduler's `wait_for_first_optimizer_step`
/// reads it.
///
/// A sync-free scaler's steps are applied or not on the device: they are
/// counted on the device and read once, when the count is asked, and the
/// scaler leaves a `state hook` here that writes its device step counts
/// into the optimizer's state before that state is saved or loaded.
class OptimizerRef {
 public:
  /// An optimizer by reference (it must outlive the manager) or a shared_ptr.
  template <class O>
    requires(!std::is_same_v<std::remove_cvref_t<O>, OptimizerRef> &&
             (requires(O& o) { o.param_groups(); } || requires(O& o) { o->param_groups(); }))
  OptimizerRef(O&& opt) {
    static_assert(std::is_lvalue_reference_v<O> || requires { opt->param_groups(); },
                  "ppe: an optimizer is held by reference, so a temporary would dangle. Fix: pass an optimizer "
                  "variable that outlives the manager, or a std::shared_ptr to the optimizer");
    if constexpr (requires { opt->param_groups(); }) {
      owner_ = opt;
      opt_ = opt.get();
    } else {
      opt_ = &opt;
    }
    // Compiled here, where the optimizer's own type is complete: the state
    // functions see that type, not the base class (serialization/optimizer_state.hpp).
    using Held = typename detail::held_optimizer<O>::type;
    state_ = [](torch::optim::Optimizer& x, StateCopy copy) {
      return serialization::optimizer_state_dict(static_cast<Held&>(x), copy);
    };
    prepare_ = [](torch::optim::Optimizer& x, const State& s, std::string_view n) {
      return serialization::optimizer_prepare_load(static_cast<Held&>(x), s, n);
    };
    zero_grad_ = [](auto& x) { x.zero_grad(); };
    step_ = [](auto& x) { x.step(); };
  }

  torch::optim::Optimizer& optimizer() const noexcept { return *opt_; }
  /// The optimizer's state (serialization/optimizer_state.hpp); `copy`:
  /// whether its tensors are cloned or shared.
  State state_dict(StateCopy copy = StateCopy::Clone) const {
    run_state_hook();
    return state_(*opt_, copy);
  }
  void load_state_dict(const State& s, std::string_view name) const {
    run_state_hook();
    prepare_(*opt_, s, name)();
  }
  /// Checks and stages `s` (errors name the optimizer `name`) and returns the
  /// function that commits it.
  std::function<void()> prepare_load(const State& s, std::string_view name) const {
    run_state_hook();
    return prepare_(*opt_, s, name);
  }
  /// Sets the function run on the optimizer before its state is saved or
  /// loaded (shared by copies; see `amp::StepCounter::set_state_hook`).
  void set_state_hook(const void* owner, std::function<void(torch::optim::Optimizer&)> hook) const {
    steps_->set_state_hook(owner, std::move(hook));
  }
  void zero_grad() const { zero_grad_(*opt_); }
  /// Steps the optimizer and counts the step.
  void step() const {
    step_(*opt_);
    steps_->record();
  }
  /// Steps the optimizer through `scaler` (a `ppe::amp::GradScaler`) and
  /// counts the step only if the scaler applied it (a sync-free scaler's
  /// decision is counted on the device). Returns what `scaler.step` returns.
  /// Call `scaler.update()` after the iteration's steps, as usual.
  template <class Scaler>
    requires requires(Scaler& s, ppe::detail::dependent_t<torch::optim::Optimizer, Scaler>& o, amp::StepCounter& c) {
      { s.step(o, c) } -> std::convertible_to<bool>;
    }
  bool step(Scaler& scaler) const {
    return scaler.step(static_cast<ppe::detail::dependent_t<torch::optim::Optimizer, Scaler>&>(*opt_), *steps_);
  }
  /// Counts a step of the optimizer taken outside `step()`.
  void record_step() const noexcept { steps_->record(); }
  /// Counts `applied` steps (a 0-dim integer tensor, 0 or 1, on any device:
  /// `GradScaler::step_applied`) without reading it: it is summed on its device.
  void record_step(const at::Tensor& applied) const { steps_->record(applied); }
  /// The steps counted since this handle was made (shared by its copies).
  /// Steps recorded as device flags are read here: one host read (a
  /// synchronisation on an accelerator) when some are pending.
  std::int64_t step_count() const { return steps_->count(); }
  /// Whether a step was counted: reads pending device flags only while none
  /// is known yet, so that asking at every iteration stops costing once the
  /// optimizer has stepped.
  bool has_stepped() const { return steps_->has_stepped(); }
  /// The step counter (shared by copies): what a runtime that steps the
  /// optimizer records into (`runtime::CodeBlock::step_counters`).
  amp::StepCounter& step_counter() const noexcept { return *steps_; }

 private:
  torch::optim::Optimizer* opt_ = nullptr;
  std::shared_ptr<void> owner_;
  State (*state_)(torch::optim::Optimizer&, StateCopy) = nullptr;
  std::function<void()> (*prepare_)(torch::optim::Optimizer&, const State&, std::string_view) = nullptr;
  void (*zero_grad_)(torch::optim::Optimizer&) = nullptr;
  void (*step_)(torch::optim::Optimizer&) = nullptr;
  void run_state_hook() const { steps_->run_state_hook(*opt_); }

  // The count and the state hook, shared by copies.
  std::shared_ptr<amp::StepCounter> steps_ = std::make_shared<amp::StepCounter>();
};

namespace detail {
template <class Ref>
class Named {
 public:
  using Item = std::pair<std::string, Ref>;
  Named() = default;
  Named(std::initializer_list<Item> items) : items_(items) { check_unique(); }
  template <class X>
    requires std::is_constructible_v<Ref, X&&>
  Named(X&& single) {
    items_.emplace_back("main", Ref(std::forward<X>(single)));
  }

  const std::vector<Item>& items() const noexcept { return items_; }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  const Ref* find(std::string_view name) const noexcept {
    for (const auto& [n, r] : items_)
      if (n == name) return &r;
    return nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& item : items_) out.push_back(item.first);
    return out;
  }
  /// Optimizers: counts a step of the optimizer named `name` that was
  /// stepped outside the manager (see `OptimizerRef::record_step`), e.g.
  /// `optimizer.step(); manager.optimizers().record_step("main");`.
  void record_step(std::string_view name = "main") const
    requires requires(const Ref& r) { r.record_step(); }
  {
    named_or_throw(name, "record_step").record_step();
  }
  /// Optimizers: steps the optimizer named `name` through `scaler` (a
  /// `ppe::amp::GradScaler`) and counts the step if it was applied (see
  /// `OptimizerRef::step(scaler)`): `manager.optimizers().step(scaler);`
  /// then `scaler.update();`. Returns what `scaler.step` returns.
  template <class Scaler>
    requires requires(const Ref& r, Scaler& s) { r.step(s); }
  bool step(Scaler& scaler, std::string_view name = "main") const {
    return named_or_throw(name, "step").step(scaler);
  }
  auto begin() const noexcept { return items_.begin(); }
  auto end() const noexcept { return items_.end(); }
  /// Replaces the item named `name`, or adds it last.
  void set(std::string name, Ref ref) {
    if (name.empty()) throw std::invalid_argument("ppe: the name of a model or optimizer must not be empty");
    for (auto& [n, r] : items_)
      if (n == name) {
        r = std::move(ref);
        return;
      }
    items_.emplace_back(std::move(name), std::move(ref));
  }

 private:
  const Ref& named_or_throw(std::string_view name, const char* who) const {
    if (const Ref* r = find(name)) return *r;
    throw std::out_of_range("ppe: " + std::string(who) + ": no optimizer named '" + std::string(name) +
                            "'; optimizers: " + ppe::detail::python_str_list(names()));
  }
  void check_unique() const {
    for (std::size_t i = 0; i < items_.size(); ++i)
      for (std::size_t j = i + 1; j < items_.size(); ++j)
        if (items_[i].first == items_[j].first)
          throw std::invalid_argument("ppe: the name '" + items_[i].first + "' is given twice");
  }
  std::vector<Item> items_;
};
}  // namespace detail

/// Named models: `Models{{"gen", g}, {"dis", d}}`, or one model named "main".
using Models = detail::Named<ModelRef>;
/// Named optimizers: `Optimizers{{"gen", og}, {"dis", od}}`, or one named "main".
using Optimizers = detail::Named<OptimizerRef>;

}  // namespace ppe::training

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/impl/models.ipp"
#endif
