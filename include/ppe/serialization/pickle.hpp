#pragma once
/// \file
/// The pickle byte format that Python's `torch.load` reads (LibTorch's
/// `torch::pickle_save`): `pickle_dumps`, `pickle_loads`, `load_file`.
///
/// `pickle_dumps` seals what it writes (serialization/seal.hpp) and
/// `pickle_loads` verifies the seal when there is one, so a corrupted file is
/// an error naming the file instead of wrong numbers, and a truncated file
/// (which loses the archive's end record) is one as well. Files without a
/// seal (Python's `torch.save`) load unverified, after the parts of Python's
/// encoding that LibTorch's reader lacks are rewritten
/// (serialization/python_pickle.hpp).

#include <sys/types.h>  // off_t: caffe2/serialize/in_memory_adapter.h uses it without including it

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/serialization/ivalue.hpp"
#include "ppe/serialization/python_pickle.hpp"
#include "ppe/serialization/seal.hpp"
#include "ppe/state.hpp"

namespace ppe {

/// Pickle bytes of a State, readable by Python's `torch.load`, sealed with a
/// checksum (see the file comment).
inline std::vector<char> pickle_dumps(const State& s) {
  std::vector<char> bytes = torch::jit::pickle_save(to_ivalue(s));
  detail::seal(bytes);
  return bytes;
}

namespace detail {

inline State pickle_loads_unchecked(const std::vector<char>& bytes) {
  caffe2::serialize::PyTorchStreamReader reader(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
  std::optional<std::string> program;
  if (reader.hasRecord("data.pkl")) {
    auto [data, size] = reader.getRecord("data.pkl");
    program = detail::rewrite_python_pickle(std::string_view(static_cast<const char*>(data.get()), size));
  }
  if (!program) return from_ivalue(torch::jit::pickle_load(bytes));
  std::size_t pos = 0;
  auto read = [&](char* buffer, std::size_t n) {
    const std::size_t k = std::min(n, program->size() - pos);
    std::memcpy(buffer, program->data() + pos, k);
    pos += k;
    return k;
  };
  auto read_record = [&reader](const std::string& name) { return std::get<0>(reader.getRecord("data/" + name)); };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::nullopt);
  unpickler.set_version(reader.version());
  return from_ivalue(unpickler.parse_ivalue());
}

}  // namespace detail

/// The State stored in pickle bytes written by `pickle_dumps` or Python's
/// `torch.save` (including `state_dict()`s and PPE snapshots: the parts of
/// Python's pickle encoding that LibTorch's reader lacks are rewritten first,
/// see detail::rewrite_python_pickle). A seal is verified first. Bytes that
/// are no readable archive (truncated, corrupted, something else) raise
/// CorruptFileError naming `source` (a file name, for messages).
inline State pickle_loads(const std::vector<char>& bytes, std::string_view source = "the pickle data") {
  const bool sealed = detail::verify_seal(bytes, source);
  try {
    return detail::pickle_loads_unchecked(bytes);
  } catch (const StateError&) {
    throw;  // readable, but holds something a State cannot
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));  // LibTorch appends a C++ stack trace
    throw CorruptFileError("ppe: cannot read " + std::string(source) +
                           (sealed ? "" : " (truncated, or not a file written by torch.save / ppe::pickle_dumps)") +
                           ": " + what);
  }
}

/// The bytes of a file; a std::runtime_error naming the file when it cannot
/// be read.
inline std::vector<char> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("ppe: cannot open " + path.string() + " for reading");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("ppe: reading " + path.string() + " failed");
  return bytes;
}

/// The State in a file written by `pickle_dumps` (through any writer) or by
/// Python's `torch.save`: Python's `torch.load(path, map_location="cpu")`.
inline State load_file(const std::filesystem::path& path) { return pickle_loads(read_file_bytes(path), path.string()); }

}  // namespace ppe
