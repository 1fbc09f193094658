// Definitions of training/extensions/log_format.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
// nlohmann-json is needed here only (yaml-cpp: log_format_yaml.ipp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <memory>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/log_format.hpp"

namespace ppe::training::extensions {

namespace detail {
PPE_DECL LogEntryFormatter& yaml_log_entry_formatter() noexcept {
  static LogEntryFormatter formatter = nullptr;
  return formatter;
}
}  // namespace detail

PPE_DECL LogFormat log_format(std::string_view name, std::string_view filename) {
  LogFormat format = LogFormat::Json;
  if (name.empty()) {
    if (filename.ends_with(".jsonl")) format = LogFormat::JsonLines;
    if (filename.ends_with(".yaml")) format = LogFormat::Yaml;
    if (filename.ends_with(".csv")) format = LogFormat::Csv;
  } else {
    const auto known = {LogFormat::Json, LogFormat::JsonLines, LogFormat::Yaml, LogFormat::Csv};
    const auto* found = std::find_if(known.begin(), known.end(), [&](LogFormat f) { return name == log_format_name(f); });
    if (found == known.end())
      throw std::invalid_argument("ppe::LogReport: unsupported log format '" + std::string(name) +
                                  "'; expected 'json', 'json-lines', 'yaml' or 'csv'");
    format = *found;
  }
  // Checked here, where a LogReport or ProfileReport is made, not at its first write.
  if (format == LogFormat::Yaml && !detail::yaml_log_entry_formatter())
    throw std::invalid_argument(std::string(detail::kYamlFormatMissing));
  return format;
}

namespace detail {

/// A key as a JSON string literal, non-ASCII escaped as `\uXXXX` (Python's
/// `ensure_ascii=True`; nlohmann writes the same escapes and short forms).
PPE_DECL std::string json_key(const std::string& key) {
  try {
    return nlohmann::json(key).dump(-1, ' ', /*ensure_ascii=*/true);
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("ppe::LogReport: the log key '" + key + "' is not valid UTF-8");
  }
}

PPE_DECL std::string json_value(const LogValue& v) {
  return v.is_int() ? std::to_string(v.as_int()) : ppe::detail::python_json_float(v.to_double());
}

/// One entry as `json.dumps(entry)` writes it: `{"a": 1, "b": 0.5}`.
PPE_DECL std::string json_entry_line(const LogEntry& e) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : e) {
    if (!first) out += ", ";
    first = false;
    out.append(json_key(k)).append(": ").append(json_value(v));
  }
  return out + "}";
}


/// A key as a csv cell, quoted as Python's csv module does (QUOTE_MINIMAL):
/// a key holding `,`, `"`, `\r` or `\n` goes in double quotes, its quotes
/// doubled. (Python 3.11 with `lineterminator="\n"` leaves a lone `\r`
/// unquoted, which its own reader then takes for a line end; its default
/// dialect quotes it, as here.)
PPE_DECL std::string csv_key(std::string_view key) {
  if (key.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(key);
  std::string out = "\"";
  for (char c : key) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

/// A csv line of `n` cells whose text is `line` (cells joined by commas):
/// Python's csv writes a line of one empty cell as `""`, since an empty line
/// reads back as no cell.
PPE_DECL void csv_finish_line(std::string& line, std::size_t n) {
  if (n == 1 && line.empty()) line = "\"\"";
}

/// The header line: the keys, quoted where needed.
PPE_DECL std::string csv_header(std::span<const std::string> columns) {
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ',';
    out += csv_key(columns[i]);
  }
  csv_finish_line(out, columns.size());
  return out;
}

/// The row of `e` under columns `index` (key → column, `n` columns; every key
/// of `e` is one): integers as integers, floats as `repr`, empty cells for
/// the keys `e` lacks.
PPE_DECL std::string csv_row(const LogEntry& e, const std::map<std::string, std::size_t, std::less<>>& index,
                             std::size_t n) {
  std::vector<const LogValue*> cells(n, nullptr);
  for (const auto& [k, v] : e) cells[index.find(k)->second] = &v;
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    if (const LogValue* v = cells[i])
      out += v->is_int() ? std::to_string(v->as_int()) : ppe::detail::python_float_repr(v->to_double());
  }
  csv_finish_line(out, n);
  return out;
}

/// `count` csv rows of `from` cells (joined by newlines, one line each: the
/// cells are numbers) widened to `to` cells by empty cells at the end.
PPE_DECL std::string csv_pad_rows(std::string_view rows, std::size_t count, std::size_t from, std::size_t to) {
  std::string out;
  out.reserve(rows.size() + count * (to - from + 1));
  std::size_t pos = 0;
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t eol = std::min(rows.find('\n', pos), rows.size());
    std::string line(rows.substr(pos, eol - pos));
    pos = eol + 1;
    // No cell text: `""` (one empty cell) or an empty line (no columns yet).
    if (line == "\"\"") line.clear();
    line.append(to - std::max<std::size_t>(from, 1), ',');
    csv_finish_line(line, to);
    if (r) out += '\n';
    out += line;
  }
  return out;
}

/// The byte offset of row `n` in rows joined by newlines (one line each).
PPE_DECL std::size_t csv_skip_rows(std::string_view rows, std::size_t n) {
  std::size_t pos = 0;
  for (; n > 0; --n) pos = rows.find('\n', pos) + 1;
  return pos;
}

}  // namespace detail

namespace detail {

/// The text around a log's entries: the whole of an empty log, and before,
/// between and after the entries of any other.
struct LogLayout {
  std::string_view empty, prefix, separator, suffix;
};

PPE_DECL LogLayout log_layout(LogFormat format) noexcept {
  switch (format) {
    case LogFormat::Json: return {"[]", "[\n", ",\n", "\n]"};
    case LogFormat::JsonLines: return {"\n", "", "\n", "\n"};
    case LogFormat::Yaml: return {"[]\n", "", "\n", "\n"};
    case LogFormat::Csv: return {"", "", "\n", "\n"};  // the header goes after the prefix
  }
  return {"[]", "[\n", ",\n", "\n]"};
}

/// One entry as it appears in a file of `format`, without separator.
PPE_DECL std::string format_log_entry(const LogEntry& e, LogFormat format) {
  switch (format) {
    case LogFormat::Json: {
      if (e.empty()) return "    {}";
      std::string out = "    {\n";
      bool first = true;
      for (const auto& [k, v] : e) {
        if (!first) out += ",\n";
        first = false;
        out.append("        ").append(json_key(k)).append(": ").append(json_value(v));
      }
      return out + "\n    }";
    }
    case LogFormat::JsonLines: return json_entry_line(e);
    case LogFormat::Yaml: {
      const LogEntryFormatter yaml = detail::yaml_log_entry_formatter();
      if (!yaml) throw std::logic_error(std::string(detail::kYamlFormatMissing));
      return yaml(e);
    }
    case LogFormat::Csv: break;  // a row depends on the columns: LogText::append
  }
  return {};
}

/// Writes a log's chunks and partial last chunk (`tail_count` entries; a csv
/// row may be empty text) as a file of `format`; csv: under `csv_header`
/// (null: no columns).
PPE_DECL void write_log_text(std::ostream& os, LogFormat format, const std::string* csv_header,
                             std::span<const std::shared_ptr<const std::string>> chunks, std::string_view tail,
                             std::size_t tail_count) {
  const LogLayout layout = log_layout(format);
  if (chunks.empty() && tail_count == 0) {
    os << layout.empty;
    return;
  }
  os << layout.prefix;
  if (format == LogFormat::Csv) {
    if (csv_header) os << *csv_header;
    os << '\n';
  }
  bool first = true;
  for (const auto& chunk : chunks) {
    if (!first) os << layout.separator;
    first = false;
    os << *chunk;
  }
  if (tail_count > 0) {
    if (!first) os << layout.separator;
    os << tail;
  }
  os << layout.suffix;
}

}  // namespace detail

PPE_DECL void LogText::add_csv_columns(const LogEntry& e) {
  if (std::all_of(e.begin(), e.end(), [&](const auto& item) { return column_index_.contains(item.first); })) return;
  // Built aside, then swapped in: a failure leaves the text as it was.
  std::vector<std::string> columns = columns_;
  auto index = column_index_;
  for (const auto& [k, v] : e)
    if (index.emplace(k, columns.size()).second) columns.push_back(k);
  const std::size_t from = columns_.size(), to = columns.size();
  std::vector<std::shared_ptr<const std::string>> chunks;
  chunks.reserve(chunks_.size());
  for (const auto& c : chunks_)
    chunks.push_back(std::make_shared<const std::string>(detail::csv_pad_rows(*c, kChunk, from, to)));
  std::string tail = detail::csv_pad_rows(tail_, tail_count_, from, to);
  auto header = std::make_shared<const std::string>(detail::csv_header(columns));
  columns_.swap(columns);
  column_index_.swap(index);
  chunks_.swap(chunks);
  tail_.swap(tail);
  header_ = std::move(header);
}

PPE_DECL void LogText::append(const LogEntry& e) {
  std::string text;
  if (format_ == LogFormat::Csv) {
    add_csv_columns(e);
    text = detail::csv_row(e, column_index_, columns_.size());
  } else {
    text = detail::format_log_entry(e, format_);
  }
  if (tail_count_ > 0) tail_ += detail::log_layout(format_).separator;
  tail_ += text;
  ++size_;
  if (++tail_count_ == kChunk) {
    chunks_.push_back(std::make_shared<const std::string>(std::move(tail_)));
    tail_.clear();
    tail_count_ = 0;
  }
}

PPE_DECL std::string LogText::str() const {
  std::ostringstream os;
  detail::write_log_text(os, format_, header_.get(), chunks_, tail_, tail_count_);
  return std::move(os).str();
}

PPE_DECL std::function<void(std::ostream&)> LogText::save_fn() const {
  return [format = format_, header = header_, chunks = chunks_, tail = tail_, count = tail_count_](std::ostream& os) {
    detail::write_log_text(os, format, header.get(), chunks, tail, count);
  };
}

PPE_DECL std::function<void(std::ostream&)> LogText::rows_save_fn(std::size_t first) const {
  if (format_ != LogFormat::Csv)
    throw std::logic_error("ppe::LogText::rows_save_fn: only csv rows can be written without the rest; this text is " +
                           std::string(log_format_name(format_)));
  if (first > size_)
    throw std::out_of_range("ppe::LogText::rows_save_fn: row " + std::to_string(first) + " is past the last of " +
                            std::to_string(size_) + " rows");
  const std::size_t chunk = first / kChunk;
  if (chunk == chunks_.size()) {  // in the tail: copy those rows only
    std::string rows;
    if (const std::size_t skip = first % kChunk; skip < tail_count_)
      rows.append(std::string_view(tail_).substr(detail::csv_skip_rows(tail_, skip))).push_back('\n');
    return [rows = std::move(rows)](std::ostream& os) { os << rows; };
  }
  std::vector<std::shared_ptr<const std::string>> chunks(chunks_.begin() + static_cast<std::ptrdiff_t>(chunk),
                                                         chunks_.end());
  const std::size_t offset = detail::csv_skip_rows(*chunks.front(), first % kChunk);
  return [chunks = std::move(chunks), offset, tail = tail_, count = tail_count_](std::ostream& os) {
    os << std::string_view(*chunks.front()).substr(offset) << '\n';
    for (std::size_t i = 1; i < chunks.size(); ++i) os << *chunks[i] << '\n';
    if (count > 0) os << tail << '\n';
  };
}

PPE_DECL std::string format_log(std::span<const LogEntry> entries, LogFormat format) {
  LogText text(format);
  for (const LogEntry& e : entries) text.append(e);
  return text.str();
}

PPE_DECL std::string log_to_json_string(std::span<const LogEntry> entries) {
  std::string out = "[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ", ";
    out += detail::json_entry_line(entries[i]);
  }
  return out + "]";
}

PPE_DECL std::vector<LogEntry> log_from_json_string(std::string_view text) {
  // nlohmann-json rejects Python's non-standard NaN/Infinity tokens: outside
  // strings they become marker strings (a NUL byte never starts a real key).
  std::string json;
  json.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      json += c;
      if (c == '\\' && i + 1 < text.size())
        json += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const std::string_view rest = text.substr(i);
    if (rest.starts_with("NaN")) {
      json += "\"\\u0000nan\"";
      i += 2;
    } else if (rest.starts_with("Infinity")) {
      json += "\"\\u0000inf\"";
      i += 7;
    } else if (rest.starts_with("-Infinity")) {
      json += "\"\\u0000-inf\"";
      i += 8;
    } else {
      json += c;
    }
  }
  nlohmann::ordered_json parsed;
  try {
    parsed = nlohmann::ordered_json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("ppe::LogReport: the saved log is not valid JSON: ") + e.what());
  }
  if (!parsed.is_array())
    throw std::invalid_argument("ppe::LogReport: the saved log must be a JSON list of objects, got a " +
                                std::string(parsed.type_name()));
  std::vector<LogEntry> out;
  for (const auto& obj : parsed) {
    if (!obj.is_object())
      throw std::invalid_argument("ppe::LogReport: the saved log must be a JSON list of objects; an element is a " +
                                  std::string(obj.type_name()));
    LogEntry& e = out.emplace_back();
    for (const auto& [k, v] : obj.items()) {
      // Above int64 an integer was cast to a negative one: Python writes any
      // integer, so a larger one is kept as the float nlohmann would read
      // past uint64.
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        e.set(k, static_cast<double>(v.get<std::uint64_t>()));
      else if (v.is_number_unsigned())
        e.set(k, static_cast<std::int64_t>(v.get<std::uint64_t>()));
      else if (v.is_number_integer())
        e.set(k, v.get<std::int64_t>());
      else if (v.is_number_float())
        e.set(k, v.get<double>());
      else if (v.is_string() && v.get<std::string>() == std::string("\0nan", 4))
        e.set(k, std::nan(""));
      else if (v.is_string() && v.get<std::string>() == std::string("\0inf", 4))
        e.set(k, HUGE_VAL);
      else if (v.is_string() && v.get<std::string>() == std::string("\0-inf", 5))
        e.set(k, -HUGE_VAL);
      else
        throw std::invalid_argument("ppe::LogReport: the saved log entry '" + k + "' is a " +
                                    std::string(v.type_name()) + "; log values must be numbers");
    }
  }
  return out;
}

}  // namespace ppe::training::extensions
