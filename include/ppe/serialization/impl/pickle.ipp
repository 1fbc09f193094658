// Definitions of serialization/pickle.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION. LibTorch's
// pickler and archive reader are needed here only.
#pragma once

#include <sys/types.h>  // off_t: caffe2/serialize/in_memory_adapter.h uses it without including it

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "ppe/detail/read_file.hpp"
#include "ppe/serialization/ivalue.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/serialization/python_pickle.hpp"

namespace ppe {

PPE_DECL std::vector<char> pickle_dumps(const State& s) {
  std::vector<char> bytes = torch::jit::pickle_save(to_ivalue(s));
  detail::seal(bytes);
  return bytes;
}

namespace detail {

PPE_DECL State pickle_loads_unchecked(const std::vector<char>& bytes) {
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

PPE_DECL State pickle_loads(const std::vector<char>& bytes, std::string_view source) {
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

PPE_DECL std::vector<char> read_file_bytes(const std::filesystem::path& path) {
  const std::string bytes = detail::read_file(path);
  return std::vector<char>(bytes.begin(), bytes.end());
}

PPE_DECL State load_file(const std::filesystem::path& path) {
  return pickle_loads(read_file_bytes(path), path.string());
}

}  // namespace ppe
