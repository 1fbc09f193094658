// ppe on a CUDA device (issue 29). Every case skips, with one line for the
// run, where LibTorch sees no CUDA device (tests/support/cuda.hpp); `./dev
// gpu-check` builds and runs them against PyTorch's own LibTorch on a GPU
// machine. They check:
// - the host synchronisations of a managed loop (c10's sync debug mode and
//   ppe_test::SyncCounter): none on a quiet iteration, one per log line;
// - a GradScaler step on CUDA (fused ATen kernels) against the same step on
//   the CPU (ppe's arithmetic), bit for bit, and the sync-free step;
// - snapshot and resume of a model trained on CUDA; the profiler's CUDA
//   events; RngState and checkpoint with the CUDA generator; safetensors of
//   CUDA tensors;
// - the demo's network, data and trainer (`fashion_mnist --device cuda`
//   without its PLplot, TensorBoard and YAML parts, which a machine without
//   Debian's packages lacks) on a part of Fashion-MNIST;
// and print the sync counts and the time per iteration of ppe's manager and
// trainer against the same loop by hand.

#include "ppe_test.hpp"

#include <torch/data/dataloader.h>
#include <torch/data/samplers/sequential.h>
#include <torch/data/transforms/stack.h>

#include <ppe/amp/masked_step.hpp>
#include <ppe/dataloaders/loader_range.hpp>
#include <ppe/dataset/fashion_mnist.hpp>
#include <ppe/engine.hpp>
#include <ppe/profiler/record.hpp>
#include <ppe/runtime/autocast.hpp>
#include <ppe/serialization/safetensors.hpp>
#include <ppe/utils/checkpoint.hpp>
#include <ppe/utils/rng_state.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstdio>
#include <sstream>
#include <vector>

#include "../../examples/fashion_mnist/net.hpp"
#include "cuda.hpp"
#include "sync_counter.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_cuda_tests_test_cuda {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

// The model: an MLP 784-512-512-10 on batches of 64, data on the GPU.
struct MlpImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  MlpImpl() {
    l1 = register_module("l1", torch::nn::Linear(784, 512));
    l2 = register_module("l2", torch::nn::Linear(512, 512));
    l3 = register_module("l3", torch::nn::Linear(512, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) { return l3(torch::relu(l2(torch::relu(l1(x))))); }
};
TORCH_MODULE(Mlp);

// The same network returning its loss and reporting it (for the trainer).
struct MlpLossImpl : torch::nn::Module {
  Mlp net{nullptr};
  explicit MlpLossImpl(Mlp n) { net = register_module("net", n); }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& y) {
    auto loss = torch::nn::functional::cross_entropy(net(x), y);
    ppe::reporting::report({{is_training() ? "train/loss" : "val/loss", loss}});
    return loss;
  }
};
TORCH_MODULE(MlpLoss);

struct Data {
  std::vector<std::tuple<torch::Tensor, torch::Tensor>> batches;
  explicit Data(int n) {
    for (int i = 0; i < n; ++i)
      batches.emplace_back(torch::randn({64, 784}, torch::kCUDA), torch::randint(0, 10, {64}, torch::kCUDA));
  }
};

void train_step(Mlp& net, torch::optim::SGD& opt, const std::tuple<torch::Tensor, torch::Tensor>& b, bool report) {
  opt.zero_grad();
  auto loss = torch::nn::functional::cross_entropy(net(std::get<0>(b)), std::get<1>(b));
  loss.backward();
  opt.step();
  if (report) ppe::reporting::report({{"main/loss", loss}});
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per iteration of `run(iterations)`, median of 3, the device
// drained before and after.
template <class F>
double us_per_iteration(int iterations, F&& run) {
  std::vector<double> times;
  for (int rep = 0; rep < 3; ++rep) {
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    run(iterations);
    torch::cuda::synchronize();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                    iterations);
  }
  return median(times);
}

template <class Net>
auto make_manager(const ppe_test::TempDir& dir, Net& net, torch::optim::SGD& opt, std::ostream& out, int epochs) {
  return tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(epochs).iters_per_epoch(200).out_dir(dir.str()), net, opt,
      ext::observe_lr(opt), ext::LogReport(), ext::PrintReport(ext::PrintReportOptions().out(&out)),
      tr::entry(ext::snapshot(ext::SnapshotOptions().writer(std::make_shared<ppe::writing::ThreadWriter>())),
                ppe::epochs(1)));
}

}  // namespace

TEST_CASE("CUDA: a managed loop synchronises only where an extension shows or saves something") {
  if (!ppe_test::cuda_or_skip()) return;
  torch::manual_seed(0);
  ppe_test::TempDir dir;
  Mlp net;
  net->to(torch::kCUDA);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  Data data(200);
  std::ostringstream out;
  auto manager = make_manager(dir, net, opt, out, 5);
  manager.start_extensions();
  int quiet_syncs = 0, quiet_flagged = 0, quiet = 0, epoch_end_syncs = 0;
  while (!manager.finalized()) {
    for (const auto& b : data.batches) {
#if PPE_TEST_CUDA
      ppe_test::CudaSyncCounter syncs;
#endif
      ppe_test::SyncCounter flagged;
      manager.run_iteration([&] { train_step(net, opt, b, /*report=*/true); });
      const bool epoch_end = manager.iteration() % 200 == 0;
#if PPE_TEST_CUDA
      (epoch_end ? epoch_end_syncs : quiet_syncs) += syncs.count();
#endif
      if (!epoch_end) {
        ++quiet;
        quiet_flagged += static_cast<int>(flagged.count());
        INFO("iteration ", manager.iteration(), ": ", flagged.text());
        CHECK(flagged.count() == 0);
      }
    }
  }
  std::printf("manager, fp32: %d host syncs on %d quiet iterations (%d flagged ops); %d on the 5 epoch ends "
              "(LogReport's one read, the snapshot's copies)\n",
              quiet_syncs, quiet, quiet_flagged, epoch_end_syncs);
  CHECK(quiet_syncs == 0);
  CHECK(out.str().find("main/loss") != std::string::npos);
}

TEST_CASE("CUDA: time per iteration of the manager and the trainer against the loop by hand") {
  if (!ppe_test::cuda_or_skip()) return;
  torch::manual_seed(0);
  Mlp net;
  net->to(torch::kCUDA);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  Data data(200);
  const int n = 2000;
  const double by_hand = us_per_iteration(n, [&](int iterations) {
    for (int i = 0; i < iterations; ++i) train_step(net, opt, data.batches[static_cast<std::size_t>(i % 200)], false);
  });
  const double managed = us_per_iteration(n, [&](int iterations) {
    ppe_test::TempDir dir;
    std::ostringstream out;
    auto manager = make_manager(dir, net, opt, out, iterations / 200);
    while (!manager.finalized())
      for (const auto& b : data.batches) manager.run_iteration([&] { train_step(net, opt, b, true); });
  });
  MlpLoss with_loss(net);
  ppe::to(with_loss, "cuda");
  double trainer_us = 0;
  int trainer_syncs = -1;
  trainer_us = us_per_iteration(n, [&](int iterations) {
    ppe_test::TempDir dir;
    std::ostringstream out;
    auto trainer = ppe::engine::create_trainer(
        with_loss, opt, iterations / 200, ppe::engine::TrainerOptions().out_dir(dir.str()).device("cuda"),
        ext::observe_lr(opt), ext::LogReport(), ext::PrintReport(ext::PrintReportOptions().out(&out)));
#if PPE_TEST_CUDA
    ppe_test::CudaSyncCounter syncs;
    trainer.run(data.batches);
    trainer_syncs = syncs.count();
#else
    trainer.run(data.batches);
#endif
  });
  std::printf("time per iteration (median of 3 runs of %d): by hand %.1f us, manager %.1f us (%.3fx), trainer %.1f "
              "us (%.3fx); trainer: %d host syncs in %d iterations (10 epochs)\n",
              n, by_hand, managed, managed / by_hand, trainer_us, trainer_us / by_hand, trainer_syncs, n);
  CHECK(by_hand > 0);
}

TEST_CASE("CUDA: safetensors writes CUDA tensors (copied to the CPU) and reads them back bit for bit") {
  if (!ppe_test::cuda_or_skip()) return;
  const at::Tensor w = torch::randn({64, 32}, torch::kCUDA);
  const at::Tensor t = torch::randn({8, 8}, torch::kCUDA).t();  // not contiguous either
  const auto file =
      ppe::serialization::safetensors_loads(ppe::serialization::safetensors_dumps({{"w", w}, {"t", t}}));
  CHECK(torch::equal(*file.find("w"), w.cpu()));
  CHECK(torch::equal(*file.find("t"), t.cpu()));
}

TEST_CASE("CUDA: GradScaler's fused kernels equal ppe's CPU arithmetic bit for bit") {
  if (!ppe_test::cuda_or_skip()) return;
  // The same gradients (some steps with inf or NaN) on both devices.
  torch::manual_seed(0);
  std::vector<torch::Tensor> grads_seq;
  for (int step = 0; step < 12; ++step) {
    auto g = torch::randn({5, 3}) * 1000;
    if (step == 2) g[1][1] = std::numeric_limits<float>::infinity();
    if (step == 7) g[0][2] = std::numeric_limits<float>::quiet_NaN();
    grads_seq.push_back(g);
  }
  auto run = [&](torch::Device device) {
    auto p = torch::zeros({5, 3}, torch::TensorOptions().device(device)).requires_grad_(true);
    torch::optim::SGD opt({p}, torch::optim::SGDOptions(0.1));
    ppe::amp::GradScaler scaler(ppe::amp::GradScalerOptions().init_scale(1024.0).growth_interval(3));
    std::vector<torch::Tensor> trace;
    for (const auto& g : grads_seq) {
      opt.zero_grad();
      (void)scaler.scale(torch::zeros({}, torch::TensorOptions().device(device)));
      p.mutable_grad() = (g * scaler.get_scale()).to(device);
      scaler.unscale_(opt);
      trace.push_back(p.grad().cpu().clone());
      scaler.step(opt);
      scaler.update();
      trace.push_back(p.detach().cpu().clone());
      trace.push_back(torch::tensor({scaler.get_scale(), static_cast<double>(scaler.growth_tracker())}));
    }
    return trace;
  };
  const auto cpu = run(torch::kCPU);
  const auto cuda = run(torch::kCUDA);
  REQUIRE(cpu.size() == cuda.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::equal(cpu[i].nan_to_num(0, 1, -1), cuda[i].nan_to_num(0, 1, -1)));
  }
}

TEST_CASE("CUDA: an fp16 autocast step with a sync-free GradScaler waits for nothing, counting steps included") {
  if (!ppe_test::cuda_or_skip()) return;
  torch::manual_seed(0);
  Mlp net;
  net->to(torch::kCUDA);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  Data data(20);
  auto run = [&](bool sync_free) {
    ppe::amp::GradScaler scaler(ppe::amp::GradScalerOptions().sync_free(sync_free));
    ppe::amp::StepCounter counter;
    int syncs_total = 0;
    std::size_t flagged_total = 0;
    for (const auto& b : data.batches) {
      opt.zero_grad();
      torch::Tensor loss;
      {
        ppe::runtime::AutocastGuard autocast(c10::DeviceType::CUDA, true, torch::kHalf);
        loss = torch::nn::functional::cross_entropy(net(std::get<0>(b)), std::get<1>(b));
      }
      scaler.scale(loss).backward();
#if PPE_TEST_CUDA
      ppe_test::CudaSyncCounter syncs;
#endif
      ppe_test::SyncCounter flagged;
      scaler.step(opt, counter);  // records the step, on the device when sync-free
      scaler.update();
#if PPE_TEST_CUDA
      syncs_total += syncs.count();
#endif
      flagged_total += flagged.count();
    }
    // Each skipped step halved the scale (no growth within 2000 steps): the
    // applied steps are the others. The count (read once, here) must agree.
    const auto skipped = static_cast<std::int64_t>(std::lround(std::log2(65536.0 / scaler.get_scale())));
    CHECK(counter.count() == static_cast<std::int64_t>(data.batches.size()) - skipped);
    return std::pair{syncs_total, flagged_total};
  };
  const auto [sync_syncs, sync_flagged] = run(false);
  const auto [free_syncs, free_flagged] = run(true);
  std::printf("fp16 autocast + GradScaler, 20 steps: %d host syncs synchronising (%zu flagged ops), %d sync-free "
              "(%zu flagged ops)\n",
              sync_syncs, sync_flagged, free_syncs, free_flagged);
  CHECK(sync_flagged >= 20);
  CHECK(free_flagged == 0);
#if PPE_TEST_CUDA
  CHECK(free_syncs == 0);
#endif
}

TEST_CASE("CUDA: a summary folds unequally weighted CUDA tensors without waiting for the device") {
  if (!ppe_test::cuda_or_skip()) return;
  // 64 values i % 4, weight 2 for odd i: Σw = 32 + 64 = 96; Σwx = 16·(0 + 2)
  // + 2·16·(1 + 3) = 32 + 128 = 160; the mean is 160 / 96.
  ppe::reporting::Summary s;
  {
#if PPE_TEST_CUDA
    ppe_test::CudaSyncCounter syncs;
#endif
    ppe_test::SyncCounter flagged;
    for (int i = 0; i < 64; ++i) s.add(torch::full({}, static_cast<double>(i % 4), torch::kCUDA), i % 2 ? 2.0 : 1.0);
    CHECK(flagged.text() == "none");  // the weights go through pinned memory, without blocking
#if PPE_TEST_CUDA
    CHECK(syncs.count() == 0);
#endif
  }
  CHECK(s.compute_mean().to_double() == doctest::Approx(160.0 / 96.0));
}

TEST_CASE("CUDA: a snapshot of a model trained on CUDA resumes it on CUDA") {
  if (!ppe_test::cuda_or_skip()) return;
  torch::manual_seed(0);
  ppe_test::TempDir dir;
  Data data(10);
  auto make = [&](Mlp& net, torch::optim::SGD& opt, double epochs) {
    return tr::ExtensionsManager(tr::ManagerOptions().max_epochs(epochs).iters_per_epoch(10).out_dir(dir.str()), net,
                                 opt, ext::snapshot(ext::SnapshotOptions().autoload(true)));
  };
  Mlp a;
  a->to(torch::kCUDA);
  torch::optim::SGD opt_a(a->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  {
    auto m = make(a, opt_a, 2);
    while (!m.finalized())
      for (const auto& b : data.batches) m.run_iteration([&] { train_step(a, opt_a, b, false); });
  }
  Mlp b;
  b->to(torch::kCUDA);
  torch::optim::SGD opt_b(b->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  auto m = make(b, opt_b, 3);
  m.start_extensions();  // autoload: the epoch-2 snapshot
  CHECK(m.iteration() == 20);
  const auto pa = a->parameters(), pb = b->parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CHECK(pb[i].is_cuda());
    CHECK(torch::equal(pa[i], pb[i]));
  }
  // One more epoch on both from the same state stays equal.
  for (const auto& batch : data.batches) {
    train_step(a, opt_a, batch, false);
    m.run_iteration([&] { train_step(b, opt_b, batch, false); });
  }
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK(torch::equal(pa[i], pb[i]));
}

TEST_CASE("CUDA: the profiler records CUDA time; RngState and checkpoint keep the CUDA generator") {
  if (!ppe_test::cuda_or_skip()) return;
  ppe::profiler::TimeSummary summary;
  {
    ppe::profiler::Record r("matmul", ppe::profiler::RecordOptions().summary(&summary).use_cuda(true));
    auto x = torch::randn({256, 256}, torch::kCUDA);
    (void)x.matmul(x);
  }
  bool cuda_entry = false;
  for (const auto& [k, v] : summary.summary()) cuda_entry = cuda_entry || (k == "matmul.cuda" && v.count == 1);
  CHECK(cuda_entry);

  ppe::utils::RngState rng;
  CHECK(ppe::utils::RngState::num_cuda_devices() >= 1);
  const ppe::State saved = rng.state_dict();
  const auto first = torch::rand({8}, torch::kCUDA);
  rng.load_state_dict(saved);
  CHECK(torch::equal(torch::rand({8}, torch::kCUDA), first));

  torch::manual_seed(0);
  torch::nn::Linear l1(8, 16), l2(16, 4);
  l1->to(torch::kCUDA);
  l2->to(torch::kCUDA);
  auto fn = [&](const torch::Tensor& x) { return l2(torch::dropout(l1(x).tanh(), 0.5, /*train=*/true)).sin(); };
  const auto x0 = torch::rand({5, 8}, torch::kCUDA);
  auto grads = [&](bool checked) {
    l1->zero_grad();
    auto x = x0.clone().requires_grad_(true);
    torch::manual_seed(7);
    auto y = checked ? ppe::utils::checkpoint(fn, x) : fn(x);
    (void)torch::rand({100}, torch::kCUDA);  // moves the CUDA generator between forward and backward
    y.pow(2).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), x.grad(), l1->weight.grad().clone()};
  };
  const auto plain = grads(false), checked = grads(true);
  for (std::size_t i = 0; i < plain.size(); ++i) CHECK(torch::equal(plain[i], checked[i]));
}

TEST_CASE("CUDA: the demo's network trains on Fashion-MNIST with the trainer and evaluator on the device") {
  if (!ppe_test::cuda_or_skip()) return;
  torch::manual_seed(0);
  using Mode = ppe::dataset::FashionMNIST::Mode;
  auto set = [](Mode mode, std::int64_t limit) {
    return ppe::dataset::FashionMNIST(ppe::dataset::FashionMNISTOptions().mode(mode).limit(limit))
        .map(torch::data::transforms::Stack<>());
  };
  auto train_set = set(Mode::kTrain, 8192), test_set = set(Mode::kTest, 2048);
  const std::size_t train_size = *train_set.size(), test_size = *test_set.size();
  fashion::Classifier model;
  ppe::to(model, "cuda");
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(2e-3));
  ppe_test::TempDir dir;
  std::ostringstream out;
  auto trainer = ppe::engine::create_trainer(
      model, optimizer, 3, ppe::engine::TrainerOptions().out_dir(dir.str()).device("cuda"),
      ppe::engine::create_evaluator(model, ppe::engine::EvaluatorOptions().device("cuda")), ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().out(&out)));
  auto train_loader = torch::data::make_data_loader(std::move(train_set), torch::data::DataLoaderOptions(128));
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_set), torch::data::DataLoaderOptions(256));
  const auto t0 = std::chrono::steady_clock::now();
  trainer.run(ppe::dataloaders::range(*train_loader, train_size), ppe::dataloaders::range(*test_loader, test_size));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& log = trainer.manager().get_extension<ext::LogReport>("LogReport").log();
  REQUIRE(log.size() == 3);
  const double accuracy = log.back().find("val/accuracy")->to_double();
  std::printf("Fashion-MNIST on CUDA (8192 training, 2048 test images, 3 epochs): val/accuracy %.4f in %.1f s\n",
              accuracy, seconds);
  CHECK(model->parameters().front().is_cuda());
  CHECK(accuracy > 0.6);  // chance is 0.1; the demo reaches 0.9 on all the data
}

}  // namespace ppe_test_cuda_tests_test_cuda
