// Definitions of training/manager.hpp's out-of-line members: included by it
// when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/training/manager.hpp"

namespace ppe::training {

PPE_DECL const std::shared_ptr<torch::nn::Module>& Manager::model(std::string_view name) const {
  check_model_available();
  if (const ModelRef* m = models_.find(name)) return m->module();
  throw std::out_of_range("ppe: no model named '" + std::string(name) +
                          "'; models: " + ppe::detail::python_str_list(models_.names()));
}

PPE_DECL torch::optim::Optimizer& Manager::optimizer(std::string_view name) const {
  if (const OptimizerRef* o = optimizers_.find(name)) return o->optimizer();
  throw std::out_of_range("ppe: no optimizer named '" + std::string(name) +
                          "'; optimizers: " + ppe::detail::python_str_list(optimizers_.names()));
}

PPE_DECL std::vector<std::string> Manager::extension_names() const {
  std::vector<std::string> out;
  for (const auto& r : registry_) out.push_back(r.name);
  return out;
}

PPE_DECL void Manager::extend(AnyExtension ext, std::optional<triggers::AnyTrigger> trigger, std::string name,
                             std::optional<int> priority, bool call_before_training) {
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

PPE_DECL std::vector<std::string> Manager::composition() const {
  std::vector<std::string> out;
  for (const auto& r : registry_) {
    const std::string trigger =
        r.is_runtime ? runtime_by_registration(r).trigger.description() : static_trigger_description(r.index);
    out.push_back("'" + r.name + "' " + std::string(r.type_name) + " priority " + std::to_string(r.priority) +
                  " trigger " + trigger);
  }
  return out;
}

namespace {
// FNV-1a (64 bit): a short fingerprint that is the same on every machine and
// build (std::hash is not); it identifies, it does not protect.
std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}
std::string hex16(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return out;
}
}  // namespace

// Every rank must run the same extensions on the same triggers: a collective
// inside one (a distributed evaluator, a snapshot's barrier) would otherwise
// wait forever for a rank that never calls it. One all-gather of a 64-bit
// fingerprint; only on a mismatch, a second one of the descriptions, to name
// the first difference.
PPE_DECL void Manager::check_composition() const {
  const std::vector<std::string> lines = composition();
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  const std::vector<std::string> prints = communicator_->all_gather(hex16(fnv1a64(text)));
  if (std::all_of(prints.begin(), prints.end(), [&](const std::string& p) { return p == prints.front(); })) return;
  const std::vector<std::string> texts = communicator_->all_gather(text);
  auto split = [](const std::string& t) {
    std::vector<std::string> v;
    for (std::size_t s = 0, e; (e = t.find('\n', s)) != std::string::npos; s = e + 1) v.push_back(t.substr(s, e - s));
    return v;
  };
  const std::vector<std::string> first = split(texts.front());
  for (std::size_t r = 1; r < texts.size(); ++r) {
    const std::vector<std::string> other = split(texts[r]);
    if (other == first) continue;
    std::size_t i = 0;
    while (i < first.size() && i < other.size() && first[i] == other[i]) ++i;
    auto at = [i](const std::vector<std::string>& v) { return i < v.size() ? v[i] : std::string("(nothing)"); };
    throw std::runtime_error("ppe: the ranks' managers differ, so their collectives would not match: at extension " +
                             std::to_string(i + 1) + ", rank 0 has " + at(first) + " and rank " + std::to_string(r) +
                             " has " + at(other) + " (every rank must register the same extensions, names, "
                             "priorities and triggers)");
  }
}

PPE_DECL void Manager::start() {
  if (communicator_ && world_size_ > 1) check_composition();
  started_ = true;
  cold_ = profiling_;
  if (profiling_) {
    constexpr std::string_view prefix = "ppe.training.ExtensionsManager.run_extensions:";
    static_tags_.assign(registry_.size(), std::string());
    for (const auto& r : registry_)
      if (!r.is_runtime) static_tags_.at(r.index) = std::string(prefix) + r.name;
    runtime_tags_.clear();
    for (const auto& r : runtime_) runtime_tags_.push_back(std::string(prefix) + r.name);
  }
  reset_quiet_window();
  start_time_ = clock_();
  cold_pass(ColdOp::Initialize, nullptr);
  observation_.clear();
  auto scope = reporter_.scope(observation_);
  cold_pass(ColdOp::CallBeforeTraining, nullptr);
}

PPE_DECL void Manager::warn_unreported_keys() const {
  if (!check_report_keys_) return;
  const std::optional<std::vector<std::string>> reported = observation_.keys_ever_set();
  if (!reported) return;  // more keys than the observation keeps a record of: unknown
  std::string missing;
  auto use = [&](const std::string& reader, const std::string& key) {
    if (std::find(reported->begin(), reported->end(), key) == reported->end())
      missing += "\n  - '" + key + "', read by " + reader;
  };
  static_consumed_keys(use);
  for (const auto& r : runtime_) {
    for (const auto& k : r.ext.consumed_keys()) use("'" + r.name + "'", k);
    for (const auto& k : r.trigger.consumed_keys()) use("the trigger of '" + r.name + "'", k);
  }
  if (missing.empty()) return;
  std::vector<std::string> present = *reported;
  std::sort(present.begin(), present.end());
  warn("ppe: at the end of this run (iteration " + std::to_string(iteration_) +
       "), keys that extensions or triggers read were never reported in it:" + missing +
       "\nKeys reported: " + ppe::detail::python_str_list(present) +
       "\n(a typo, or a value reported less often than this run was long; "
       "ManagerOptions().check_report_keys(false) turns this warning off)");
}

PPE_DECL void Manager::finalize() {
  if (finalized_) return;
  finalized_ = cold_ = true;
  cold_pass(ColdOp::Finalize, nullptr);
  writer_->finalize();
  warn_unreported_keys();
}

PPE_DECL State Manager::state_dict(StateCopy copy) const {
  State models = State::dict(), optimizers = State::dict(), objects = State::dict(), exts = State::dict();
  for (const auto& [name, m] : models_) models.set(name, m.state_dict());
  for (const auto& [name, o] : optimizers_) optimizers.set(name, o.state_dict(copy));
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
  State composition = State::dict();
  for (const auto& r : registry_) composition.set(r.name, std::string(r.type_name));
  out.set("_composition", std::move(composition));
  out.set("_composition_fingerprint", composition_fingerprint());
  return out;
}

PPE_DECL std::string Manager::composition_fingerprint() const {
  std::string text;
  for (const auto& r : registry_) text.append(r.name).append(" ").append(r.type_name).append("\n");
  return hex16(fnv1a64(text));
}

// The differences between a saved composition (`{name: type}`) and the
// manager's, one line each; `skip` gets the manager's extensions whose saved
// state must not be loaded (absent, renamed or of another type).
PPE_DECL std::vector<std::string> Manager::composition_differences(const State& saved,
                                                                   std::vector<std::string>& skip) const {
  std::vector<std::string> out, removed, added;
  auto type_of = [&](const std::string& name) -> const Registered* {
    for (const auto& r : registry_)
      if (r.name == name) return &r;
    return nullptr;
  };
  for (const auto& [name, type] : saved.as_dict()) {
    const std::string saved_type = type.is_string() ? type.as_string() : std::string("(unknown)");
    if (const Registered* r = type_of(name)) {
      if (saved_type != r->type_name) {
        out.push_back("'" + name + "' is a " + saved_type + " in the state and a " + std::string(r->type_name) +
                      " in the manager");
        skip.push_back(name);
      }
    } else {
      removed.push_back(name);
    }
  }
  for (const auto& r : registry_)
    if (!saved.contains(r.name)) added.push_back(r.name);
  // A removed and an added extension of the same type: most likely renamed.
  for (auto a = added.begin(); a != added.end();) {
    const std::string_view type = type_of(*a)->type_name;
    auto rm = std::find_if(removed.begin(), removed.end(), [&](const std::string& n) {
      const State& t = saved.at(n);
      return t.is_string() && t.as_string() == type;
    });
    if (rm == removed.end()) {
      ++a;
      continue;
    }
    out.push_back("'" + *rm + "' (" + std::string(type) + ") in the state is named '" + *a +
                  "' in the manager (renamed?)");
    skip.push_back(*a);
    removed.erase(rm);
    a = added.erase(a);
  }
  for (const auto& n : removed)
    out.push_back("'" + n + "' (" + (saved.at(n).is_string() ? saved.at(n).as_string() : std::string("?")) +
                  ") is in the state but not in the manager (removed)");
  for (const auto& n : added) {
    out.push_back("'" + n + "' (" + std::string(type_of(n)->type_name) +
                  ") is in the manager but not in the state (added)");
    skip.push_back(n);
  }
  return out;
}

PPE_DECL std::vector<std::string> Manager::load_state_dict(const State& state, const LoadStateOptions& options) {
  if (!state.is_dict())
    throw std::invalid_argument("ppe: a manager state must be a dict, got a " +
                                std::string(State::kind_name(state.kind())));
  // The schema first: a state of another composition fails before anything
  // is checked or loaded, with every difference named.
  std::vector<std::string> skip, skipped;
  if (const State* saved = state.find("_composition"); saved && saved->is_dict()) {
    const std::vector<std::string> diffs = composition_differences(*saved, skip);
    if (!diffs.empty() && !options.allow_composition_change()) {
      const State* print = state.find("_composition_fingerprint");
      std::string msg = "ppe: the state was saved by a manager of another composition (fingerprint " +
                        (print && print->is_string() ? print->as_string() : std::string("?")) + ", this manager's " +
                        composition_fingerprint() + "); nothing was loaded:";
      for (const auto& d : diffs) msg += "\n  - " + d;
      msg += "\nTo load what matches and skip the rest, pass LoadStateOptions().allow_composition_change(true) "
             "(snapshot: SnapshotOptions().allow_composition_change(true)).";
      throw std::invalid_argument(msg);
    }
    skipped = diffs;
  }
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
  // With a composition, its differences were reported above: the saved
  // extensions the manager lacks are expected, not warned about again.
  std::vector<std::string> loaded_names;
  for (auto& n : extension_names())
    if (std::find(skip.begin(), skip.end(), n) == skip.end()) loaded_names.push_back(std::move(n));
  if (const State* saved = state.find("_composition"); saved && saved->is_dict())
    if (const State* exts = state.find("extensions"); exts && exts->is_dict())
      for (const auto& [name, s] : exts->as_dict())
        if (std::find(loaded_names.begin(), loaded_names.end(), name) == loaded_names.end())
          loaded_names.push_back(name);
  check_names(state, "extensions", loaded_names, false, problems);
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
        problems.push_back(ppe::detail::error_message(e));
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
  for (const auto& r : registry_)
    if (std::find(skip.begin(), skip.end(), r.name) == skip.end())
      load_entry_state(r, state.at("extensions").at(r.name));
  if (const State* stop = state.find("_stop_trigger")) load_stop_trigger_state(*stop);
  iteration_ = it;
  // A re-split sampler: continue in this world's batches.
  std::optional<DataPosition> position;
  std::string position_from;
  for (const auto& o : state_objects_) {
    if (!o.position) continue;
    const std::optional<DataPosition> p = o.position();
    if (!p) continue;
    if (position && (p->iteration != position->iteration || p->iters_per_epoch != position->iters_per_epoch))
      throw std::invalid_argument("ppe: the state objects '" + position_from + "' and '" + o.name +
                                  "' place the data at different iterations after a change of the world size (" +
                                  std::to_string(position->iteration) + " of " +
                                  std::to_string(position->iters_per_epoch) + " per epoch, " +
                                  std::to_string(p->iteration) + " of " + std::to_string(p->iters_per_epoch) + ")");
    position = p;
    position_from = o.name;
  }
  if (position) {
    iteration_ = position->iteration;
    iters_per_epoch_ = position->iters_per_epoch;
  }
  reset_quiet_window();  // triggers were replaced: ask them all again
  if (const State* e = state.find("_elapsed_time"); e && e->is_number()) {
    elapsed_offset_ = e->as_double();
    if (started_) start_time_ = clock_();
  }
  return skipped;
}

PPE_DECL Manager::Manager(const ManagerOptions& options, Models models, Optimizers optimizers)
    : max_epochs_(options.max_epochs()),
      iters_per_epoch_(options.iters_per_epoch()),
      out_((options.writer() && !options.writer()->adopt_out_dir(options.out_dir()))
               ? options.writer()->out_dir().string()
               : options.out_dir()),
      writer_(options.writer() ? options.writer() : std::make_shared<writing::SimpleWriter>(out_)),
      clock_(options.clock()),
      rank_(options.communicator() ? options.communicator()->rank() : options.rank()),
      world_size_(options.communicator() ? options.communicator()->world_size() : options.world_size()),
      communicator_(options.communicator()),
      profile_(options.enable_profile()),
      trace_(options.enable_trace()),
      profiling_(profile_ || trace_),
      check_report_keys_(options.check_report_keys()),
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

PPE_DECL std::string Manager::register_name(std::string requested, std::string_view default_name, const void* type,
                                           void* object, std::string_view type_name, int priority, std::size_t index,
                                           bool is_runtime) {
  std::string base = requested.empty() ? std::string(default_name) : std::move(requested);
  if (base == "training") throw std::invalid_argument("ppe: the name \"training\" is prohibited as an extension name");
  std::string name = base;
  for (int ordinal = 1; has_extension(name); ++ordinal) name = base + "_" + std::to_string(ordinal);
  registry_.push_back({name, type, object, type_name, priority, is_runtime, index});
  return name;
}

PPE_DECL void Manager::cold_runtime(RuntimeEntry& e, ColdOp op, std::exception_ptr ex) {
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

PPE_DECL void Manager::stop_on_request() {
  stopped_on_request_ = true;
  cold_pass(ColdOp::Stop, nullptr);
  finalize();
}

PPE_DECL void Manager::rethrow_naming_lost_ranks(std::exception_ptr ex) {
  const std::string lost = communicator_->lost_ranks_message();
  if (lost.empty()) return;
  std::string what = "an unknown exception";
  try {
    std::rethrow_exception(ex);
  } catch (const std::exception& e) {
    what = ppe::detail::error_message(e);
  } catch (...) {
  }
  throw std::runtime_error("ppe: " + lost + "; the error on rank " + std::to_string(rank_) + ": " + what);
}

PPE_DECL void Manager::run_on_error(std::exception_ptr ex) {
  close_iteration_record();  // the failed iteration's time ends here
  if (on_error_called_) return;
  on_error_called_ = true;
  cold_pass(ColdOp::OnError, ex);
}

PPE_DECL const Manager::Registered& Manager::lookup(std::string_view name) const {
  for (const auto& r : registry_)
    if (r.name == name) return r;
  throw std::out_of_range("ppe: extension '" + std::string(name) +
                          "' not found; registered extensions: " + ppe::detail::python_str_list(extension_names()));
}

PPE_DECL State Manager::entry_state(const Registered& r) const {
  if (!r.is_runtime) return static_entry_state(r.index);
  const RuntimeEntry& e = runtime_by_registration(r);
  return entry_state_of(e.ext.state_dict(), e.trigger.state_dict());
}

PPE_DECL Manager::~Manager() = default;

PPE_DECL State Manager::entry_state_of(State extension, State trigger) {
  return State::dict({{"extension", std::move(extension)}, {"trigger", std::move(trigger)}});
}

PPE_DECL void Manager::load_entry_state(const Registered& r, const State& s) {
  if (!r.is_runtime) return load_static_entry_state(r.index, s);
  RuntimeEntry& e = const_cast<RuntimeEntry&>(runtime_by_registration(r));
  if (const State* x = s.find("extension")) e.ext.load_state_dict(*x);
  if (const State* t = s.find("trigger")) e.trigger.load_state_dict(*t);
}

PPE_DECL const Manager::RuntimeEntry& Manager::runtime_by_registration(const Registered& r) const {
  for (const auto& e : runtime_)
    if (e.name == r.name) return e;
  throw std::logic_error("ppe: internal error: runtime extension '" + r.name + "' lost");
}

PPE_DECL void Manager::check_names(const State& state, std::string_view section,
                                   const std::vector<std::string>& names, bool exact,
                                   std::vector<std::string>& problems) {
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
    problems.push_back("'" + std::string(section) + "' lacks entries for " + ppe::detail::python_str_list(missing));
  if (unexpected.empty()) return;
  const std::string text = "'" + std::string(section) +
                           "' has entries the manager does not have: " + ppe::detail::python_str_list(unexpected) +
                           " (the manager has " + ppe::detail::python_str_list(names) + ")";
  if (exact)
    problems.push_back(text);
  else
    ppe::warn("ppe: ignored while loading the manager state: " + text);
}

}  // namespace ppe::training
