// Port of PPE's tests/.../extensions_tests/test_variable_statistics_plot.py (test_run_and_save_plot,
// test_reservoir_size, test_statistician_percentile), plus the PNG's content (decoded with libpng),
// the layouts, the reservoir's sampling and state, and bad arguments.
#include "ppe_test.hpp"

#include <ppe/training/extensions/variable_statistics_plot.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "png_image.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_variable_statistics_plot {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace vsp = ppe::training::extensions::variable_statistics_plot;

// PPE test_run_and_save_plot: ipe 1, 2 epochs, plot every iteration, a (1, 2, 3) tensor as target.
TEST_CASE("PPE test_run_and_save_plot") {
  ppe_test::TempDir dir;
  torch::manual_seed(0);
  const at::Tensor x = torch::rand({1, 2, 3});
  auto manager = tr::ExtensionsManager(
      ppe_test::options(2, 1).out_dir(dir.str()), tr::Models{}, tr::Optimizers{},
      tr::entry(ext::VariableStatisticsPlot(
                    x, ext::VariableStatisticsPlotOptions()
                           .trigger(ppe::iterations(1))
                           .filename("variable_statistics_plot_test.png")),
                ppe::iterations(1)));
  for (int i = 0; i < 2; ++i) ppe_test::step(manager);
  manager.finalize();
  const ppe_test::DecodedPng png = ppe_test::decode_png_file(dir / "variable_statistics_plot_test.png");
  CHECK(png.width == 640);
  CHECK(png.height == 480);
  CHECK(png.distinct_colors() > 50);
  CHECK(png.non_white() > 640 * 480 / 50);
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    CHECK(e.path().filename().string().rfind("tmp_", 0) != 0);
  const auto& ext_ = manager.get_extension<ext::VariableStatisticsPlot>("VariableStatisticsPlot");
  CHECK(ext_.samples().counter() == 2);
  CHECK(ext_.keys() == std::vector<std::string>{"data", "grad"});
}

// PPE test_reservoir_size: shape (2, 7, 3), 5 values into a reservoir of 3.
TEST_CASE("PPE test_reservoir_size") {
  const std::vector<std::int64_t> shape{2, 7, 3};
  vsp::Reservoir reservoir(3, shape);
  for (int i = 0; i < 5; ++i) reservoir.add(2 * torch::rand(shape) - 1);
  const auto [idxs, data] = reservoir.get_data();
  CHECK(idxs.size() == 3);
  CHECK(data.size(0) == 3);
  CHECK(data[0].sizes() == at::IntArrayRef(shape));
  CHECK(std::is_sorted(idxs.begin(), idxs.end()));
  CHECK(reservoir.counter() == 5);
}

// The sampling: the first `size` values are kept with their indexes (PPE: `idx or counter`), later
// ones replace at random; every index stays one that was added; the state round-trips.
TEST_CASE("Reservoir sampling and state") {
  vsp::Reservoir r(4, {1}, /*seed=*/7);
  r.add(torch::full({1}, 10.0), 0);  // idx 0: the counter (0)
  for (std::int64_t it = 1; it <= 3; ++it) r.add(torch::full({1}, static_cast<double>(it)), it * 10);
  {
    const auto [idxs, data] = r.get_data();
    CHECK(idxs == std::vector<std::int64_t>{0, 10, 20, 30});
    CHECK(data.reshape({-1}).allclose(torch::tensor({10.0f, 1.0f, 2.0f, 3.0f})));
  }
  for (std::int64_t it = 4; it < 200; ++it) r.add(torch::full({1}, static_cast<double>(it)), it * 10);
  const auto [idxs, data] = r.get_data();
  REQUIRE(idxs.size() == 4);
  CHECK(std::is_sorted(idxs.begin(), idxs.end()));
  CHECK(idxs.back() > 30);  // some of the 196 later values entered (seed fixed)
  for (std::size_t i = 0; i < idxs.size(); ++i)
    CHECK(data[static_cast<std::int64_t>(i)].item<float>() == (idxs[i] == 0 ? 10.0f : static_cast<float>(idxs[i] / 10)));

  vsp::Reservoir copy(4, {1});
  copy.load_state_dict(r.state_dict());
  const auto [idxs2, data2] = copy.get_data();
  CHECK(idxs2 == idxs);
  CHECK(data2.equal(data));
  CHECK(copy.counter() == 200);

  CHECK_THROWS_WITH_AS(r.add(torch::zeros({2})), doctest::Contains("shape [2] was added to a reservoir of shape [1]"),
                       std::invalid_argument);
  vsp::Reservoir other(2, {1});
  CHECK_THROWS_WITH_AS(other.load_state_dict(r.state_dict()), doctest::Contains("does not fit a reservoir of size 2"),
                       std::invalid_argument);
}

// PPE test_statistician_percentile: percentiles (0, 100) are the min and max; mean and (unbiased) std
// are torch's; the dtype is the input's.
TEST_CASE("PPE test_statistician_percentile") {
  const at::Tensor x = 2 * torch::rand({2, 7, 3}) - 1;
  const vsp::Statistician statistician(true, true, {0.0, 100.0});
  const at::Tensor s = statistician(x);
  CHECK((s.scalar_type() == x.scalar_type()));
  REQUIRE(s.numel() == 4);
  CHECK(s[0].allclose(x.mean()));
  CHECK(s[1].allclose(x.std()));
  CHECK(s[2].allclose(x.min()));
  CHECK(s[3].allclose(x.max()));
  // numpy.percentile([1, 2, 3, 4], [25, 50]) == [1.75, 2.5] (linear interpolation)
  const at::Tensor q = vsp::Statistician(false, false, {25.0, 50.0})(torch::tensor({4.0, 1.0, 3.0, 2.0}));
  CHECK(q.to(torch::kDouble).allclose(torch::tensor({1.75, 2.5}).to(torch::kDouble)));
  CHECK(vsp::Statistician(true, true, {50.0})(torch::zeros({0})).isnan().all().item<bool>());
}

TEST_CASE("VariableStatisticsPlot: modules, gradients, layouts and figure size") {
  ppe_test::TempDir dir;
  torch::nn::Linear lin(3, 2);
  auto manager = tr::ExtensionsManager(
      ppe_test::options(1, 4).out_dir(dir.str()), tr::Models{}, tr::Optimizers{},
      ext::VariableStatisticsPlot(lin, ext::VariableStatisticsPlotOptions().figsize(std::pair{800, 300}).marker("o")),
      ext::VariableStatisticsPlot(lin, ext::VariableStatisticsPlotOptions()
                                           .report_grad(false)
                                           .plot_std(false)
                                           .percentile_sigmas({10, 50, 90, 100})
                                           .filename("even.png")),
      ext::VariableStatisticsPlot(lin, ext::VariableStatisticsPlotOptions()
                                           .plot_mean(false)
                                           .plot_std(false)
                                           .filename("percentiles.png")));
  for (int i = 0; i < 4; ++i)
    manager.run_iteration([&] {
      lin->zero_grad();
      lin->forward(torch::ones({1, 3})).sum().backward();
    });
  manager.finalize();
  const ppe_test::DecodedPng a = ppe_test::decode_png_file(dir / "statistics.png");
  CHECK(a.width == 800);
  CHECK(a.height == 300);
  CHECK(a.distinct_colors() > 50);
  CHECK(ppe_test::decode_png_file(dir / "even.png").width == 640);
  CHECK(ppe_test::decode_png_file(dir / "percentiles.png").non_white() > 1000);

  auto& full = manager.get_extension<ext::VariableStatisticsPlot>("VariableStatisticsPlot");
  const ppe::training::extensions::plot::Figure f = full.figure();
  CHECK(f.rows == 2);
  CHECK(f.cols == 2);
  CHECK(f.at(0, 0).title == "data");
  CHECK(f.at(0, 1).title == "grad");
  CHECK(f.at(0, 0).series.at(0).label == "mean, std");
  CHECK(f.at(0, 0).bands.size() == 1);
  CHECK(f.at(1, 0).x_label == "iteration");
  // 9 percentiles: 4 bands (none in the legend) and the median as a line labelled "percentile".
  CHECK(f.at(1, 0).bands.size() == 4);
  CHECK(f.at(1, 0).bands[0].label == "_nolegend_");
  CHECK(f.at(1, 0).series.at(0).label == "percentile");
  CHECK(f.at(0, 0).series[0].x == std::vector<double>{1, 2, 3, 4});
  // The grad column: d(sum(W x + b))/dW = 1 for every weight, /db = 1: mean 1, std 0.
  CHECK(f.at(0, 1).series[0].y == std::vector<double>{1, 1, 1, 1});
  CHECK(f.at(0, 1).bands[0].upper == std::vector<double>{1, 1, 1, 1});

  auto& even = manager.get_extension<ext::VariableStatisticsPlot>("VariableStatisticsPlot_1");
  const auto g = even.figure();
  CHECK(g.cols == 1);
  CHECK(g.at(0, 0).series[0].label == "mean");
  // 4 percentiles: as PPE, bands i = 0, 1, 2 between percentile i and 3 - i (the middle pair twice),
  // the last one labelled.
  REQUIRE(g.at(1, 0).bands.size() == 3);
  CHECK(g.at(1, 0).bands[0].label == "_nolegend_");
  CHECK(g.at(1, 0).bands[2].label == "percentile");
  CHECK(g.at(1, 0).series.empty());
  CHECK(manager.get_extension<ext::VariableStatisticsPlot>("VariableStatisticsPlot_2").figure().rows == 1);

  // State: the sample round-trips into a new extension; PPE's empty state changes nothing.
  ext::VariableStatisticsPlot copy(lin);
  copy.load_state_dict(full.state_dict());
  CHECK(copy.samples().get_data().first == full.samples().get_data().first);
  CHECK(copy.samples().get_data().second.equal(full.samples().get_data().second));
  copy.load_state_dict(ppe::State::dict());
  CHECK(copy.samples().counter() == 4);
}

TEST_CASE("VariableStatisticsPlot: bad arguments") {
  using O = ext::VariableStatisticsPlotOptions;
  const at::Tensor x = torch::zeros({2});
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(std::vector<at::Tensor>{}), doctest::Contains("at least one variable"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().plot_mean(false).plot_std(false).percentile_sigmas({})),
                       doctest::Contains("nothing to plot"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().report_data(false).report_grad(false)),
                       doctest::Contains("nothing to plot"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().percentile_sigmas({50, 101})),
                       doctest::Contains("must be in [0, 100]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().marker("Q")), doctest::Contains("unknown marker \"Q\""),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().filename("stats.svg")), doctest::Contains("\".png\""),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().figsize(std::pair{0, 10})),
                       doctest::Contains("figure size"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::VariableStatisticsPlot(x, O().max_sample_size(0)), doctest::Contains("max_sample_size"),
                       std::invalid_argument);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_variable_statistics_plot
