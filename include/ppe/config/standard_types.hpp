#pragma once
/// \file
/// The ready registrations of `ppe::config` (`standard_types()`): LibTorch's
/// optimizers, the learning-rate schedulers, ppe's triggers and extensions,
/// the Fashion-MNIST dataset, so that a run is described in YAML without
/// code; and `create_trainer<Model>(config)`, which builds an engine
/// `Trainer` from a config's `/trainer` section (the model type, and the
/// factories of models and custom types, are the program's).
///
/// ```cpp
/// ppe::config::Types types = ppe::config::standard_types();
/// types.add("Net", {ppe::config::arg("hidden", 128)}, [](std::int64_t h) { return Net(h); });
/// auto config = ppe::config::Config::load("config.yaml", types);
/// ppe::config::apply_set_args(config, args);           // --set /optimizer/lr=0.01
/// auto trainer = ppe::config::create_trainer<Net>(config);
/// trainer->run(train_loader, val_loader);
/// ```
/// The registered names and their parameters: docs/config.md.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/config/config.hpp"
#include "ppe/config/types.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/engine.hpp"
#include "ppe/runtime/to.hpp"
#include "ppe/training/any_extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace torch::optim {
class Optimizer;
}

namespace ppe::config {

namespace detail {
PPE_DECL training::triggers::IntervalTrigger interval_trigger_of(const Value& v);
PPE_DECL training::triggers::AnyTrigger any_trigger_of(const Value& v);
}  // namespace detail

/// An interval trigger from `[period, unit]` (PPE's `(1, 'epoch')`) or an
/// `IntervalTrigger` object.
template <>
struct Convert<training::triggers::IntervalTrigger> {
  static training::triggers::IntervalTrigger from(const Value& v) { return detail::interval_trigger_of(v); }
  static std::string expected() { return "a trigger [period, epoch|iteration]"; }
};
/// Any trigger: `[period, unit]`, or an object a trigger factory made
/// (`{type: ManualScheduleTrigger, points: [1, 3], unit: epoch}`).
template <>
struct Convert<training::triggers::AnyTrigger> {
  static training::triggers::AnyTrigger from(const Value& v) { return detail::any_trigger_of(v); }
  static std::string expected() { return "a trigger ([period, epoch|iteration] or a trigger type)"; }
};

/// What an extension factory makes: the extension and how to register it
/// (PPE's `manager.extend(ext, trigger=, name=, priority=,
/// call_before_training=)`). The trainer that registers it takes the
/// extension: a spec is used once.
struct ExtensionSpec {
  std::optional<training::AnyExtension> extension;
  std::optional<training::triggers::AnyTrigger> trigger;
  std::string name;
  std::optional<int> priority;
  bool call_before_training = false;
};

/// Registers an extension factory: `fn`'s result (an extension, or an entry
/// made with `entry`/`make_extension`/`observe_lr`) becomes an
/// `ExtensionSpec`. Adds the parameters `trigger`, `name`, `priority` and
/// `call_before_training` (each unless `fn` has a parameter of that name,
/// as LogReport's own `trigger`).
// `params` by reference (as Types::add): GCC 16 at -O2 reported
// -Wfree-nonheap-object on the destruction of a moved-from by-value vector
// inlined into add_plot_types, an error in a user's -Werror build.
template <class F>
Types& add_extension(Types& types, std::string name, const std::vector<Param>& params, F fn) {
  using R = std::remove_cvref_t<typename detail::signature<std::remove_cvref_t<F>>::result>;
  Types scratch;
  scratch.add(name, params, std::move(fn));
  Factory inner = *scratch.find(name);
  Factory f = inner;
  auto has = [&](const char* p) {
    for (const auto& i : inner.params)
      if (i.name == p) return true;
    return false;
  };
  // The extra parameters, in this order, where the factory has none of the name.
  const bool extra[4] = {!has("trigger"), !has("name"), !has("priority"), !has("call_before_training")};
  if (extra[0]) f.params.push_back({"trigger", expected_text<training::triggers::AnyTrigger>(), {}, {}, true});
  if (extra[1]) f.params.push_back({"name", expected_text<std::string>(), {}, {}, true});
  if (extra[2]) f.params.push_back({"priority", expected_text<int>(), {}, {}, true});
  if (extra[3]) f.params.push_back({"call_before_training", expected_text<bool>(), Value(false), {}, false});
  f.call = [inner, n = inner.params.size(), e0 = extra[0], e1 = extra[1], e2 = extra[2],
            e3 = extra[3]](const std::vector<const Value*>& args) {
    Value made = inner.call(std::vector<const Value*>(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n)));
    std::shared_ptr<R> held = made.as_object().template as<R>();
    ExtensionSpec spec;
    if constexpr (training::detail::is_entry<R>::value) {
      spec.extension.emplace(std::move(held->extension));
      spec.trigger.emplace(std::move(held->trigger));
      spec.name = held->name;
      spec.priority = R::priority;
      spec.call_before_training = held->call_before_training;
    } else {
      spec.extension.emplace(std::move(*held));
    }
    std::size_t i = n;
    auto next = [&]() -> const Value* { return args[i++]; };
    if (e0)
      if (const Value* v = next()) spec.trigger = detail::convert_arg<training::triggers::AnyTrigger>(v, i - 1);
    if (e1)
      if (const Value* v = next()) spec.name = detail::convert_arg<std::string>(v, i - 1);
    if (e2)
      if (const Value* v = next()) spec.priority = detail::convert_arg<int>(v, i - 1);
    if (e3)
      if (const Value* v = next()) spec.call_before_training = detail::convert_arg<bool>(v, i - 1);
    return to_value(std::move(spec));
  };
  return types.insert(std::move(f));
}

/// Adds the ready registrations to `types` (docs/config.md lists them).
PPE_DECL Types& add_standard_types(Types& types);
/// A registry with the ready registrations only.
inline Types standard_types() {
  Types t;
  add_standard_types(t);
  return t;
}

/// The settings of a `/trainer` section other than its model and optimizer.
struct TrainerSettings {
  double max_epochs = 0;
  std::string out_dir = "result";
  std::string device = "cpu";
  /// The evaluator's trigger and name (`evaluator: {trigger: [1, epoch], name: Evaluator}`).
  training::triggers::AnyTrigger eval_trigger = ppe::epochs(1);
  std::string eval_name = "Evaluator";
  bool eval_progress_bar = false;
};

namespace detail {
/// Reads `path`'s settings; an unknown key is an error naming the known ones.
PPE_DECL TrainerSettings trainer_settings(Config& config, const std::string& path);
/// The optimizer as its own type (SGD, Adam, AdamW, RMSprop, Adagrad,
/// LBFGS), so that the manager saves its whole state.
PPE_DECL training::OptimizerRef optimizer_ref(const std::shared_ptr<torch::optim::Optimizer>& o);
/// Takes the extensions of `path` (a list of what extension factories made).
PPE_DECL std::vector<ExtensionSpec> take_extensions(Config& config, const std::string& path);
}  // namespace detail

/// Builds PPE's `create_trainer(model, optimizer, max_epochs, ...)` from the
/// section at `path`:
/// ```yaml
/// trainer:
///   model: '@/model'             # a Model (a factory the program registered)
///   optimizer: '@/optimizer'     # an optimizer (SGD, Adam, ...)
///   max_epochs: 8
///   out_dir: result              # default result
///   device: cpu                  # default cpu
///   evaluator: {trigger: [1, epoch], name: Evaluator, progress_bar: false}   # WithEvaluator only; optional
///   extensions: [{type: LogReport}, {type: PrintReport, entries: [epoch, val/loss]}]
/// ```
/// The model is placed on `device` with `ppe::to`. `WithEvaluator`: an
/// evaluator of the same model (then `run(train, val)`),
/// else none (`run(train)`). Returned by `std::unique_ptr` (a trainer cannot
/// move, and the extensions are added before it is returned). The objects
/// the config made (the optimizer, a scheduler) are shared with the trainer.
template <class Model, bool WithEvaluator = true>
auto create_trainer(Config& config, std::string_view path = "/trainer") {
  const std::string p(path);
  const TrainerSettings s = detail::trainer_settings(config, p);
  Model model = config.get<Model>(p + "/model");
  ppe::to(model, s.device);  // the engine's runtime of the trainer's device
  training::OptimizerRef optimizer =
      detail::optimizer_ref(config.get<std::shared_ptr<torch::optim::Optimizer>>(p + "/optimizer"));
  engine::TrainerOptions options;
  options.out_dir(s.out_dir).device(s.device);
  auto make = [&] {
    if constexpr (WithEvaluator)
      return engine::create_trainer(
          model, optimizer, s.max_epochs, options,
          engine::evaluate(engine::create_evaluator(
                               model, engine::EvaluatorOptions().device(s.device).progress_bar(s.eval_progress_bar)),
                           s.eval_trigger, s.eval_name));
    else
      return engine::create_trainer(model, optimizer, s.max_epochs, options);
  };
  using T = decltype(make());
  std::unique_ptr<T> trainer(new T(make()));
  for (ExtensionSpec& e : detail::take_extensions(config, p + "/extensions"))
    trainer->extend(std::move(*e.extension), std::move(e.trigger), std::move(e.name), e.priority,
                    e.call_before_training);
  return trainer;
}

}  // namespace ppe::config

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/config/impl/standard_types.ipp"
#endif
