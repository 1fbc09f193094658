#pragma once
/// \file
/// `ppe::optim::lr_scheduler::LRScheduler`: the base of the learning-rate
/// schedulers LibTorch 1.13 lacks, with the semantics of PyTorch 1.13's
/// `torch.optim.lr_scheduler._LRScheduler`:
///
///  - construction takes the first step (`last_epoch` -1 -> 0), so the rate
///    after `n` calls of `step()` is Python's after `n` calls;
///  - `step()` uses the class's chainable form (from the rates the optimizer
///    holds now), `step(epoch)` its closed form (from `base_lrs`) where the
///    class has one, as Python does;
///  - `base_lrs` are the param groups' `initial_lr`, which the first scheduler
///    attached to an optimizer records (Python's `setdefault`);
///  - `state_dict()` has Python's layout (the keys of `scheduler.__dict__`
///    without `optimizer`), so Python's `torch.load` reads it and a Python
///    scheduler's `load_state_dict` takes it.
///
/// The schedulers work on any `torch::optim::Optimizer` through its param
/// groups' `get_lr()`/`set_lr()`, and plug into the manager through
/// `ppe::training::extensions::LRScheduler`.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::optim::lr_scheduler {

/// One value for every param group, or one per group (Python's `float or
/// list` arguments such as OneCycleLR's `max_lr`): `0.1` or `{0.1, 0.2}`.
class PerGroup {
 public:
  PerGroup(double value) : values_{value}, scalar_(true) {}
  PerGroup(std::initializer_list<double> values) : values_(values) {}
  PerGroup(std::vector<double> values) : values_(std::move(values)) {}

  /// The values for `groups` param groups: a scalar repeated; a list of
  /// another length is a std::invalid_argument naming `who` and `name`.
  PPE_DECL std::vector<double> expand(std::size_t groups, std::string_view who, std::string_view name) const;
  bool scalar() const noexcept { return scalar_; }
  const std::vector<double>& values() const noexcept { return values_; }

 private:
  std::vector<double> values_;
  bool scalar_ = false;
};

class SequentialLR;

/// The values Python keeps in the param groups of `optimizer` for its
/// schedulers (`initial_lr`; OneCycleLR's `max_lr`, `min_lr`,
/// `max_momentum`, `base_momentum`), one map per group; empty when no
/// scheduler of the optimizer lives. Python's `Optimizer.state_dict()` has
/// them in its `param_groups`, and a Python OneCycleLR needs them after
/// `optimizer.load_state_dict`: an optimizer state meant for Python can add
/// them from here (ppe's optimizer state does not yet).
PPE_DECL std::vector<std::map<std::string, double, std::less<>>> param_group_extras(
    const torch::optim::Optimizer& optimizer);

namespace detail {

/// Python keeps schedule values in each param group's dict (`initial_lr`,
/// OneCycleLR's `max_lr`, ...). A LibTorch group has fixed options, so the
/// schedulers of one optimizer share a map per group instead, kept alive by
/// them: it lives while a scheduler of the optimizer does.
using GroupExtras = std::vector<std::map<std::string, double, std::less<>>>;

/// The extras of `optimizer`, shared by its live schedulers; created empty
/// unless `create` is false (then null when none live).
PPE_DECL std::shared_ptr<GroupExtras> group_extras(const torch::optim::Optimizer& optimizer, bool create = true);

/// Python's `a / b` on floats: a std::domain_error ("float division by
/// zero", Python's ZeroDivisionError) when `b` is 0, naming `who`.
PPE_DECL double py_div(double a, double b, std::string_view who);
/// Python's `a // b` on ints (floor); b must not be 0.
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Reads a saved state's fields; a missing key or a wrong kind is a
/// std::invalid_argument naming `who`, the key and what was expected.
PPE_DECL const State& state_field(const State& state, std::string_view key, std::string_view who);
PPE_DECL std::int64_t int_field(const State& state, std::string_view key, std::string_view who);
/// An int or a float (Python writes `eta_min=0` as an int).
PPE_DECL double number_field(const State& state, std::string_view key, std::string_view who);
PPE_DECL bool bool_field(const State& state, std::string_view key, std::string_view who);
/// A list of numbers; `size` (when given) is its required length.
PPE_DECL std::vector<double> number_list_field(const State& state, std::string_view key, std::string_view who,
                                               std::optional<std::size_t> size = std::nullopt);
/// A list State of the values.
PPE_DECL State number_list(const std::vector<double>& values);
/// The std::invalid_argument of a saved field of the wrong kind.
[[noreturn]] PPE_DECL void wrong_kind(const State& value, std::string_view key, std::string_view who,
                                      std::string_view expected);

}  // namespace detail

/// Python's `_LRScheduler` (see the file comment). A subclass implements
/// `get_lr()` (the chainable form) and, where Python's class has one,
/// `closed_form_lr()`; its constructor validates its arguments and then calls
/// `start(last_epoch, verbose)`, Python's `super().__init__`, which takes the
/// first step.
///
/// A scheduler holds its optimizer by reference: the optimizer must outlive it.
class LRScheduler {
 public:
  LRScheduler(const LRScheduler&) = default;
  LRScheduler(LRScheduler&&) = default;
  LRScheduler& operator=(const LRScheduler&) = default;
  LRScheduler& operator=(LRScheduler&&) = default;
  virtual ~LRScheduler() = default;

  /// Python's `step()`: counts the step, advances `last_epoch` and sets each
  /// group's rate from the chainable form. A step that throws (OneCycleLR
  /// past its end) changes nothing.
  PPE_DECL virtual void step();
  /// Python's `step(epoch)` (deprecated there, still used by SequentialLR at
  /// its milestones): sets `last_epoch` to `epoch` and the rates from the
  /// closed form where the class has one, else from the chainable form.
  PPE_DECL virtual void step(std::int64_t epoch);

  /// The rates the last step set, one per param group (Python's `get_last_lr()`).
  const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  /// Each group's `initial_lr` when the scheduler started.
  const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }
  /// The index of the last step: 0 after construction, n after n steps.
  std::int64_t last_epoch() const noexcept { return last_epoch_; }
  bool verbose() const noexcept { return verbose_; }
  torch::optim::Optimizer& optimizer() const noexcept { return *optimizer_; }
  /// "ppe::StepLR", ...: the prefix of this scheduler's messages.
  const std::string& name() const noexcept { return name_; }

  /// Python's layout: the class's own keys, then `base_lrs`, `last_epoch`,
  /// `verbose`, `_step_count`, `_get_lr_called_within_step` and `_last_lr`
  /// (in the order of Python's `__dict__`).
  virtual State state_dict() const = 0;
  /// Restores a state in that layout (this class's or Python's). Every field
  /// is checked before anything changes; a missing key or a wrong kind is a
  /// std::invalid_argument naming the key. The rates themselves are the
  /// optimizer's state, as in Python.
  virtual void load_state_dict(const State& state) = 0;

 protected:
  /// The base fields of a saved state, read and checked before any commit.
  struct BaseFields {
    std::vector<double> base_lrs, last_lr;
    std::int64_t last_epoch = 0, step_count = 0;
    bool verbose = false;
  };

  /// `name` is the class's name ("StepLR"); messages say "ppe::StepLR".
  PPE_DECL LRScheduler(torch::optim::Optimizer& optimizer, std::string_view name);

  /// Python's `_LRScheduler.__init__`: records `initial_lr` (last_epoch -1)
  /// or requires it (otherwise), sets `base_lrs`, then takes the first step.
  PPE_DECL void start(std::int64_t last_epoch, bool verbose);
  /// Python's `_initial_step`: resets the step count and steps.
  PPE_DECL void initial_step();

  /// The chainable form: the rates of a step to `last_epoch()` from the
  /// optimizer's current rates.
  virtual std::vector<double> get_lr() = 0;
  /// The closed form (from `base_lrs`), for `step(epoch)`; none by default.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }

  /// The optimizer's current rate of each param group.
  PPE_DECL std::vector<double> group_lrs() const;
  /// Sets each group's rate (printing when verbose, as Python's `print_lr`)
  /// and records them as the last rates. `epoch` is printed when given.
  PPE_DECL void apply_lrs(const std::vector<double>& lrs,
                          std::variant<std::monostate, std::int64_t, double> epoch = {});
  /// Group `g`'s extra value `key` (`initial_lr`, ...); std::invalid_argument
  /// when it was never set (Python's KeyError).
  PPE_DECL double extra(std::size_t g, std::string_view key) const;
  PPE_DECL void set_extra(std::size_t g, std::string_view key, double value);
  PPE_DECL bool has_extra(std::size_t g, std::string_view key) const;
  PPE_DECL std::size_t num_groups() const;

  /// Appends the base keys to `state` (a dict holding the class's own keys).
  PPE_DECL void write_base_state(State& state) const;
  PPE_DECL BaseFields read_base_state(const State& state) const;
  PPE_DECL void commit_base_state(BaseFields fields);

  std::vector<double> base_lrs_, last_lr_;
  std::int64_t last_epoch_ = -1;
  std::int64_t step_count_ = 0;
  bool verbose_ = false;

 private:
  friend class SequentialLR;

  torch::optim::Optimizer* optimizer_;
  std::shared_ptr<detail::GroupExtras> extras_;
  std::string name_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/lr_scheduler.ipp"
#endif
