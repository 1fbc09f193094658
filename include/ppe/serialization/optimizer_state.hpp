#pragma once
/// \file
/// The state of a `torch::optim` optimizer as a `ppe::State`, in the layout of
/// Python's `torch.optim.Optimizer.state_dict()` (torch 1.13), so that a
/// snapshot's `optimizers/<name>` moves between LibTorch and Python:
///
/// ```
/// {"state": {<index>: {per-parameter state under Python's names}},
///  "param_groups": [{<every option under Python's name>, "params": [indices]}, ...]}
/// ```
///
/// Parameters are numbered in order across the groups, as Python does. Known
/// optimizers: SGD, Adam, AdamW, Adagrad, RMSprop and LBFGS (and classes
/// derived from them). Any other optimizer is saved with each group's `lr`
/// only, after one warning per type.
///
/// Which optimizer it is, is decided by the *static* type passed in (the type
/// given to the manager): detail/optimizer_policies.hpp holds one policy per
/// optimizer of optim/detail/options_table.hpp, which only declares the
/// LibTorch optimizer classes, because including their headers would more
/// than double the compile time of every translation unit that includes the
/// manager. A caller that can name an optimizer type has its header, and that
/// is all the code below needs. An optimizer held as a plain `torch::optim::Optimizer` is
/// therefore an unknown type (lr only, with a warning).
///
/// `state` is a `State::int_dict()`: its keys are the parameter indices,
/// pickled as integers as Python's are (looked up as "0", "1" in C++). One
/// deviation from Python that `ppe::State` imposes: tuples (Adam's `betas`)
/// are lists.
///
/// Cost: saving copies every state tensor (`detach().clone()`: one allocation
/// and one copy per tensor, e.g. two to three times the model's parameter
/// memory for Adam), so a later optimizer step cannot change a state that was
/// already taken; `StateCopy::Share` shares them instead, as Python does (a
/// snapshot written before training goes on takes that). Loading copies again (and casts to the parameter's dtype and
/// device, as Python does), so the optimizer never shares memory with the
/// State it was loaded from.

#include <ATen/core/Tensor.h>
#include <c10/util/Type.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/detail/options_table.hpp"
#include "ppe/serialization/detail/optimizer_policies.hpp"
#include "ppe/state.hpp"
#include "ppe/warnings.hpp"

namespace ppe::detail::optim_state {

/// T, made dependent on O: lets a template name an incomplete LibTorch class
/// whose definition is needed only at instantiation.
template <class T, class O>
struct dependent {
  using type = T;
};

template <class O>
std::string type_name(const O& opt) {
  return c10::demangle(typeid(opt).name());
}

/// Warns once per process and optimizer type that only `lr` is kept.
inline void warn_unknown_once(const std::string& type) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(type).second) return;
  }
  ppe::warn("the state of optimizer type " + type +
            " is saved and loaded with each param group's lr only: ppe knows the full state of "
            "torch::optim SGD, Adam, AdamW, Adagrad, RMSprop and LBFGS (pass the optimizer to the manager "
            "as its own type, not as torch::optim::Optimizer)");
}

/// `get_lr()` of options that may not implement it (the base class throws).
template <class Options>
std::optional<double> lr_of(const Options& o) {
  try {
    return o.get_lr();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ppe::detail::optim_state

namespace ppe::serialization {

/// The state of optimizer `opt` in the layout of Python's
/// `Optimizer.state_dict()` (see the file comment). O is the optimizer's
/// static type, which decides what is saved.
/// `copy`: whether the state tensors are cloned (the default; see the file
/// comment's cost) or shared with the optimizer.
template <class O>
State optimizer_state_dict(const O& opt, StateCopy copy = StateCopy::Clone) {
  namespace d = detail::optim_state;
  using P = typename d::policy_of<O>::type;
  State groups = State::list();
  State state = State::int_dict();
  std::int64_t index = 0;
  if constexpr (std::is_void_v<P>) d::warn_unknown_once(d::type_name(opt));
  for (const auto& group : opt.param_groups()) {
    State g;
    if constexpr (std::is_void_v<P>) {
      g = State::dict();
      if (auto lr = d::lr_of(group.options())) g.set("lr", *lr);
    } else {
      g = P::options(static_cast<const typename P::Options&>(group.options()));
    }
    State params = State::list();
    for (const auto& p : group.params()) {
      if constexpr (!std::is_void_v<P>) {
        auto it = opt.state().find(d::state_key<O>(p));
        if (it != opt.state().end() && it->second) {
          const auto* s = dynamic_cast<const typename P::ParamState*>(it->second.get());
          if (!s)
            throw std::runtime_error("ppe: optimizer " + d::type_name(opt) + " holds a per-parameter state of type " +
                                     d::type_name(*it->second) + " for parameter " + std::to_string(index) +
                                     ", not its own");
          state.set(std::to_string(index), P::param(*s, copy));
        }
      }
      params.as_list().emplace_back(index++);
    }
    g.set("params", std::move(params));
    groups.as_list().push_back(std::move(g));
  }
  return State::dict({{"state", std::move(state)}, {"param_groups", std::move(groups)}});
}

/// Restores options and per-parameter state saved by `optimizer_state_dict`
/// or by Python's `Optimizer.state_dict()` for the same parameters. `name`
/// (the manager's name for the optimizer) appears in errors. Everything is
/// checked before anything changes: a group or parameter count, a shape or a
/// kind that does not match is a std::runtime_error naming the optimizer, the
/// group and the parameter. As in Python, the loaded state replaces the whole
/// per-parameter state. Options missing from the saved groups keep their
/// values (states written with `lr` only still load).
///
/// This checks and stages the whole state and returns the function that
/// commits it (which cannot fail on bad input), so that a caller loading
/// several objects can check all of them before changing any
/// (`optimizer_load_state_dict` does both at once).
template <class O>
std::function<void()> optimizer_prepare_load(O& opt, const State& state, std::string_view name) {
  namespace d = detail::optim_state;
  using P = typename d::policy_of<O>::type;
  const d::Where where{"optimizer '" + std::string(name) + "' (" + d::type_name(opt) + ")", ""};
  if (!state.is_dict())
    where.fail("the saved state is a " + std::string(State::kind_name(state.kind())) + ", expected a dict");
  const State* saved_groups = state.find("param_groups");
  if (!saved_groups || !saved_groups->is_list()) where.fail("the saved state has no 'param_groups' list");
  const State* saved_state = state.find("state");
  if (saved_state && !saved_state->is_dict()) where.fail("the saved 'state' is not a dict");
  const auto& groups = saved_groups->as_list();
  auto& mine = opt.param_groups();
  if (groups.size() != mine.size())
    where.fail("it has " + std::to_string(mine.size()) + " param groups, the saved state has " +
               std::to_string(groups.size()));

  // Saved parameter id (as decimal text, the form of the state's keys) ->
  // (group, position).
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> ids;
  std::int64_t numel = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const d::Where wg = where.at("param group " + std::to_string(g));
    if (!groups[g].is_dict()) wg.fail("the saved group is not a dict");
    const State* params = groups[g].find("params");
    if (!params || !params->is_list()) wg.fail("the saved group has no 'params' list");
    if (params->size() != mine[g].params().size())
      wg.fail("it has " + std::to_string(mine[g].params().size()) + " parameters, the saved group has " +
              std::to_string(params->size()));
    for (std::size_t i = 0; i < params->size(); ++i) {
      const State& id = params->as_list()[i];
      if (!id.is_int() && !id.is_string()) wg.fail("a saved parameter id is neither an int nor a string");
      ids.emplace_back(id.is_int() ? std::to_string(id.as_int()) : id.as_string(), std::make_pair(g, i));
      numel += mine[g].params()[i].numel();
    }
  }
  if (saved_state)
    for (const auto& [key, value] : saved_state->as_dict()) {
      bool known = false;
      for (const auto& id : ids) known = known || id.first == key;
      if (!known) where.fail("the saved state has an entry for parameter id " + key + ", which no saved group lists");
      if (!value.is_dict())
        where.fail("the saved state of parameter id " + key + " is a " +
                   std::string(State::kind_name(value.kind())) + ", expected a dict");
    }

  // Stage: new options per group, new state per parameter.
  using BaseOptions = typename d::dependent<torch::optim::OptimizerOptions, O>::type;
  using BaseParamState = typename d::dependent<torch::optim::OptimizerParamState, O>::type;
  std::vector<std::unique_ptr<BaseOptions>> options;
  std::vector<std::pair<d::state_key_t<O>, std::unique_ptr<BaseParamState>>> staged;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const d::Where wg = where.at("param group " + std::to_string(g));
    auto o = mine[g].options().clone();
    if (const State* lr = groups[g].find("lr")) {
      if (!lr->is_number()) wg.fail("option 'lr' is a " + std::string(State::kind_name(lr->kind())) + ", expected a number");
      if constexpr (std::is_void_v<P>) {
        if (d::lr_of(*o)) o->set_lr(lr->as_double());
      } else {
        o->set_lr(lr->as_double());
      }
    }
    if constexpr (!std::is_void_v<P>) P::load_options(static_cast<typename P::Options&>(*o), groups[g], wg);
    options.push_back(std::move(o));
  }
  if constexpr (std::is_void_v<P>) {
    d::warn_unknown_once(d::type_name(opt));
    if (saved_state && saved_state->size() > 0)
      ppe::warn("the per-parameter state saved for " + where.optimizer + " is not loaded (unknown optimizer type)");
  } else {
    for (const auto& [id, pos] : ids) {
      const auto [g, i] = pos;
      const at::Tensor& p = mine[g].params()[i];
      const auto& o = static_cast<const typename P::Options&>(*options[g]);
      const d::Where wp = where.at("param group " + std::to_string(g) + ", parameter " + std::to_string(i) + " (id " +
                                   id + ", shape " + ppe::detail::python_shape(p.sizes()) + ")");
      const State* s = saved_state ? saved_state->find(id) : nullptr;
      std::unique_ptr<typename P::ParamState> loaded;
      if (s) {
        if constexpr (requires { P::load_param(*s, p, o, wp, numel); })
          loaded = P::load_param(*s, p, o, wp, numel);
        else
          loaded = P::load_param(*s, p, o, wp);
      } else {
        loaded = P::fresh(p, o);
      }
      if (loaded) staged.emplace_back(d::state_key<O>(p), std::move(loaded));
    }
  }

  // Commit: nothing below throws on bad input. (std::function needs a
  // copyable closure: the staged objects are shared.)
  struct Staged {
    std::vector<std::unique_ptr<BaseOptions>> options;
    std::vector<std::pair<d::state_key_t<O>, std::unique_ptr<BaseParamState>>> state;
  };
  auto st = std::make_shared<Staged>(Staged{std::move(options), std::move(staged)});
  return [&opt, st] {
    auto& groups_now = opt.param_groups();
    for (std::size_t g = 0; g < st->options.size(); ++g) groups_now[g].set_options(std::move(st->options[g]));
    if constexpr (!std::is_void_v<P>) {
      opt.state().clear();
      for (auto& [key, s] : st->state) opt.state()[key] = std::move(s);
    }
  };
}

/// Checks and loads in one step (see `optimizer_prepare_load`).
template <class O>
void optimizer_load_state_dict(O& opt, const State& state, std::string_view name) {
  optimizer_prepare_load(opt, state, name)();
}

#if defined(PPE_SEPARATE_COMPILATION)
// With separate compilation the six are instantiated once
// (serialization/impl/optimizer_state.ipp, compiled by ppe/impl/src.hpp), not
// in every TU that gives the manager an optimizer.
#define PPE_EXTERN_OPTIMIZER_STATE(N)                                                                           \
  extern template State optimizer_state_dict<torch::optim::N>(const torch::optim::N&, StateCopy);               \
  extern template std::function<void()> optimizer_prepare_load<torch::optim::N>(torch::optim::N&, const State&, \
                                                                                std::string_view);
PPE_FOR_EACH_TORCH_OPTIMIZER(PPE_EXTERN_OPTIMIZER_STATE)
#undef PPE_EXTERN_OPTIMIZER_STATE
#endif

}  // namespace ppe::serialization

// ppe 0.1 spelled these `ppe::serialization::optimizer_state_dict` etc.; the old names stay for one release.
namespace ppe {
using serialization::optimizer_state_dict;
using serialization::optimizer_prepare_load;
using serialization::optimizer_load_state_dict;
}  // namespace ppe
