// Definitions of training/extensions/snapshot_files.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "ppe/training/extensions/snapshot_files.hpp"

namespace ppe::training::extensions {

PPE_DECL bool SnapshotFile::natural_less(std::string_view a, std::string_view b) {
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

namespace detail {

// Whether `name` (relative to the searched directory) matches the filename
// template `pattern`: its text before the first `{` and after the last `}`.
inline bool matches_template(std::string_view name, std::string_view pattern) {
  // A template without fields names one file: prefix and suffix are the
  // whole name and may not be required to both fit side by side.
  const bool fields = pattern.find('{') != std::string_view::npos;
  const std::string_view prefix = pattern.substr(0, pattern.find('{'));
  const std::string_view suffix = fields ? pattern.substr(pattern.rfind('}') + 1) : std::string_view();
  return name.size() >= prefix.size() + suffix.size() && name.starts_with(prefix) && name.ends_with(suffix);
}

}  // namespace detail

PPE_DECL std::vector<SnapshotFile> find_snapshot_files(std::string_view pattern, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<SnapshotFile> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().lexically_relative(dir).generic_string();
    if (!detail::matches_template(name, pattern)) continue;
    if (it->path().filename().string().starts_with("tmp_")) continue;  // a write in progress (or abandoned)
    if (name.ends_with(".safetensors")) continue;                       // a snapshot's weights (`safetensors`)
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

PPE_DECL std::vector<std::string> remove_abandoned_temps(std::string_view pattern, const std::filesystem::path& dir,
                                                          std::filesystem::file_time_type before) {
  namespace fs = std::filesystem;
  std::vector<fs::path> abandoned;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!file.starts_with("tmp_") || !it->is_regular_file(ec)) continue;
    // The name the write would have published.
    const fs::path published = it->path().parent_path() / file.substr(4);
    if (!detail::matches_template(published.lexically_relative(dir).generic_string(), pattern)) continue;
    const auto mtime = it->last_write_time(ec);
    if (!ec && mtime < before) abandoned.push_back(it->path());
    ec.clear();
  }
  std::vector<std::string> removed;
  for (const auto& path : abandoned)
    if (fs::remove(path, ec)) removed.push_back(path.lexically_relative(dir).generic_string());
  return removed;
}

PPE_DECL std::string find_latest_snapshot(std::string_view pattern, const std::filesystem::path& dir) {
  auto files = find_snapshot_files(pattern, dir);
  return files.empty() ? std::string() : std::move(files.back().name);
}

PPE_DECL std::vector<std::string> find_stale_snapshots(std::string_view pattern, const std::filesystem::path& dir,
                                                       std::int64_t n_retains) {
  std::vector<std::string> out;
  if (n_retains <= 0) return out;
  auto files = find_snapshot_files(pattern, dir);
  const auto keep = static_cast<std::size_t>(n_retains);
  for (std::size_t i = 0; i + keep < files.size(); ++i) out.push_back(std::move(files[i].name));
  return out;
}

}  // namespace ppe::training::extensions
