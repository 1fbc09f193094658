// Definitions of serialization/pickle.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION. LibTorch's
// pickler and unpickler are needed here only; the archive around their
// program is ppe's (serialization/detail/zip_writer.hpp, zip_records.hpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/storage_context.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <unordered_map>

#include <c10/core/QScheme.h>
#include <c10/core/ScalarType.h>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/huge_pages.hpp"
#include "ppe/detail/read_file.hpp"
#include "ppe/serialization/ivalue.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/serialization/detail/archive_source.hpp"
#include "ppe/serialization/detail/file_records.hpp"
#include "ppe/serialization/detail/pickle_check.hpp"
#include "ppe/serialization/detail/zip_records.hpp"
#include "ppe/serialization/detail/zip_writer.hpp"
#include "ppe/serialization/python_pickle.hpp"

namespace ppe::detail {

/// The program (data.pkl) of a State, and the tensors whose storages become
/// its records data/0, data/1, ... in that order.
struct PickledState {
  std::vector<char> program;
  std::vector<at::Tensor> storages;
};

/// torch::jit::pickle_save's program, but pickled without type tags:
/// pickle_save wraps each typed dict and list in
/// torch.jit._pickle.restore_type_tag, a global that Python's torch.load
/// refuses by default from PyTorch 2.6 (weights_only=True), while a State's
/// containers hold values of any type and need no tag. The storages are
/// referred to, not copied.
inline PickledState pickle_program(const State& s) {
  PickledState out;
  torch::jit::Pickler pickler([&](const char* p, std::size_t n) { out.program.insert(out.program.end(), p, p + n); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
                              /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
                              /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(serialization::to_ivalue(s));
  pickler.stop();
  out.storages = pickler.tensorData();
  return out;
}

/// How much of a storage on another device is copied to the host at a time.
inline constexpr std::size_t kDeviceChunk = std::size_t{64} << 20;

/// The archive of a pickled State, as torch.save lays it out (records under
/// `archive/`: data.pkl, byteorder, data/<n>, version 3), written by `zip`.
/// Each storage goes from its tensor into the stream (a storage on another
/// device through a host buffer of kDeviceChunk bytes).
inline void write_pickle_archive(ZipWriter& zip, const PickledState& pickled) {
  zip.add("archive/data.pkl", pickled.program.data(), pickled.program.size());
  zip.add("archive/byteorder", "little", 6);
  for (std::size_t i = 0; i < pickled.storages.size(); ++i) {
    const c10::Storage& storage = pickled.storages[i].storage();
    const std::string name = "archive/data/" + std::to_string(i);
    const std::size_t nbytes = storage.nbytes();
    if (storage.device().is_cpu()) {
      zip.add(name, storage.data(), nbytes);
      continue;
    }
    const at::Tensor bytes =
        at::empty({0}, at::TensorOptions().dtype(at::kByte).device(storage.device()))
            .set_(storage, 0, {static_cast<std::int64_t>(nbytes)}, {1});
    at::Tensor host;
    zip.add(name, nbytes, [&](const std::function<void(const void*, std::size_t)>& emit) {
      for (std::size_t at = 0; at < nbytes; at += kDeviceChunk) {
        const auto n = static_cast<std::int64_t>(std::min(kDeviceChunk, nbytes - at));
        if (!host.defined()) host = at::empty({n}, at::TensorOptions().dtype(at::kByte));
        at::Tensor piece = host.narrow(0, 0, n);
        piece.copy_(bytes.narrow(0, static_cast<std::int64_t>(at), n));
        emit(piece.data_ptr(), static_cast<std::size_t>(n));
      }
    });
  }
  zip.add("archive/version", "3\n", 2);
  zip.finish();
}

/// A stream buffer appending to a byte vector (pickle_dumps' sink).
class VectorSink : public std::streambuf {
 public:
  explicit VectorSink(std::vector<char>& out) : out_(out) {}

 protected:
  int_type overflow(int_type ch) override {
    if (!traits_type::eq_int_type(ch, traits_type::eof())) out_.push_back(traits_type::to_char_type(ch));
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.insert(out_.end(), s, s + n);
    return n;
  }

 private:
  std::vector<char>& out_;
};

}  // namespace ppe::detail

namespace ppe::serialization {

PPE_DECL void write_pickle(std::ostream& os, const State& s) {
  ppe::detail::ZipWriter zip(&os);
  ppe::detail::write_pickle_archive(zip, ppe::detail::pickle_program(s));
}

}  // namespace ppe::serialization

namespace ppe::detail {

PPE_DECL void write_pickle_zip64_from(std::ostream& os, const State& s, std::uint64_t zip64_from) {
  ZipWriter zip(&os, zip64_from);
  write_pickle_archive(zip, pickle_program(s));
}

}  // namespace ppe::detail

namespace ppe::serialization {

PPE_DECL std::function<void(std::ostream&)> pickle_writer(const State& s) {
  auto pickled = std::make_shared<const ppe::detail::PickledState>(ppe::detail::pickle_program(s));
  return [pickled](std::ostream& os) {
    ppe::detail::ZipWriter zip(&os);
    ppe::detail::write_pickle_archive(zip, *pickled);
  };
}

PPE_DECL std::vector<char> pickle_dumps(const State& s) {
  const ppe::detail::PickledState pickled = ppe::detail::pickle_program(s);
  // Counted first, so that the buffer is allocated once at its size.
  ppe::detail::ZipWriter count(nullptr);
  ppe::detail::write_pickle_archive(count, pickled);
  std::vector<char> bytes;
  bytes.reserve(static_cast<std::size_t>(count.size()));
  ppe::detail::VectorSink sink(bytes);
  std::ostream os(&sink);
  ppe::detail::ZipWriter zip(&os);
  ppe::detail::write_pickle_archive(zip, pickled);
  return bytes;
}

}  // namespace ppe::serialization

namespace ppe::detail {

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

/// Records of at least this many bytes may stay in the file until they are
/// loaded (load_file_deferred); smaller ones are read at once.
inline constexpr std::uint64_t kDeferredRecord = std::uint64_t{1} << 20;

/// An uninitialised host buffer of `n` bytes for a record (in huge pages
/// where the kernel gives them: detail/huge_pages.hpp).
inline at::DataPtr record_buffer(std::size_t n) {
  at::DataPtr p = c10::GetCPUAllocator()->allocate(n);
  prefer_huge_pages(p.get(), n);
  return p;
}

/// The State in the archive `source`, read as the file comment of
/// serialization/pickle.hpp says: its end and seal, its directory
/// (zip_records) and its program (checked by check_pickle_program and
/// rewritten for LibTorch's unpickler where Python's encoding needs it)
/// first; then every record the program refers to, once, in the order of the
/// file, into the storage that keeps it, the seal's CRC computed as the
/// bytes pass (SealCheck); then the program, by LibTorch's unpickler, on
/// those storages.
PPE_DECL State read_pickle_parts(const std::shared_ptr<const ArchiveSource>& shared, const SealInfo& seal,
                                const MayDefer* may_defer) {
  const ArchiveSource& source = *shared;
  const std::uint64_t end = source.size() - kZipEndSize - (seal.sealed ? kSealSize : 0);
  const std::vector<ZipRecord> records = zip_records(source, end);
  const std::string& name = source.name();
  const auto fail = [&](const std::string& what) {
    throw serialization::CorruptFileError("ppe: cannot read " + name + ": " + what);
  };
  // LibTorch's reader names the records after the first one's folder (torch.save: the file's stem).
  if (records.empty() || records.front().name.find('/') == std::string::npos)
    fail("its zip archive has no folder of records (torch.save writes <name>/data.pkl)");
  const std::string folder = records.front().name.substr(0, records.front().name.find('/') + 1);
  std::unordered_map<std::string_view, const ZipRecord*> by_name;
  for (const ZipRecord& r : records) by_name.emplace(r.name, &r);
  const auto pkl = by_name.find(folder + "data.pkl");
  if (pkl == by_name.end()) fail("its archive has no record " + folder + "data.pkl");
  const std::string original = source.bytes(pkl->second->offset, static_cast<std::size_t>(pkl->second->size));
  std::optional<std::string> rewritten = rewrite_python_pickle(original);
  const std::string program = rewritten ? std::move(*rewritten) : original;
  std::set<std::string> referenced;
  PickleCheckContext context;
  context.record_size = [&](std::string_view key) -> std::optional<std::uint64_t> {
    const auto it = by_name.find(folder + "data/" + std::string(key));
    if (it == by_name.end()) return std::nullopt;
    referenced.emplace(key);
    return it->second->size;
  };
  context.storage_item_size = storage_item_size;
  context.is_qscheme = is_qscheme;
  context.source = name;
  if (const std::optional<std::string> global = check_pickle_program(program, context))
    throw_unsupported_global(original, name, *global);
  // The format version (LibTorch's reader requires the record).
  const ZipRecord* version = nullptr;
  for (const std::string& v : {folder + ".data/version", folder + "version"})
    if (const auto it = by_name.find(v); !version && it != by_name.end()) version = it->second;
  if (!version) fail("its archive has no record " + folder + "version");
  if (version->size == 0 || version->size > 20) fail("its record " + version->name + " is no version number");
  const std::string version_text = source.bytes(version->offset, static_cast<std::size_t>(version->size));
  std::uint64_t format = 0;
  for (const char c : version_text) {
    if (c == '\n') break;
    if (c < '0' || c > '9') fail("its record " + version->name + " is no version number");
    format = format * 10 + static_cast<std::uint64_t>(c - '0');
  }
  // The records the program refers to, in the order of the file.
  std::vector<std::pair<const ZipRecord*, std::string>> wanted;
  for (const std::string& key : referenced) wanted.emplace_back(by_name.at(folder + "data/" + key), key);
  std::sort(wanted.begin(), wanted.end(), [](const auto& a, const auto& b) { return a.first->offset < b.first->offset; });
  std::unordered_map<std::string, at::DataPtr> storages;
  if (may_defer) {
    // Some records stay in the file until they are loaded: every byte is
    // checked first, so that no corrupted byte reaches a destination.
    SealCheck whole(source, seal);
    whole.finish();
    for (const auto& [record, key] : wanted) {
      if (record->size >= kDeferredRecord) {
        storages.emplace(key, unread_record(shared, record->offset, record->size));
        continue;
      }
      at::DataPtr data = record_buffer(static_cast<std::size_t>(record->size));
      source.read(record->offset, data.get(), static_cast<std::size_t>(record->size));
      storages.emplace(key, std::move(data));
    }
  } else {
    SealCheck check(source, seal);
    for (const auto& [record, key] : wanted) {
      check.skip_to(record->offset);
      at::DataPtr data = record_buffer(static_cast<std::size_t>(record->size));
      check.read_into(record->offset, data.get(), record->size);
      storages.emplace(key, std::move(data));
    }
    check.finish();
  }
  try {
    std::size_t pos = 0;
    auto read = [&](char* buffer, std::size_t n) {
      const std::size_t k = std::min(n, program.size() - pos);
      std::memcpy(buffer, program.data() + pos, k);
      pos += k;
      return k;
    };
    auto read_record = [&](const std::string& key) {
      const auto it = storages.find(key);
      if (it == storages.end()) fail("its program reads storage '" + key + "' twice");
      at::DataPtr data = std::move(it->second);
      storages.erase(it);
      return data;
    };
    torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::nullopt, /*use_storage_device=*/false,
                                    torch::jit::Unpickler::defaultTypeParser,
                                    std::make_shared<torch::jit::DeserializationStorageContext>());
    unpickler.set_version(format);
    State state = serialization::from_ivalue(unpickler.parse_ivalue());
    if (may_defer) {
      std::vector<std::string> path;
      read_undeferred(state, path, *may_defer);
    }
    return state;
  } catch (const StateError&) {
    throw;  // readable, but holds something a State cannot
  } catch (const serialization::CorruptFileError&) {
    throw;
  } catch (const std::exception& e) {
    throw serialization::CorruptFileError(
        "ppe: cannot read " + name +
        (seal.sealed ? "" : " (truncated, or not a file written by torch.save / ppe::serialization::pickle_dumps)") +
        ": " + ppe::detail::error_message(e));
  }
}

PPE_DECL State read_pickle(const std::shared_ptr<const ArchiveSource>& shared, const MayDefer* may_defer) {
  const ArchiveSource& source = *shared;
  const SealInfo seal = read_seal(source);
  try {
    return read_pickle_parts(shared, seal, may_defer);
  } catch (const serialization::CorruptFileError&) {
    // A sealed archive that fails a check of its structure: when its CRC
    // differs too, corruption is the error to report (bytes changed after
    // ppe wrote them), as when the damage is in a tensor's bytes.
    if (seal.sealed) {
      SealCheck whole(source, seal);
      whole.finish();
    }
    throw;
  }
}

}  // namespace ppe::detail

namespace ppe::serialization {

PPE_DECL State pickle_loads(const std::vector<char>& bytes, std::string_view source) {
  return detail::read_pickle(std::make_shared<detail::MemorySource>(bytes.data(), bytes.size(), std::string(source)),
                             nullptr);
}

PPE_DECL std::vector<char> read_file_bytes(const std::filesystem::path& path) {
  const std::string bytes = detail::read_file(path);
  return std::vector<char>(bytes.begin(), bytes.end());
}

PPE_DECL State load_file(const std::filesystem::path& path) {
  if (!detail::FileSource::is_regular(path)) return pickle_loads(read_file_bytes(path), path.string());
  return detail::read_pickle(std::make_shared<detail::FileSource>(path), nullptr);
}

}  // namespace ppe::serialization

namespace ppe::detail {

PPE_DECL State load_file_deferred(const std::filesystem::path& path, const MayDefer& may_defer) {
  if (!FileSource::is_regular(path)) return serialization::load_file(path);
  return read_pickle(std::make_shared<FileSource>(path), &may_defer);
}

}  // namespace ppe::detail
