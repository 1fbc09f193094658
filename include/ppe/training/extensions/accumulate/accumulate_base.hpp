#pragma once
/// \file
/// `AccumulateBase` (PPE's `accumulate._accumulate_base.AccumulateBase`): the
/// machinery of the accumulate extensions. Each iteration it adds the
/// observed value of one key to a summary; when its own trigger fires it
/// reports the summary's result under another key and starts over. The five
/// extensions (AverageAccumulate, StandardDeviationAccumulate,
/// UnbiasedStandardDeviationAccumulate, MinAccumulate, MaxAccumulate) are
/// `AccumulateBase` over their summary type plus a name.

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/communicator.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/accumulate/summary/summary_base.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of the accumulate extensions (PPE's constructor arguments after
/// `conversion_key_pair`).
struct AccumulateOptions {
  /// When to report the accumulated value and start a new summary (PPE's
  /// `trigger`, default `(1, "epoch")`). Any trigger or callable
  /// `bool(const Manager&)`. Distinct from the extension's own trigger (every
  /// iteration), which decides when values are added.
  PPE_ARG(triggers::AnyTrigger, trigger) = ppe::epochs(1);
  /// Combine the summaries of every rank before reporting (PPE's
  /// `distributed`): when the manager has a communicator of more than one
  /// rank, each rank's summary is gathered and they are added in rank order,
  /// so every rank reports the value over all ranks' values. Without one
  /// (single process) the local summary is reported.
  PPE_ARG(bool, distributed) = false;
};

/// An extension that accumulates the observation's `conversion_key_pair.first`
/// in a summary `S` every iteration and, when `options.trigger()` fires,
/// reports `S::compute_accumulate()` as `conversion_key_pair.second` (through
/// the reporter, into the same iteration's observation) and starts a new
/// summary.
///
/// PPE's attributes: priority `kPriorityEditor` (it edits the observation
/// before readers such as LogReport see it), its own trigger every iteration
/// (`ppe::iterations(1)`). A missing source key is a `std::out_of_range`
/// naming the key and the keys present (PPE: KeyError).
template <accumulate::summary S>
class AccumulateBase {
 public:
  using extension_concept = extension_tag;
  using summary_type = S;
  static constexpr int priority = kPriorityEditor;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `conversion_key_pair`: (the observation key to accumulate, the key to
  /// report the result under); neither may be empty.
  explicit AccumulateBase(std::pair<std::string, std::string> conversion_key_pair, AccumulateOptions options = {})
      : keys_(std::move(conversion_key_pair)),
        trigger_(std::move(options.trigger())),
        distributed_(options.distributed()) {
    if (keys_.first.empty() || keys_.second.empty())
      throw std::invalid_argument("ppe: an accumulate extension needs two non-empty keys in conversion_key_pair, got " +
                                  ppe::detail::python_str_tuple(std::array{keys_.first, keys_.second}));
  }

  /// Adds the observed value; reports and starts over when the trigger fires.
  void operator()(Manager& m) {
    summary_.add(m.observation().at(keys_.first));
    if (!trigger_(m)) return;
    Communicator* c = m.communicator();
    const reporting::Value result =
        distributed_ && c && c->world_size() > 1 ? gathered(*c).compute_accumulate() : summary_.compute_accumulate();
    reporting::report({{keys_.second, result}});
    summary_.reset();
  }

  /// PPE's layout: `{"_trigger": the trigger's state, "_summary": the summary's}`.
  State state_dict() const {
    return State::dict({{"_trigger", trigger_.state_dict()}, {"_summary", summary_.state_dict()}});
  }
  /// Restores `state_dict()`'s state or PPE's (`_trigger` is optional).
  void load_state_dict(const State& s) {
    if (const State* t = s.find("_trigger")) trigger_.load_state_dict(*t);
    summary_.load_state_dict(s.at("_summary"));
  }

  /// (source key, destination key).
  const std::pair<std::string, std::string>& conversion_key_pair() const noexcept { return keys_; }
  /// The key it reads (the manager's report-key check).
  std::vector<std::string> consumed_keys() const { return {keys_.first}; }
  /// The trigger that reports and restarts.
  const triggers::AnyTrigger& trigger() const noexcept { return trigger_; }
  bool distributed() const noexcept { return distributed_; }
  /// The summary of the values added since the last report.
  const S& summary() const noexcept { return summary_; }

 private:
  // PPE's _all_reduce_summaries: the empty summary plus every rank's, in
  // rank order (the communicator's State gather: one collective).
  S gathered(Communicator& c) const {
    S total;
    for (const State& s : c.all_gather_state(summary_.state_dict())) {
      S part;
      part.load_state_dict(s);
      total += part;
    }
    return total;
  }

  std::pair<std::string, std::string> keys_;
  triggers::AnyTrigger trigger_;
  bool distributed_;
  // state_dict() is const but reading a summary evaluates deferred values and folds kept tensors.
  mutable S summary_;
};

}  // namespace ppe::training::extensions
