// The safetensors format (ppe::serialization::load_safetensors and friends;
// not in PPE): the reference implementation's byte layout, round trips of
// every dtype this LibTorch has, the mapping and its lifetime, writers, every
// check of a hostile file with its message, and files exchanged with Python
// (built there from the published specification with the standard library:
// Debian has no safetensors package). Without a Python with torch the Python
// half is skipped with a message.
#include "ppe_test.hpp"
#include "python.hpp"
#include "temp_dir.hpp"

#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>

#include <ppe/detail/torch_compat/safetensors_dtypes.hpp>
#include <ppe/serialization/pickle.hpp>
#include <ppe/serialization/safetensors.hpp>
#include <ppe/writing/simple_writer.hpp>
#include <ppe/writing/thread_writer.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_serialization_tests_test_safetensors {

namespace fs = std::filesystem;
namespace ser = ppe::serialization;
using ppe_test::TempDir;

namespace {

std::string u64(std::uint64_t n) { return std::string(reinterpret_cast<const char*>(&n), 8); }

// A file of the header `json` (its length prefixed) and `data`.
std::string file_of(const std::string& json, const std::string& data = {}) { return u64(json.size()) + json + data; }

bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  const auto n = static_cast<std::size_t>(x.numel()) * x.element_size();
  return n == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), n) == 0;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// The message of the CorruptFileError that reading `bytes` raises ("" when none).
std::string corrupt_message(const std::string& bytes) {
  try {
    (void)ser::safetensors_loads(bytes, "bad.safetensors");
  } catch (const ser::CorruptFileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: the reference implementation's layout, byte for byte") {
  // Tensors by descending dtype alignment (F32 before U8), then by name; the
  // header as compact JSON padded with spaces to a multiple of 8 bytes.
  const ser::NamedTensors tensors{{"small", at::tensor({1, 2, 3}, at::kByte)},
                                  {"b", at::tensor({1.0f, 2.0f})},
                                  {"a", at::tensor({3.0f})}};
  const std::string bytes = ser::safetensors_dumps(tensors);
  const std::string json =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
      R"("small":{"dtype":"U8","shape":[3],"data_offsets":[12,15]}})";
  // 166 bytes of JSON: 2 spaces make 168, a multiple of 8.
  REQUIRE(json.size() == 166);
  float a = 3, b[2] = {1, 2};
  const std::string data = std::string(reinterpret_cast<const char*>(&a), 4) +
                           std::string(reinterpret_cast<const char*>(b), 8) + std::string("\x01\x02\x03", 3);
  CHECK(bytes == file_of(json + "  ", data));
  // Metadata comes first (keys sorted); 78 bytes, padded to 80.
  const std::string padded = ser::safetensors_dumps({{"x", at::tensor({7}, at::kByte)}}, {{"k", "v"}});
  const std::string json2 = R"({"__metadata__":{"k":"v"},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  REQUIRE(json2.size() == 78);
  CHECK(padded == file_of(json2 + "  ", "\x07"));
  // Nothing at all: "{}" and six spaces.
  CHECK(ser::safetensors_dumps({}) == file_of("{}      "));
}

TEST_CASE("safetensors: every dtype this LibTorch has round-trips, with shapes, scalars, empty and strided tensors") {
  ser::NamedTensors tensors{
      {"f64", at::randn({2, 3}, at::kDouble)},   {"f32", at::randn({4})},
      {"f16", at::randn({3}).to(at::kHalf)},     {"bf16", at::randn({2, 2}).to(at::kBFloat16)},
      {"i64", at::arange(-3, 3)},                {"i32", at::arange(6, at::kInt).reshape({2, 3})},
      {"i16", at::tensor({-300, 300}, at::kShort)}, {"i8", at::tensor({-1, 1}, at::kChar)},
      {"u8", at::tensor({0, 255}, at::kByte)},   {"bool", at::tensor({1, 0, 1}).to(at::kBool)},
      {"c64", at::randn({2}, at::kComplexFloat)}, {"scalar", at::tensor(2.5)},
      {"empty", at::zeros({0, 3})},              {"strided", at::arange(12.0).reshape({3, 4}).t()},
  };
  // The types only newer LibTorch versions have, where this one has them.
  for (const auto name : ppe::detail::compat::kSafetensorsDtypes)
    if (const auto type = ppe::detail::compat::scalar_type_of_safetensors(name);
        type && (name.starts_with("F8") || name.starts_with("U1") || name.starts_with("U3") || name.starts_with("U6")))
      tensors.emplace_back("x." + std::string(name), at::zeros({8}, at::kByte).view(*type));
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"note", "é\n\"quoted\""}};
  const auto file = ser::safetensors_loads(ser::safetensors_dumps(tensors, metadata));
  CHECK(file.metadata == metadata);
  REQUIRE(file.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    const at::Tensor* got = file.find(name);
    REQUIRE(got != nullptr);
    CHECK(same_bytes(*got, t));
  }
  CHECK(file.find("absent") == nullptr);
}

TEST_CASE("safetensors: a large file is mapped; its tensors outlive the file object and never write to the file") {
  TempDir dir;
  const fs::path path = dir.path / "big.safetensors";
  const at::Tensor w = at::randn({512, 1024});  // 2 MiB: mapped by default
  write_all(path, ser::safetensors_dumps({{"w", w}, {"b", at::arange(5.0)}}));
  const std::string before = read_all(path);
  auto mapped = [&] {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.find(path.string()) != std::string::npos) return true;
    return false;
  };
  at::Tensor kept;
  {
    const auto file = ser::load_safetensors(path);
    kept = *file.find("w");
    CHECK(mapped());
  }
  CHECK(mapped());  // the tensor keeps the mapping
  CHECK(same_bytes(kept, w));
  kept.mul_(2);  // copy-on-write: the file stays as it was
  CHECK(read_all(path) == before);
  kept = at::Tensor();
  CHECK(!mapped());
  // Read instead of mapped: the same tensors.
  const auto read = ser::load_safetensors(path, ser::SafetensorsReadOptions().mapping(ser::SafetensorsMapping::Read));
  CHECK(same_bytes(*read.find("w"), w));
  CHECK(!mapped());
  // A small file mapped on request.
  write_all(dir.path / "small", ser::safetensors_dumps({{"s", at::arange(3)}}));
  const auto small =
      ser::load_safetensors(dir.path / "small", ser::SafetensorsReadOptions().mapping(ser::SafetensorsMapping::Map));
  CHECK(same_bytes(*small.find("s"), at::arange(3)));
}

TEST_CASE("safetensors: a tensor at an offset its type cannot be read from in place is copied") {
  // Another writer's order: 3 bytes of U8, then an F32 at offset 3 (from the data's start).
  float v = 1.5f;
  const std::string json = R"({"x":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                           R"("y":{"dtype":"F32","shape":[1],"data_offsets":[3,7]}})";
  TempDir dir;
  write_all(dir.path / "f", file_of(json, "abc" + std::string(reinterpret_cast<const char*>(&v), 4)));
  for (const auto mapping : {ser::SafetensorsMapping::Map, ser::SafetensorsMapping::Read}) {
    const auto file = ser::load_safetensors(dir.path / "f", ser::SafetensorsReadOptions().mapping(mapping));
    REQUIRE(file.tensors.size() == 2);
    CHECK(file.tensors[0].first == "x");
    CHECK(file.tensors[1].second.item<float>() == 1.5f);
  }
}

TEST_CASE("safetensors: through ppe's writers, atomically, also from a writer's thread") {
  TempDir dir;
  const ser::NamedTensors tensors{{"w", at::randn({3, 3})}, {"n", at::arange(4)}};
  ppe::writing::SimpleWriter simple(dir.path);
  simple("streamed.safetensors", [&](std::ostream& os) { ser::write_safetensors(os, tensors); });
  ppe::writing::ThreadWriter threaded(dir.path);
  threaded("owned.safetensors", ppe::writing::owned_bytes(ser::safetensors_dumps(tensors)));
  threaded.finalize();
  for (const char* name : {"streamed.safetensors", "owned.safetensors"}) {
    CAPTURE(name);
    const auto file = ser::load_safetensors(dir.path / name);
    CHECK(same_bytes(*file.find("w"), tensors[0].second));
    CHECK(same_bytes(*file.find("n"), tensors[1].second));
  }
  CHECK(read_all(dir.path / "streamed.safetensors") == read_all(dir.path / "owned.safetensors"));
}

TEST_CASE("safetensors: what the writer refuses, naming the tensor") {
  auto refused = [](const ser::NamedTensors& t, const std::map<std::string, std::string>& m = {}) {
    try {
      (void)ser::safetensors_dumps(t, m);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refused({{"a", at::zeros({1})}, {"a", at::zeros({1})}}).find("two tensors are named 'a'") != std::string::npos);
  CHECK(refused({{"__metadata__", at::zeros({1})}}).find("may not be named '__metadata__'") != std::string::npos);
  CHECK(refused({{"u", at::Tensor()}}).find("tensor 'u' is undefined") != std::string::npos);
  CHECK(refused({{"c", at::zeros({1}, at::kComplexDouble)}}).find("tensor 'c' has dtype ComplexDouble, which the "
                                                                   "safetensors format has no name for") !=
        std::string::npos);
  CHECK(refused({{"bad\xff", at::zeros({1})}}).find("is not valid UTF-8") != std::string::npos);
  CHECK(refused({}, {{"k", "\xc3"}}).find("the metadata value") != std::string::npos);
}

TEST_CASE("safetensors: every size the header declares is checked before anything is allocated") {
  const std::string f4 = std::string(4, '\0');
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases{
      {"shorter than the length", "abc", "the file has 3 bytes, fewer than the 8 of the header's length"},
      {"a header past the file", u64(100) + "{}", "the header's length is 100 bytes, the file holds 2 after it"},
      {"a header over the maximum", u64(std::uint64_t{1} << 40) + "{}",
       "the header's length is 1099511627776 bytes, more than the most (100000000)"},
      {"no JSON", file_of("{\"a\":"), "no valid JSON at byte"},
      {"not an object", file_of("[1,2]"), "the header is an array, not a JSON object"},
      {"an entry not an object", file_of(R"({"a":3})"), "the entry 'a' is a number, not an object"},
      {"metadata not strings", file_of(R"({"__metadata__":{"k":1}})"),
       "__metadata__: the value of 'k' is a number, not a string"},
      {"a name twice", file_of(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                               R"("a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})"),
       "the name 'a' is there twice"},
      {"a field missing", file_of(R"({"a":{"dtype":"U8","shape":[1]}})"), "tensor 'a' has no 'data_offsets'"},
      {"a negative dimension", file_of(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})"),
       "tensor 'a': 'shape' holds a negative number, not a dimension"},
      {"a dtype that is no string", file_of(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,1]}})"),
       "tensor 'a': 'dtype' is not a string"},
      {"three offsets", file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})"),
       "'data_offsets' has more than 2 numbers"},
      {"too deep", file_of(R"({"a":{"x":)" + std::string(70, '[') + std::string(70, ']') + "}}"),
       "nested deeper than 64 levels"},
      {"an unknown dtype", file_of(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", std::string(16, '\0')),
       "tensor 'a': unknown dtype 'F128'"},
      {"a range past the data", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "ab"),
       "tensor 'a': data_offsets [0, 4] reach past the data, which holds 2 bytes"},
      {"a shape bigger than its bytes", file_of(R"({"a":{"dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,4]}})", f4),
       "tensor 'a': shape [1000000, 1000000] of F32 makes 4000000000000 bytes, its data_offsets [0, 4] hold 4"},
      {"an element count past 64 bits", file_of(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", f4),
       "has more elements than a tensor can"},
      {"a hole", file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", f4),
       "bytes [0, 2) of the data belong to no tensor"},
      {"an overlap", file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", "abc"),
       "tensor 'b': data_offsets [1, 3] overlap tensor 'a' (data_offsets [0, 2])"},
      {"bytes after the last tensor", file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", f4),
       "the tensors' bytes end at byte 2 of the data, which holds 4 bytes"},
      {"a bool that is neither", file_of(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", "\x01\x07"),
       "tensor 'a': BOOL element 1 is byte 7 (expected 0 or 1)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string message = corrupt_message(c.bytes);
    CHECK(message.starts_with("ppe: cannot read bad.safetensors (safetensors): "));
    CHECK(message.find(c.message) != std::string::npos);
    CAPTURE(message);
  }
  // An unknown field of an entry is ignored, as the reference implementation does.
  const auto file = ser::safetensors_loads(
      file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":{"x":[1,null,"s"]}}})", "\x05"));
  CHECK(file.tensors.at(0).second.item<std::uint8_t>() == 5);
  // A file that cannot be read names the file.
  CHECK_THROWS_WITH_AS(ser::load_safetensors("/nonexistent/x.safetensors"),
                       doctest::Contains("/nonexistent/x.safetensors"), std::system_error);
}

TEST_CASE("safetensors: files built by the specification in Python load bit for bit; ppe's files are read there") {
  if (ppe_test::python_with_torch().empty()) {
    MESSAGE("no Python with torch (python3-torch): skipping the Python cross-check of safetensors");
    return;
  }
  TempDir dir;
  // The writer of the specification with the standard library: tensors by
  // descending dtype alignment, then name; compact JSON, keys sorted in the
  // metadata; spaces to 8 bytes. torch.save of the same tensors beside it.
  const std::string script = R"(
import json, struct, sys, torch
RANK = ["BOOL","F4","F6_E2M3","F6_E3M2","U8","I8","F8_E5M2","F8_E4M3","F8_E8M0","F8_E4M3FNUZ","F8_E5M2FNUZ",
        "I16","U16","F16","BF16","I32","U32","F32","C64","F64","I64","U64"]
NAME = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
        torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
def raw(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
def write(path, tensors, metadata):
    header, data = {"__metadata__": dict(sorted(metadata.items()))}, b""
    for name, t in sorted(tensors.items(), key=lambda kv: (-RANK.index(NAME[kv[1].dtype]), kv[0])):
        header[name] = {"dtype": NAME[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw(t))]}
        data += raw(t)
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        dtype = {v: k for k, v in NAME.items()}[e["dtype"]]
        begin, end = e["data_offsets"]
        chunk = bytearray(b[8 + n + begin:8 + n + end])
        flat = torch.frombuffer(chunk, dtype=torch.uint8) if chunk else torch.zeros(0, dtype=torch.uint8)
        out[name] = flat.view(dtype).reshape(e["shape"]) if chunk else torch.zeros(e["shape"], dtype=dtype)
    return out, meta
if sys.argv[1] == "write":
    g = torch.Generator().manual_seed(0)
    t = {"layer.weight": torch.randn(3, 4, generator=g), "layer.bias": torch.randn(4, generator=g, dtype=torch.float64),
         "half": torch.randn(5, generator=g).half(), "bf": torch.randn(2, 2, generator=g).bfloat16(),
         "idx": torch.arange(-3, 3), "i32": torch.arange(6, dtype=torch.int32).reshape(2, 3),
         "i16": torch.tensor([-300, 300], dtype=torch.int16), "i8": torch.tensor([-1, 1], dtype=torch.int8),
         "u8": torch.tensor([0, 255], dtype=torch.uint8), "mask": torch.tensor([True, False, True]),
         "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 3)}
    write(sys.argv[2] + "/ref.safetensors", t, {"format": "pt", "made by": "python"})
    torch.save(t, sys.argv[2] + "/ref.pt")
else:
    got, meta = read(sys.argv[2] + "/ppe.safetensors")
    want = torch.load(sys.argv[2] + "/ref.pt")
    assert meta == {"format": "pt", "made by": "python"}, meta
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        assert raw(got[k]) == raw(want[k]), k
    print("python read ppe's file: ok")
)";
  const auto wrote = ppe_test::run_python(dir, script, "write '" + dir.path.string() + "'");
  REQUIRE_MESSAGE(wrote.status == 0, wrote.text);
  const auto file = ser::load_safetensors(dir.path / "ref.safetensors");
  const ppe::State reference = ser::load_file(dir.path / "ref.pt");
  CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"made by", "python"}});
  REQUIRE(file.tensors.size() == reference.as_dict().size());
  ser::NamedTensors from_pickle;
  for (const auto& [name, value] : reference.as_dict()) {
    CAPTURE(name);
    const at::Tensor* got = file.find(name);
    REQUIRE(got != nullptr);
    CHECK(same_bytes(*got, value.as_tensor()));
    from_pickle.emplace_back(name, value.as_tensor());
  }
  // The same tensors, in another order, give the same bytes.
  const std::string written = ser::safetensors_dumps(from_pickle, file.metadata);
  CHECK(written == read_all(dir.path / "ref.safetensors"));
  write_all(dir.path / "ppe.safetensors", written);
  const auto read = ppe_test::run_python(dir, script, "read '" + dir.path.string() + "'");
  CHECK_MESSAGE(read.status == 0, read.text);
}

}  // namespace ppe_test_serialization_tests_test_safetensors
