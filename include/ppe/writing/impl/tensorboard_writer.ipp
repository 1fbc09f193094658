// Definitions of writing/tensorboard_writer.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/tensorboard_src.hpp with PPE_SEPARATE_COMPILATION.
// Feature: ppe::tensorboard (Meson and pkg-config: ppe-tensorboard).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/crc.hpp>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/tensorboard_writer.hpp"

namespace ppe::writing::detail::tensorboard {

// Protobuf's wire format, the four primitives an event needs: varints,
// little-endian fixed32/fixed64 and raw bytes. Written here rather than taken
// from libprotobuf because PyTorch's wheel and zip ship their own, older
// protobuf headers in LibTorch's include directory: they shadow the system's
// and do not match its library, and four functions do not justify a runtime
// dependency.
namespace wire {
inline std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}
inline std::uint8_t* varint(std::uint64_t v, std::uint8_t* p) {
  while (v >= 0x80) *p++ = static_cast<std::uint8_t>(v | 0x80), v >>= 7;
  *p++ = static_cast<std::uint8_t>(v);
  return p;
}
template <class U>
std::uint8_t* little_endian(U v, std::uint8_t* p) {
  for (std::size_t i = 0; i < sizeof(U); ++i) *p++ = static_cast<std::uint8_t>(v >> (8 * i));
  return p;
}
inline std::uint8_t* raw(std::string_view bytes, std::uint8_t* p) {
  std::memcpy(p, bytes.data(), bytes.size());
  return p + bytes.size();
}
}  // namespace wire

// Field keys, (field number << 3) | wire type, of TensorBoard's event.proto
// and summary.proto: Event.wall_time = 1 (double: fixed64), Event.step = 2
// (int64: varint), Event.file_version = 3 and Event.summary = 5, Summary.value
// = 1 and Summary.Value.tag = 1 (length-delimited), Summary.Value.simple_value
// = 2 (float: fixed32).
constexpr std::uint32_t kWallTime = (1u << 3) | 1u;
constexpr std::uint32_t kStep = (2u << 3) | 0u;
constexpr std::uint32_t kFileVersion = (3u << 3) | 2u;
constexpr std::uint32_t kSummary = (5u << 3) | 2u;
constexpr std::uint32_t kSummaryValue = (1u << 3) | 2u;
constexpr std::uint32_t kTag = (1u << 3) | 2u;
constexpr std::uint32_t kSimpleValue = (2u << 3) | 5u;

constexpr std::string_view kFileVersionText = "brain.Event:2";

inline double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TFRecord's checksum: CRC-32C (Castagnoli), rotated right by 15 bits plus a
// constant, so that a CRC over data that holds CRCs stays well distributed.
inline std::uint32_t masked_crc32c(const std::uint8_t* data, std::size_t size) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, size);
  const std::uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

inline std::size_t key_size(std::uint32_t key) { return wire::varint_size(key); }
inline std::size_t delimited_size(std::uint32_t key, std::size_t size) {
  return key_size(key) + wire::varint_size(size) + size;
}

// Appends one TFRecord whose data, `size` bytes, `encode(first)` writes and
// returns the end of.
template <class Encode>
void append_record(std::string& out, std::size_t size, Encode encode) {
  const std::size_t start = out.size();
  out.resize(start + 8 + 4 + size + 4);
  auto* const record = reinterpret_cast<std::uint8_t*>(out.data() + start);
  wire::little_endian(static_cast<std::uint64_t>(size), record);
  wire::little_endian(masked_crc32c(record, 8), record + 8);
  std::uint8_t* const data = record + 12;
  std::uint8_t* const end = encode(data);
  if (static_cast<std::size_t>(end - data) != size)
    throw std::logic_error("ppe::TensorBoardWriter: an event's encoded size differs from its computed size");
  wire::little_endian(masked_crc32c(data, size), end);
}

inline std::uint8_t* write_delimited(std::uint32_t key, std::string_view bytes, std::uint8_t* p) {
  p = wire::varint(key, p);
  p = wire::varint(bytes.size(), p);
  return wire::raw(bytes, p);
}

// Event{wall_time, file_version: "brain.Event:2"}: the first record of a file.
inline void append_file_version(std::string& out, double wall_time) {
  const std::size_t size = key_size(kWallTime) + 8 + delimited_size(kFileVersion, kFileVersionText.size());
  append_record(out, size, [&](std::uint8_t* p) {
    p = wire::varint(kWallTime, p);
    p = wire::little_endian(std::bit_cast<std::uint64_t>(wall_time), p);
    return write_delimited(kFileVersion, kFileVersionText, p);
  });
}

// Event{wall_time, step, summary{value{tag, simple_value}}}. A zero step is
// left out, as protobuf leaves out a proto3 field at its default; the value
// is in a oneof, so it is written even when zero.
inline void append_scalar(std::string& out, double wall_time, std::int64_t step, std::string_view tag, float value) {
  if (tag.size() > static_cast<std::size_t>(INT_MAX / 2))
    throw std::invalid_argument("ppe::TensorBoardWriter: a tag of " + std::to_string(tag.size()) +
                                " bytes is too long for a protobuf message");
  const std::size_t value_size = delimited_size(kTag, tag.size()) + key_size(kSimpleValue) + 4;
  const std::size_t summary_size = delimited_size(kSummaryValue, value_size);
  const auto step_bits = static_cast<std::uint64_t>(step);
  const std::size_t step_size = step != 0 ? key_size(kStep) + wire::varint_size(step_bits) : 0;
  const std::size_t size = key_size(kWallTime) + 8 + step_size + delimited_size(kSummary, summary_size);
  append_record(out, size, [&](std::uint8_t* p) {
    p = wire::varint(kWallTime, p);
    p = wire::little_endian(std::bit_cast<std::uint64_t>(wall_time), p);
    if (step != 0) {
      p = wire::varint(kStep, p);
      p = wire::varint(step_bits, p);
    }
    p = wire::varint(kSummary, p);
    p = wire::varint(summary_size, p);
    p = wire::varint(kSummaryValue, p);
    p = wire::varint(value_size, p);
    p = write_delimited(kTag, tag, p);
    p = wire::varint(kSimpleValue, p);
    return wire::little_endian(std::bit_cast<std::uint32_t>(value), p);
  });
}

// TensorBoard's file name: `events.out.tfevents.<time>.<host>.<pid>.<n>`,
// n counting the event files this process created.
inline std::string event_file_name(double wall_time, const std::string& suffix) {
  static std::atomic<std::uint64_t> counter{0};
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "localhost");
  char name[400];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%ld.%llu",
                static_cast<long long>(std::floor(wall_time)), host, static_cast<long>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return name + suffix;
}

}  // namespace ppe::writing::detail::tensorboard

namespace ppe::writing {

PPE_DECL TensorBoardWriter::TensorBoardWriter(TensorBoardWriterOptions options)
    : Writer(options.out_dir()), options_(std::move(options)) {
  const double secs = options_.flush_secs();
  if (!(secs >= 0) || !std::isfinite(secs))
    throw std::invalid_argument("ppe::TensorBoardWriter: flush_secs must be a finite number >= 0, got " +
                                std::to_string(secs));
  if (options_.filename_suffix().find('/') != std::string::npos)
    throw std::invalid_argument("ppe::TensorBoardWriter: the filename_suffix '" + options_.filename_suffix() +
                                "' contains a '/'; it is appended to the event file's name");
  if (options_.stats())
    for (const auto& k : *options_.stats())
      if (k.empty()) throw std::invalid_argument("ppe::TensorBoardWriter: the stats keys include an empty key");
}

PPE_DECL TensorBoardWriter::~TensorBoardWriter() {
  try {
    finalize();
  } catch (const std::exception& e) {
    ppe::warn(std::string("ppe::TensorBoardWriter: records lost when the writer was destroyed: ") +
              ppe::detail::error_message(e));
  }
}

PPE_DECL void TensorBoardWriter::operator()(const std::string& filename, SaveFn, bool) {
  throw std::logic_error("ppe::TensorBoardWriter writes the scalars of log entries (give it to a LogReport, "
                         "LogReportOptions().writer(...)); it cannot write the file '" +
                         filename + "'");
}

PPE_DECL void TensorBoardWriter::write_log(const std::string&, SaveFn, bool,
                                           const reporting::LogEntry& latest) {
  write(latest);
}

PPE_DECL void TensorBoardWriter::write(const reporting::LogEntry& entry) {
  namespace tb = detail::tensorboard;
  const reporting::LogValue* it = entry.find("iteration");
  if (!it)
    throw std::invalid_argument("ppe::TensorBoardWriter: the log entry has no 'iteration', the step of its scalars; "
                                "keys present: " +
                                ppe::detail::python_key_list(entry));
  std::int64_t step = 0;
  if (it->is_int()) {
    step = it->as_int();
  } else {
    const double d = it->to_double();
    // Integral floats up to 2^63 convert exactly.
    if (!(d == std::floor(d)) || !(std::fabs(d) < 9.2233720368547758e18))
      throw std::invalid_argument("ppe::TensorBoardWriter: the log entry's 'iteration' must be an integer (the step "
                                  "of its scalars), got " +
                                  ppe::detail::python_float_repr(d));
    step = static_cast<std::int64_t>(d);
  }
  if (fd_ < 0) open();
  const double wall_time = tb::wall_time_now();
  if (const auto& stats = options_.stats()) {
    for (const auto& key : *stats)
      if (const reporting::LogValue* v = entry.find(key))
        tb::append_scalar(pending_, wall_time, step, key, static_cast<float>(v->to_double()));
  } else {
    for (const auto& [key, v] : entry)
      tb::append_scalar(pending_, wall_time, step, key, static_cast<float>(v.to_double()));
  }
  maybe_flush();
}

PPE_DECL void TensorBoardWriter::add_scalar(std::string_view tag, double value, std::int64_t step) {
  if (fd_ < 0) open();
  detail::tensorboard::append_scalar(pending_, detail::tensorboard::wall_time_now(), step, tag,
                                     static_cast<float>(value));
  maybe_flush();
}

PPE_DECL void TensorBoardWriter::open() {
  const bool create = path_.empty();
  const double now = detail::tensorboard::wall_time_now();
  // prepare() creates the directories (a WriteError names what failed).
  const std::string name =
      create ? detail::tensorboard::event_file_name(now, options_.filename_suffix()) : path_.filename().string();
  const std::filesystem::path file = prepare(name);
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (create ? O_TRUNC : 0);
  const int fd = ::open(file.c_str(), flags, 0666);
  if (fd < 0)
    throw WriteError("ppe::TensorBoardWriter: cannot write '" + file.string() + "': " +
                         (create ? "creating" : "reopening") + " the event file failed: " + detail::errno_text(errno),
                     file);
  fd_ = fd;
  path_ = file;
  if (create) detail::tensorboard::append_file_version(pending_, now);
}

PPE_DECL void TensorBoardWriter::maybe_flush() {
  if (options_.flush_secs() <= 0 || detail::tensorboard::wall_time_now() - last_flush_ >= options_.flush_secs())
    flush();
}

PPE_DECL void TensorBoardWriter::flush() {
  if (pending_.empty()) return;
  if (fd_ < 0) open();
  // The file's size before: a failed write is cut off there, so the file
  // never ends in a torn record.
  struct stat st {};
  const off_t before = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  const char* p = pending_.data();
  std::size_t left = pending_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (before >= 0 && ::ftruncate(fd_, before) != 0) {
        // The write error is the one to report.
      }
      throw WriteError("ppe::TensorBoardWriter: cannot write '" + path_.string() + "': writing " +
                           std::to_string(pending_.size()) + " bytes of records failed: " + detail::errno_text(err),
                       path_);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  pending_.clear();
  last_flush_ = detail::tensorboard::wall_time_now();
  run_post_save_hooks(path_);
}

PPE_DECL void TensorBoardWriter::finalize() {
  try {
    flush();
  } catch (...) {
    close_file();
    throw;
  }
  close_file();
}

PPE_DECL void TensorBoardWriter::close_file() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ppe::writing
