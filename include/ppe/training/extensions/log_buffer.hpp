#pragma once
/// \file
/// `LogBuffer` and `LogReader`: the log a LogReport shares with the extensions
/// that read it (PPE's `_LogBuffer` and `_LogLooker`). Each reader has a cursor;
/// the buffer keeps only the entries some reader has not marked read yet, so a
/// LogReport in append mode holds at most the entries not yet shown by its
/// slowest reader instead of the whole history.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ppe/reporting/log_entry.hpp"

namespace ppe::training::extensions {

class LogBuffer;

/// A cursor into a shared `LogBuffer` (PPE's looker). Move-only; destroying it
/// releases its place, so the buffer no longer keeps entries for it.
class LogReader {
 public:
  LogReader() = default;
  LogReader(LogReader&& o) noexcept : buf_(std::move(o.buf_)), id_(o.id_) {}
  LogReader& operator=(LogReader&& o) noexcept;
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;
  ~LogReader();

  /// Whether this reader is attached to a buffer (a default-constructed or
  /// moved-from reader is not).
  explicit operator bool() const noexcept { return buf_ != nullptr; }

  /// The entries appended since this reader last called `mark_read()` (all
  /// entries, for a new reader: from its creation on). The span stays valid
  /// until the buffer changes (an append, a `mark_read` of any reader, a
  /// state load).
  std::span<const reporting::LogEntry> new_entries() const;
  /// Marks every entry read: `new_entries()` becomes empty until the next
  /// append, and the buffer may drop what no reader still needs.
  void mark_read();

 private:
  friend class LogBuffer;
  LogReader(std::shared_ptr<LogBuffer> buf, std::size_t id) : buf_(std::move(buf)), id_(id) {}
  LogBuffer& buffer() const {
    if (!buf_) throw std::logic_error("ppe::LogReader: this reader is not attached to a log (moved from?)");
    return *buf_;
  }

  std::shared_ptr<LogBuffer> buf_;
  std::size_t id_ = 0;
};

/// The shared log: entries in order, and one cursor per reader. Positions are
/// absolute (counted from the first entry ever appended), so trimming the
/// front does not move the cursors.
class LogBuffer : public std::enable_shared_from_this<LogBuffer> {
 public:
  /// Buffers are shared with their readers: create them with `create()`.
  static std::shared_ptr<LogBuffer> create() { return std::shared_ptr<LogBuffer>(new LogBuffer()); }

  /// A new reader; it sees the entries appended from now on.
  LogReader make_reader() {
    std::size_t id = 0;
    while (id < cursors_.size() && cursors_[id] != kFree) ++id;
    if (id == cursors_.size()) cursors_.push_back(kFree);
    cursors_[id] = end_position();
    return LogReader(shared_from_this(), id);
  }

  void append(reporting::LogEntry entry) { log_.push_back(std::move(entry)); }
  /// Entries held (those some reader has not marked read).
  std::size_t size() const noexcept { return log_.size(); }
  /// Every held entry.
  const std::vector<reporting::LogEntry>& entries() const noexcept { return log_; }

  /// Replaces the held entries (a state load). Positions restart at 0; the
  /// reader `keep` (if given) sees the first `keep_from` entries as read, every
  /// other reader sees all of them as read.
  void replace(std::vector<reporting::LogEntry> entries, const LogReader* keep = nullptr, std::size_t keep_from = 0) {
    log_ = std::move(entries);
    offset_ = 0;
    for (std::size_t i = 0; i < cursors_.size(); ++i)
      if (cursors_[i] != kFree) cursors_[i] = log_.size();
    if (keep && keep->buf_.get() == this) cursors_[keep->id_] = std::min(keep_from, log_.size());
  }

 private:
  friend class LogReader;
  static constexpr std::size_t kFree = std::numeric_limits<std::size_t>::max();

  LogBuffer() = default;
  std::size_t end_position() const noexcept { return offset_ + log_.size(); }

  std::span<const reporting::LogEntry> unread(std::size_t id) const {
    return std::span<const reporting::LogEntry>(log_).subspan(cursors_[id] - offset_);
  }
  void mark_read(std::size_t id) {
    cursors_[id] = end_position();
    trim();
  }
  void release(std::size_t id) noexcept {
    cursors_[id] = kFree;
    trim();
  }
  // Drops the entries every reader has marked read.
  void trim() noexcept {
    std::size_t min_cursor = kFree;
    for (std::size_t c : cursors_) min_cursor = std::min(min_cursor, c);
    if (min_cursor == kFree) return;  // no reader left: nothing to decide by
    if (min_cursor > offset_) {
      log_.erase(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(min_cursor - offset_));
      offset_ = min_cursor;
    }
  }

  std::vector<reporting::LogEntry> log_;
  std::size_t offset_ = 0;
  std::vector<std::size_t> cursors_;  // absolute positions; kFree: released slot
};

inline LogReader& LogReader::operator=(LogReader&& o) noexcept {
  if (this != &o) {
    if (buf_) buf_->release(id_);
    buf_ = std::move(o.buf_);
    id_ = o.id_;
  }
  return *this;
}
inline LogReader::~LogReader() {
  if (buf_) buf_->release(id_);
}
inline std::span<const reporting::LogEntry> LogReader::new_entries() const { return buffer().unread(id_); }
inline void LogReader::mark_read() { buffer().mark_read(id_); }

}  // namespace ppe::training::extensions
