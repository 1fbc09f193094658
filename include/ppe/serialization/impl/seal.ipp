// Definitions of serialization/seal.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "ppe/detail/crc32.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

// A zip archive ends with its end-of-central-directory record (kZipEndSize
// bytes) starting with this signature, the last two holding the comment's length.
inline constexpr char kZipEndSignature[4] = {'P', 'K', '\x05', '\x06'};
inline constexpr std::string_view kSealTag = "ppe-crc32:";

/// The CRC-32 of the archive as it was before sealing: the bytes up to the
/// comment, with the comment length read as 0.
PPE_DECL std::uint32_t unsealed_crc(const char* p, std::size_t archive_size) {
  const char zero[2] = {0, 0};
  return crc32(crc32(0, p, archive_size - 2), zero, 2);
}

PPE_DECL std::string hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

PPE_DECL void seal(std::vector<char>& zip) {
  const std::size_t n = zip.size();
  if (n < kZipEndSize || !std::equal(kZipEndSignature, kZipEndSignature + 4, zip.data() + n - kZipEndSize) ||
      zip[n - 2] != 0 || zip[n - 1] != 0)
    throw std::logic_error("ppe::serialization::pickle_dumps: LibTorch's archive does not end with an empty zip comment");
  const std::string comment = std::string(kSealTag) + hex8(unsealed_crc(zip.data(), n));
  zip[n - 2] = static_cast<char>(kSealSize & 0xff);
  zip[n - 1] = static_cast<char>(kSealSize >> 8);
  zip.insert(zip.end(), comment.begin(), comment.end());
}

PPE_DECL bool verify_seal(const std::vector<char>& bytes, std::string_view source) {
  const std::size_t n = bytes.size();
  auto end_record_at = [&](std::size_t comment_size) {
    if (n < kZipEndSize + comment_size) return false;
    const char* r = bytes.data() + n - comment_size - kZipEndSize;
    return std::equal(kZipEndSignature, kZipEndSignature + 4, r) &&
           static_cast<unsigned char>(r[20]) == (comment_size & 0xff) &&
           static_cast<unsigned char>(r[21]) == (comment_size >> 8);
  };
  if (end_record_at(kSealSize) &&
      std::string_view(bytes.data() + n - kSealSize, kSealTag.size()) == kSealTag) {
    const std::string stored(bytes.data() + n - kSealSize + kSealTag.size(), 8);
    const std::string computed = hex8(unsealed_crc(bytes.data(), n - kSealSize));
    if (stored != computed)
      throw CorruptFileError("ppe: " + std::string(source) + " is corrupted: its content has CRC-32 " + computed +
                             " but the file was written with " + stored);
    return true;
  }
  if (end_record_at(0)) return false;
  throw CorruptFileError("ppe: cannot read " + std::string(source) +
                         " (truncated, or not a file written by torch.save / ppe::serialization::pickle_dumps): it does not end "
                         "with the end record of a zip archive (" + std::to_string(n) + " bytes)");
}

}  // namespace ppe::detail

