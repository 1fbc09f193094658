#pragma once
/// \file
/// When this process started, on the file system's clock: a file last
/// modified before it was written by an earlier process (snapshot's cleanup
/// of temporary files that a killed process left). Internal to ppe.

#include <filesystem>

namespace ppe::detail {

/// The file system clock's time when ppe's code was initialized, before
/// `main` (the variable below reads it then).
inline std::filesystem::file_time_type process_start_file_time() {
  static const auto started = std::filesystem::file_time_type::clock::now();
  return started;
}

/// Reads the time during static initialization, so that it is the process's
/// start and not the first call's.
inline const std::filesystem::file_time_type process_start_taken = process_start_file_time();

}  // namespace ppe::detail
