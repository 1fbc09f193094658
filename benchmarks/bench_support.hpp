// What several benchmarks share: a stream buffer that discards its output and
// a scratch directory removed with its content.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <streambuf>
#include <string>
#include <system_error>

namespace ppe_bench {

// A stream that discards what it is given (as /dev/null, without a syscall).
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

// A directory under the system's temporary directory, named after `prefix`
// and the process, created now and removed with its content at destruction.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& prefix)
      : path(std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace ppe_bench
