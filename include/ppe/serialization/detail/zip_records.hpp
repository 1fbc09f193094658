#pragma once
/// \file
/// The records of a torch.save / ppe zip archive, read from its central
/// directory and checked against the bytes there are before anything is
/// allocated for them: every record stored uncompressed (as torch.save and
/// ppe write them), its declared size equal in both of zip's size fields and
/// within the file, its local header where the directory says, no two names
/// that LibTorch's reader (which ignores case) would confuse. A violation is
/// a CorruptFileError naming the file and the record. Only the end records,
/// the directory and the local headers are read: the records' data are left
/// where they are for the reader to take once. Zip's layout is read here
/// rather than through a zip library: what is checked is the sizes a reader
/// would trust, and what is needed is where each record's bytes are.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/serialization/detail/archive_source.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

/// One record of an archive: its name and where its bytes are in the file.
struct ZipRecord {
  std::string name;           ///< `archive/data.pkl`, `archive/data/0`, ...
  std::uint64_t offset = 0;   ///< of its first data byte in the file
  std::uint64_t size = 0;     ///< bytes (stored: what LibTorch allocates for it)
};

/// The records of the zip archive in `source`, in the central directory's
/// order. `end_offset` is where the end-of-central-directory record starts
/// (serialization/seal.hpp found it). Throws CorruptFileError naming the
/// source and the record or field at fault.
PPE_DECL std::vector<ZipRecord> zip_records(const ArchiveSource& source, std::uint64_t end_offset);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/zip_records.ipp"
#endif
