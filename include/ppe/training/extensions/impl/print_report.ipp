// Definitions of training/extensions/print_report.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/training/extensions/print_report.hpp"

namespace ppe::training::extensions {

PPE_DECL PrintReport::PrintReport(PrintReportOptions options)
    : infer_(!options.entries().has_value()),
      name_(options.log_report_name()),
      instance_(options.log_report_instance()),
      output_(options.out(), options.terminal()),
      rank_(options.rank()) {
  if (options.out() == nullptr)
    throw std::invalid_argument("ppe: PrintReport out must be a stream, got a null pointer");
  if (!instance_ && name_.empty())
    throw std::invalid_argument(
        "ppe: PrintReport log_report is empty: give the name of a registered LogReport (default \"LogReport\") "
        "or a LogReport instance");
  if (options.entries() && options.entries()->empty())
    throw std::invalid_argument(
        "ppe: PrintReport entries is empty: list the keys to print, or leave entries unset to infer them from "
        "the log");
  // Inferred entries start as no columns, whose header is PPE's "\n".
  set_columns(options.entries() ? *options.entries() : std::vector<std::string>{});
}

PPE_DECL void PrintReport::initialize(Manager& m) {
  // PPE calls an instance here as well; iteration 0 counts as before
  // training, so its log (and file) gains an entry for iteration 0. Here the
  // instance is updated by this extension's calls only.
  reader_ = instance_ ? instance_->make_reader() : named_log_report(m).make_reader();
}

PPE_DECL void PrintReport::print(Manager& m) {
  if (rank_ && *rank_ != m.rank()) return;
  if (!reader_)
    throw std::logic_error(
        "ppe: PrintReport was called before initialize (the manager initializes its extensions at the first "
        "run_iteration; call initialize(manager) when driving the extension by hand)");
  const std::span<const LogEntry> lines = reader_.new_entries();
  if (infer_ && learn_keys(lines)) {
    const Unit unit = instance_ ? instance_->trigger_unit() : named_log_report(m).trigger_unit();
    set_columns(sorted_entries(seen_, unit));
  }

  text_.clear();
  if (header_due_) {
    text_.append(header_);
    header_due_ = false;
  }
  const bool terminal = output_.terminal();
  for (const LogEntry& line : lines) {
    if (terminal) text_.append(ppe::detail::kEraseBelow);
    append_row(line);
  }
  reader_.mark_read();  // invalidates `lines`
  output_.write(text_);
  output_.flush();
}

PPE_DECL State PrintReport::state_dict() const {
  State s = State::dict();
  if (instance_) s.set("_log_report", instance_->state_dict());
  return s;
}

PPE_DECL void PrintReport::load_state_dict(const State& s) {
  if (instance_) instance_->load_state_dict(s.at("_log_report"));
}

PPE_DECL std::vector<std::string> PrintReport::sorted_entries(const std::vector<std::string>& keys, Unit unit) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  const std::string_view lead = unit == Unit::Iteration ? "iteration" : "epoch";
  bool has_lead = false, has_elapsed = false;
  for (const auto& k : keys) {
    if (k == "iteration" || k == "epoch") {
      has_lead = has_lead || k == lead;
      continue;
    }
    if (k == "elapsed_time") {
      has_elapsed = true;
      continue;
    }
    out.push_back(k);
  }
  if (has_lead) out.insert(out.begin(), std::string(lead));
  if (has_elapsed) out.emplace_back("elapsed_time");
  return out;
}

PPE_DECL PrintReportOptions PrintReport::with_entries(std::vector<std::string> entries, PrintReportOptions options) {
  if (options.entries())
    throw std::invalid_argument(
        "ppe: PrintReport was given entries twice (as the first argument and in the options); give them once");
  return std::move(options.entries(std::move(entries)));
}

PPE_DECL LogReport& PrintReport::named_log_report(Manager& m) const {
  // The manager's messages name the registered extensions or the actual
  // type; say which PrintReport option led there.
  const auto context = [&](const std::exception& e) {
    std::string what = e.what();
    if (what.starts_with("ppe: ")) what.erase(0, 5);
    return "ppe: PrintReport reads the log of the LogReport named '" + name_ + "' (option log_report): " + what;
  };
  try {
    return m.get_extension<LogReport>(name_);
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(context(e));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(context(e));
  }
}

PPE_DECL bool PrintReport::learn_keys(std::span<const LogEntry> lines) {
  bool added = false;
  for (const LogEntry& line : lines)
    for (const auto& [key, value] : line) {
      bool known = false;
      for (const auto& k : seen_) known = known || k == key;
      if (!known) {
        seen_.push_back(key);
        added = true;
      }
    }
  return added;
}

PPE_DECL void PrintReport::set_columns(std::vector<std::string> keys) {
  entries_ = std::move(keys);
  columns_.clear();
  header_.clear();
  for (const auto& k : entries_) {
    const std::size_t len = code_points(k);
    const std::size_t width = len < 10 ? 10 : len;
    if (!columns_.empty()) header_.append("  ");
    header_.append(k);
    header_.append(width - len, ' ');
    columns_.push_back({k, width});
  }
  header_.push_back('\n');
  header_due_ = true;
}

PPE_DECL void PrintReport::append_row(const LogEntry& line) {
  for (const Column& c : columns_) {
    const std::size_t start = text_.size();
    if (const LogValue* v = line.find(c.key)) {
      // Python formats an int with `g` as the float it converts to
      // (1000000 -> "1e+06"); to_double() is that conversion.
      ppe::detail::pyfmt::append_general(text_, v->to_double(), 6);
      const std::size_t len = text_.size() - start;  // ASCII
      if (len < c.width) text_.append(c.width - len, ' ');
      text_.append("  ");
    } else {
      text_.append(c.width + 2, ' ');
    }
  }
  text_.push_back('\n');
}

PPE_DECL PrintReport::PrintReport(std::vector<std::string> entries, PrintReportOptions options)
    : PrintReport(with_entries(std::move(entries), std::move(options))) {}

}  // namespace ppe::training::extensions
