#pragma once
// Shared by the hand-written loops of bench_engine and their Trainer versions:
// the same models, data, data order, seeds and optimizers, so that the two
// differ only in who runs the loop.

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randperm.h>
#include <torch/data/example.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/adam.h>
#include <torch/optim/schedulers/step_lr.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ppe/dataset/fashion_mnist.hpp>

#include "../examples/fashion_mnist/net.hpp"

namespace ppe_bench {

// ---------------------------------------------------------------------------
// Tiny: one Linear(8 -> 1) on one fixed sample, so the loop's own cost shows.

/// Input features of the tiny model.
inline constexpr std::int64_t kTinyFeatures = 8;

/// `forward(x, t)` returns the MSE loss of `Linear(8 -> 1)(x)` against `t`,
/// so that a trainer's default logic back-propagates it as it is.
class TinyModelImpl : public torch::nn::Module {
 public:
  TinyModelImpl() : linear_(register_module("linear", torch::nn::Linear(kTinyFeatures, 1))) {}

  /// Mean squared error of the prediction for `x` [B, 8] against `t` [B, 1].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t) { return at::mse_loss(linear_->forward(x), t); }

 private:
  torch::nn::Linear linear_;
};
/// Holder of `TinyModelImpl`.
TORCH_MODULE(TinyModel);

/// The tiny benchmark's model, optimizer and its one batch.
struct TinySetup {
  TinyModel model;
  /// SGD, lr 1e-3 (small, so millions of steps on one sample stay finite).
  std::shared_ptr<torch::optim::SGD> optimizer;
  /// The batch: one sample, x [1, 8] and target t [1, 1].
  at::Tensor x;
  at::Tensor t;
};

/// Seeds LibTorch's generator with 0, then builds the model, its optimizer and
/// the batch: every call returns the same initial state.
inline TinySetup make_tiny_setup() {
  torch::manual_seed(0);
  TinyModel model;
  auto optimizer = std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(1e-3));
  at::Tensor x = at::rand({1, kTinyFeatures});
  at::Tensor t = at::rand({1, 1});
  return {std::move(model), std::move(optimizer), std::move(x), std::move(t)};
}

/// `n` copies of the setup's batch (sharing its tensors), as a trainer's
/// input range for an epoch of `n` iterations.
inline std::vector<std::tuple<at::Tensor, at::Tensor>> tiny_batches(const TinySetup& setup, std::size_t n) {
  return std::vector<std::tuple<at::Tensor, at::Tensor>>(n, std::tuple<at::Tensor, at::Tensor>(setup.x, setup.t));
}

/// One hand-written training iteration on the setup's batch; returns the loss.
inline at::Tensor tiny_step(TinySetup& setup) {
  setup.optimizer->zero_grad();
  at::Tensor loss = setup.model->forward(setup.x, setup.t);
  loss.backward();
  setup.optimizer->step();
  return loss;
}

// ---------------------------------------------------------------------------
// Fashion-MNIST: the demo's Classifier(FashionNet) with fashion::TrainSettings.

/// A batch of the demo: images [B, 1, 28, 28] float in [0, 1], labels [B] int64.
using FashionBatch = torch::data::Example<>;

/// Both splits of Fashion-MNIST, whole.
struct FashionData {
  at::Tensor train_images;
  at::Tensor train_targets;
  at::Tensor test_images;
  at::Tensor test_targets;
};

/// Reads both splits from `ppe::dataset::FashionMNIST::default_root()`. When
/// the files are missing or damaged, returns nullopt and stores in `*error`
/// (if given) why and how to get them.
inline std::optional<FashionData> load_fashion_data(std::string* error = nullptr) {
  using ppe::dataset::FashionMNIST;
  using ppe::dataset::FashionMNISTOptions;
  try {
    FashionMNIST train(FashionMNISTOptions().mode(FashionMNIST::Mode::kTrain));
    FashionMNIST test(FashionMNISTOptions().mode(FashionMNIST::Mode::kTest));
    return FashionData{train.images(), train.targets(), test.images(), test.targets()};
  } catch (const std::exception& e) {
    if (error)
      *error = std::string("Fashion-MNIST is not readable (") + e.what() +
               "); install it with 'apt-get install dataset-fashion-mnist' or set " + FashionMNIST::kRootEnv;
    return std::nullopt;
  }
}

/// The training batches of epoch `epoch` (0-based): the training set in the
/// order of `randperm` from a generator seeded with `seed + epoch` (apart from
/// LibTorch's global generator, so that dropout does not change the order),
/// cut into batches of `batch_size` (the last one smaller). The batches are
/// views of one shuffled copy of the set.
inline std::vector<FashionBatch> fashion_train_batches(const FashionData& data, std::int64_t batch_size,
                                                       std::uint64_t seed, std::int64_t epoch = 0) {
  at::Generator generator = at::detail::createCPUGenerator(seed + static_cast<std::uint64_t>(epoch));
  const std::int64_t n = data.train_images.size(0);
  at::Tensor order = at::randperm(n, generator);
  at::Tensor images = data.train_images.index_select(0, order);
  at::Tensor targets = data.train_targets.index_select(0, order);
  std::vector<FashionBatch> batches;
  batches.reserve(static_cast<std::size_t>((n + batch_size - 1) / batch_size));
  for (std::int64_t i = 0; i < n; i += batch_size) {
    const std::int64_t b = std::min(batch_size, n - i);
    batches.emplace_back(images.narrow(0, i, b), targets.narrow(0, i, b));
  }
  return batches;
}

/// The test set in file order, in batches of `batch_size` (views).
inline std::vector<FashionBatch> fashion_test_batches(const FashionData& data, std::int64_t batch_size = 1000) {
  const std::int64_t n = data.test_images.size(0);
  std::vector<FashionBatch> batches;
  for (std::int64_t i = 0; i < n; i += batch_size) {
    const std::int64_t b = std::min(batch_size, n - i);
    batches.emplace_back(data.test_images.narrow(0, i, b), data.test_targets.narrow(0, i, b));
  }
  return batches;
}

/// The demo's model, optimizer and learning-rate schedule.
struct FashionSetup {
  fashion::Classifier model;
  /// Adam with `settings.lr`.
  std::shared_ptr<torch::optim::Adam> optimizer;
  /// StepLR(`lr_step_size`, `lr_gamma`), to be stepped once per epoch.
  std::shared_ptr<torch::optim::StepLR> scheduler;
};

/// Sets the intra-op threads to `settings.threads`, seeds LibTorch's generator
/// with `settings.seed`, then builds the model (default `FashionNetOptions`),
/// the optimizer and the scheduler: every call returns the same initial state.
inline FashionSetup make_fashion_setup(const fashion::TrainSettings& settings = {}) {
  at::set_num_threads(settings.threads);
  torch::manual_seed(settings.seed);
  fashion::Classifier model{fashion::FashionNet{}};
  auto optimizer = std::make_shared<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(settings.lr));
  auto scheduler = std::make_shared<torch::optim::StepLR>(*optimizer, settings.lr_step_size, settings.lr_gamma);
  return {std::move(model), std::move(optimizer), std::move(scheduler)};
}

/// One hand-written training epoch over `batches` (model in training mode;
/// zero_grad, forward, backward, step per batch). The scheduler is not
/// stepped: the caller does it at the end of the epoch.
inline void fashion_train_epoch_by_hand(FashionSetup& setup, const std::vector<FashionBatch>& batches) {
  setup.model->train();
  for (const FashionBatch& batch : batches) {
    setup.optimizer->zero_grad();
    at::Tensor loss = setup.model->forward(batch.data, batch.target);
    loss.backward();
    setup.optimizer->step();
  }
}

/// Fraction of `batches` the network classifies correctly (evaluation mode,
/// no autograd). Leaves the model in evaluation mode.
inline double fashion_accuracy(fashion::Classifier& model, const std::vector<FashionBatch>& batches) {
  model->eval();
  torch::NoGradGuard no_grad;
  std::int64_t correct = 0;
  std::int64_t total = 0;
  for (const FashionBatch& batch : batches) {
    correct += model->net()->forward(batch.data).argmax(1).eq(batch.target).sum().item<std::int64_t>();
    total += batch.target.size(0);
  }
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

}  // namespace ppe_bench
