// Definitions of serialization/pickle.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION. LibTorch's
// pickler and archive reader are needed here only.
#pragma once

#include <sys/types.h>  // off_t: caffe2/serialize/in_memory_adapter.h uses it without including it

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/read_file.hpp"
#include "ppe/serialization/ivalue.hpp"
#include "ppe/serialization/pickle.hpp"
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

/// A reader of the archive in `bytes` (throws when they are none).
inline caffe2::serialize::PyTorchStreamReader archive_reader(const std::vector<char>& bytes) {
  return caffe2::serialize::PyTorchStreamReader(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
}

/// Throws StateError when the archive in `bytes` holds a Python object a
/// State cannot (find_unsupported_global): its class, where it is, what to do.
inline void throw_if_unsupported_global(const std::vector<char>& bytes, std::string_view source) {
  std::optional<UnsupportedGlobal> found;
  try {
    auto reader = archive_reader(bytes);
    if (!reader.hasRecord("data.pkl")) return;
    auto [data, size] = reader.getRecord("data.pkl");
    found = find_unsupported_global(std::string_view(static_cast<const char*>(data.get()), size));
  } catch (const std::exception&) {
    return;  // no readable archive: the caller's error stands
  }
  if (!found) return;
  throw StateError("ppe: cannot read " + std::string(source) + ": it holds a Python " + found->global +
                   (found->path.empty() ? std::string(" as its top-level object") : " at '" + found->path + "'") +
                   ", which a ppe::State cannot represent (it holds dicts, lists, tuples, strings, numbers, "
                   "booleans, None and tensors); convert it in Python before torch.save (a Counter to a dict or a "
                   "list, a set to a list), or drop it (a bound method, a functools.partial, a lambda)");
}

PPE_DECL State pickle_loads_unchecked(const std::vector<char>& bytes) {
  auto reader = archive_reader(bytes);
  std::optional<std::string> program;
  if (reader.hasRecord("data.pkl")) {
    auto [data, size] = reader.getRecord("data.pkl");
    program = detail::rewrite_python_pickle(std::string_view(static_cast<const char*>(data.get()), size));
  }
  if (!program) return serialization::from_ivalue(torch::jit::pickle_load(bytes));
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
  return serialization::from_ivalue(unpickler.parse_ivalue());
}

}  // namespace ppe::detail

namespace ppe::serialization {

PPE_DECL State pickle_loads(const std::vector<char>& bytes, std::string_view source) {
  const bool sealed = detail::verify_seal(bytes, source);
  try {
    return detail::pickle_loads_unchecked(bytes);
  } catch (const std::exception& e) {
    // Readable, but holding a Python object that neither LibTorch's reader
    // nor a State knows: named, with where it is.
    detail::throw_if_unsupported_global(bytes, source);
    if (dynamic_cast<const StateError*>(&e)) throw;  // readable, but holds something a State cannot
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
