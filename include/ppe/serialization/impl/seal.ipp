// Definitions of serialization/seal.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ppe/detail/crc32.hpp"
#include "ppe/serialization/detail/archive_source.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

// A zip archive ends with its end-of-central-directory record (kZipEndSize
// bytes) starting with this signature, the last two holding the comment's length.
inline constexpr char kZipEndSignature[4] = {'P', 'K', '\x05', '\x06'};

PPE_DECL std::string hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

PPE_DECL SealInfo read_seal(const ArchiveSource& source) {
  const std::uint64_t n = source.size();
  const std::string tail = source.bytes(n - std::min<std::uint64_t>(n, kZipEndSize + kSealSize),
                                        static_cast<std::size_t>(std::min<std::uint64_t>(n, kZipEndSize + kSealSize)));
  auto end_record_at = [&](std::size_t comment_size) {
    if (tail.size() < kZipEndSize + comment_size) return false;
    const char* r = tail.data() + tail.size() - comment_size - kZipEndSize;
    return std::equal(kZipEndSignature, kZipEndSignature + 4, r) &&
           static_cast<unsigned char>(r[20]) == (comment_size & 0xff) &&
           static_cast<unsigned char>(r[21]) == (comment_size >> 8);
  };
  if (end_record_at(kSealSize) && std::string_view(tail).substr(tail.size() - kSealSize, kSealTag.size()) == kSealTag)
    return SealInfo{true, tail.substr(tail.size() - kSealSize + kSealTag.size(), 8)};
  if (end_record_at(0)) return SealInfo{false, {}};
  throw ppe::serialization::CorruptFileError(
      "ppe: cannot read " + source.name() +
      " (truncated, or not a file written by torch.save / ppe::serialization::pickle_dumps): it does not end with the "
      "end record of a zip archive (" + std::to_string(n) + " bytes)");
}

/// The most the check reads at a time (seal.hpp).
inline constexpr std::size_t kSealChunk = std::size_t{4} << 20;

PPE_DECL void SealCheck::skip_to(std::uint64_t offset) {
  if (!info_.sealed || offset <= pos_) return;
  std::vector<char> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(offset - pos_, kSealChunk)));
  while (pos_ < offset) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(offset - pos_, buffer.size()));
    source_.read(pos_, buffer.data(), n);
    crc_ = crc32(crc_, buffer.data(), n);
    pos_ += n;
  }
}

PPE_DECL void SealCheck::read_into(std::uint64_t offset, void* out, std::uint64_t n) {
  auto* p = static_cast<char*>(out);
  if (!info_.sealed || offset != pos_) {
    source_.read(offset, p, static_cast<std::size_t>(n));
    return;
  }
  // In pieces, so that each is checked while it is still in the cache.
  for (std::uint64_t done = 0; done < n;) {
    const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, kSealChunk));
    source_.read(offset + done, p + done, k);
    crc_ = crc32(crc_, p + done, k);
    done += k;
  }
  pos_ += n;
}

PPE_DECL void SealCheck::finish() {
  if (!info_.sealed) return;
  // The seal covers the archive as written before it: up to the comment's
  // length, which read 0 then.
  skip_to(source_.size() - kSealSize - 2);
  const char zero[2] = {0, 0};
  const std::string computed = hex8(crc32(crc_, zero, 2));
  if (computed != info_.stored)
    throw ppe::serialization::CorruptFileError("ppe: " + source_.name() + " is corrupted: its content has CRC-32 " +
                                               computed + " but the file was written with " + info_.stored);
}

}  // namespace ppe::detail
