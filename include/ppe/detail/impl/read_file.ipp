// Definitions of detail/read_file.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "ppe/detail/read_file.hpp"

namespace ppe::detail {

PPE_DECL std::string read_file(const std::filesystem::path& path) {
  const auto fail = [&](int err) {
    throw std::system_error(err, std::generic_category(), "ppe: cannot read '" + path.string() + "'");
  };
  // POSIX calls rather than a stream: each step reports its errno, and a
  // directory is told apart before any read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(errno);
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(errno);
  if (S_ISDIR(st.st_mode)) fail(EISDIR);
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    if (got == 0) break;
    out.append(buf, static_cast<std::size_t>(got));
  }
  return out;
}

}  // namespace ppe::detail
