// Definitions of training/extensions/log_report.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/log_report.hpp"
#include "ppe/warnings.hpp"

namespace ppe::training::extensions {

PPE_DECL LogReport::LogReport(LogReportOptions options)
    : keys_(options.keys()),
      trigger_(options.trigger()),
      postprocess_(std::move(options.postprocess())),
      filename_text_(options.filename()),
      filename_(ppe::detail::NamedFormat::parse(options.filename(), "LogReport filename")),
      append_(options.append()),
      format_(log_format(options.format(), options.filename())),
      writer_(std::move(options.writer())),
      rank_(options.rank()),
      buffer_(LogBuffer::create()),
      reader_(buffer_->make_reader()),
      text_(format_) {
  if (filename_text_.empty()) throw std::invalid_argument("ppe::LogReport: the filename is empty");
  if (format_ == LogFormat::Json && append_)
    throw std::invalid_argument(
        "ppe::LogReport: the json format cannot be appended to (a JSON file is one list); use format "
        "'json-lines', 'yaml' or 'csv' with append, or append(false)");
}

PPE_DECL State LogReport::state_dict() const {
  State s = State::dict();
  s.set("_trigger", trigger_.state_dict());
  s.set("_summary", summary_.state_dict());
  s.set("_log", log_to_json_string(buffer_->entries()));
  s.set("_log_read", static_cast<std::int64_t>(buffer_->size() - reader_.new_entries().size()));
  return s;
}

PPE_DECL void LogReport::load_state_dict(const State& s) {
  if (const State* t = s.find("_trigger")) trigger_.load_state_dict(*t);
  if (const State* sum = s.find("_summary"))
    summary_.load_state_dict(*sum);
  else
    summary_.reset();
  const State& log = s.at("_log");
  if (!log.is_string())
    throw std::invalid_argument("ppe::LogReport: the state's '_log' must be a JSON string, got a " +
                                std::string(State::kind_name(log.kind())));
  // csv rewrites the file from the whole restored log: none of it counts as written.
  std::size_t read = 0;
  if (const State* r = s.find("_log_read"); format_ != LogFormat::Csv && r && r->is_int() && r->as_int() > 0)
    read = static_cast<std::size_t>(r->as_int());
  buffer_->replace(log_from_json_string(log.as_string()), &reader_, read);
  text_.clear();
  for (const LogEntry& e : reader_.new_entries()) text_.append(e);
  csv_rows_written_.reset();
}

PPE_DECL std::vector<LogEntry> LogReport::log() const {
  const auto e = reader_.new_entries();
  return {e.begin(), e.end()};
}

PPE_DECL void LogReport::emit(Manager& m) {
  LogEntry e;
  // Every mean in one transfer per device (one host synchronisation).
  for (const auto& [k, v] : reporting::to_doubles(summary_.compute_mean())) e.set(k, v);
  e.set("epoch", m.epoch());
  e.set("iteration", m.iteration());
  e.set("elapsed_time", m.elapsed_time());
  if (postprocess_) postprocess_(e);
  // Only the new entry is formatted here (first: a key that cannot be
  // written fails before the log changes); an asynchronous writer puts the
  // shared, immutable text in the file on its own thread.
  text_.append(e);
  buffer_->append(e);

  const std::string name = filename_.format([&](const std::string& field) -> std::string {
    const LogValue* v = e.find(field);
    if (!v) {
      throw std::invalid_argument("ppe::LogReport: the filename '" + filename_text_ + "' names the field '{" + field +
                                  "}', which the log entry lacks; keys present: " + ppe::detail::python_key_list(e));
    }
    return v->is_int() ? std::to_string(v->as_int()) : ppe::detail::python_float_repr(v->to_double());
  });
  writing::Writer& w = m.writer_for(writer_);
  if (format_ == LogFormat::Csv) {
    // The header names every key so far: rows can be appended only under the
    // header the file already has.
    const bool extend = append_ && csv_rows_written_ && *csv_rows_written_ <= text_.size() &&
                        csv_columns_written_ == text_.columns().size() && csv_file_ == name;
    w.write_log(name, extend ? text_.rows_save_fn(*csv_rows_written_) : text_.save_fn(), extend, e);
    if (append_) {
      csv_rows_written_ = text_.size();
      csv_columns_written_ = text_.columns().size();
      if (!extend) csv_file_ = name;
    }
  } else {
    w.write_log(name, text_.save_fn(), append_, e);
    if (append_) {
      reader_.mark_read();
      text_.clear();
    }
  }
  summary_.reset();
}

PPE_DECL void LogReport::on_error(Manager& m, std::exception_ptr) {
  if (rank_ && *rank_ != m.rank()) return;  // this rank wrote nothing
  try {
    (writer_ ? *writer_ : m.writer()).flush();
  } catch (const std::exception& err) {
    ppe::warn(std::string("ppe::LogReport: flushing the log's writer after a training error failed: ") +
              ppe::detail::error_message(err));
  }
}

PPE_DECL LogReport::LogReport(LogReport&&) noexcept = default;
PPE_DECL LogReport& LogReport::operator=(LogReport&&) noexcept = default;
PPE_DECL LogReport::~LogReport() = default;

}  // namespace ppe::training::extensions
