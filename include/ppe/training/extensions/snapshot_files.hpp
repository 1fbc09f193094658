#pragma once
/// \file
/// Finding the snapshot files a `snapshot` extension wrote (PPE's
/// `_find_snapshot_files`, `_find_latest_snapshot`, `_find_stale_snapshots`):
/// the files under a directory (recursively, as paths relative to it) whose
/// names start with the text of the filename template before its first `{`
/// and end with the text after its last `}`, ordered by modification time,
/// then name. Only that prefix and suffix are compared, as in PPE.
///
/// Two differences:
///  - the temporary files writers write to before publishing a file by rename
///    (`tmp_<name>`, ppe::writing::Writer) are never snapshot files, even when
///    the template's prefix is empty;
///  - names with equal modification times are ordered with numbers compared
///    as numbers (`snapshot_iter_9` before `snapshot_iter_10`). File systems
///    stamp times at the kernel's tick, so snapshots taken a few milliseconds
///    apart often tie; PPE's plain name order then calls the newest file
///    (`..._10`) the oldest, and `n_retains` would delete it.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ppe::training::extensions {

/// A snapshot file: its path relative to the searched directory, and its
/// modification time.
struct SnapshotFile {
  std::filesystem::file_time_type mtime;
  std::string name;
  friend bool operator<(const SnapshotFile& a, const SnapshotFile& b) {
    if (a.mtime != b.mtime) return a.mtime < b.mtime;
    return natural_less(a.name, b.name);
  }

  /// Name order with runs of digits compared by value.
  static bool natural_less(std::string_view a, std::string_view b) {
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      if (digit(a[i]) && digit(b[j])) {
        std::size_t i2 = i, j2 = j;
        while (i2 < a.size() && digit(a[i2])) ++i2;
        while (j2 < b.size() && digit(b[j2])) ++j2;
        // Compare values: without leading zeros, the longer run is larger.
        std::string_view x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
        x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
        y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
        if (x.size() != y.size()) return x.size() < y.size();
        if (x != y) return x < y;
        i = i2;
        j = j2;
      } else {
        if (a[i] != b[j]) return a[i] < b[j];
        ++i;
        ++j;
      }
    }
    if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
    return a < b;  // equal up to leading zeros: any fixed order
  }
};

/// The files under `dir` that match the filename template `pattern`, oldest
/// first. A missing directory has none.
inline std::vector<SnapshotFile> find_snapshot_files(std::string_view pattern, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  // A template without fields names one file: prefix and suffix are the
  // whole name and may not be required to both fit side by side.
  const bool fields = pattern.find('{') != std::string_view::npos;
  const std::string_view prefix = pattern.substr(0, pattern.find('{'));
  const std::string_view suffix = fields ? pattern.substr(pattern.rfind('}') + 1) : std::string_view();
  std::vector<SnapshotFile> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().lexically_relative(dir).generic_string();
    if (name.size() < prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    if (it->path().filename().string().starts_with("tmp_")) continue;  // a write in progress (or abandoned)
    const auto mtime = it->last_write_time(ec);
    if (ec) {  // removed while listing (e.g. by another writer's cleanup)
      ec.clear();
      continue;
    }
    out.push_back({mtime, name});
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The newest snapshot file under `dir` (relative name), or "" when there is
/// none.
inline std::string find_latest_snapshot(std::string_view pattern, const std::filesystem::path& dir) {
  auto files = find_snapshot_files(pattern, dir);
  return files.empty() ? std::string() : std::move(files.back().name);
}

/// The snapshot files under `dir` beyond the newest `n_retains`, oldest first
/// (none when `n_retains` is not positive: nothing is ever deleted then).
inline std::vector<std::string> find_stale_snapshots(std::string_view pattern, const std::filesystem::path& dir,
                                                     std::int64_t n_retains) {
  std::vector<std::string> out;
  if (n_retains <= 0) return out;
  auto files = find_snapshot_files(pattern, dir);
  const auto keep = static_cast<std::size_t>(n_retains);
  for (std::size_t i = 0; i + keep < files.size(); ++i) out.push_back(std::move(files[i].name));
  return out;
}

}  // namespace ppe::training::extensions
