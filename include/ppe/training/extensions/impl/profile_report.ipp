// Definitions of training/extensions/profile_report.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/training/extensions/profile_report.hpp"

namespace ppe::training::extensions {

PPE_DECL ProfileReport::ProfileReport(ProfileReportOptions options)
    : store_keys_(options.store_keys()),
      report_keys_(options.report_keys()),
      trigger_(options.trigger()),
      filename_text_(options.filename()),
      append_(options.append()),
      format_(log_format(options.format(), options.filename().value_or(""))),
      writer_(std::move(options.writer())),
      summary_(options.time_summary()),
      text_(format_) {
  if (filename_text_) {
    if (filename_text_->empty())
      throw std::invalid_argument("ppe::ProfileReport: the filename is empty (unset it to write no file)");
    filename_ = ppe::detail::NamedFormat::parse(*filename_text_, "ProfileReport filename");
  }
  if (append_ && (format_ == LogFormat::Json || format_ == LogFormat::Csv))
    throw std::invalid_argument("ppe::ProfileReport: the " + std::string(log_format_name(format_)) +
                                " format cannot be appended to (its file is rewritten as a whole); use format "
                                "'json-lines' or 'yaml' with append, or append(false)");
  if (!summary_)  // the process-wide one: never destroyed, so not owned
    summary_ = std::shared_ptr<profiler::TimeSummary>(&profiler::get_time_summary(), [](profiler::TimeSummary*) {});
  if (store_keys_) {
    const std::size_t n = store_keys_->size();
    for (std::size_t i = 0; i < n; ++i) store_keys_->push_back((*store_keys_)[i] + ".std");
  }
}

PPE_DECL void ProfileReport::emit(Manager& m) {
  const std::vector<std::pair<std::string, double>> stats = summary_->make_statistics(/*clear=*/true);
  const auto listed = [](const std::vector<std::string>& keys, const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  };
  if (report_keys_)
    if (reporting::Reporter* r = reporting::Reporter::current())
      for (const auto& [k, v] : stats)
        if (listed(*report_keys_, k)) r->report("time." + k, reporting::Value(v));

  std::vector<std::pair<std::string, LogValue>> items;
  for (const auto& [k, v] : stats)
    if (!store_keys_ || listed(*store_keys_, k)) items.emplace_back(k, v);
  // A tag named like these is overwritten by them, as in PPE's dict.
  const auto set = [&items](const std::string& k, LogValue v) {
    for (auto& item : items)
      if (item.first == k) {
        item.second = v;
        return;
      }
    items.emplace_back(k, v);
  };
  set("epoch", m.epoch());
  set("iteration", m.iteration());
  set("elapsed_time", m.elapsed_time());
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  LogEntry e;
  for (const auto& [k, v] : items) e.set(k, v);

  text_.append(e);  // first: a key that cannot be written fails before the log changes
  log_.push_back(e);
  if (!filename_) return;
  const std::string name = filename_->format([&](const std::string& field) -> std::string {
    const LogValue* v = e.find(field);
    if (!v) {
      throw std::invalid_argument("ppe::ProfileReport: the filename '" + *filename_text_ + "' names the field '{" +
                                  field + "}', which the log entry lacks; keys present: " +
                                  ppe::detail::python_key_list(e));
    }
    return v->is_int() ? std::to_string(v->as_int()) : ppe::detail::python_float_repr(v->to_double());
  });
  m.writer_for(writer_)(name, text_.save_fn(), append_);
  if (append_) {
    log_.clear();
    text_.clear();
  }
}

PPE_DECL State ProfileReport::state_dict() const {
  State s = State::dict();
  s.set("_trigger", trigger_.state_dict());
  s.set("_log", log_to_json_string(log_));
  return s;
}

PPE_DECL void ProfileReport::load_state_dict(const State& s) {
  const State& log = s.at("_log");
  if (!log.is_string())
    throw std::invalid_argument("ppe::ProfileReport: the state's '_log' must be a JSON string, got a " +
                                std::string(State::kind_name(log.kind())));
  std::vector<LogEntry> entries = log_from_json_string(log.as_string());
  if (const State* t = s.find("_trigger")) trigger_.load_state_dict(*t);
  log_ = std::move(entries);
  text_.clear();
  for (const LogEntry& e : log_) text_.append(e);
}

PPE_DECL ProfileReport::ProfileReport(ProfileReport&&) noexcept = default;
PPE_DECL ProfileReport& ProfileReport::operator=(ProfileReport&&) noexcept = default;
PPE_DECL ProfileReport::~ProfileReport() = default;

}  // namespace ppe::training::extensions
