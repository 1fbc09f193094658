// Fuzz target: safetensors files (tests/fuzz/README.md), read by
// ppe::serialization::safetensors_loads, the checks of load_safetensors. An
// input that reads is written back with safetensors_dumps and read again: the
// same names, dtypes, shapes and bytes must come back (the writer's order may
// differ from the file's). Only the reader's documented errors are caught:
// CorruptFileError, and std::invalid_argument for a dtype this LibTorch lacks.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ppe/serialization/safetensors.hpp>

namespace {

namespace ser = ppe::serialization;

void check(bool ok) {
  if (!ok) std::abort();  // a round trip that lost something: a finding
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ser::SafetensorsFile file;
  try {
    file = ser::safetensors_loads(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
  } catch (const ser::CorruptFileError&) {
    return 0;
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string bytes = ser::safetensors_dumps(file.tensors, file.metadata);
  const ser::SafetensorsFile again = ser::safetensors_loads(bytes, "the written data");
  check(again.metadata == file.metadata);
  check(again.tensors.size() == file.tensors.size());
  for (const auto& [name, t] : file.tensors) {
    const at::Tensor* u = again.find(name);
    check(u != nullptr);
    check(u->scalar_type() == t.scalar_type() && u->sizes() == t.sizes());
    const auto n = static_cast<std::size_t>(t.numel()) * t.element_size();
    check(n == 0 || std::memcmp(u->data_ptr(), t.data_ptr(), n) == 0);
  }
  return 0;
}
