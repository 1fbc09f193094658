#pragma once
/// \file
/// Reading gzipped IDX files (the format of MNIST and Fashion-MNIST) with zlib,
/// checked strictly: every defect raises `ppe::dataset::DatasetFileError`
/// naming the file, what was wrong and what was expected.
///
/// IDX layout: a big-endian header `00 00 <type> <ndim>` (for unsigned bytes the
/// type is 0x08, so the magic number reads 2049 for a 1-d file and 2051 for a
/// 3-d one), then `ndim` big-endian uint32 sizes, then the data, row-major.
///
/// Nothing the file declares is trusted before it is checked, so that a damaged
/// or hostile file raises `DatasetFileError` instead of making a caller
/// allocate what the header claims: the magic number must be the one expected
/// (which fixes the element type and the number of dimensions, at most
/// `IdxReader::kMaxDims`); the product of the sizes must not overflow and is at
/// most `IdxReader::kMaxDataBytes` (4 GiB); and it must be at most what the
/// compressed file can inflate to (deflate expands at most 1032:1, so a gzip
/// file of 300 bytes holds at most 309600). All of it is checked by the
/// constructor, before any data is read or allocated.

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
  /// `IdxReader` checked it; a product of hand-made sizes that overflows
  /// `std::int64_t` throws `std::overflow_error`.
  std::int64_t data_bytes() const {
    std::int64_t n = 1;
    for (auto d : dims)
      if (__builtin_mul_overflow(n, d, &n))
        throw std::overflow_error("ppe::dataset::IdxHeader::data_bytes: the product of the sizes overflows int64");
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
  /// The most data bytes (the product of the header's sizes) one file may
  /// declare: 4 GiB, about 90 times Fashion-MNIST's largest file (47 MB of
  /// images), yet small enough that no header can ask for an absurd allocation.
  static constexpr std::int64_t kMaxDataBytes = std::int64_t{1} << 32;
  /// The most dimensions a file may have (IDX allows 255; ppe's files have 1 or 3).
  static constexpr int kMaxDims = 8;
  /// Deflate's largest expansion (zlib's documentation): 258 bytes per 2 bits.
  static constexpr std::int64_t kMaxInflateRatio = 1032;

  /// Opens `path` and reads and checks its header. `expected_magic` is 2049
  /// for labels and 2051 for images (ubyte data with 1 or 3 dimensions); it
  /// must be an unsigned-byte magic (0x0800 + dimensions, 1 to `kMaxDims`),
  /// else `std::invalid_argument`.
  IdxReader(std::filesystem::path path, std::int64_t expected_magic) : path_(std::move(path)) {
    if (expected_magic < 0x0801 || expected_magic > 0x0800 + kMaxDims)
      throw std::invalid_argument("ppe::dataset::IdxReader: expected_magic " + std::to_string(expected_magic) +
                                  " is not supported, expected an IDX file of unsigned bytes with 1 to " +
                                  std::to_string(kMaxDims) + " dimensions (2049 to " +
                                  std::to_string(0x0800 + kMaxDims) + ")");
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

    // The magic number tells the element type and the number of dimensions.
    std::array<unsigned char, 4> word{};
    read_header_bytes(word.data(), 4, "the magic number");
    header_.magic = be32(word.data());
    const int ndim = word[3];
    // Checked before the sizes are read: the expected magic bounds their number.
    if (header_.magic != expected_magic)
      fail("has magic number " + std::to_string(header_.magic) + ", expected " + std::to_string(expected_magic) +
           " (" + describe_magic(expected_magic) + "), found " + describe_magic_bytes(word.data()));
    for (int i = 0; i < ndim; ++i) {
      read_header_bytes(word.data(), 4, "dimension " + std::to_string(i));
      header_.dims.push_back(be32(word.data()));
    }
    in_header_ = false;
    check_declared_size();
  }

  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  const IdxHeader& header() const noexcept { return header_; }

  /// Data bytes of the first `count` entries along the first dimension (0 to
  /// `dims[0]`): what a caller allocates to keep them. At most `data_bytes()`,
  /// which the constructor checked; `count` out of range is `std::invalid_argument`.
  std::int64_t entry_bytes(std::int64_t count) const {
    const auto& dims = header_.dims;
    if (count < 0 || count > dims.at(0))
      throw std::invalid_argument("ppe::dataset::IdxReader::entry_bytes: count " + std::to_string(count) +
                                  " is out of range for the file '" + path_.string() + "', expected 0 to " +
                                  std::to_string(dims[0]));
    std::int64_t bytes = count;
    for (std::size_t i = 1; i < dims.size(); ++i) bytes *= dims[i];  // <= data_bytes(): no overflow
    return bytes;
  }

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
  /// Ends zlib's inflate state in a member's deleter, not in ~IdxReader: a
  /// constructor that throws (a rejected header) runs no destructor of its
  /// own, only its members', and each rejected file leaked about 40 KB (found
  /// by fuzzing). `state` is zlib's: null until inflateInit2 succeeds.
  struct InflateEnd {
    void operator()(z_stream* s) const noexcept {
      if (s->state != Z_NULL) inflateEnd(s);
      delete s;
    }
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
  /// The data size the header declares must be one a caller can safely
  /// allocate: no overflow, at most `kMaxDataBytes`, and no more than a gzip
  /// file of this size can inflate to (a lying header is caught here, before
  /// the caller allocates, not after it has inflated the whole file).
  void check_declared_size() const {
    std::string sizes;
    for (auto d : header_.dims) sizes += (sizes.empty() ? "" : " x ") + std::to_string(d);
    // Every partial product must fit, even one that a size of 0 would bring
    // back to 0: entry_bytes multiplies in the same order, and LibTorch
    // computes a tensor's strides from the sizes that follow a 0 (fuzzing
    // found 0 x 4294967295 x 4294967295: "Stride calculation overflowed"). So
    // the sizes are checked with each 0 counted as 1.
    std::int64_t bytes = 1, shape = 1;
    bool overflow = false;
    for (auto d : header_.dims) {
      if (__builtin_mul_overflow(shape, std::max<std::int64_t>(d, 1), &shape)) {
        overflow = true;
        break;
      }
      bytes *= d;  // <= shape
    }
    const std::string limit = "at most " + std::to_string(kMaxDataBytes) + " (4 GiB, ppe's limit for one IDX file)";
    if (overflow)
      fail("declares " + sizes + " data bytes in its header, a product beyond 64-bit integers; expected " + limit);
    const std::string declared =
        "declares " + sizes + (header_.dims.size() > 1 ? " = " + std::to_string(bytes) : "") + " data bytes in its header";
    if (bytes > kMaxDataBytes) fail(declared + ", expected " + limit);
    if (shape > kMaxDataBytes)
      fail(declared + ", but its sizes other than 0 multiply to " + std::to_string(shape) + "; expected " + limit);
    // Only a regular file has a size to compare with (a pipe's is unknown).
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path_, ec)) return;
    const std::uintmax_t compressed = std::filesystem::file_size(path_, ec);
    if (ec) return;
    // Capped so that the product cannot overflow; the cap still exceeds kMaxDataBytes.
    const std::int64_t most =
        kMaxInflateRatio * static_cast<std::int64_t>(std::min<std::uintmax_t>(compressed, kMaxDataBytes));
    if (bytes > most)
      fail(declared + ", but a gzip file of " + std::to_string(compressed) + " bytes holds at most " +
           std::to_string(most) + " (deflate expands at most " + std::to_string(kMaxInflateRatio) +
           ":1): the file is truncated or its header is wrong");
  }
  void read_header_bytes(unsigned char* out, unsigned n, const std::string& what) {
    if (inflate_into(out, n) != n) fail("is too short to hold an IDX header: it ends before " + what);
  }
  static std::int64_t be32(const unsigned char* p) {
    return (std::int64_t{p[0]} << 24) | (std::int64_t{p[1]} << 16) | (std::int64_t{p[2]} << 8) | std::int64_t{p[3]};
  }
  static std::string describe_magic(std::int64_t magic) {
    const std::array<unsigned char, 4> bytes{static_cast<unsigned char>(magic >> 24),
                                             static_cast<unsigned char>(magic >> 16),
                                             static_cast<unsigned char>(magic >> 8), static_cast<unsigned char>(magic)};
    const std::string what = describe_magic_bytes(bytes.data());
    if (magic == 2049) return what + ", e.g. labels";
    if (magic == 2051) return what + ", e.g. images";
    return what;
  }
  /// What the 4 bytes of a magic number at `p` describe, as a noun phrase.
  static std::string describe_magic_bytes(const unsigned char* p) {
    if (p[0] != 0 || p[1] != 0) return "no IDX magic number (an IDX file starts with two zero bytes)";
    std::string type;
    switch (p[2]) {
      case 0x08: type = "unsigned bytes"; break;
      case 0x09: type = "signed bytes"; break;
      case 0x0B: type = "16-bit integers"; break;
      case 0x0C: type = "32-bit integers"; break;
      case 0x0D: type = "32-bit floats"; break;
      case 0x0E: type = "64-bit floats"; break;
      default: return "an unknown IDX element type " + std::to_string(p[2]) + " (IDX's are 8, 9 and 11 to 14)";
    }
    return "an IDX file of " + type + " with " + std::to_string(p[3]) + (p[3] == 1 ? " dimension" : " dimensions");
  }

  std::filesystem::path path_;
  std::unique_ptr<std::FILE, FileClose> file_;
  std::vector<unsigned char> in_;
  // On the heap: zlib's state points back at its z_stream, so the stream must not move.
  std::unique_ptr<z_stream, InflateEnd> stream_{new z_stream()};  // value-initialized: state null
  bool member_ended_ = false;
  IdxHeader header_;
  std::int64_t data_read_ = 0;
  bool in_header_ = true;
};

}  // namespace ppe::dataset
