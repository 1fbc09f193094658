#pragma once
/// \file
/// LibTorch's six optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS) in
/// one table: their classes, Python's names, and the options of type double
/// that ppe reads and sets by name (the lr shift extensions, OneCycleLR's
/// momentum). The snapshot state (serialization/detail/optimizer_policies.hpp),
/// the configuration's optimizers (config/standard_types.hpp), the shift
/// extensions and OneCycleLR look optimizers up here.
///
/// The LibTorch classes are only declared: this header is included wherever
/// the manager is, and LibTorch's optimizer headers would more than double
/// the compile time of those translation units. What touches an optimizer
/// (a dynamic_cast, an option) is a template, instantiated where its caller
/// has included the optimizer's header.

#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace torch::optim {
class SGD;
struct SGDOptions;
struct SGDParamState;
class Adam;
struct AdamOptions;
struct AdamParamState;
class AdamW;
struct AdamWOptions;
struct AdamWParamState;
class RMSprop;
struct RMSpropOptions;
struct RMSpropParamState;
class Adagrad;
struct AdagradOptions;
struct AdagradParamState;
class LBFGS;
struct LBFGSOptions;
struct LBFGSParamState;
}  // namespace torch::optim

/// Calls `X(N)` for each optimizer of the table, in its order:
/// `torch::optim::N` is the class and `N` Python's name of it. Only for what
/// C++ makes one spell out class by class (explicit instantiations); all else
/// goes through `ppe::optim::detail::TorchOptimizers`.
#define PPE_FOR_EACH_TORCH_OPTIMIZER(X) X(SGD) X(Adam) X(AdamW) X(RMSprop) X(Adagrad) X(LBFGS)

namespace ppe::optim::detail {

/// A list of optimizer classes.
template <class... O>
struct OptimizerList {};

template <class Ignored, class... O>
using OptimizerListTail = OptimizerList<O...>;

/// The optimizer classes of the table, in its order (PPE_FOR_EACH_TORCH_OPTIMIZER's).
#define PPE_TORCH_OPTIMIZER_CLASS_(N) , torch::optim::N
using TorchOptimizers = OptimizerListTail<void PPE_FOR_EACH_TORCH_OPTIMIZER(PPE_TORCH_OPTIMIZER_CLASS_)>;
#undef PPE_TORCH_OPTIMIZER_CLASS_

/// An option of type double: the name ppe gives it (Python's; `beta1` and
/// `beta2` for the two `betas` of Adam and AdamW) and `ref(options)`, the
/// option's member (const for const options).
template <class Ref>
struct DoubleOption {
  std::string_view name;
  Ref ref;
};
template <class Ref>
DoubleOption(const char*, Ref) -> DoubleOption<Ref>;

/// The table's entry of optimizer class `O`: `options` and `param_state`
/// (its LibTorch classes), `name` (Python's) and `double_options` (a tuple
/// of DoubleOption, in the order messages list them).
template <class O>
struct TorchOptimizer;

// An entry's classes and name, from the name they share.
#define PPE_TORCH_OPTIMIZER_ENTRY_(N)              \
  using options = torch::optim::N##Options;        \
  using param_state = torch::optim::N##ParamState; \
  static constexpr std::string_view name = #N
// The option N, reached through a generic lambda, so that the options class
// needs to be complete only where an option is used.
#define PPE_DOUBLE_OPTION_(N) DoubleOption{#N, [](auto& o) -> decltype(auto) { return o.N(); }}

template <>
struct TorchOptimizer<torch::optim::SGD> {
  PPE_TORCH_OPTIMIZER_ENTRY_(SGD);
  static constexpr auto double_options =
      std::make_tuple(PPE_DOUBLE_OPTION_(lr), PPE_DOUBLE_OPTION_(momentum), PPE_DOUBLE_OPTION_(dampening),
                      PPE_DOUBLE_OPTION_(weight_decay));
};

/// The options of type double of Adam and of AdamW (the same for both), the
/// two `betas` as `beta1` and `beta2`.
inline constexpr auto kAdamDoubleOptions =
    std::make_tuple(PPE_DOUBLE_OPTION_(lr),
                    DoubleOption{"beta1", [](auto& o) -> decltype(auto) { return std::get<0>(o.betas()); }},
                    DoubleOption{"beta2", [](auto& o) -> decltype(auto) { return std::get<1>(o.betas()); }},
                    PPE_DOUBLE_OPTION_(eps), PPE_DOUBLE_OPTION_(weight_decay));

template <>
struct TorchOptimizer<torch::optim::Adam> {
  PPE_TORCH_OPTIMIZER_ENTRY_(Adam);
  static constexpr auto double_options = kAdamDoubleOptions;
};

template <>
struct TorchOptimizer<torch::optim::AdamW> {
  PPE_TORCH_OPTIMIZER_ENTRY_(AdamW);
  static constexpr auto double_options = kAdamDoubleOptions;
};

template <>
struct TorchOptimizer<torch::optim::RMSprop> {
  PPE_TORCH_OPTIMIZER_ENTRY_(RMSprop);
  static constexpr auto double_options =
      std::make_tuple(PPE_DOUBLE_OPTION_(lr), PPE_DOUBLE_OPTION_(alpha), PPE_DOUBLE_OPTION_(eps),
                      PPE_DOUBLE_OPTION_(weight_decay), PPE_DOUBLE_OPTION_(momentum));
};

template <>
struct TorchOptimizer<torch::optim::Adagrad> {
  PPE_TORCH_OPTIMIZER_ENTRY_(Adagrad);
  static constexpr auto double_options =
      std::make_tuple(PPE_DOUBLE_OPTION_(lr), PPE_DOUBLE_OPTION_(lr_decay), PPE_DOUBLE_OPTION_(eps),
                      PPE_DOUBLE_OPTION_(weight_decay));
};

template <>
struct TorchOptimizer<torch::optim::LBFGS> {
  PPE_TORCH_OPTIMIZER_ENTRY_(LBFGS);
  static constexpr auto double_options =
      std::make_tuple(PPE_DOUBLE_OPTION_(lr), PPE_DOUBLE_OPTION_(tolerance_grad), PPE_DOUBLE_OPTION_(tolerance_change));
};

#undef PPE_DOUBLE_OPTION_
#undef PPE_TORCH_OPTIMIZER_ENTRY_

/// Calls `f(std::type_identity<O>{})` for the optimizer classes `O` of the
/// table, in order, until a call returns true; whether one did.
template <class F>
bool any_torch_optimizer(F&& f) {
  const auto each = [&f]<class... O>(OptimizerList<O...>) { return (f(std::type_identity<O>{}) || ...); };
  return each(TorchOptimizers{});
}

/// The first optimizer class of the table that `O` is or derives from (in
/// `type`); void for none. Only `O` needs to be complete.
template <class O, class List = TorchOptimizers>
struct torch_optimizer_base {
  using type = void;
};
template <class O, class T, class... Rest>
struct torch_optimizer_base<O, OptimizerList<T, Rest...>>
    : std::conditional_t<std::is_base_of_v<T, O>, std::type_identity<T>,
                         torch_optimizer_base<O, OptimizerList<Rest...>>> {};

/// When `options` (a `torch::optim::OptimizerOptions`, const or not) are the
/// options of an optimizer of the table, calls `f(entry, typed)` with its
/// TorchOptimizer and the options cast to its options class, and returns
/// true; else false. The options classes must be complete where this is
/// instantiated.
template <class Options, class F>
bool visit_torch_options(Options& options, F&& f) {
  return any_torch_optimizer([&]<class O>(std::type_identity<O>) {
    using Entry = TorchOptimizer<O>;
    using Typed = std::conditional_t<std::is_const_v<Options>, const typename Entry::options, typename Entry::options>;
    auto* typed = dynamic_cast<Typed*>(&options);
    if (!typed) return false;
    f(Entry{}, *typed);
    return true;
  });
}

/// Calls `f(option)` for each DoubleOption of `entry` (a TorchOptimizer).
template <class Entry, class F>
void for_each_double_option(Entry, F&& f) {
  std::apply([&](const auto&... option) { (f(option), ...); }, Entry::double_options);
}

/// The option `name` of type double of `options` (see visit_torch_options):
/// a pointer to it (to const for const options); null when the options are
/// of no optimizer of the table or have no such option.
template <class Options>
auto* double_option(Options& options, std::string_view name) {
  std::conditional_t<std::is_const_v<Options>, const double*, double*> slot = nullptr;
  visit_torch_options(options, [&](auto entry, auto& typed) {
    for_each_double_option(entry, [&](const auto& option) {
      if (option.name == name) slot = &option.ref(typed);
    });
  });
  return slot;
}

}  // namespace ppe::optim::detail
