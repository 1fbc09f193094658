// Definitions of profiler/tracing.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/detail/read_file.hpp"
#include "ppe/profiler/chrome_trace_json.hpp"
#include "ppe/profiler/time_summary.hpp"
#include "ppe/profiler/tracing.hpp"

namespace ppe::profiler {

namespace detail {
PPE_DECL std::atomic<bool>& global_trace_flag() noexcept {
  static std::atomic<bool> flag{true};
  return flag;
}
PPE_DECL bool& thread_trace_flag() noexcept {
  static thread_local bool flag = true;
  return flag;
}
PPE_DECL std::int64_t native_thread_id() noexcept {
  static thread_local const std::int64_t tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
  return tid;
}
/// A name as a JSON string literal, as Python's `json.dumps` writes it (ASCII only).
PPE_DECL std::string trace_json_string(const std::string& s) {
  try {
    return nlohmann::json(s).dump(-1, ' ', /*ensure_ascii=*/true);
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("ppe::ChromeTracer: the event name '" + s + "' is not valid UTF-8");
  }
}
/// One event as `json.dumps(event, indent=4)` indented by `indent` more spaces
/// (nested in a list), or on one line (`indent < 0`).
PPE_DECL void append_trace_event(std::string& out, const TraceEvent& e, int indent) {
  const std::string pad = indent < 0 ? "" : "\n" + std::string(static_cast<std::size_t>(indent) + 4, ' ');
  const std::string sep = indent < 0 ? ", " : ",";
  out += '{';
  out += pad + "\"name\": " + trace_json_string(e.name) + sep;
  out += pad + "\"cat\": \"\"" + sep;
  out += pad + "\"ph\": \"X\"" + sep;
  out += pad + "\"ts\": " + ppe::detail::python_json_float(e.ts) + sep;
  out += pad + "\"dur\": " + ppe::detail::python_json_float(e.dur) + sep;
  out += pad + "\"pid\": " + std::to_string(e.pid) + sep;
  out += pad + "\"tid\": " + std::to_string(e.tid);
  out += indent < 0 ? "}" : "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "}";
}
}  // namespace detail

PPE_DECL void enable_global_trace(bool enable) { detail::global_trace_flag().store(enable, std::memory_order_relaxed); }
PPE_DECL bool global_trace_enabled() noexcept { return detail::global_trace_flag().load(std::memory_order_relaxed); }
PPE_DECL void enable_thread_trace(bool enable) { detail::thread_trace_flag() = enable; }
PPE_DECL bool thread_trace_enabled() noexcept { return detail::thread_trace_flag(); }

PPE_DECL ChromeTracer::ChromeTracer(ChromeTracerOptions options)
    : enable_(options.enable), max_event_count_(options.max_event_count), append_(options.append) {
  if (max_event_count_ && *max_event_count_ < 0)
    throw std::invalid_argument("ppe::ChromeTracer: max_event_count must be >= 0 (or unset for no limit), got " +
                                std::to_string(*max_event_count_));
}

PPE_DECL std::int64_t ChromeTracer::event_begin(std::string_view) {
  if (!enabled() || !global_trace_enabled() || !thread_trace_enabled()) return kNoEvent;
  return detail::fast_clock_ns();
}

PPE_DECL void ChromeTracer::event_end(std::string_view name, std::int64_t token) {
  if (token == kNoEvent || !enabled()) return;
  const std::int64_t end = detail::fast_clock_ns();
  TraceEvent e{std::string(name), static_cast<double>(token) / 1000.0, static_cast<double>(end - token) / 1000.0,
               static_cast<std::int64_t>(::getpid()), detail::native_thread_id()};
  std::lock_guard lock(m_);
  if (max_event_count_ && event_count_ >= *max_event_count_) return;
  ++event_count_;
  events_.push_back(std::move(e));
}

PPE_DECL void ChromeTracer::initialize_writer(const std::string& filename, writing::Writer& writer) {
  if (!enabled() || !append_) return;
  writer(filename, writing::owned_bytes(std::string("[")), false);
}

PPE_DECL void ChromeTracer::flush(const std::string& filename, writing::Writer& writer) {
  if (!enabled()) return;
  std::vector<TraceEvent> events;
  {
    std::lock_guard lock(m_);
    if (append_)
      events.swap(events_);
    else
      events = events_;
  }
  try {
    writer(filename, writing::owned_bytes(format_trace_events(events, append_)), append_);
  } catch (...) {
    if (append_) {  // not written: keep them for the next flush, before any newer ones
      std::lock_guard lock(m_);
      events.insert(events.end(), std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
      events_ = std::move(events);
    }
    throw;
  }
}

PPE_DECL void ChromeTracer::clear() {
  std::lock_guard lock(m_);
  events_.clear();
  event_count_ = 0;
}

PPE_DECL std::int64_t ChromeTracer::event_count() const {
  std::lock_guard lock(m_);
  return event_count_;
}

PPE_DECL std::vector<TraceEvent> ChromeTracer::events() const {
  std::lock_guard lock(m_);
  return events_;
}

PPE_DECL State ChromeTracer::state_dict() const {
  std::lock_guard lock(m_);
  State s = State::dict();
  s.set("_enable", enabled());
  s.set("_event_list", trace_events_to_json_string(events_));
  s.set("_max_event_count",
        max_event_count_ ? State(*max_event_count_) : State(std::numeric_limits<double>::infinity()));
  s.set("_event_count", event_count_);
  return s;
}

PPE_DECL void ChromeTracer::load_state_dict(const State& state) {
  const bool enable = state.at("_enable").as_bool();
  const State& list = state.at("_event_list");
  if (!list.is_string())
    throw std::invalid_argument("ppe::ChromeTracer: the state's '_event_list' must be a JSON string, got a " +
                                std::string(State::kind_name(list.kind())));
  std::vector<TraceEvent> events;
  try {
    events = trace_events_from_json(nlohmann::json::parse(list.as_string()));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("ppe::ChromeTracer: the state's '_event_list' is not JSON: ") + e.what());
  }
  const State& max = state.at("_max_event_count");
  std::optional<std::int64_t> max_count;
  if (max.is_int())
    max_count = max.as_int();
  else if (!(max.is_double() && std::isinf(max.as_double())))
    throw std::invalid_argument("ppe::ChromeTracer: the state's '_max_event_count' must be an int or inf, got a " +
                                std::string(State::kind_name(max.kind())));
  const std::int64_t count = state.at("_event_count").as_int();
  std::lock_guard lock(m_);
  enable_.store(enable, std::memory_order_relaxed);
  events_ = std::move(events);
  max_event_count_ = max_count;
  event_count_ = count;
}

PPE_DECL ChromeTracer& get_tracer() {
  // Never destroyed: threads and static objects may still trace at exit.
  static ChromeTracer* const tracer = new ChromeTracer();
  return *tracer;
}

PPE_DECL void clear_tracer() { get_tracer().clear(); }

PPE_DECL std::string format_trace_events(const std::vector<TraceEvent>& events, bool append) {
  std::string out;
  if (append) {
    for (const TraceEvent& e : events) {
      out += '\n';
      detail::append_trace_event(out, e, 0);
      out += ',';
    }
    return out;
  }
  if (events.empty()) return "[]";
  out = "[";
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    detail::append_trace_event(out, events[i], 4);
  }
  return out + "\n]";
}

PPE_DECL std::string trace_events_to_json_string(const std::vector<TraceEvent>& events) {
  std::string out = "[";
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i) out += ", ";
    detail::append_trace_event(out, events[i], -1);
  }
  return out + "]";
}

PPE_DECL std::vector<TraceEvent> trace_events_from_json(const nlohmann::json& list) {
  if (!list.is_array()) throw std::invalid_argument("ppe::ChromeTracer: expected a JSON list of trace events");
  std::vector<TraceEvent> out;
  for (const auto& o : list) {
    if (!o.is_object()) throw std::invalid_argument("ppe::ChromeTracer: a trace event is not a JSON object");
    const auto need = [&](const char* key) -> const nlohmann::json& {
      auto it = o.find(key);
      if (it == o.end())
        throw std::invalid_argument(std::string("ppe::ChromeTracer: a trace event lacks the key '") + key + "'");
      return *it;
    };
    // Checked here: nlohmann's own conversions throw its type_error, and cast
    // a float to an integer even out of range (undefined behaviour).
    const auto wrong = [](const char* key, const char* what) {
      throw std::invalid_argument(std::string("ppe::ChromeTracer: a trace event's '") + key + "' is not " + what);
    };
    const auto number = [&](const char* key) {
      const nlohmann::json& v = need(key);
      if (!v.is_number()) wrong(key, "a number");
      return v.get<double>();
    };
    const auto integer = [&](const char* key) {
      const nlohmann::json& v = need(key);
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        wrong(key, "an int64 integer");
      if (!v.is_number_integer()) wrong(key, "an integer");
      return v.get<std::int64_t>();
    };
    TraceEvent e;
    if (!need("name").is_string()) wrong("name", "a string");
    e.name = need("name").get<std::string>();
    e.ts = number("ts");
    e.dur = number("dur");
    e.pid = integer("pid");
    e.tid = integer("tid");
    out.push_back(std::move(e));
  }
  return out;
}

PPE_DECL nlohmann::json load_chrome_trace_as_json(const std::filesystem::path& path) {
  std::string s = ppe::detail::read_file(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  if (!s.empty() && s.back() == ',')
    s.back() = ']';
  else if (!s.empty() && s.back() != ']')
    s += ']';
  try {
    return nlohmann::json::parse(s);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("ppe::load_chrome_trace_as_json: '" + path.string() + "' is not a Chrome trace: " +
                             e.what());
  }
}

}  // namespace ppe::profiler
