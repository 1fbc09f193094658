#pragma once
/// \file
/// Reading gzipped IDX files (the format of MNIST and Fashion-MNIST) with zlib,
/// checked strictly: every defect raises `ppe::dataset::DatasetFileError`
/// naming the file, what was wrong and what was expected.
///
/// IDX layout: a big-endian header `00 00 <type> <ndim>` (for unsigned bytes the
/// type is 0x08, so the magic number reads 2049 for a 1-d file and 2051 for a
/// 3-d one), then `ndim` big-endian uint32 sizes, then the data, row-major.

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppe::dataset {

/// A dataset file is missing, unreadable or not what its format requires.
class DatasetFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The header of an IDX file of unsigned bytes.
struct IdxHeader {
  std::int64_t magic = 0;          ///< 2049 (1-d), 2051 (3-d), ...
  std::vector<std::int64_t> dims;  ///< sizes, outermost first
  /// Number of data bytes the header announces (the product of `dims`).
  std::int64_t data_bytes() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
};

/// An open gzipped IDX file of unsigned bytes: the header is read and checked
/// by the constructor, the data is then read in pieces with `read`, and
/// `finish` checks that the file ends exactly where the header says.
///
/// The gzip stream is inflated with zlib's `inflate`, not `gzread`: whether
/// `gzread` reports a stream cut short depends on the zlib release (1.2.13
/// says "unexpected end of file", 1.3.2 ends quietly as if the file were
/// whole), while `inflate` tells the end of the gzip member (and its CRC-32
/// check) apart from the end of the file in every release.
class IdxReader {
 public:
  /// Opens `path` and reads its header. `expected_magic` is 2049 for labels
  /// and 2051 for images (ubyte data with 1 or 3 dimensions).
  IdxReader(std::filesystem::path path, std::int64_t expected_magic) : path_(std::move(path)) {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec))
      fail("does not exist (expected a gzipped IDX file there)");
    if (std::filesystem::is_directory(path_, ec)) fail("is a directory, expected a gzipped IDX file");
    errno = 0;
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (!file_) fail(std::string("cannot be opened: ") + (errno ? std::strerror(errno) : "unknown error"));
    in_.resize(std::size_t{1} << 17);  // fewer, larger reads of the 26 MB file
    // Only gzip is accepted, so that a damaged or foreign file is never taken for raw data.
    fill_input();
    if (stream_->avail_in < 2 || in_[0] != 0x1f || in_[1] != 0x8b)
      fail("is not gzip-compressed (expected a gzip file, which starts with the bytes 1f 8b)");
    if (inflateInit2(stream_.get(), 16 + MAX_WBITS) != Z_OK)  // 16 +: a gzip wrapper, not zlib's
      fail("could not be read: zlib could not start inflating (out of memory)");
    inflating_ = true;

    // The magic number tells the element type and the number of dimensions.
    std::array<unsigned char, 4> word{};
    read_header_bytes(word.data(), 4, "the magic number");
    header_.magic = be32(word.data());
    const int ndim = word[3];
    if (header_.magic != expected_magic)
      fail("has magic number " + std::to_string(header_.magic) + ", expected " + std::to_string(expected_magic) +
           " (" + describe_magic(expected_magic) + ")");
    for (int i = 0; i < ndim; ++i) {
      read_header_bytes(word.data(), 4, "dimension " + std::to_string(i));
      header_.dims.push_back(be32(word.data()));
    }
    in_header_ = false;
  }

  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;
  ~IdxReader() {
    if (inflating_) inflateEnd(stream_.get());
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  const IdxHeader& header() const noexcept { return header_; }

  /// Reads exactly `n` data bytes into `out`; a file that ends early is an error.
  void read(unsigned char* out, std::int64_t n) {
    while (n > 0) {
      const auto chunk = static_cast<unsigned>(std::min<std::int64_t>(n, INT_MAX / 2));
      const unsigned got = inflate_into(out, chunk);
      data_read_ += got;
      if (got < chunk)
        fail("is truncated: it holds " + std::to_string(data_read_) + " data bytes, the header announces " +
             std::to_string(header_.data_bytes()));
      out += got;
      n -= got;
    }
  }

  /// Reads and discards the data bytes not read yet, then checks that nothing
  /// follows them and that the gzip stream is intact (its CRC is verified at its end).
  void finish() {
    std::vector<unsigned char> scratch(1 << 16);
    const std::int64_t expected = header_.data_bytes();
    while (data_read_ < expected)
      read(scratch.data(), std::min<std::int64_t>(expected - data_read_, static_cast<std::int64_t>(scratch.size())));
    if (inflate_into(scratch.data(), static_cast<unsigned>(scratch.size())) > 0)
      fail("holds more data than its header announces (" + std::to_string(expected) +
           " bytes): the dimensions in the header do not match the content");
  }

 private:
  struct FileClose {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw DatasetFileError("ppe::dataset: the file '" + path_.string() + "' " + what);
  }
  [[noreturn]] void fail_truncated() const {
    fail("is truncated: its gzip stream ends early (" +
         (in_header_ ? std::string("inside the IDX header")
                     : "after " + std::to_string(data_read_) + " of the " + std::to_string(header_.data_bytes()) +
                           " data bytes announced by the header") +
         ")");
  }
  /// Refills zlib's input from the file once it is used up; false at the end of the file.
  bool fill_input() {
    if (stream_->avail_in > 0) return true;
    errno = 0;
    const std::size_t got = std::fread(in_.data(), 1, in_.size(), file_.get());
    if (got < in_.size() && std::ferror(file_.get()))
      fail(std::string("could not be read: ") + (errno ? std::strerror(errno) : "I/O error"));
    stream_->next_in = in_.data();
    stream_->avail_in = static_cast<uInt>(got);
    return got > 0;
  }
  /// Inflates up to `n` bytes into `out`. Returns fewer only where the gzip
  /// data ends (its last member complete, CRC-32 and length checked); a file
  /// that ends inside a member, or data zlib rejects, raises.
  unsigned inflate_into(unsigned char* out, unsigned n) {
    stream_->next_out = out;
    stream_->avail_out = n;
    while (stream_->avail_out > 0) {
      const bool more_input = fill_input();
      if (member_ended_) {
        // `gzip -c a b` concatenates members; gzip (and gzread) read them as one file.
        if (!more_input) break;
        if (inflateReset(stream_.get()) != Z_OK) fail("could not be read: zlib could not restart inflating");
        member_ended_ = false;
      }
      const int code = inflate(stream_.get(), Z_NO_FLUSH);
      if (code == Z_STREAM_END) {
        member_ended_ = true;
      } else if (code == Z_BUF_ERROR) {
        // No progress was possible: with input left that cannot happen, so the
        // file ended inside a gzip member.
        data_read_ += n - stream_->avail_out;
        fail_truncated();
      } else if (code == Z_MEM_ERROR) {
        fail("could not be read: zlib ran out of memory");
      } else if (code != Z_OK) {
        fail("is corrupt (zlib: " + std::string(stream_->msg ? stream_->msg : "invalid data") +
             "), expected a valid gzip stream");
      }
    }
    return n - stream_->avail_out;
  }
  void read_header_bytes(unsigned char* out, unsigned n, const std::string& what) {
    if (inflate_into(out, n) != n) fail("is too short to hold an IDX header: it ends before " + what);
  }
  static std::int64_t be32(const unsigned char* p) {
    return (std::int64_t{p[0]} << 24) | (std::int64_t{p[1]} << 16) | (std::int64_t{p[2]} << 8) | std::int64_t{p[3]};
  }
  static std::string describe_magic(std::int64_t magic) {
    if (magic == 2049) return "an IDX file of unsigned bytes with 1 dimension, e.g. labels";
    if (magic == 2051) return "an IDX file of unsigned bytes with 3 dimensions, e.g. images";
    return "IDX";
  }

  std::filesystem::path path_;
  std::unique_ptr<std::FILE, FileClose> file_;
  std::vector<unsigned char> in_;
  // On the heap: zlib's state points back at its z_stream, so the stream must not move.
  std::unique_ptr<z_stream> stream_ = std::make_unique<z_stream>();
  bool inflating_ = false;
  bool member_ended_ = false;
  IdxHeader header_;
  std::int64_t data_read_ = 0;
  bool in_header_ = true;
};

}  // namespace ppe::dataset
