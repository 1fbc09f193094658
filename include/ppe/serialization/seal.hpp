#pragma once
/// \file
/// The integrity seal of the pickle archives ppe writes: a CRC-32 of the
/// whole archive kept in the zip archive's comment (its last bytes,
/// `ppe-crc32:<8 hex digits>`; zip readers, Python's `torch.load` included,
/// ignore comments), and `CorruptFileError` for archives that fail the check
/// or lost their end record. The CRC is zip's and zlib's CRC-32 (detail/crc32.hpp).

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <string>
#include <utility>

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

class ArchiveSource;  // serialization/detail/archive_source.hpp

/// The size of a zip archive's end record (comment excluded).
inline constexpr std::size_t kZipEndSize = 22;
/// The size of the seal: the comment `ppe-crc32:` and 8 hex digits.
inline constexpr std::size_t kSealSize = 18;
/// The seal's comment starts with this.
inline constexpr std::string_view kSealTag = "ppe-crc32:";

/// `v` as 8 lowercase hex digits (the seal's form of a CRC).
PPE_DECL std::string hex8(std::uint32_t v);

/// What the end of an archive says.
struct SealInfo {
  bool sealed = false;  ///< a ppe seal (else an empty comment, as torch.save writes)
  std::string stored;   ///< the CRC the seal holds (8 hex digits)
};

/// Checks the end of the archive in `source`: either a sealed archive (ppe's
/// writer) or an archive with an empty comment (`torch.save`; unverified).
/// Anything else is truncated or no archive: a CorruptFileError naming the
/// source. (The archive reader alone would accept a file that lost a few
/// bytes of its end.) Reads only the end.
PPE_DECL SealInfo read_seal(const ArchiveSource& source);

/// Verifies a sealed archive's CRC while its bytes are read front to back,
/// each once: the reader reads the records it keeps through `read_into`
/// (into their storage), and the check reads what lies between them
/// (headers, the directory, records nobody refers to) through a buffer of
/// its own (`skip_to`, 4 MiB at most at a time). `finish` reads the rest and
/// compares. For an unsealed archive every call reads only what is asked.
class SealCheck {
 public:
  SealCheck(const ArchiveSource& source, SealInfo info) : source_(source), info_(std::move(info)) {}
  /// Where the check stands: the bytes before it have been checked.
  std::uint64_t position() const noexcept { return pos_; }
  /// Checks the bytes from `position()` up to `offset` (nothing when it is not ahead).
  void skip_to(std::uint64_t offset);
  /// Reads the `n` bytes at `offset` into `out`, checking them when they are
  /// the next ones (`offset == position()`).
  void read_into(std::uint64_t offset, void* out, std::uint64_t n);
  /// Checks the rest of the archive (sealed: up to the seal) and compares:
  /// a CorruptFileError naming the source when the CRC differs.
  void finish();

 private:
  const ArchiveSource& source_;
  SealInfo info_;
  std::uint64_t pos_ = 0;
  std::uint32_t crc_ = 0;
};

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/seal.ipp"
#endif
