#pragma once
/// \file
/// What the shift extensions (Chainer's ExponentialShift, LinearShift,
/// MultistepShift, PolynomialShift, StepShift, WarmupShift) share:
/// `ShiftAttribute`, the optimizer option a shift sets; the optimizer
/// arguments of their options structs; and `detail::ShiftTarget`, which finds
/// the optimizer and reads or writes the option in its param groups.

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/manager.hpp"

namespace ppe::training::extensions {

namespace detail {
/// Spelled as one name so that PPE_ARG's `const T&` is a const pointer, not a
/// pointer to const.
using OptimizerPointer = torch::optim::Optimizer*;
}  // namespace detail

/// The optimizer option that a shift extension changes (Chainer's `attr`),
/// read and written in the options of the optimizer's param groups.
///
/// By name (implicitly from a string), for LibTorch's optimizers:
///
/// | optimizer | names |
/// |---|---|
/// | `SGD` | `lr`, `momentum`, `dampening`, `weight_decay` |
/// | `Adam`, `AdamW` | `lr`, `beta1`, `beta2` (the two `betas`, Chainer's names), `eps`, `weight_decay` |
/// | `RMSprop` | `lr`, `alpha`, `eps`, `weight_decay`, `momentum` |
/// | `Adagrad` | `lr`, `lr_decay`, `eps`, `weight_decay` |
/// | `LBFGS` | `lr`, `tolerance_grad`, `tolerance_change` |
/// | any other | `lr` (`OptimizerOptions::get_lr` / `set_lr`) |
///
/// A name none of them has is `std::invalid_argument` at construction; a name
/// the optimizer's options do not have is `std::invalid_argument` when the
/// shift first reads or writes it. Any other option is a custom attribute: a
/// name (for messages), a getter and a setter.
class ShiftAttribute {
 public:
  using Getter = std::function<double(const torch::optim::OptimizerOptions&)>;
  using Setter = std::function<void(torch::optim::OptimizerOptions&, double)>;

  /// A built-in attribute (see the table). Implicit, so that a shift takes
  /// `"lr"` where it takes an attribute.
  PPE_DECL ShiftAttribute(std::string name);
  ShiftAttribute(const char* name) : ShiftAttribute(std::string(name)) {}
  /// A custom attribute; `get` and `set` must not be empty.
  PPE_DECL ShiftAttribute(std::string name, Getter get, Setter set);

  const std::string& name() const noexcept { return name_; }
  /// The attribute's value in `options`.
  PPE_DECL double get(const torch::optim::OptimizerOptions& options) const;
  /// Sets the attribute in `options`.
  PPE_DECL void set(torch::optim::OptimizerOptions& options, double value) const;

  /// The built-in names, as in the table.
  PPE_DECL static const std::vector<std::string>& names();

 private:
  std::string name_;
  Getter get_;  // empty for a built-in attribute
  Setter set_;
};

}  // namespace ppe::training::extensions

/// The optimizer arguments every shift's options struct has (the optimizer,
/// else the manager's optimizer by name; the param groups to change). `Self`
/// is the options struct.
#define PPE_SHIFT_OPTIMIZER_ARGS(Self)                                                              \
  /** The optimizer to change; null: the manager's optimizer named `optimizer_name` at each call   \
      (Chainer: the updater's "main" optimizer). Held by pointer: it must outlive the manager. */ \
  PPE_ARG(::ppe::training::extensions::detail::OptimizerPointer, optimizer) = nullptr; \
                                                                                                   \
 public:                                                                                           \
  /** Sets `optimizer` to `&o`. */                                                                 \
  Self& optimizer(torch::optim::Optimizer& o) noexcept {                                           \
    optimizer_ = &o;                                                                               \
    return *this;                                                                                  \
  }                                                                                                \
  /** The manager's optimizer used when `optimizer` is null. */                                    \
  PPE_ARG(std::string, optimizer_name) = "main";                                                   \
  /** The param group to change (negative: from the end); unset: every group. */                  \
  PPE_ARG(std::optional<std::int64_t>, param_group);                                               \
                                                                                                   \
 public:

namespace ppe::training::extensions::detail {

/// Where a shift writes: an attribute of the selected param groups of an
/// optimizer (the given one, or the manager's by name). `who` (a string
/// literal, e.g. "ppe::ExponentialShift") starts every message.
class ShiftTarget {
 public:
  PPE_DECL ShiftTarget(std::string_view who, ShiftAttribute attribute, torch::optim::Optimizer* optimizer,
                       std::string optimizer_name, std::optional<std::int64_t> param_group);
  template <class Options>
  ShiftTarget(std::string_view who, ShiftAttribute attribute, const Options& options)
      : ShiftTarget(who, std::move(attribute), options.optimizer(), options.optimizer_name(), options.param_group()) {}

  /// The optimizer: the given one, else the manager's (`std::out_of_range`
  /// naming the optimizers when it has none by that name).
  PPE_DECL torch::optim::Optimizer& optimizer(Manager& manager) const;
  /// The attribute in the selected groups; `std::invalid_argument` when the
  /// groups hold different values (give `init`, or select one group).
  PPE_DECL double read(Manager& manager) const;
  /// Sets the attribute in the selected groups. A value that is not finite
  /// (`count`: the shift's call count, for the message) is
  /// `std::domain_error`, and nothing is written.
  PPE_DECL void write(Manager& manager, double value, std::int64_t count) const;

  const ShiftAttribute& attribute() const noexcept { return attribute_; }
  std::string_view who() const noexcept { return who_; }

 private:
  /// The selected groups' indices; checks the index and that there is a group.
  PPE_DECL std::vector<std::size_t> groups(const torch::optim::Optimizer& optimizer) const;

  std::string_view who_;
  ShiftAttribute attribute_;
  torch::optim::Optimizer* optimizer_;
  std::string optimizer_name_;
  std::optional<std::int64_t> param_group_;
};

/// `std::invalid_argument` unless `value` is finite.
PPE_DECL void check_finite(std::string_view who, std::string_view what, double value);
/// `std::invalid_argument` unless `value` is finite and not 0 (a shift's
/// `target`: the clipping divides by it).
PPE_DECL void check_target(std::string_view who, const std::optional<double>& target);

/// A shift's call count `key` in `state`: a non-negative int
/// (`std::invalid_argument` naming the key otherwise).
PPE_DECL std::int64_t count_state(const State& state, std::string_view key, std::string_view who);
/// A number or None under `key` in `state`; a missing key is None when not
/// `required`, else `std::invalid_argument`, as a value of another kind.
PPE_DECL std::optional<double> optional_number_state(const State& state, std::string_view key, std::string_view who,
                                                     bool required);
/// A number, or None when unset.
inline State optional_number(const std::optional<double>& v) { return v ? State(*v) : State(); }

/// The state of a shift with an initial value (StepShift, ExponentialShift,
/// PolynomialShift): PPE's `{_t, _last_value, _init}`.
PPE_DECL State init_shift_state(std::int64_t t, const std::optional<double>& last_value,
                                const std::optional<double>& init);
/// Loads such a state into `t`, `last_value` and, unless the user gave the
/// initial value (`init_given`), `init`; every entry is checked before any
/// is assigned (`std::invalid_argument` naming `who` and the entry).
PPE_DECL void load_init_shift_state(const State& state, std::string_view who, std::int64_t& t,
                                    std::optional<double>& last_value, std::optional<double>& init, bool init_given);

/// Chainer's clipping at `target`: when the shift grows (`growing`), a value
/// past the target in the direction of growth becomes the target, else one
/// below it; by the ratio `value / target`, which holds for negative values
/// too (Chainer's comparison).
inline double clip_to_target(double value, const std::optional<double>& target, bool growing) {
  if (!target) return value;
  const double ratio = value / *target;
  return (growing ? ratio > 1 : ratio < 1) ? *target : value;
}

}  // namespace ppe::training::extensions::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/detail/impl/shift.ipp"
#endif
