#pragma once
/// \file
/// Chrome trace files read back as JSON (PPE's `load_chrome_trace_as_json`),
/// and a tracer state's `_event_list` as events. Apart from
/// `ppe/profiler/tracing.hpp` because it needs nlohmann-json's types, which
/// the manager's headers do without; defined in `profiler/impl/tracing.ipp`.

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "ppe/detail/config.hpp"
#include "ppe/profiler/tracing.hpp"

namespace ppe::profiler {

/// Reads events written by `trace_events_to_json_string` (or PPE's `_event_list`).
PPE_DECL std::vector<TraceEvent> trace_events_from_json(const nlohmann::json& list);

/// Reads a trace file written by a ChromeTracer (PPE's
/// `load_chrome_trace_as_json`): an append-mode file's trailing `,` (or a
/// bare `[`) is closed with `]` first. `std::runtime_error` naming the file
/// when it cannot be read or parsed.
PPE_DECL nlohmann::json load_chrome_trace_as_json(const std::filesystem::path& path);

}  // namespace ppe::profiler
