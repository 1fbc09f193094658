// Definitions of serialization/detail/zip_writer.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "ppe/detail/crc32.hpp"
#include "ppe/serialization/detail/zip_writer.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

namespace zip_out {

/// Appends `v`'s `n` low bytes, least significant first (zip's byte order).
inline void le(std::string& out, std::uint64_t v, int n) {
  for (int k = 0; k < n; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xFFu));
}

// APPNOTE 4.3: signatures; version 2.0 for stored records, 4.5 where zip64
// fields are used; every record dated 1980-01-01 00:00, so that one state
// always gives the same bytes (LibTorch's writer stamps the time of writing).
inline constexpr std::uint32_t kLocal = 0x04034b50, kCentral = 0x02014b50, kEnd = 0x06054b50,
                               kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;
inline constexpr int kVersion = 20, kVersionZip64 = 45, kDate = (1 << 5) | 1;
/// Where the records' data start: a multiple of this (LibTorch's kFieldAlignment).
inline constexpr std::uint64_t kAlignment = 64;
/// The extra field that pads a local header up to the alignment ("FB", as LibTorch's writer names it).
inline constexpr std::uint16_t kPaddingField = 0x4246;

}  // namespace zip_out

PPE_DECL bool ZipWriter::failed() const { return out_ != nullptr && !*out_; }

PPE_DECL void ZipWriter::put(const std::string& bytes, bool checksum) {
  if (!counting() && !failed()) {
    if (checksum) crc_ = crc32(crc_, bytes.data(), bytes.size());
    out_->write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  offset_ += bytes.size();
}

PPE_DECL void ZipWriter::add(std::string_view name, const void* data, std::size_t size) {
  const ZipChunks chunks = [data, size](const std::function<void(const void*, std::size_t)>& emit) {
    if (size > 0) emit(data, size);
  };
  add(name, size, chunks);
}

PPE_DECL void ZipWriter::add(std::string_view name, std::uint64_t size, const ZipChunks& chunks) {
  std::uint32_t crc = 0;
  if (!counting() && !failed()) chunks([&crc](const void* p, std::size_t n) { crc = crc32(crc, p, n); });
  record(name, size, crc, &chunks);
}

PPE_DECL void ZipWriter::record(std::string_view name, std::uint64_t size, std::uint32_t crc, const ZipChunks* chunks) {
  using namespace zip_out;
  const bool zip64 = size >= zip64_from_;
  const std::uint64_t fixed = 30 + name.size() + (zip64 ? 20 : 0) + 4;  // header, name, zip64 field, padding field's head
  const std::uint64_t pad = (kAlignment - (offset_ + fixed) % kAlignment) % kAlignment;
  std::string h;
  h.reserve(static_cast<std::size_t>(fixed + pad));
  le(h, kLocal, 4);
  le(h, zip64 ? kVersionZip64 : kVersion, 2);
  le(h, 0, 2);  // flags
  le(h, 0, 2);  // stored
  le(h, 0, 2);  // time
  le(h, kDate, 2);
  le(h, crc, 4);
  le(h, zip64 ? 0xFFFFFFFFu : size, 4);  // compressed
  le(h, zip64 ? 0xFFFFFFFFu : size, 4);  // uncompressed
  le(h, name.size(), 2);
  le(h, fixed - 30 - name.size() + pad, 2);
  h.append(name);
  if (zip64) {
    le(h, 1, 2);
    le(h, 16, 2);
    le(h, size, 8);
    le(h, size, 8);
  }
  le(h, kPaddingField, 2);
  le(h, pad, 2);
  h.append(static_cast<std::size_t>(pad), 'Z');
  entries_.push_back(Entry{std::string(name), crc, size, offset_});
  put(h);
  if (!counting() && !failed() && size > 0)
    (*chunks)([this](const void* p, std::size_t n) {
      if (!failed()) out_->write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    });
  if (!counting()) crc_ = combine_crc32(crc_, crc, size);
  offset_ += size;
}

PPE_DECL void ZipWriter::finish() {
  using namespace zip_out;
  const std::uint64_t dir_offset = offset_;
  std::string d;
  for (const Entry& e : entries_) {
    const bool big = e.size >= zip64_from_, far = e.offset >= zip64_from_;
    const std::size_t extra = (big || far) ? 4 + (big ? 16 : 0) + (far ? 8 : 0) : 0;
    le(d, kCentral, 4);
    le(d, kVersionZip64, 2);  // made by: 4.5, MS-DOS attributes
    le(d, extra ? kVersionZip64 : kVersion, 2);
    le(d, 0, 2);
    le(d, 0, 2);
    le(d, 0, 2);
    le(d, kDate, 2);
    le(d, e.crc, 4);
    le(d, big ? 0xFFFFFFFFu : e.size, 4);
    le(d, big ? 0xFFFFFFFFu : e.size, 4);
    le(d, e.name.size(), 2);
    le(d, extra, 2);
    le(d, 0, 2);  // comment
    le(d, 0, 2);  // disk
    le(d, 0, 2);  // internal attributes
    le(d, 0, 4);  // external attributes
    le(d, far ? 0xFFFFFFFFu : e.offset, 4);
    d.append(e.name);
    if (extra) {
      le(d, 1, 2);
      le(d, extra - 4, 2);
      if (big) {
        le(d, e.size, 8);
        le(d, e.size, 8);
      }
      if (far) le(d, e.offset, 8);
    }
  }
  put(d);
  const std::uint64_t dir_size = d.size(), count = entries_.size();
  const bool zip64 = count >= 0xFFFF || dir_size >= zip64_from_ || dir_offset >= zip64_from_;
  std::string e;
  if (zip64) {
    const std::uint64_t at = offset_;
    le(e, kZip64End, 4);
    le(e, 44, 8);  // the record's size after this field
    le(e, kVersionZip64, 2);
    le(e, kVersionZip64, 2);
    le(e, 0, 4);
    le(e, 0, 4);
    le(e, count, 8);
    le(e, count, 8);
    le(e, dir_size, 8);
    le(e, dir_offset, 8);
    le(e, kZip64Locator, 4);
    le(e, 0, 4);
    le(e, at, 8);
    le(e, 1, 4);
  }
  le(e, kEnd, 4);
  le(e, 0, 2);
  le(e, 0, 2);
  le(e, zip64 ? 0xFFFFu : count, 2);
  le(e, zip64 ? 0xFFFFu : count, 2);
  le(e, zip64 ? 0xFFFFFFFFu : dir_size, 4);
  le(e, zip64 ? 0xFFFFFFFFu : dir_offset, 4);
  le(e, 0, 2);  // the comment's length
  // The seal (seal.hpp): the CRC of the archive as it would be with an empty
  // comment, then the comment's real length and the comment.
  if (!counting() && !failed()) crc_ = crc32(crc_, e.data(), e.size());
  const std::string seal = std::string(kSealTag) + hex8(crc_);
  e[e.size() - 2] = static_cast<char>(seal.size() & 0xFFu);
  e[e.size() - 1] = static_cast<char>(seal.size() >> 8);
  put(e + seal, /*checksum=*/false);
}

}  // namespace ppe::detail
