#pragma once
/// \file
/// `ppe::training::extensions::LogReport` (PPE's `LogReport`): accumulates the
/// observation of every iteration and, each time its own trigger fires, appends
/// the means plus `epoch`, `iteration` and `elapsed_time` to a log that it
/// writes to a file (json, json-lines, yaml or csv) and shares with readers such as
/// PrintReport.

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/named_format.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/dict_summary.hpp"
#include "ppe/reporting/log_entry.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/log_buffer.hpp"
#include "ppe/training/extensions/log_format.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions {

/// Options of a LogReport (PPE's constructor arguments).
struct LogReportOptions {
  /// When to emit an entry (PPE's `trigger`; distinct from the extension's
  /// own trigger, which decides when observations are accumulated).
  PPE_ARG(triggers::IntervalTrigger, trigger) = ppe::epochs(1);
  /// Called with each entry before it is logged; may change it.
  PPE_ARG(std::function<void(LogEntry&)>, postprocess);
  /// File name under the writer's directory; `{iteration}`, `{epoch}`,
  /// `{elapsed_time}` and any key of the entry are replaced as Python's
  /// `str.format` would (`"log_{iteration}"` → `log_10`).
  PPE_ARG(std::string, filename) = "log";
  /// Append each new entry to the file instead of rewriting the whole log
  /// (json-lines, yaml and csv; csv rewrites the file when its columns grow).
  PPE_ARG(bool, append) = false;
  /// `"json"`, `"json-lines"`, `"yaml"` or `"csv"`; empty: inferred from the
  /// file name (`.jsonl` → json-lines, `.yaml` → yaml, `.csv` → csv, else json).
  PPE_ARG(std::string, format);
  /// The writer to use; null: the manager's writer. A writer of another sink
  /// than files (`writing::TensorBoardWriter`) receives each new entry
  /// (`Writer::write_log`).
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// The rank that accumulates and writes the log in distributed training (`ManagerOptions::rank`);
  /// the others skip it. Unset: every rank (then give each its own `out_dir`).
  PPE_ARG(std::optional<int>, rank) = 0;

 public:
  /// Accumulate only these keys (PPE's `keys`); by default every key.
  LogReportOptions& keys(std::vector<std::string> k) {
    keys_ = std::move(k);
    return *this;
  }
  const std::optional<std::vector<std::string>>& keys() const noexcept { return keys_; }

 private:
  std::optional<std::vector<std::string>> keys_;
};

/// Writes the mean of every reported value over each trigger interval to a
/// log file.
///
/// Each iteration (as the extension's trigger, by default every iteration,
/// says) the observation is added to a summary. When `options.trigger()` fires
/// (by default every epoch), or before training, an entry is made from the
/// summary's means (as floats, in first-report order), then `epoch` and
/// `iteration` (integers) and `elapsed_time` (seconds) are set (a key that
/// already exists keeps its position), `postprocess` runs, the entry is
/// appended to the log, the file is written and the summary restarts.
///
/// The log is a `LogBuffer` shared with readers (`make_reader()`): each reader
/// sees the entries appended since it last marked them read. In append mode
/// (json-lines, yaml) the LogReport marks its own entries read after each
/// write, so the log keeps only what some other reader has not read yet.
///
/// csv keeps the whole history even in append mode: its header lists every
/// key so far, so when an entry brings a new key the whole file is rewritten.
/// With `append`, an emission appends only the rows not yet written while the
/// columns and the file name stay the same; the first write of a run (or
/// after a state load) and any write after the columns grew or the name
/// changed rewrite the file from the history.
///
/// Move-only: a copy would share the log.
class LogReport {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "LogReport";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Checks the options: a known format, no append with json, a valid file
  /// name template.
  explicit LogReport(LogReportOptions options = {});

  // Out of line with separate compilation: the members' code is compiled once.
  LogReport(LogReport&&) noexcept;
  LogReport& operator=(LogReport&&) noexcept;
  ~LogReport();

  /// Accumulates the observation; emits an entry when the trigger fires.
  void operator()(Manager& m) {
    if (rank_ && *rank_ != m.rank()) return;
    const reporting::Observation& obs = m.observation();
    if (keys_) {
      for (const auto& k : *keys_)
        if (const reporting::Value* v = obs.find(k)) summary_.add(k, *v);
    } else {
      summary_.add(obs);
    }
    if (m.is_before_training() || trigger_(m)) emit(m);
  }

  /// Finalizes the LogReport's own writer (the manager finalizes its own).
  void finalize(Manager&) {
    if (writer_) writer_->finalize();
  }

  /// When training fails: flushes the writer the log goes to, so that the
  /// entries logged before the error are readable (a TensorBoardWriter may
  /// hold records back, `flush_secs`). A flush that fails is a warning: the
  /// training error is the one to report.
  void on_error(Manager& m, std::exception_ptr);

  /// PPE's layout: `_trigger`, `_summary`, `_log` (the log as a JSON string),
  /// plus `_log_read`, how many of those entries this LogReport has already
  /// written in append mode (PPE lacks it and writes them again on resume;
  /// always 0 for csv, which keeps the history).
  State state_dict() const;
  /// Restores a state of `state_dict()` or of PPE. The log is replaced; other
  /// readers see the restored entries as already read. csv: the next write
  /// rewrites the file from the restored history (with `append` too), which
  /// drops the rows written after the state was saved.
  void load_state_dict(const State& s);

  /// The entries this LogReport still holds for itself: the whole history, or
  /// in append mode (json-lines, yaml) those not yet written (PPE's `log`).
  std::vector<LogEntry> log() const;

  /// A new cursor into the log, for an extension that reads it (PrintReport):
  /// it sees the entries appended from now on. Keep the reader for as long as
  /// it reads: destroying it lets the log drop entries kept for it.
  LogReader make_reader() { return buffer_->make_reader(); }
  /// The shared log (entries some reader still needs).
  const LogBuffer& buffer() const noexcept { return *buffer_; }

  /// The emission trigger and its unit (PrintReport and ProgressBar read it).
  const triggers::IntervalTrigger& trigger() const noexcept { return trigger_; }
  Unit trigger_unit() const noexcept { return trigger_.unit(); }
  LogFormat format() const noexcept { return format_; }
  const std::string& filename() const noexcept { return filename_text_; }
  bool append() const noexcept { return append_; }

 private:
  void emit(Manager& m);

  std::optional<std::vector<std::string>> keys_;
  triggers::IntervalTrigger trigger_;
  std::function<void(LogEntry&)> postprocess_;
  std::string filename_text_;
  ppe::detail::NamedFormat filename_;
  bool append_;
  LogFormat format_;
  std::shared_ptr<writing::Writer> writer_;
  std::optional<int> rank_;
  // state_dict() is const but reading a summary resolves lazy tensor sums.
  mutable reporting::DictSummary summary_;
  std::shared_ptr<LogBuffer> buffer_;
  LogReader reader_;
  LogText text_;  // the file's content: reader_'s new entries, formatted
  // csv with append: the file last written in this run (since a state load),
  // its row count and column count; unset: rewrite at the next emission.
  std::optional<std::size_t> csv_rows_written_;
  std::size_t csv_columns_written_ = 0;
  std::string csv_file_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/log_report.ipp"
#endif
