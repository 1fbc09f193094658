#pragma once
/// \file
/// `observe_value` and `observe_lr` (PPE's `ppe.training.extensions.observe_value`
/// / `observe_lr`): extensions that write a value into the manager's
/// observation, by default once per epoch.
///
/// Both return an `Entry` (made with `make_extension`) with PPE's defaults:
/// trigger `ppe::epochs(1)`, priority `kPriorityWriter` (so readers such as
/// LogReport see the value in the same iteration) and name `"_observe_value"`
/// (PPE's: the name of its inner function; a second one becomes
/// `"_observe_value_1"`). Override the trigger with the last argument, the
/// name by assigning `entry.name`.
///
/// The value is written directly into `manager.observation()`, as PPE does,
/// not through the reporter: it is not prefixed with an observer name.
///
/// This header does not include the LibTorch optimizer headers: `observe_lr`
/// is a template compiled where the optimizer type is complete.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::detail {
/// `index` into `count` param groups, Python style (negative counts from the
/// end); an error naming both when out of range.
PPE_DECL std::size_t lr_param_group_index(std::int64_t index, std::size_t count);
}  // namespace ppe::training::detail

namespace ppe::training::extensions {

/// The default name of `observe_value`/`observe_lr` entries (PPE's).
inline constexpr std::string_view kObserveValueName = "_observe_value";

/// An extension that sets `observation[key] = fn(manager)`. `fn` takes the
/// `Manager&` and returns a number, a tensor (stored detached) or a
/// `ppe::reporting::Value` (a deferred callable is stored as is and evaluated
/// by whoever reads it). `trigger` defaults to every epoch.
template <class F, class T = triggers::IntervalTrigger>
auto observe_value(std::string key, F fn, T trigger = ppe::epochs(1)) {
  static_assert(std::is_invocable_v<F&, Manager&>,
                "ppe::training::extensions::observe_value: the function must be callable as fn(ppe::training::Manager&)");
  static_assert(std::is_constructible_v<reporting::Value, std::invoke_result_t<F&, Manager&>>,
                "ppe::training::extensions::observe_value: the function must return a number, a torch::Tensor or a "
                "ppe::reporting::Value");
  if (key.empty()) throw std::invalid_argument("ppe: observe_value needs a non-empty observation key");
  return make_extension(
      [key = std::move(key), fn = std::move(fn)](Manager& manager) mutable {
        // Detached as the reporter stores tensors (PPE stores what fn returns):
        // the observation must not keep an autograd graph alive.
        manager.observation().set(key, reporting::detached(reporting::Value(fn(manager))));
      },
      std::move(trigger), std::string(kObserveValueName), priority<kPriorityWriter>);
}

/// An extension that observes the learning rate of `optimizer`'s parameter
/// group `param_group` (negative: from the end, as Python) under
/// `observation_key`. Works with every `torch::optim` optimizer
/// (`param_groups()[i].options().get_lr()`). The optimizer is taken by
/// reference (it must outlive the manager) or as a `std::shared_ptr`. The
/// index is checked now and at every call (groups may be added later).
template <class O, class T = triggers::IntervalTrigger>
  requires(requires(O& o) { o.param_groups(); } || requires(O& o) { o->param_groups(); })
auto observe_lr(O&& optimizer, std::int64_t param_group = 0, std::string observation_key = "lr",
                T trigger = ppe::epochs(1)) {
  static_assert(std::is_lvalue_reference_v<O> || requires { optimizer->param_groups(); },
                "ppe: observe_lr holds the optimizer by reference, so a temporary would dangle. Fix: pass an "
                "optimizer variable that outlives the manager, or a std::shared_ptr to the optimizer");
  // A pointer to the optimizer, owning when given a shared_ptr.
  auto handle = [&] {
    if constexpr (requires { optimizer->param_groups(); })
      return std::remove_cvref_t<O>(optimizer);
    else
      return &optimizer;
  }();
  ppe::training::detail::lr_param_group_index(param_group, handle->param_groups().size());
  return observe_value(
      std::move(observation_key),
      [handle = std::move(handle), param_group](Manager&) {
        auto& groups = handle->param_groups();
        return groups[ppe::training::detail::lr_param_group_index(param_group, groups.size())].options().get_lr();
      },
      std::move(trigger));
}

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/value_observation.ipp"
#endif
