#pragma once
/// \file
/// `ppe::detail::read_file`: the whole content of a file, or an error naming
/// the file and why it could not be read. `std::ifstream` opens a directory
/// on Linux and then reads nothing (or throws from deep inside the stream
/// without the path), so every file read of the library goes through here.

#include <filesystem>
#include <string>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

/// The bytes of the file at `path`. Throws `std::system_error` (a
/// `std::runtime_error`) whose message names the path and the reason, with
/// the reason's errno as its code: `ENOENT` for a missing file, `EISDIR` for
/// a directory (PPE's `IsADirectoryError`), `EACCES`, or a read's error.
PPE_DECL std::string read_file(const std::filesystem::path& path);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/read_file.ipp"
#endif
