#pragma once
/// \file
/// `PrintReport` (PPE's `ppe.training.extensions.PrintReport`): prints the
/// entries a LogReport appends to its log as a table, one row per entry.
///
/// PPE's layout, byte for byte: each column is `max(10, len(key))` characters
/// wide; the header is the keys, left-aligned and padded, joined by two spaces;
/// a row cell is the number in Python's `{:<w g}` format plus two spaces, or
/// `w + 2` spaces when the entry lacks the key. LogReport every 2 iterations,
/// entries inferred from the log:
/// ```
/// iteration   main/loss   elapsed_time
/// 2           0.75        1
/// 4           0.25        1.5
/// ```
/// (every header and row line ends in `"\n"`; rows end in two spaces before it).
/// On a terminal each row is preceded by `"\033[J"` (erase below, which clears
/// a ProgressBar drawn under the table) as in PPE; anywhere else nothing but
/// the table is written. The rule is `ppe::detail::is_terminal` (see
/// `ppe/detail/terminal.hpp`), or the `terminal` option.

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_format.hpp"
#include "ppe/detail/terminal.hpp"
#include "ppe/reporting/log_entry.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/log_buffer.hpp"
#include "ppe/training/extensions/log_report.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of `PrintReport` (PPE's constructor arguments, plus `terminal`).
struct PrintReportOptions {
  /// (PPE_ARG spells `const T&`: a pointer type needs a name to stay `T* const&`.)
  using OStreamPtr = std::ostream*;

  /// The stream to write to; not owned, must outlive the extension.
  PPE_ARG(OStreamPtr, out) = &std::cout;
  /// Forces the terminal output (`true`: `"\033[J"` before each row) or plain
  /// output (`false`); unset: decided from the stream (`ppe::detail::is_terminal`).
  PPE_ARG(std::optional<bool>, terminal);
  /// The rank that prints in distributed training (`ManagerOptions::rank`);
  /// the others skip it. Unset: every rank (then give each its own stream).
  PPE_ARG(std::optional<int>, rank) = 0;

 public:
  /// The columns, in order (PPE's `entries`). Unset: inferred from the log (the
  /// keys in the order first seen, `epoch` or `iteration` first by the
  /// LogReport's unit, `elapsed_time` last). Must not be empty when set.
  PrintReportOptions& entries(std::vector<std::string> keys) {
    entries_ = std::move(keys);
    return *this;
  }
  const std::optional<std::vector<std::string>>& entries() const noexcept { return entries_; }

  /// Reads the log of the LogReport registered under this name (the default,
  /// `"LogReport"`); it must be registered with the same manager.
  PrintReportOptions& log_report(std::string name) {
    log_report_name_ = std::move(name);
    log_report_instance_.reset();
    return *this;
  }
  /// Reads the log of this LogReport, which is not registered with the manager:
  /// PrintReport calls it first at each of its own calls (so it accumulates on
  /// PrintReport's trigger), saves its state and finalizes it (PPE's
  /// `PrintReport(log_report=LogReport(...))`).
  PrintReportOptions& log_report(std::shared_ptr<LogReport> instance) {
    log_report_instance_ = std::move(instance);
    log_report_name_.clear();
    return *this;
  }
  /// As above, taking the LogReport over.
  PrintReportOptions& log_report(LogReport&& instance) {
    return log_report(std::make_shared<LogReport>(std::move(instance)));
  }
  /// The LogReport's name (empty when an instance was given).
  const std::string& log_report_name() const noexcept { return log_report_name_; }
  /// The LogReport instance, if one was given.
  const std::shared_ptr<LogReport>& log_report_instance() const noexcept { return log_report_instance_; }

 private:
  std::optional<std::vector<std::string>> entries_;
  std::string log_report_name_ = "LogReport";
  std::shared_ptr<LogReport> log_report_instance_;
};

/// Prints the entries of a LogReport's log as a table. Default trigger: every
/// iteration (it prints what the LogReport appended since its last call);
/// priority: reader, the LogReport's, so register it after the LogReport to
/// print an entry in the iteration it is made. State: the LogReport instance's,
/// when constructed with one (as PPE), else none.
///
/// Move-only: it holds a reader of the log.
class PrintReport {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "PrintReport";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Checks the options: a stream, a non-empty entry list if given, a
  /// LogReport name or instance.
  explicit PrintReport(PrintReportOptions options = {});
  /// `PrintReport({"epoch", "main/loss"})`: these entries, other options from
  /// `options` (which must not set entries too).
  explicit PrintReport(std::vector<std::string> entries, PrintReportOptions options = {});

  PrintReport(PrintReport&&) noexcept = default;
  PrintReport& operator=(PrintReport&&) noexcept = default;

  /// Takes a reader of the LogReport's log (it sees the entries appended from
  /// now on). By name: an error naming the registered extensions when there is
  /// none of that name, or the actual type when it is not a LogReport.
  void initialize(Manager& m);

  /// Updates the LogReport instance (if any), then prints the header if due
  /// and a row for each entry appended since the last call.
  void operator()(Manager& m) {
    if (instance_) (*instance_)(m);
    if (reader_ && reader_.new_entries().empty() && !header_due_) return;  // the common iteration
    print(m);
  }

  /// Finalizes the LogReport instance (its own writer), if one was given. (PPE
  /// leaves it unfinalized.)
  void finalize(Manager& m) {
    if (instance_) instance_->finalize(m);
  }

  /// `{"_log_report": <the instance's state>}` when constructed with a
  /// LogReport instance, else `{}` (as PPE: a registered LogReport saves its
  /// own state).
  State state_dict() const;
  /// Restores the instance's state (an error naming the key when it is
  /// missing); without an instance there is nothing to restore. The restored
  /// entries count as printed.
  void load_state_dict(const State& s);

  /// The columns in use: the given entries, or those inferred so far.
  const std::vector<std::string>& entries() const noexcept { return entries_; }
  /// Whether the entries are inferred from the log.
  bool infers_entries() const noexcept { return infer_; }
  /// The given entries except those LogReport adds itself (`epoch`,
  /// `iteration`, `elapsed_time`): the manager's report-key check.
  std::vector<std::string> consumed_keys() const {
    std::vector<std::string> out;
    if (!infer_)
      for (const auto& e : entries_)
        if (e != "epoch" && e != "iteration" && e != "elapsed_time") out.push_back(e);
    return out;
  }
  /// The LogReport instance, if constructed with one.
  const std::shared_ptr<LogReport>& log_report_instance() const noexcept { return instance_; }
  /// Whether the terminal output is used (decides it if not yet decided).
  bool terminal() { return output_.terminal(); }

  /// PPE's `filter_and_sort_entries`: `iteration` first if `unit` is
  /// iterations, `epoch` first if it is epochs (the other one is dropped),
  /// `elapsed_time` last, the rest in their order.
  static std::vector<std::string> sorted_entries(const std::vector<std::string>& keys, Unit unit);

 private:
  struct Column {
    std::string key;
    std::size_t width;  ///< characters (code points, as Python's len)
  };

  static PrintReportOptions with_entries(std::vector<std::string> entries, PrintReportOptions options);

  /// The rest of operator(): prints the header and the new entries.
  void print(Manager& m);

  /// Python's `len` of a UTF-8 string: the bytes that start a code point.
  static std::size_t code_points(std::string_view s) noexcept {
    std::size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
  }

  LogReport& named_log_report(Manager& m) const;

  /// Adds the keys not seen before, in the order met; whether there were any.
  bool learn_keys(std::span<const LogEntry> lines);

  /// Sets the columns and the header, and makes the header due (PPE prints it
  /// again whenever the inferred columns change).
  void set_columns(std::vector<std::string> keys);

  /// One row: each cell `format(value, "<{width}g")` and two spaces, or
  /// `width + 2` spaces for a key the entry lacks; then "\n".
  void append_row(const LogEntry& line);

  bool infer_;
  std::string name_;
  std::shared_ptr<LogReport> instance_;
  ppe::detail::DisplayOutput output_;
  std::optional<int> rank_;
  LogReader reader_;
  std::vector<std::string> seen_;     ///< inferred mode: keys in first-seen order
  std::vector<std::string> entries_;  ///< the columns' keys
  std::vector<Column> columns_;
  std::string header_;
  bool header_due_ = true;
  std::string text_;  ///< what one call writes, reused
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/print_report.ipp"
#endif
