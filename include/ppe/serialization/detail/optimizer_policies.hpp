#pragma once
/// \file
/// One policy per `torch::optim` optimizer of the options table
/// (optim/detail/options_table.hpp): its options and per-parameter state
/// under Python's names (optimizer_state.hpp), and the choice of policy by
/// the optimizer's static type.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/optim/detail/options_table.hpp"
#include "ppe/serialization/detail/optimizer_fields.hpp"
#include "ppe/state.hpp"

// The LibTorch classes are only declared (optim/detail/options_table.hpp,
// and see optimizer_state.hpp); every use below depends on a template
// parameter, so the classes need to be complete only where a function is
// instantiated for that optimizer.
namespace torch::optim {
class Optimizer;
class OptimizerOptions;
class OptimizerParamState;
}  // namespace torch::optim

namespace ppe::detail::optim_state {

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
  static State param(const PState& s, StateCopy copy) {
    State out = State::dict();
    if (s.momentum_buffer().defined()) out.set("momentum_buffer", owned(s.momentum_buffer(), copy));
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
  static State param(const PState& s, StateCopy copy) {
    State out = State::dict({{"step", step_tensor(s.step(), s.exp_avg())},
                             {"exp_avg", owned(s.exp_avg(), copy)},
                             {"exp_avg_sq", owned(s.exp_avg_sq(), copy)}});
    if (s.max_exp_avg_sq().defined()) out.set("max_exp_avg_sq", owned(s.max_exp_avg_sq(), copy));
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
  static State param(const PState& s, StateCopy copy) {
    return State::dict({{"step", step_tensor(s.step(), s.sum())}, {"sum", owned(s.sum(), copy)}});
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
  static State param(const PState& s, StateCopy copy) {
    State out = State::dict({{"step", s.step()}, {"square_avg", owned(s.square_avg(), copy)}});
    if (s.momentum_buffer().defined()) out.set("momentum_buffer", owned(s.momentum_buffer(), copy));
    if (s.grad_avg().defined()) out.set("grad_avg", owned(s.grad_avg(), copy));
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
  static State param(const PState& s, StateCopy copy) {
    State out = State::dict({{"func_evals", s.func_evals()}, {"n_iter", s.n_iter()}});
    if (s.al()) out.set("al", list_of(*s.al(), copy));
    // The rest exists once a step has finished (t and prev_loss have no
    // value before that).
    if (s.d().defined()) {
      out.set("d", owned(s.d(), copy));
      out.set("t", s.t());
      out.set("old_dirs", list_of(s.old_dirs(), copy));
      out.set("old_stps", list_of(s.old_stps(), copy));
      out.set("ro", list_of(s.ro(), copy));
      out.set("H_diag", s.H_diag().defined() ? owned(s.H_diag(), copy) : State());
      out.set("prev_flat_grad", s.prev_flat_grad().defined() ? owned(s.prev_flat_grad(), copy) : State());
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

/// The policy of each optimizer of the options table (void for none).
template <class Optimizer, class T = ppe::optim::detail::TorchOptimizer<Optimizer>>
struct policy_for {
  using type = void;
};
template <class T>
struct policy_for<torch::optim::SGD, T> {
  using type = SGDPolicy<typename T::options, typename T::param_state>;
};
template <class T>
struct policy_for<torch::optim::Adam, T> {
  using type = AdamPolicy<typename T::options, typename T::param_state, false>;
};
template <class T>
struct policy_for<torch::optim::AdamW, T> {
  using type = AdamPolicy<typename T::options, typename T::param_state, true>;
};
template <class T>
struct policy_for<torch::optim::RMSprop, T> {
  using type = RMSpropPolicy<typename T::options, typename T::param_state>;
};
template <class T>
struct policy_for<torch::optim::Adagrad, T> {
  using type = AdagradPolicy<typename T::options, typename T::param_state>;
};
template <class T>
struct policy_for<torch::optim::LBFGS, T> {
  using type = LBFGSPolicy<typename T::options, typename T::param_state>;
};

/// The policy of optimizer type O, decided by its static type: that of the
/// table's optimizer O is or derives from (`std::is_base_of` needs only O
/// complete: an optimizer class whose header was not included cannot be a
/// base of O); void for an unknown type.
template <class O>
struct policy_of : policy_for<typename ppe::optim::detail::torch_optimizer_base<O>::type> {};

}  // namespace ppe::detail::optim_state
