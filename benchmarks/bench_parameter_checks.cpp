// Cost of one call of FailOnNonNumber and of ParameterStatistics on a model of
// P parameters, against the same reductions written by hand (goal: <= 1.1x):
//
//   BM_FailOnNonNumber/P              FailOnNonNumber()(manager): the sum of each
//                                     parameter and gradient, added on the device,
//                                     one host read.
//   BM_FailOnNonNumberHandWritten/P   the same sums over model->parameters() by
//                                     hand, stacked, one item().
//   BM_FailOnNonNumberPerTensor/P     PPE's loop: isfinite(t).all().item() per
//                                     tensor (a host read per tensor; what the
//                                     fused check replaces).
//   BM_ParameterStatistics/P          ParameterStatistics with its interval
//                                     trigger firing at every call: the default
//                                     statistics (mean, std, min, max, zeros) of
//                                     each parameter and gradient, added to the
//                                     device sums, read in one transfer and
//                                     reported (80 keys).
//   BM_ParameterStatisticsHandWritten/P  the same statistics by hand, stacked,
//                                     one transfer, the 80 keys reported.
//   BM_QuietIteration/N               one run_iteration (empty body) of a manager
//                                     with N = 0 extensions, or N = 2: both
//                                     extensions on an interval of 10^6
//                                     iterations (the quiet path: only the
//                                     manager's trigger window check).
//
// The model: 8 tensors (4 weights and 4 biases of an MLP-like network) of P
// parameters in all, each with a gradient; float32 on the CPU.

#include <benchmark/benchmark.h>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/randn_like.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/stack.h>
#include <torch/nn/module.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ppe/ppe.hpp>
#include <ppe/training/extensions/fail_on_non_number.hpp>
#include <ppe/training/extensions/parameter_statistics.hpp>

namespace {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

// 4 weights (50, 30, 15, 5 % of what the biases leave) and 4 biases, with gradients.
struct Mlp : torch::nn::Module {
  explicit Mlp(std::int64_t total) {
    const std::int64_t biases[] = {1024, 512, 256, 10};
    const double shares[] = {0.5, 0.3, 0.15, 0.05};
    const std::int64_t weights = total - (1024 + 512 + 256 + 10);
    std::int64_t used = 0;
    for (int i = 0; i < 4; ++i) {
      const std::int64_t w = i == 3 ? weights - used : static_cast<std::int64_t>(static_cast<double>(weights) * shares[i]);
      used += w;
      add("fc" + std::to_string(i + 1) + "_weight", w);
      add("fc" + std::to_string(i + 1) + "_bias", biases[i]);
    }
  }
  void add(const std::string& name, std::int64_t n) {
    at::Tensor& p = register_parameter(name, at::randn({n}));
    p.mutable_grad() = at::randn_like(p);
  }
};

auto make_manager(const std::shared_ptr<Mlp>& model) {
  return tr::ExtensionsManager(tr::ManagerOptions().max_epochs(1).iters_per_epoch(1'000'000'000), model,
                               tr::Optimizers{});
}

void BM_FailOnNonNumber(benchmark::State& state) {
  auto model = std::make_shared<Mlp>(state.range(0));
  auto manager = make_manager(model);
  ext::FailOnNonNumber check;
  for (auto _ : state) check(manager);
}

void BM_FailOnNonNumberHandWritten(benchmark::State& state) {
  auto model = std::make_shared<Mlp>(state.range(0));
  for (auto _ : state) {
    const at::NoGradGuard no_grad;
    std::vector<at::Tensor> sums;
    for (const at::Tensor& p : model->parameters()) {
      sums.push_back(p.sum());
      if (p.grad().defined()) sums.push_back(p.grad().sum());
    }
    if (!std::isfinite(at::stack(sums).sum().item<double>())) throw std::runtime_error("diverged");
  }
}

void BM_FailOnNonNumberPerTensor(benchmark::State& state) {
  auto model = std::make_shared<Mlp>(state.range(0));
  for (auto _ : state) {
    for (const at::Tensor& p : model->parameters()) {
      if (!at::isfinite(p).all().item<bool>()) throw std::runtime_error("diverged");
      if (p.grad().defined() && !at::isfinite(p.grad()).all().item<bool>()) throw std::runtime_error("diverged");
    }
  }
}

void BM_ParameterStatistics(benchmark::State& state) {
  auto model = std::make_shared<Mlp>(state.range(0));
  auto manager = make_manager(model);
  auto scope = manager.reporter().scope(manager.observation());
  ext::ParameterStatistics stats(model, {}, ppe::iterations(1));
  std::int64_t it = 0;
  for (auto _ : state) {
    manager.set_iteration(++it);  // so that the interval trigger fires at each call
    stats(manager);
  }
  if (manager.observation().size() != 80) state.SkipWithError("expected 80 reported keys");
}

void BM_ParameterStatisticsHandWritten(benchmark::State& state) {
  auto model = std::make_shared<Mlp>(state.range(0));
  auto manager = make_manager(model);
  auto scope = manager.reporter().scope(manager.observation());
  std::vector<std::string> keys;
  for (const auto& item : model->named_parameters())
    for (const char* attr : {"/data/", "/grad/"})
      for (const char* s : {"mean", "std", "min", "max", "zeros"}) keys.push_back(item.key() + attr + s);
  for (auto _ : state) {
    const at::NoGradGuard no_grad;
    std::vector<at::Tensor> values;
    for (const at::Tensor& p : model->parameters())
      for (const at::Tensor& t : {p, p.grad()}) {
        const at::Tensor x = t.reshape(-1);
        values.push_back(x.mean().to(at::kDouble));
        values.push_back(x.std().to(at::kDouble));
        values.push_back(x.min().to(at::kDouble));
        values.push_back(x.max().to(at::kDouble));
        values.push_back(at::rsub(at::count_nonzero(x), x.numel()).to(at::kDouble));
      }
    const at::Tensor host = at::stack(values).to(at::kCPU);
    const auto a = host.accessor<double, 1>();
    for (std::size_t i = 0; i < keys.size(); ++i)
      ppe::reporting::report({{keys[i], a[static_cast<std::int64_t>(i)]}});
  }
  if (manager.observation().size() != 80) state.SkipWithError("expected 80 reported keys");
}

void BM_QuietIteration(benchmark::State& state) {
  auto model = std::make_shared<Mlp>(100'000);
  const auto run = [&](auto& manager) {
    for (auto _ : state) manager.run_iteration([] {});
  };
  if (state.range(0) == 0) {
    auto manager = make_manager(model);
    run(manager);
  } else {
    auto manager = tr::ExtensionsManager(
        tr::ManagerOptions().max_epochs(1).iters_per_epoch(1'000'000'000), model, tr::Optimizers{},
        tr::entry(ext::FailOnNonNumber(), ppe::iterations(1'000'000)),
        tr::entry(ext::ParameterStatistics(model, {}, ppe::iterations(1)), ppe::iterations(1'000'000)));
    run(manager);
  }
}

}  // namespace

BENCHMARK(BM_FailOnNonNumber)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FailOnNonNumberHandWritten)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FailOnNonNumberPerTensor)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParameterStatistics)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParameterStatisticsHandWritten)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QuietIteration)->Arg(0)->Arg(2);

BENCHMARK_MAIN();
