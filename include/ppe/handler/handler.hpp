#pragma once
/// \file
/// `ppe::handler::Handler` (PPE's `ppe.handler.Handler`): the policy between
/// the Trainer/Evaluator loops and the logic. It runs the runtime hooks of
/// every module placed with `ppe::to`, converts each batch with the entry
/// runtime, calls the logic, and reports the outputs named by
/// `train_report_keys` / `eval_report_keys` as `train/<key>` / `val/<key>`.
///
/// The Trainer and Evaluator call its members with themselves as first
/// argument; they give access to `models()`, `optimizers()` (trainer),
/// `logic()`, `runtime()` (the entry runtime) and `epoch()` (trainer). A
/// custom handler derives from `Handler` and hides the members it changes
/// (calling `Handler::member` for the default part): the engine calls the
/// most derived one, with no virtual dispatch.

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/module_runtime.hpp"
#include "ppe/runtime/runtime.hpp"
#include "ppe/state.hpp"
#include "ppe/training/metrics.hpp"
#include "ppe/training/models.hpp"

namespace ppe::handler {

/// The tag a handler type declares (`Handler` and its derived classes have it).
struct handler_tag {};

/// Whether `H` is a handler (derives from `Handler` or declares the tag).
template <class H>
concept handler = requires { typename H::handler_concept; } && std::is_same_v<typename H::handler_concept, handler_tag>;

/// Options of a `Handler` (PPE's handler option keys).
struct HandlerOptions {
  /// Outputs reported after each training step as `train/<key>`.
  PPE_ARG(std::vector<std::string>, train_report_keys);
  /// Outputs reported after each evaluation step as `val/<key>`.
  PPE_ARG(std::vector<std::string>, eval_report_keys);
};

class Handler {
 public:
  using handler_concept = handler_tag;

  explicit Handler(HandlerOptions options = {}) : options_(std::move(options)) { prepare_keys(); }

  const HandlerOptions& options() const noexcept { return options_; }

  /// Pops PPE's handler keys from the free-form options: `train_report_keys`,
  /// `eval_report_keys` (lists of strings) and `async` (ignored, as PPE does:
  /// steps here are synchronous).
  void consume_options(State& options) {
    if (auto v = options.pop("train_report_keys")) options_.train_report_keys(string_list(*v, "train_report_keys"));
    if (auto v = options.pop("eval_report_keys")) options_.eval_report_keys(string_list(*v, "eval_report_keys"));
    options.pop("async");
    prepare_keys();
  }

  /// Sets the report keys that `options` sets (non-empty lists): the
  /// engine's `TrainerOptions().handler(...)` given together with a handler
  /// object override its own, as PPE's trainer options do.
  void merge_options(const HandlerOptions& options) {
    if (!options.train_report_keys().empty()) options_.train_report_keys(options.train_report_keys());
    if (!options.eval_report_keys().empty()) options_.eval_report_keys(options.eval_report_keys());
    prepare_keys();
  }

  // ---- training ------------------------------------------------------------
  /// Train mode for every trainer model; `initialize_module` of each runtime
  /// module with the loader and its optimizer (the one of its name, or the
  /// only one). No module placed with `ppe::to`: an error.
  template <class T, class L>
  void train_setup(T& trainer, const L& loader) {
    for (const auto& [name, m] : trainer.models()) module_of(m).train(true);
    setup(trainer.models(), &trainer.optimizers(), loader, "training");
  }
  template <class T>
  void train_epoch_begin(T& trainer, std::int64_t iters_per_epoch) {
    for (const auto& rm : runtime_modules(trainer.models())) runtime::train_epoch_begin(rm.runtime, *rm.module);
    handler::train_epoch_begin(trainer.logic(), trainer.models(), trainer.epoch(), iters_per_epoch);
  }
  template <class T>
  void train_epoch_end(T& trainer) {
    for (const auto& rm : runtime_modules(trainer.models())) runtime::train_epoch_end(rm.runtime, *rm.module);
    handler::train_epoch_end(trainer.logic(), trainer.models(), trainer.epoch());
  }
  /// Runtime pre-step hooks; the batch converted by the entry runtime; the
  /// logic's `train_step` and `train_step_optimizers`; then `complete(batch_idx, outs)`.
  template <class T, class B, class C>
  void train_step(T& trainer, std::int64_t batch_idx, B& batch, C&& complete) {
    for (const auto& rm : runtime_modules(trainer.models())) runtime::train_pre_step(rm.runtime, trainer, *rm.module, batch_idx, batch);
    auto converted = runtime::convert_batch(trainer.runtime(), batch);
    auto&& outs = handler::train_step(trainer.logic(), trainer.models(), trainer.optimizers(), batch_idx, converted);
    handler::train_step_optimizers(trainer.logic(), trainer.models(), trainer.optimizers(), batch_idx);
    complete(batch_idx, outs);
  }
  /// Runtime post-step hooks; reports `train/<key>` for `train_report_keys`.
  template <class T, class B, class O>
  void train_post_step(T& trainer, std::int64_t batch_idx, const B& batch, const O& outs) {
    for (const auto& rm : runtime_modules(trainer.models()))
      runtime::train_post_step(rm.runtime, trainer, *rm.module, batch_idx, batch, outs);
    report_keys(train_keys_, outs);
  }
  /// Before an evaluation during training: runtime hooks and the logic's
  /// `train_validation_begin` on the evaluator's models (eval mode).
  template <class T, class E>
  void train_validation_begin(T& /*trainer*/, E& evaluator) {
    for (const auto& rm : evaluator.handler().runtime_modules(evaluator.models())) runtime::train_validation_begin(rm.runtime, *rm.module);
    handler::train_validation_begin(evaluator.logic(), evaluator.models());
  }
  template <class T, class E>
  void train_validation_end(T& /*trainer*/, E& evaluator) {
    for (const auto& rm : evaluator.handler().runtime_modules(evaluator.models())) runtime::train_validation_end(rm.runtime, *rm.module);
    handler::train_validation_end(evaluator.logic(), evaluator.models());
  }
  template <class T>
  void train_cleanup(T& trainer) {
    for (const auto& rm : runtime_modules(trainer.models())) runtime::train_cleanup(rm.runtime, *rm.module);
  }

  // ---- evaluation ------------------------------------------------------------
  /// Eval mode for the evaluator's models; `initialize_module` of each runtime module.
  template <class E, class L>
  void eval_setup(E& evaluator, const L& loader) {
    for (const auto& [name, m] : evaluator.models()) module_of(m).train(false);
    setup(evaluator.models(), nullptr, loader, "evaluation");
  }
  template <class E>
  void eval_loop_begin(E& /*evaluator*/) {}
  template <class E>
  void eval_loop_end(E& /*evaluator*/) {}
  template <class E, class B, class C>
  void eval_step(E& evaluator, std::int64_t batch_idx, B& batch, C&& complete) {
    for (const auto& rm : runtime_modules(evaluator.models())) runtime::eval_pre_step(rm.runtime, evaluator, *rm.module, batch_idx, batch);
    auto converted = runtime::convert_batch(evaluator.runtime(), batch);
    auto&& outs = handler::eval_step(evaluator.logic(), evaluator.models(), batch_idx, converted);
    complete(batch_idx, converted, outs);
  }
  template <class E, class B, class O>
  void eval_post_step(E& evaluator, std::int64_t batch_idx, const B& batch, const O& outs) {
    for (const auto& rm : runtime_modules(evaluator.models()))
      runtime::eval_post_step(rm.runtime, evaluator, *rm.module, batch_idx, batch, outs);
    report_keys(eval_keys_, outs);
  }

  /// A module placed with `ppe::to`, found under the trainer's models, and its runtime.
  struct RuntimeModule {
    std::string name;
    std::shared_ptr<torch::nn::Module> module;
    std::shared_ptr<runtime::BaseRuntime> runtime;
  };
  /// The runtime modules of `models` (PPE's `named_runtime_modules` of each
  /// model), found at setup or at first use and then kept, as PPE caches them.
  const std::vector<RuntimeModule>& runtime_modules(const training::Models& models) {
    if (!found_) find_runtime_modules(models);
    return runtime_modules_;
  }

 private:
  template <class M>
  static auto& module_of(const M& ref) {
    return static_cast<ppe::detail::dependent_t<torch::nn::Module, M>&>(*ref.module());
  }

  template <class L>
  void setup(const training::Models& models, const training::Optimizers* optimizers, const L& loader,
             const char* what) {
    find_runtime_modules(models);
    if (runtime_modules_.empty())
      throw std::runtime_error(std::string("ppe: call ppe::to(module, device) before starting the ") + what +
                               ": no module of the models " + ppe::detail::python_str_list(models.names()) +
                               " has a runtime");
    for (const auto& rm : runtime_modules_) {
      ppe::detail::dependent_t<torch::optim::Optimizer, L>* opt = nullptr;
      if (optimizers) {
        if (const auto* o = optimizers->find(rm.name))
          opt = &o->optimizer();
        else if (optimizers->size() == 1)
          opt = &optimizers->begin()->second.optimizer();
      }
      runtime::initialize_module(rm.runtime, *rm.module, loader, opt);
    }
  }

  void find_runtime_modules(const training::Models& models) {
    runtime_modules_.clear();
    for (const auto& [name, m] : models)
      for (auto& [sub_name, sub] : runtime::named_runtime_modules(module_of(m), name))
        runtime_modules_.push_back({sub_name, sub, runtime::module_runtime(*sub)});
    found_ = true;
  }

  template <class O>
  static void report_keys(const std::vector<std::pair<std::string, std::string>>& keys, const O& outs) {
    for (const auto& [key, reported] : keys) reporting::report({{reported, reporting::Value(output_at(outs, key))}});
  }
  // The output named `key`: from a map of outputs, or "0" of a single tensor
  // (PPE's name for it); other output types have no names.
  template <class O>
  static at::Tensor output_at(const O& outs, const std::string& key) {
    if constexpr (std::is_convertible_v<const O&, const at::Tensor&>) {
      if (key != "0")
        throw std::out_of_range("ppe::handler::Handler: the step returned one tensor, whose only name is '0'; "
                                "no output named '" + key + "'");
      return static_cast<const at::Tensor&>(outs);
    } else if constexpr (requires { outs.find(key) == outs.end(); outs.find(key)->second; } ||
                         requires { *outs.find(key); outs.find(key) == nullptr; }) {
      return training::metrics::detail::tensor_at(outs, key, "Handler", "outputs");
    } else {
      throw std::invalid_argument("ppe::handler::Handler: cannot report output '" + key +
                                  "': the step's outputs are not named (return ppe::handler::Outputs, a map of "
                                  "tensors or a tensor)");
    }
  }

  void prepare_keys() {
    train_keys_.clear();
    eval_keys_.clear();
    for (const auto& k : options_.train_report_keys()) train_keys_.emplace_back(k, "train/" + k);
    for (const auto& k : options_.eval_report_keys()) eval_keys_.emplace_back(k, "val/" + k);
  }

  static std::vector<std::string> string_list(const State& v, const char* key) {
    std::vector<std::string> out;
    if (v.is_list())
      for (const State& s : v.as_list()) {
        if (!s.is_string()) break;
        out.push_back(s.as_string());
      }
    if (!v.is_list() || out.size() != v.as_list().size())
      throw std::invalid_argument(std::string("ppe::handler::Handler: option '") + key + "' must be a list of strings");
    return out;
  }

  HandlerOptions options_;
  std::vector<std::pair<std::string, std::string>> train_keys_, eval_keys_;  // (output, reported key)
  std::vector<RuntimeModule> runtime_modules_;
  bool found_ = false;
};

}  // namespace ppe::handler
