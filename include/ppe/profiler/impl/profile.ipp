// Definitions of profiler/profile.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppe/detail/error_message.hpp"
#include "ppe/profiler/profile.hpp"
#include "ppe/profiler/record.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/simple_writer.hpp"

namespace ppe::profiler {

namespace detail {

namespace legacy = torch::autograd::profiler;

/// LibTorch's event lists of one recording, kept for the Chrome export.
struct LegacyTrace {
  legacy::thread_event_lists lists;
};

/// An open `ProfilerStep#<n>` range.
struct StepRange {
  at::RecordFunction range{at::RecordScope::USER_SCOPE};
};

}  // namespace detail

PPE_DECL std::string_view to_string(ProfilerAction action) {
  switch (action) {
    case ProfilerAction::None: return "NONE";
    case ProfilerAction::Warmup: return "WARMUP";
    case ProfilerAction::Record: return "RECORD";
    case ProfilerAction::RecordAndSave: return "RECORD_AND_SAVE";
  }
  return "?";
}

// ---- schedule --------------------------------------------------------------

PPE_DECL Schedule::Schedule(ScheduleOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  if (o.wait() < 0 || o.warmup() < 0 || o.active() < 1 || o.repeat() < 0 || o.skip_first() < 0)
    throw std::invalid_argument("ppe::profiler::schedule: expected wait >= 0, warmup >= 0, active >= 1, repeat >= 0 "
                                "and skip_first >= 0, got wait=" + std::to_string(o.wait()) +
                                ", warmup=" + std::to_string(o.warmup()) + ", active=" + std::to_string(o.active()) +
                                ", repeat=" + std::to_string(o.repeat()) +
                                ", skip_first=" + std::to_string(o.skip_first()));
}

PPE_DECL ProfilerAction Schedule::operator()(std::int64_t step) const {
  if (step < 0)
    throw std::invalid_argument("ppe::profiler::Schedule: the step must be >= 0, got " + std::to_string(step));
  const auto& o = options_;
  if (step < o.skip_first()) return ProfilerAction::None;
  step -= o.skip_first();
  const std::int64_t cycle = o.wait() + o.warmup() + o.active();
  // PyTorch: `step / num_steps >= repeat` in floating point, i.e. the
  // `repeat` cycles are over.
  if (o.repeat() > 0 && step >= o.repeat() * cycle) return ProfilerAction::None;
  const std::int64_t in_cycle = step % cycle;
  if (in_cycle < o.wait()) return ProfilerAction::None;
  if (in_cycle < o.wait() + o.warmup()) return ProfilerAction::Warmup;
  return in_cycle < cycle - 1 ? ProfilerAction::Record : ProfilerAction::RecordAndSave;
}

PPE_DECL ScheduleFn schedule(const ScheduleOptions& options) { return Schedule(options); }

// ---- the result ------------------------------------------------------------

PPE_DECL ProfileResult::ProfileResult(std::shared_ptr<const detail::LegacyTrace> trace, std::int64_t step_num)
    : trace_(std::move(trace)), step_num_(step_num) {
  if (!trace_) throw std::invalid_argument("ppe::profiler::ProfileResult: null trace");
  using Kind = torch::autograd::profiler::EventKind;
  using LegacyEvent = torch::autograd::profiler::LegacyEvent;
  // The session's start: LibTorch's "__start_profile" mark (the origin of
  // its Chrome trace too), else the earliest event.
  const LegacyEvent* origin = nullptr;
  for (const auto& list : trace_->lists)
    for (const auto& e : list)
      if (e.kind() == Kind::Mark && std::string_view(e.name()) == "__start_profile") {
        origin = &e;
        break;
      }
  if (!origin)
    for (const auto& list : trace_->lists)
      for (const auto& e : list)
        if (!origin || origin->cpuElapsedUs(e) < 0) origin = &e;
  if (!origin) return;

  // Ranges are pushed and popped with one handle. Pops are matched by handle
  // (across threads' lists, for ranges ended on another thread); the time of
  // a range's sub-ranges on its own thread is subtracted for its self time,
  // and allocations are charged to every range open on the allocating thread.
  struct Open {
    const LegacyEvent* push;
    std::size_t list;
    std::int64_t memory = 0;
  };
  std::unordered_map<std::uint64_t, Open> open;
  std::vector<std::vector<std::uint64_t>> stacks(trace_->lists.size());
  for (std::size_t li = 0; li < trace_->lists.size(); ++li) {
    for (const auto& e : trace_->lists[li]) {
      if (e.kind() == Kind::PushRange) {
        open[e.handle()] = Open{&e, li};
        stacks[li].push_back(e.handle());
      } else if (e.kind() == Kind::MemoryAlloc) {
        for (const std::uint64_t h : stacks[li]) open[h].memory += e.cpuMemoryUsage();
      }
      if (e.kind() != Kind::PopRange) continue;
      const auto it = open.find(e.handle());
      if (it == open.end()) continue;  // opened before the recording started
      const LegacyEvent& push = *it->second.push;
      Event ev;
      ev.name = push.name();
      ev.thread = push.threadId();
      ev.start_us = origin->cpuElapsedUs(push);
      ev.duration_us = push.cpuElapsedUs(e);
      ev.input_shapes = push.shapes();
      ev.cpu_memory_usage = it->second.memory;
      auto& stack = stacks[it->second.list];
      stack.erase(std::remove(stack.begin(), stack.end(), e.handle()), stack.end());
      open.erase(it);
      events_.push_back(std::move(ev));
    }
  }
  std::stable_sort(events_.begin(), events_.end(),
                   [](const Event& a, const Event& b) { return a.start_us < b.start_us; });
}

PPE_DECL std::vector<EventAverage> ProfileResult::key_averages() const {
  std::vector<EventAverage> rows;
  std::unordered_map<std::string, std::size_t> row_of;
  for (const Event& e : events_) {
    auto [it, inserted] = row_of.try_emplace(e.name, rows.size());
    if (inserted) rows.push_back(EventAverage{e.name});
    EventAverage& row = rows[it->second];
    ++row.count;
    row.cpu_time_total_us += e.duration_us;
    row.self_cpu_time_total_us += e.duration_us;
    row.cpu_memory_usage += e.cpu_memory_usage;
    row.self_cpu_memory_usage += e.cpu_memory_usage;
  }
  // Self values: subtract each range's direct children (the innermost
  // enclosing range on the same thread is the parent). Events are by start
  // time, so a stack per thread finds the parents in one pass.
  std::unordered_map<std::uint64_t, std::vector<const Event*>> stacks;
  for (const Event& e : events_) {
    auto& stack = stacks[e.thread];
    while (!stack.empty() && stack.back()->start_us + stack.back()->duration_us < e.start_us + e.duration_us)
      stack.pop_back();
    if (!stack.empty()) {
      EventAverage& parent = rows[row_of.at(stack.back()->name)];
      parent.self_cpu_time_total_us -= e.duration_us;
      parent.self_cpu_memory_usage -= e.cpu_memory_usage;
    }
    stack.push_back(&e);
  }
  return rows;
}

PPE_DECL std::int64_t ProfileResult::count(std::string_view name) const {
  return std::count_if(events_.begin(), events_.end(), [&](const Event& e) { return e.name == name; });
}

PPE_DECL std::string ProfileResult::chrome_trace() const {
  using Kind = torch::autograd::profiler::EventKind;
  // LibTorch's writer pairs pushes and pops itself; ranges left open at the
  // stop are left out, as in events().
  std::unordered_map<std::uint64_t, int> pushed;
  for (const auto& list : trace_->lists)
    for (const auto& e : list)
      if (e.kind() == Kind::PushRange) pushed[e.handle()] |= 1;
      else if (e.kind() == Kind::PopRange) pushed[e.handle()] |= 2;
  std::vector<torch::autograd::profiler::LegacyEvent*> events;
  for (const auto& list : trace_->lists)
    for (const auto& e : list)
      if (e.kind() == Kind::Mark || ((e.kind() == Kind::PushRange || e.kind() == Kind::PopRange) &&
                                     pushed[e.handle()] == 3))
        // LibTorch's writer takes non-const pointers but only reads.
        events.push_back(const_cast<torch::autograd::profiler::LegacyEvent*>(&e));
  std::ostringstream os;
  torch::autograd::profiler::writeProfilerEventsToStream(os, events);
  return std::move(os).str();
}

PPE_DECL void ProfileResult::export_chrome_trace(const std::filesystem::path& path) const {
  if (path.empty() || !path.has_filename())
    throw std::invalid_argument("ppe::profiler::export_chrome_trace: expected a file path, got '" + path.string() +
                                "'");
  writing::SimpleWriter writer(path.parent_path());
  writer(path.filename().string(), writing::owned_bytes(chrome_trace()));
}

// ---- the session -----------------------------------------------------------

PPE_DECL Profile::Profile(ProfileOptions options) : options_(std::move(options)) {
  record_steps_ = static_cast<bool>(options_.schedule());
  current_action_ = record_steps_ ? options_.schedule()(0) : ProfilerAction::Record;
}

PPE_DECL Profile::~Profile() {
  close_step_range();
  if (recording_) {
    try {
      (void)torch::autograd::profiler::disableProfilerLegacy();
    } catch (...) {  // a destructor reports nothing; the trace is dropped
    }
  }
}

PPE_DECL void Profile::start() {
  if (running_)
    throw std::logic_error("ppe::profiler::Profile::start: the session runs already (a Profile cannot be nested in "
                           "itself: give the trainer and its evaluator different profiles, or one of them)");
  transit(ProfilerAction::None, current_action_);
  running_ = true;
  if (record_steps_) open_step_range(step_num_);
}

PPE_DECL void Profile::stop() {
  if (!running_) throw std::logic_error("ppe::profiler::Profile::stop: the session is not running (call start() first)");
  close_step_range();
  running_ = false;
  transit(current_action_, std::nullopt);
}

PPE_DECL void Profile::step() {
  if (!running_) throw std::logic_error("ppe::profiler::Profile::step: the session is not running (call start() first)");
  close_step_range();
  const ProfilerAction previous = current_action_;
  ++step_num_;
  current_action_ = record_steps_ ? options_.schedule()(step_num_) : ProfilerAction::Record;
  transit(previous, current_action_);
  if (record_steps_) open_step_range(step_num_);
}

// PyTorch's action map. Preparing a trace is Kineto's warm-up, nothing for
// the legacy profiler; `to` empty is the session's end.
PPE_DECL void Profile::transit(ProfilerAction from, std::optional<ProfilerAction> to) {
  using A = ProfilerAction;
  const bool records_next = to && (*to == A::Record || *to == A::RecordAndSave);
  switch (from) {
    case A::None:
      if (records_next) start_trace();
      break;
    case A::Warmup:
      // Leaving a warm-up without recording: PyTorch starts and at once stops
      // a trace, an empty one that replaces its last; the legacy profiler has
      // no warm-up to end, so nothing happens here and result() keeps the last.
      if (to && *to == A::None) ppe::warn("ppe::profiler::Profile: incorrect schedule: WARMUP followed by NONE");
      if (records_next) start_trace();
      break;
    case A::Record:
      if (!to) {
        stop_trace();
        trace_ready();
      } else if (*to == A::None || *to == A::Warmup) {
        ppe::warn(std::string("ppe::profiler::Profile: incorrect schedule: RECORD followed by ") +
                  std::string(to_string(*to)));
        stop_trace();
      }
      break;
    case A::RecordAndSave:
      stop_trace();
      trace_ready();
      if (records_next) start_trace();
      break;
  }
}

PPE_DECL void Profile::start_trace() {
  namespace impl = torch::profiler::impl;
  try {
    torch::autograd::profiler::enableProfilerLegacy(
        impl::ProfilerConfig(impl::ProfilerState::CPU, options_.record_shapes(), options_.profile_memory()));
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        std::string("ppe::profiler::Profile: cannot start LibTorch's profiler (is another profiler session "
                    "recording on this thread?): ") +
        ppe::detail::error_message(e));
  }
  recording_ = true;
  notify_torch_profiler_started();  // ppe's scopes ask LibTorch again at once
}

PPE_DECL void Profile::stop_trace() {
  auto trace = std::make_shared<detail::LegacyTrace>();
  recording_ = false;
  trace->lists = torch::autograd::profiler::disableProfilerLegacy();
  result_ = std::make_shared<const ProfileResult>(std::move(trace), step_num_);
}

PPE_DECL void Profile::trace_ready() {
  ++traces_;
  if (options_.on_trace_ready()) options_.on_trace_ready()(*this);
}

PPE_DECL void Profile::open_step_range(std::int64_t n) {
  auto range = std::make_unique<detail::StepRange>();
  if (range->range.isActive()) range->range.before("ProfilerStep#" + std::to_string(n));
  step_range_ = std::move(range);
}

PPE_DECL void Profile::close_step_range() noexcept { step_range_.reset(); }

PPE_DECL const ProfileResult& Profile::last_result(const char* who) const {
  if (!result_)
    throw std::logic_error(std::string("ppe::profiler::Profile::") + who +
                           ": no trace yet (a trace is kept when a recording stops: at the end of a "
                           "RECORD_AND_SAVE step, or at stop())");
  return *result_;
}

PPE_DECL std::vector<EventAverage> Profile::key_averages() const { return last_result("key_averages").key_averages(); }

PPE_DECL void Profile::export_chrome_trace(const std::filesystem::path& path) const {
  last_result("export_chrome_trace").export_chrome_trace(path);
}

PPE_DECL OnTraceReady chrome_trace_handler(std::filesystem::path dir) {
  return [dir = std::move(dir)](Profile& profile) {
    if (const auto result = profile.result())
      result->export_chrome_trace(dir / ("trace_" + std::to_string(result->step_num()) + ".json"));
  };
}

}  // namespace ppe::profiler
