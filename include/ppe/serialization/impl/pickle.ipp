// Definitions of serialization/pickle.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION. LibTorch's
// pickler and archive reader are needed here only.
#pragma once

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/storage_context.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include <c10/core/QScheme.h>
#include <c10/core/ScalarType.h>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/read_file.hpp"
#include "ppe/serialization/ivalue.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/serialization/detail/pickle_check.hpp"
#include "ppe/serialization/detail/zip_records.hpp"
#include "ppe/serialization/python_pickle.hpp"

namespace ppe::serialization {

// torch::jit::pickle_save's archive (data.pkl, data/<n> per tensor storage),
// but pickled without type tags: pickle_save wraps each typed dict and list in
// torch.jit._pickle.restore_type_tag, a global that Python's torch.load
// refuses by default from PyTorch 2.6 (weights_only=True), while a State's
// containers hold values of any type and need no tag.
PPE_DECL std::vector<char> pickle_dumps(const State& s) {
  std::vector<char> program;
  torch::jit::Pickler pickler([&](const char* p, std::size_t n) { program.insert(program.end(), p, p + n); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
                              /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
                              /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(to_ivalue(s));
  pickler.stop();
  std::vector<char> bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, std::size_t n) {
    bytes.insert(bytes.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", program.data(), program.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  detail::seal(bytes);
  return bytes;
}

}  // namespace ppe::serialization

namespace ppe::detail {

/// LibTorch's reader of an archive in memory, but bounded: LibTorch's own
/// MemoryReadAdapter copies whatever its zip reader asks for, past the
/// buffer's end too (found by fuzzing: miniz asked it for offset 2^64 - 1 of a
/// damaged archive); this one gives the bytes there are and no more.
class BoundedMemoryReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  BoundedMemoryReader(const char* data, std::size_t size) : data_(data), size_(size) {}
  std::size_t size() const override { return size_; }
  std::size_t read(std::uint64_t pos, void* buf, std::size_t n, const char* /*what*/) const override {
    if (pos >= size_) return 0;
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - pos));
    std::memcpy(buf, data_ + pos, n);
    return n;
  }

 private:
  const char* data_;
  std::size_t size_;
};

/// A reader of the archive in `bytes` (throws when they are none).
inline caffe2::serialize::PyTorchStreamReader archive_reader(const std::vector<char>& bytes) {
  return caffe2::serialize::PyTorchStreamReader(std::make_shared<BoundedMemoryReader>(bytes.data(), bytes.size()));
}

/// The StateError of a program that holds a Python object a State cannot
/// (find_unsupported_global): its class, where it is, what to do. `global`:
/// the one the check met, should the finder not follow the program.
[[noreturn]] inline void throw_unsupported_global(std::string_view program, std::string_view source,
                                                  const std::string& global) {
  std::optional<UnsupportedGlobal> found = find_unsupported_global(program);
  if (!found) found = UnsupportedGlobal{global, ""};
  throw StateError("ppe: cannot read " + std::string(source) + ": it holds a Python " + found->global +
                   (found->path.empty() ? std::string(" as its top-level object") : " at '" + found->path + "'") +
                   ", which a ppe::State cannot represent (it holds dicts, lists, tuples, strings, numbers, "
                   "booleans, None and tensors); convert it in Python before torch.save (a Counter to a dict or a "
                   "list, a set to a list), or drop it (a bound method, a functools.partial, a lambda)");
}

/// The element size of the storage class `<name>Storage` (`Float` -> 4):
/// one of Python's typed storages that hold plain numbers, which torch.save
/// writes; 0 for any other name. (LibTorch 2.x's reader also takes names of
/// scalar types no kernel can copy, such as `UInt6`: found by fuzzing.)
inline std::size_t storage_item_size(std::string_view name) {
  static constexpr std::string_view kStorages[] = {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double",
                                                   "ComplexHalf", "ComplexFloat", "ComplexDouble", "Bool", "BFloat16"};
  if (std::find(std::begin(kStorages), std::end(kStorages), name) == std::end(kStorages)) return 0;
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    const auto type = static_cast<c10::ScalarType>(i);
    if (name == c10::toString(type)) return c10::elementSize(type);
  }
  return 0;
}

/// Whether `name` is one of LibTorch's quantization schemes (`per_tensor_affine`).
inline bool is_qscheme(std::string_view name) {
  for (int i = 0; i < static_cast<int>(c10::COMPILE_TIME_NUM_QSCHEMES); ++i)
    if (name == c10::toString(static_cast<c10::QScheme>(i))) return true;
  return false;
}

/// The program of an archive's data.pkl, checked with its records before
/// LibTorch's reader sees either (zip_records, check_pickle_program), and
/// rewritten for that reader where Python's encoding needs it
/// (rewrite_python_pickle).
inline std::string checked_program(const std::vector<char>& bytes, bool sealed, std::string_view source) {
  const std::string_view all(bytes.data(), bytes.size());
  const std::size_t end = bytes.size() - kZipEndSize - (sealed ? kSealSize : 0);
  const std::vector<ZipRecord> records = zip_records(all, end, source);
  // LibTorch's reader names the records after the first one's folder (torch.save: the file's stem).
  const auto fail = [&](const std::string& what) {
    throw serialization::CorruptFileError("ppe: cannot read " + std::string(source) + ": " + what);
  };
  if (records.empty() || records.front().name.find('/') == std::string::npos)
    fail("its zip archive has no folder of records (torch.save writes <name>/data.pkl)");
  const std::string folder = records.front().name.substr(0, records.front().name.find('/') + 1);
  std::unordered_map<std::string_view, const ZipRecord*> by_name;
  for (const ZipRecord& r : records) by_name.emplace(r.name, &r);
  const auto pkl = by_name.find(folder + "data.pkl");
  if (pkl == by_name.end()) fail("its archive has no record " + folder + "data.pkl");
  const std::string_view original = all.substr(pkl->second->offset, pkl->second->size);
  std::optional<std::string> rewritten = rewrite_python_pickle(original);
  std::string program = rewritten ? std::move(*rewritten) : std::string(original);
  PickleCheckContext context;
  context.record_size = [&](std::string_view key) -> std::optional<std::uint64_t> {
    const auto it = by_name.find(folder + "data/" + std::string(key));
    if (it == by_name.end()) return std::nullopt;
    return it->second->size;
  };
  context.storage_item_size = storage_item_size;
  context.is_qscheme = is_qscheme;
  context.source = source;
  if (const std::optional<std::string> global = check_pickle_program(program, context))
    throw_unsupported_global(original, source, *global);
  return program;
}

/// The State of a checked program, read by LibTorch's unpickler with the
/// archive's records; a storage read once however often it is named (as
/// Python's torch.load shares it).
PPE_DECL State pickle_loads_unchecked(const std::vector<char>& bytes, const std::string& program) {
  auto reader = archive_reader(bytes);
  std::size_t pos = 0;
  auto read = [&](char* buffer, std::size_t n) {
    const std::size_t k = std::min(n, program.size() - pos);
    std::memcpy(buffer, program.data() + pos, k);
    pos += k;
    return k;
  };
  auto read_record = [&reader](const std::string& name) { return std::get<0>(reader.getRecord("data/" + name)); };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::nullopt, /*use_storage_device=*/false,
                                  torch::jit::Unpickler::defaultTypeParser,
                                  std::make_shared<torch::jit::DeserializationStorageContext>());
  unpickler.set_version(reader.version());
  return serialization::from_ivalue(unpickler.parse_ivalue());
}

}  // namespace ppe::detail

namespace ppe::serialization {

PPE_DECL State pickle_loads(const std::vector<char>& bytes, std::string_view source) {
  const bool sealed = detail::verify_seal(bytes, source);
  const std::string program = detail::checked_program(bytes, sealed, source);
  try {
    return detail::pickle_loads_unchecked(bytes, program);
  } catch (const StateError&) {
    throw;  // readable, but holds something a State cannot
  } catch (const std::exception& e) {
    throw CorruptFileError("ppe: cannot read " + std::string(source) +
                           (sealed ? "" : " (truncated, or not a file written by torch.save / ppe::serialization::pickle_dumps)") +
                           ": " + ppe::detail::error_message(e));
  }
}

PPE_DECL std::vector<char> read_file_bytes(const std::filesystem::path& path) {
  const std::string bytes = detail::read_file(path);
  return std::vector<char>(bytes.begin(), bytes.end());
}

PPE_DECL State load_file(const std::filesystem::path& path) {
  return pickle_loads(read_file_bytes(path), path.string());
}

}  // namespace ppe::serialization
