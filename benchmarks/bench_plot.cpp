// The stall a PlotReport adds to the training thread (issue 16; target <= 1 ms at 10,000 points),
// and the time one render takes on the writer thread.
//
//   BM_PlotReportStall   a PlotReport of one key ("main/loss", marker "x") starts from a history of
//                        10,000 points (loaded as state) and emits at every iteration of a manager
//                        (kEmissions iterations), so each call adds a point, copies the history into
//                        a figure and queues its render and write on the PlotReport's own
//                        ThreadQueueWriter. The call itself is timed (steady_clock, inside a wrapper
//                        extension): counters mean_us, p50_us, p99_us, max_us, first_us (the first
//                        call also starts the writer thread); finalize_ms is how long finalize()
//                        then waited for the queued renders.
//   BM_RenderPng10000    plot::render_png of that figure: what the writer thread does per emission.
//   BM_RenderPng10000NoMarkers  the same without markers.
//   BM_VariableStatisticsPlotCall  VariableStatisticsPlot's per-call statistics (mean, std, 9
//                        percentiles of data and grad) of a Linear(316, 316) (~100k parameters).
//
// The PNGs are left in $TMPDIR/ppe_bench_plot to look at.

#include <ATen/ops/rand.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <ppe/reporting.hpp>
#include <ppe/training.hpp>
#include <ppe/training/extensions/plot_report.hpp>
#include <ppe/training/extensions/variable_statistics_plot.hpp>

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

constexpr int kPoints = 10000;
constexpr int kEmissions = 40;

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

std::string history_json(int n) {
  std::string s = "{\"main/loss\": [";
  for (int i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += "[" + std::to_string(i + 1) + ", " + std::to_string(std::exp(-i / 3000.0)) + "]";
  }
  return s + "]}";
}

void set_stats(benchmark::State& state, std::vector<double> us) {
  state.counters["first_us"] = us.front();
  std::sort(us.begin(), us.end());
  const auto pct = [&](double p) {
    return us[std::min(us.size() - 1, static_cast<std::size_t>(std::ceil(p * static_cast<double>(us.size() - 1))))];
  };
  state.counters["mean_us"] = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  state.counters["p50_us"] = pct(0.5);
  state.counters["p99_us"] = pct(0.99);
  state.counters["max_us"] = us.back();
}

std::filesystem::path out_dir() {
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "ppe_bench_plot";
  std::filesystem::create_directories(out);
  return out;
}

ext::PlotReport make_plot(const std::string& filename, const std::string& marker) {
  ext::PlotReport plot("main/loss",
                       ext::PlotReportOptions().trigger(ppe::iterations(1)).filename(filename).marker(marker));
  plot.load_state_dict(ppe::State::dict({{"_plot_" + filename, history_json(kPoints)}}));
  return plot;
}



void BM_PlotReportStall(benchmark::State& state) {
  for (auto _ : state) {
    auto plot = std::make_shared<ext::PlotReport>(make_plot("plot_10000.png", "x"));
    std::vector<double> call_us;
    call_us.reserve(kEmissions);
    auto manager = tr::ExtensionsManager(
        tr::ManagerOptions().max_epochs(1).iters_per_epoch(kEmissions).out_dir(out_dir().string()), tr::Models{},
        tr::Optimizers{},
        tr::make_extension(
            [plot, &call_us](tr::Manager& m) {
              const auto t0 = Clock::now();
              (*plot)(m);
              call_us.push_back(us_since(t0));
            },
            ppe::iterations(1), "timed_plot_report"));
    manager.set_iteration(kPoints);
    for (int i = 0; i < kEmissions; ++i)
      manager.run_iteration([&] { ppe::reporting::report({{"main/loss", 0.01 * i}}); });
    const auto t_fin = Clock::now();
    plot->finalize(manager);
    state.counters["finalize_ms"] = us_since(t_fin) / 1000.0;
    manager.finalize();
    set_stats(state, call_us);
  }
}
BENCHMARK(BM_PlotReportStall)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_RenderPng10000(benchmark::State& state) {
  const ext::plot::Figure fig = make_plot("plot.png", "x").figure();
  for (auto _ : state) benchmark::DoNotOptimize(ext::plot::render_png(fig));
}
BENCHMARK(BM_RenderPng10000)->Iterations(5)->Unit(benchmark::kMillisecond);

void BM_RenderPng10000NoMarkers(benchmark::State& state) {
  const ext::plot::Figure fig = make_plot("plot.png", "").figure();
  for (auto _ : state) benchmark::DoNotOptimize(ext::plot::render_png(fig));
}
BENCHMARK(BM_RenderPng10000NoMarkers)->Iterations(5)->Unit(benchmark::kMillisecond);

void BM_VariableStatisticsPlotCall(benchmark::State& state) {
  torch::nn::Linear lin(316, 316);  // ~100k parameters
  lin->forward(at::rand({4, 316})).sum().backward();
  auto vsp = std::make_shared<ext::VariableStatisticsPlot>(
      lin, ext::VariableStatisticsPlotOptions().trigger(ppe::iterations(1000000)));
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(1000).iters_per_epoch(1000).out_dir(out_dir().string()), tr::Models{},
      tr::Optimizers{}, tr::make_extension([vsp](tr::Manager& m) { (*vsp)(m); }, ppe::iterations(1), "vsp"));
  for (auto _ : state) manager.run_iteration([] {});
  manager.finalize();
}
BENCHMARK(BM_VariableStatisticsPlotCall)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
