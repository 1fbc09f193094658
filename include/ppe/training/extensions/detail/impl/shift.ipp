// Definitions of training/extensions/detail/shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/detail/options_table.hpp"
#include "ppe/training/extensions/detail/shift.hpp"
#include "ppe/training/models.hpp"

namespace ppe::training::extensions::detail {

namespace shift_options {

/// What a lookup found: whether the options are of a known type (its name and
/// option names, for messages) and where the option is (null: no such option).
struct Lookup {
  bool known = false;
  std::string type;
  std::string names;
  double* slot = nullptr;
};

inline Lookup lookup(torch::optim::OptimizerOptions& options, std::string_view name, bool with_names) {
  Lookup out;
  out.known = ppe::optim::detail::visit_torch_options(options, [&](auto entry, auto& typed) {
    out.type = "torch::optim::" + std::string(entry.name) + "Options";
    ppe::optim::detail::for_each_double_option(entry, [&](const auto& option) {
      if (option.name == name) out.slot = &option.ref(typed);
      if (with_names) out.names += (out.names.empty() ? "" : ", ") + std::string(option.name);
    });
  });
  return out;
}

/// The slot of `name` in `options`; null for "lr" of an unknown options type
/// (the virtual get_lr/set_lr serve it); otherwise std::invalid_argument.
inline double* slot_or_throw(torch::optim::OptimizerOptions& options, const std::string& name) {
  Lookup found = lookup(options, name, false);
  if (found.slot) return found.slot;
  if (!found.known && name == "lr") return nullptr;
  if (found.known) {
    found = lookup(options, name, true);
    throw std::invalid_argument("ppe: the optimizer's options (" + found.type + ") have no option '" + name +
                                "' to shift (by name: " + found.names +
                                "); for another option, give a ShiftAttribute with a getter and a setter");
  }
  throw std::invalid_argument("ppe: the optimizer's options are of a type ppe does not know, so of its options only "
                              "'lr' can be shifted by name, not '" +
                              name + "'; give a ShiftAttribute with a getter and a setter");
}

}  // namespace shift_options

// ---- ShiftTarget ------------------------------------------------------------

PPE_DECL ShiftTarget::ShiftTarget(std::string_view who, ShiftAttribute attribute, torch::optim::Optimizer* optimizer,
                                  std::string optimizer_name, std::optional<std::int64_t> param_group)
    : who_(who),
      attribute_(std::move(attribute)),
      optimizer_(optimizer),
      optimizer_name_(std::move(optimizer_name)),
      param_group_(param_group) {
  if (!optimizer_ && optimizer_name_.empty())
    throw std::invalid_argument(std::string(who_) +
                                ": no optimizer to shift: give one (options.optimizer(opt)) or the name of one of "
                                "the manager's (options.optimizer_name, \"main\" by default), not an empty name");
}

PPE_DECL torch::optim::Optimizer& ShiftTarget::optimizer(Manager& manager) const {
  if (optimizer_) return *optimizer_;
  if (const OptimizerRef* o = manager.optimizers().find(optimizer_name_)) return o->optimizer();
  throw std::out_of_range(std::string(who_) + ": no optimizer was given and the manager has no optimizer named '" +
                          optimizer_name_ + "' (its optimizers: " +
                          ppe::detail::python_str_list(manager.optimizers().names()) +
                          "); give one with options.optimizer(opt), or its name with options.optimizer_name(name)");
}

PPE_DECL std::vector<std::size_t> ShiftTarget::groups(const torch::optim::Optimizer& optimizer) const {
  const auto n = static_cast<std::int64_t>(optimizer.param_groups().size());
  if (n == 0) throw std::invalid_argument(std::string(who_) + ": the optimizer has no param groups to shift");
  if (!param_group_) {
    std::vector<std::size_t> all(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  const std::int64_t i = *param_group_;
  if (i < -n || i >= n)
    throw std::out_of_range(std::string(who_) + ": param_group " + std::to_string(i) +
                            " is out of range: the optimizer has " + std::to_string(n) +
                            " param group(s), so the index must be in [" + std::to_string(-n) + ", " +
                            std::to_string(n - 1) + "]");
  return {static_cast<std::size_t>(i < 0 ? i + n : i)};
}

PPE_DECL double ShiftTarget::read(Manager& manager) const {
  const torch::optim::Optimizer& opt = optimizer(manager);
  const std::vector<std::size_t> selected = groups(opt);
  const double first = attribute_.get(opt.param_groups()[selected.front()].options());
  for (std::size_t k = 1; k < selected.size(); ++k) {
    const double v = attribute_.get(opt.param_groups()[selected[k]].options());
    if (v != first)
      throw std::invalid_argument(
          std::string(who_) + ": the optimizer's param groups hold different values of '" + attribute_.name() +
          "' (" + ppe::detail::python_float_repr(first) + " in group " + std::to_string(selected.front()) + ", " +
          ppe::detail::python_float_repr(v) + " in group " + std::to_string(selected[k]) +
          "), so there is no one initial value to read: give init, or select one group with param_group");
  }
  return first;
}

PPE_DECL void ShiftTarget::write(Manager& manager, double value, std::int64_t count) const {
  if (!std::isfinite(value))
    throw std::domain_error(std::string(who_) + ": the value of '" + attribute_.name() + "' at call " +
                            std::to_string(count) + " is " + ppe::detail::python_float_repr(value) +
                            ", not a finite number; nothing was written (check the shift's arguments)");
  torch::optim::Optimizer& opt = optimizer(manager);
  for (std::size_t g : groups(opt)) attribute_.set(opt.param_groups()[g].options(), value);
}

// ---- checks -----------------------------------------------------------------

PPE_DECL void check_finite(std::string_view who, std::string_view what, double value) {
  if (!std::isfinite(value))
    throw std::invalid_argument(std::string(who) + ": " + std::string(what) + " must be a finite number, got " +
                                ppe::detail::python_float_repr(value));
}

PPE_DECL void check_target(std::string_view who, const std::optional<double>& target) {
  if (!target) return;
  check_finite(who, "target", *target);
  if (*target == 0)
    throw std::invalid_argument(std::string(who) +
                                ": target must not be 0 (the value is compared with the target by their ratio, as in "
                                "Chainer); leave target unset for no clipping");
}

PPE_DECL std::int64_t count_state(const State& state, std::string_view key, std::string_view who) {
  const State* v = state.find(key);
  if (!v) throw std::invalid_argument(std::string(who) + ": the saved state has no '" + std::string(key) + "' entry");
  if (!v->is_int() || v->as_int() < 0)
    throw std::invalid_argument(std::string(who) + ": the saved '" + std::string(key) + "' is " +
                                (v->is_int() ? std::to_string(v->as_int())
                                             : "a " + std::string(State::kind_name(v->kind()))) +
                                ", expected a non-negative int (a call count)");
  return v->as_int();
}

PPE_DECL std::optional<double> optional_number_state(const State& state, std::string_view key, std::string_view who,
                                                     bool required) {
  const State* v = state.find(key);
  if (!v) {
    if (!required) return std::nullopt;
    throw std::invalid_argument(std::string(who) + ": the saved state has no '" + std::string(key) + "' entry");
  }
  if (v->is_none()) return std::nullopt;
  if (!v->is_number())
    throw std::invalid_argument(std::string(who) + ": the saved '" + std::string(key) + "' is a " +
                                std::string(State::kind_name(v->kind())) + ", expected a number or None");
  return v->as_double();
}

PPE_DECL State init_shift_state(std::int64_t t, const std::optional<double>& last_value,
                                const std::optional<double>& init) {
  return State::dict({{"_t", t}, {"_last_value", optional_number(last_value)}, {"_init", optional_number(init)}});
}

PPE_DECL void load_init_shift_state(const State& state, std::string_view who, std::int64_t& t,
                                    std::optional<double>& last_value, std::optional<double>& init, bool init_given) {
  const std::int64_t saved_t = count_state(state, "_t", who);
  const std::optional<double> last = optional_number_state(state, "_last_value", who, true);
  const std::optional<double> saved_init = optional_number_state(state, "_init", who, false);
  t = saved_t;
  last_value = last;
  // A given init is the user's; a saved one stands for init=None (Chainer's and
  // pytorch-extensions' states have none: the optimizer is read at initialize).
  if (!init_given) init = saved_init;
}

}  // namespace ppe::training::extensions::detail

namespace ppe::training::extensions {

PPE_DECL ShiftAttribute::ShiftAttribute(std::string name) : name_(std::move(name)) {
  const std::vector<std::string>& known = names();
  for (const auto& k : known)
    if (k == name_) return;
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw std::invalid_argument("ppe: unknown optimizer attribute '" + name_ + "' to shift; by name: " + list +
                              " (which of them an optimizer has depends on its type); for another option, give a "
                              "ShiftAttribute with a getter and a setter");
}

PPE_DECL ShiftAttribute::ShiftAttribute(std::string name, Getter get, Setter set)
    : name_(std::move(name)), get_(std::move(get)), set_(std::move(set)) {
  if (name_.empty()) throw std::invalid_argument("ppe: a ShiftAttribute needs a name (for messages), got \"\"");
  if (!get_ || !set_)
    throw std::invalid_argument("ppe: the ShiftAttribute '" + name_ + "' needs a getter and a setter, got an empty " +
                                (get_ ? "setter" : "getter"));
}

PPE_DECL double ShiftAttribute::get(const torch::optim::OptimizerOptions& options) const {
  if (get_) return get_(options);
  // The lookup hands out a writable slot; reading through it changes nothing.
  auto& o = const_cast<torch::optim::OptimizerOptions&>(options);
  if (double* slot = detail::shift_options::slot_or_throw(o, name_)) return *slot;
  return options.get_lr();
}

PPE_DECL void ShiftAttribute::set(torch::optim::OptimizerOptions& options, double value) const {
  if (set_) return set_(options, value);
  if (double* slot = detail::shift_options::slot_or_throw(options, name_))
    *slot = value;
  else
    options.set_lr(value);
}

PPE_DECL const std::vector<std::string>& ShiftAttribute::names() {
  // Every optimizer's, in the table's order, each name once.
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    ppe::optim::detail::any_torch_optimizer([&]<class O>(std::type_identity<O>) {
      ppe::optim::detail::for_each_double_option(ppe::optim::detail::TorchOptimizer<O>{}, [&](const auto& option) {
        if (std::find(out.begin(), out.end(), option.name) == out.end()) out.emplace_back(option.name);
      });
      return false;
    });
    return out;
  }();
  return all;
}

}  // namespace ppe::training::extensions
