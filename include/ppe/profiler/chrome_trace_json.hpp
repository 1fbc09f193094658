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

namespace ppe::profiler {

// Declared before tracing.hpp is included: header-only, tracing.hpp ends by
// including its definitions, which call these; included first, this header
// would otherwise reach them before its own declarations.
struct TraceEvent;

/// Reads events written by `trace_events_to_json_string` (or PPE's `_event_list`).
/// `std::invalid_argument` when it is not a list of objects with a string
/// `name`, numbers `ts` and `dur` and int64 integers `pid` and `tid`.
PPE_DECL std::vector<TraceEvent> trace_events_from_json(const nlohmann::json& list);

/// Reads a trace file written by a ChromeTracer (PPE's
/// `load_chrome_trace_as_json`): an append-mode file's trailing `,` (or a
/// bare `[`) is closed with `]` first. `std::runtime_error` naming the file
/// when it cannot be read or parsed.
PPE_DECL nlohmann::json load_chrome_trace_as_json(const std::filesystem::path& path);

}  // namespace ppe::profiler

#include "ppe/profiler/tracing.hpp"
