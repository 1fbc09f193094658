#pragma once
/// \file
/// The pickle byte format that Python's `torch.load` reads (LibTorch's
/// `torch::pickle_save`): `pickle_dumps`, `pickle_loads`, `load_file`.
///
/// `pickle_dumps` seals what it writes (serialization/seal.hpp) and
/// `pickle_loads` verifies the seal when there is one, so a corrupted file is
/// an error naming the file instead of wrong numbers, and a truncated file
/// (which loses the archive's end record) is one as well. Files without a
/// seal (Python's `torch.save`) load unverified, after the parts of Python's
/// encoding that LibTorch's reader lacks are rewritten
/// (serialization/python_pickle.hpp).

#include <filesystem>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/serialization/seal.hpp"
#include "ppe/state.hpp"

namespace ppe::serialization {

/// Pickle bytes of a State, readable by Python's `torch.load`, sealed with a
/// checksum (see the file comment).
PPE_DECL std::vector<char> pickle_dumps(const State& s);

/// The State stored in pickle bytes written by `pickle_dumps` or Python's
/// `torch.save` (including `state_dict()`s and PPE snapshots: the parts of
/// Python's pickle encoding that LibTorch's reader lacks are rewritten first,
/// see detail::rewrite_python_pickle). A seal is verified first. Bytes that
/// are no readable archive (truncated, corrupted, something else) raise
/// CorruptFileError naming `source` (a file name, for messages).
PPE_DECL State pickle_loads(const std::vector<char>& bytes, std::string_view source = "the pickle data");

/// The bytes of a file; a std::system_error (a std::runtime_error) naming
/// the file and why when it cannot be read (missing, a directory, a read
/// error): detail::read_file.
PPE_DECL std::vector<char> read_file_bytes(const std::filesystem::path& path);

/// The State in a file written by `pickle_dumps` (through any writer) or by
/// Python's `torch.save`: Python's `torch.load(path, map_location="cpu")`.
PPE_DECL State load_file(const std::filesystem::path& path);

}  // namespace ppe::serialization

// ppe 0.1 spelled these `ppe::serialization::pickle_dumps` etc.; the old names stay for one release.
namespace ppe {
using serialization::pickle_dumps;
using serialization::pickle_loads;
using serialization::read_file_bytes;
using serialization::load_file;
}  // namespace ppe

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/pickle.ipp"
#endif
