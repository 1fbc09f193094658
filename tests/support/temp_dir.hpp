#pragma once
// A scratch directory per test (removed afterwards) and small file helpers for
// the tests of writers and file-writing extensions.

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <system_error>

namespace ppe_test {

/// A fresh directory under the system's temporary directory, removed (with
/// its content, after restoring write permissions) when the object goes away.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("ppe_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ec);
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
  std::string str() const { return path.string(); }
};

/// The whole content of a file ("" when it does not exist).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes `content` to `p` (test setup, not through a writer).
inline void write_file(const std::filesystem::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary);
  out << content;
}

/// Names of the entries of a directory (recursively, relative, '/'-separated).
inline std::set<std::string> list_dir(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    out.insert(std::filesystem::relative(e.path(), dir).generic_string());
  return out;
}

}  // namespace ppe_test
