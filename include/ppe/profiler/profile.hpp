#pragma once
/// \file
/// `ppe::profiler::Profile`: a LibTorch profiler session driven by a step
/// schedule, the C++ counterpart of `torch.profiler.profile` as PPE's
/// Trainer and Evaluator use it (their `profile=` argument; see
/// docs/profile.md).
///
/// ```cpp
/// namespace prof = ppe::profiler;
/// auto profile = std::make_shared<prof::Profile>(
///     prof::ProfileOptions()
///         .schedule(prof::schedule(prof::ScheduleOptions().wait(1).warmup(1).active(3)))
///         .on_trace_ready(prof::chrome_trace_handler("result/traces")));
/// profile->start();
/// for (...) { train_step(); profile->step(); }
/// profile->stop();
/// ```
///
/// The session records with LibTorch's legacy (autograd) profiler
/// (`enableProfilerLegacy` / `disableProfilerLegacy`): Debian's LibTorch 1.13
/// is built without Kineto (Python's `torch.autograd.kineto_available()` is
/// false, and LibTorch exports no run-time query: the header constant
/// `torch::profiler::kKinetoAvailable` only reflects the including program's
/// `USE_KINETO` macro), and the Kineto API's trace file needs Kineto. The
/// legacy profiler records CPU operators (`aten::...`) and every
/// `at::RecordFunction` range (`ppe::profiler::Record`'s, `RECORD_USER_SCOPE`)
/// on the thread that called `start()` and on the threads its work is
/// launched to; `start`, `step` and `stop` must be called on one thread.
/// One LibTorch profiler per thread: a session cannot start while another
/// (a second `Profile`, Python's) records on the same thread.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::profiler {

/// What the profiler does at a step (PyTorch's `ProfilerAction`).
enum class ProfilerAction {
  None = 0,           ///< not recording
  Warmup = 1,         ///< about to record (no effect with the legacy profiler)
  Record = 2,         ///< recording
  RecordAndSave = 3,  ///< recording; the trace is ready when this step ends
};

/// PyTorch's name of `action`: `"NONE"`, `"WARMUP"`, `"RECORD"`, `"RECORD_AND_SAVE"`.
PPE_DECL std::string_view to_string(ProfilerAction action);

/// A schedule: the action of each step number (0, 1, ...).
using ScheduleFn = std::function<ProfilerAction(std::int64_t step)>;

/// The arguments of `schedule` (PyTorch's keyword-only arguments of
/// `torch.profiler.schedule`; `wait`, `warmup` and `active` have no default
/// there, so `active` must be set here).
struct ScheduleOptions {
  /// Steps skipped at the start of each cycle.
  PPE_ARG(std::int64_t, wait) = 0;
  /// Steps of warm-up before recording.
  PPE_ARG(std::int64_t, warmup) = 0;
  /// Steps recorded (>= 1); the trace is ready after the last of them.
  PPE_ARG(std::int64_t, active) = 0;
  /// Number of cycles; 0: cycle until the session stops.
  PPE_ARG(std::int64_t, repeat) = 0;
  /// Steps skipped once, before the first cycle.
  PPE_ARG(std::int64_t, skip_first) = 0;
};

/// `torch.profiler.schedule`: after `skip_first` steps, cycles of
/// `wait + warmup + active` steps (`repeat` of them, or forever when 0):
/// `None` for the `wait` steps, `Warmup` for the `warmup` steps, `Record`
/// for the active steps but the last, `RecordAndSave` for the last.
class Schedule {
 public:
  /// `std::invalid_argument` unless all are >= 0 and `active` >= 1 (PyTorch
  /// asserts the same). PyTorch also warns when `warmup` is 0; the legacy
  /// profiler has no warm-up to skip, so this does not.
  explicit Schedule(ScheduleOptions options);
  /// The action of step `step` (>= 0; `std::invalid_argument` otherwise).
  ProfilerAction operator()(std::int64_t step) const;
  const ScheduleOptions& options() const noexcept { return options_; }

 private:
  ScheduleOptions options_;
};

/// `torch.profiler.schedule(wait=, warmup=, active=, repeat=, skip_first=)`.
PPE_DECL ScheduleFn schedule(const ScheduleOptions& options);

/// One completed range of a trace: an operator (`aten::mm`) or a user range.
struct Event {
  std::string name;
  /// LibTorch's id of the thread that opened the range.
  std::uint64_t thread = 0;
  /// Microseconds from the session's start to the range's start.
  double start_us = 0;
  /// Microseconds from the range's start to its end (wall time on the CPU).
  double duration_us = 0;
  /// The inputs' shapes (with `record_shapes`; empty otherwise).
  std::vector<std::vector<std::int64_t>> input_shapes;
  /// Bytes allocated minus freed on the CPU inside the range, its
  /// sub-ranges included (with `profile_memory`; 0 otherwise).
  std::int64_t cpu_memory_usage = 0;
};

/// The events of one name summed (a row of PyTorch's `key_averages()`).
struct EventAverage {
  std::string key;
  std::int64_t count = 0;
  /// Total microseconds over the `count` ranges, sub-ranges included
  /// (PyTorch's `cpu_time_total`).
  double cpu_time_total_us = 0;
  /// The same without the time of sub-ranges on the same thread
  /// (`self_cpu_time_total`).
  double self_cpu_time_total_us = 0;
  /// Bytes, sub-ranges included (`cpu_memory_usage`) and not (`self_cpu_memory_usage`).
  std::int64_t cpu_memory_usage = 0;
  std::int64_t self_cpu_memory_usage = 0;
  /// Mean microseconds per range (`cpu_time`).
  double cpu_time_us() const noexcept { return count > 0 ? cpu_time_total_us / static_cast<double>(count) : 0.0; }
};

namespace detail {
struct LegacyTrace;  // LibTorch's event lists (impl/profile.ipp)
struct StepRange;    // the open "ProfilerStep#<n>" range
}  // namespace detail

/// One recorded trace: what the profiler collected between the start and
/// the end of a recording (PyTorch's `prof.events()` / `key_averages()` /
/// `export_chrome_trace` after a trace is ready).
class ProfileResult {
 public:
  /// Made by `Profile` from LibTorch's event lists.
  ProfileResult(std::shared_ptr<const detail::LegacyTrace> trace, std::int64_t step_num);

  /// The completed ranges, by start time. A range still open when the
  /// recording stopped is left out.
  const std::vector<Event>& events() const noexcept { return events_; }
  /// The events grouped by name, in the order of their first start.
  std::vector<EventAverage> key_averages() const;
  /// How many ranges named `name` the trace has.
  std::int64_t count(std::string_view name) const;
  /// The trace in Chrome's trace-event format (a JSON array of complete
  /// events, LibTorch's `writeProfilerEventsToStream`): chrome://tracing
  /// and Perfetto open it.
  std::string chrome_trace() const;
  /// Writes `chrome_trace()` to `path` atomically (a temporary file renamed
  /// over it, through `ppe::writing::SimpleWriter`); parent directories are
  /// created. `ppe::writing::WriteError` on failure.
  void export_chrome_trace(const std::filesystem::path& path) const;
  /// The session's `step_num()` when this trace became ready.
  std::int64_t step_num() const noexcept { return step_num_; }

 private:
  std::shared_ptr<const detail::LegacyTrace> trace_;
  std::vector<Event> events_;
  std::int64_t step_num_ = 0;
};

class Profile;

/// Called when a trace is ready (PyTorch's `on_trace_ready`), with the
/// session: `profile.result()` is the new trace.
using OnTraceReady = std::function<void(Profile&)>;

/// Options of `Profile` (PyTorch's `torch.profiler.profile` arguments).
struct ProfileOptions {
  /// The action of each step; empty: record from `start()` to `stop()`
  /// (PyTorch's default), with no `ProfilerStep#<n>` ranges.
  PPE_ARG(ScheduleFn, schedule);
  /// Called when a trace is ready: when a `RecordAndSave` step ends, and on
  /// `stop()` while recording.
  PPE_ARG(OnTraceReady, on_trace_ready);
  /// Record the shapes of the operators' inputs (`Event::input_shapes`).
  PPE_ARG(bool, record_shapes) = false;
  /// Record CPU memory allocated and freed in each range.
  PPE_ARG(bool, profile_memory) = false;
};

/// A profiler session (PyTorch's `torch.profiler.profile`). `start()` begins
/// it, `step()` marks the end of each step (of training: one iteration),
/// `stop()` ends it; the schedule says at which steps LibTorch's profiler
/// records. The action transitions are PyTorch's: recording starts when the
/// action turns from `None`/`Warmup` to `Record`/`RecordAndSave`; when a
/// `RecordAndSave` step ends the recording stops, its trace becomes
/// `result()` and `on_trace_ready` is called (then recording restarts if the
/// next step records too); `stop()` ends a recording and calls
/// `on_trace_ready` (PyTorch warns about schedules that stop recording without
/// a `RecordAndSave` step, and so does this, through `ppe::warn`). With a
/// schedule, each step is a range `ProfilerStep#<n>` in the trace (n: the
/// step number; PyTorch 1.13 numbers the range of step n >= 1 `n - 1`, a
/// mistake later versions fixed).
///
/// `start()` may follow `stop()` (the Evaluator runs one session per pass):
/// the step number goes on. Not copyable or movable (share it with
/// `std::shared_ptr`, as the engine's options do); the destructor ends a
/// running session without calling `on_trace_ready`.
class Profile {
 public:
  explicit Profile(ProfileOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  /// Starts the session (PyTorch's `__enter__`). `std::logic_error` when it
  /// runs already; `std::runtime_error` when another LibTorch profiler
  /// records on this thread.
  void start();
  /// Ends the session (`__exit__`): a recording stops and `on_trace_ready` is
  /// called. `std::logic_error` when it is not running.
  void stop();
  /// Ends a running session while an error propagates (the engine's error
  /// path: PyTorch's `__exit__` runs as the exception passes): as `stop()`,
  /// but an error of this stop is dropped, so that it does not hide the
  /// first. Nothing when the session is not running.
  void stop_after_error() noexcept {
    if (!running_) return;
    try {
      stop();
    } catch (...) {
    }
  }
  /// Ends the current step (`prof.step()`): the step number advances and the
  /// schedule's action of the new step takes effect. `std::logic_error` when
  /// the session is not running.
  void step();

  /// The number of `step()` calls so far (PyTorch's `step_num`).
  std::int64_t step_num() const noexcept { return step_num_; }
  /// The schedule's action of the current step.
  ProfilerAction current_action() const noexcept { return current_action_; }
  /// Whether `start()` was called and `stop()` not since.
  bool running() const noexcept { return running_; }
  /// Whether LibTorch's profiler records now.
  bool recording() const noexcept { return recording_; }
  /// How many traces became ready.
  std::int64_t traces() const noexcept { return traces_; }

  /// Replaces the trace handler (the Trainer clears it at the end of its
  /// run, as PPE's sets `on_trace_ready = None`). Empty: none.
  void on_trace_ready(OnTraceReady handler) { options_.on_trace_ready(std::move(handler)); }
  const OnTraceReady& on_trace_ready() const noexcept { return options_.on_trace_ready(); }
  const ProfileOptions& options() const noexcept { return options_; }

  /// The last trace that stopped recording (normally the last handed to
  /// `on_trace_ready`); null before the first. A session that stops during a
  /// warm-up keeps it (PyTorch replaces it with an empty trace there).
  std::shared_ptr<const ProfileResult> result() const noexcept { return result_; }
  /// `result()->key_averages()`; `std::logic_error` before the first trace.
  std::vector<EventAverage> key_averages() const;
  /// `result()->export_chrome_trace(path)`; `std::logic_error` before the first trace.
  void export_chrome_trace(const std::filesystem::path& path) const;

 private:
  void transit(ProfilerAction from, std::optional<ProfilerAction> to);
  void start_trace();
  void stop_trace();
  void trace_ready();
  void open_step_range(std::int64_t n);
  void close_step_range() noexcept;
  const ProfileResult& last_result(const char* who) const;

  ProfileOptions options_;
  bool record_steps_ = false;
  std::int64_t step_num_ = 0;
  ProfilerAction current_action_ = ProfilerAction::Record;
  bool running_ = false;
  bool recording_ = false;
  std::int64_t traces_ = 0;
  std::unique_ptr<detail::StepRange> step_range_;
  std::shared_ptr<const ProfileResult> result_;
};

/// A trace handler that writes each trace to `<dir>/trace_<n>.json` (Chrome's
/// format, atomically), n being the session's `step_num()` when the trace
/// became ready. In place of PyTorch's `tensorboard_trace_handler`, whose
/// Kineto trace format the legacy profiler does not produce.
PPE_DECL OnTraceReady chrome_trace_handler(std::filesystem::path dir);

}  // namespace ppe::profiler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/profiler/impl/profile.ipp"
#endif
