#pragma once
/// \file
/// The one rule by which display extensions (ProgressBar, PrintReport, the
/// evaluator's progress bar) decide whether their output stream is a terminal,
/// and the control sequences PPE writes there.
///
/// PPE writes `"\033[J"` (erase below the cursor) and `"\033[<n>A"` (cursor up
/// n lines) to whatever stream it was given, so a redirected log fills with
/// control codes. Here they go to terminals only; anywhere else a display
/// writes plain lines.
///
/// The rule (`is_terminal`): an explicit override (an extension's
/// `terminal(true/false)` option) wins. Otherwise the stream is a terminal when
/// the file descriptor its buffer writes to is one (`isatty`): `std::cout`
/// (fd 1), `std::cerr`/`std::clog` (fd 2) and `FdOStream` are recognised, and
/// so is any stream whose buffer is libstdc++'s `stdio_filebuf` or
/// `stdio_sync_filebuf`; a stream redirected to another buffer
/// (`std::cout.rdbuf(file.rdbuf())`) is judged by that buffer. Any other stream
/// (string streams, `std::ofstream`) is not a terminal.

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

#include "ppe/detail/fd_streambuf.hpp"

#include <unistd.h>

#if defined(__GLIBCXX__)
#include <ext/stdio_filebuf.h>
#include <ext/stdio_sync_filebuf.h>
#endif

namespace ppe::detail {

/// PPE's "erase from the cursor to the end of the screen".
inline constexpr std::string_view kEraseBelow = "\033[J";


/// An output stream on a file descriptor it does not own (see FdStreamBuf).
class FdOStream : public std::ostream {
 public:
  explicit FdOStream(int fd) : std::ostream(nullptr), buf_(fd, 4096) { rdbuf(&buf_); }
  FdOStream(const FdOStream&) = delete;
  FdOStream& operator=(const FdOStream&) = delete;
  ~FdOStream() override { buf_.flush(); }
  int fd() const noexcept { return buf_.fd(); }

 private:
  FdStreamBuf buf_;
};

/// The file descriptor `out` writes to, if its buffer is one this rule knows.
inline std::optional<int> stream_fd(const std::ostream& out) {
  std::streambuf* buf = out.rdbuf();
  if (buf == nullptr) return std::nullopt;
  if (const auto* f = dynamic_cast<const FdStreamBuf*>(buf)) return f->fd();
#if defined(__GLIBCXX__)
  // std::cout/cerr/clog hold one of these, on stdout/stderr (sync_with_stdio
  // true: stdio_sync_filebuf; false: stdio_filebuf).
  if (auto* s = dynamic_cast<__gnu_cxx::stdio_sync_filebuf<char>*>(buf)) return ::fileno(s->file());
  if (auto* f = dynamic_cast<__gnu_cxx::stdio_filebuf<char>*>(buf)) return f->fd();
  return std::nullopt;
#else
  // Without libstdc++'s buffers to look into, the standard streams are taken
  // at their word (a redirected std::cout is then misjudged: pass terminal(false)).
  if (&out == &std::cout) return 1;
  if (&out == &std::cerr || &out == &std::clog) return 2;
  return std::nullopt;
#endif
}

/// Whether `out` writes to a terminal, by the rule in this file's comment;
/// `override` (an extension's `terminal` option) wins when set.
inline bool is_terminal(const std::ostream& out, std::optional<bool> override = std::nullopt) {
  if (override) return *override;
  const std::optional<int> fd = stream_fd(out);
  return fd && ::isatty(*fd) == 1;
}

/// A display's output: the stream, whether it is a terminal (decided at the
/// first use, so a stream redirected after the extension was built is judged
/// as it is when written to), and PPE's control sequences, written only on a
/// terminal.
class DisplayOutput {
 public:
  explicit DisplayOutput(std::ostream* out = &std::cout, std::optional<bool> terminal = std::nullopt)
      : out_(out), override_(terminal) {}

  std::ostream& stream() const noexcept { return *out_; }
  /// Whether control sequences are written (decided once, at the first call).
  bool terminal() {
    if (!decided_) {
      terminal_ = is_terminal(*out_, override_);
      decided_ = true;
    }
    return terminal_;
  }
  /// `"\033[J"` on a terminal; nothing elsewhere.
  void erase_below() {
    if (terminal()) out_->write(kEraseBelow.data(), static_cast<std::streamsize>(kEraseBelow.size()));
  }
  /// `"\033[<n>A"` on a terminal; nothing elsewhere.
  void cursor_up(int lines) {
    if (!terminal() || lines <= 0) return;
    char buf[16];
    const int len = std::snprintf(buf, sizeof buf, "\033[%dA", lines);
    out_->write(buf, len);
  }
  void write(std::string_view text) { out_->write(text.data(), static_cast<std::streamsize>(text.size())); }
  void flush() { out_->flush(); }

 private:
  std::ostream* out_;
  std::optional<bool> override_;
  bool decided_ = false, terminal_ = false;
};

/// Appends `"\033[<n>A"` to `text` (for displays that assemble a frame before
/// writing it in one call).
inline void append_cursor_up(std::string& text, int lines) {
  char buf[16];
  const int len = std::snprintf(buf, sizeof buf, "\033[%dA", lines);
  text.append(buf, static_cast<std::size_t>(len));
}

}  // namespace ppe::detail
