#pragma once
// Cross-checks with Python: run a script with an interpreter that has torch
// (Debian's python3-torch), and read or write the binary files exchanged with it.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace ppe_test {

/// What a command printed (standard output and error) and how it exited.
struct Output {
  int status;  ///< exit status, or -1 when the command did not exit normally
  std::string text;
};

/// Runs a shell command, capturing standard output and error.
inline Output run(const std::string& command) {
  Output out{-1, {}};
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) out.status = WEXITSTATUS(status);
  return out;
}

/// A Python interpreter that can `import torch`, or "" when there is none:
/// `$PPE_PYTHON` alone when set, else `python3` on the PATH, then Debian's
/// /usr/bin/python3 (python3-torch installs there; a pyenv or venv python3
/// earlier on the PATH may lack it).
inline const std::string& python_with_torch() {
  static const std::string found = [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("PPE_PYTHON"); env && *env) {
      candidates.emplace_back(env);
    } else {
      candidates.emplace_back("python3");
      candidates.emplace_back("/usr/bin/python3");
    }
    for (const auto& c : candidates)
      if (run("PYTHONDONTWRITEBYTECODE=1 " + c + " -c \"import torch\"").status == 0) return c;
    return std::string();
  }();
  return found;
}

/// Runs `script` (written to a file in `dir`) with python_with_torch(), passing `args`.
inline Output run_python(const TempDir& dir, const std::string& script, const std::string& args) {
  const std::filesystem::path file = dir.path / "check.py";
  std::ofstream(file) << script;
  return run("PYTHONDONTWRITEBYTECODE=1 " + python_with_torch() + " '" + file.string() + "' " + args);
}

/// Writes bytes (e.g. `ppe::serialization::pickle_dumps`) to a file.
inline void write_file(const std::filesystem::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The bytes of a file (for `ppe::serialization::pickle_loads`).
inline std::vector<char> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace ppe_test
