// Definitions of serialization/detail/zip_records.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ppe/serialization/detail/zip_records.hpp"

namespace ppe::detail {

namespace zip {

// Zip's records (APPNOTE 4.3): their signatures and fixed sizes.
inline constexpr std::string_view kCentralSignature{"PK\x01\x02", 4};
inline constexpr std::string_view kLocalSignature{"PK\x03\x04", 4};
inline constexpr std::string_view kZip64EndSignature{"PK\x06\x06", 4};
inline constexpr std::string_view kZip64LocatorSignature{"PK\x06\x07", 4};
inline constexpr std::size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30, kZip64EndSize = 56,
                             kZip64LocatorSize = 20;

/// Little-endian unsigned integer of `n` bytes at `at` (the caller checked the bounds).
inline std::uint64_t le(std::string_view b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(k)]);
  return v;
}

}  // namespace zip

PPE_DECL std::vector<ZipRecord> zip_records(const ArchiveSource& source, std::uint64_t end_offset) {
  using namespace zip;
  const auto fail = [&](const std::string& what) -> void {
    throw ppe::serialization::CorruptFileError("ppe: cannot read " + source.name() + ": " + what);
  };
  if (end_offset + kEndSize > source.size()) fail("its zip end record lies past the end of the file");
  const std::string end = source.bytes(end_offset, kEndSize);
  std::uint64_t count = le(end, 10, 2);
  std::uint64_t dir_size = le(end, 12, 4);
  std::uint64_t dir_offset = le(end, 16, 4);
  std::uint64_t dir_limit = end_offset;  // the directory ends before the record that describes it
  // Zip64 (archives of 4 GiB or 65535 records and more): the real numbers are
  // in the zip64 end record, which a locator just before the end record finds.
  if (count == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
    if (end_offset < kZip64LocatorSize ||
        source.bytes(end_offset - kZip64LocatorSize, 4) != kZip64LocatorSignature)
      fail("its zip end record defers to a zip64 end record, but no zip64 locator precedes it");
    const std::uint64_t at = le(source.bytes(end_offset - kZip64LocatorSize + 8, 8), 0, 8);
    if (at > end_offset - kZip64LocatorSize || end_offset - kZip64LocatorSize - at < kZip64EndSize ||
        source.bytes(at, 4) != kZip64EndSignature)
      fail("its zip64 locator points at offset " + std::to_string(at) + ", where no zip64 end record is");
    const std::string z = source.bytes(at, kZip64EndSize);
    count = le(z, 32, 8);
    dir_size = le(z, 40, 8);
    dir_offset = le(z, 48, 8);
    dir_limit = at;
  }
  if (dir_offset > dir_limit || dir_size > dir_limit - dir_offset)
    fail("its zip directory declares " + std::to_string(dir_size) + " bytes at offset " + std::to_string(dir_offset) +
         ", past the " + std::to_string(dir_limit) + " bytes before its end record");
  if (count > dir_size / kCentralSize)
    fail("its zip directory declares " + std::to_string(count) + " records, but its " + std::to_string(dir_size) +
         " bytes hold at most " + std::to_string(dir_size / kCentralSize));
  // The directory, read whole (its size was checked against the bytes there are).
  const std::string bytes = source.bytes(dir_offset, static_cast<std::size_t>(dir_size));

  std::vector<ZipRecord> records;
  records.reserve(static_cast<std::size_t>(count));
  std::size_t p = 0;  // in `bytes`, the directory
  const std::size_t dir_end = bytes.size();
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::string nth = "zip record " + std::to_string(k);
    if (dir_end - p < kCentralSize || bytes.substr(p, 4) != kCentralSignature)
      fail(nth + ": no directory entry at offset " + std::to_string(dir_offset + p) + " (the directory is damaged)");
    const std::uint64_t flags = le(bytes, p + 8, 2), method = le(bytes, p + 10, 2);
    std::uint64_t packed = le(bytes, p + 20, 4), size = le(bytes, p + 24, 4), local = le(bytes, p + 42, 4);
    const std::size_t name_size = le(bytes, p + 28, 2), extra_size = le(bytes, p + 30, 2),
                      comment_size = le(bytes, p + 32, 2);
    if (dir_end - p - kCentralSize < name_size + extra_size + comment_size)
      fail(nth + ": its name, extra field and comment (" + std::to_string(name_size + extra_size + comment_size) +
           " bytes) run past the end of the directory");
    ZipRecord r;
    r.name = std::string(bytes.substr(p + kCentralSize, name_size));
    const std::string named = "zip record '" + r.name + "'";
    // The zip64 extra field holds, in this order, the sizes and the offset
    // whose 32-bit fields read all ones.
    std::size_t e = p + kCentralSize + name_size;
    const std::size_t extra_end = e + extra_size;
    while (extra_end - e >= 4) {
      const std::uint64_t id = le(bytes, e, 2), n = le(bytes, e + 2, 2);
      if (extra_end - e - 4 < n) fail(named + ": its extra field runs past its end");
      if (id == 1) {
        std::size_t f = e + 4;
        const std::size_t f_end = f + n;
        for (std::uint64_t* field : {&size, &packed, &local}) {
          if (*field != 0xffffffff) continue;
          if (f_end - f < 8) fail(named + ": its zip64 extra field is shorter than the fields it stands for");
          *field = le(bytes, f, 8);
          f += 8;
        }
      }
      e += 4 + n;
    }
    if (flags & 1) fail(named + " is encrypted; torch.save and ppe write plain records");
    if (method != 0)
      fail(named + " is compressed (zip method " + std::to_string(method) +
           "); torch.save and ppe store their records uncompressed");
    if (packed != size)
      fail(named + " declares " + std::to_string(size) + " bytes but stores " + std::to_string(packed) +
           " (an uncompressed record stores what it declares)");
    const std::string head = local > dir_offset || dir_offset - local < kLocalSize ? std::string()
                                                                                      : source.bytes(local, kLocalSize);
    if (head.size() != kLocalSize || std::string_view(head).substr(0, 4) != kLocalSignature)
      fail(named + ": no local header at offset " + std::to_string(local) + ", where the directory puts it");
    const std::uint64_t data = local + kLocalSize + le(head, 26, 2) + le(head, 28, 2);
    if (data > dir_offset || size > dir_offset - data)
      fail(named + " declares " + std::to_string(size) + " bytes at offset " + std::to_string(data) + ", but only " +
           std::to_string(data > dir_offset ? 0 : dir_offset - data) + " bytes precede the zip directory");
    r.offset = data;
    r.size = size;
    records.push_back(std::move(r));
    p += kCentralSize + name_size + extra_size + comment_size;
  }
  // LibTorch's zip reader (miniz) finds records by name ignoring case: two
  // names that differ only in case would let it read another record than the
  // one checked (found by fuzzing: data/2 read as the empty datA/2).
  std::unordered_map<std::string, const std::string*> seen;
  for (const ZipRecord& r : records) {
    std::string lower = r.name;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    const auto [it, fresh] = seen.emplace(std::move(lower), &r.name);
    if (!fresh)
      fail("zip records '" + *it->second + "' and '" + r.name +
           "' have one name to LibTorch's reader, which compares names without case");
  }
  return records;
}

}  // namespace ppe::detail
