#pragma once
/// \file
/// The integrity seal of the pickle archives ppe writes: a CRC-32 of the
/// whole archive kept in the zip archive's comment (its last bytes,
/// `ppe-crc32:<8 hex digits>`; zip readers, Python's `torch.load` included,
/// ignore comments), and `CorruptFileError` for archives that fail the check
/// or lost their end record. The CRC is zip's and zlib's CRC-32 (detail/crc32.hpp).

#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::serialization {

/// A file (or buffer) that is not a readable pickle archive: truncated,
/// corrupted (its checksum does not match) or not an archive at all. The
/// message names the file and says which.
class CorruptFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ppe::serialization

// ppe 0.1 spelled these `ppe::serialization::CorruptFileError` etc.; the old names stay for one release.
namespace ppe {
using serialization::CorruptFileError;
}  // namespace ppe

namespace ppe::detail {

/// The size of a zip archive's end record (comment excluded).
inline constexpr std::size_t kZipEndSize = 22;
/// The size of the seal: the comment `ppe-crc32:` and 8 hex digits.
inline constexpr std::size_t kSealSize = 18;

/// Appends the seal to an archive written by `torch::pickle_save` (whose
/// comment is empty).
PPE_DECL void seal(std::vector<char>& zip);

/// Checks the end of `bytes` (read from `source`): either a sealed archive
/// whose checksum matches (returns true) or an archive with an empty comment,
/// as `torch.save` writes (returns false: unverified). Anything else is
/// truncated or no archive, and a sealed archive whose checksum differs is
/// corrupted: both throw CorruptFileError. (The archive reader alone would
/// accept a file that lost a few bytes of its end.)
PPE_DECL bool verify_seal(const std::vector<char>& bytes, std::string_view source);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/seal.ipp"
#endif
