#pragma once
/// \file
/// The safetensors format (not in PPE: the model hubs' format for weights):
/// an 8-byte little-endian header length, a JSON header naming each tensor's
/// dtype, shape and byte range, then the tensors' bytes. Read from a file
/// (memory-mapped when it is large: the tensors view the mapping) or from
/// bytes; written to a stream or into bytes, in the byte layout of the
/// format's reference implementation (tensors by descending dtype alignment,
/// then by name; the header padded with spaces to 8 bytes), so that the same
/// tensors give the same bytes.
///
/// Every size the header declares is checked against the bytes there are
/// before anything is allocated for it (docs/safetensors.md): the header's
/// length against the file and a maximum of 100,000,000 bytes (the reference
/// implementation's), the JSON (well formed, at most 64 levels deep, each
/// entry an object of the expected fields, no name twice), and the tensors'
/// byte ranges (within the data, in order, no overlap and no hole, each the
/// size its shape and dtype make). A file that fails is a `CorruptFileError`
/// naming the file, the tensor and the field. Memory: the header's parse
/// holds a few times the header's size; the tensors are the file's bytes
/// (mapped, or read once).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::serialization {

/// The largest header `load_safetensors` reads (bytes), as the reference
/// implementation's `MAX_HEADER_SIZE`.
inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;

/// Named tensors, in order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// What a safetensors file holds.
struct SafetensorsFile {
  /// The tensors in the file's order (by their byte offsets), on the CPU.
  NamedTensors tensors;
  /// The header's `__metadata__` (strings to strings).
  std::map<std::string, std::string> metadata;
  /// The tensor named `name`, or nullptr.
  const at::Tensor* find(std::string_view name) const;
};

/// How `load_safetensors` gets a file's bytes.
enum class SafetensorsMapping {
  /// Maps files of 1 MiB and more, reads smaller ones.
  Auto,
  /// Maps the file (copy-on-write: writing to a tensor never changes the
  /// file). Each tensor whose bytes sit at a multiple of its element size
  /// views the mapping, which lives as long as one such tensor does; the
  /// others are copied. The file must not shrink while they view it.
  Map,
  /// Reads the file into memory: every tensor owns its bytes.
  Read,
};

/// Options of `load_safetensors`.
struct SafetensorsReadOptions {
  PPE_ARG(SafetensorsMapping, mapping) = SafetensorsMapping::Auto;
};

/// The tensors and metadata of the safetensors file at `path`. Throws
/// `std::system_error` (a `std::runtime_error`) naming the file when it
/// cannot be read, `CorruptFileError` naming the file, the tensor and the
/// field when its bytes are no valid safetensors file, and
/// `std::invalid_argument` naming the tensor when its dtype has no LibTorch
/// type in this LibTorch (F4, F6, or F8 before LibTorch 2.1).
PPE_DECL SafetensorsFile load_safetensors(const std::filesystem::path& path, const SafetensorsReadOptions& options = {});

/// `load_safetensors` of bytes in memory (copied into the tensors); `source`
/// names them in errors.
PPE_DECL SafetensorsFile safetensors_loads(std::string_view bytes,
                                           std::string_view source = "the safetensors data");

/// Writes `tensors` (any order; laid out in the reference implementation's
/// order) and `metadata` to `os` in the safetensors format. A tensor that is
/// not contiguous or not on the CPU is copied first, one at a time. Throws
/// `std::invalid_argument` for two tensors of one name, a name
/// `__metadata__`, an undefined tensor, or a dtype the format has no name for
/// (naming the tensor); the stream's failure as `std::runtime_error`. The
/// tensors must not change during the call: with a writer that writes later
/// (a ThreadWriter), hand it `safetensors_dumps` instead (through
/// `ppe::writing::owned_bytes`).
PPE_DECL void write_safetensors(std::ostream& os, const NamedTensors& tensors,
                                const std::map<std::string, std::string>& metadata = {});

/// The bytes `write_safetensors` writes.
PPE_DECL std::string safetensors_dumps(const NamedTensors& tensors,
                                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ppe::serialization

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/safetensors.ipp"
#endif
