#pragma once
/// \file
/// Timeline tracing (PPE's `ppe.profiler` tracers): the `Tracer` interface,
/// `ChromeTracer`, which collects Chrome trace-event "complete" events and
/// writes them through a `ppe::writing::Writer` in PPE's file layout, the
/// process-wide tracer `get_tracer()`, and the global and per-thread
/// switches. Reading trace files back (`load_chrome_trace_as_json`) is in
/// `ppe/profiler/chrome_trace_json.hpp`: its nlohmann-json types stay out of
/// the manager's headers.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::profiler {

/// A timeline tracer (PPE's `Tracer`): events are opened and closed around
/// scopes (`add_event`, or `record(tag, RecordOptions().trace(true))`),
/// collected, and written out by `flush`.
class Tracer {
 public:
  /// The value `event_begin` returns when it records nothing.
  static constexpr std::int64_t kNoEvent = -1;

  /// RAII event (PPE's `with tracer.add_event(name):`): open from its
  /// construction to its destruction. `name` is borrowed until then.
  class [[nodiscard]] Event {
   public:
    Event(Tracer& tracer, std::string_view name) : tracer_(&tracer), name_(name), token_(tracer.event_begin(name)) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() {
      if (token_ != kNoEvent) tracer_->event_end(name_, token_);
    }

   private:
    Tracer* tracer_;
    std::string_view name_;
    std::int64_t token_;
  };

  Tracer() = default;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;
  virtual ~Tracer() = default;

  /// An event named `name` around the caller's scope.
  Event add_event(std::string_view name) { return Event(*this, name); }

  /// Opens an event: a token for `event_end`, or `kNoEvent` when the tracer
  /// records nothing now (then `event_end` must not be called).
  virtual std::int64_t event_begin(std::string_view name) = 0;
  /// Closes the event `token` (from `event_begin`) named `name`.
  virtual void event_end(std::string_view name, std::int64_t token) = 0;

  /// Prepares the file `filename` before the first flush (PPE's `initialize_writer`).
  virtual void initialize_writer(const std::string& filename, writing::Writer& writer) = 0;
  /// Writes the events collected so far to `filename` through `writer`.
  virtual void flush(const std::string& filename, writing::Writer& writer) = 0;
  /// Turns recording on or off.
  virtual void enable(bool enable_flag) = 0;
  /// Drops the collected events and the event count.
  virtual void clear() = 0;
  /// Waits for pending events (none for an in-process tracer).
  virtual void finalize() {}
  virtual State state_dict() const = 0;
  virtual void load_state_dict(const State& state) = 0;
};

/// Turns tracing on or off for every thread (PPE's `enable_global_trace`).
PPE_DECL void enable_global_trace(bool enable);
/// Whether tracing is on for every thread.
PPE_DECL bool global_trace_enabled() noexcept;
/// Turns tracing on or off for the calling thread (PPE's `enable_thread_trace`).
PPE_DECL void enable_thread_trace(bool enable);
/// Whether tracing is on for the calling thread.
PPE_DECL bool thread_trace_enabled() noexcept;

/// One Chrome trace-event "complete" event (`"ph": "X"`).
struct TraceEvent {
  std::string name;
  double ts = 0.0;   ///< start, microseconds on the profiler's steady clock
  double dur = 0.0;  ///< duration, microseconds
  std::int64_t pid = 0;
  std::int64_t tid = 0;  ///< the kernel's thread id (Python's `threading.get_native_id()`)
  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
  /// For diagnostics: `{name, ts=…, dur=…, pid=…, tid=…}`.
  friend std::ostream& operator<<(std::ostream& os, const TraceEvent& e) {
    return os << '{' << e.name << ", ts=" << e.ts << ", dur=" << e.dur << ", pid=" << e.pid << ", tid=" << e.tid
              << '}';
  }
};

/// Options of a ChromeTracer (PPE's constructor arguments).
struct ChromeTracerOptions {
  /// At most this many events are recorded (then the rest are dropped); unset: no limit.
  std::optional<std::int64_t> max_event_count;
  /// Record from the start.
  bool enable = true;
  /// Append each flush's events to the file (which `initialize_writer` starts
  /// with `[`) and forget them; false: rewrite the whole list at each flush.
  bool append = true;
};

/// Collects events in Chrome's trace-event format (PPE's `ChromeTracer`),
/// from any thread.
///
/// Each event is `{"name", "cat": "", "ph": "X", "ts", "dur", "pid", "tid"}`
/// with `ts` and `dur` in microseconds (floats), exactly as PPE writes it.
/// An event is recorded when the tracer, the global switch and the calling
/// thread's switch are on when it opens, and the tracer is still on and under
/// `max_event_count` when it closes.
///
/// Files, as PPE lays them out: in append mode `initialize_writer` writes
/// `[`, and each `flush` appends `\n<event as json.dumps(indent=4)>,` per
/// event and forgets them (the file is a JSON list missing its end: read it
/// with `load_chrome_trace_as_json`); otherwise each flush rewrites the file
/// with the whole list as `json.dumps(events, indent=4)`. A disabled tracer
/// neither initializes nor flushes (PPE), so events recorded before it was
/// disabled wait for the next flush while it is on.
///
/// State (PPE's layout): `_enable`, `_event_list` (the unflushed events as a
/// JSON string), `_max_event_count` (`inf` when unlimited), `_event_count`.
class ChromeTracer : public Tracer {
 public:
  ChromeTracer() : ChromeTracer(ChromeTracerOptions{}) {}
  explicit ChromeTracer(ChromeTracerOptions options);
  /// PPE's spelling: `ChromeTracer(max_event_count, enable, append)`.
  ChromeTracer(std::optional<std::int64_t> max_event_count, bool enable = true, bool append = true)
      : ChromeTracer(ChromeTracerOptions{max_event_count, enable, append}) {}

  std::int64_t event_begin(std::string_view name) override;
  void event_end(std::string_view name, std::int64_t token) override;
  void initialize_writer(const std::string& filename, writing::Writer& writer) override;
  void flush(const std::string& filename, writing::Writer& writer) override;
  void enable(bool enable_flag) override { enable_.store(enable_flag, std::memory_order_relaxed); }
  void clear() override;
  State state_dict() const override;
  void load_state_dict(const State& state) override;

  /// Whether the tracer records.
  bool enabled() const noexcept { return enable_.load(std::memory_order_relaxed); }
  /// Events recorded since the last `clear` (PPE's `_event_count`).
  std::int64_t event_count() const;
  /// The collected events not yet flushed away.
  std::vector<TraceEvent> events() const;
  bool append() const noexcept { return append_; }

 private:
  std::atomic<bool> enable_;
  std::optional<std::int64_t> max_event_count_;
  bool append_;
  mutable std::mutex m_;
  std::vector<TraceEvent> events_;
  std::int64_t event_count_ = 0;
};

/// The process-wide tracer (a ChromeTracer) that `record(..., trace=true)`
/// and TimelineTrace use by default (PPE's `get_tracer()`).
PPE_DECL ChromeTracer& get_tracer();
/// Clears the process-wide tracer (PPE's `clear_tracer`).
PPE_DECL void clear_tracer();

/// `events` as PPE writes them: `json.dumps(events, indent=4)`, or (append)
/// `"\n" + json.dumps(event, indent=4) + ","` per event.
PPE_DECL std::string format_trace_events(const std::vector<TraceEvent>& events, bool append);
/// `events` as `json.dumps(events)` (one line; the `_event_list` of a state).
PPE_DECL std::string trace_events_to_json_string(const std::vector<TraceEvent>& events);

}  // namespace ppe::profiler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/profiler/impl/tracing.ipp"
#endif
