// Definitions of utils/comparer.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
//
// How a comparison runs (docs/comparer.md, "How it works"): each engine runs
// on a thread of its own (PPE's thread pool). PPE swaps each engine's handler
// for a comparing one; here the handler is a template argument fixed at
// compile time, so `install` wraps the *runtime* of the module whose step
// hooks the handler calls first (`ComparingRuntime`), and its post-step hooks
// hand the step's targets to `Comparer::Impl::on_step`. Engines meet at each
// comparison point as at PPE's barrier (`arrive`): the last to arrive
// compares, then all go on. A counting semaphore bounds how many engines run
// at once (PPE's `concurrency`). Dump mode writes each point's targets to a
// file instead (`write_dump`), and `replay_dump` feeds such files, ours or
// PPE's, in as if an engine had reached those points.
//
// In this file: helpers for messages, names and dump files (detail), the
// shared state and the meeting of engines (`Comparer::Impl`), the runtime
// wrapper and its installation (detail), the free functions, and `Comparer`.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Type.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <semaphore>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "ppe/detail/python_repr.hpp"
#include "ppe/handler/outputs.hpp"
#include "ppe/runtime/any_ref.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/code_block.hpp"
#include "ppe/runtime/module_runtime.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/state.hpp"
#include "ppe/utils/comparer.hpp"
#include "ppe/warnings.hpp"

namespace ppe::utils::comparer {

namespace detail {

// A number for messages: the stream's default (6 significant digits) reads
// better there than std::to_string's fixed 6 decimals.
inline std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The multi-index of element `flat` of a tensor of `sizes` (row-major: the order of
// `reshape({-1})`), as Python prints a tuple: a
// one-element tuple keeps its trailing comma, `(3,)`.
inline std::string index_of(std::int64_t flat, at::IntArrayRef sizes) {
  std::vector<std::int64_t> idx(sizes.size());
  for (std::size_t i = sizes.size(); i-- > 0;) {
    idx[i] = flat % sizes[i];
    flat /= sizes[i];
  }
  std::string s = "(";
  for (std::size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + (idx.size() == 1 ? ",)" : ")");
}

// A step's outputs, named as PPE's `_normalize_outputs` names them: a dict
// keeps its keys, a sequence is numbered "0", "1", ..., a lone tensor is "0".
// These are the types the runtime's post-step hooks receive from the logics
// (docs/comparer.md); anything else cannot be named, so it is an error unless
// outputs are not compared.
inline std::vector<std::pair<std::string, at::Tensor>> named_outputs(const runtime::AnyRef& outs) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  if (const auto* o = outs.get_if<handler::Outputs>()) {
    for (const auto& item : *o) out.emplace_back(item.key(), item.value());
  } else if (const auto* d = outs.get_if<runtime::TensorDict>()) {
    for (const auto& item : *d) out.emplace_back(item.key(), item.value());
  } else if (const auto* t = outs.get_if<at::Tensor>()) {
    out.emplace_back("0", *t);
  } else if (const auto* m = outs.get_if<std::map<std::string, at::Tensor>>()) {
    for (const auto& [k, v] : *m) out.emplace_back(k, v);
  } else if (const auto* u = outs.get_if<std::unordered_map<std::string, at::Tensor>>()) {
    for (const auto& [k, v] : *u) out.emplace_back(k, v);
  } else if (const auto* v = outs.get_if<std::vector<at::Tensor>>()) {
    for (std::size_t i = 0; i < v->size(); ++i) out.emplace_back(std::to_string(i), (*v)[i]);
  } else if (outs.has_value()) {
    throw std::invalid_argument("ppe::utils::comparer: cannot name the step's outputs of type " +
                                c10::demangle(outs.type().name()) +
                                ": the logic must return ppe::handler::Outputs, a ppe::runtime::TensorDict, a map "
                                "or vector of tensors, or a tensor (or compare with outputs(false))");
  }
  return out;
}

// A `Select` with its patterns compiled once (they are matched at every
// comparison point). ECMAScript regexes: the closest std::regex grammar to
// Python's `re` for the patterns users write for parameter names.
struct Selector {
  bool all = false;
  std::vector<std::pair<std::string, std::regex>> patterns;

  explicit Selector(const Select& s) : all(s.all()) {
    for (const auto& p : s.patterns()) {
      try {
        patterns.emplace_back(p, std::regex(p, std::regex::ECMAScript));
      } catch (const std::regex_error& e) {
        throw std::invalid_argument("ppe::utils::comparer: the pattern '" + p +
                                    "' is not a valid regular expression: " + e.what());
      }
    }
  }
  bool none() const noexcept { return !all && patterns.empty(); }

  // The indices of the names selected, in order; a pattern matching none of
  // them is an error (PPE: "didnt find a match"). `match_continuous` anchors
  // the match at the start only, as Python's `re.match`. Every name a pattern
  // matches is kept (PPE's `_filter` keeps the first one only: docs/comparer.md).
  std::vector<std::size_t> pick(const std::vector<std::string>& names, const char* kind) const {
    std::vector<std::size_t> out;
    if (all) {
      for (std::size_t i = 0; i < names.size(); ++i) out.push_back(i);
      return out;
    }
    std::set<std::size_t> chosen;
    for (const auto& [source, re] : patterns) {
      bool matched = false;
      for (std::size_t i = 0; i < names.size(); ++i)
        if (std::regex_search(names[i], re, std::regex_constants::match_continuous)) {
          chosen.insert(i);
          matched = true;
        }
      if (!matched)
        throw std::invalid_argument("ppe::utils::comparer: no " + std::string(kind) + " name matches the pattern '" +
                                    source + "'; the names: " + ppe::detail::python_str_list(names));
    }
    return {chosen.begin(), chosen.end()};
  }
};

// An engine taking part in a comparison (or a dump replayed as one), with
// what it collected during the step being run.
struct Participant {
  EngineSpec spec;
  std::size_t index = 0;
  // The current step's intermediate values (named) and how many of each name
  // (each name counts on its own; PPE counts all names together).
  std::vector<std::pair<std::string, at::Tensor>> intermediates;
  std::map<std::string, int, std::less<>> counts;
  bool finished = false;
  // Dump mode (Comparer::dump): the directory written to, and the files so far.
  std::string dump_dir;
  std::int64_t dumped = 0;

  void clear_step() {
    intermediates.clear();
    counts.clear();
  }
};

// The participant whose engine runs on this thread (null elsewhere): how
// `intermediate_value`, called deep in a model's forward with no engine at
// hand, finds where to record (PPE's `_thread_local.handler`). Each engine has
// a thread of its own, so thread-local is exact.
inline Participant*& current_participant() {
  thread_local Participant* p = nullptr;
  return p;
}

// Thrown on an engine's thread to stop it when the comparison ended (a
// mismatch, another engine's error). Not a std::exception: user code that
// catches those lets it through.
struct Aborted {};

// The comparer and the participant a wrapped runtime reports to; `impl` is
// reset when compare() ends (a handler may keep the wrapper afterwards), so a
// later step through a stale wrapper reports nothing instead of touching a
// comparison that is over. Shared: every wrapper of one engine holds it.
struct Link {
  Comparer::Impl* impl = nullptr;
  Participant* participant = nullptr;
};

// The values an engine reports at a comparison point: target name
// (`output:`, `param:`, `grad:`, `intermediate:`) to tensor. A std::map, so
// targets are compared in name order (PPE sorts the baseline's keys).
struct Arrival {
  Point point;
  std::map<std::string, at::Tensor> targets;
};

// The comparison point of a dump file named by `Comparer::dump` or PPE:
// `dump_<count>_<Trainer|Evaluator>[_epoch_<e>]_iter_<batch>`. The engine
// part is Python's class name (`type(engine).__name__`), so it is matched
// loosely (lazy `[A-Za-z_]+?`, then "Evaluator" anywhere means evaluation).
// A dump has no iteration: `points_match` compares on the rest.
inline Point parse_dump_name(const std::string& name) {
  static const std::regex re("dump_[0-9]+_([A-Za-z_]+?)(_epoch_([0-9]+))?_iter_([0-9]+)");
  std::smatch m;
  if (!std::regex_match(name, m, re))
    throw std::runtime_error("ppe::utils::comparer: '" + name +
                             "' is not a dump file name (dump_<count>_<Trainer|Evaluator>[_epoch_<e>]_iter_<batch>)");
  // The digits may name a number past int64 (std::stoll would throw
  // std::out_of_range): such a name is no comparison point either.
  auto number = [&name](const std::ssub_match& digits, const char* field) {
    std::int64_t v = 0;
    const std::string s = digits.str();
    if (std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc())
      throw std::runtime_error("ppe::utils::comparer: the " + std::string(field) + " in the dump file name '" + name +
                               "' is " + s + ", expected at most " +
                               std::to_string(std::numeric_limits<std::int64_t>::max()));
    return v;
  };
  Point p;
  p.phase = m[1].str().find("Evaluator") != std::string::npos ? Phase::Eval : Phase::Train;
  if (m[3].matched) p.epoch = number(m[3], "epoch");
  p.batch_idx = number(m[4], "batch");
  return p;
}

// A dump's value as a tensor. PPE saves whatever its outputs held, so a
// Python number (its test model returns one) becomes a 0-d tensor of the
// matching dtype; `compare_fn` takes tensors only.
inline at::Tensor state_as_tensor(const State& v, const std::string& key, const std::string& file) {
  if (v.is_tensor()) return v.as_tensor();
  if (v.is_bool()) return at::scalar_tensor(v.as_bool(), at::kBool);
  if (v.is_int()) return at::scalar_tensor(v.as_int(), at::kLong);
  if (v.is_double()) return at::scalar_tensor(v.as_double(), at::kDouble);
  throw std::runtime_error("ppe::utils::comparer: the value '" + key + "' of the dump file " + file +
                           " is a " + std::string(State::kind_name(v.kind())) + ", not a tensor or a number");
}

// Whether two engines are at the same point; a dump's points have no
// iteration, and an evaluator's alone no epoch: those compare on what both know.
inline bool points_match(const Point& a, const Point& b) {
  return a.phase == b.phase && a.batch_idx == b.batch_idx && (!a.iteration || !b.iteration || a.iteration == b.iteration) &&
         (!a.epoch || !b.epoch || a.epoch == b.epoch);
}

}  // namespace detail

// The comparer's state: the options, the engines, and the meeting of the
// engines during one compare(). Every member below `mutex` is guarded by it.
struct Comparer::Impl {
  ComparerOptions options;
  CompareFn compare_fn;
  training::triggers::IntervalTrigger trigger;
  detail::Selector outputs, params, grads;
  std::vector<std::unique_ptr<detail::Participant>> participants;
  std::int64_t comparisons = 0;

  // The state of one compare(). `arrivals[i]` is engine i's targets at the
  // current point, `arrived` how many are in; `generation` counts the points
  // met, so a waiting engine can tell that its point was compared.
  // `permits` is the concurrency bound (PPE's semaphore).
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_ptr<std::counting_semaphore<>> permits;
  std::vector<std::optional<detail::Arrival>> arrivals;
  std::size_t arrived = 0;
  std::uint64_t generation = 0;
  std::uint64_t failed_generation = std::numeric_limits<std::uint64_t>::max();  // the point that failed
  bool aborted = false;
  std::exception_ptr error;
  std::size_t baseline = 0;

  explicit Impl(ComparerOptions o)
      : options(std::move(o)),
        compare_fn(options.compare_fn() ? options.compare_fn() : get_default_comparer()),
        trigger(options.trigger().value_or(ppe::epochs(1))),
        outputs(options.outputs()),
        params(options.params()),
        grads(options.grads()) {}

  // Records the first error and stops every engine. Call with `mutex` held.
  void fail_locked(std::exception_ptr e) {
    if (!error) error = std::move(e);
    aborted = true;
    cv.notify_all();
  }

  // The model whose parameters and gradients are compared: the one named
  // `options.model()` (PPE always takes "main"), else an engine's only model.
  torch::nn::Module& model_of(const detail::Participant& p) const {
    const training::Models& models = *p.spec.models;
    if (const training::ModelRef* m = models.find(options.model())) return *m->module();
    if (models.size() == 1) return *models.begin()->second.module();
    throw std::out_of_range("ppe::utils::comparer: the engine '" + p.spec.name + "' has no model named '" +
                            options.model() + "' to compare the parameters of; models: " +
                            ppe::detail::python_str_list(models.names()) + " (set ComparerOptions::model)");
  }

  // The targets of engine `p` at this point: the selected outputs, the
  // step's intermediate values, and the selected parameters and gradients
  // (read now, after the optimizer step). The intermediates are moved out:
  // the step is over.
  std::map<std::string, at::Tensor> collect(detail::Participant& p, const runtime::AnyRef& outs) {
    std::map<std::string, at::Tensor> targets;
    if (!outputs.none()) {
      const auto named = detail::named_outputs(outs);
      std::vector<std::string> names;
      for (const auto& [k, v] : named) names.push_back(k);
      for (std::size_t i : outputs.pick(names, "output")) targets["output:" + named[i].first] = named[i].second;
    }
    for (auto& [k, v] : p.intermediates) targets[k] = std::move(v);
    if (!params.none() || !grads.none()) {
      torch::nn::Module& m = model_of(p);
      if (!params.none()) {
        // The state dict's names (PPE filters `state_dict()`): parameters,
        // then buffers. Detached, so a later step cannot change them.
        std::vector<std::string> names;
        std::vector<at::Tensor> values;
        for (const auto& item : m.named_parameters(true)) names.push_back(item.key()), values.push_back(item.value());
        for (const auto& item : m.named_buffers(true)) names.push_back(item.key()), values.push_back(item.value());
        for (std::size_t i : params.pick(names, "parameter")) targets["param:" + names[i]] = values[i].detach();
      }
      if (!grads.none()) {
        std::vector<std::string> names;
        std::vector<at::Tensor> values;
        for (const auto& item : m.named_parameters(true))
          if (item.value().grad().defined()) names.push_back(item.key()), values.push_back(item.value().grad());
        for (std::size_t i : grads.pick(names, "gradient")) targets["grad:" + names[i]] = values[i].detach();
      }
    }
    return targets;
  }

  // A step of engine `p` ended: compares it when it is a comparison point
  // (training steps the trigger selects; every evaluation step, as PPE).
  // Only a trainer has a position; a lone evaluator's points have no
  // iteration or epoch.
  void on_step(detail::Participant& p, Phase phase, std::int64_t batch_idx, const runtime::AnyRef& outs) {
    Point point;
    point.phase = phase;
    point.batch_idx = batch_idx;
    if (p.spec.position) {
      const auto [done, len] = p.spec.position();
      if (phase == Phase::Train) {
        // The manager counts the iteration after the step: the trigger sees it
        // as it will be at the end of this iteration (PPE's proxy). `may_fire`
        // is the trigger's pure look-ahead: it needs no manager and leaves the
        // trigger's state alone.
        if (!trigger.may_fire(done + 1, len)) {
          p.clear_step();
          return;
        }
        point.iteration = done + 1;
        point.epoch = len > 0 ? done / len : 0;
      } else {
        // Evaluation runs after the iteration that triggered it: the epoch
        // that ended, as PPE's dump names carry it.
        point.iteration = done;
        point.epoch = done > 0 && len > 0 ? (done - 1) / len : 0;
      }
    }
    detail::Arrival a{point, collect(p, outs)};
    p.clear_step();
    if (!p.dump_dir.empty())
      write_dump(p, a);
    else
      arrive(p, std::move(a));
  }

  // Dump mode: one file per comparison point, PPE's name and content (a
  // dict of tensors pickled as `torch.save` writes it), so that PPE's
  // `add_dump` and Python's `torch.load` read it. Values go to the CPU (PPE
  // saves them on their device) so a dump replays on any machine.
  static void write_dump(detail::Participant& p, const detail::Arrival& a) {
    char count[16];
    std::snprintf(count, sizeof count, "%08lld", static_cast<long long>(p.dumped));
    std::string name = std::string("dump_") + count + (a.point.phase == Phase::Train ? "_Trainer" : "_Evaluator");
    if (a.point.epoch) name += "_epoch_" + std::to_string(*a.point.epoch);
    name += "_iter_" + std::to_string(a.point.batch_idx);
    State state = State::dict();
    for (const auto& [k, v] : a.targets) state.set(k, v.defined() ? v.detach().cpu() : v);
    const std::vector<char> bytes = serialization::pickle_dumps(state);
    const std::filesystem::path path = std::filesystem::path(p.dump_dir) / name;
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw std::runtime_error("ppe::utils::comparer: cannot write the dump file " + path.string());
    ++p.dumped;
  }

  // Replays the dump in `dir` as participant `p`: its files in name order
  // (the zero-padded count makes that the order they were written, as PPE's
  // `sorted(iterdir())`), each arriving as a comparison point would.
  void replay_dump(detail::Participant& p, const std::string& dir) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().filename().string().rfind("dump_", 0) == 0) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      detail::Arrival a{detail::parse_dump_name(path.filename().string()), {}};
      const State state = serialization::load_file(path);
      if (!state.is_dict())
        throw std::runtime_error("ppe::utils::comparer: the dump file " + path.string() + " holds no dict");
      for (const auto& [k, v] : state.as_dict()) {
        std::string key = k;
        if (key.rfind("intermedaite:", 0) == 0) key = "intermediate:" + key.substr(13);  // PPE's spelling
        a.targets[key] = detail::state_as_tensor(v, key, path.string());
      }
      arrive(p, std::move(a));
    }
  }

  // Engine `p` reached a comparison point: waits for the others; the last to
  // arrive compares (PPE's barrier; memory stays at one point's targets per
  // engine). An engine that already finished means the engines' points
  // differ (PPE's "Engines have different triggers"). Throws `Aborted` to
  // stop this engine when the comparison is over.
  void arrive(detail::Participant& p, detail::Arrival a) {
    std::unique_lock lock(mutex);
    if (aborted) throw detail::Aborted{};
    for (const auto& q : participants)
      if (q->finished) {
        fail_locked(std::make_exception_ptr(std::runtime_error(
            "ppe::utils::comparer: the engines reached different comparison points: '" + q->spec.name +
            "' finished its run while '" + p.spec.name + "' reached " + a.point.str() +
            " (different triggers, stop triggers or loader lengths; PPE: Engines have different triggers)")));
        throw detail::Aborted{};
      }
    arrivals[p.index] = std::move(a);
    if (++arrived == participants.size()) {
      const bool ok = compare_locked();
      if (!ok) failed_generation = generation;
      arrived = 0;
      for (auto& x : arrivals) x.reset();
      ++generation;
      cv.notify_all();
      if (!ok) throw detail::Aborted{};
      return;
    }
    // Lets another engine run meanwhile (concurrency), then waits for the
    // last. A point compared without a mismatch lets the engine go on even
    // if another engine failed since: it stops at its next point, so that
    // every engine stops at a deterministic place.
    const std::uint64_t gen = generation;
    lock.unlock();
    permits->release();
    lock.lock();
    cv.wait(lock, [&] { return generation != gen || aborted; });
    if (generation == gen || failed_generation == gen) throw detail::Aborted{};
    lock.unlock();
    permits->acquire();
  }

  // Every engine arrived: compares each with the baseline; false on a
  // mismatch or an error (recorded). `mutex` held, so `compare_fn` needs no
  // lock of its own. Every mismatch of the point is collected before
  // failing, so one error lists them all; a target only one side has is one.
  bool compare_locked() {
    try {
      const detail::Arrival& base = *arrivals[baseline];
      const std::string& bname = participants[baseline]->spec.name;
      std::vector<Mismatch> mismatches;
      for (std::size_t i = 0; i < participants.size(); ++i) {
        if (i == baseline) continue;
        const detail::Arrival& other = *arrivals[i];
        const std::string& oname = participants[i]->spec.name;
        if (!detail::points_match(other.point, base.point)) {
          fail_locked(std::make_exception_ptr(std::runtime_error(
              "ppe::utils::comparer: the engines reached different comparison points: '" + bname + "' " +
              base.point.str() + ", '" + oname + "' " + other.point.str() +
              " (different triggers, stop triggers or loader lengths; PPE: Engines have different triggers)")));
          return false;
        }
        for (const auto& [k, v] : base.targets) {
          const auto it = other.targets.find(k);
          if (it == other.targets.end())
            mismatches.push_back({k, bname, oname, "missing in '" + oname + "'"});
          else if (auto d = compare_fn(bname, oname, k, v, it->second))
            mismatches.push_back({k, bname, oname, *d});
        }
        for (const auto& [k, v] : other.targets)
          if (!base.targets.count(k)) mismatches.push_back({k, bname, oname, "missing in '" + bname + "' (the baseline)"});
      }
      if (!mismatches.empty()) {
        fail_locked(std::make_exception_ptr(ComparisonError(base.point, comparisons, std::move(mismatches))));
        return false;
      }
      ++comparisons;
      return true;
    } catch (...) {
      fail_locked(std::current_exception());  // a compare function's own error
      return false;
    }
  }

  // Engine `p`'s run ended. Another engine waiting at a point now waits for
  // an engine that will never come: that is the different-triggers error,
  // and it wakes the waiters.
  void finish(detail::Participant& p) {
    std::lock_guard lock(mutex);
    p.finished = true;
    if (aborted || arrived == 0) return;
    for (std::size_t i = 0; i < participants.size(); ++i)
      if (arrivals[i]) {
        fail_locked(std::make_exception_ptr(std::runtime_error(
            "ppe::utils::comparer: the engines reached different comparison points: '" + p.spec.name +
            "' finished its run while '" + participants[i]->spec.name + "' waits at " + arrivals[i]->point.str() +
            " (different triggers, stop triggers or loader lengths; PPE: Engines have different triggers)")));
        return;
      }
  }

  // The body of engine `p`'s thread: runs it under a permit; `Aborted` is
  // the comparer stopping it, any other exception is recorded (the first one
  // is what compare() rethrows) and stops the others.
  void run(detail::Participant& p) {
    detail::current_participant() = &p;
    permits->acquire();
    bool go = true;
    {
      std::lock_guard lock(mutex);
      go = !aborted;
    }
    if (go) {
      try {
        p.spec.run();
      } catch (const detail::Aborted&) {
      } catch (...) {
        std::lock_guard lock(mutex);
        fail_locked(std::current_exception());
      }
    }
    detail::current_participant() = nullptr;
    finish(p);
    permits->release();
  }
};

namespace detail {

// The runtime of a compared engine's model during compare(): forwards every
// hook to the model's own runtime (`execute` too, for CodeBlockLogic), so
// the engine computes exactly as it would alone, and reports the ends of
// steps. `train`/`eval` say which phases this module reports: a module
// shared by a trainer and its evaluator is wrapped once and reports both.
// The pre-step hooks start each step with no intermediate values.
class ComparingRuntime final : public runtime::BaseRuntime {
 public:
  ComparingRuntime(std::shared_ptr<runtime::BaseRuntime> inner, std::shared_ptr<Link> link)
      : BaseRuntime(inner->device_spec(), inner->options()), inner_(std::move(inner)), link_(std::move(link)) {}

  bool train = false;  // reports training steps
  bool eval = false;   // reports evaluation steps
  const std::shared_ptr<Link>& link() const noexcept { return link_; }
  const std::shared_ptr<runtime::BaseRuntime>& inner() const noexcept { return inner_; }

  void move_module(torch::nn::Module& m) override { inner_->move_module(m); }
  at::Tensor move_tensor(const at::Tensor& t) override { return inner_->move_tensor(t); }
  void initialize_module(torch::nn::Module& m, runtime::AnyRef l, torch::optim::Optimizer* o) override {
    inner_->initialize_module(m, l, o);
  }
  void train_epoch_begin(torch::nn::Module& m) override { inner_->train_epoch_begin(m); }
  void train_epoch_end(torch::nn::Module& m) override { inner_->train_epoch_end(m); }
  void train_pre_step(runtime::AnyRef t, torch::nn::Module& m, std::int64_t i, runtime::AnyRef b) override {
    if (train && link_->impl) link_->participant->clear_step();
    inner_->train_pre_step(t, m, i, b);
  }
  void train_post_step(runtime::AnyRef t, torch::nn::Module& m, std::int64_t i, runtime::AnyRef b,
                       runtime::AnyRef o) override {
    inner_->train_post_step(t, m, i, b, o);
    if (train && link_->impl) link_->impl->on_step(*link_->participant, Phase::Train, i, o);
  }
  void train_validation_begin(torch::nn::Module& m) override { inner_->train_validation_begin(m); }
  void train_validation_end(torch::nn::Module& m) override { inner_->train_validation_end(m); }
  void eval_pre_step(runtime::AnyRef e, torch::nn::Module& m, std::int64_t i, runtime::AnyRef b) override {
    if (eval && link_->impl) link_->participant->clear_step();
    inner_->eval_pre_step(e, m, i, b);
  }
  void eval_post_step(runtime::AnyRef e, torch::nn::Module& m, std::int64_t i, runtime::AnyRef b,
                      runtime::AnyRef o) override {
    inner_->eval_post_step(e, m, i, b, o);
    if (eval && link_->impl) link_->impl->on_step(*link_->participant, Phase::Eval, i, o);
  }
  void train_cleanup(torch::nn::Module& m) override { inner_->train_cleanup(m); }
  runtime::TensorDict execute(const runtime::CodeBlock& c, const runtime::TensorDict& b) override {
    return inner_->execute(c, b);
  }
  State state_dict() const override { return inner_->state_dict(); }
  void load_state_dict(const State& s) override { inner_->load_state_dict(s); }

 private:
  std::shared_ptr<runtime::BaseRuntime> inner_;
  std::shared_ptr<Link> link_;
};

// A wrapper installed on a module for one compare(), with the runtime it
// replaced (to put back).
struct Installed {
  std::shared_ptr<torch::nn::Module> module;
  std::shared_ptr<runtime::BaseRuntime> original;
  std::shared_ptr<ComparingRuntime> wrapper;
};

// Puts the original runtimes back (when still wrapped) and cuts the links:
// a guard, so the models are restored however compare() or dump() ends.
struct Restore {
  std::vector<Installed>& installed;
  ~Restore() {
    for (auto it = installed.rbegin(); it != installed.rend(); ++it) {
      it->wrapper->link()->impl = nullptr;
      if (runtime::module_runtime(*it->module) == it->wrapper) runtime::set_module_runtime(*it->module, it->original);
    }
  }
};

// Wraps the runtime of the first runtime module of each of `p`'s model sets
// (the module whose hooks its handler calls first, so each step is reported
// once). A module that is already wrapped by this participant (a trainer's
// evaluator on the same model) is reused; one wrapped by another engine
// cannot report to both, so sharing a model between engines is an error.
inline void install(Comparer::Impl& s, Participant& p, std::vector<Installed>& installed) {
  auto link = std::make_shared<Link>(Link{&s, &p});
  for (const auto& [models, phase] : p.spec.hooked) {
    std::shared_ptr<torch::nn::Module> module;
    for (const auto& [name, ref] : *models) {
      auto found = runtime::named_runtime_modules(*ref.module(), name);
      if (!found.empty()) {
        module = found.front().second;
        break;
      }
    }
    if (!module)
      throw std::invalid_argument("ppe::utils::comparer::Comparer: no module of the engine '" + p.spec.name +
                                  "' (models " + ppe::detail::python_str_list(models->names()) +
                                  ") has a runtime: call ppe::to(model, device) before comparing");
    std::shared_ptr<runtime::BaseRuntime> rt = runtime::module_runtime(*module);
    auto* wrapped = dynamic_cast<ComparingRuntime*>(rt.get());
    if (wrapped && wrapped->link() != link)
      throw std::invalid_argument("ppe::utils::comparer::Comparer: the engines '" +
                                  wrapped->link()->participant->spec.name + "' and '" + p.spec.name +
                                  "' share the module '" + module->name() + "': give each engine its own model");
    if (!wrapped) {
      auto wrapper = std::make_shared<ComparingRuntime>(rt, link);
      runtime::set_module_runtime(*module, wrapper);
      installed.push_back({module, rt, wrapper});
      wrapped = wrapper.get();
    }
    (phase == Phase::Train ? wrapped->train : wrapped->eval) = true;
  }
}

}  // namespace detail

// ---- free functions ----------------------------------------------------------

// PPE's default calls `torch.testing.assert_close`; this applies its rule
// (same shape, same dtype, |v1 - v2| <= atol + rtol * |v2|, NaNs equal when
// asked) and returns the description instead of raising. The negated
// comparisons also refuse NaN tolerances.
PPE_DECL CompareFn get_default_comparer(double rtol, double atol, bool equal_nan) {
  if (!(rtol >= 0) || !(atol >= 0))
    throw std::invalid_argument("ppe::utils::comparer::get_default_comparer: rtol and atol must be >= 0, got rtol " +
                                detail::number(rtol) + ", atol " + detail::number(atol));
  return [rtol, atol, equal_nan](const std::string&, const std::string&, const std::string&, const at::Tensor& v1,
                                 const at::Tensor& v2) -> std::optional<std::string> {
    if (!v1.defined() || !v2.defined()) {
      if (v1.defined() == v2.defined()) return std::nullopt;
      return std::string("one of the values is an undefined tensor");
    }
    const at::Tensor a = v1.detach().cpu();
    const at::Tensor b = v2.detach().cpu();
    if (a.sizes() != b.sizes())
      return "the shapes differ: " + ppe::detail::python_shape(a.sizes()) + " vs " +
             ppe::detail::python_shape(b.sizes());
    if (a.scalar_type() != b.scalar_type())
      return std::string("the dtypes differ: ") + c10::toString(a.scalar_type()) + " vs " +
             c10::toString(b.scalar_type());
    if (a.numel() == 0) return std::nullopt;
    const bool inexact = c10::isFloatingType(a.scalar_type()) || c10::isComplexType(a.scalar_type());
    // Integers and booleans are compared as doubles, with the same tolerances.
    const at::Tensor x = inexact ? a : a.to(at::kDouble);
    const at::Tensor y = inexact ? b : b.to(at::kDouble);
    // `isclose(other)` is asymmetric as assert_close is: |v2| (the other
    // engine's value) scales the tolerance.
    const at::Tensor close = x.isclose(y, rtol, atol, equal_nan).reshape({-1});
    const std::int64_t bad = close.logical_not().sum().item<std::int64_t>();
    if (bad == 0) return std::nullopt;
    // The greatest differences among the elements that differ (a NaN counts
    // as an infinite difference).
    const double inf = std::numeric_limits<double>::infinity();
    const at::Tensor diff = (x - y).abs().to(at::kDouble).reshape({-1}).nan_to_num(inf).masked_fill(close, 0.0);
    const at::Tensor rel = (diff / y.abs().to(at::kDouble).reshape({-1})).nan_to_num(inf).masked_fill(close, 0.0);
    const std::int64_t ia = diff.argmax().item<std::int64_t>();
    const std::int64_t ir = rel.argmax().item<std::int64_t>();
    const std::int64_t n = a.numel();
    return std::to_string(bad) + " of " + std::to_string(n) + " elements differ (" +
           detail::number(100.0 * static_cast<double>(bad) / static_cast<double>(n)) +
           "%); the greatest absolute difference is " + detail::number(diff[ia].item<double>()) + " at index " +
           detail::index_of(ia, a.sizes()) + ", the greatest relative difference " +
           detail::number(rel[ir].item<double>()) + " at index " + detail::index_of(ir, a.sizes()) +
           " (allowed: |v1 - v2| <= " + detail::number(atol) + " + " + detail::number(rtol) + " * |v2|)";
  };
}

// Records `value` for the step being run on this thread, named
// `intermediate:<name>_<n>` with n counted per name in the step (PPE counts
// all names together, under the literal key "name": docs/comparer.md).
PPE_DECL void intermediate_value(std::string_view name, const at::Tensor& value) {
  detail::Participant* p = detail::current_participant();
  if (!p) return;
  auto it = p->counts.find(name);
  if (it == p->counts.end()) it = p->counts.emplace(std::string(name), 0).first;
  // A copy: the value as it was at this call, whatever the step does to it later.
  p->intermediates.emplace_back("intermediate:" + std::string(name) + "_" + std::to_string(it->second++),
                                value.detach().clone());
}

// "training iteration 3 (epoch 0, batch 2)" or "evaluation batch 1 (after
// iteration 3)": what a message names, with only the parts the point knows.
PPE_DECL std::string Point::str() const {
  if (phase == Phase::Train) {
    std::string s = "training ";
    if (iteration) s += "iteration " + std::to_string(*iteration) + " (";
    if (epoch) s += "epoch " + std::to_string(*epoch) + ", ";
    s += "batch " + std::to_string(batch_idx);
    return iteration ? s + ")" : s;
  }
  std::string s = "evaluation batch " + std::to_string(batch_idx);
  if (iteration) s += " (after iteration " + std::to_string(*iteration) + ")";
  return s;
}

PPE_DECL std::string ComparisonError::message(const Point& point, std::int64_t index,
                                               const std::vector<Mismatch>& mismatches) {
  std::string s = "ppe::utils::comparer: the engines differ at " + point.str() + " (after " + std::to_string(index) +
                  " matching comparison point" + (index == 1 ? "" : "s") + "):";
  for (const Mismatch& m : mismatches)
    s += "\n  '" + m.name + "': '" + m.baseline + "' (baseline) vs '" + m.engine + "': " + m.detail;
  return s;
}

// ---- Comparer ----------------------------------------------------------------

PPE_DECL Comparer::Comparer(ComparerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  if (impl_->options.concurrency() && *impl_->options.concurrency() < 1)
    throw std::invalid_argument("ppe::utils::comparer::Comparer: concurrency must be >= 1, got " +
                                std::to_string(*impl_->options.concurrency()));
}

PPE_DECL Comparer::~Comparer() = default;

PPE_DECL const ComparerOptions& Comparer::options() const noexcept { return impl_->options; }

PPE_DECL std::int64_t Comparer::comparisons() const noexcept { return impl_->comparisons; }

// Checks an engine (or dump) before it joins: a unique name; trainers and
// evaluators not mixed (PPE's "All the engines must be of the same type"), a
// dump joins either; no trigger with evaluators; not already run.
PPE_DECL void Comparer::add(detail::EngineSpec spec) {
  Impl& s = *impl_;
  const auto kind_name = [](detail::EngineKind k) {
    return k == detail::EngineKind::Trainer ? "a trainer" : k == detail::EngineKind::Evaluator ? "an evaluator" : "a dump";
  };
  if (spec.name.empty()) throw std::invalid_argument("ppe::utils::comparer::Comparer::add_engine: the name is empty");
  for (const auto& p : s.participants) {
    if (p->spec.name == spec.name)
      throw std::invalid_argument("ppe::utils::comparer::Comparer::add_engine: an engine named '" + spec.name +
                                  "' is already added");
    if (p->spec.kind != spec.kind && p->spec.kind != detail::EngineKind::Dump && spec.kind != detail::EngineKind::Dump)
      throw std::invalid_argument("ppe::utils::comparer::Comparer::add_engine: '" + spec.name + "' is " +
                                  kind_name(spec.kind) + " but '" + p->spec.name + "' is " + kind_name(p->spec.kind) +
                                  ": all the engines must be of the same type");
  }
  if (spec.kind == detail::EngineKind::Evaluator && s.options.trigger())
    throw std::invalid_argument("ppe::utils::comparer::Comparer::add_engine: '" + spec.name +
                                "' is an evaluator, but a trigger is set: a trigger selects trainers' steps "
                                "(evaluators are compared at every step; PPE accepts only trainers with a trigger)");
  if (spec.started)
    throw std::invalid_argument("ppe::utils::comparer::Comparer::add_engine: the engine '" + spec.name +
                                "' already ran; its handler keeps the runtimes it found then, so its steps cannot be "
                                "observed: add engines that have not run yet");
  auto p = std::make_unique<detail::Participant>();
  p->spec = std::move(spec);
  p->index = s.participants.size();
  s.participants.push_back(std::move(p));
}

// Runs every engine on a thread of its own until all end or one fails, then
// rethrows the first error. The state of a previous compare() is reset here;
// the engines themselves run once only.
PPE_DECL void Comparer::compare() {
  Impl& s = *impl_;
  const std::size_t n = s.participants.size();
  if (n < 2)
    throw std::invalid_argument("ppe::utils::comparer::Comparer::compare: needs at least two engines, got " +
                                std::to_string(n));
  s.baseline = 0;
  if (const auto& b = s.options.baseline()) {
    std::vector<std::string> names;
    bool found = false;
    for (const auto& p : s.participants) {
      names.push_back(p->spec.name);
      if (p->spec.name == *b) {
        s.baseline = p->index;
        found = true;
      }
    }
    if (!found)
      throw std::invalid_argument("ppe::utils::comparer::Comparer::compare: the baseline '" + *b +
                                  "' is not an engine; engines: " + ppe::detail::python_str_list(names));
  }
  for (const auto& p : s.participants)
    if (p->finished)
      throw std::logic_error("ppe::utils::comparer::Comparer::compare: the engines were compared already (an engine "
                             "runs in one compare() only)");
  s.arrivals.assign(n, std::nullopt);
  s.arrived = 0;
  s.generation = 0;
  s.failed_generation = std::numeric_limits<std::uint64_t>::max();
  s.aborted = false;
  s.error = nullptr;
  s.comparisons = 0;
  const int concurrency = s.options.concurrency().value_or(static_cast<int>(n));
  s.permits = std::make_unique<std::counting_semaphore<>>(concurrency);

  // Wrap the runtime of the first runtime module of each model set (the
  // module whose hooks each handler calls first), and restore them at the end.
  std::vector<detail::Installed> installed;
  detail::Restore restore{installed};
  for (const auto& p : s.participants) detail::install(s, *p, installed);

  // A thread that fails to start stops those already started (they stop at
  // their next point) before the error propagates: a std::thread must be
  // joined before it is destroyed.
  std::vector<std::thread> threads;
  threads.reserve(n);
  try {
    for (const auto& p : s.participants) threads.emplace_back([&s, q = p.get()] { s.run(*q); });
  } catch (...) {
    {
      std::lock_guard lock(s.mutex);
      s.fail_locked(std::current_exception());
    }
    for (auto& t : threads) t.join();
    throw;
  }
  for (auto& t : threads) t.join();
  if (s.error) std::rethrow_exception(s.error);
  // Engines that were never compared are not shown to match.
  if (s.comparisons == 0)
    ppe::warn("ppe::utils::comparer: no comparison point was reached: the trigger never fired, the loaders were "
              "empty, or the engines' handler does not call the runtimes' step hooks");
}

// A dump joins as a participant whose "run" replays its files.
PPE_DECL void Comparer::add_dump(std::string name, const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument("ppe::utils::comparer::Comparer::add_dump: '" + dir + "' is not a directory");
  detail::EngineSpec spec;
  spec.name = std::move(name);
  spec.kind = detail::EngineKind::Dump;
  add(std::move(spec));
  detail::Participant* p = impl_->participants.back().get();
  p->spec.run = [impl = impl_.get(), p, dir] { impl->replay_dump(*p, dir); };
}

// Dump mode (`Comparer::dump`): runs one engine on this thread, outside any
// compare(), with its steps written to `dir` instead of met by others.
PPE_DECL void Comparer::run_dump(detail::EngineSpec spec, const std::string& dir) {
  if (spec.started)
    throw std::invalid_argument("ppe::utils::comparer::Comparer::dump: the engine already ran; its handler keeps the "
                                "runtimes it found then, so its steps cannot be observed: dump an engine that has "
                                "not run yet");
  std::filesystem::create_directories(dir);
  Impl& s = *impl_;
  detail::Participant p;
  p.spec = std::move(spec);
  p.dump_dir = dir;
  std::vector<detail::Installed> installed;
  detail::Restore restore{installed};
  detail::install(s, p, installed);
  struct Current {
    explicit Current(detail::Participant* q) { detail::current_participant() = q; }
    ~Current() { detail::current_participant() = nullptr; }
  } current(&p);
  p.spec.run();
}

}  // namespace ppe::utils::comparer
