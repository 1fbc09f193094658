// Fuzz target: a pickle program (data.pkl alone) through ppe's own readers of
// it, which run before LibTorch's: the rewriter of Python's encoding
// (rewrite_python_pickle), the finder of unsupported globals and the bounds
// check (check_pickle_program), with an archive whose records data/0 ..
// data/9 hold 64 bytes each. No LibTorch is called: fast, so deep.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <ppe/serialization/detail/pickle_check.hpp>
#include <ppe/serialization/python_pickle.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view program(reinterpret_cast<const char*>(data), size);
  ppe::detail::PickleCheckContext context;
  context.record_size = [](std::string_view key) -> std::optional<std::uint64_t> {
    if (key.size() == 1 && key[0] >= '0' && key[0] <= '9') return 64;
    return std::nullopt;
  };
  context.storage_item_size = [](std::string_view name) -> std::size_t {
    if (name == "Float" || name == "Int") return 4;
    if (name == "Double" || name == "Long") return 8;
    if (name == "Half" || name == "BFloat16") return 2;
    if (name == "Bool" || name == "Byte" || name == "Char") return 1;
    return 0;
  };
  context.is_qscheme = [](std::string_view name) { return name == "per_tensor_affine"; };
  context.source = "the fuzz input";
  (void)ppe::detail::find_unsupported_global(program);
  const std::optional<std::string> rewritten = ppe::detail::rewrite_python_pickle(program);
  for (const std::string_view p : {program, rewritten ? std::string_view(*rewritten) : program}) {
    try {
      (void)ppe::detail::check_pickle_program(p, context);
    } catch (const ppe::serialization::CorruptFileError&) {
    }
  }
  return 0;
}
