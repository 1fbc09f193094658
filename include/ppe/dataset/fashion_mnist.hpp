#pragma once
/// \file
/// `FashionMNIST`: Zalando's Fashion-MNIST as a `torch::data` dataset, read
/// from the gzipped IDX files that Debian's `dataset-fashion-mnist` package
/// installs (or any directory holding the same four files).
///
/// Works like LibTorch's own `torch::data::datasets::MNIST`:
/// \code
///   auto train = ppe::dataset::FashionMNIST(ppe::dataset::FashionMNISTOptions().limit(512))
///                    .map(torch::data::transforms::Stack<>());
///   auto loader = torch::data::make_data_loader(std::move(train), 64);
/// \endcode

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/data/datasets/base.h>
#include <torch/data/example.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/dataset/idx_file.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset {

/// Reads the first `count` entries (along the first dimension, 0 to
/// `dims[0]`) of the open IDX file `reader` into a new uint8 tensor of shape
/// `[count, dims[1], ...]`; `finish` is left to the caller. The tensor is
/// allocated from sizes that `IdxReader`'s constructor has checked (at most
/// `IdxReader::kMaxDataBytes`, and no more than the gzip file can hold), so a
/// lying header fails there, before this allocation. A `count` out of range
/// is `std::invalid_argument`.
inline at::Tensor read_idx_bytes(IdxReader& reader, std::int64_t count) {
  const std::int64_t bytes = reader.entry_bytes(count);  // checks count
  std::vector<std::int64_t> shape(reader.header().dims);
  shape[0] = count;
  at::Tensor out = at::empty(shape, at::kByte);
  reader.read(out.data_ptr<std::uint8_t>(), bytes);
  return out;
}

/// Options of `FashionMNIST`.
struct FashionMNISTOptions {
  enum class Mode { kTrain, kTest };
  /// Directory holding `{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`.
  /// Empty: `FashionMNIST::default_root()`.
  PPE_ARG(std::string, root);
  /// The 60000 training samples or the 10000 test samples.
  PPE_ARG(Mode, mode) = Mode::kTrain;
  /// Keep only the first `limit` samples (all when unset or larger than the
  /// file). The whole file is still read, so that its integrity is checked.
  PPE_ARG(std::optional<std::int64_t>, limit);
};

/// Fashion-MNIST: 28x28 grey images of 10 kinds of clothing. Images are float
/// tensors in [0, 1] (pixel / 255), `images()` has shape [N, 1, 28, 28];
/// labels are int64 in [0, 9] (names in `kClassNames`).
///
/// Everything is loaded and checked by the constructor: magic numbers (2051
/// for images, 2049 for labels), the declared sizes (`IdxReader`'s limits,
/// before anything is allocated), 28x28 images, equal image and label counts,
/// data length equal to what the headers announce, labels below 10, gzip
/// integrity. Any defect throws `DatasetFileError` naming the file.
class FashionMNIST : public torch::data::datasets::Dataset<FashionMNIST> {
 public:
  using Mode = FashionMNISTOptions::Mode;

  /// Environment variable that overrides the default root directory.
  static constexpr const char* kRootEnv = "PPE_FASHION_MNIST_DIR";
  /// Where Debian's `dataset-fashion-mnist` installs the files.
  static constexpr const char* kDebianRoot = "/usr/share/datasets/fashion-mnist";
  static constexpr std::int64_t kRows = 28;
  static constexpr std::int64_t kCols = 28;
  static constexpr std::int64_t kNumClasses = 10;
  /// Class names by label, as in the dataset's README.
  static constexpr std::array<std::string_view, kNumClasses> kClassNames = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

  explicit FashionMNIST(const FashionMNISTOptions& options = {})
      : root_(options.root().empty() ? default_root() : std::filesystem::path(options.root())),
        mode_(options.mode()) {
    if (options.limit() && *options.limit() < 0)
      throw std::invalid_argument("ppe::dataset::FashionMNIST: limit must be >= 0, got " +
                                  std::to_string(*options.limit()));
    load(options.limit());
  }
  /// LibTorch's `MNIST(root, mode)` spelling.
  explicit FashionMNIST(const std::string& root, Mode mode = Mode::kTrain)
      : FashionMNIST(FashionMNISTOptions().root(root).mode(mode)) {}

  /// `$PPE_FASHION_MNIST_DIR` when set and not empty, else `kDebianRoot`.
  static std::filesystem::path default_root() {
    const char* env = std::getenv(kRootEnv);
    return (env && *env) ? std::filesystem::path(env) : std::filesystem::path(kDebianRoot);
  }
  /// The images file of `mode` under `root`.
  static std::filesystem::path images_file(const std::filesystem::path& root, Mode mode) {
    return root / (prefix(mode) + "-images-idx3-ubyte.gz");
  }
  /// The labels file of `mode` under `root`.
  static std::filesystem::path labels_file(const std::filesystem::path& root, Mode mode) {
    return root / (prefix(mode) + "-labels-idx1-ubyte.gz");
  }
  /// The name of class `label` (0..9); out of range throws.
  static std::string_view class_name(std::int64_t label) {
    if (label < 0 || label >= kNumClasses)
      throw std::out_of_range("ppe::dataset::FashionMNIST::class_name: label " + std::to_string(label) +
                              " is out of range, expected 0 to 9");
    return kClassNames[static_cast<std::size_t>(label)];
  }

  /// Sample `index`: data [1, 28, 28] float, target a 0-d int64 tensor.
  torch::data::Example<> get(std::size_t index) override {
    if (index >= count_)
      throw std::out_of_range("ppe::dataset::FashionMNIST::get: index " + std::to_string(index) +
                              " is out of range, the dataset has " + std::to_string(count_) + " samples");
    const auto i = static_cast<std::int64_t>(index);
    return {images_[i], targets_[i]};
  }
  c10::optional<std::size_t> size() const override { return count_; }

  bool is_train() const noexcept { return mode_ == Mode::kTrain; }
  Mode mode() const noexcept { return mode_; }
  /// The directory the files were read from.
  const std::filesystem::path& root() const noexcept { return root_; }
  /// All images, [N, 1, 28, 28] float in [0, 1].
  const at::Tensor& images() const noexcept { return images_; }
  /// All labels, [N] int64.
  const at::Tensor& targets() const noexcept { return targets_; }

 private:
  static std::string prefix(Mode mode) { return mode == Mode::kTrain ? "train" : "t10k"; }

  void load(std::optional<std::int64_t> limit) {
    // Both headers first: a mismatch is reported before 47 MB are inflated.
    IdxReader images(images_file(root_, mode_), 2051);
    IdxReader labels(labels_file(root_, mode_), 2049);
    const auto& ih = images.header();
    const auto& lh = labels.header();
    if (ih.dims.size() != 3 || ih.dims[1] != kRows || ih.dims[2] != kCols)
      throw DatasetFileError("ppe::dataset: the file '" + images.path().string() + "' holds images of shape " +
                             ppe::detail::python_shape(ih.dims) + ", expected [N, 28, 28]");
    if (lh.dims.size() != 1)
      throw DatasetFileError("ppe::dataset: the file '" + labels.path().string() + "' holds labels of shape " +
                             ppe::detail::python_shape(lh.dims) + ", expected [N]");
    if (ih.dims[0] != lh.dims[0])
      throw DatasetFileError("ppe::dataset: the file '" + images.path().string() + "' holds " +
                             std::to_string(ih.dims[0]) + " images but '" + labels.path().string() + "' holds " +
                             std::to_string(lh.dims[0]) + " labels, expected the same number");
    const std::int64_t n = limit ? std::min(*limit, ih.dims[0]) : ih.dims[0];

    // The readers' constructors checked the declared sizes (IdxReader), so these
    // allocations are bounded by what the files can hold.
    at::Tensor pixels = read_idx_bytes(images, n).view({n, 1, kRows, kCols});
    images.finish();
    at::Tensor label_bytes = read_idx_bytes(labels, n);
    const std::uint8_t* l = label_bytes.data_ptr<std::uint8_t>();
    for (std::int64_t i = 0; i < n; ++i)
      if (l[i] >= kNumClasses)
        throw DatasetFileError("ppe::dataset: the file '" + labels.path().string() + "' holds label " +
                               std::to_string(l[i]) + " at index " + std::to_string(i) + ", expected 0 to 9");
    labels.finish();

    images_ = pixels.to(at::kFloat).div_(255);
    targets_ = label_bytes.to(at::kLong);
    count_ = static_cast<std::size_t>(n);
  }

  std::filesystem::path root_;
  Mode mode_;
  at::Tensor images_;
  at::Tensor targets_;
  std::size_t count_ = 0;
};

}  // namespace ppe::dataset
