#pragma once
/// \file
/// The pickle byte format that Python's `torch.load` reads (LibTorch's
/// `torch::pickle_save`): `write_pickle`, `pickle_dumps`, `pickle_loads`,
/// `load_file`.
///
/// States of any size stream: `write_pickle` writes each tensor's storage
/// from the tensor into the stream (no copy of the state is made; a storage on
/// another device passes through a 64 MiB host buffer), and `load_file` reads
/// the file's directory and program first, then each storage the program
/// refers to once, from the file into the storage the returned State keeps,
/// never the whole file into memory. docs/snapshot.md has the costs.
///
/// `pickle_dumps` seals what it writes (serialization/seal.hpp) and
/// `pickle_loads` verifies the seal when there is one, so a corrupted file is
/// an error naming the file instead of wrong numbers, and a truncated file
/// (which loses the archive's end record) is one as well. Files without a
/// seal (Python's `torch.save`) load unverified, after the parts of Python's
/// encoding that LibTorch's reader lacks are rewritten
/// (serialization/python_pickle.hpp).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/serialization/seal.hpp"
#include "ppe/state.hpp"

namespace ppe::serialization {

/// Writes `s` into `os` as a sealed archive that Python's `torch.load` reads:
/// the archive `pickle_dumps` returns, streamed (see the file comment). The
/// tensors must not change until it returns. A stream that fails stops the
/// writing; the caller checks the stream.
PPE_DECL void write_pickle(std::ostream& os, const State& s);

/// `write_pickle` in two steps: the pickle program of `s` is made now (the
/// state's structure: small), its archive is written by the returned
/// function, streaming the storages from `s`'s tensors, which must not
/// change until it has run (it keeps them alive). What an asynchronous
/// snapshot hands a process writer, so that its writing process only writes.
PPE_DECL std::function<void(std::ostream&)> pickle_writer(const State& s);

/// Pickle bytes of a State, readable by Python's `torch.load`, sealed with a
/// checksum (see the file comment): `write_pickle` into a buffer allocated
/// once, at the archive's size.
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

namespace ppe::detail {

/// `write_pickle` with zip64 fields for every size and offset from
/// `zip64_from` on (zip's own limit is 0xFFFFFFFF): lets tests check the
/// layout of archives over 4 GiB on small ones.
PPE_DECL void write_pickle_zip64_from(std::ostream& os, const State& s, std::uint64_t zip64_from);

}  // namespace ppe::detail

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
