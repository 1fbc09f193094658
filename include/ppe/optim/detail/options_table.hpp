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

// The options are reached through generic lambdas, so that the options
// classes need to be complete only where an option is used.
template <>
struct TorchOptimizer<torch::optim::SGD> {
  using options = torch::optim::SGDOptions;
  using param_state = torch::optim::SGDParamState;
  static constexpr std::string_view name = "SGD";
  static constexpr auto double_options =
      std::make_tuple(DoubleOption{"lr", [](auto& o) -> decltype(auto) { return o.lr(); }},
                      DoubleOption{"momentum", [](auto& o) -> decltype(auto) { return o.momentum(); }},
                      DoubleOption{"dampening", [](auto& o) -> decltype(auto) { return o.dampening(); }},
                      DoubleOption{"weight_decay", [](auto& o) -> decltype(auto) { return o.weight_decay(); }});
};

/// Adam's and AdamW's options of type double: the same names.
inline constexpr auto kAdamDoubleOptions =
    std::make_tuple(DoubleOption{"lr", [](auto& o) -> decltype(auto) { return o.lr(); }},
                    DoubleOption{"beta1", [](auto& o) -> decltype(auto) { return std::get<0>(o.betas()); }},
                    DoubleOption{"beta2", [](auto& o) -> decltype(auto) { return std::get<1>(o.betas()); }},
                    DoubleOption{"eps", [](auto& o) -> decltype(auto) { return o.eps(); }},
                    DoubleOption{"weight_decay", [](auto& o) -> decltype(auto) { return o.weight_decay(); }});

template <>
struct TorchOptimizer<torch::optim::Adam> {
  using options = torch::optim::AdamOptions;
  using param_state = torch::optim::AdamParamState;
  static constexpr std::string_view name = "Adam";
  static constexpr auto double_options = kAdamDoubleOptions;
};

template <>
struct TorchOptimizer<torch::optim::AdamW> {
  using options = torch::optim::AdamWOptions;
  using param_state = torch::optim::AdamWParamState;
  static constexpr std::string_view name = "AdamW";
  static constexpr auto double_options = kAdamDoubleOptions;
};

template <>
struct TorchOptimizer<torch::optim::RMSprop> {
  using options = torch::optim::RMSpropOptions;
  using param_state = torch::optim::RMSpropParamState;
  static constexpr std::string_view name = "RMSprop";
  static constexpr auto double_options =
      std::make_tuple(DoubleOption{"lr", [](auto& o) -> decltype(auto) { return o.lr(); }},
                      DoubleOption{"alpha", [](auto& o) -> decltype(auto) { return o.alpha(); }},
                      DoubleOption{"eps", [](auto& o) -> decltype(auto) { return o.eps(); }},
                      DoubleOption{"weight_decay", [](auto& o) -> decltype(auto) { return o.weight_decay(); }},
                      DoubleOption{"momentum", [](auto& o) -> decltype(auto) { return o.momentum(); }});
};

template <>
struct TorchOptimizer<torch::optim::Adagrad> {
  using options = torch::optim::AdagradOptions;
  using param_state = torch::optim::AdagradParamState;
  static constexpr std::string_view name = "Adagrad";
  static constexpr auto double_options =
      std::make_tuple(DoubleOption{"lr", [](auto& o) -> decltype(auto) { return o.lr(); }},
                      DoubleOption{"lr_decay", [](auto& o) -> decltype(auto) { return o.lr_decay(); }},
                      DoubleOption{"eps", [](auto& o) -> decltype(auto) { return o.eps(); }},
                      DoubleOption{"weight_decay", [](auto& o) -> decltype(auto) { return o.weight_decay(); }});
};

template <>
struct TorchOptimizer<torch::optim::LBFGS> {
  using options = torch::optim::LBFGSOptions;
  using param_state = torch::optim::LBFGSParamState;
  static constexpr std::string_view name = "LBFGS";
  static constexpr auto double_options =
      std::make_tuple(DoubleOption{"lr", [](auto& o) -> decltype(auto) { return o.lr(); }},
                      DoubleOption{"tolerance_grad", [](auto& o) -> decltype(auto) { return o.tolerance_grad(); }},
                      DoubleOption{"tolerance_change", [](auto& o) -> decltype(auto) { return o.tolerance_change(); }});
};

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
