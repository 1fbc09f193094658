#pragma once
/// \file
/// `ppe::detail::FdStreamBuf`: a buffered `std::streambuf` on a POSIX file
/// descriptor it does not own. Writers use it for their files (fsync needs the
/// descriptor); display tests use it for pseudo-terminals.

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <streambuf>
#include <vector>

namespace ppe::detail {

/// A stream buffer over a POSIX file descriptor (not owned; not closed). Unlike `std::ofstream` it
/// gives the descriptor back for `fsync`, and it keeps the `errno` of the first
/// failed `write` so that the error message can say what went wrong (a full
/// disk, a file size limit).
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd, std::size_t buffer_size = std::size_t{1} << 16) : fd_(fd), buf_(buffer_size) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  FdStreamBuf(const FdStreamBuf&) = delete;
  FdStreamBuf& operator=(const FdStreamBuf&) = delete;

  int fd() const noexcept { return fd_; }
  /// 0, or the errno of the first failed write.
  int error() const noexcept { return error_; }
  /// Writes out the buffer; false (and `error()` set) on failure.
  bool flush() { return sync() == 0; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    // Large blocks skip the buffer once it is drained.
    if (n >= static_cast<std::streamsize>(buf_.size())) {
      if (!drain() || !write_all(s, static_cast<std::size_t>(n))) return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }

 private:
  bool drain() {
    const auto n = static_cast<std::size_t>(pptr() - pbase());
    const bool ok = write_all(pbase(), n);
    setp(buf_.data(), buf_.data() + buf_.size());
    return ok;
  }
  bool write_all(const char* p, std::size_t n) {
    if (error_) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }

  int fd_;
  int error_ = 0;
  std::vector<char> buf_;
};

}  // namespace ppe::detail
