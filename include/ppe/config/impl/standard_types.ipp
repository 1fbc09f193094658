// Definitions of config/standard_types.hpp's out-of-line functions: included by
// it when header-only, compiled once by impl/config_src.hpp with PPE_SEPARATE_COMPILATION.
// The registrations instantiate the extensions, schedulers and optimizers here,
// so a program that uses separate compilation compiles them once.
// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/schedulers/lr_scheduler.h>
#include <torch/optim/schedulers/step_lr.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/config/standard_types.hpp"
#include "ppe/training/extensions/log_format_yaml.hpp"
#include "ppe/dataset/fashion_mnist.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/detail/options_table.hpp"
#include "ppe/optim/lr_scheduler/cosine_annealing_lr.hpp"
#include "ppe/optim/lr_scheduler/cosine_annealing_warm_restarts.hpp"
#include "ppe/optim/lr_scheduler/exponential_lr.hpp"
#include "ppe/optim/lr_scheduler/linear_lr.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/optim/lr_scheduler/multi_step_lr.hpp"
#include "ppe/optim/lr_scheduler/one_cycle_lr.hpp"
#include "ppe/optim/lr_scheduler/reduce_lr_on_plateau.hpp"
#include "ppe/optim/lr_scheduler/step_lr.hpp"
#include "ppe/training/extensions/best_value.hpp"
#include "ppe/training/extensions/fail_on_non_number.hpp"
#include "ppe/training/extensions/log_report.hpp"
#include "ppe/training/extensions/lr_scheduler.hpp"
#include "ppe/training/extensions/micro_average.hpp"
#include "ppe/training/extensions/print_report.hpp"
#include "ppe/training/extensions/progress_bar.hpp"
#include "ppe/training/extensions/snapshot.hpp"
#include "ppe/training/extensions/value_observation.hpp"
#include "ppe/training/triggers/early_stopping_trigger.hpp"
#include "ppe/training/triggers/manual_schedule_trigger.hpp"
#include "ppe/training/triggers/minmax_value_trigger.hpp"
#include "ppe/training/triggers/once_trigger.hpp"
#include "ppe/training/triggers/time_trigger.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::config {

namespace detail {

PPE_DECL training::triggers::IntervalTrigger interval_trigger_of(const Value& v) {
  if (v.is_list() && v.size() == 2 && v.at(0).is_number() && v.at(1).is_string()) {
    const std::string& unit = v.at(1).as_string();
    if (unit != "epoch" && unit != "iteration")
      throw ConversionError("a trigger's unit is 'epoch' or 'iteration', got '" + unit + "'");
    try {
      return training::triggers::IntervalTrigger(v.at(0).as_double(), unit);
    } catch (const std::invalid_argument& e) {
      throw ConversionError(e.what());
    }
  }
  if (v.is_object())
    if (auto t = v.as_object().as<training::triggers::IntervalTrigger>()) return *t;
  throw ConversionError("expected " + Convert<training::triggers::IntervalTrigger>::expected() + ", got " +
                        v.describe());
}

PPE_DECL training::triggers::AnyTrigger any_trigger_of(const Value& v) {
  if (v.is_object()) {
    if (auto t = v.as_object().as<training::triggers::AnyTrigger>()) return *t;
    if (auto t = v.as_object().as<training::triggers::IntervalTrigger>()) return *t;
  }
  if (v.is_list()) return interval_trigger_of(v);
  throw ConversionError("expected " + Convert<training::triggers::AnyTrigger>::expected() + ", got " +
                        v.describe());
}

/// An extension that also keeps objects it refers to alive (a scheduler
/// held by reference, and its optimizer): the trainer may outlive the
/// config's cache. Its traits are the extension's.
template <class E>
struct Owning {
  using extension_concept = training::extension_tag;
  static constexpr std::string_view default_name = training::extension_traits<E>::default_name();
  static constexpr int priority = training::extension_traits<E>::priority();
  static constexpr bool needs_model_state = training::extension_traits<E>::needs_model_state();
  static auto default_trigger() { return training::extension_traits<E>::default_trigger(); }

  E e;
  std::shared_ptr<const void> keep;

  void operator()(training::Manager& m) { training::call_extension(e, m); }
  void initialize(training::Manager& m) { training::initialize_extension(e, m); }
  void finalize(training::Manager& m) { training::finalize_extension(e, m); }
  void on_error(training::Manager& m, std::exception_ptr ex) { training::extension_on_error(e, m, ex); }
  void on_stop(training::Manager& m) { training::extension_on_stop(e, m); }
  State state_dict() const { return training::extension_state_dict(e); }
  void load_state_dict(const State& s) { training::extension_load_state_dict(e, s); }
  std::vector<std::string> consumed_keys() const { return training::consumed_keys_of(e); }
};

/// A scheduler that keeps its optimizer alive (schedulers hold it by reference).
template <class S, class... A>
std::shared_ptr<S> scheduler(std::shared_ptr<torch::optim::Optimizer> optimizer, A&&... args) {
  S* s = new S(*optimizer, std::forward<A>(args)...);
  return std::shared_ptr<S>(s, [optimizer](S* p) { delete p; });
}

template <class S>
training::AnyExtension lr_scheduler_extension(std::shared_ptr<S> s, bool wait, const std::optional<std::string>& optimizer,
                                              const std::optional<std::string>& stepper_key) {
  training::extensions::LRSchedulerOptions<S> o;
  o.wait_for_first_optimizer_step(wait).optimizer(optimizer);
  if constexpr (std::is_same_v<S, ppe::optim::lr_scheduler::ReduceLROnPlateau>) {
    if (stepper_key) o.stepper(training::extensions::step_by_value<S>(*stepper_key));
  } else if (stepper_key) {
    throw std::invalid_argument("stepper_key (the reported value a scheduler steps on) is for ReduceLROnPlateau; this "
                                "scheduler steps without a value");
  }
  return training::AnyExtension(
      Owning<training::extensions::LRScheduler<S>>{training::extensions::LRScheduler<S>(*s, std::move(o)), s});
}

using Model = std::shared_ptr<torch::nn::Module>;
using OptimizerPtr = std::shared_ptr<torch::optim::Optimizer>;

inline std::vector<torch::Tensor> parameters_of(const Model& m) { return m->parameters(); }

inline void add_optimizers(Types& t) {
  namespace o = torch::optim;
  t.add("SGD", {"model", "lr", arg("momentum", 0.0), arg("dampening", 0.0), arg("weight_decay", 0.0), arg("nesterov", false)},
        [](Model m, double lr, double momentum, double dampening, double weight_decay, bool nesterov) {
          return std::make_shared<o::SGD>(parameters_of(m), o::SGDOptions(lr)
                                                                .momentum(momentum)
                                                                .dampening(dampening)
                                                                .weight_decay(weight_decay)
                                                                .nesterov(nesterov));
        });
  auto adam_like = [&t](const char* name, double default_decay, auto make) {
    t.add(name,
          {"model", arg("lr", 1e-3), arg("betas", std::vector<double>{0.9, 0.999}), arg("eps", 1e-8),
           arg("weight_decay", default_decay), arg("amsgrad", false)},
          [make](Model m, double lr, std::vector<double> betas, double eps, double weight_decay, bool amsgrad) {
            if (betas.size() != 2)
              throw std::invalid_argument("betas must be a list of 2 numbers, got " + std::to_string(betas.size()));
            return make(parameters_of(m), lr, std::make_tuple(betas[0], betas[1]), eps, weight_decay, amsgrad);
          });
  };
  adam_like("Adam", 0.0, [](std::vector<torch::Tensor> p, double lr, std::tuple<double, double> betas, double eps,
                            double wd, bool amsgrad) {
    return std::make_shared<o::Adam>(std::move(p),
                                     o::AdamOptions(lr).betas(betas).eps(eps).weight_decay(wd).amsgrad(amsgrad));
  });
  adam_like("AdamW", 1e-2, [](std::vector<torch::Tensor> p, double lr, std::tuple<double, double> betas, double eps,
                              double wd, bool amsgrad) {
    return std::make_shared<o::AdamW>(std::move(p),
                                      o::AdamWOptions(lr).betas(betas).eps(eps).weight_decay(wd).amsgrad(amsgrad));
  });
  t.add("RMSprop",
        {"model", arg("lr", 1e-2), arg("alpha", 0.99), arg("eps", 1e-8), arg("weight_decay", 0.0),
         arg("momentum", 0.0), arg("centered", false)},
        [](Model m, double lr, double alpha, double eps, double wd, double momentum, bool centered) {
          return std::make_shared<o::RMSprop>(
              parameters_of(m),
              o::RMSpropOptions(lr).alpha(alpha).eps(eps).weight_decay(wd).momentum(momentum).centered(centered));
        });
  t.add("Adagrad",
        {"model", arg("lr", 1e-2), arg("lr_decay", 0.0), arg("weight_decay", 0.0),
         arg("initial_accumulator_value", 0.0), arg("eps", 1e-10)},
        [](Model m, double lr, double lr_decay, double wd, double init, double eps) {
          return std::make_shared<o::Adagrad>(
              parameters_of(m),
              o::AdagradOptions(lr).lr_decay(lr_decay).weight_decay(wd).initial_accumulator_value(init).eps(eps));
        });
  t.add("LBFGS",
        {"model", arg("lr", 1.0), arg("max_iter", 20), "max_eval", arg("tolerance_grad", 1e-7),
         arg("tolerance_change", 1e-9), arg("history_size", 100), "line_search_fn"},
        [](Model m, double lr, std::int64_t max_iter, std::optional<std::int64_t> max_eval, double tolerance_grad,
           double tolerance_change, std::int64_t history_size,
           std::optional<std::string> line_search_fn) {
          o::LBFGSOptions opts(lr);
          opts.max_iter(max_iter).tolerance_grad(tolerance_grad).tolerance_change(tolerance_change).history_size(
              history_size);
          opts.max_eval(max_eval.value_or(max_iter * 5 / 4));
          if (line_search_fn) opts.line_search_fn(*line_search_fn);
          return std::make_shared<o::LBFGS>(parameters_of(m), opts);
        });
}

inline void add_schedulers(Types& t) {
  namespace s = ppe::optim::lr_scheduler;
  t.add("StepLR", {"optimizer", "step_size", arg("gamma", 0.1), arg("last_epoch", -1)},
        [](OptimizerPtr o, std::int64_t step_size, double gamma, std::int64_t last_epoch) {
          return scheduler<s::StepLR>(o, step_size, gamma, s::StepLROptions().last_epoch(last_epoch));
        });
  t.add("MultiStepLR", {"optimizer", "milestones", arg("gamma", 0.1), arg("last_epoch", -1)},
        [](OptimizerPtr o, std::vector<std::int64_t> milestones, double gamma, std::int64_t last_epoch) {
          return scheduler<s::MultiStepLR>(o, std::move(milestones),
                                           s::MultiStepLROptions().gamma(gamma).last_epoch(last_epoch));
        });
  t.add("ExponentialLR", {"optimizer", "gamma", arg("last_epoch", -1)},
        [](OptimizerPtr o, double gamma, std::int64_t last_epoch) {
          return scheduler<s::ExponentialLR>(o, gamma, s::ExponentialLROptions().last_epoch(last_epoch));
        });
  t.add("CosineAnnealingLR", {"optimizer", "T_max", arg("eta_min", 0.0), arg("last_epoch", -1)},
        [](OptimizerPtr o, std::int64_t t_max, double eta_min, std::int64_t last_epoch) {
          return scheduler<s::CosineAnnealingLR>(o, t_max,
                                                 s::CosineAnnealingLROptions().eta_min(eta_min).last_epoch(last_epoch));
        });
  t.add("CosineAnnealingWarmRestarts",
        {"optimizer", "T_0", arg("T_mult", 1), arg("eta_min", 0.0), arg("last_epoch", -1)},
        [](OptimizerPtr o, std::int64_t t0, std::int64_t t_mult, double eta_min, std::int64_t last_epoch) {
          return scheduler<s::CosineAnnealingWarmRestarts>(
              o, t0, s::CosineAnnealingWarmRestartsOptions().T_mult(t_mult).eta_min(eta_min).last_epoch(last_epoch));
        });
  t.add("LinearLR",
        {"optimizer", arg("start_factor", 1.0 / 3), arg("end_factor", 1.0), arg("total_iters", 5),
         arg("last_epoch", -1)},
        [](OptimizerPtr o, double start, double end, std::int64_t total, std::int64_t last_epoch) {
          return scheduler<s::LinearLR>(
              o, s::LinearLROptions().start_factor(start).end_factor(end).total_iters(total).last_epoch(last_epoch));
        });
  t.add("OneCycleLR",
        {"optimizer", "max_lr", "total_steps", "epochs", "steps_per_epoch", arg("pct_start", 0.3),
         arg("anneal_strategy", std::string("cos")), arg("div_factor", 25.0), arg("final_div_factor", 1e4),
         arg("three_phase", false), arg("last_epoch", -1)},
        [](OptimizerPtr o, double max_lr, std::optional<std::int64_t> total_steps, std::optional<std::int64_t> epochs,
           std::optional<std::int64_t> steps_per_epoch, double pct_start, std::string anneal, double div_factor,
           double final_div_factor, bool three_phase, std::int64_t last_epoch) {
          return scheduler<s::OneCycleLR>(o, s::PerGroup(max_lr),
                                          s::OneCycleLROptions()
                                              .total_steps(total_steps)
                                              .epochs(epochs)
                                              .steps_per_epoch(steps_per_epoch)
                                              .pct_start(pct_start)
                                              .anneal_strategy(anneal)
                                              .div_factor(div_factor)
                                              .final_div_factor(final_div_factor)
                                              .three_phase(three_phase)
                                              .last_epoch(last_epoch));
        });
  t.add("ReduceLROnPlateau",
        {"optimizer", arg("mode", std::string("min")), arg("factor", 0.1), arg("patience", 10),
         arg("threshold", 1e-4), arg("threshold_mode", std::string("rel")), arg("cooldown", 0), arg("min_lr", 0.0),
         arg("eps", 1e-8)},
        [](OptimizerPtr o, std::string mode, double factor, std::int64_t patience, double threshold,
           std::string threshold_mode, std::int64_t cooldown, double min_lr, double eps) {
          if (mode != "min" && mode != "max") throw std::invalid_argument("mode must be min or max, got " + mode);
          if (threshold_mode != "rel" && threshold_mode != "abs")
            throw std::invalid_argument("threshold_mode must be rel or abs, got " + threshold_mode);
          return scheduler<s::ReduceLROnPlateau>(
              o, s::ReduceLROnPlateauOptions()
                     .mode(mode == "min" ? s::PlateauMode::Min : s::PlateauMode::Max)
                     .factor(factor)
                     .patience(patience)
                     .threshold(threshold)
                     .threshold_mode(threshold_mode == "rel" ? s::ThresholdMode::Rel : s::ThresholdMode::Abs)
                     .cooldown(cooldown)
                     .min_lr(min_lr)
                     .eps(eps));
        });
  // LibTorch's own StepLR (no step at construction: the rate changes one
  // step later than Python's StepLR).
  t.add("libtorch.StepLR", {"optimizer", "step_size", arg("gamma", 0.1)},
        [](OptimizerPtr o, std::int64_t step_size, double gamma) {
          if (step_size <= 0) throw std::invalid_argument("step_size must be > 0");
          return scheduler<torch::optim::StepLR>(o, static_cast<unsigned>(step_size), gamma);
        });
}

inline void add_triggers(Types& t) {
  namespace tr = ppe::training::triggers;
  using training::triggers::AnyTrigger;
  t.add("IntervalTrigger", {"period", "unit"},
        [](double period, std::string unit) { return interval_trigger_of(Value::list({period, unit})); });
  t.add("ManualScheduleTrigger", {"points", "unit"}, [](std::vector<double> points, std::string unit) {
    return AnyTrigger(tr::ManualScheduleTrigger(std::move(points), unit));
  });
  t.add("OnceTrigger", {arg("call_on_resume", false)}, [](bool r) { return AnyTrigger(tr::OnceTrigger(r)); });
  t.add("TimeTrigger", {"period"}, [](double period) { return AnyTrigger(tr::TimeTrigger(period)); });
  t.add("MinValueTrigger", {"key", arg("trigger", Value::list({1, "epoch"}))},
        [](std::string key, tr::IntervalTrigger trigger) {
          return AnyTrigger(tr::MinValueTrigger<>(std::move(key), std::move(trigger)));
        });
  t.add("MaxValueTrigger", {"key", arg("trigger", Value::list({1, "epoch"}))},
        [](std::string key, tr::IntervalTrigger trigger) {
          return AnyTrigger(tr::MaxValueTrigger<>(std::move(key), std::move(trigger)));
        });
  t.add("EarlyStoppingTrigger",
        {arg("check_trigger", Value::list({1, "epoch"})), arg("monitor", std::string("main/loss")),
         arg("patience", 3), arg("mode", std::string("auto")), arg("verbose", false),
         arg("max_trigger", Value::list({100, "epoch"}))},
        [](tr::IntervalTrigger check, std::string monitor, int patience, std::string mode, bool verbose,
           tr::IntervalTrigger max_trigger) {
          tr::EarlyStoppingMode m = tr::EarlyStoppingMode::Auto;
          if (mode == "max") m = tr::EarlyStoppingMode::Max;
          else if (mode == "min") m = tr::EarlyStoppingMode::Min;
          else if (mode != "auto") throw std::invalid_argument("mode must be auto, min or max, got " + mode);
          return AnyTrigger(tr::EarlyStoppingTrigger(tr::EarlyStoppingOptions()
                                                         .check_trigger(check)
                                                         .monitor(std::move(monitor))
                                                         .patience(patience)
                                                         .mode(m)
                                                         .verbose(verbose)
                                                         .max_trigger(max_trigger)));
        });
}

inline void add_extensions(Types& t) {
  namespace ext = ppe::training::extensions;
  using WriterPtr = std::optional<std::shared_ptr<writing::Writer>>;
  const Value epoch = Value::list({1, "epoch"});
  add_extension(t, "LogReport",
                {"keys", arg("trigger", epoch), arg("filename", std::string("log")), arg("append", false), "format",
                 "writer"},
                [](std::optional<std::vector<std::string>> keys, training::triggers::IntervalTrigger trigger,
                   std::string filename, bool append, std::optional<std::string> format, WriterPtr writer) {
                  ext::LogReportOptions o;
                  if (keys) o.keys(*keys);
                  o.trigger(trigger).filename(std::move(filename)).append(append);
                  if (format) o.format(*format);
                  if (writer) o.writer(*writer);
                  return ext::LogReport(std::move(o));
                });
  add_extension(t, "PrintReport", {"entries"}, [](std::optional<std::vector<std::string>> entries) {
    return entries ? ext::PrintReport(std::move(*entries)) : ext::PrintReport();
  });
  add_extension(t, "ProgressBar", {arg("update_interval", 100), arg("bar_length", 50)},
                [](std::int64_t update_interval, std::int64_t bar_length) {
                  return ext::ProgressBar(
                      ext::ProgressBarOptions().update_interval(update_interval).bar_length(bar_length));
                });
  add_extension(t, "snapshot",
                {arg("filename", std::string("snapshot_iter_{.iteration}")), arg("n_retains", -1),
                 arg("autoload", false), arg("snapshot_on_error", false), "saver_rank", "writer"},
                [](std::string filename, std::int64_t n_retains, bool autoload, bool on_error,
                   std::optional<int> saver_rank, WriterPtr writer) {
                  ext::SnapshotOptions o;
                  o.filename(std::move(filename)).n_retains(n_retains).autoload(autoload).snapshot_on_error(on_error);
                  o.saver_rank(saver_rank);
                  if (writer) o.writer(*writer);
                  return ext::snapshot(std::move(o));
                });
  add_extension(t, "observe_lr",
                {"optimizer", arg("param_group", 0), arg("observation_key", std::string("lr")), arg("trigger", epoch)},
                [](OptimizerPtr o, std::int64_t group, std::string key, training::triggers::IntervalTrigger trigger) {
                  return ext::observe_lr(std::move(o), group, std::move(key), std::move(trigger));
                });
  add_extension(t, "LRScheduler",
                {"scheduler", arg("wait_for_first_optimizer_step", false), "optimizer", "stepper_key"},
                [](Value scheduler, bool wait, std::optional<std::string> optimizer,
                   std::optional<std::string> stepper_key) {
                  namespace s = ppe::optim::lr_scheduler;
                  if (scheduler.is_object()) {
                    const Object& o = scheduler.as_object();
                    if (auto p = o.as<s::ReduceLROnPlateau>())
                      return lr_scheduler_extension(p, wait, optimizer, stepper_key);
                    if (auto p = o.as<s::LRScheduler>()) return lr_scheduler_extension(p, wait, optimizer, stepper_key);
                    if (auto p = o.as<torch::optim::LRScheduler>())
                      return lr_scheduler_extension(p, wait, optimizer, stepper_key);
                  }
                  throw ConversionError("scheduler: expected a learning-rate scheduler (StepLR, ..., libtorch.StepLR), "
                                        "got " + scheduler.describe());
                });
  add_extension(t, "FailOnNonNumber", {arg("check_grad", true)}, [](bool check_grad) {
    return ext::FailOnNonNumber(ext::FailOnNonNumberOptions().check_grad(check_grad));
  });
  add_extension(t, "MicroAverage", {"numerator_key", "denominator_key", "result_key", arg("trigger", epoch)},
                [](std::string n, std::string d, std::string r, training::triggers::IntervalTrigger trigger) {
                  return ext::MicroAverage<>(std::move(n), std::move(d), std::move(r), std::move(trigger));
                });
  add_extension(t, "MinValue", {"key", arg("trigger", epoch)},
                [](std::string key, training::triggers::IntervalTrigger trigger) {
                  return ext::MinValue<>(std::move(key), std::move(trigger));
                });
  add_extension(t, "MaxValue", {"key", arg("trigger", epoch)},
                [](std::string key, training::triggers::IntervalTrigger trigger) {
                  return ext::MaxValue<>(std::move(key), std::move(trigger));
                });
}

}  // namespace detail

PPE_DECL Types& add_standard_types(Types& types) {
  detail::add_optimizers(types);
  detail::add_schedulers(types);
  detail::add_triggers(types);
  detail::add_extensions(types);
  types.add("FashionMNIST", {"root", arg("mode", std::string("train")), "limit"},
            [](std::optional<std::string> root, std::string mode, std::optional<std::int64_t> limit) {
              using M = ppe::dataset::FashionMNIST::Mode;
              if (mode != "train" && mode != "test")
                throw std::invalid_argument("mode must be train or test, got " + mode);
              ppe::dataset::FashionMNISTOptions o;
              o.mode(mode == "train" ? M::kTrain : M::kTest);
              if (root) o.root(*root);
              if (limit) o.limit(*limit);
              return ppe::dataset::FashionMNIST(o);
            });
  types.attribute<ppe::dataset::FashionMNIST>(
      "size", [](const ppe::dataset::FashionMNIST& d) { return static_cast<std::int64_t>(d.size().value_or(0)); });
  return types;
}

namespace detail {

PPE_DECL training::OptimizerRef optimizer_ref(const std::shared_ptr<torch::optim::Optimizer>& o) {
  // The concrete type, so that snapshots hold the optimizer's whole state.
  std::optional<training::OptimizerRef> ref;
  ppe::optim::detail::any_torch_optimizer([&]<class O>(std::type_identity<O>) {
    if (auto p = std::dynamic_pointer_cast<O>(o)) ref.emplace(p);
    return ref.has_value();
  });
  return ref ? std::move(*ref) : training::OptimizerRef(o);
}

PPE_DECL TrainerSettings trainer_settings(Config& config, const std::string& path) {
  const Value raw = config["!" + path];
  static const char* const known[] = {"model", "optimizer", "max_epochs", "out_dir", "device", "evaluator", "extensions"};
  if (!raw.is_dict())
    throw ConfigError("ppe::config: create_trainer: " + path + " must be a dict (model, optimizer, max_epochs, ...), "
                      "got " + raw.describe());
  for (const auto& [k, v] : raw.as_dict())
    if (std::find(std::begin(known), std::end(known), k) == std::end(known))
      throw ConfigError("ppe::config: create_trainer: unknown key '" + k + "' in " + path + " (line " +
                        std::to_string(config.line_of(path + "/" + k)) +
                        "); the keys are model, optimizer, max_epochs, out_dir, device, evaluator, extensions");
  for (const char* required : {"model", "optimizer", "max_epochs"})
    if (!raw.find(required))
      throw ConfigError("ppe::config: create_trainer: " + path + " has no '" + required + "'");
  TrainerSettings s;
  s.max_epochs = config.get<double>(path + "/max_epochs");
  // Checked here, where the path and line are known; the manager would refuse it only when the trainer runs.
  if (!(std::isfinite(s.max_epochs) && s.max_epochs > 0))
    throw ConfigError("ppe::config: create_trainer: " + path + "/max_epochs (line " +
                      std::to_string(config.line_of(path + "/max_epochs")) +
                      ") must be a finite number of epochs > 0, got " + ppe::detail::python_float_repr(s.max_epochs));
  if (raw.find("out_dir")) s.out_dir = config.get<std::string>(path + "/out_dir");
  if (raw.find("device")) s.device = config.get<std::string>(path + "/device");
  if (const Value* ev = raw.find("evaluator")) {
    if (!ev->is_dict())
      throw ConfigError("ppe::config: create_trainer: " + path + "/evaluator must be a dict (trigger, name, "
                        "progress_bar)");
    for (const auto& [k, v] : ev->as_dict()) {
      const std::string at = path + "/evaluator/" + k;
      if (k == "trigger") s.eval_trigger = config.get<training::triggers::AnyTrigger>(at);
      else if (k == "name") s.eval_name = config.get<std::string>(at);
      else if (k == "progress_bar") s.eval_progress_bar = config.get<bool>(at);
      else
        throw ConfigError("ppe::config: create_trainer: unknown key '" + k + "' in " + path +
                          "/evaluator; the keys are trigger, name, progress_bar");
    }
  }
  return s;
}

PPE_DECL std::vector<ExtensionSpec> take_extensions(Config& config, const std::string& path) {
  std::vector<ExtensionSpec> out;
  if (!config.contains(path)) return out;
  const Value list = config[path];
  if (!list.is_list())
    throw ConfigError("ppe::config: create_trainer: " + path + " must be a list of extensions, got " +
                      list.describe());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + "/" + std::to_string(i);
    std::shared_ptr<ExtensionSpec> spec;
    if (list.at(i).is_object()) spec = list.at(i).as_object().as<ExtensionSpec>();
    if (!spec)
      throw ConfigError("ppe::config: create_trainer: " + at + " (line " + std::to_string(config.line_of(at)) +
                        ") is not an extension: expected a dict whose type is a registered extension, got " +
                        list.at(i).describe());
    if (!spec->extension)
      throw ConfigError("ppe::config: create_trainer: the extension at " + at +
                        " was already given to a trainer (an extension belongs to one manager)");
    out.push_back(std::move(*spec));
    spec->extension.reset();
  }
  return out;
}

}  // namespace detail

}  // namespace ppe::config
