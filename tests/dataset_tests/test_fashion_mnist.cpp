// ppe::dataset::FashionMNIST: exact values and every file defect on small
// synthetic gzipped IDX files written here with zlib, then the real files of
// Debian's dataset-fashion-mnist when they are installed.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <ppe/dataset/fashion_mnist.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_dataset_tests_test_fashion_mnist {

using ppe::dataset::DatasetFileError;
using ppe::dataset::FashionMNIST;
using ppe::dataset::FashionMNISTOptions;
using ppe_test::TempDir;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<unsigned char>;

void put_be32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

/// An IDX file of unsigned bytes: magic, sizes, data.
Bytes idx(std::uint32_t magic, const std::vector<std::uint32_t>& dims, const Bytes& data) {
  Bytes out;
  put_be32(out, magic);
  for (auto d : dims) put_be32(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_gz(const fs::path& path, const Bytes& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) == static_cast<int>(content.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void write_raw(const fs::path& path, const Bytes& content) {
  ppe_test::write_file(path, std::string(content.begin(), content.end()));
}

/// The pixel byte `p` of synthetic image `i`: distinct per image and pixel.
unsigned char pixel(std::size_t i, std::size_t p) { return static_cast<unsigned char>((i * 7 + p) % 256); }

Bytes image_data(std::size_t n, std::size_t rows = 28, std::size_t cols = 28) {
  Bytes data;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = 0; p < rows * cols; ++p) data.push_back(pixel(i, p));
  return data;
}

const Bytes kLabels = {9, 0, 3};

/// A directory with a valid 3-sample training set (labels 9, 0, 3).
struct SyntheticRoot {
  TempDir dir;
  fs::path images = FashionMNIST::images_file(dir.path, FashionMNIST::Mode::kTrain);
  fs::path labels = FashionMNIST::labels_file(dir.path, FashionMNIST::Mode::kTrain);
  SyntheticRoot() {
    write_gz(images, idx(2051, {3, 28, 28}, image_data(3)));
    write_gz(labels, idx(2049, {3}, kLabels));
  }
  FashionMNIST load(std::optional<std::int64_t> limit = std::nullopt) const {
    return FashionMNIST(FashionMNISTOptions().root(dir.str()).limit(limit));
  }
};

/// The message of the DatasetFileError that `f` throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const DatasetFileError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("FashionMNIST reads synthetic IDX files exactly") {
  SyntheticRoot root;
  FashionMNIST ds = root.load();
  REQUIRE(ds.size().has_value());
  CHECK(*ds.size() == 3);
  CHECK(ds.is_train());
  CHECK(ds.root() == root.dir.path);
  CHECK(ds.images().sizes() == at::IntArrayRef({3, 1, 28, 28}));
  CHECK((ds.images().scalar_type() == at::kFloat));
  CHECK((ds.targets().scalar_type() == at::kLong));
  CHECK(ds.targets().sizes() == at::IntArrayRef({3}));
  for (std::size_t i = 0; i < 3; ++i) {
    auto ex = ds.get(i);
    CHECK(ex.data.sizes() == at::IntArrayRef({1, 28, 28}));
    CHECK(ex.target.item<std::int64_t>() == kLabels[i]);
    auto px = ex.data.contiguous();
    const float* p = px.data_ptr<float>();
    int mismatches = 0;
    for (std::size_t k = 0; k < 28 * 28; ++k)
      if (p[k] != static_cast<float>(pixel(i, k)) / 255.0f) ++mismatches;
    CHECK(mismatches == 0);
  }
  // Byte 255 becomes exactly 1: pixel(i, p) = 255 at i = 0, p = 255.
  CHECK(ds.get(0).data.flatten()[255].item<float>() == 1.0f);
  CHECK(ds.get(0).data.flatten()[0].item<float>() == 0.0f);
  CHECK_THROWS_AS(ds.get(3), std::out_of_range);
}

TEST_CASE("FashionMNIST limit keeps the first samples and still checks the whole file") {
  SyntheticRoot root;
  FashionMNIST two = root.load(2);
  CHECK(*two.size() == 2);
  CHECK(two.targets()[1].item<std::int64_t>() == kLabels[1]);
  CHECK(two.images().sizes() == at::IntArrayRef({2, 1, 28, 28}));
  CHECK(*root.load(0).size() == 0);
  CHECK(*root.load(100).size() == 3);  // a limit above the count keeps all
  CHECK_THROWS_AS(root.load(-1), std::invalid_argument);
  // The tail beyond the limit is still read: a file truncated there fails.
  write_gz(root.images, idx(2051, {3, 28, 28}, image_data(2)));
  CHECK(contains(error_of([&] { root.load(1); }), "is truncated"));
}

TEST_CASE("FashionMNIST test mode, file names, root from the environment") {
  TempDir dir;
  write_gz(FashionMNIST::images_file(dir.path, FashionMNIST::Mode::kTest), idx(2051, {1, 28, 28}, image_data(1)));
  write_gz(FashionMNIST::labels_file(dir.path, FashionMNIST::Mode::kTest), idx(2049, {1}, {7}));
  CHECK(FashionMNIST::images_file("r", FashionMNIST::Mode::kTest) == fs::path("r/t10k-images-idx3-ubyte.gz"));
  CHECK(FashionMNIST::labels_file("r", FashionMNIST::Mode::kTrain) == fs::path("r/train-labels-idx1-ubyte.gz"));
  FashionMNIST test(dir.str(), FashionMNIST::Mode::kTest);
  CHECK_FALSE(test.is_train());
  CHECK(test.targets()[0].item<std::int64_t>() == 7);

  const char* old = std::getenv(FashionMNIST::kRootEnv);
  const std::string saved = old ? old : "";
  ::setenv(FashionMNIST::kRootEnv, dir.str().c_str(), 1);
  CHECK(FashionMNIST::default_root() == dir.path);
  CHECK(*FashionMNIST(FashionMNISTOptions().mode(FashionMNIST::Mode::kTest)).size() == 1);
  ::setenv(FashionMNIST::kRootEnv, "", 1);  // empty means unset
  CHECK(FashionMNIST::default_root() == fs::path(FashionMNIST::kDebianRoot));
  if (old)
    ::setenv(FashionMNIST::kRootEnv, saved.c_str(), 1);
  else
    ::unsetenv(FashionMNIST::kRootEnv);
}

TEST_CASE("FashionMNIST class names follow the dataset's README") {
  CHECK(FashionMNIST::kClassNames.size() == 10);
  CHECK(FashionMNIST::class_name(0) == "T-shirt/top");
  CHECK(FashionMNIST::class_name(1) == "Trouser");
  CHECK(FashionMNIST::class_name(5) == "Sandal");
  CHECK(FashionMNIST::class_name(9) == "Ankle boot");
  CHECK_THROWS_AS(FashionMNIST::class_name(10), std::out_of_range);
  CHECK_THROWS_AS(FashionMNIST::class_name(-1), std::out_of_range);
}

TEST_CASE("FashionMNIST works with map(Stack) and make_data_loader") {
  SyntheticRoot root;
  auto ds = root.load().map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(ds), torch::data::DataLoaderOptions(2));
  std::vector<std::int64_t> labels;
  std::vector<std::int64_t> batch_sizes;
  for (auto& batch : *loader) {
    CHECK(batch.data.dim() == 4);
    batch_sizes.push_back(batch.data.size(0));
    for (std::int64_t i = 0; i < batch.target.size(0); ++i) labels.push_back(batch.target[i].item<std::int64_t>());
  }
  CHECK(batch_sizes == std::vector<std::int64_t>{2, 1});
  CHECK(labels == std::vector<std::int64_t>{9, 0, 3});
}

TEST_CASE("FashionMNIST file errors name the file, the defect and the expectation") {
  SyntheticRoot root;
  const std::string images = root.images.string();
  const std::string labels = root.labels.string();

  SUBCASE("missing file") {
    fs::remove(root.labels);
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, labels));
    CHECK(contains(msg, "does not exist"));
  }
  SUBCASE("missing directory") {
    const std::string msg = error_of([&] { FashionMNIST((root.dir.path / "nowhere").string()); });
    CHECK(contains(msg, "nowhere/train-images-idx3-ubyte.gz' does not exist"));
  }
  SUBCASE("not gzip") {
    write_raw(root.images, idx(2051, {3, 28, 28}, image_data(3)));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images));
    CHECK(contains(msg, "is not gzip-compressed"));
    CHECK(contains(msg, "1f 8b"));
  }
  SUBCASE("empty file") {
    write_raw(root.labels, {});
    CHECK(contains(error_of([&] { root.load(); }), labels + "' is not gzip-compressed"));
  }
  SUBCASE("wrong magic number") {
    write_gz(root.labels, idx(2051, {3}, kLabels));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, labels));
    CHECK(contains(msg, "has magic number 2051, expected 2049"));
  }
  SUBCASE("labels where the images belong") {
    write_gz(root.images, idx(2049, {3}, kLabels));
    CHECK(contains(error_of([&] { root.load(); }), images + "' has magic number 2049, expected 2051"));
  }
  SUBCASE("header cut short") {
    Bytes header;
    put_be32(header, 2051);
    put_be32(header, 3);  // the row and column sizes are missing
    write_gz(root.images, header);
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images));
    CHECK(contains(msg, "too short to hold an IDX header"));
  }
  SUBCASE("images of the wrong size") {
    write_gz(root.images, idx(2051, {3, 27, 28}, image_data(3, 27, 28)));
    CHECK(contains(error_of([&] { root.load(); }), "holds images of shape [3, 27, 28], expected [N, 28, 28]"));
  }
  SUBCASE("count mismatch") {
    write_gz(root.labels, idx(2049, {2}, {1, 2}));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, "holds 3 images but '" + labels + "' holds 2 labels, expected the same number"));
  }
  SUBCASE("data shorter than the header says") {
    // 3 images announced, 2 present: 2 * 784 = 1568 of 3 * 784 = 2352 bytes.
    write_gz(root.images, idx(2051, {3, 28, 28}, image_data(2)));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images));
    CHECK(contains(msg, "is truncated: it holds 1568 data bytes, the header announces 2352"));
  }
  SUBCASE("data longer than the header says") {
    write_gz(root.labels, idx(2049, {3}, {9, 0, 3, 4}));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, labels));
    CHECK(contains(msg, "holds more data than its header announces (3 bytes)"));
  }
  SUBCASE("truncated gzip stream") {
    const std::string whole = ppe_test::read_file(root.images);
    ppe_test::write_file(root.images, whole.substr(0, whole.size() / 2));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images));
    CHECK(contains(msg, "is truncated: its gzip stream ends early"));
  }
  SUBCASE("gzip trailer cut off") {
    // All data inflates, but the CRC and length that end a gzip member are gone.
    const std::string whole = ppe_test::read_file(root.labels);
    ppe_test::write_file(root.labels, whole.substr(0, whole.size() - 8));
    CHECK(contains(error_of([&] { root.load(); }), labels + "' is truncated: its gzip stream ends early"));
  }
  SUBCASE("corrupt gzip data") {
    // Flip bits in the deflate data (after the 10-byte gzip header): zlib
    // rejects the block or the CRC-32 at the end of the member.
    std::string bytes = ppe_test::read_file(root.images);
    for (std::size_t i = 20; i < bytes.size() - 20; i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    ppe_test::write_file(root.images, bytes);
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images));
    CHECK(contains(msg, "is corrupt (zlib: "));
  }
  SUBCASE("label out of range") {
    write_gz(root.labels, idx(2049, {3}, {9, 10, 3}));
    CHECK(contains(error_of([&] { root.load(); }), labels + "' holds label 10 at index 1, expected 0 to 9"));
  }
  SUBCASE("a directory instead of a file") {
    fs::remove(root.labels);
    fs::create_directory(root.labels);
    CHECK(contains(error_of([&] { root.load(); }), labels + "' is a directory"));
  }
}

TEST_CASE("FashionMNIST checks the sizes a header declares before allocating them") {
  // Each file below declares more data than it holds: the reader must refuse
  // it from the header alone (DatasetFileError naming the file and the sizes),
  // never hand the declared size to LibTorch's allocator.
  SyntheticRoot root;
  const std::string images = root.images.string();
  const std::string labels = root.labels.string();

  SUBCASE("2^31 images of 28x28: beyond the 4 GiB limit") {
    // The labels agree, so that only the sizes' check stands between the
    // header and a 1.7 TB tensor (c10::Error from LibTorch's allocator).
    write_gz(root.images, idx(2051, {1u << 31, 28, 28}, image_data(3)));
    write_gz(root.labels, idx(2049, {1u << 31}, kLabels));
    CHECK_THROWS_AS(root.load(), DatasetFileError);
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images + "' declares 2147483648 x 28 x 28 = 1683627180032 data bytes in its header"));
    CHECK(contains(msg, "expected at most 4294967296 (4 GiB"));
  }
  SUBCASE("sizes whose product overflows int64") {
    write_gz(root.images, idx(2051, {0xffffffffu, 0xffffffffu, 0xffffffffu}, image_data(1)));
    write_gz(root.labels, idx(2049, {0xffffffffu}, kLabels));
    CHECK_THROWS_AS(root.load(), DatasetFileError);
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images + "' declares 4294967295 x 4294967295 x 4294967295 data bytes in its header"));
    CHECK(contains(msg, "a product beyond 64-bit integers"));
  }
  SUBCASE("no images of 2^32 x 2^32: sizes after a 0 that overflow LibTorch's strides") {
    // Found by fuzzing: the product is 0, but LibTorch computes the strides
    // of a {0, 4294967295, 4294967295} tensor and overflows ("Stride
    // calculation overflowed", a c10::Error).
    write_gz(root.images, idx(2051, {0, 0xffffffffu, 0xffffffffu}, {}));
    write_gz(root.labels, idx(2049, {0}, {}));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images + "' declares 0 x 4294967295 x 4294967295 data bytes in its header"));
    CHECK(contains(msg, "a product beyond 64-bit integers"));
  }
  SUBCASE("just over the limit, and the limit itself") {
    // 2^32 - 1 labels pass the limit and fail on the file's size; 65537 x 256 x 256
    // = 2^32 + 2^16 bytes fail on the limit.
    write_gz(root.labels, idx(2049, {0xffffffffu}, kLabels));
    CHECK(contains(error_of([&] { root.load(); }), "holds at most"));
    write_gz(root.images, idx(2051, {65537, 256, 256}, image_data(1)));
    CHECK(contains(error_of([&] { root.load(); }), "= 4295032832 data bytes in its header, expected at most"));
  }
  SUBCASE("more images than the compressed file can hold") {
    // 60000 x 28 x 28 announced, 3 images present: 47 MB cannot come out of
    // about 2 KB of gzip (deflate expands at most 1032:1), so the reader stops
    // at the header instead of allocating 47 MB and inflating to the end.
    write_gz(root.images, idx(2051, {60000, 28, 28}, image_data(3)));
    const auto size = fs::file_size(root.images);
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images + "' declares 60000 x 28 x 28 = 47040000 data bytes in its header, but a gzip file of " +
                            std::to_string(size) + " bytes holds at most " + std::to_string(1032 * size)));
    CHECK(contains(msg, "the file is truncated or its header is wrong"));
  }
  SUBCASE("more labels than the compressed file can hold") {
    write_gz(root.labels, idx(2049, {100000}, kLabels));
    const std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, labels + "' declares 100000 data bytes in its header, but a gzip file of"));
  }
  SUBCASE("a file at deflate's bound is still read") {
    // Zeros compress best (about 1000:1 with zlib): a real file never trips the bound.
    const std::size_t n = 10000;
    write_gz(root.images, idx(2051, {static_cast<std::uint32_t>(n), 28, 28}, Bytes(n * 28 * 28, 0)));
    write_gz(root.labels, idx(2049, {static_cast<std::uint32_t>(n)}, Bytes(n, 0)));
    CHECK(fs::file_size(root.images) * 500 < n * 28 * 28);  // the test means what it says
    CHECK(*root.load().size() == n);
  }
  SUBCASE("a data size the file could hold but does not: still truncated") {
    write_gz(root.images, idx(2051, {4, 28, 28}, image_data(3)));
    write_gz(root.labels, idx(2049, {4}, {9, 0, 3, 1}));
    CHECK(contains(error_of([&] { root.load(); }),
                   images + "' is truncated: it holds 2352 data bytes, the header announces 3136"));
  }
  SUBCASE("more data than declared: still an error") {
    write_gz(root.images, idx(2051, {3, 28, 28}, image_data(4)));
    CHECK(contains(error_of([&] { root.load(); }), images + "' holds more data than its header announces (2352 bytes)"));
  }
  SUBCASE("unsupported numbers of dimensions") {
    // 255 dimensions: refused from the magic number alone, none of them read
    // (the file ends right after it, which would otherwise read as a short header).
    Bytes magic255;
    put_be32(magic255, 0x08ff);
    write_gz(root.images, magic255);
    std::string msg = error_of([&] { root.load(); });
    CHECK(contains(msg, images + "' has magic number 2303, expected 2051"));
    CHECK(contains(msg, "found an IDX file of unsigned bytes with 255 dimensions"));
    write_gz(root.images, idx(0x0804, {3, 28, 28, 1}, image_data(3)));
    CHECK(contains(error_of([&] { root.load(); }), "found an IDX file of unsigned bytes with 4 dimensions"));
    write_gz(root.images, idx(2051, {3, 28, 28}, image_data(3)));  // the labels are read next
    write_gz(root.labels, idx(0x0800, {}, {0}));
    msg = error_of([&] { root.load(); });
    CHECK(contains(msg, labels + "' has magic number 2048, expected 2049"));
    CHECK(contains(msg, "found an IDX file of unsigned bytes with 0 dimensions"));
    write_gz(root.labels, idx(0x0d01, {3}, Bytes(12, 0)));
    CHECK(contains(error_of([&] { root.load(); }), "found an IDX file of 32-bit floats with 1 dimension"));
    write_gz(root.labels, idx(0x01020801, {3}, kLabels));
    CHECK(contains(error_of([&] { root.load(); }), "found no IDX magic number"));
  }
}

TEST_CASE("IdxReader and read_idx_bytes on other shapes") {
  TempDir dir;
  const fs::path file = dir.path / "a.gz";
  Bytes data;
  for (unsigned char i = 0; i < 24; ++i) data.push_back(i);
  write_gz(file, idx(0x0802, {4, 6}, data));
  {
    ppe::dataset::IdxReader reader(file, 0x0802);
    CHECK(reader.header().dims == std::vector<std::int64_t>{4, 6});
    CHECK(reader.header().data_bytes() == 24);
    CHECK(reader.entry_bytes(4) == 24);
    CHECK(reader.entry_bytes(0) == 0);
    CHECK_THROWS_AS(ppe::dataset::read_idx_bytes(reader, 5), std::invalid_argument);
    CHECK_THROWS_AS(ppe::dataset::read_idx_bytes(reader, -1), std::invalid_argument);
    const at::Tensor first = ppe::dataset::read_idx_bytes(reader, 2);
    CHECK(first.sizes() == at::IntArrayRef({2, 6}));
    CHECK((first.scalar_type() == at::kByte));
    CHECK(first[1][5].item<int>() == 11);
    reader.finish();
  }
  // The magic a caller expects must be one of unsigned bytes with 1 to kMaxDims dimensions.
  CHECK_THROWS_AS(ppe::dataset::IdxReader(file, 0x08ff), std::invalid_argument);
  CHECK_THROWS_AS(ppe::dataset::IdxReader(file, 0x0800), std::invalid_argument);
  CHECK_THROWS_AS(ppe::dataset::IdxReader(file, 0x0d03), std::invalid_argument);
  // A header made by hand: an overflowing product is an error, not undefined behaviour.
  ppe::dataset::IdxHeader header{2051, {1 << 30, 1 << 30, 1 << 30}};
  CHECK_THROWS_AS((void)header.data_bytes(), std::overflow_error);
}

TEST_CASE("FashionMNIST real files (Debian's dataset-fashion-mnist)") {
  const fs::path root = FashionMNIST::kDebianRoot;
  if (!fs::exists(FashionMNIST::images_file(root, FashionMNIST::Mode::kTrain))) {
    MESSAGE("dataset-fashion-mnist is not installed; skipped");
    return;
  }
  // The README: 60000 training and 10000 test images, 10 balanced classes.
  struct Case {
    FashionMNIST::Mode mode;
    std::int64_t count;
  };
  for (const Case c : {Case{FashionMNIST::Mode::kTrain, 60000}, Case{FashionMNIST::Mode::kTest, 10000}}) {
    FashionMNIST ds(root.string(), c.mode);
    CHECK(*ds.size() == static_cast<std::size_t>(c.count));
    CHECK(ds.images().sizes() == at::IntArrayRef({c.count, 1, 28, 28}));
    CHECK(ds.images().min().item<float>() >= 0.0f);
    CHECK(ds.images().max().item<float>() == 1.0f);
    const auto histogram = torch::bincount(ds.targets());
    REQUIRE(histogram.numel() == 10);
    for (std::int64_t k = 0; k < 10; ++k) CHECK(histogram[k].item<std::int64_t>() == c.count / 10);
  }
  // The demo's small subset: the first 300 training samples.
  FashionMNIST small(FashionMNISTOptions().root(root.string()).limit(300));
  CHECK(*small.size() == 300);
}

}  // namespace ppe_test_dataset_tests_test_fashion_mnist
