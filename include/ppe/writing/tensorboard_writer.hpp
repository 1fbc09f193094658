#pragma once
/// \file
/// `ppe::writing::TensorBoardWriter` (PPE's `ppe.writing.TensorBoardWriter`):
/// writes the scalars of a LogReport's entries to a TensorBoard event file.
///
/// The file is what TensorBoard's own writer (`EventFileWriter`, behind
/// PyTorch's `SummaryWriter`) writes: named
/// `events.out.tfevents.<unix time, 10 digits>.<host>.<pid>.<n><suffix>`
/// (TensorBoard finds it by the `tfevents` in its name), a sequence of
/// TFRecords (length as a little-endian uint64, the masked CRC-32C of those
/// 8 bytes, the data, the masked CRC-32C of the data), each holding one
/// `tensorboard.Event` message: first `{wall_time, file_version:
/// "brain.Event:2"}`, then one `{wall_time, step, summary {value {tag,
/// simple_value}}}` per scalar, as `SummaryWriter.add_scalar` writes them.
///
/// The messages are encoded field by field in protobuf's wire format, from the
/// field numbers of TensorBoard's public event.proto and summary.proto, by a
/// few lines of ppe's own (impl/tensorboard_writer.ipp says why not
/// libprotobuf: PyTorch's wheel ships protobuf headers that shadow the
/// system's). The CRC-32C is Boost.CRC's (header-only). Nothing is linked.
/// Feature: ppe::tensorboard (Meson and pkg-config: ppe-tensorboard).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/reporting/log_entry.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::writing {

/// Options of a TensorBoardWriter (PPE's `out_dir` and `stats`, and the
/// `SummaryWriter` keywords that apply).
struct TensorBoardWriterOptions {
  /// The directory of the event file (PPE's `out_dir`, SummaryWriter's
  /// `log_dir`); empty: the manager's output directory when the writer is
  /// given to an extension (`Manager::writer_for`), else the current one.
  PPE_ARG(std::filesystem::path, out_dir);
  /// Appended to the event file's name (SummaryWriter's `filename_suffix`).
  PPE_ARG(std::string, filename_suffix);
  /// How long records may wait in memory, in seconds: 0 writes them to the
  /// file at the end of every call; otherwise a call writes the records
  /// waiting once `flush_secs` have passed since the last write (and
  /// `flush()`, `finalize()`, LogReport's error path and the destructor
  /// write the rest). SummaryWriter waits up to 120 s.
  PPE_ARG(double, flush_secs) = 0;

 public:
  /// Write only these keys of each entry (PPE's `stats`), in this order; by
  /// default every key, in the entry's order.
  TensorBoardWriterOptions& stats(std::vector<std::string> keys) {
    stats_ = std::move(keys);
    return *this;
  }
  const std::optional<std::vector<std::string>>& stats() const noexcept { return stats_; }

 private:
  std::optional<std::vector<std::string>> stats_;
};

/// Writes log entries to a TensorBoard event file: give it to a LogReport
/// (`LogReportOptions().writer(tb)`), which hands it each new entry; every
/// key of the entry (or of `stats`) becomes a scalar whose tag is the key
/// and whose step is the entry's `iteration`. Open the result with
/// `tensorboard --logdir <out_dir>`.
///
/// The event file is created by the first write, in `out_dir()` (created as
/// needed), and only appended to afterwards: TensorBoard reads the file while
/// it grows. Records reach the file whole, in one `write()` per flush.
/// `finalize()` writes what waits and closes the file; a write after it
/// reopens the same file and appends. A failed write (or creation) throws
/// `WriteError` naming the file; the records stay queued for the next try.
///
/// Values are written as TensorBoard's `simple_value`, a 32-bit float
/// (integers and doubles are rounded to the nearest float, as
/// `add_scalar` does). Every value of a `LogEntry` is a number, so there is
/// no non-numeric value to skip; NaN and infinities are written as they are.
///
/// Differences from PPE: the writer is a `Writer`, so an empty `out_dir`
/// adopts the manager's output directory (PPE's SummaryWriter then writes to
/// `runs/<date>_<host>`); a `stats` key missing from an entry is skipped
/// (PPE raises KeyError, e.g. for a validation key in an entry of an
/// iteration without validation); records are written at the end of each call
/// by default (SummaryWriter queues them for up to 120 s on a thread); an
/// entry without an integer `iteration` is an error. Writing a file
/// (`operator()`, e.g. as a snapshot's writer) is a `std::logic_error`: the
/// writer writes scalars only. Not thread-safe: one caller at a time, as
/// with SimpleWriter.
class TensorBoardWriter : public Writer {
 public:
  explicit TensorBoardWriter(TensorBoardWriterOptions options = {});
  /// A writer with default options writing to `out_dir`.
  explicit TensorBoardWriter(std::filesystem::path out_dir)
      : TensorBoardWriter(TensorBoardWriterOptions().out_dir(std::move(out_dir))) {}
  /// Writes the records still waiting and closes the file; a failure is
  /// passed to `ppe::warn`.
  ~TensorBoardWriter() override;

  /// Not supported: this writer writes log entries, not files
  /// (`std::logic_error` naming the file).
  void operator()(const std::string& filename, SaveFn save, bool append = false) override;

  /// Writes the scalars of `latest` (the file name and content are not
  /// used): `write(latest)`.
  void write_log(const std::string& filename, SaveFn save, bool append,
                 const reporting::LogEntry& latest) override;

  /// Writes a scalar per key of `entry` (or per `stats` key it has), with
  /// step `entry["iteration"]`; `std::invalid_argument` when `iteration` is
  /// missing or not an integer.
  void write(const reporting::LogEntry& entry);

  /// Writes one scalar (SummaryWriter's `add_scalar(tag, value, step)`).
  void add_scalar(std::string_view tag, double value, std::int64_t step);

  /// Writes the records waiting to the file.
  void flush() override;

  /// Writes the records waiting and closes the file. Idempotent.
  void finalize() override;

  /// The event file; empty before the first write.
  const std::filesystem::path& path() const noexcept { return path_; }
  const TensorBoardWriterOptions& options() const noexcept { return options_; }

 private:
  // Creates the file (first call) or reopens it (after finalize).
  void open();
  // Writes the queue when the flush policy says so.
  void maybe_flush();
  void close_file() noexcept;

  TensorBoardWriterOptions options_;
  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;      // whole records not yet in the file
  double last_flush_ = 0;    // wall time of the last write
};

}  // namespace ppe::writing

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/writing/impl/tensorboard_writer.ipp"
#endif
