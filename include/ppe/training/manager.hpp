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
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/state.hpp"
#include "ppe/training/any_extension.hpp"
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
  /// Where extensions write their files (LogReport, snapshots); null: a
  /// `SimpleWriter(out_dir)`. A given writer's directory is the output directory.
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
};

/// The manager core. Create an `ExtensionsManager` (or a Trainer); extensions
/// see it through this class.
class Manager {
 public:
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;
  virtual ~Manager() = default;

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
  int rank() const noexcept { return rank_; }
  int world_size() const noexcept { return world_size_; }

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
  const std::shared_ptr<torch::nn::Module>& model(std::string_view name = "main") const {
    check_model_available();
    if (const ModelRef* m = models_.find(name)) return m->module();
    throw std::out_of_range("ppe: no model named '" + std::string(name) + "'; models: " +
                            detail::join_names(models_.names()));
  }
  const Optimizers& optimizers() const noexcept { return optimizers_; }
  /// One optimizer by name.
  torch::optim::Optimizer& optimizer(std::string_view name = "main") const {
    if (const OptimizerRef* o = optimizers_.find(name)) return o->optimizer();
    throw std::out_of_range("ppe: no optimizer named '" + std::string(name) + "'; optimizers: " +
                            detail::join_names(optimizers_.names()));
  }

  /// Replaces the optimizer named `name`, or adds one (PPE's
  /// `manager.optimizers[name] = optimizer`): states taken from now on hold it.
  void set_optimizer(std::string name, OptimizerRef optimizer) {
    optimizers_.set(std::move(name), std::move(optimizer));
  }

  /// Registers an object with `state_dict()`/`load_state_dict(const State&)`
  /// whose state is saved under `state_objects/<name>`. The object must outlive
  /// the manager.
  template <class T>
  void register_state_object(std::string name, T& object) {
    for (const auto& s : state_objects_)
      if (s.name == name) throw std::invalid_argument("ppe: state object '" + name + "' is registered twice");
    state_objects_.push_back({std::move(name), [&object] { return State(object.state_dict()); },
                              [&object](const State& s) { object.load_state_dict(s); }});
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
  std::vector<std::string> extension_names() const {
    std::vector<std::string> out;
    for (const auto& r : registry_) out.push_back(r.name);
    return out;
  }

  /// Adds an extension at run time (before the manager starts). `trigger`
  /// defaults to the extension's default trigger, `priority` to its priority;
  /// the name gets `_1`, `_2` suffixes when taken.
  void extend(AnyExtension ext, std::optional<triggers::AnyTrigger> trigger = std::nullopt, std::string name = {},
              std::optional<int> priority = std::nullopt, bool call_before_training = false) {
    if (started_) throw std::logic_error("ppe: extend called after the extensions were initialized");
    triggers::AnyTrigger t = trigger ? std::move(*trigger) : ext.default_trigger();
    const int p = priority ? *priority : ext.priority();
    const bool needs_model = ext.needs_model_state();
    const bool skippable = t.skippable();
    std::string n = register_name(std::move(name), ext.default_name(), ext.type(), ext.get(), ext.type_name(), p,
                                  runtime_.size());
    RuntimeEntry e{std::move(ext), std::move(t), std::move(n), p, call_before_training, needs_model, static_slot(p)};
    any_runtime_needs_model_ = any_runtime_needs_model_ || needs_model;
    runtime_skippable_ = runtime_skippable_ && skippable;
    // Kept sorted by descending priority, stable: after every entry of equal priority.
    auto pos = std::upper_bound(runtime_.begin(), runtime_.end(), p,
                                [](int prio, const RuntimeEntry& r) { return prio > r.priority; });
    runtime_.insert(pos, std::move(e));
    deferred_runtime_.reserve(runtime_.size());
  }
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
    if (started_) return;
    started_ = true;
    reset_quiet_window();
    start_time_ = clock_();
    cold_pass(ColdOp::Initialize, nullptr);
    observation_.clear();
    auto scope = reporter_.scope(observation_);
    cold_pass(ColdOp::CallBeforeTraining, nullptr);
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
  void finalize() {
    if (finalized_) return;
    finalized_ = true;
    cold_pass(ColdOp::Finalize, nullptr);
    writer_->finalize();
  }

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
  /// PPE's manager state: `_start_iteration`, `_start_execution`, `models`,
  /// `optimizers`, `state_objects`, `extensions` (`{name: {extension, trigger}}`),
  /// `ppe_version`; and, which PPE does not keep, `_elapsed_time` and
  /// `_stop_trigger` (`{public, internal}`: the state of both stop-trigger copies,
  /// e.g. an EarlyStoppingTrigger's best value and count).
  State state_dict() const {
    State models = State::dict(), optimizers = State::dict(), objects = State::dict(), exts = State::dict();
    for (const auto& [name, m] : models_) models.set(name, m.state_dict());
    for (const auto& [name, o] : optimizers_) optimizers.set(name, o.state_dict());
    for (const auto& s : state_objects_) objects.set(s.name, s.save());
    for (const auto& r : registry_) exts.set(r.name, entry_state(r));
    State out = State::dict();
    out.set("_start_iteration", iteration_);
    out.set("_start_execution", iteration_);
    out.set("models", std::move(models));
    out.set("optimizers", std::move(optimizers));
    out.set("state_objects", std::move(objects));
    out.set("extensions", std::move(exts));
    out.set("ppe_version", std::string(kVersion));
    out.set("_elapsed_time", started_ ? elapsed_time() : elapsed_offset_);
    out.set("_stop_trigger", stop_trigger_state());
    return out;
  }

  /// Restores a state taken by `state_dict()` (or by PPE). Every registered
  /// model, optimizer and extension must be present, and the saved models and
  /// optimizers must be exactly the manager's. All models and optimizers are
  /// checked before anything changes: on any difference (missing or
  /// unexpected names, missing, unexpected or mis-shaped parameters, optimizer
  /// groups or state that do not fit) nothing is loaded and the
  /// std::invalid_argument lists every difference. Saved extensions the
  /// manager does not have are ignored, as PPE does, with a warning.
  void load_state_dict(const State& state) {
    if (!state.is_dict())
      throw std::invalid_argument("ppe: a manager state must be a dict, got a " +
                                  std::string(State::kind_name(state.kind())));
    const State* version = state.find("ppe_version");
    if (!version || !version->is_string() || version->as_string() != kVersion)
      ppe::warn("You are trying to load a snapshot file taken using a different PPE version. Snapshot taken with PPE " +
                (version && version->is_string() ? version->as_string() : std::string("(unknown)")) +
                " but currently using PPE " + std::string(kVersion));
    std::vector<std::string> problems;
    const State* start = state.find("_start_iteration");
    if (!start || !start->is_int()) problems.push_back("'_start_iteration' is missing or not an int");
    check_names(state, "models", models_.names(), true, problems);
    check_names(state, "optimizers", optimizers_.names(), true, problems);
    check_names(state, "extensions", extension_names(), false, problems);
    // Check (and stage) every model and optimizer before changing any.
    std::vector<std::function<void()>> commits;
    auto prepare = [&](const auto& refs, std::string_view section) {
      const State* saved = state.find(section);
      for (const auto& [name, ref] : refs) {
        const State* s = saved && saved->is_dict() ? saved->find(name) : nullptr;
        if (!s) continue;  // reported by check_names
        try {
          commits.push_back(ref.prepare_load(*s, name));
        } catch (const std::exception& e) {
          problems.push_back(e.what());
        }
      }
    };
    prepare(models_, "models");
    prepare(optimizers_, "optimizers");
    if (!problems.empty()) {
      std::string msg = "ppe: cannot load the manager state (nothing was loaded):";
      for (const auto& p : problems) msg += "\n  - " + p;
      throw std::invalid_argument(msg);
    }
    const std::int64_t it = start->as_int();
    for (const auto& commit : commits) commit();
    if (const State* objects = state.find("state_objects"))
      for (const auto& s : state_objects_)
        if (const State* v = objects->find(s.name)) s.load(*v);
    for (const auto& r : registry_) load_entry_state(r, state.at("extensions").at(r.name));
    if (const State* stop = state.find("_stop_trigger")) load_stop_trigger_state(*stop);
    iteration_ = it;
    reset_quiet_window();  // triggers were replaced: ask them all again
    if (const State* e = state.find("_elapsed_time"); e && e->is_number()) {
      elapsed_offset_ = e->as_double();
      if (started_) start_time_ = clock_();
    }
  }

 protected:
  explicit Manager(const ManagerOptions& options, Models models, Optimizers optimizers)
      : max_epochs_(options.max_epochs()),
        iters_per_epoch_(options.iters_per_epoch()),
        out_(options.writer() ? options.writer()->out_dir().string() : options.out_dir()),
        writer_(options.writer() ? options.writer() : std::make_shared<writing::SimpleWriter>(out_)),
        clock_(options.clock()),
        rank_(options.rank()),
        world_size_(options.world_size()),
        models_(std::move(models)),
        optimizers_(std::move(optimizers)) {
    if (iters_per_epoch_ < 1)
      throw std::invalid_argument("ppe: iters_per_epoch must be an integer >= 1 (" +
                                  std::to_string(iters_per_epoch_) + " given)");
    if (!clock_) throw std::invalid_argument("ppe: the clock option must be a callable");
    for (const auto& [name, m] : models_) {
      reporter_.add_observer(name, m.module());
      reporter_.add_observers(name, m.submodules());
    }
  }

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
                            std::string_view type_name, int priority, std::size_t index, bool is_runtime = true) {
    std::string base = requested.empty() ? std::string(default_name) : std::move(requested);
    if (base == "training") throw std::invalid_argument("ppe: the name \"training\" is prohibited as an extension name");
    std::string name = base;
    for (int ordinal = 1; has_extension(name); ++ordinal) name = base + "_" + std::to_string(ordinal);
    registry_.push_back({name, type, object, type_name, priority, is_runtime, index});
    return name;
  }

  // Hooks implemented by the statically typed manager.
  virtual std::size_t static_slot(int priority) const noexcept = 0;
  virtual bool static_needs_model_state(std::int64_t iteration) const = 0;
  virtual bool evaluate_stop_trigger() = 0;
  virtual State stop_trigger_state() const = 0;
  virtual void load_stop_trigger_state(const State& state) = 0;
  virtual State static_entry_state(std::size_t index) const = 0;
  virtual void load_static_entry_state(std::size_t index, const State& state) = 0;
  /// The cold-path passes over all entries in priority order.
  enum class ColdOp { Initialize, CallBeforeTraining, Finalize, OnError, Stop };
  virtual void cold_pass(ColdOp op, std::exception_ptr ex) = 0;

  /// A cold-path operation on one runtime entry.
  void cold_runtime(RuntimeEntry& e, ColdOp op, std::exception_ptr ex) {
    switch (op) {
      case ColdOp::Initialize:
        if (!e.trigger.finished()) e.ext.initialize(*this);
        break;
      case ColdOp::CallBeforeTraining:
        if (e.call_before_training) e.ext(*this);
        break;
      case ColdOp::Finalize: e.ext.finalize(*this); break;
      case ColdOp::OnError: e.ext.on_error(*this, ex); break;
      case ColdOp::Stop: e.ext.on_stop(*this); break;
    }
  }

  /// Carries out a requested stop at an iteration boundary: `on_stop` of
  /// every extension, then finalize.
  void stop_on_request() {
    stopped_on_request_ = true;
    cold_pass(ColdOp::Stop, nullptr);
    finalize();
  }

  /// Runs every `on_error` once per manager lifetime.
  void run_on_error(std::exception_ptr ex) {
    if (on_error_called_) return;
    on_error_called_ = true;
    cold_pass(ColdOp::OnError, ex);
  }

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
  double start_time_ = 0, elapsed_offset_ = 0;
  bool started_ = false, finalized_ = false, on_error_called_ = false, stopped_on_request_ = false;
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
  };

  const Registered& lookup(std::string_view name) const {
    for (const auto& r : registry_)
      if (r.name == name) return r;
    throw std::out_of_range("ppe: extension '" + std::string(name) + "' not found; registered extensions: " +
                            detail::join_names(extension_names()));
  }
  State entry_state(const Registered& r) const {
    if (!r.is_runtime) return static_entry_state(r.index);
    const RuntimeEntry& e = runtime_by_registration(r);
    return State::dict({{"extension", e.ext.state_dict()}, {"trigger", e.trigger.state_dict()}});
  }
  void load_entry_state(const Registered& r, const State& s) {
    if (!r.is_runtime) return load_static_entry_state(r.index, s);
    RuntimeEntry& e = const_cast<RuntimeEntry&>(runtime_by_registration(r));
    if (const State* x = s.find("extension")) e.ext.load_state_dict(*x);
    if (const State* t = s.find("trigger")) e.trigger.load_state_dict(*t);
  }
  const RuntimeEntry& runtime_by_registration(const Registered& r) const {
    for (const auto& e : runtime_)
      if (e.name == r.name) return e;
    throw std::logic_error("ppe: internal error: runtime extension '" + r.name + "' lost");
  }
  // Compares the names saved under `section` with the manager's: missing ones
  // are problems; unexpected ones too when `exact`, else a warning.
  static void check_names(const State& state, std::string_view section, const std::vector<std::string>& names,
                          bool exact, std::vector<std::string>& problems) {
    const State* s = state.find(section);
    if (!s || !s->is_dict()) {
      problems.push_back("'" + std::string(section) + "' is missing or not a dict");
      return;
    }
    std::vector<std::string> missing, unexpected;
    for (const auto& n : names)
      if (!s->contains(n)) missing.push_back(n);
    for (const auto& [key, value] : s->as_dict())
      if (std::find(names.begin(), names.end(), key) == names.end()) unexpected.push_back(key);
    if (!missing.empty())
      problems.push_back("'" + std::string(section) + "' lacks entries for " + detail::join_names(missing));
    if (unexpected.empty()) return;
    const std::string text = "'" + std::string(section) + "' has entries the manager does not have: " +
                             detail::join_names(unexpected) + " (the manager has " + detail::join_names(names) + ")";
    if (exact)
      problems.push_back(text);
    else
      ppe::warn("ppe: ignored while loading the manager state: " + text);
  }

  std::vector<StateObject> state_objects_;
};

}  // namespace ppe::training
