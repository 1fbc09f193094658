#pragma once
/// \file
/// `ppe::training::extensions::ProfileReport` (PPE's `ProfileReport`): each
/// time its trigger fires, takes the statistics of a TimeSummary (and clears
/// them), reports chosen ones as `time.<key>`, and appends them, with
/// `epoch`, `iteration` and `elapsed_time`, to a log file in LogReport's
/// formats.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/detail/named_format.hpp"
#include "ppe/profiler/time_summary.hpp"
#include "ppe/reporting/log_entry.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/log_format.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions {

/// Options of a ProfileReport (PPE's constructor arguments).
struct ProfileReportOptions {
  /// When to take the statistics and write an entry (PPE's `trigger`).
  PPE_ARG(triggers::IntervalTrigger, trigger) = ppe::epochs(1);
  /// File name under the writer's directory, formatted with the entry's keys
  /// as Python's `str.format` (`"profile_{iteration}"`); unset: no file (PPE's
  /// `log_name=None`).
  PPE_ARG(std::optional<std::string>, filename) = std::string("log");
  /// Append each new entry to the file (json-lines, yaml) instead of
  /// rewriting the whole log.
  PPE_ARG(bool, append) = false;
  /// `"json"`, `"json-lines"`, `"yaml"` or `"csv"`; empty: from the file name
  /// (`.jsonl`, `.yaml`, `.csv`, else json).
  PPE_ARG(std::string, format);
  /// The writer to use; null: the manager's.
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// The TimeSummary to read; null: `ppe::profiler::get_time_summary()`.
  PPE_ARG(std::shared_ptr<profiler::TimeSummary>, time_summary);

 public:
  /// Keep only these keys' statistics in the log (PPE's `store_keys`): each
  /// key's mean and its `.std` (other statistics, such as `.min`, only when
  /// listed). By default every statistic.
  ProfileReportOptions& store_keys(std::vector<std::string> k) {
    store_keys_ = std::move(k);
    return *this;
  }
  const std::optional<std::vector<std::string>>& store_keys() const noexcept { return store_keys_; }
  /// Report these statistics as `time.<key>` into the current observation
  /// (PPE's `report_keys`); by default none.
  ProfileReportOptions& report_keys(std::vector<std::string> k) {
    report_keys_ = std::move(k);
    return *this;
  }
  const std::optional<std::vector<std::string>>& report_keys() const noexcept { return report_keys_; }

 private:
  std::optional<std::vector<std::string>> store_keys_;
  std::optional<std::vector<std::string>> report_keys_;
};

/// Writes the profiler's time statistics to a log (PPE's `ProfileReport`).
///
/// Before training and whenever `options.trigger()` fires, the TimeSummary's
/// statistics (`<tag>` mean, `<tag>.std`, `<tag>.min`, `<tag>.max` in
/// seconds) are taken and cleared. The `report_keys` among them are reported
/// as `time.<key>`; the entry keeps the `store_keys` (and their `.std`), adds
/// `epoch`, `iteration` (integers) and `elapsed_time`, and has its keys
/// sorted (as PPE). The entry is appended to the log and the file written
/// through the writer, in LogReport's formats (log_format.hpp).
///
/// The times come from `ppe::profiler::record` scopes (the manager's
/// `enable_profile` records every extension call) and `TimeSummary::add`.
///
/// State (PPE's layout): `_trigger`, `_log` (the entries not yet written in
/// append mode, else the whole log, as a JSON string).
class ProfileReport {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "ProfileReport";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Checks the options: a known format, no append with json or csv, a valid
  /// file name template.
  explicit ProfileReport(ProfileReportOptions options = {});

  ProfileReport(ProfileReport&&) noexcept;
  ProfileReport& operator=(ProfileReport&&) noexcept;
  ~ProfileReport();

  /// Emits an entry before training and when the trigger fires.
  void operator()(Manager& m) {
    if (m.is_before_training() || trigger_(m)) emit(m);
  }
  /// Finalizes the ProfileReport's own writer.
  void finalize(Manager&) {
    if (writer_) writer_->finalize();
  }

  State state_dict() const;
  void load_state_dict(const State& s);

  /// The log (PPE's `_log`): every entry, or in append mode those not yet written.
  const std::vector<LogEntry>& log() const noexcept { return log_; }
  const triggers::IntervalTrigger& trigger() const noexcept { return trigger_; }
  LogFormat format() const noexcept { return format_; }
  /// The TimeSummary read.
  profiler::TimeSummary& time_summary() const noexcept { return *summary_; }

 private:
  void emit(Manager& m);

  std::optional<std::vector<std::string>> store_keys_;
  std::optional<std::vector<std::string>> report_keys_;
  triggers::IntervalTrigger trigger_;
  std::optional<std::string> filename_text_;
  std::optional<ppe::detail::NamedFormat> filename_;
  bool append_;
  LogFormat format_;
  std::shared_ptr<writing::Writer> writer_;
  std::shared_ptr<profiler::TimeSummary> summary_;
  std::vector<LogEntry> log_;
  LogText text_;  // log_, formatted
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/profile_report.ipp"
#endif
