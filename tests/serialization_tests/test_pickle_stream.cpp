// The streaming archive (serialization/pickle.hpp, detail/zip_writer.hpp,
// detail/archive_source.hpp, seal.hpp): write_pickle streams a state into a
// stream with the bytes pickle_dumps returns, always the same bytes for one
// state, each record 64-byte aligned, zip64 where needed; load_file reads a
// file through its directory and records, never whole, and the seal still
// catches any changed byte; a snapshot's state shares the optimizers' tensors
// instead of cloning them.
#include "ppe_test.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "ppe/detail/crc32.hpp"
#include "ppe/serialization/detail/archive_source.hpp"
#include "ppe/serialization/detail/zip_records.hpp"
#include "python.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_serialization_tests_test_pickle_stream {

namespace fs = std::filesystem;
using ppe::State;
using ppe::serialization::CorruptFileError;
using ppe_test::TempDir;

namespace {

/// Tensors of several kinds: dtypes, a view sharing its storage with another
/// tensor (one record for both), an empty tensor, a non-contiguous one.
State sample_state() {
  torch::manual_seed(0);
  const torch::Tensor base = torch::randn({4, 5});
  return State::dict({{"weights", base},
                      {"row", base[1]},
                      {"transposed", base.t()},
                      {"ints", torch::arange(7, torch::kLong)},
                      {"flags", torch::tensor({true, false, true})},
                      {"half", torch::ones({3}, torch::kHalf)},
                      {"empty", torch::empty({0, 3})},
                      {"nested", State::list({State::dict({{"t", torch::full({2}, 2.5, torch::kDouble)}}), 7, "x"})},
                      {"count", 3},
                      {"rate", 0.125}});
}

std::vector<char> streamed(const State& s) {
  std::ostringstream os;
  ppe::serialization::write_pickle(os, s);
  const std::string bytes = os.str();
  return std::vector<char>(bytes.begin(), bytes.end());
}

/// A stream buffer that takes `limit` bytes, then fails (a full disk).
class FailingSink : public std::streambuf {
 public:
  explicit FailingSink(std::size_t limit) : limit_(limit) {}
  std::size_t taken = 0;

 protected:
  int_type overflow(int_type ch) override {
    if (taken >= limit_) return traits_type::eof();
    ++taken;
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char*, std::streamsize n) override {
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(n), limit_ - taken);
    taken += k;
    return static_cast<std::streamsize>(k);
  }

 private:
  std::size_t limit_;
};

}  // namespace

TEST_CASE("write_pickle streams the bytes pickle_dumps returns, the same bytes for one state every time") {
  const State s = sample_state();
  const std::vector<char> dumped = ppe::serialization::pickle_dumps(s);
  CHECK(streamed(s) == dumped);
  CHECK(ppe::serialization::pickle_dumps(s) == dumped);  // no time stamp: archives of one state are equal
  CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(dumped), s));
  // The storage shared by `weights`, `row` and `transposed` is one record.
  const ppe::detail::MemorySource source(dumped.data(), dumped.size(), "the archive");
  const auto records = ppe::detail::zip_records(source, dumped.size() - 22 - 18);
  std::vector<std::string> names;
  for (const auto& r : records) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"archive/data.pkl", "archive/byteorder", "archive/data/0", "archive/data/1",
                                          "archive/data/2", "archive/data/3", "archive/data/4", "archive/data/5",
                                          "archive/version"});
  // Every record's data start at a multiple of 64 (a reader can map them).
  for (const auto& r : records) CHECK_MESSAGE(r.offset % 64 == 0, r.name);
}

TEST_CASE("load_file reads a streamed file; a byte changed anywhere is corruption, named with the file") {
  TempDir dir;
  const State s = sample_state();
  const fs::path file = dir.path / "state.pt";
  {
    std::ofstream out(file, std::ios::binary);
    ppe::serialization::write_pickle(out, s);
  }
  CHECK(ppe::serialization::state_equal(ppe::serialization::load_file(file), s));
  const std::vector<char> good = ppe_test::read_bytes(file);
  const ppe::detail::MemorySource source(good.data(), good.size(), "the archive");
  const auto records = ppe::detail::zip_records(source, good.size() - 22 - 18);
  // One byte in a tensor's record, in the program, in a local header, in
  // the directory and in the end record: each is the seal's error.
  const std::uint64_t places[] = {records[2].offset + 3, records[0].offset + 10, records[2].offset - 40,
                                  good.size() - 40 - 30, good.size() - 18 - 10};
  for (const std::uint64_t at : places) {
    std::vector<char> bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    ppe_test::write_file(file, bad);
    CAPTURE(at);
    CHECK_THROWS_WITH_AS(ppe::serialization::load_file(file),
                         doctest::Contains((file.string() + " is corrupted: its content has CRC-32").c_str()), CorruptFileError);
  }
}

TEST_CASE("archives with zip64 fields (written from offset 0 on) read in ppe, in LibTorch's reader and in Python") {
  TempDir dir;
  const State s = sample_state();
  const fs::path file = dir.path / "zip64.pt";
  {
    std::ofstream out(file, std::ios::binary);
    ppe::detail::write_pickle_zip64_from(out, s, 0);
  }
  CHECK(ppe::serialization::state_equal(ppe::serialization::load_file(file), s));
  const std::vector<char> bytes = ppe_test::read_bytes(file);
  // The zip64 end record and its locator precede the end record.
  const std::string_view tail(bytes.data() + bytes.size() - 18 - 22 - 20 - 56, 4);
  CHECK(tail == std::string_view("PK\x06\x06", 4));
  if (ppe_test::python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping Python's reading");
    return;
  }
  const std::string script = R"PY(
import sys, zipfile, torch
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None, z.testzip()
assert all(i.extra[:2] == b'\x01\x00' for i in z.infolist()), [i.extra for i in z.infolist()]
d = torch.load(sys.argv[1])
print(d['weights'].shape, d['row'].data_ptr() == d['weights'].data_ptr() + 5 * 4, d['ints'].tolist(), d['count'])
)PY";
  const ppe_test::Output out = ppe_test::run_python(dir, script, file.string());
  REQUIRE_MESSAGE(out.status == 0, out.text);
  CHECK(out.text == "torch.Size([4, 5]) True [0, 1, 2, 3, 4, 5, 6] 3\n");
}

TEST_CASE("combine_crc32 gives the CRC of two pieces end to end from theirs") {
  std::mt19937 gen(7);
  std::vector<unsigned char> bytes(70000);
  for (auto& b : bytes) b = static_cast<unsigned char>(gen());
  const std::uint32_t whole = ppe::detail::crc32(0, bytes.data(), bytes.size());
  for (const std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{4096}, bytes.size()}) {
    const std::uint32_t a = ppe::detail::crc32(0, bytes.data(), cut);
    const std::uint32_t b = ppe::detail::crc32(0, bytes.data() + cut, bytes.size() - cut);
    CHECK(ppe::detail::combine_crc32(a, b, bytes.size() - cut) == whole);
  }
  // zlib's check value: CRC-32 of "123456789" is cbf43926, also in two pieces.
  CHECK(ppe::detail::combine_crc32(ppe::detail::crc32(0, "1234", 4), ppe::detail::crc32(0, "56789", 5), 5) ==
        0xcbf43926u);
}

TEST_CASE("crc32 (carry-less multiplication where the processor has it, slicing by 8 elsewhere) is CRC-32") {
  // The definition, a bit at a time: reflected polynomial 0xEDB88320, inverted in and out.
  const auto bitwise = [](std::uint32_t crc, const unsigned char* p, std::size_t n) {
    crc = ~crc;
    for (std::size_t i = 0; i < n; ++i) {
      crc ^= p[i];
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
  };
  std::mt19937 gen(11);
  std::vector<unsigned char> bytes(9000);
  for (auto& b : bytes) b = static_cast<unsigned char>(gen());
  for (std::size_t offset = 0; offset < 17; ++offset)
    for (const std::size_t n : {0, 1, 15, 16, 63, 64, 65, 80, 127, 128, 129, 1000, 4096, 8191}) {
      const std::uint32_t seed = static_cast<std::uint32_t>(gen());
      CAPTURE(offset);
      CAPTURE(n);
      CHECK(ppe::detail::crc32(seed, bytes.data() + offset, n) == bitwise(seed, bytes.data() + offset, n));
    }
}

TEST_CASE("a stream that fails stops write_pickle, which leaves the error to the stream") {
  const State s = State::dict({{"big", torch::zeros({1 << 16})}});
  FailingSink sink(1000);
  std::ostream os(&sink);
  ppe::serialization::write_pickle(os, s);
  CHECK_FALSE(os.good());
  CHECK(sink.taken == 1000);
}

TEST_CASE("a file cut after load_file opened it is an error naming the file, not a crash") {
  TempDir dir;
  const fs::path file = dir.path / "cut.pt";
  ppe_test::write_file(file, ppe::serialization::pickle_dumps(sample_state()));
  const ppe::detail::FileSource source(file);
  const std::uint64_t size = source.size();
  fs::resize_file(file, size / 2);
  std::vector<char> buffer(64);
  CHECK_THROWS_WITH_AS(source.read(size - 64, buffer.data(), 64),
                       doctest::Contains(("ppe: cannot read " + file.string() + ": it ends at offset").c_str()), CorruptFileError);
  CHECK_THROWS_AS(ppe::detail::FileSource(dir.path / "missing.pt"), std::system_error);
  CHECK_THROWS_AS(ppe::detail::FileSource(dir.path), std::system_error);
}

TEST_CASE("a manager's state shares its optimizers' tensors with StateCopy::Share and clones them by default") {
  torch::nn::Linear model(3, 2);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.1));
  model->forward(torch::ones({1, 3})).sum().backward();
  optimizer.step();
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 2), model, optimizer);
  const auto exp_avg = [](const State& s) {
    return s.at("optimizers").at("main").at("state").at("0").at("exp_avg").as_tensor();
  };
  const State shared = manager.state_dict(ppe::StateCopy::Share);
  const State cloned = manager.state_dict();
  // The optimizer's own moments (its state map's keys differ between LibTorch versions).
  std::vector<const void*> live;
  for (const auto& [key, st] : optimizer.state())
    live.push_back(static_cast<const torch::optim::AdamParamState&>(*st).exp_avg().data_ptr());
  const auto is_live = [&](const void* p) { return std::find(live.begin(), live.end(), p) != live.end(); };
  CHECK(live.size() == 2);
  CHECK(is_live(exp_avg(shared).data_ptr()));
  CHECK_FALSE(is_live(exp_avg(cloned).data_ptr()));
  CHECK(ppe::serialization::state_equal(shared, cloned));
}

}  // namespace ppe_test_serialization_tests_test_pickle_stream
