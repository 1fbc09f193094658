#pragma once
/// \file
/// `ppe::training::extensions::TimelineTrace` (PPE's `TimelineTrace`): writes
/// a tracer's timeline (by default the process-wide ChromeTracer's) to a
/// Chrome trace file each time its trigger fires, and turns tracing on and
/// off on triggers.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/profiler/tracing.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions {

/// Options of a TimelineTrace (PPE's constructor arguments).
struct TimelineTraceOptions {
  /// When to write the events collected so far (PPE's `trigger`).
  PPE_ARG(triggers::IntervalTrigger, trigger) = ppe::epochs(1);
  /// The trace file under the writer's directory.
  PPE_ARG(std::string, filename) = "chrome_trace.json";
  /// Turns the tracer on when it fires (from the next iteration on, since
  /// extensions run after the iteration's body); unset: never.
  PPE_ARG(std::optional<triggers::AnyTrigger>, enable);
  /// Turns the tracer off when it fires; unset: never.
  PPE_ARG(std::optional<triggers::AnyTrigger>, disable);
  /// The tracer; null: `ppe::profiler::get_tracer()`.
  PPE_ARG(std::shared_ptr<profiler::Tracer>, tracer);
  /// The writer to use; null: the manager's.
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
};

/// Writes the profile timeline to a file (PPE's `TimelineTrace`).
///
/// `initialize` prepares the file (a ChromeTracer in append mode writes
/// `[`). Each call first lets the `enable` and `disable` triggers switch the
/// tracer, then, except before training, flushes the tracer's events to the
/// file when `trigger` fires; `finalize` flushes the rest. Events come from
/// `ppe::profiler::record(tag, RecordOptions().trace(true))` scopes (the
/// manager's `enable_trace` adds one per extension call) and
/// `Tracer::add_event`.
///
/// State: PPE's `_trigger` and `_tracer` (the tracer's state), plus (not in
/// PPE, which restarts them) `_enable_trigger` / `_disable_trigger` when
/// those triggers are set.
class TimelineTrace {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "TimelineTrace";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  explicit TimelineTrace(TimelineTraceOptions options = {});
  TimelineTrace(TimelineTrace&&) noexcept;
  TimelineTrace& operator=(TimelineTrace&&) noexcept;
  ~TimelineTrace();

  void initialize(Manager& m);
  void operator()(Manager& m) {
    if (enable_ && (*enable_)(m)) tracer_->enable(true);
    if (disable_ && (*disable_)(m)) tracer_->enable(false);
    if (!m.is_before_training() && trigger_(m)) flush(m);
  }
  /// Flushes the remaining events, finalizes the own writer and the tracer.
  void finalize(Manager& m);

  State state_dict() const;
  void load_state_dict(const State& s);

  profiler::Tracer& tracer() const noexcept { return *tracer_; }
  const std::string& filename() const noexcept { return filename_; }
  const triggers::IntervalTrigger& trigger() const noexcept { return trigger_; }

 private:
  void flush(Manager& m);

  triggers::IntervalTrigger trigger_;
  std::string filename_;
  std::optional<triggers::AnyTrigger> enable_;
  std::optional<triggers::AnyTrigger> disable_;
  std::shared_ptr<profiler::Tracer> tracer_;
  std::shared_ptr<writing::Writer> writer_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/timeline_trace.ipp"
#endif
