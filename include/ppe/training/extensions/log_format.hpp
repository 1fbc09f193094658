#pragma once
/// \file
/// The file formats of LogReport (PPE's `LogWriterSaveFunc`): `json`,
/// `json-lines` and `yaml`, byte for byte as Python's `json.dumps` and PyYAML's
/// `yaml.dump` write a list of entries, and the reading of a log saved as a
/// JSON string in a LogReport state (`_log`).
///
/// nlohmann-json escapes key strings (ASCII only, as Python's `ensure_ascii`)
/// and parses saved logs; yaml-cpp lays out YAML. Floats are formatted here
/// (`ppe/detail/python_repr.hpp`), because neither library writes them as
/// Python does.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/training/extensions/log_entry.hpp"

namespace ppe::training::extensions {

/// A LogReport file format.
enum class LogFormat {
  Json,       ///< the whole history as one JSON list, indented by 4 (`json.dumps(log, indent=4)`)
  JsonLines,  ///< one JSON object per line, each line ending in a newline
  Yaml,       ///< a YAML block sequence, keys sorted (PyYAML's `yaml.dump` defaults)
};

/// `"json"`, `"json-lines"`, `"yaml"`.
inline std::string_view log_format_name(LogFormat f) noexcept {
  switch (f) {
    case LogFormat::Json: return "json";
    case LogFormat::JsonLines: return "json-lines";
    case LogFormat::Yaml: return "yaml";
  }
  return "json";
}

/// The format named `name`; an empty name infers it from `filename` as PPE
/// does (`.jsonl` → json-lines, `.yaml` → yaml, anything else → json).
PPE_DECL LogFormat log_format(std::string_view name, std::string_view filename = {});

/// `entries` in `format`, as PPE writes them: the bytes of one write of a
/// LogReport (in append mode, `entries` are the new entries only).
///
/// json: `json.dumps(entries, indent=4)` (no trailing newline); json-lines:
/// one `json.dumps(entry)` per line, newline-terminated; yaml: `yaml.dump`
/// (block style, keys sorted by code point). Integers print as integers,
/// floats as Python's `repr` (`NaN`/`Infinity` in JSON, `.nan`/`.inf` in YAML).
PPE_DECL std::string format_log(std::span<const LogEntry> entries, LogFormat format);

/// The log as `json.dumps(log)` writes it (one line, default separators): the
/// `_log` string of a LogReport state.
PPE_DECL std::string log_to_json_string(std::span<const LogEntry> entries);

/// Reads a log written by `json.dumps` (PPE's `_log`, or ours): a list of
/// objects whose values are numbers. Python's `NaN`, `Infinity`, `-Infinity`
/// are accepted; integers stay integers.
PPE_DECL std::vector<LogEntry> log_from_json_string(std::string_view text);

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/log_format.ipp"
#endif
