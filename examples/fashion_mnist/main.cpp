// The demo (`./dev demo`): Fashion-MNIST with the engine. A two-convolution
// network (net.hpp) trained by `ppe::engine::create_trainer` with an
// evaluator on the test set every epoch, LogReport, ProgressBar,
// PrintReport, observe_lr, a StepLR schedule through the LRScheduler
// extension, and a snapshot every epoch (`--resume` continues from the
// latest one). Writes `<out>/log` and the snapshots, and prints where.
// `--train-limit` / `--test-limit` train on a subset (the example's test).
//
//   fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--device cpu|cuda]
//                 [--out DIR] [--resume] [--train-limit N] [--test-limit N]
//                 [--threads N] [--seed N] [--min-accuracy X]
//
// `--min-accuracy X` makes the run fail (exit 1) when the final test accuracy
// is below X: the example's test checks that the network learns.

#include <torch/data/dataloader.h>
#include <torch/data/datasets/map.h>
#include <torch/data/samplers/random.h>
#include <torch/data/samplers/sequential.h>
#include <torch/data/transforms/stack.h>
#include <torch/optim/adam.h>
#include <torch/optim/schedulers/step_lr.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ppe/dataset/fashion_mnist.hpp>
#include <ppe/engine.hpp>
#include <ppe/ppe.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/training/extensions/lr_scheduler.hpp>
#include <ppe/training/extensions/snapshot.hpp>

#include "net.hpp"

namespace ext = ppe::training::extensions;

namespace {

// Defaults: fashion::TrainSettings (measured: 0.9065 test accuracy after 8
// epochs, about 90 s on 2 idle cores).
struct Flags {
  fashion::TrainSettings train;
  std::string device = "cpu";
  std::string out = "result";
  bool resume = false;
  std::optional<std::int64_t> train_limit, test_limit;
  std::optional<double> min_accuracy;
};

[[noreturn]] void usage(const std::string& error) {
  std::cerr << "fashion_mnist: " << error << "\n"
            << "usage: fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--device cpu|cuda] [--out DIR] "
               "[--resume] [--train-limit N] [--test-limit N] [--threads N] [--seed N] [--min-accuracy X]\n";
  std::exit(2);
}

std::int64_t positive(std::string_view flag, const char* text) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == std::string_view(text).size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  usage(std::string(flag) + " expects a positive integer, got '" + text + "'");
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "--epochs") f.train.epochs = positive(a, value());
    else if (a == "--batch-size") f.train.batch_size = positive(a, value());
    else if (a == "--lr") {
      const char* v = value();
      try {
        f.train.lr = std::stod(v);
      } catch (const std::exception&) {
        usage("--lr expects a number, got '" + std::string(v) + "'");
      }
      if (!(f.train.lr > 0)) usage("--lr must be > 0");
    } else if (a == "--device") {
      f.device = value();
      if (f.device.rfind("cuda", 0) == 0 && !torch::cuda::is_available())
        usage("--device " + f.device + ": no CUDA device is available to LibTorch here (use --device cpu)");
    } else if (a == "--out") f.out = value();
    else if (a == "--resume") f.resume = true;
    else if (a == "--train-limit") f.train_limit = positive(a, value());
    else if (a == "--test-limit") f.test_limit = positive(a, value());
    else if (a == "--threads") f.train.threads = static_cast<int>(positive(a, value()));
    else if (a == "--seed") f.train.seed = static_cast<std::uint64_t>(positive(a, value()));
    else if (a == "--min-accuracy") {
      const char* v = value();
      try {
        f.min_accuracy = std::stod(v);
      } catch (const std::exception&) {
        usage("--min-accuracy expects a number, got '" + std::string(v) + "'");
      }
    } else usage("unknown argument '" + std::string(a) + "'");
  }
  return f;
}

auto dataset(ppe::dataset::FashionMNIST::Mode mode, std::optional<std::int64_t> limit) {
  ppe::dataset::FashionMNISTOptions o;
  o.mode(mode);
  if (limit) o.limit(*limit);
  return ppe::dataset::FashionMNIST(o).map(torch::data::transforms::Stack<>());
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse(argc, argv);
  try {
    const fashion::TrainSettings& settings = flags.train;
    torch::set_num_threads(settings.threads);
    torch::manual_seed(settings.seed);

    // Shuffled training batches (a new order each epoch), test batches in order.
    auto train_set = dataset(ppe::dataset::FashionMNIST::Mode::kTrain, flags.train_limit);
    auto test_set = dataset(ppe::dataset::FashionMNIST::Mode::kTest, flags.test_limit);
    const std::size_t train_size = *train_set.size();
    const std::size_t test_size = *test_set.size();
    auto train_loader = torch::data::make_data_loader(
        std::move(train_set), torch::data::DataLoaderOptions(static_cast<std::size_t>(settings.batch_size)));
    auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        std::move(test_set), torch::data::DataLoaderOptions(500));

    fashion::Classifier model;
    ppe::to(model, flags.device);
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(settings.lr));
    torch::optim::StepLR schedule(optimizer, settings.lr_step_size, settings.lr_gamma);

    auto trainer = ppe::engine::create_trainer(
        model, optimizer, static_cast<double>(settings.epochs),
        ppe::engine::TrainerOptions().out_dir(flags.out).device(flags.device),
        ppe::engine::create_evaluator(model, ppe::engine::EvaluatorOptions().device(flags.device)),
        ext::LogReport(), ext::observe_lr(optimizer), ext::LRScheduler(schedule),
        ext::ProgressBar(ext::ProgressBarOptions().update_interval(100)),
        ext::PrintReport(ext::PrintReportOptions().entries(
            {"epoch", "iteration", "train/loss", "train/accuracy", "val/loss", "val/accuracy", "lr", "elapsed_time"})),
        ext::snapshot(ext::SnapshotOptions().n_retains(1).autoload(flags.resume)));
    // The sizes give the loaders a length (LibTorch's loaders have none).
    trainer.run(ppe::dataloaders::range(*train_loader, train_size), ppe::dataloaders::range(*test_loader, test_size));

    const auto log = trainer.manager().get_extension<ext::LogReport>("LogReport").log();
    std::optional<double> accuracy;
    if (log.empty()) {
      std::cout << "nothing to train: the latest snapshot is already at epoch " << trainer.epoch() << "\n";
    } else {
      if (const ext::LogValue* v = log.back().find("val/accuracy")) accuracy = v->to_double();
      std::cout << "test accuracy after " << trainer.epoch() << " epochs: "
                << (accuracy ? std::to_string(*accuracy) : std::string("(not reported)")) << "\n";
    }
    if (flags.min_accuracy && !(accuracy && *accuracy >= *flags.min_accuracy)) {
      std::cerr << "fashion_mnist: the test accuracy is below --min-accuracy " << *flags.min_accuracy << "\n";
      return 1;
    }
    std::cout << "log and snapshots in " << std::filesystem::absolute(flags.out).string() << "\n";
  } catch (const c10::Error& e) {  // LibTorch's message, without its C++ backtrace
    std::cerr << "fashion_mnist: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
