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
///    the template's prefix is empty, nor are files ending in `.safetensors`
///    (the weights `SnapshotOptions::safetensors` writes beside snapshots);
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

#include "ppe/detail/config.hpp"

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
  static bool natural_less(std::string_view a, std::string_view b);
};

/// The files under `dir` that match the filename template `pattern`, oldest
/// first. A missing directory has none.
PPE_DECL std::vector<SnapshotFile> find_snapshot_files(std::string_view pattern, const std::filesystem::path& dir);

/// Removes the temporary files of writes of snapshot files under `dir` that
/// ended half done before `before` (`tmp_<name>`, where `<name>` matches
/// `pattern`: a process killed, or ended by the distributed watchdog, in the
/// middle of a write). Returns their names, relative to `dir`. Files written
/// since `before` are left alone (another process may be writing them).
PPE_DECL std::vector<std::string> remove_abandoned_temps(std::string_view pattern, const std::filesystem::path& dir,
                                                          std::filesystem::file_time_type before);

/// The newest snapshot file under `dir` (relative name), or "" when there is
/// none.
PPE_DECL std::string find_latest_snapshot(std::string_view pattern, const std::filesystem::path& dir);

/// The snapshot files under `dir` beyond the newest `n_retains`, oldest first
/// (none when `n_retains` is not positive: nothing is ever deleted then).
PPE_DECL std::vector<std::string> find_stale_snapshots(std::string_view pattern, const std::filesystem::path& dir,
                                                       std::int64_t n_retains);

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/snapshot_files.ipp"
#endif
