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
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) fail(std::string("cannot be opened: ") + (errno ? std::strerror(errno) : "out of memory"));
    gzbuffer(file_.get(), 1 << 17);  // fewer, larger reads of the 26 MB file
    // zlib's transparent mode would read a plain file as is; only gzip is
    // accepted, so that a damaged or foreign file is never taken for raw data.
    if (gzdirect(file_.get()))
      fail("is not gzip-compressed (expected a gzip file, which starts with the bytes 1f 8b)");

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

  const std::filesystem::path& path() const noexcept { return path_; }
  const IdxHeader& header() const noexcept { return header_; }

  /// Reads exactly `n` data bytes into `out`; a file that ends early is an error.
  void read(unsigned char* out, std::int64_t n) {
    while (n > 0) {
      const auto chunk = static_cast<unsigned>(std::min<std::int64_t>(n, INT_MAX / 2));
      const int got = gzread(file_.get(), out, chunk);
      if (got < 0) fail_stream();
      if (got == 0) {
        check_stream();  // a damaged stream reports itself here, not as a short file
        fail("is truncated: it holds " + std::to_string(data_read_) + " data bytes, the header announces " +
             std::to_string(header_.data_bytes()));
      }
      out += got;
      n -= got;
      data_read_ += got;
    }
  }

  /// Reads and discards the data bytes not read yet, then checks that nothing
  /// follows them and that the gzip stream is intact (its CRC is verified at its end).
  void finish() {
    std::vector<unsigned char> scratch(1 << 16);
    const std::int64_t expected = header_.data_bytes();
    while (data_read_ < expected)
      read(scratch.data(), std::min<std::int64_t>(expected - data_read_, static_cast<std::int64_t>(scratch.size())));
    const int extra = gzread(file_.get(), scratch.data(), static_cast<unsigned>(scratch.size()));
    if (extra < 0) fail_stream();
    if (extra > 0)
      fail("holds more data than its header announces (" + std::to_string(expected) +
           " bytes): the dimensions in the header do not match the content");
    check_stream();
  }

 private:
  struct GzClose {
    void operator()(gzFile f) const noexcept { gzclose_r(f); }
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw DatasetFileError("ppe::dataset: the file '" + path_.string() + "' " + what);
  }
  /// Throws for the error zlib recorded (if any): a cut stream or corrupt data.
  void check_stream() const {
    int code = Z_OK;
    const char* msg = gzerror(file_.get(), &code);
    // Z_BUF_ERROR is zlib's "unexpected end of file": a cut gzip stream.
    if (code == Z_BUF_ERROR)
      fail("is truncated: its gzip stream ends early (" +
           (in_header_ ? std::string("inside the IDX header")
                       : "after " + std::to_string(data_read_) + " of the " + std::to_string(header_.data_bytes()) +
                             " data bytes announced by the header") +
           ")");
    if (code != Z_OK)
      fail("is corrupt (zlib: " + std::string(msg ? msg : "unknown error") + "), expected a valid gzip stream");
  }
  [[noreturn]] void fail_stream() const {
    check_stream();
    fail("could not be read (zlib reported an error without details)");
  }
  void read_header_bytes(unsigned char* out, unsigned n, const std::string& what) {
    const int got = gzread(file_.get(), out, n);
    if (got < 0) fail_stream();
    if (static_cast<unsigned>(got) != n) {
      check_stream();
      fail("is too short to hold an IDX header: it ends before " + what);
    }
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
  std::unique_ptr<gzFile_s, GzClose> file_;
  IdxHeader header_;
  std::int64_t data_read_ = 0;
  bool in_header_ = true;
};

}  // namespace ppe::dataset
