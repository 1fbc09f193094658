#pragma once
/// \file
/// The file formats of LogReport (PPE's `LogWriterSaveFunc`): `json`,
/// `json-lines` and `yaml`, byte for byte as Python's `json.dumps` and PyYAML's
/// `yaml.dump` write a list of entries; `csv` (not in PPE), as Python's
/// `csv.DictWriter` writes it; and the reading of a log saved as a JSON string
/// in a LogReport state (`_log`).
///
/// nlohmann-json escapes key strings (ASCII only, as Python's `ensure_ascii`)
/// and parses saved logs. The yaml format needs yaml-cpp, which the core does
/// not link: it is there when a translation unit of the program includes
/// `ppe/training/extensions/log_format_yaml.hpp` (the `ppe-config` feature;
/// `ppe/config.hpp` includes it). Floats are formatted here
/// (`ppe/detail/python_repr.hpp`), because neither library writes them as
/// Python does.

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/log_entry.hpp"

namespace ppe::training::extensions {

/// LogReport's entries (ppe/reporting/log_entry.hpp), under the names its
/// users write (`ext::LogEntry` in a `postprocess`, `ext::LogValue`): the
/// type lives in reporting because the writers, below training, take it too.
using reporting::LogEntry;
using reporting::LogValue;

/// A LogReport file format.
enum class LogFormat {
  Json,       ///< the whole history as one JSON list, indented by 4 (`json.dumps(log, indent=4)`)
  JsonLines,  ///< one JSON object per line, each line ending in a newline
  Yaml,       ///< a YAML block sequence, keys sorted (PyYAML's `yaml.dump` defaults)
  /// A header of every key (in order of first appearance), then one row per
  /// entry, an empty cell where the entry lacks a key; lines end in `\n`.
  Csv,
};

/// `"json"`, `"json-lines"`, `"yaml"`, `"csv"`.
inline std::string_view log_format_name(LogFormat f) noexcept {
  switch (f) {
    case LogFormat::Json: return "json";
    case LogFormat::JsonLines: return "json-lines";
    case LogFormat::Yaml: return "yaml";
    case LogFormat::Csv: return "csv";
  }
  return "json";
}

/// Formats one log entry as the text of one element of a log (used for yaml,
/// whose formatter `log_format_yaml.hpp` installs).
using LogEntryFormatter = std::string (*)(const LogEntry&);

namespace detail {
/// The yaml entry formatter: null until `log_format_yaml.hpp` installs it.
PPE_DECL LogEntryFormatter& yaml_log_entry_formatter() noexcept;
/// The error for a yaml log in a program without the yaml format.
inline constexpr std::string_view kYamlFormatMissing =
    "ppe::LogReport: the yaml log format needs yaml-cpp, which this program does not use: include "
    "<ppe/training/extensions/log_format_yaml.hpp> (or <ppe/config.hpp>) in one of its files and link "
    "yaml-cpp (Meson: ppe-config, pkg-config: ppe-config, CMake: ppe::config)";
}  // namespace detail

/// The format named `name`; an empty name infers it from `filename`: `.jsonl`
/// → json-lines, `.yaml` → yaml (as PPE), `.csv` → csv (ours), anything else
/// → json. An unknown name, or yaml in a program without the yaml format
/// (see above), is `std::invalid_argument`.
PPE_DECL LogFormat log_format(std::string_view name, std::string_view filename = {});

/// The content of a log file in one format, built one entry at a time.
///
/// PPE formats the whole log at each write, a cost that grows with the run
/// and is paid on the training thread. A LogText formats each entry once, when
/// it is appended, and keeps the text in immutable chunks of 64 entries, so
/// that `save_fn()` can hand a writer the current content by sharing the
/// chunks (copying only the last, partial one): the training thread pays for
/// one entry, and an asynchronous writer puts the bytes in the file.
///
/// csv: each row is laid out for the columns known when it is appended (the
/// header is kept apart). An entry bringing a new key adds a column at the
/// end, and the rows before it are padded with an empty cell once, then (a
/// rewrite of the text, paid only when the columns grow). `rows_save_fn`
/// writes the rows from a given one on, without the header: what an append
/// to a file holding the earlier rows under the same header adds.
class LogText {
 public:
  explicit LogText(LogFormat format) noexcept : format_(format) {}

  /// Formats `e` and appends it.
  PPE_DECL void append(const LogEntry& e);
  /// Drops every entry (and the csv columns).
  void clear() noexcept {
    chunks_.clear();
    tail_.clear();
    tail_count_ = 0;
    size_ = 0;
    columns_.clear();
    column_index_.clear();
    header_.reset();
  }
  /// The number of entries.
  std::size_t size() const noexcept { return size_; }
  LogFormat format() const noexcept { return format_; }
  /// csv: the header's keys, in order of first appearance (they only grow
  /// until `clear`); other formats: empty.
  const std::vector<std::string>& columns() const noexcept { return columns_; }

  /// The content, as `format_log` makes it.
  PPE_DECL std::string str() const;
  /// A save function that writes the content as it is now: it owns what it
  /// writes (see writing/writer.hpp), so the LogText may change meanwhile.
  PPE_DECL std::function<void(std::ostream&)> save_fn() const;
  /// csv only: a save function that writes the rows of the entries from
  /// `first` (0-based) on, as they are now, without the header, each ending
  /// in `\n` (nothing when `first == size()`). It copies only the rows after
  /// the last full chunk; `first > size()` is `std::out_of_range`, another
  /// format `std::logic_error`.
  PPE_DECL std::function<void(std::ostream&)> rows_save_fn(std::size_t first) const;

 private:
  static constexpr std::size_t kChunk = 64;
  // csv: adds the keys of `e` that are not columns yet; pads the earlier rows.
  void add_csv_columns(const LogEntry& e);
  LogFormat format_;
  // Full chunks of kChunk entries, each joined by the format's separator.
  std::vector<std::shared_ptr<const std::string>> chunks_;
  std::string tail_;  // the last entries (fewer than kChunk), joined
  std::size_t tail_count_ = 0;
  std::size_t size_ = 0;
  // csv: the columns, each key's column, the header line (without its newline).
  std::vector<std::string> columns_;
  std::map<std::string, std::size_t, std::less<>> column_index_;
  std::shared_ptr<const std::string> header_;
};

/// `entries` in `format`, as PPE writes them: the bytes of one write of a
/// LogReport (in append mode, `entries` are the new entries only).
///
/// json: `json.dumps(entries, indent=4)` (no trailing newline); json-lines:
/// one `json.dumps(entry)` per line, newline-terminated; yaml: `yaml.dump`
/// (block style, keys sorted by code point); csv: Python's
/// `csv.DictWriter(f, keys, lineterminator="\n")` header and rows, keys in
/// order of first appearance, a key holding `,` `"` `\r` or `\n` quoted with
/// `"` doubled (an empty log is an empty file). Integers print as integers,
/// floats as Python's `repr` (`NaN`/`Infinity` in JSON, `.nan`/`.inf` in YAML,
/// `nan`/`inf` in csv).
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
