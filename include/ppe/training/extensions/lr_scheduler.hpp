#pragma once
/// \file
/// `ppe::training::extensions::LRScheduler` (PPE's `extensions.LRScheduler`):
/// steps a learning-rate scheduler when its trigger fires (every epoch by
/// default) and keeps the scheduler's position in the manager's state, so a
/// resumed run continues the schedule where it was.
///
/// The scheduler is any object with `step()`: a LibTorch scheduler (a
/// `torch::optim::LRScheduler` such as `torch::optim::StepLR`) or a type of
/// your own. Its state is, in this order of preference, its own
/// `ppe::State state_dict() const` / `load_state_dict(const ppe::State&)`, or,
/// for a LibTorch scheduler, its step count in Python's layout (`last_epoch`
/// and `_step_count`; LibTorch schedulers keep their other settings in the
/// object, and the learning rates live in the optimizer's state). A
/// `ppe::optim::lr_scheduler::ReduceLROnPlateau` steps on the reported
/// `val/loss` unless given a stepper (PPE's default); a `stepper` gives any
/// scheduler the value it needs. With `wait_for_first_optimizer_step` the
/// schedule starts at the optimizer's first real step (GradScaler runs).

#include <torch/optim/schedulers/lr_scheduler.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/lr_scheduler/reduce_lr_on_plateau.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

namespace detail {
// LibTorch keeps a scheduler's step count in a protected member; a pointer to
// it, formed in a derived class, reads it on any scheduler.
struct SchedulerStepCount : torch::optim::LRScheduler {
  static constexpr auto member = &SchedulerStepCount::step_count_;
};

template <class S>
State scheduler_state_dict(const S& s) {
  if constexpr (requires {
                  { s.state_dict() } -> std::convertible_to<State>;
                }) {
    return State(s.state_dict());
  } else {
    static_assert(std::is_base_of_v<torch::optim::LRScheduler, S>,
                  "ppe::LRScheduler: the scheduler has no `ppe::State state_dict() const`; give it one (and "
                  "`load_state_dict(const ppe::State&)`) or derive it from torch::optim::LRScheduler");
    const auto count = static_cast<std::int64_t>(static_cast<const torch::optim::LRScheduler&>(s).*
                                                 SchedulerStepCount::member);
    // Python counts the scheduler's first step, taken by its constructor.
    return State::dict({{"last_epoch", count}, {"_step_count", count + 1}});
  }
}

template <class S>
void scheduler_load_state_dict(S& s, const State& state) {
  if constexpr (requires { s.load_state_dict(state); }) {
    s.load_state_dict(state);
  } else {
    const State* last = state.find("last_epoch");
    if (!last || !last->is_int() || last->as_int() < 0)
      throw std::invalid_argument(
          "ppe::LRScheduler: the saved scheduler state has no non-negative int 'last_epoch' (the step count of a "
          "LibTorch scheduler)");
    static_cast<torch::optim::LRScheduler&>(s).*SchedulerStepCount::member = static_cast<unsigned>(last->as_int());
  }
}
}  // namespace detail

/// Options of an LRScheduler (PPE's keyword arguments; the trigger is the
/// entry's, `ppe::epochs(1)` by default).
template <class S>
struct LRSchedulerOptions {
  /// Steps the scheduler (PPE's `stepper`); empty: `step_by_value("val/loss")`
  /// for a `ppe::optim::lr_scheduler::ReduceLROnPlateau` (or a type derived
  /// from it), `scheduler.step()` otherwise.
  PPE_ARG(std::function<void(Manager&, S&)>, stepper);
  /// Skips the firings before the scheduler's optimizer has stepped once
  /// (PPE's `wait_for_first_optimizer_step`): with a GradScaler the first
  /// iterations may skip their optimizer step, and the schedule should not
  /// run ahead of the optimizer. Reads the manager's step count of that
  /// optimizer (`OptimizerRef::step_count`), which counts the steps of
  /// `run_iteration({"main"}, ...)`, the steps the engine's `Logic` and
  /// `CodeBlockLogic` applied, and those of `manager.optimizers().step(scaler)`
  /// and `manager.optimizers().record_step(name)`.
  PPE_ARG(bool, wait_for_first_optimizer_step) = false;
  /// The manager's optimizer that `wait_for_first_optimizer_step` watches;
  /// unset: the one the scheduler's `optimizer()` returns (found by address)
  /// when it has that member (the schedulers of `ppe::optim::lr_scheduler`),
  /// else "main".
  PPE_ARG(std::optional<std::string>, optimizer);
};

/// A stepper for schedulers stepped with a reported value (PPE's
/// `LRScheduler.step_by_value(key)`): calls `scheduler.step(value)` with the
/// current observation's `key` as a double; a missing key is an error naming
/// the keys present.
template <class S>
struct ValueStepper {
  std::string key;
  void operator()(Manager& m, S& s) const {
    const reporting::Value* v = m.observation().find(key);
    if (!v)
      throw std::out_of_range("ppe::LRScheduler: '" + key + "' is not found in the reported values " +
                              m.observation().keys_text());
    s.step(v->to_double());
  }
};
/// (A named type, so that the LRScheduler can declare the key it reads to
/// the manager's report-key check.)
template <class S>
std::function<void(Manager&, S&)> step_by_value(std::string key) {
  return ValueStepper<S>{std::move(key)};
}

/// Steps `scheduler` at each firing. Held by reference: the scheduler (and
/// its optimizer) must outlive the manager.
template <class S>
class LRScheduler {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "LRScheduler";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::epochs(1); }

  /// A scheduler without `step()` needs a `stepper`, except a
  /// ReduceLROnPlateau (stepped on "val/loss" by default).
  explicit LRScheduler(S& scheduler, LRSchedulerOptions<S> options = {})
      : scheduler_(&scheduler),
        stepper_(std::move(options.stepper())),
        wait_(options.wait_for_first_optimizer_step()),
        optimizer_name_(std::move(options.optimizer())) {
    if constexpr (std::is_base_of_v<ppe::optim::lr_scheduler::ReduceLROnPlateau, S>)
      if (!stepper_) stepper_ = step_by_value<S>("val/loss");
    if constexpr (!requires { scheduler.step(); })
      if (!stepper_)
        throw std::invalid_argument("ppe::LRScheduler: the scheduler has no step(); give a stepper (e.g. "
                                    "step_by_value(\"val/loss\")) in the options");
  }

  /// With `wait_for_first_optimizer_step`, checks at the start that the
  /// watched optimizer is the manager's.
  void initialize(Manager& m) {
    if (wait_) (void)watched_optimizer(m);
  }

  void operator()(Manager& m) {
    // has_stepped reads steps counted on the device only until the first one.
    if (wait_ && !watched_optimizer(m).has_stepped()) return;
    if (stepper_) {
      stepper_(m, *scheduler_);
    } else {
      if constexpr (requires { scheduler_->step(); }) scheduler_->step();
    }
  }

  /// PPE's layout: `{"scheduler": <the scheduler's state>}`.
  State state_dict() const { return State::dict({{"scheduler", detail::scheduler_state_dict(*scheduler_)}}); }
  void load_state_dict(const State& state) {
    const State* s = state.find("scheduler");
    if (!s) throw std::invalid_argument("ppe::LRScheduler: the saved state has no 'scheduler' entry");
    detail::scheduler_load_state_dict(*scheduler_, *s);
  }

  S& scheduler() const noexcept { return *scheduler_; }

  /// The key a `step_by_value` stepper reads (the manager's report-key check).
  std::vector<std::string> consumed_keys() const {
    if (const auto* v = stepper_.template target<ValueStepper<S>>()) return {v->key};
    return {};
  }

 private:
  // The manager's optimizer whose step count `wait_for_first_optimizer_step`
  // reads; looked up at each firing, since `set_optimizer` may replace it.
  const OptimizerRef& watched_optimizer(const Manager& m) const {
    const Optimizers& optimizers = m.optimizers();
    const auto fail = [&](const std::string& what) -> std::invalid_argument {
      return std::invalid_argument("ppe::LRScheduler: wait_for_first_optimizer_step: " + what +
                                   "; the manager's optimizers: " + ppe::detail::python_str_list(optimizers.names()));
    };
    if (!optimizer_name_) {
      if constexpr (requires {
                      { scheduler_->optimizer() } -> std::convertible_to<const torch::optim::Optimizer&>;
                    }) {
        const torch::optim::Optimizer* target = &scheduler_->optimizer();
        for (const auto& item : optimizers)
          if (&item.second.optimizer() == target) return item.second;
        throw fail("the scheduler's optimizer is not one of the manager's (register it, or name the one to "
                   "watch with LRSchedulerOptions::optimizer)");
      }
    }
    const std::string& name = optimizer_name_ ? *optimizer_name_ : "main";
    if (const OptimizerRef* o = optimizers.find(name)) return *o;
    throw fail("no optimizer named '" + name + "' (name the one to watch with LRSchedulerOptions::optimizer)");
  }

  S* scheduler_;
  std::function<void(Manager&, S&)> stepper_;
  bool wait_;
  std::optional<std::string> optimizer_name_;
};

}  // namespace ppe::training::extensions
