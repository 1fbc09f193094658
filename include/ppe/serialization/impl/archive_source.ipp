// Definitions of serialization/detail/archive_source.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "ppe/serialization/detail/archive_source.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

PPE_DECL std::string ArchiveSource::bytes(std::uint64_t offset, std::size_t n) const {
  std::string out(n, '\0');
  read(offset, out.data(), n);
  return out;
}

PPE_DECL void MemorySource::read(std::uint64_t offset, void* out, std::size_t n) const {
  if (n > 0) std::memcpy(out, data_ + offset, n);
}

/// The std::system_error of a file that cannot be opened or read (as detail::read_file's).
[[noreturn]] inline void fail_read(const std::string& name, int err) {
  throw std::system_error(err, std::generic_category(), "ppe: cannot read '" + name + "'");
}

PPE_DECL FileSource::FileSource(const std::filesystem::path& path) : ArchiveSource(path.string()) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail_read(name(), errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd_);
    fail_read(name(), err);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  // The records are read front to back, each once.
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

PPE_DECL FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

PPE_DECL bool FileSource::is_regular(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

PPE_DECL void FileSource::read(std::uint64_t offset, void* out, std::size_t n) const {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail_read(name(), errno);
    }
    if (got == 0)
      throw ppe::serialization::CorruptFileError("ppe: cannot read " + name() + ": it ends at offset " +
                                                 std::to_string(offset) + ", before the " + std::to_string(size_) +
                                                 " bytes it had when it was opened (another program cut it)");
    p += got;
    offset += static_cast<std::uint64_t>(got);
    n -= static_cast<std::size_t>(got);
  }
}

}  // namespace ppe::detail
