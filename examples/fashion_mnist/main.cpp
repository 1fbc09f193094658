// The demo (`./dev demo`): Fashion-MNIST with the engine. A two-convolution
// network (net.hpp) trained by `ppe::engine::create_trainer` with an
// evaluator on the test set every epoch, LogReport, ProgressBar,
// PrintReport, observe_lr, a StepLR schedule with Python's semantics
// (ppe::optim::lr_scheduler::StepLR) through the LRScheduler extension, a snapshot every epoch (`--resume` continues from the latest
// one) with the model's weights beside it as safetensors, a PlotReport of the losses and accuracies per epoch, and TensorBoard
// events of every logged value. Writes `<out>/log`, `<out>/plot.png`,
// `<out>/events.out.tfevents.*`, the snapshots and `<snapshot>.safetensors`, and prints where.
// `--train-limit` / `--test-limit` train on a subset (the example's test).
//
//   fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--device cpu|cuda]
//                 [--out DIR] [--resume] [--train-limit N] [--test-limit N]
//                 [--threads N] [--seed N] [--min-accuracy X] [--distributed torchrun|mpi]
//                 [--snapshot-every N] [--sample-log DIR] [--config FILE [--set /path=value]...]
//
// `--min-accuracy X` makes the run fail (exit 1) when the final test accuracy
// is below X: the example's test checks that the network learns.
//
// `--config FILE` builds the same run from a YAML file through ppe::config
// (examples/fashion_mnist/config.yaml is this run; docs/config.md): the
// datasets, the model, the optimizer, the schedule and the trainer's
// extensions are the file's. `--set /path=value` overrides a value of the
// file, and the flags above are overrides too (--epochs N is
// --set /trainer/max_epochs=N, --lr X is --set /optimizer/lr=X, ...).
//
// `--distributed torchrun|mpi` trains data-parallel on every process the
// launcher started (docs/distributed.md):
//   torchrun --no_python --redirects 1 --tee 1 --nproc_per_node=2 fashion_mnist --distributed torchrun
//   mpirun -n 2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 fashion_mnist --distributed mpi
// Each rank trains on its share of every epoch with batch-size / world-size
// images per step (DistributedDataParallel averages the gradients, so a step
// sees batch-size images as in one process), evaluates its share of the test
// set (the results are gathered: every rank gets the whole set's accuracy),
// and rank 0 prints, logs and saves the snapshots.
//
// Elastic (docs/distributed.md, "Several machines"): under
// `torchrun --nnodes MIN:MAX --max_restarts K ... fashion_mnist --distributed
// torchrun --resume`, a restart on another number of ranks continues from the
// last snapshot: the rest of the interrupted epoch is split over the ranks
// there are, each rank still takes batch-size / world-size images a step, so
// the global batch, the steps of an epoch and the learning rate's schedule
// stay those of the uninterrupted job. `--snapshot-every N` snapshots every N
// iterations (default: every epoch), so little is redone after a restart.
// `--sample-log DIR` makes each process write the indices of the images of
// every step to DIR/<pid>.log (a first line `resume <snapshot|none> world W
// rank R started <unix time>`, then `<iteration> <epoch> <index>...`): tests/multinode checks
// with it that every image of every epoch was trained on once.

#include <torch/data/dataloader.h>
#include <torch/data/datasets/map.h>
#include <torch/data/samplers/random.h>
#include <torch/data/samplers/sequential.h>
#include <torch/data/transforms/stack.h>
#include <torch/optim/adam.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <boost/hana/adapt_struct.hpp>

#include <ppe/config.hpp>
#include <ppe/config/plot_types.hpp>
#include <ppe/config/tensorboard_types.hpp>
#include <ppe/dataset/fashion_mnist.hpp>
#include <ppe/distributed.hpp>
#include <ppe/plot.hpp>
#include <ppe/ppe.hpp>
#include <ppe/tensorboard.hpp>

#include "net.hpp"

namespace ext = ppe::training::extensions;

// The network's options convert from a YAML dict field by field (`net: {hidden: 64}`).
BOOST_HANA_ADAPT_STRUCT(fashion::FashionNetOptions, conv1, conv2, hidden, dropout);

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
  std::string distributed;  ///< "", "torchrun" or "mpi"
  std::optional<std::int64_t> snapshot_every;  ///< iterations between snapshots (unset: every epoch)
  std::string sample_log;                      ///< a directory: each process logs its steps' images
  /// `--config FILE`, and the overrides of its values (`--set`, and the
  /// flags above as `/path=value`), in the command line's order.
  std::string config;
  std::vector<std::string> sets;
};

[[noreturn]] void usage(const std::string& error) {
  std::cerr << "fashion_mnist: " << error << "\n"
            << "usage: fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--device cpu|cuda] [--out DIR] "
               "[--resume] [--train-limit N] [--test-limit N] [--threads N] [--seed N] [--min-accuracy X] "
               "[--distributed torchrun|mpi] [--snapshot-every N] [--sample-log DIR] [--config FILE [--set "
               "/path=value]...]\n";
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
  bool explicit_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(std::string(a) + " needs a value");
      return argv[++i];
    };
    // The config's path each flag overrides (with --config).
    auto set = [&](const char* path, const std::string& v) { f.sets.push_back(std::string(path) + "=" + v); };
    if (a == "--config") {
      f.config = value();
    } else if (a == "--set") {
      f.sets.push_back(value());
      explicit_set = true;
    } else if (a == "--epochs") {
      f.train.epochs = positive(a, value());
      set("/trainer/max_epochs", std::to_string(f.train.epochs));
    } else if (a == "--batch-size") {
      f.train.batch_size = positive(a, value());
      set("/batch_size", std::to_string(f.train.batch_size));
    } else if (a == "--lr") {
      const char* v = value();
      try {
        f.train.lr = std::stod(v);
      } catch (const std::exception&) {
        usage("--lr expects a number, got '" + std::string(v) + "'");
      }
      if (!(f.train.lr > 0)) usage("--lr must be > 0");
      set("/optimizer/lr", v);
    } else if (a == "--device") {
      f.device = value();
      if (f.device.rfind("cuda", 0) == 0 && !torch::cuda::is_available())
        usage("--device " + f.device + ": no CUDA device is available to LibTorch here (use --device cpu)");
      set("/trainer/device", f.device);
    } else if (a == "--out") {
      f.out = value();
      set("/trainer/out_dir", f.out);
    } else if (a == "--resume") {
      f.resume = true;
      set("/resume", "true");
    } else if (a == "--train-limit") {
      f.train_limit = positive(a, value());
      set("/train_dataset/limit", std::to_string(*f.train_limit));
    } else if (a == "--test-limit") {
      f.test_limit = positive(a, value());
      set("/test_dataset/limit", std::to_string(*f.test_limit));
    } else if (a == "--threads") {
      f.train.threads = static_cast<int>(positive(a, value()));
      set("/threads", std::to_string(f.train.threads));
    } else if (a == "--seed") {
      f.train.seed = static_cast<std::uint64_t>(positive(a, value()));
      set("/seed", std::to_string(f.train.seed));
    } else if (a == "--min-accuracy") {
      const char* v = value();
      try {
        f.min_accuracy = std::stod(v);
      } catch (const std::exception&) {
        usage("--min-accuracy expects a number, got '" + std::string(v) + "'");
      }
    } else if (a == "--distributed") {
      f.distributed = value();
      if (f.distributed != "torchrun" && f.distributed != "mpi")
        usage("--distributed expects torchrun or mpi, got '" + f.distributed + "'");
    } else if (a == "--snapshot-every") {
      f.snapshot_every = positive(a, value());
    } else if (a == "--sample-log") {
      f.sample_log = value();
    } else usage("unknown argument '" + std::string(a) + "'");
  }
  if (f.config.empty() && explicit_set) usage("--set overrides a value of --config FILE: give the file");
  if (!f.config.empty() && !f.distributed.empty()) usage("--distributed is not supported with --config");
  if (!f.config.empty() && (f.snapshot_every || !f.sample_log.empty()))
    usage("--snapshot-every and --sample-log are not supported with --config");
  if (!f.sample_log.empty() && f.distributed.empty()) usage("--sample-log needs --distributed");
  return f;
}

// A dataset that remembers the indices of the batch the loader fetched last
// (with no worker threads, the batch the loop is about to train on), for
// --sample-log.
template <class Inner>
class Recorded : public torch::data::datasets::BatchDataset<Recorded<Inner>, typename Inner::BatchType> {
 public:
  Recorded(Inner inner, std::shared_ptr<std::vector<std::size_t>> last)
      : inner_(std::move(inner)), last_(std::move(last)) {}
  typename Inner::BatchType get_batch(c10::ArrayRef<std::size_t> indices) override {
    last_->assign(indices.begin(), indices.end());
    return inner_.get_batch(indices);
  }
  c10::optional<std::size_t> size() const override { return inner_.size(); }

 private:
  Inner inner_;
  std::shared_ptr<std::vector<std::size_t>> last_;
};

// --sample-log: after each step, this process's line `<iteration> <epoch>
// <index>...` in DIR/<pid>.log, after a first line naming the snapshot the
// run resumed from, the world size and the rank.
auto sample_log(const std::string& dir, std::shared_ptr<std::vector<std::size_t>> last,
                ppe::dataloaders::ResumableSampler sampler) {
  std::filesystem::create_directories(dir);
  auto out = std::make_shared<std::ofstream>(std::filesystem::path(dir) / (std::to_string(::getpid()) + ".log"));
  if (!*out) throw std::runtime_error("--sample-log: cannot write into " + dir);
  auto started = std::make_shared<bool>(false);
  return ppe::training::make_extension(
      [out, last, sampler, started](ppe::training::Manager& m) {
        if (!*started) {
          const std::string& loaded = m.get_extension<ext::Snapshot>("_Snapshot").loaded_file();
          *out << "resume " << (loaded.empty() ? "none" : loaded) << " world " << m.world_size() << " rank "
               << m.rank() << " started "
               << std::to_string(
                      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count())
               << "\n";
          *started = true;
        }
        *out << m.iteration() << " " << sampler.epoch();
        for (std::size_t i : *last) *out << " " << i;
        *out << std::endl;  // whole lines, whatever ends the process
      },
      ppe::iterations(1), "SampleLog");
}

auto dataset(ppe::dataset::FashionMNIST::Mode mode, std::optional<std::int64_t> limit) {
  ppe::dataset::FashionMNISTOptions o;
  o.mode(mode);
  if (limit) o.limit(*limit);
  return ppe::dataset::FashionMNIST(o).map(torch::data::transforms::Stack<>());
}

// Prints the final accuracy (and fails below --min-accuracy); the exit status.
template <class Trainer>
int report(Trainer& trainer, const Flags& flags, const ppe::writing::TensorBoardWriter* events) {
  const auto log = trainer.manager().template get_extension<ext::LogReport>("LogReport").log();
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
  const std::string out = std::filesystem::absolute(flags.out).string();
  std::cout << "log and snapshots in " << out << "\n";
  // Both written by now: the trainer finalized the extensions and writers.
  if (std::filesystem::exists(flags.out + "/plot.png"))
    std::cout << "plot of the losses and accuracies: " << out << "/plot.png\n";
  if (events && std::filesystem::exists(events->path()))
    std::cout << "TensorBoard events: " << std::filesystem::absolute(events->path()).string()
              << " (tensorboard --logdir " << out << ")\n";
  // The model's weights beside the last snapshot (SnapshotOptions::safetensors), for any
  // tool that reads the format (ppe::serialization::load_safetensors, Python's safetensors).
  if (const std::string last = ext::find_latest_snapshot("snapshot_iter_{.iteration}", flags.out);
      !last.empty() && std::filesystem::exists(flags.out + "/" + last + ".safetensors"))
    std::cout << "model weights (safetensors): " << out << "/" << last << ".safetensors\n";
  return 0;
}

// Trains `model` (the network, or its data-parallel wrapper) with the
// extensions on the loaders' ranges; the exit status. Only rank 0 reports.
template <class Model, class TrainRange, class TestRange, class... Extra>
int train(Model model, torch::optim::Adam& optimizer, const Flags& flags, ppe::engine::TrainerOptions trainer_options,
          ppe::engine::EvaluatorOptions evaluator_options, std::optional<int> saver_rank, TrainRange train_range,
          TestRange test_range, Extra... extra) {
  const fashion::TrainSettings& settings = flags.train;
  // Python's StepLR: the rate of epoch e (1-based) is lr·gamma^floor((e-1)/step_size), as in
  // PPE's demo; LibTorch's torch::optim::StepLR would change it one epoch later (docs/lr-schedulers.md).
  ppe::optim::lr_scheduler::StepLR schedule(optimizer, settings.lr_step_size, settings.lr_gamma);
  // Every logged value as a TensorBoard scalar, in the output directory.
  auto events = std::make_shared<ppe::writing::TensorBoardWriter>();
  auto trainer = ppe::engine::create_trainer(
      model, optimizer, static_cast<double>(settings.epochs), trainer_options.out_dir(flags.out).device(flags.device),
      ppe::engine::create_evaluator(model, evaluator_options.device(flags.device)), ext::LogReport(),
      ext::LogReport(ext::LogReportOptions().writer(events)),
      ext::PlotReport({"train/loss", "val/loss", "train/accuracy", "val/accuracy"},
                      ext::PlotReportOptions().x_key("epoch")),
      ext::observe_lr(optimizer), ext::LRScheduler(schedule),
      ext::ProgressBar(ext::ProgressBarOptions().update_interval(100)),
      ext::PrintReport(ext::PrintReportOptions().entries(
          {"epoch", "iteration", "train/loss", "train/accuracy", "val/loss", "val/accuracy", "lr", "elapsed_time"})),
      ppe::training::entry(ext::snapshot(
          ext::SnapshotOptions().n_retains(1).autoload(flags.resume).saver_rank(saver_rank).safetensors(true)),
                           flags.snapshot_every ? ppe::iterations(static_cast<double>(*flags.snapshot_every))
                                                : ppe::epochs(1)),
      std::move(extra)...);
  trainer.run(train_range, test_range);
  return trainer_options.rank() == 0 ? report(trainer, flags, events.get()) : 0;
}

// The run of `--config FILE` (one process): the file's values, overridden by
// --set and the flags; the same steps, in the same order, as the flags' run.
int train_from_config(Flags& flags) {
  namespace cfg = ppe::config;
  cfg::Types types = cfg::standard_types();
  cfg::add_plot_types(types);         // PlotReport (ppe-plot)
  cfg::add_tensorboard_types(types);  // TensorBoardWriter (ppe-tensorboard)
  types.add("Classifier", {cfg::arg("net", cfg::Value::dict({}))},
            [](fashion::FashionNetOptions net) { return fashion::Classifier(fashion::FashionNet(net)); });
  cfg::Config config = cfg::Config::load(flags.config, types);
  for (const std::string& s : flags.sets) config.set(s);

  torch::set_num_threads(config.get<int>("/threads"));
  torch::manual_seed(config.get<std::uint64_t>("/seed"));
  auto train_set = config.get<ppe::dataset::FashionMNIST>("/train_dataset").map(torch::data::transforms::Stack<>());
  auto test_set = config.get<ppe::dataset::FashionMNIST>("/test_dataset").map(torch::data::transforms::Stack<>());
  const std::size_t train_size = *train_set.size();
  const std::size_t test_size = *test_set.size();
  // The model and optimizer are made here, before the loaders draw their
  // first shuffle, as in the flags' run.
  auto trainer = cfg::create_trainer<fashion::Classifier>(config);
  auto train_loader = torch::data::make_data_loader(
      std::move(train_set), torch::data::DataLoaderOptions(config.get<std::size_t>("/batch_size")));
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_set), torch::data::DataLoaderOptions(config.get<std::size_t>("/test_batch_size")));
  trainer->run(ppe::dataloaders::range(*train_loader, train_size), ppe::dataloaders::range(*test_loader, test_size));
  flags.out = config.get<std::string>("/trainer/out_dir");
  std::shared_ptr<ppe::writing::TensorBoardWriter> events;
  if (config.contains("/events")) events = config.get<std::shared_ptr<ppe::writing::TensorBoardWriter>>("/events");
  return report(*trainer, flags, events.get());
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = parse(argc, argv);
  try {
    if (!flags.config.empty()) return train_from_config(flags);
    ppe::distributed::ProcessInfo world;  // one process unless --distributed
    if (flags.distributed == "torchrun") world = ppe::distributed::initialize();
    if (flags.distributed == "mpi") world = ppe::distributed::initialize_ompi_environment();
    const bool distributed = !flags.distributed.empty();
    if (distributed && flags.train.batch_size % world.world_size != 0)
      usage("--batch-size " + std::to_string(flags.train.batch_size) + " is not divisible by the " +
            std::to_string(world.world_size) + " processes");
    fashion::TrainSettings& settings = flags.train;
    // The machine's cores are shared by its processes.
    torch::set_num_threads(std::max(1, settings.threads / world.local_world_size));
    torch::manual_seed(settings.seed);

    auto train_set = dataset(ppe::dataset::FashionMNIST::Mode::kTrain, flags.train_limit);
    auto test_set = dataset(ppe::dataset::FashionMNIST::Mode::kTest, flags.test_limit);
    const std::size_t train_size = *train_set.size();
    const std::size_t test_size = *test_set.size();
    fashion::Classifier model;
    ppe::to(model, flags.device);
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(settings.lr));

    if (!distributed) {
      // Shuffled training batches (a new order each epoch), test batches in order.
      auto train_loader = torch::data::make_data_loader(
          std::move(train_set), torch::data::DataLoaderOptions(static_cast<std::size_t>(settings.batch_size)));
      auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
          std::move(test_set), torch::data::DataLoaderOptions(500));
      // The sizes give the loaders a length (LibTorch's loaders have none).
      return train(model, optimizer, flags, {}, {}, std::nullopt, ppe::dataloaders::range(*train_loader, train_size),
                   ppe::dataloaders::range(*test_loader, test_size));
    }
    // This rank's share of each epoch's shuffled order (the same order on
    // every rank), and of the test set, in order, without repeats.
    ppe::dataloaders::ResumableSampler train_sampler(
        train_size, ppe::dataloaders::ResumableSamplerOptions().seed(settings.seed).num_replicas(world.world_size).rank(
                        world.rank));
    auto last_batch = std::make_shared<std::vector<std::size_t>>();
    auto train_loader = torch::data::make_data_loader(
        Recorded(std::move(train_set), last_batch), train_sampler,
        torch::data::DataLoaderOptions(static_cast<std::size_t>(settings.batch_size / world.world_size)));
    auto test_sampler = ppe::distributed::DistributedValidationSampler::from_process_group(test_size, false);
    const std::size_t test_share = test_sampler.size();
    auto test_loader = torch::data::make_data_loader(std::move(test_set), std::move(test_sampler),
                                                     torch::data::DataLoaderOptions(500));
    // A static graph: no search for unused parameters.
    ppe::nn::parallel::DistributedDataParallel ddp(model,
                                                   ppe::nn::parallel::DistributedDataParallelOptions().negotiate_grads(false));
    auto train_range = ppe::dataloaders::range(*train_loader, train_sampler);
    auto test_range = ppe::dataloaders::range(*test_loader, test_share);
    const auto trainer_options = ppe::distributed::for_process_group(ppe::engine::TrainerOptions());
    const auto evaluator_options = ppe::distributed::distributed_evaluation(ppe::engine::EvaluatorOptions());
    if (flags.sample_log.empty())
      return train(ddp, optimizer, flags, trainer_options, evaluator_options, 0, train_range, test_range);
    return train(ddp, optimizer, flags, trainer_options, evaluator_options, 0, train_range, test_range,
                 sample_log(flags.sample_log, last_batch, train_sampler));
  } catch (const c10::Error& e) {  // LibTorch's message, without its C++ backtrace
    std::cerr << "fashion_mnist: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
