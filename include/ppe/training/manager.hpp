#pragma once
/// \file
/// `ppe::training::Manager`: the non-template core of every extensions manager
/// (PPE's `_BaseExtensionsManager`): counters, observation and reporter,
/// models and optimizers, elapsed time, extension lookup by name, runtime
/// extensions, state. Extensions receive a `Manager&`, so their code is
/// compiled once, whatever the statically typed manager around it.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/profiler/record.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/state.hpp"
#include "ppe/training/any_extension.hpp"
#include "ppe/training/communicator.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/version.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/simple_writer.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training {

/// Thrown by `run_iteration` once training has stopped on request
/// (`Manager::request_stop()`, StopOnSignal): a loop that does not ask
/// `stop_trigger()` ends here instead of running iterations nobody saves.
class StopRequested : public std::runtime_error {
 public:
  StopRequested()
      : std::runtime_error("ppe: training stopped on request (request_stop() or a signal); end the training loop "
                           "when manager.stop_trigger() is true") {}
};

/// Options of an extensions manager (PPE's constructor arguments).
struct ManagerOptions {
  /// Training length in epochs; used for the default stop trigger.
  PPE_ARG(double, max_epochs) = 0;
  /// Iterations per epoch; must be >= 1.
  PPE_ARG(std::int64_t, iters_per_epoch) = 0;
  /// Output directory of writers (LogReport, snapshots).
  PPE_ARG(std::string, out_dir) = "result";
  /// Seconds on a monotonic clock; replace it to make elapsed time deterministic.
  PPE_ARG(std::function<double()>, clock) = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  /// Process rank and world size (distributed training; 0 and 1 otherwise).
  PPE_ARG(int, rank) = 0;
  PPE_ARG(int, world_size) = 1;
  /// Collectives over the ranks (distributed training:
  /// `ppe::distributed::for_process_group(options)` sets it, with rank and
  /// world size). With one, rank and world size are the communicator's, and
  /// at start every rank checks that all ranks registered the same
  /// extensions and triggers (`Manager::composition`).
  PPE_ARG(std::shared_ptr<Communicator>, communicator);
  /// Where extensions write their files (LogReport, snapshots); null: a
  /// `SimpleWriter(out_dir)`. A given writer's directory is the output
  /// directory; a writer made without one writes under `out_dir`.
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// At the end of a run (finalize), warn once about every key an extension
  /// or trigger reads (`consumed_keys()`: PrintReport's entries, value
  /// triggers, MicroAverage, BestValue, accumulators, LRScheduler's value
  /// stepper) that was never reported in the run, naming its reader and the
  /// keys reported. Never an error: a reader that needs a value raises its
  /// own error when it needs it and the key is absent; a column is blank.
  PPE_ARG(bool, check_report_keys) = true;
  /// Record the time of every extension call (and of each `run_iteration`)
  /// into the profiler's TimeSummary as
  /// `ppe.training.ExtensionsManager.run_extensions:<name>` (PPE's
  /// `enable_profile`); also LibTorch profiler ranges. Off: no clock read.
  PPE_ARG(bool, enable_profile) = false;
  /// Add the same scopes to the Chrome tracer (`ppe::profiler::get_tracer()`;
  /// PPE's `enable_trace`).
  PPE_ARG(bool, enable_trace) = false;
};

/// Options of `Manager::load_state_dict`.
struct LoadStateOptions {
  /// Load a state saved by a manager of another composition (an extension
  /// added, removed, renamed or of another type): what matches is loaded, the
  /// rest is skipped and listed in the returned vector. False: an error that
  /// names every difference, and nothing is loaded.
  PPE_ARG(bool, allow_composition_change) = false;
};

/// The manager core. Create an `ExtensionsManager` (or a Trainer); extensions
/// see it through this class.
class Manager {
 public:
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;
  virtual ~Manager();  // out of line: the members' destruction is compiled once

  // ---- counters ------------------------------------------------------------
  /// Completed iterations (inside `run_iteration`'s body: before this one).
  std::int64_t iteration() const noexcept { return iteration_; }
  /// Sets the iteration counter (as PPE's settable `iteration`).
  void set_iteration(std::int64_t it) {
    if (it < 0) throw std::invalid_argument("ppe: iteration must be >= 0, got " + std::to_string(it));
    iteration_ = it;
    reset_quiet_window();
  }
  std::int64_t iters_per_epoch() const noexcept { return iters_per_epoch_; }
  /// Completed epochs: `iteration / iters_per_epoch`, floored.
  std::int64_t epoch() const noexcept { return iteration_ / iters_per_epoch_; }
  /// Epochs as a fraction: `iteration / iters_per_epoch`.
  double epoch_detail() const noexcept {
    return static_cast<double>(iteration_) / static_cast<double>(iters_per_epoch_);
  }
  double max_epochs() const noexcept { return max_epochs_; }
  bool is_before_training() const noexcept { return iteration_ == 0; }
  /// Seconds since the extensions started, plus the time of the runs this
  /// manager's state was restored from. An error before the start.
  double elapsed_time() const {
    if (!started_) throw std::logic_error("ppe: elapsed_time is unavailable until the manager has started "
                                          "(the first run_iteration call)");
    return elapsed_offset_ + (clock_() - start_time_);
  }
  /// The manager's clock (`ManagerOptions::clock`), in seconds: extensions
  /// that measure time (ProgressBar, TimeTrigger) read it so tests can fake it.
  double now() const { return clock_(); }
  bool started() const noexcept { return started_; }
  bool finalized() const noexcept { return finalized_; }

  // ---- stopping on request ----------------------------------------------------
  /// Asks training to stop at the next iteration boundary: after the current
  /// iteration's extensions, every extension's `on_stop` runs (a snapshot
  /// takes one there), then the manager finalizes, `stop_trigger()` returns
  /// true and `run_iteration` throws StopRequested. Safe to call from another
  /// thread or from a signal handler (one lock-free atomic store; see
  /// StopOnSignal).
  void request_stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }
  /// Whether a stop was requested (and not yet carried out or already done).
  bool stop_requested() const noexcept { return stop_requested_.load(std::memory_order_relaxed); }
  /// Whether training ended because of `request_stop()`.
  bool stopped_on_request() const noexcept { return stopped_on_request_; }
  /// Output directory.
  const std::string& out() const noexcept { return out_; }
  /// The writer extensions use unless given their own (PPE's `writer`).
  writing::Writer& writer() const noexcept { return *writer_; }
  /// The writer an extension writes with: its own (`own`), else the
  /// manager's. An own writer made without a directory writes under `out()`
  /// (PPE's would write to the current directory).
  writing::Writer& writer_for(const std::shared_ptr<writing::Writer>& own) const {
    if (!own) return *writer_;
    own->adopt_out_dir(out_);
    return *own;
  }
  int rank() const noexcept { return rank_; }
  int world_size() const noexcept { return world_size_; }
  /// The ranks' collectives; null outside distributed training.
  Communicator* communicator() const noexcept { return communicator_.get(); }
  /// One line per extension (name, type, priority, trigger type and period),
  /// in registration order: what the handshake compares across ranks.
  std::vector<std::string> composition() const;
  /// The fingerprint of the extensions' names and types that a state saves
  /// (`_composition_fingerprint`; `load_state_dict` compares compositions).
  std::string composition_fingerprint() const;

  // ---- reporting -----------------------------------------------------------
  /// This iteration's reported values.
  reporting::Observation& observation() noexcept { return observation_; }
  const reporting::Observation& observation() const noexcept { return observation_; }
  reporting::Reporter& reporter() noexcept { return reporter_; }

  // ---- models and optimizers -----------------------------------------------
  /// The models. An error when called from an extension that did not declare
  /// `needs_model_state` in an iteration where no such extension runs.
  const Models& models() const {
    check_model_available();
    return models_;
  }
  /// One model by name.
  const std::shared_ptr<torch::nn::Module>& model(std::string_view name = "main") const;
  const Optimizers& optimizers() const noexcept { return optimizers_; }
  /// One optimizer by name.
  torch::optim::Optimizer& optimizer(std::string_view name = "main") const;

  /// Replaces the optimizer named `name`, or adds one (PPE's
  /// `manager.optimizers[name] = optimizer`): states taken from now on hold it.
  void set_optimizer(std::string name, OptimizerRef optimizer) {
    optimizers_.set(std::move(name), std::move(optimizer));
  }

  /// Registers an object with `state_dict()`/`load_state_dict(const State&)`
  /// whose state is saved under `state_objects/<name>`. The object must outlive
  /// the manager. An object that also has `resized_position()` (a
  /// `ResumableSampler`) tells `load_state_dict` where the data stands when
  /// the state came from another number of ranks.
  template <class T>
  void register_state_object(std::string name, T& object) {
    for (const auto& s : state_objects_)
      if (s.name == name) throw std::invalid_argument("ppe: state object '" + name + "' is registered twice");
    std::function<std::optional<DataPosition>()> position;
    if constexpr (requires { object.resized_position()->iters_per_epoch; })
      position = [&object]() -> std::optional<DataPosition> {
        const auto p = object.resized_position();
        if (!p) return std::nullopt;
        return DataPosition{p->iteration, p->iters_per_epoch};
      };
    state_objects_.push_back({std::move(name), [&object] { return State(object.state_dict()); },
                              [&object](const State& s) { object.load_state_dict(s); }, std::move(position)});
  }

  // ---- extensions ----------------------------------------------------------
  /// The extension registered under `name`, as a `T`. Errors name the
  /// registered extensions, or the actual type when it is not a `T`.
  template <class T>
  T& get_extension(std::string_view name) {
    const Registered& r = lookup(name);
    if (r.type != detail::type_id<T>())
      throw std::invalid_argument("ppe: extension '" + std::string(name) + "' is a " + std::string(r.type_name) +
                                  ", not a " + std::string(detail::type_name<T>()));
    return *static_cast<T*>(r.object);
  }
  /// Whether an extension is registered under `name`.
  bool has_extension(std::string_view name) const noexcept {
    return std::any_of(registry_.begin(), registry_.end(), [&](const Registered& r) { return r.name == name; });
  }
  /// Names of the registered extensions, in registration order.
  std::vector<std::string> extension_names() const;

  /// Adds an extension at run time (before the manager starts). `trigger`
  /// defaults to the extension's default trigger, `priority` to its priority;
  /// the name gets `_1`, `_2` suffixes when taken.
  void extend(AnyExtension ext, std::optional<triggers::AnyTrigger> trigger = std::nullopt, std::string name = {},
              std::optional<int> priority = std::nullopt, bool call_before_training = false);
  /// Adds an entry made with `entry(...)` or `make_extension(...)` at run time.
  template <class E, class T, int P>
  void extend(Entry<E, T, P> e) {
    extend(AnyExtension(std::move(e.extension)), triggers::AnyTrigger(std::move(e.trigger)), std::move(e.name), P,
           e.call_before_training);
  }

  /// Starts the extensions if not yet started: orders them by priority, calls
  /// `initialize` of each (skipping those whose trigger is finished), then the
  /// `call_before_training` ones. Idempotent; `run_iteration` calls it.
  void start_extensions() {
    if (!started_) start();
  }

  /// Evaluates the (public copy of the) stop trigger; starts the extensions
  /// first. True once a requested stop was carried out (request_stop()).
  bool stop_trigger() {
    start_extensions();
    if (stop_requested() && !finalized_) stop_on_request();
    return stopped_on_request_ || evaluate_stop_trigger();
  }
  /// The training length the stop trigger stands for, if it knows one.
  virtual std::optional<TrainingLength> training_length() const = 0;

  /// Calls every extension's `finalize` (priority order) once; afterwards
  /// `run_iteration` is an error.
  void finalize();

  /// Whether an extension that needs the model state may run at `iteration`
  /// (default: the next one).
  bool needs_model_state(std::optional<std::int64_t> iteration = std::nullopt) const {
    const std::int64_t it = iteration ? *iteration : iteration_ + 1;
    for (const auto& r : runtime_)
      if (r.needs_model_state && r.trigger.may_fire(it, iters_per_epoch_)) return true;
    return static_needs_model_state(it);
  }
  /// Inside the body: whether this iteration's extensions need the model state.
  bool needs_state_this_iteration() const { return needs_model_state(iteration_ + 1); }

  // ---- state ---------------------------------------------------------------
  /// Where the data of a state saved by another number of ranks stands in
  /// this world (a state object's `resized_position()`): the iteration to
  /// continue from and the iterations of a whole epoch.
  struct DataPosition {
    std::int64_t iteration;
    std::int64_t iters_per_epoch;
  };

  /// PPE's manager state: `_start_iteration`, `_start_execution`, `models`,
  /// `optimizers`, `state_objects`, `extensions` (`{name: {extension, trigger}}`),
  /// `ppe_version`; and, which PPE does not keep, `_elapsed_time`,
  /// `_stop_trigger` (`{public, internal}`: the state of both stop-trigger copies,
  /// e.g. an EarlyStoppingTrigger's best value and count) and the schema:
  /// `_composition` (`{name: type}` of every extension, in registration
  /// order) with its `_composition_fingerprint` (FNV-1a, 16 hex digits).
  /// `copy`: whether the optimizers' state tensors are cloned (the default)
  /// or shared (`StateCopy::Share`: what a snapshot written at once takes).
  State state_dict(StateCopy copy = StateCopy::Clone) const;

  /// Restores a state taken by `state_dict()` (or by PPE). Every registered
  /// model, optimizer and extension must be present, and the saved models and
  /// optimizers must be exactly the manager's. All models and optimizers are
  /// checked before anything changes: on any difference (missing or
  /// unexpected names, missing, unexpected or mis-shaped parameters, optimizer
  /// groups or state that do not fit) nothing is loaded and the
  /// std::invalid_argument lists every difference. A state that carries a
  /// composition (`_composition`, ppe's) must come from a manager of the same
  /// composition: an extension added, removed, renamed or of another type is
  /// an error naming each difference, unless
  /// `options.allow_composition_change()`, which loads what matches and
  /// returns what it skipped. A state without one (PPE's) is loaded as PPE
  /// does: saved extensions the manager does not have are ignored with a
  /// warning. Returns the skipped extensions (empty unless allowed).
  ///
  /// A state saved by another number of ranks (elastic training) continues
  /// where its data stands: a state object with `resized_position()` (a
  /// `ResumableSampler`, whose rest of the interrupted epoch is re-split over
  /// this world) gives the iteration and `iters_per_epoch` to continue with,
  /// counted in this world's batches (the epoch, and so the epoch triggers,
  /// the LR schedule and the log's epochs, continue at the same point of the
  /// data; iteration triggers count on from there). Without such an object
  /// the saved iteration is kept, which is where the data stands only when
  /// an iteration covers the same samples in both worlds.
  std::vector<std::string> load_state_dict(const State& state, const LoadStateOptions& options = {});

 protected:
  explicit Manager(const ManagerOptions& options, Models models, Optimizers optimizers);

  /// A runtime-added extension.
  struct RuntimeEntry {
    AnyExtension ext;
    triggers::AnyTrigger trigger;
    std::string name;
    int priority;
    bool call_before_training;
    bool needs_model_state;
    std::size_t slot;  ///< number of static entries that run before it
  };
  /// A name in the registry (static and runtime extensions alike).
  struct Registered {
    std::string name;
    const void* type;
    void* object;
    std::string_view type_name;
    int priority;
    bool is_runtime;
    std::size_t index;  ///< static: entry index; runtime: registration index
  };

  /// Registers a name (PPE's naming: the given name, else the default name;
  /// `_1`, `_2`, ... suffixes when taken; "training" is prohibited).
  std::string register_name(std::string requested, std::string_view default_name, const void* type, void* object,
                            std::string_view type_name, int priority, std::size_t index, bool is_runtime = true);

  // Hooks implemented by the statically typed manager.
  virtual std::size_t static_slot(int priority) const noexcept = 0;
  virtual bool static_needs_model_state(std::int64_t iteration) const = 0;
  virtual bool evaluate_stop_trigger() = 0;
  virtual State stop_trigger_state() const = 0;
  virtual void load_stop_trigger_state(const State& state) = 0;
  /// `{"extension": ..., "trigger": ...}`, an entry's state (PPE's layout);
  /// out of line, so each static entry does not build the dict inline.
  static State entry_state_of(State extension, State trigger);
  virtual State static_entry_state(std::size_t index) const = 0;
  virtual std::string static_trigger_description(std::size_t index) const = 0;
  /// Calls `use(reader, key)` for every key a static entry's extension or
  /// trigger, or the stop trigger, reads.
  virtual void static_consumed_keys(const std::function<void(const std::string&, const std::string&)>& use) const = 0;
  /// The report-key check (`ManagerOptions::check_report_keys`), at the end
  /// of a run: one warning listing every key read that was never reported.
  void warn_unreported_keys() const;
  virtual void load_static_entry_state(std::size_t index, const State& state) = 0;
  /// The cold-path passes over all entries in priority order.
  enum class ColdOp { Initialize, CallBeforeTraining, Finalize, OnError, Stop };
  virtual void cold_pass(ColdOp op, std::exception_ptr ex) = 0;

  /// A cold-path operation on one runtime entry.
  void cold_runtime(RuntimeEntry& e, ColdOp op, std::exception_ptr ex);

  /// Carries out a requested stop at an iteration boundary: `on_stop` of
  /// every extension, then finalize.
  void stop_on_request();

  /// Runs every `on_error` once per manager lifetime.
  void run_on_error(std::exception_ptr ex);
  /// Distributed training: when the communicator finds ranks gone, throws
  /// its message with `ex`'s; otherwise returns.
  void rethrow_naming_lost_ranks(std::exception_ptr ex);

  void check_model_available() const {
    if (!model_available_)
      throw std::logic_error("ppe: models cannot be accessed from extensions in this iteration. Extensions accessing "
                             "models must declare `static constexpr bool needs_model_state = true;`");
  }

  std::int64_t iteration_ = 0;
  double max_epochs_;
  std::int64_t iters_per_epoch_;
  std::string out_;
  std::shared_ptr<writing::Writer> writer_;
  std::function<double()> clock_;
  int rank_, world_size_;
  std::shared_ptr<Communicator> communicator_;
  double start_time_ = 0, elapsed_offset_ = 0;
  bool started_ = false, finalized_ = false, on_error_called_ = false, stopped_on_request_ = false;
  // Profiling (ManagerOptions::enable_profile / enable_trace).
  bool profile_, trace_, profiling_;
  // The one flag a quiet run_iteration tests: not started, finalized, or
  // profiling. Profiling thus costs the unprofiled loop nothing.
  bool cold_ = true;
  // The record of the running iteration (profiling): opened by the
  // iteration's start-up check, closed after its dispatch, or by the error
  // path, or by the next iteration's start.
  profiler::Record iteration_record_;
  void open_iteration_record() {
    iteration_record_.reopen("ppe.training.ExtensionsManager:run_iteration", record_options());
  }
  void close_iteration_record() noexcept { iteration_record_.close(); }
  // "ppe.training.ExtensionsManager.run_extensions:<name>" of each static
  // entry (by index) and runtime entry (by position in runtime_); built at
  // start when profiling, so a profiled call allocates nothing.
  std::vector<std::string> static_tags_, runtime_tags_;
  /// The record options of a profiled scope.
  profiler::RecordOptions record_options() const noexcept {
    return profiler::RecordOptions().enable(profile_).trace(trace_);
  }
  std::atomic<bool> stop_requested_{false};
  static_assert(std::atomic<bool>::is_always_lock_free, "request_stop must be callable from a signal handler");
  bool model_available_ = true;
  bool any_runtime_needs_model_ = false;
  // Iterations below quiet_until_ evaluate no trigger: each promised (with
  // next_possible) not to fire before it. 0 means "ask every trigger". Reset
  // whenever the counters or trigger states change outside run_iteration.
  std::int64_t quiet_until_ = 0;
  // When the last window was a single iteration (a trigger fires every
  // iteration), the window is not recomputed before this iteration: computing
  // it would cost more than the dispatch it saves.
  std::int64_t window_retry_ = 0;
  bool runtime_skippable_ = true;  // every runtime trigger has next_possible
  bool check_report_keys_;
  void reset_quiet_window() noexcept { quiet_until_ = window_retry_ = 0; }
  Models models_;
  Optimizers optimizers_;
  reporting::Observation observation_;
  reporting::Reporter reporter_;
  std::vector<RuntimeEntry> runtime_;
  std::vector<std::size_t> deferred_runtime_;  // reserved in extend(): deferring never allocates
  std::vector<Registered> registry_;

 private:
  struct StateObject {
    std::string name;
    std::function<State()> save;
    std::function<void(const State&)> load;
    std::function<std::optional<DataPosition>()> position;  // empty: the object has none
  };

  const Registered& lookup(std::string_view name) const;
  State entry_state(const Registered& r) const;
  void load_entry_state(const Registered& r, const State& s);
  const RuntimeEntry& runtime_by_registration(const Registered& r) const;
  // Compares the names saved under `section` with the manager's: missing ones
  // are problems; unexpected ones too when `exact`, else a warning.
  static void check_names(const State& state, std::string_view section, const std::vector<std::string>& names,
                          bool exact, std::vector<std::string>& problems);

  void start();  // start_extensions() when not started
  void check_composition() const;  // the distributed handshake
  std::vector<std::string> composition_differences(const State& saved, std::vector<std::string>& skip) const;
  std::vector<StateObject> state_objects_;
};

}  // namespace ppe::training

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/impl/manager.ipp"
#endif
