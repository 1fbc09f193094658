#pragma once
/// \file
/// `detail::check_pickle_program`: follows a pickle program exactly as
/// LibTorch's unpickler would, without building anything, and refuses it
/// before LibTorch reads it when any size it declares does not fit the bytes
/// there are or when reading it would cost more than a small multiple of its
/// size. LibTorch's reader trusts the program: a string's declared length is
/// allocated before it is read, a memo index resizes its table, a storage's
/// declared element count becomes its byte size whatever its record holds (a
/// tensor then reads past it), a dictionary with an odd number of items reads
/// past its stack. Checked here:
///  - every length and line within the program, the first opcode PROTO and the
///    last STOP with one value left, each opcode one LibTorch knows;
///  - every MARK, stack and memo access within what the program made (a memo
///    index below the program's size; a slot read after it was written);
///  - each storage (`BINPERSID`): its class a storage type of this LibTorch,
///    its element count × element size within its record `data/<key>` (which
///    must exist), and every reference to one key declaring the same bytes;
///  - each tensor (`torch._utils._rebuild_tensor_v2`): sizes and strides
///    non-negative, as many strides as sizes, and its last element within its
///    storage (products checked for overflow);
///  - the values made: no container that holds itself, nesting at most
///    kMaxPickleDepth levels, and the value it yields, with shared parts
///    counted each time they are reached (as ppe::State copies them), at most
///    kPickleExpansion times the program's size (and at least 2^20 values and
///    2^24 bytes of text are always allowed).
/// Sparse, quantized and subclassed tensors and references to a tensor table
/// are refused: their data cannot be checked before LibTorch uses it.
/// Time and memory are linear in the program's size.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ppe/detail/config.hpp"
#include "ppe/serialization/seal.hpp"

namespace ppe::detail {

/// Deepest nesting of lists, tuples and dictionaries a program may make
/// (Python's pickler itself stops near 1000 levels: its recursion limit).
inline constexpr std::size_t kMaxPickleDepth = 1000;
/// How many times its program's size the value a program yields may expand
/// to when its shared parts are copied (see the file comment).
inline constexpr std::size_t kPickleExpansion = 16;

/// What the check needs to know of the archive and of this LibTorch.
struct PickleCheckContext {
  /// The size of the record `data/<key>`, or nullopt when there is none.
  std::function<std::optional<std::uint64_t>(std::string_view key)> record_size;
  /// The element size of the storage class `torch.<name>` (`FloatStorage`:
  /// 4), or 0 when this LibTorch has no such storage.
  std::function<std::size_t(std::string_view name)> storage_item_size;
  /// Whether `torch.<name>` is one of LibTorch's quantization schemes.
  std::function<bool(std::string_view name)> is_qscheme;
  /// Where the program came from (a file name), for messages.
  std::string_view source;
};

/// Throws CorruptFileError naming `context.source`, the opcode's offset and
/// the field when the program fails a check (see the file comment). Returns
/// the global (`module.name`) at which the program stops being one LibTorch
/// can read, when it names a Python class or function outside LibTorch's
/// (LibTorch refuses it there, before building anything after it).
PPE_DECL std::optional<std::string> check_pickle_program(std::string_view program, const PickleCheckContext& context);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/pickle_check.ipp"
#endif
