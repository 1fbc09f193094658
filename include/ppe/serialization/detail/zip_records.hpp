#pragma once
/// \file
/// The records of a torch.save / ppe zip archive, read from its central
/// directory and checked against the bytes there are before LibTorch's reader
/// (miniz) allocates anything for them: every record stored uncompressed (as
/// torch.save and LibTorch write them), its declared size equal in both of
/// zip's size fields and within the file, its local header where the
/// directory says. A violation is a CorruptFileError naming the file and the
/// record. Zip's layout is read here rather than through a zip library: the
/// bytes are already in memory and what is checked is the sizes LibTorch's
/// own reader would trust; a second library would parse the same bytes again.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

/// One record of an archive: its name and where its bytes are in the file.
struct ZipRecord {
  std::string name;           ///< `archive/data.pkl`, `archive/data/0`, ...
  std::uint64_t offset = 0;   ///< of its first data byte in the file
  std::uint64_t size = 0;     ///< bytes (stored: what LibTorch allocates for it)
};

/// The records of the zip archive `bytes` (read from `source`, for
/// messages), in the central directory's order. `end_offset` is where the
/// end-of-central-directory record starts (serialization/seal.hpp found it).
/// Throws CorruptFileError naming `source` and the record or field at fault.
PPE_DECL std::vector<ZipRecord> zip_records(std::string_view bytes, std::size_t end_offset, std::string_view source);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/zip_records.ipp"
#endif
