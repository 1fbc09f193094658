#pragma once
/// \file
/// `detail::ZipWriter`: streams a zip archive of stored records into a
/// `std::ostream` as LibTorch's and Python's writers lay it out (every
/// record's data at an offset that is a multiple of 64, so that a reader can
/// map it; zip64 fields where a size or an offset needs them), and seals it
/// (serialization/seal.hpp): the whole archive's CRC-32 in its comment.
///
/// Each record's bytes are read twice from where they are (once for the
/// record's CRC-32, which zip puts in the header before the data, once to
/// write them) and never copied into a buffer of the writer's, so that an
/// archive of any size costs the writer a few hundred bytes per record. The
/// seal's CRC is combined from the pieces' CRCs (`combine_crc32`), so no
/// byte is checksummed twice.
///
/// Written here rather than through LibTorch's `PyTorchStreamWriter`: that
/// writer computes each record's CRC with miniz's byte-at-a-time loop, writes
/// a time stamp (archives of one state then differ), and its headers cost
/// every translation unit that includes them LibTorch's jit serialization.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

/// A record's bytes given piece by piece: the function calls `emit(data,
/// size)` for each piece in order. The writer calls it twice (the CRC, then
/// the write); both calls must give the same bytes.
using ZipChunks = std::function<void(const std::function<void(const void*, std::size_t)>& emit)>;

class ZipWriter {
 public:
  /// Sizes and offsets at or above `zip64_from` use zip64 fields (zip's own
  /// limit, 0xFFFFFFFF, unless a test asks for them sooner). `out` null: the
  /// writer only counts the bytes (`size()` after `finish()`), reading no
  /// record.
  explicit ZipWriter(std::ostream* out, std::uint64_t zip64_from = 0xFFFFFFFFu) : out_(out), zip64_from_(zip64_from) {}

  /// A record of `size` bytes at `data`.
  void add(std::string_view name, const void* data, std::size_t size);
  /// A record of `size` bytes given by `chunks` (see ZipChunks): a tensor on
  /// another device, copied to the host a piece at a time.
  void add(std::string_view name, std::uint64_t size, const ZipChunks& chunks);
  /// The central directory, the end records and the seal.
  void finish();

  /// Bytes written (or counted) so far.
  std::uint64_t size() const noexcept { return offset_; }

 private:
  struct Entry {
    std::string name;
    std::uint32_t crc = 0;
    std::uint64_t size = 0;
    std::uint64_t offset = 0;  // of its local header
  };

  bool counting() const noexcept { return out_ == nullptr; }
  bool failed() const;
  // Writes bytes of the archive's structure (headers, directory), adding
  // them to the seal's CRC unless `checksum` is false (the seal itself).
  void put(const std::string& bytes, bool checksum = true);
  // The local header and, after it, the record's data.
  void record(std::string_view name, std::uint64_t size, std::uint32_t crc, const ZipChunks* chunks);

  std::ostream* out_;
  std::uint64_t zip64_from_;
  std::uint64_t offset_ = 0;
  std::uint32_t crc_ = 0;  // of everything written so far: the seal
  std::vector<Entry> entries_;
};

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/zip_writer.ipp"
#endif
