#pragma once
/// \file
/// `ppe::engine::Trainer`, also reachable as `ppe::training::Trainer` (PPE's
/// `ppe.training.Trainer`, made by
/// `ppe::engine::create_trainer`): the training loop around an extensions
/// manager, with the step delegated to a handler and a logic.
///
/// `run(train_loader, val_loader)` follows PPE's call sequence:
/// ```
/// setup (first run): manager(iters_per_epoch = train_len) with the extensions
///   given to create_trainer, then those added with extend(), then the
///   evaluators (writer priority, every epoch by default): PPE's registration
///   order; pending state loaded; handler.train_setup; each evaluator's eval_setup
/// while not manager.stop_trigger():             (the extensions start here)
///   handler.train_epoch_begin; the sampler's set_epoch(epoch) (a range made
///     with a ResumableSampler: PPE's Logic does it for a DistributedSampler)
///   for idx in [iteration % train_len, train_len):
///     batch = next batch (the loader restarts when it ends early)
///     manager.run_iteration:                      (evaluators run in its extensions)
///       handler.train_step(idx, batch) → logic.train_step, logic.train_step_optimizers
///       handler.train_post_step; report elapsed_time (this iteration's seconds)
///     break if idx is the epoch's last or manager.stop_trigger()
///   handler.train_epoch_end                       (a stop inside the epoch ends the while)
/// handler.train_cleanup
/// ```
/// With a profiler session (`TrainerOptions::profile`, PPE's `profile=`) the
/// session starts before the `while` and stops after it (its trace handler
/// cleared first, as PPE's), and is stepped after each iteration. With
/// `enable_profile` / `enable_trace` each iteration is the scope
/// `ppe.training.Trainer:iteration` around `ppe.training.Trainer:get_data`
/// (the loader's advance) and `ppe.training.Trainer:run_iteration` (the
/// manager's `run_iteration`), in which the step is
/// `pytorch_pfn_extras.training.Trainer:train_step` (PPE's names, recorded
/// with `ppe::profiler::Record`). Without them the loop is compiled without
/// the scopes: no clock is read and no record made per iteration.
/// The public stop trigger is evaluated once before the first iteration and
/// once after each iteration, as in PPE (at an epoch's last iteration only by
/// the `while`), and the manager's internal copy once per iteration, so a
/// stateful stop trigger (EarlyStoppingTrigger, a value trigger) advances
/// both copies alike. Once it fired inside an epoch it is not asked again:
/// PPE's `while` asks it a second time at that iteration, and a trigger that
/// then answers false (a MaxValueTrigger whose check just fired) makes PPE
/// run the finalized manager and raise.
///
/// Differences from PPE: after a resume in the middle of an epoch the first
/// epoch runs only its remaining iterations (PPE runs a whole epoch's count,
/// so its epochs no longer start at index 0); an exception in a step runs the
/// extensions' `on_error`, then finalizes the manager (as PPE), and propagates;
/// the extensions start (a snapshot's autoload runs) after `train_setup`,
/// `eval_setup` and the runtimes' `initialize_module`, when PPE starts them
/// inside `train_setup` (its first read of `trainer.models`).
///
/// The trainer is not movable (its manager refers to it); `create_trainer`
/// returns it by guaranteed copy elision: `auto trainer = create_trainer(...)`.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <range/v3/range/access.hpp>

#include "ppe/dataloaders/loader_range.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/runtime/runtime.hpp"
#include "ppe/state.hpp"
#include "ppe/training/any_extension.hpp"
#include "ppe/engine/evaluator.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/profiler/profile.hpp"
#include "ppe/profiler/record.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/extensions_manager.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/warnings.hpp"

namespace ppe::engine {

/// An evaluator of a trainer, with its trigger and its name (PPE's
/// `evaluator=(ev, trigger)` and `evaluator={name: ...}`); made by
/// `ppe::engine::evaluate(...)`.
template <class E, class T>
struct EvaluatorEntry {
  using evaluator_type = E;
  using trigger_type = T;
  E evaluator;
  T trigger;
  std::string name = "Evaluator";
};

/// Lengths of `Trainer::run` (PPE's `train_len`, `eval_len`).
struct RunOptions {
  /// Iterations per epoch; default: the training loader's length.
  PPE_ARG(std::optional<std::int64_t>, train_len);
  /// Batches per evaluation; default: the validation loader's length (or until it ends).
  PPE_ARG(std::optional<std::int64_t>, eval_len);
};

/// The profiling settings of a trainer, from its `TrainerOptions`.
struct TrainerProfiling {
  /// The session stepped once per iteration (PPE's `profile`); may be null.
  std::shared_ptr<profiler::Profile> profile;
  /// Record the trainer's scopes (PPE's `enable_profile`, resolved).
  bool enable_profile = false;
  /// Add them to the Chrome tracer (PPE's `enable_trace`).
  bool enable_trace = false;

  /// `options.profile()`, and `options.enable_profile()` or else whether a
  /// session is given (PPE's `kwargs.get("enable_profile", profile is not None)`).
  static TrainerProfiling of(const TrainerOptions& options) {
    return {options.profile(), options.enable_profile().value_or(options.profile() != nullptr),
            options.enable_trace()};
  }
};

namespace detail {
/// The extension through which the manager runs a trainer's evaluator: PPE's
/// `_EvaluatorExt` (writer priority, needs the model state).
struct TrainerEvaluatorExtension {
  using extension_concept = training::extension_tag;
  static constexpr std::string_view default_name = "Evaluator";
  static constexpr int priority = training::kPriorityWriter;
  static constexpr bool needs_model_state = true;
  static auto default_trigger() { return ppe::epochs(1); }

  void (*validate)(void* trainer, std::size_t index) = nullptr;
  void* trainer = nullptr;
  std::size_t index = 0;
  void operator()(training::Manager&) const { validate(trainer, index); }
};

/// Stands for "no validation loader" in `Trainer::run`.
struct NoLoader {};

/// A profiler scope of the trainer's loop, open from construction to
/// `close()` (or destruction). `On == false`: nothing at all, so that the
/// loop without profiling reads no clock and makes no record.
template <bool On>
class LoopScope {
 public:
  LoopScope(std::string_view, const TrainerProfiling&) noexcept {}
  void close() noexcept {}
};
template <>
class LoopScope<true> {
 public:
  LoopScope(std::string_view tag, const TrainerProfiling& p)
      : record_(tag, profiler::RecordOptions().enable(p.enable_profile).trace(p.enable_trace)) {}
  void close() noexcept { record_.close(); }

 private:
  profiler::Record record_;
};

// PPE's tags of the trainer's scopes (string literals: the time summary
// caches its slots by the tag's address).
inline constexpr std::string_view kIterationTag = "ppe.training.Trainer:iteration";
inline constexpr std::string_view kGetDataTag = "ppe.training.Trainer:get_data";
inline constexpr std::string_view kRunIterationTag = "ppe.training.Trainer:run_iteration";
inline constexpr std::string_view kTrainStepTag = "pytorch_pfn_extras.training.Trainer:train_step";
}  // namespace detail

template <class LogicT, class HandlerT, class RuntimeT, class Stop, class EvalTuple, class... Entries>
class Trainer;

/// The trainer. `LogicT`, `HandlerT`, `RuntimeT` are the policies, `Stop`
/// the stop trigger, `EvalEntries` the evaluators (`EvaluatorEntry`),
/// `Entries` the statically typed extension entries.
template <class LogicT, class HandlerT, class RuntimeT, class Stop, class... EvalEntries, class... Entries>
class Trainer<LogicT, HandlerT, RuntimeT, Stop, std::tuple<EvalEntries...>, Entries...> {
  static_assert(handler::check_logic<LogicT>());
  static_assert(handler::handler<HandlerT>, "ppe: the trainer's handler must be ppe::handler::Handler or derive from it");
  static constexpr std::size_t kEvaluators = sizeof...(EvalEntries);

 public:
  // The evaluators are registered at run time, after the extensions added
  // with extend() (PPE's order): they are not part of the manager's type.
  using manager_type = training::ExtensionsManager<Stop, Entries...>;
  using logic_type = LogicT;
  using handler_type = HandlerT;

  /// Use `ppe::engine::create_trainer`. `stop` unset: stop after
  /// `manager_options.max_epochs()` epochs.
  Trainer(training::Models models, training::Optimizers optimizers, LogicT logic, HandlerT handler, RuntimeT runtime,
          training::ManagerOptions manager_options, std::optional<Stop> stop, std::tuple<EvalEntries...> evaluators,
          std::tuple<Entries...> entries, TrainerProfiling profiling = {})
      : models_(std::move(models)),
        optimizers_(std::move(optimizers)),
        logic_(std::move(logic)),
        handler_(std::move(handler)),
        runtime_(std::move(runtime)),
        manager_options_(std::move(manager_options)),
        stop_(std::move(stop)),
        evaluators_(std::move(evaluators)),
        entries_(std::move(entries)),
        profiling_(std::move(profiling)) {
    if constexpr (!std::is_same_v<Stop, training::triggers::IntervalTrigger>)
      if (!stop_) throw std::invalid_argument("ppe: Trainer: a stop trigger of a custom type must be given");
    check_evaluator_names();
  }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // ---- policies and models -------------------------------------------------
  LogicT& logic() noexcept { return logic_; }
  HandlerT& handler() noexcept { return handler_; }
  RuntimeT& runtime() noexcept { return runtime_; }
  const training::Models& models() const noexcept { return models_; }
  const training::Optimizers& optimizers() const noexcept { return optimizers_; }
  /// The optimizer named `name` (PPE's `get_optimizer`).
  torch::optim::Optimizer& get_optimizer(std::string_view name) const {
    if (const training::OptimizerRef* o = optimizers_.find(name)) return o->optimizer();
    throw std::out_of_range("ppe: Trainer: no optimizer named '" + std::string(name) +
                            "'; optimizers: " + ppe::detail::python_str_list(optimizers_.names()));
  }

  /// Replaces the optimizer named `name`, or adds one (PPE's
  /// `set_optimizer`): the logic steps it from the next step on, and the
  /// manager saves it. By reference (it must outlive the trainer) or a `std::shared_ptr`.
  void set_optimizer(std::string name, training::OptimizerRef optimizer) {
    if (manager_) manager_->set_optimizer(name, optimizer);
    optimizers_.set(std::move(name), std::move(optimizer));
  }

  /// The only evaluator (PPE's `trainer.evaluator`).
  auto& evaluator() noexcept
    requires(kEvaluators == 1)
  {
    return std::get<0>(evaluators_).evaluator;
  }
  /// The evaluator `I` (in the order given).
  template <std::size_t I>
  auto& evaluator_at() noexcept {
    return std::get<I>(evaluators_).evaluator;
  }
  static constexpr std::size_t num_evaluators() noexcept { return kEvaluators; }

  /// The profiling settings (`TrainerOptions::profile`, `enable_profile`, `enable_trace`).
  const TrainerProfiling& profiling() const noexcept { return profiling_; }

  // ---- the manager ---------------------------------------------------------
  /// Whether `run` (or `setup`) created the manager.
  bool started() const noexcept { return manager_.has_value(); }
  /// The manager; an error before the trainer started (PPE's "the engine is not started yet").
  manager_type& manager() {
    if (!manager_)
      throw std::logic_error("ppe: Trainer: the engine is not started yet (run() creates the manager, or "
                             "setup(iters_per_epoch))");
    return *manager_;
  }
  std::int64_t epoch() { return manager().epoch(); }
  double epoch_detail() { return manager().epoch_detail(); }
  std::int64_t iteration() { return manager().iteration(); }
  bool is_before_training() { return manager().is_before_training(); }

  /// Adds an extension decided at run time (PPE's `trainer.extend`), before
  /// the trainer starts: the arguments of `Manager::extend`. As in PPE it is
  /// registered after the extensions given to `create_trainer` and before the
  /// evaluators, so at equal priority it runs before the evaluation.
  void extend(training::AnyExtension ext, std::optional<training::triggers::AnyTrigger> trigger = std::nullopt,
              std::string name = {}, std::optional<int> priority = std::nullopt, bool call_before_training = false) {
    if (manager_) throw std::logic_error("ppe: Trainer: cannot extend after starting the engine");
    extra_.push_back({std::move(ext), std::move(trigger), std::move(name), priority, call_before_training});
  }
  /// Adds an entry made with `entry(...)` or `make_extension(...)`.
  template <class E, class T, int P>
  void extend(training::Entry<E, T, P> e) {
    extend(training::AnyExtension(std::move(e.extension)), training::triggers::AnyTrigger(std::move(e.trigger)),
           std::move(e.name), P, e.call_before_training);
  }

  /// The manager's state (PPE's `state_dict`); before the start, a state given
  /// to `load_state_dict` (else an error: the manager does not exist yet).
  State state_dict() {
    if (!manager_ && pending_) return *pending_;
    return manager().state_dict();
  }
  /// Restores a state; before the start it is kept and loaded when the
  /// manager is created, after the extensions are registered (PPE).
  /// `options` as `Manager::load_state_dict`'s (what a composition change
  /// skipped is returned when the manager exists, else warned at setup).
  std::vector<std::string> load_state_dict(const State& state, training::LoadStateOptions options = {}) {
    if (manager_) return manager_->load_state_dict(state, options);
    pending_ = state;
    pending_options_ = options;
    return {};
  }

  /// Creates the manager with `iters_per_epoch` iterations per epoch (PPE's
  /// `_setup_manager`; `run` calls it): registers the extensions and
  /// evaluators, the grad scaler's state (and, from `run`, the training
  /// range's `ResumableSampler`, as state object `train_sampler`), then
  /// loads a pending state.
  manager_type& setup(std::int64_t iters_per_epoch) {
    if (manager_) throw std::logic_error("ppe: Trainer::setup: the trainer already started");
    if (iters_per_epoch <= 0)
      throw std::invalid_argument("ppe: Trainer: the epoch length (train_len) must be >= 1, got " +
                                  std::to_string(iters_per_epoch));
    training::ManagerOptions options = manager_options_;
    options.iters_per_epoch(iters_per_epoch);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      // Only a manager of the default stop trigger type can build its own.
      using Given = training::StopWhen<Stop>;
      if constexpr (!std::is_same_v<Stop, training::triggers::IntervalTrigger>) {
        manager_.emplace(options, models_, optimizers_, Given{*stop_}, std::get<I>(std::move(entries_))...);
      } else {
        if (stop_)
          manager_.emplace(options, models_, optimizers_, Given{*stop_}, std::get<I>(std::move(entries_))...);
        else
          manager_.emplace(options, models_, optimizers_, std::get<I>(std::move(entries_))...);
      }
    }(std::index_sequence_for<Entries...>{});
    register_state_objects();
    if (register_train_sampler_) register_train_sampler_(*manager_);
    for (auto& e : extra_)
      manager_->extend(std::move(e.ext), std::move(e.trigger), std::move(e.name), e.priority, e.call_before_training);
    extra_.clear();
    register_evaluators(std::index_sequence_for<EvalEntries...>{});
    if (pending_) {
      for (const auto& skipped : manager_->load_state_dict(*pending_, pending_options_))
        ppe::warn("ppe: Trainer: the pending state was loaded without: " + skipped);
      pending_.reset();
    }
    return *manager_;
  }

  // ---- the loop ------------------------------------------------------------
  /// Trains on `train_loader` (a LibTorch data loader, or any input range of
  /// batches) without evaluation; an error when the trainer has evaluators.
  template <class TL>
  void run(TL&& train_loader, RunOptions lengths = {}) {
    run_impl(train_loader, static_cast<detail::NoLoader*>(nullptr), lengths);
  }
  /// Trains on `train_loader` and evaluates on `val_loader` when the
  /// evaluators' triggers fire (every epoch by default).
  template <class TL, class VL>
    requires(!std::is_same_v<std::remove_cvref_t<VL>, RunOptions>)
  void run(TL&& train_loader, VL&& val_loader, RunOptions lengths = {}) {
    run_impl(train_loader, &val_loader, lengths);
  }

 private:
  struct Extra {
    training::AnyExtension ext;
    std::optional<training::triggers::AnyTrigger> trigger;
    std::string name;
    std::optional<int> priority;
    bool call_before_training;
  };

  template <std::size_t... J>
  void register_evaluators(std::index_sequence<J...>) {
    (manager_->extend(training::AnyExtension(detail::TrainerEvaluatorExtension{&Trainer::validate_thunk, this, J}),
                      training::triggers::AnyTrigger(std::get<J>(evaluators_).trigger), std::get<J>(evaluators_).name,
                      training::kPriorityWriter),
     ...);
  }

  static void validate_thunk(void* self, std::size_t index) {
    auto& t = *static_cast<Trainer*>(self);
    if (!t.validate_)
      throw std::invalid_argument("ppe: Trainer: \"val_loader\" is not given: an evaluator ran outside run()");
    t.validate_(index);
  }

  void register_state_objects() {
    if constexpr (requires { logic_.grad_scaler(); })
      if (const auto& s = logic_.grad_scaler()) manager_->register_state_object("options___::__grad_scaler", *s);
    if constexpr (requires { runtime::detail::deref(runtime_).options().grad_scaler(); }) {
      const auto& s = runtime::detail::deref(runtime_).options().grad_scaler();
      bool same = false;
      if constexpr (requires { logic_.grad_scaler(); }) same = s && s == logic_.grad_scaler();
      if (s && !same) manager_->register_state_object("runtime_options_grad_scaler", *s);
    }
    if constexpr (requires(const State& st) {
                    { logic_.state_dict() } -> std::convertible_to<State>;
                    logic_.load_state_dict(st);
                  })
      manager_->register_state_object("logic", logic_);
    // The entry runtime's own state; PPE's runtimes have none, and an empty
    // one is left out so that PPE's snapshots and ours keep one layout.
    if (const State s = runtime::runtime_state_dict(runtime_); !(s.is_dict() && s.size() == 0))
      manager_->register_state_object("runtime", runtime_state_);
  }

  // The entry runtime seen as a state object.
  struct RuntimeState {
    RuntimeT* runtime;
    State state_dict() const { return runtime::runtime_state_dict(*runtime); }
    void load_state_dict(const State& s) { runtime::runtime_load_state_dict(*runtime, s); }
  };

  void check_evaluator_names() const {
    std::vector<std::string> names;
    std::apply([&](const auto&... e) { (names.push_back(e.name), ...); }, evaluators_);
    for (std::size_t i = 0; i < names.size(); ++i)
      for (std::size_t j = i + 1; j < names.size(); ++j)
        if (names[i] == names[j])
          throw std::invalid_argument("ppe: create_trainer: two evaluators are named '" + names[i] +
                                      "'; give each its own name");
  }

  template <class TL, class VL>
  void run_impl(TL& train_loader, VL* val_loader, const RunOptions& lengths) {
    constexpr bool has_val = !std::is_same_v<VL, detail::NoLoader>;
    auto train = dataloaders::range(train_loader);
    std::int64_t train_len = 0;
    if (lengths.train_len()) {
      train_len = *lengths.train_len();
    } else if (auto n = dataloaders::num_batches(train)) {
      train_len = static_cast<std::int64_t>(*n);
    } else {
      throw std::invalid_argument("ppe: Trainer::run: the training loader's length is unknown (a LibTorch loader, "
                                  "or an unsized range); pass ppe::dataloaders::range(loader, dataset_size) or "
                                  "RunOptions().train_len(n)");
    }
    if (train_len <= 0)
      throw std::invalid_argument("ppe: Trainer::run: the epoch length must be >= 1, got " +
                                  std::to_string(train_len) + (lengths.train_len() ? " (train_len)" : " (an empty training loader)"));
    if (lengths.eval_len() && *lengths.eval_len() < 0)
      throw std::invalid_argument("ppe: Trainer::run: eval_len must be >= 0, got " +
                                  std::to_string(*lengths.eval_len()));
    if constexpr (!has_val) {
      if (kEvaluators > 0)
        throw std::invalid_argument("ppe: Trainer::run: `val_loader` is required: the trainer has " +
                                    std::to_string(kEvaluators) + " evaluator(s)");
    } else {
      if (kEvaluators == 0) ppe::warn("`val_loader` is given whereas the evaluator is missing.");
    }
    if (!manager_) {
      // The training range's sampler, when it is a resumable one, is part of
      // the state: a resumed run continues its epoch's data where it was,
      // on any number of ranks. The trainer keeps a handle (copies share
      // the sampler's state), since the range is this call's.
      if constexpr (requires(const State& st) {
                      train.tracker().resized_position();
                      { train.tracker().state_dict() } -> std::convertible_to<State>;
                      train.tracker().load_state_dict(st);
                    }) {
        using Sampler = std::remove_cvref_t<decltype(train.tracker())>;
        auto held = std::make_shared<Sampler>(train.tracker());
        register_train_sampler_ = [held](manager_type& m) { m.register_state_object("train_sampler", *held); };
      }
      setup(train_len);
    } else if (manager_->iters_per_epoch() != train_len) {
      throw std::invalid_argument("ppe: Trainer::run: the trainer was started with " +
                                  std::to_string(manager_->iters_per_epoch()) +
                                  " iterations per epoch, now given " + std::to_string(train_len));
    }
    manager_type& m = *manager_;

    struct ValidateScope {  // the evaluators see the validation loader during this run only
      std::function<void(std::size_t)>& f;
      ~ValidateScope() { f = nullptr; }
    } validate_scope{validate_};
    if constexpr (has_val) {
      validate_ = [this, val_loader, eval_len = lengths.eval_len()](std::size_t index) {
        validate_one(index, *val_loader, eval_len, std::index_sequence_for<EvalEntries...>{});
      };
    }

    if (!set_up_) {
      handler_.train_setup(*this, train);
      if constexpr (has_val) std::apply([&](auto&... e) { (e.evaluator.setup(*val_loader), ...); }, evaluators_);
      set_up_ = true;
    }

    // The session spans the epochs (PPE's `with self._profile`). On an error
    // it stops too, its handler called as PPE's `__exit__` does.
    profiler::Profile* const session = profiling_.profile.get();
    if (session) session->start();
    try {
      if (profiling_.enable_profile || profiling_.enable_trace)
        train_epochs<true>(m, train);
      else
        train_epochs<false>(m, train);
    } catch (...) {
      if (session) session->stop_after_error();
      throw;
    }
    if (session) {
      session->on_trace_ready(nullptr);
      session->stop();
    }
    handler_.train_cleanup(*this);
  }

  // The epochs of `run`; `Profiled`: with the trainer's profiler scopes.
  template <bool Profiled, class R>
  void train_epochs(manager_type& m, R& train) {
    using Scope = detail::LoopScope<Profiled>;
    profiler::Profile* const session = profiling_.profile.get();
    bool fired = false;  // the stop trigger fired inside an epoch: not asked again
    while (!fired && !m.stop_trigger()) {
      const std::int64_t len = m.iters_per_epoch();
      handler_.train_epoch_begin(*this, len);
      dataloaders::set_epoch(train, m.epoch());  // before the pass starts, as PPE's DistributedSampler
      auto it = ranges::begin(train);
      const auto last = ranges::end(train);
      bool advance = false;  // the batch of the previous iteration is done with
      for (std::int64_t idx = m.iteration() % len; idx < len; ++idx) {
        {
          Scope iteration(detail::kIterationTag, profiling_);
          Scope get_data(detail::kGetDataTag, profiling_);
          if (advance) ++it;  // here, not after the step: the next batch is fetched inside get_data
          advance = true;
          if (it == last) {  // shorter than train_len: a new pass (PPE's StopIteration case)
            it = ranges::begin(train);
            if (it == last) throw std::runtime_error("ppe: Trainer::run: the training loader yielded no batch");
          }
          auto&& batch = *it;
          get_data.close();
          const double begin = m.now();
          try {
            Scope run_iteration(detail::kRunIterationTag, profiling_);
            m.run_iteration([&] {
              Scope train_step(detail::kTrainStepTag, profiling_);
              handler_.train_step(*this, idx, batch, [&](std::int64_t i, const auto& outs) {
                handler_.train_post_step(*this, i, batch, outs);
                reporting::report({{"elapsed_time", m.now() - begin}});
              });
            });
          } catch (...) {
            m.finalize();
            throw;
          }
        }
        if (session) session->step();
        // At the epoch's last index the `while` asks the stop trigger: asking
        // here too would advance a stateful trigger twice (PPE asks once).
        if (idx + 1 < len && m.stop_trigger()) {
          fired = true;
          break;
        }
      }
      handler_.train_epoch_end(*this);
    }
  }

  template <class VL, std::size_t... J>
  void validate_one(std::size_t index, VL& val_loader, std::optional<std::int64_t> eval_len,
                    std::index_sequence<J...>) {
    (void)index, (void)val_loader, (void)eval_len;  // unused without evaluators
    ((index == J ? (validate_with(std::get<J>(evaluators_).evaluator, val_loader, eval_len), 0) : 0), ...);
  }
  template <class E, class VL>
  void validate_with(E& ev, VL& val_loader, std::optional<std::int64_t> eval_len) {
    ev.handler().train_validation_begin(*this, ev);
    ev.run(val_loader, eval_len);
    ev.handler().train_validation_end(*this, ev);
  }

  training::Models models_;
  training::Optimizers optimizers_;
  LogicT logic_;
  HandlerT handler_;
  RuntimeT runtime_;
  training::ManagerOptions manager_options_;
  std::optional<Stop> stop_;
  std::tuple<EvalEntries...> evaluators_;
  std::tuple<Entries...> entries_;  // moved into the manager at setup
  std::vector<Extra> extra_;
  RuntimeState runtime_state_{&runtime_};
  std::optional<State> pending_;
  training::LoadStateOptions pending_options_;
  // Registers the training range's sampler (a handle it holds) at setup.
  std::function<void(manager_type&)> register_train_sampler_;
  std::function<void(std::size_t)> validate_;
  bool set_up_ = false;
  TrainerProfiling profiling_;
  std::optional<manager_type> manager_;  // last: destroyed first, while what it refers to still exists
};

}  // namespace ppe::engine

namespace ppe::training {
/// PPE's name of the trainer (`ppe.training.Trainer`).
using engine::Trainer;
}  // namespace ppe::training
