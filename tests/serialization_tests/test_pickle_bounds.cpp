// Archives whose declared sizes do not fit their bytes are refused before
// LibTorch's reader allocates for them (serialization/detail/zip_records.hpp,
// serialization/detail/pickle_check.hpp): each case builds a small archive by
// hand (a stored zip, its pickle program opcode by opcode) that today's
// LibTorch reader would trust, and checks the error names the file and the
// field.
#include "ppe_test.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/crc32.hpp"
#include "ppe/serialization/detail/pickle_check.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_serialization_tests_test_pickle_bounds {

using ppe::State;
using ppe::serialization::CorruptFileError;
using Records = std::vector<std::pair<std::string, std::string>>;

namespace {

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) out += static_cast<char>((v >> (8 * k)) & 0xff);
}

/// A zip archive of stored records, as torch.save lays them out (no comment).
/// `method`: the compression method written for every record (0: stored).
std::vector<char> zip(const Records& records, int method = 0) {
  std::string out, directory;
  for (const auto& [name, data] : records) {
    const std::uint32_t crc = ppe::detail::crc32(0, data.data(), data.size());
    const std::size_t local = out.size();
    out += std::string("PK\x03\x04", 4);
    put_le(out, 20, 2), put_le(out, 0, 2), put_le(out, method, 2), put_le(out, 0, 4);
    put_le(out, crc, 4), put_le(out, data.size(), 4), put_le(out, data.size(), 4);
    put_le(out, name.size(), 2), put_le(out, 0, 2);
    out += name + data;
    directory += std::string("PK\x01\x02", 4);
    put_le(directory, 20, 2), put_le(directory, 20, 2), put_le(directory, 0, 2), put_le(directory, method, 2);
    put_le(directory, 0, 4), put_le(directory, crc, 4), put_le(directory, data.size(), 4);
    put_le(directory, data.size(), 4), put_le(directory, name.size(), 2), put_le(directory, 0, 2);
    put_le(directory, 0, 2), put_le(directory, 0, 2), put_le(directory, 0, 2), put_le(directory, 0, 4);
    put_le(directory, local, 4);
    directory += name;
  }
  const std::size_t at = out.size();
  out += directory;
  out += std::string("PK\x05\x06", 4);
  put_le(out, 0, 4), put_le(out, records.size(), 2), put_le(out, records.size(), 2);
  put_le(out, directory.size(), 4), put_le(out, at, 4), put_le(out, 0, 2);
  return std::vector<char>(out.begin(), out.end());
}

/// An archive `a/` with the program as data.pkl, the version record, and
/// the storages `data/<key>`.
std::vector<char> archive(const std::string& program, const Records& storages = {}, int method = 0) {
  Records records{{"a/data.pkl", program}};
  for (const auto& [key, data] : storages) records.emplace_back("a/data/" + key, data);
  records.emplace_back("a/version", "3\n");
  return zip(records, method);
}

// ---- pickle opcodes (protocol 2) ---------------------------------------------
const std::string kProto("\x80\x02", 2);
std::string binint1(int v) { return std::string("K") + static_cast<char>(v); }
std::string long1(std::int64_t v) {
  std::string s("\x8a\x08", 2);
  put_le(s, static_cast<std::uint64_t>(v), 8);
  return s;
}
std::string str(const std::string& text) {
  std::string s = "X";
  put_le(s, text.size(), 4);
  return s + text;
}
/// A tuple of ints, as torch.save writes a tensor's sizes or strides.
std::string ints(const std::vector<std::int64_t>& values) {
  std::string s = "(";
  for (const auto v : values) s += long1(v);
  return s + "t";
}
/// A float tensor: _rebuild_tensor_v2 over storage `key` of `numel` elements.
std::string tensor(const std::string& key, std::int64_t numel, const std::vector<std::int64_t>& sizes,
                   const std::vector<std::int64_t>& strides, std::int64_t offset = 0) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + str("storage") + "ctorch\nFloatStorage\n" + str(key) + str("cpu") +
         long1(numel) + "tQ" + long1(offset) + ints(sizes) + ints(strides) +
         "\x89" "ccollections\nOrderedDict\n)R" "tR";
}
/// `{"x": <value>}` as a whole program.
std::string program_of(const std::string& value) { return kProto + "}(" + str("x") + value + "u."; }

std::string floats(int n) { return std::string(static_cast<std::size_t>(4 * n), '\0'); }

/// The message of the CorruptFileError that loading `bytes` as "bad.pt" raises ("" if none).
std::string error_of(const std::vector<char>& bytes) {
  try {
    (void)ppe::serialization::pickle_loads(bytes, "bad.pt");
  } catch (const CorruptFileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a hand-made archive loads: the helpers write what torch.save writes") {
  const State s = ppe::serialization::pickle_loads(
      archive(program_of(tensor("0", 6, {2, 3}, {3, 1})), {{"0", floats(6)}}));
  CHECK(ppe::serialization::state_equal(s.at("x"), State(torch::zeros({2, 3}))));
  // A view: the second column of a 3 x 4 storage, from offset 1.
  const State v = ppe::serialization::pickle_loads(
      archive(program_of(tensor("0", 12, {3}, {4}, 1)), {{"0", floats(12)}}));
  CHECK(v.at("x").as_tensor().sizes() == torch::IntArrayRef{3});
}

TEST_CASE("sizes declared by the zip directory are checked against the file") {
  const std::vector<char> good = archive(program_of(binint1(1)));
  REQUIRE(ppe::serialization::pickle_loads(good).at("x") == State(1));
  SUBCASE("a record compressed (torch.save stores them)") {
    CHECK(error_of(archive(program_of(binint1(1)), {}, 8)).find("bad.pt: zip record 'a/data.pkl' is compressed (zip method 8)") !=
          std::string::npos);
  }
  SUBCASE("a record declaring more bytes than the file has") {
    std::vector<char> bad = good;
    // The first directory entry's uncompressed and compressed sizes (offsets 20 and 24 in it).
    const std::string all(bad.begin(), bad.end());
    const std::size_t entry = all.find(std::string("PK\x01\x02", 4));
    for (std::size_t k = 0; k < 2; ++k) {
      bad[entry + 20 + 4 * k] = '\xff', bad[entry + 21 + 4 * k] = '\xff', bad[entry + 22 + 4 * k] = '\xff';
      bad[entry + 23 + 4 * k] = '\x7f';
    }
    const std::string e = error_of(bad);
    CHECK(e.find("bad.pt: zip record 'a/data.pkl' declares 2147483647 bytes at offset") != std::string::npos);
  }
  SUBCASE("two records whose names differ only in case (LibTorch's reader finds names ignoring case)") {
    // Found by fuzzing: data/2 was read as the empty datA/2, and a tensor of
    // one element had no data.
    const std::vector<char> bad = zip({{"a/data.pkl", program_of(tensor("2", 1, {}, {}))},
                                       {"a/datA/2", ""},
                                       {"a/data/2", floats(1)},
                                       {"a/version", "3\n"}});
    CHECK(error_of(bad).find("zip records 'a/datA/2' and 'a/data/2' have one name to LibTorch's reader") !=
          std::string::npos);
  }
  SUBCASE("a directory declaring more records than it holds") {
    std::vector<char> bad = good;
    const std::size_t end = bad.size() - 22;
    bad[end + 10] = '\xff', bad[end + 11] = '\x7f';
    CHECK(error_of(bad).find("declares 32767 records") != std::string::npos);
  }
}

TEST_CASE("sizes declared by the pickle program are checked before LibTorch allocates") {
  SUBCASE("a string longer than the program (the 84 s / 18 GB file of the issue)") {
    std::string program = program_of(str("abc"));
    // "abc"'s length, 3, becomes 0x7ffffff0: LibTorch would allocate it before reading.
    const std::size_t at = program.find(std::string("X\x03\x00\x00\x00", 5));
    REQUIRE(at != std::string::npos);
    program.replace(at + 1, 4, std::string("\xf0\xff\xff\x7f", 4));
    CHECK(error_of(archive(program)).find("bad.pt: data.pkl, opcode at offset " + std::to_string(at) +
                                          ": BINUNICODE's text needs 2147483632 bytes, the program has") != std::string::npos);
  }
  SUBCASE("memo slots: checked in order, and a Python program's slots renumbered in order") {
    // LibTorch's readers differ on slots out of order (older ones append
    // each PUT, newer ones grow the table to the slot): the check wants
    // 0, 1, 2, ...; ppe's rewrite of Python's programs numbers them so, with
    // the meaning Python gives them.
    ppe::detail::PickleCheckContext context;
    context.record_size = [](std::string_view) { return std::optional<std::uint64_t>(); };
    context.storage_item_size = [](std::string_view) { return std::size_t{0}; };
    context.is_qscheme = [](std::string_view) { return false; };
    context.source = "bad.pt";
    const auto check = [&](const std::string& program) {
      try {
        (void)ppe::detail::check_pickle_program(program, context);
      } catch (const CorruptFileError& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    CHECK(check(kProto + "}r\xff\xff\xff\xff.").find("memo PUT to slot 4294967295, beyond the 9 bytes") !=
          std::string::npos);
    CHECK(check(kProto + "}q\x01.").find("memo PUT to slot 1, expected the next slot, 0") != std::string::npos);
    const std::string out_of_order = kProto + "(" + str("a") + "q\x05" + str("b") + "q\x02h\x05h\x02l.";
    CHECK(ppe::serialization::pickle_loads(archive(out_of_order)) == State::list({"a", "b", "a", "b"}));
  }
  SUBCASE("a memo slot read before it was written") {
    CHECK(error_of(archive(kProto + "h\x05.")).find("memo GET of slot 5, which nothing was put in") != std::string::npos);
  }
  SUBCASE("a storage declaring more elements than its record holds") {
    const std::string e = error_of(archive(program_of(tensor("0", std::int64_t{1} << 33, {2}, {1})), {{"0", floats(12)}}));
    CHECK(e.find("bad.pt: data.pkl, opcode at offset") != std::string::npos);
    CHECK(e.find("storage '0' declares 8589934592 elements of 4 bytes, its record holds 48 bytes") != std::string::npos);
  }
  SUBCASE("a storage without its record") {
    CHECK(error_of(archive(program_of(tensor("7", 3, {3}, {1})))).find("storage '7' has no record data/7") !=
          std::string::npos);
  }
  SUBCASE("one storage declared with two sizes (LibTorch keeps the first)") {
    const std::string two = kProto + "(" + tensor("0", 2, {2}, {1}) + tensor("0", 12, {12}, {1}) + "l.";
    CHECK(error_of(archive(two, {{"0", floats(12)}})).find("storage '0' declares 48 bytes here and 8 bytes where it first appears") !=
          std::string::npos);
  }
  SUBCASE("a tensor reaching past its storage") {
    CHECK(error_of(archive(program_of(tensor("0", 12, {100}, {1})), {{"0", floats(12)}}))
              .find("a tensor reaches element 100 of its storage, which holds 12 elements") != std::string::npos);
    CHECK(error_of(archive(program_of(tensor("0", 12, {3, 4}, {4, 1}, 1)), {{"0", floats(12)}}))
              .find("reaches element 13") != std::string::npos);
  }
  SUBCASE("a tensor whose sizes and strides overflow") {
    CHECK(error_of(archive(program_of(tensor("0", 12, {std::int64_t{1} << 40, std::int64_t{1} << 40}, {1, 1})),
                           {{"0", floats(12)}}))
              .find("the tensor's sizes and strides overflow 64 bits") != std::string::npos);
    CHECK(error_of(archive(program_of(tensor("0", 12, {-1}, {1})), {{"0", floats(12)}}))
              .find("size 0 is -1, expected a non-negative number") != std::string::npos);
  }
  SUBCASE("a dictionary over an odd number of values (LibTorch reads past its stack)") {
    CHECK(error_of(archive(kProto + "(" + binint1(1) + binint1(2) + binint1(3) + "d.")).find("DICT over 3 values") !=
          std::string::npos);
  }
  SUBCASE("a MARK whose values were taken by a later opcode") {
    CHECK(error_of(archive(kProto + binint1(1) + binint1(2) + "(\x86t.")).find("TUPLE's MARK was set at stack size 2") !=
          std::string::npos);
  }
  SUBCASE("an opcode LibTorch does not read") {
    CHECK(error_of(archive(kProto + "I1\n.")).find("opcode 0x49 is not one LibTorch's reader knows") != std::string::npos);
  }
  SUBCASE("a program without STOP, or leaving two values") {
    CHECK(error_of(archive(kProto + binint1(1))).find("the program ends without STOP") != std::string::npos);
    CHECK(error_of(archive(kProto + binint1(1) + binint1(2) + ".")).find("STOP leaves 2 values on the stack, expected 1") !=
          std::string::npos);
  }
  SUBCASE("sparse and quantized tensors are refused by name") {
    CHECK(error_of(archive(program_of("ctorch._utils\n_rebuild_sparse_tensor\n)R")))
              .find("it holds torch._utils._rebuild_sparse_tensor: sparse tensors are not read from files") != std::string::npos);
    CHECK(error_of(archive(program_of("ctorch._utils\n_rebuild_qtensor\n)R"))).find("quantized tensors are not read") !=
          std::string::npos);
  }
}

TEST_CASE("the values a program makes: no cycle, bounded nesting, bounded copies of shared parts") {
  SUBCASE("a list that holds itself") {
    CHECK(error_of(archive(kProto + std::string("]q\x00(h\x00" "e.", 8))).find("a list holds itself (a cycle)") != std::string::npos);
  }
  // Lists nested `levels` deep: ] ( ] ( ... ] e e ... (each APPENDS puts the
  // list above into the one below).
  const auto nested = [](std::size_t levels) {
    std::string p = kProto;
    for (std::size_t k = 1; k < levels; ++k) p += "](";
    p += "]";
    p += std::string(levels - 1, 'e');
    return p + ".";
  };
  SUBCASE("nesting up to kMaxPickleDepth loads, one level more is refused") {
    State s = ppe::serialization::pickle_loads(archive(nested(ppe::detail::kMaxPickleDepth)));
    std::size_t depth = 1;
    for (const State* p = &s; !p->as_list().empty(); p = &p->as_list().front()) ++depth;
    CHECK(depth == ppe::detail::kMaxPickleDepth);
    CHECK(error_of(archive(nested(ppe::detail::kMaxPickleDepth + 1))).find("its values nest 1001 levels deep, more than the 1000 ppe reads") !=
          std::string::npos);
  }
  SUBCASE("a list of two references to the list before it, 40 times: 2^40 values once copied") {
    std::string p = kProto + std::string("](]q\x00", 5);
    for (int k = 0; k < 40; ++k) {
      p += "(h" + std::string(1, static_cast<char>(k)) + "h" + std::string(1, static_cast<char>(k)) + "lq";
      p += static_cast<char>(k + 1);
    }
    CHECK(error_of(archive(p + "e.")).find("its value repeats shared parts to more than 1048576 values") != std::string::npos);
  }
}

TEST_CASE("Python's integers beyond 32 bits (LONG1 of fewer than 8 bytes) load") {
  // 2^40 and -2^33 as Python's pickler writes them: as few bytes as the two's complement needs.
  const std::string p = kProto + "(" + std::string("\x8a\x06\x00\x00\x00\x00\x00\x01", 8) +
                        std::string("\x8a\x05\x00\x00\x00\x00\xfe", 7) + std::string("\x8a\x00", 2) + "l.";
  const State s = ppe::serialization::pickle_loads(archive(p));
  CHECK(s == State::list({std::int64_t{1} << 40, -(std::int64_t{1} << 33), 0}));
}

}  // namespace ppe_test_serialization_tests_test_pickle_bounds
