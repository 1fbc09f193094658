#pragma once
// A pseudo-terminal for testing what display extensions write to a terminal:
// the extension writes to the slave side (a real tty: isatty() is true), the
// test reads the exact bytes from the master side. The slave is put in raw
// mode so the line discipline neither translates "\n" to "\r\n" nor echoes.

#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ppe_test {

class PseudoTerminal {
 public:
  PseudoTerminal() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0) fail("posix_openpt");
    if (::grantpt(master_) != 0) fail("grantpt");
    if (::unlockpt(master_) != 0) fail("unlockpt");
    const char* name = ::ptsname(master_);
    if (name == nullptr) fail("ptsname");
    slave_ = ::open(name, O_RDWR | O_NOCTTY);
    if (slave_ < 0) fail("open(slave)");
    termios raw{};
    if (::tcgetattr(slave_, &raw) != 0) fail("tcgetattr");
    ::cfmakeraw(&raw);
    if (::tcsetattr(slave_, TCSANOW, &raw) != 0) fail("tcsetattr");
  }
  PseudoTerminal(const PseudoTerminal&) = delete;
  PseudoTerminal& operator=(const PseudoTerminal&) = delete;
  ~PseudoTerminal() {
    if (slave_ >= 0) ::close(slave_);
    if (master_ >= 0) ::close(master_);
  }

  /// The terminal side: give it to the code under test.
  int slave_fd() const noexcept { return slave_; }

  /// Everything written to the slave so far (waits up to `timeout_ms` for the
  /// first byte, then takes what arrives without further waiting).
  std::string read_all(int timeout_ms = 2000) {
    std::string out;
    char buf[4096];
    int wait = timeout_ms;
    for (;;) {
      pollfd p{master_, POLLIN, 0};
      const int ready = ::poll(&p, 1, wait);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) break;
      const ssize_t n = ::read(master_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      wait = 50;  // the rest of a write arrives promptly
    }
    return out;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    throw std::runtime_error(std::string("pseudo-terminal: ") + what + " failed: " + std::strerror(errno));
  }

  int master_ = -1, slave_ = -1;
};

}  // namespace ppe_test
