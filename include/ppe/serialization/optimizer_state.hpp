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
/// given to the manager): this header only forward-declares the LibTorch
/// optimizer classes, because including their headers would more than double
/// the compile time of every translation unit that includes the manager. A
/// caller that can name an optimizer type has its header, and that is all the
/// code below needs. An optimizer held as a plain `torch::optim::Optimizer` is
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
/// already taken. Loading copies again (and casts to the parameter's dtype and
/// device, as Python does), so the optimizer never shares memory with the
/// State it was loaded from.

#include <ATen/core/Tensor.h>
#include <c10/util/C++17.h>
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

#include "ppe/state.hpp"
#include "ppe/warnings.hpp"

// Forward declarations only (see the file comment); every use below depends on
// a template parameter, so the classes need to be complete only where a
// function is instantiated for that optimizer.
namespace torch::optim {
class Optimizer;
class OptimizerOptions;
class OptimizerParamState;
class SGD;
struct SGDOptions;
struct SGDParamState;
class Adam;
struct AdamOptions;
struct AdamParamState;
class AdamW;
struct AdamWOptions;
struct AdamWParamState;
class Adagrad;
struct AdagradOptions;
struct AdagradParamState;
class RMSprop;
struct RMSpropOptions;
struct RMSpropParamState;
class LBFGS;
struct LBFGSOptions;
struct LBFGSParamState;
}  // namespace torch::optim

namespace ppe {

namespace detail::optim_state {

/// Thrown (as std::runtime_error) with the optimizer, group and parameter that
/// a loading problem concerns.
struct Where {
  std::string optimizer;  ///< "optimizer 'main' (torch::optim::Adam)"
  std::string place;      ///< "param group 0, parameter 1 (index 1)", or empty

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("ppe: cannot load the state of " + optimizer + ": " +
                             (place.empty() ? what : place + ": " + what));
  }
  Where at(std::string p) const { return Where{optimizer, std::move(p)}; }
};

inline std::string shape_text(at::IntArrayRef sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

/// The map key LibTorch's optimizers file a parameter's state under.
inline std::string state_key(const at::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }

/// A state tensor owned by the State: a later step updates the optimizer's
/// tensors in place, and must not reach a state already taken.
inline State owned(const at::Tensor& t) { return State(t.detach().clone()); }

/// Python keeps Adam's, AdamW's and Adagrad's step count as a float32 scalar
/// tensor on the CPU (torch 1.13); LibTorch keeps an integer.
inline State step_tensor(std::int64_t step, const at::Tensor& like) {
  return State(like.new_full({}, static_cast<double>(step), at::TensorOptions().dtype(at::kFloat).device(at::kCPU)));
}

// ---- reading saved values, with errors that say where -----------------------

inline const State* option(const State& group, std::string_view key, std::string_view want, const Where& w,
                           bool (State::*is)() const) {
  const State* v = group.find(key);
  if (v && !(v->*is)())
    w.fail("option '" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected " +
           std::string(want));
  return v;
}

/// A numeric option; a missing key keeps `current` (states written before the
/// option was saved still load).
inline double num(const State& group, std::string_view key, double current, const Where& w) {
  const State* v = option(group, key, "a number", w, &State::is_number);
  return v ? v->as_double() : current;
}
inline std::int64_t integer(const State& group, std::string_view key, std::int64_t current, const Where& w) {
  const State* v = option(group, key, "an int", w, &State::is_int);
  return v ? v->as_int() : current;
}
inline bool flag(const State& group, std::string_view key, bool current, const Where& w) {
  const State* v = option(group, key, "a bool", w, &State::is_bool);
  return v ? v->as_bool() : current;
}

/// Python-only options: `maximize=True` changes the result and LibTorch's
/// optimizers cannot do it, so it is refused; `foreach`, `capturable`,
/// `differentiable` and `fused` choose an implementation of the same update
/// and are ignored.
inline void refuse_maximize(const State& group, const Where& w) {
  if (const State* v = group.find("maximize"); v && !v->is_none() && (!v->is_bool() || v->as_bool()))
    w.fail("maximize=True cannot be loaded: LibTorch's optimizers have no maximize option");
}

/// Python's `betas`: a 2-tuple (a 2-list here) of numbers.
inline std::pair<double, double> betas(const State& group, std::pair<double, double> current, const Where& w) {
  const State* v = group.find("betas");
  if (!v) return current;
  if (!v->is_list() || v->size() != 2 || !v->as_list()[0].is_number() || !v->as_list()[1].is_number())
    w.fail("option 'betas' must be a list of two numbers");
  return {v->as_list()[0].as_double(), v->as_list()[1].as_double()};
}

/// A per-parameter count saved as an int, a float or a scalar tensor (Python's
/// form for Adam's `step`).
inline std::int64_t count(const State& s, std::string_view key, const Where& w) {
  const State* v = s.find(key);
  if (!v) w.fail("'" + std::string(key) + "' is missing from the saved state");
  if (v->is_int()) return v->as_int();
  if (v->is_double()) return static_cast<std::int64_t>(std::llround(v->as_double()));
  if (v->is_tensor() && v->as_tensor().numel() == 1)
    return static_cast<std::int64_t>(std::llround(v->as_tensor().item().toDouble()));
  w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected a count");
}

/// A scalar saved as a number or a one-element tensor (Python's LBFGS keeps
/// `t` either way).
inline double scalar(const State& s, std::string_view key, const Where& w) {
  const State* v = s.find(key);
  if (!v) w.fail("'" + std::string(key) + "' is missing from the saved state");
  if (v->is_number()) return v->as_double();
  if (v->is_tensor() && v->as_tensor().numel() == 1) return v->as_tensor().item().toDouble();
  w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected a number");
}

/// A saved tensor copied to `param`'s device (and dtype, when the parameter is
/// floating point, as Python's load_state_dict casts). With `sizes`, the shape
/// must match. An undefined tensor when absent (or None) and not `required`.
inline at::Tensor tensor(const State& s, std::string_view key, const at::Tensor& param, bool required,
                         std::optional<at::IntArrayRef> sizes, const Where& w) {
  const State* v = s.find(key);
  if (!v || v->is_none()) {
    if (required) w.fail("'" + std::string(key) + "' is missing from the saved state");
    return at::Tensor();
  }
  if (!v->is_tensor())
    w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) + ", expected a tensor");
  const at::Tensor& t = v->as_tensor();
  if (sizes && t.sizes() != *sizes)
    w.fail("'" + std::string(key) + "' has shape " + shape_text(t.sizes()) + ", expected " + shape_text(*sizes));
  const auto dtype = param.is_floating_point() ? param.scalar_type() : t.scalar_type();
  return t.to(param.device(), dtype, /*non_blocking=*/false, /*copy=*/true);
}

inline std::vector<at::Tensor> tensor_list(const State& s, std::string_view key, const at::Tensor& param,
                                           std::optional<at::IntArrayRef> sizes, const Where& w) {
  const State* v = s.find(key);
  if (!v) w.fail("'" + std::string(key) + "' is missing from the saved state");
  if (!v->is_list()) w.fail("'" + std::string(key) + "' is a " + std::string(State::kind_name(v->kind())) +
                            ", expected a list");
  std::vector<at::Tensor> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const State one = State::dict({{"item", v->as_list()[i]}});
    out.push_back(tensor(one, "item", param, /*required=*/false, sizes,
                         w.at(w.place + ", '" + std::string(key) + "'[" + std::to_string(i) + "]")));
  }
  return out;
}

inline State list_of(const auto& tensors) {
  State out = State::list();
  for (const at::Tensor& t : tensors) out.as_list().push_back(t.defined() ? owned(t) : State());
  return out;
}

// ---- one policy per optimizer: options and per-parameter state --------------
//
// Templates over the LibTorch types, so that those are needed complete only
// when a policy is used. `load_param` receives the group's new options.

template <class Opts, class PState>
struct SGDPolicy {
  using Options = Opts;
  using ParamState = PState;
  static State options(const Opts& o) {
    return State::dict({{"lr", o.lr()}, {"momentum", o.momentum()}, {"dampening", o.dampening()},
                        {"weight_decay", o.weight_decay()}, {"nesterov", o.nesterov()}, {"maximize", false},
                        {"foreach", State()}, {"differentiable", false}});
  }
  static void load_options(Opts& o, const State& g, const Where& w) {
    refuse_maximize(g, w);
    o.momentum(num(g, "momentum", o.momentum(), w));
    o.dampening(num(g, "dampening", o.dampening(), w));
    o.weight_decay(num(g, "weight_decay", o.weight_decay(), w));
    o.nesterov(flag(g, "nesterov", o.nesterov(), w));
  }
  static State param(const PState& s) {
    State out = State::dict();
    if (s.momentum_buffer().defined()) out.set("momentum_buffer", owned(s.momentum_buffer()));
    return out;
  }
  /// nullptr when there is nothing to keep: Python saves `momentum_buffer:
  /// None` when momentum is 0, LibTorch then keeps no state at all.
  static std::unique_ptr<PState> load_param(const State& s, const at::Tensor& p, const Opts&, const Where& w) {
    at::Tensor buf = tensor(s, "momentum_buffer", p, /*required=*/false, p.sizes(), w);
    if (!buf.defined()) return nullptr;
    auto out = std::make_unique<PState>();
    out->momentum_buffer(std::move(buf));
    return out;
  }
  static std::unique_ptr<PState> fresh(const at::Tensor&, const Opts&) { return nullptr; }
};

/// Adam and AdamW share their per-parameter state; their options differ in
/// Python's key order and the keys torch 1.13 adds.
template <class Opts, class PState, bool AdamW>
struct AdamPolicy {
  using Options = Opts;
  using ParamState = PState;
  static State options(const Opts& o) {
    State betas = State::list({std::get<0>(o.betas()), std::get<1>(o.betas())});
    State out = State::dict({{"lr", o.lr()}, {"betas", std::move(betas)}, {"eps", o.eps()},
                             {"weight_decay", o.weight_decay()}, {"amsgrad", o.amsgrad()}});
    if constexpr (AdamW) {
      for (auto& [k, v] : std::initializer_list<State::Item>{
               {"foreach", State()}, {"maximize", false}, {"capturable", false}})
        out.set(k, v);
    } else {
      for (auto& [k, v] : std::initializer_list<State::Item>{{"maximize", false},
                                                             {"foreach", State()},
                                                             {"capturable", false},
                                                             {"differentiable", false},
                                                             {"fused", false}})
        out.set(k, v);
    }
    return out;
  }
  static void load_options(Opts& o, const State& g, const Where& w) {
    refuse_maximize(g, w);
    const auto [b1, b2] = betas(g, {std::get<0>(o.betas()), std::get<1>(o.betas())}, w);
    o.betas(std::make_tuple(b1, b2));
    o.eps(num(g, "eps", o.eps(), w));
    o.weight_decay(num(g, "weight_decay", o.weight_decay(), w));
    o.amsgrad(flag(g, "amsgrad", o.amsgrad(), w));
  }
  static State param(const PState& s) {
    State out = State::dict({{"step", step_tensor(s.step(), s.exp_avg())},
                             {"exp_avg", owned(s.exp_avg())},
                             {"exp_avg_sq", owned(s.exp_avg_sq())}});
    if (s.max_exp_avg_sq().defined()) out.set("max_exp_avg_sq", owned(s.max_exp_avg_sq()));
    return out;
  }
  static std::unique_ptr<PState> load_param(const State& s, const at::Tensor& p, const Opts& o, const Where& w) {
    auto out = std::make_unique<PState>();
    out->step(count(s, "step", w));
    out->exp_avg(tensor(s, "exp_avg", p, true, p.sizes(), w));
    out->exp_avg_sq(tensor(s, "exp_avg_sq", p, true, p.sizes(), w));
    // LibTorch reads max_exp_avg_sq whenever amsgrad is on.
    out->max_exp_avg_sq(tensor(s, "max_exp_avg_sq", p, o.amsgrad(), p.sizes(), w));
    return out;
  }
  static std::unique_ptr<PState> fresh(const at::Tensor&, const Opts&) { return nullptr; }
};

template <class Opts, class PState>
struct AdagradPolicy {
  using Options = Opts;
  using ParamState = PState;
  static State options(const Opts& o) {
    return State::dict({{"lr", o.lr()}, {"lr_decay", o.lr_decay()}, {"eps", o.eps()},
                        {"weight_decay", o.weight_decay()},
                        {"initial_accumulator_value", o.initial_accumulator_value()}, {"foreach", State()},
                        {"maximize", false}});
  }
  static void load_options(Opts& o, const State& g, const Where& w) {
    refuse_maximize(g, w);
    o.lr_decay(num(g, "lr_decay", o.lr_decay(), w));
    o.eps(num(g, "eps", o.eps(), w));
    o.weight_decay(num(g, "weight_decay", o.weight_decay(), w));
    o.initial_accumulator_value(num(g, "initial_accumulator_value", o.initial_accumulator_value(), w));
  }
  static State param(const PState& s) {
    return State::dict({{"step", step_tensor(s.step(), s.sum())}, {"sum", owned(s.sum())}});
  }
  static std::unique_ptr<PState> load_param(const State& s, const at::Tensor& p, const Opts&, const Where& w) {
    auto out = std::make_unique<PState>();
    out->step(count(s, "step", w));
    out->sum(tensor(s, "sum", p, true, p.sizes(), w));
    return out;
  }
  /// LibTorch's Adagrad creates every parameter's state in its constructor
  /// and its step assumes it exists; a parameter without saved state gets that
  /// initial state (Python's Adagrad starts from the same).
  static std::unique_ptr<PState> fresh(const at::Tensor& p, const Opts& o) {
    auto out = std::make_unique<PState>();
    out->step(0);
    out->sum(p.detach().new_full(p.sizes(), o.initial_accumulator_value(), p.options()));
    return out;
  }
};

template <class Opts, class PState>
struct RMSpropPolicy {
  using Options = Opts;
  using ParamState = PState;
  static State options(const Opts& o) {
    return State::dict({{"lr", o.lr()}, {"momentum", o.momentum()}, {"alpha", o.alpha()}, {"eps", o.eps()},
                        {"centered", o.centered()}, {"weight_decay", o.weight_decay()}, {"foreach", State()},
                        {"maximize", false}, {"differentiable", false}});
  }
  static void load_options(Opts& o, const State& g, const Where& w) {
    refuse_maximize(g, w);
    o.momentum(num(g, "momentum", o.momentum(), w));
    o.alpha(num(g, "alpha", o.alpha(), w));
    o.eps(num(g, "eps", o.eps(), w));
    o.centered(flag(g, "centered", o.centered(), w));
    o.weight_decay(num(g, "weight_decay", o.weight_decay(), w));
  }
  static State param(const PState& s) {
    State out = State::dict({{"step", s.step()}, {"square_avg", owned(s.square_avg())}});
    if (s.momentum_buffer().defined()) out.set("momentum_buffer", owned(s.momentum_buffer()));
    if (s.grad_avg().defined()) out.set("grad_avg", owned(s.grad_avg()));
    return out;
  }
  static std::unique_ptr<PState> load_param(const State& s, const at::Tensor& p, const Opts& o, const Where& w) {
    auto out = std::make_unique<PState>();
    out->step(count(s, "step", w));
    out->square_avg(tensor(s, "square_avg", p, true, p.sizes(), w));
    // LibTorch reads these whenever momentum is on / centered is set.
    out->momentum_buffer(tensor(s, "momentum_buffer", p, o.momentum() > 0, p.sizes(), w));
    out->grad_avg(tensor(s, "grad_avg", p, o.centered(), p.sizes(), w));
    return out;
  }
  static std::unique_ptr<PState> fresh(const at::Tensor&, const Opts&) { return nullptr; }
};

/// LBFGS keeps one state for all parameters, filed under the first one (as in
/// Python), with flat vectors over all parameters.
template <class Opts, class PState>
struct LBFGSPolicy {
  using Options = Opts;
  using ParamState = PState;
  static State options(const Opts& o) {
    return State::dict({{"lr", o.lr()}, {"max_iter", o.max_iter()},
                        {"max_eval", o.max_eval() ? State(*o.max_eval()) : State()},
                        {"tolerance_grad", o.tolerance_grad()}, {"tolerance_change", o.tolerance_change()},
                        {"history_size", o.history_size()},
                        {"line_search_fn", o.line_search_fn() ? State(*o.line_search_fn()) : State()}});
  }
  static void load_options(Opts& o, const State& g, const Where& w) {
    o.max_iter(integer(g, "max_iter", o.max_iter(), w));
    if (const State* v = g.find("max_eval")) {
      if (v->is_none())
        o.max_eval(c10::nullopt);
      else
        o.max_eval(integer(g, "max_eval", 0, w));
    }
    o.tolerance_grad(num(g, "tolerance_grad", o.tolerance_grad(), w));
    o.tolerance_change(num(g, "tolerance_change", o.tolerance_change(), w));
    o.history_size(integer(g, "history_size", o.history_size(), w));
    if (const State* v = g.find("line_search_fn")) {
      if (v->is_none())
        o.line_search_fn(c10::nullopt);
      else if (v->is_string())
        o.line_search_fn(v->as_string());
      else
        w.fail("option 'line_search_fn' must be None or a string");
    }
  }
  static State param(const PState& s) {
    State out = State::dict({{"func_evals", s.func_evals()}, {"n_iter", s.n_iter()}});
    if (s.al()) out.set("al", list_of(*s.al()));
    // The rest exists once a step has finished (t and prev_loss have no
    // value before that).
    if (s.d().defined()) {
      out.set("d", owned(s.d()));
      out.set("t", s.t());
      out.set("old_dirs", list_of(s.old_dirs()));
      out.set("old_stps", list_of(s.old_stps()));
      out.set("ro", list_of(s.ro()));
      out.set("H_diag", s.H_diag().defined() ? owned(s.H_diag()) : State());
      out.set("prev_flat_grad", s.prev_flat_grad().defined() ? owned(s.prev_flat_grad()) : State());
      out.set("prev_loss", s.prev_loss());
    }
    return out;
  }
  static std::unique_ptr<PState> load_param(const State& s, const at::Tensor& p, const Opts&, const Where& w,
                                            std::int64_t numel) {
    auto out = std::make_unique<PState>();
    out->func_evals(integer(s, "func_evals", 0, w));
    out->n_iter(integer(s, "n_iter", 0, w));
    const std::vector<std::int64_t> flat{numel};
    if (s.contains("al")) out->al(tensor_list(s, "al", p, std::nullopt, w));
    if (s.contains("d")) {
      out->d(tensor(s, "d", p, true, at::IntArrayRef(flat), w));
      out->t(scalar(s, "t", w));
      auto dirs = tensor_list(s, "old_dirs", p, at::IntArrayRef(flat), w);
      auto stps = tensor_list(s, "old_stps", p, at::IntArrayRef(flat), w);
      auto ro = tensor_list(s, "ro", p, std::nullopt, w);
      out->old_dirs(std::deque<at::Tensor>(dirs.begin(), dirs.end()));
      out->old_stps(std::deque<at::Tensor>(stps.begin(), stps.end()));
      out->ro(std::deque<at::Tensor>(ro.begin(), ro.end()));
      // Python keeps the integer 1 until the first curvature update.
      if (const State* h = s.find("H_diag"); h && h->is_number())
        out->H_diag(p.detach().new_full({}, h->as_double(), p.options()));
      else
        out->H_diag(tensor(s, "H_diag", p, false, std::nullopt, w));
      out->prev_flat_grad(tensor(s, "prev_flat_grad", p, false, at::IntArrayRef(flat), w));
      out->prev_loss(scalar(s, "prev_loss", w));
    }
    return out;
  }
  static std::unique_ptr<PState> fresh(const at::Tensor&, const Opts&) { return nullptr; }
};

/// The kind of optimizer a static type is. `std::is_base_of` needs only the
/// derived type complete: an optimizer class whose header was not included
/// cannot be a base of O.
template <class O>
constexpr int kind_of() {
  namespace to = torch::optim;
  if constexpr (std::is_base_of_v<to::SGD, O>) return 1;
  else if constexpr (std::is_base_of_v<to::Adam, O>) return 2;
  else if constexpr (std::is_base_of_v<to::AdamW, O>) return 3;
  else if constexpr (std::is_base_of_v<to::Adagrad, O>) return 4;
  else if constexpr (std::is_base_of_v<to::RMSprop, O>) return 5;
  else if constexpr (std::is_base_of_v<to::LBFGS, O>) return 6;
  else return 0;
}

/// The policy of optimizer type O (void for an unknown type).
template <class O, int K = kind_of<O>()>
struct policy_of {
  using type = void;
};
template <class O>
struct policy_of<O, 1> {
  using type = SGDPolicy<torch::optim::SGDOptions, torch::optim::SGDParamState>;
};
template <class O>
struct policy_of<O, 2> {
  using type = AdamPolicy<torch::optim::AdamOptions, torch::optim::AdamParamState, false>;
};
template <class O>
struct policy_of<O, 3> {
  using type = AdamPolicy<torch::optim::AdamWOptions, torch::optim::AdamWParamState, true>;
};
template <class O>
struct policy_of<O, 4> {
  using type = AdagradPolicy<torch::optim::AdagradOptions, torch::optim::AdagradParamState>;
};
template <class O>
struct policy_of<O, 5> {
  using type = RMSpropPolicy<torch::optim::RMSpropOptions, torch::optim::RMSpropParamState>;
};
template <class O>
struct policy_of<O, 6> {
  using type = LBFGSPolicy<torch::optim::LBFGSOptions, torch::optim::LBFGSParamState>;
};

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

}  // namespace detail::optim_state

/// The state of optimizer `opt` in the layout of Python's
/// `Optimizer.state_dict()` (see the file comment). O is the optimizer's
/// static type, which decides what is saved.
template <class O>
State optimizer_state_dict(const O& opt) {
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
        auto it = opt.state().find(d::state_key(p));
        if (it != opt.state().end() && it->second) {
          const auto* s = dynamic_cast<const typename P::ParamState*>(it->second.get());
          if (!s)
            throw std::runtime_error("ppe: optimizer " + d::type_name(opt) + " holds a per-parameter state of type " +
                                     d::type_name(*it->second) + " for parameter " + std::to_string(index) +
                                     ", not its own");
          state.set(std::to_string(index), P::param(*s));
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
  std::vector<std::pair<std::string, std::unique_ptr<BaseParamState>>> staged;
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
      const d::Where wp = where.at("param group " + std::to_string(g) + ", parameter " + std::to_string(i) +
                                  " (id " + id + ", shape " + d::shape_text(p.sizes()) + ")");
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
      if (loaded) staged.emplace_back(d::state_key(p), std::move(loaded));
    }
  }

  // Commit: nothing below throws on bad input. (std::function needs a
  // copyable closure: the staged objects are shared.)
  struct Staged {
    std::vector<std::unique_ptr<BaseOptions>> options;
    std::vector<std::pair<std::string, std::unique_ptr<BaseParamState>>> state;
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

}  // namespace ppe
