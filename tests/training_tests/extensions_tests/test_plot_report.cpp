// Port of PPE's tests/.../extensions_tests/test_plot_report.py. PPE's two tests check that matplotlib
// is detected and imported lazily, which has no counterpart here (PLplot is linked); instead: the
// PNG a run produces (decoded with libpng: size, not blank, changes with the data), the state in
// PPE's layout and its round trip, bad arguments, atomic replacement, and the renderer itself.
// Expected JSON strings come from Python's json.dumps on the same data (PPE's state_dict is
// `{"_plot_<filename>": json.dumps(self._data)}`), e.g.
//   json.dumps({"main/loss": [(3, 1.0), (6, 2.5)], "val/acc": [(6, float("nan"))]})
#include "ppe_test.hpp"

#include <ppe/training/extensions/plot_report.hpp>
#include <ppe/writing/simple_writer.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <thread>

#include "png_image.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_plot_report {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace pl = ppe::training::extensions::plot;

namespace {

bool has_temp_files(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("tmp_", 0) == 0 || (name.size() > 4 && name.substr(name.size() - 4) == ".bak")) return true;
  }
  return false;
}

tr::ManagerOptions options_in(const ppe_test::TempDir& dir, double max_epochs, std::int64_t ipe) {
  return ppe_test::options(max_epochs, ipe).out_dir(dir.str());
}

// Trains max_epochs x ipe iterations reporting main/loss = loss(iteration) (1-based) with a
// PlotReport, finalizes, and returns the extension.
template <class F>
ext::PlotReport run(ppe_test::TempDir& dir, double max_epochs, std::int64_t ipe, F loss,
                    ext::PlotReportOptions opts = {}) {
  auto manager = tr::ExtensionsManager(options_in(dir, max_epochs, ipe), tr::Models{}, tr::Optimizers{},
                                       ext::PlotReport("main/loss", std::move(opts)));
  for (std::int64_t i = 1; i <= static_cast<std::int64_t>(max_epochs) * ipe; ++i)
    manager.run_iteration([&] { ppe::reporting::report({{"main/loss", loss(i)}}); });
  manager.finalize();
  return std::move(manager.template get_extension<ext::PlotReport>("PlotReport"));
}

}  // namespace

TEST_CASE("PlotReport writes a PNG of the interval means, in PPE's state layout") {
  ppe_test::TempDir dir;
  // losses 1..6: epoch means (1+2+3)/3 = 2.0 at iteration 3, (4+5+6)/3 = 5.0 at 6.
  ext::PlotReport plot = run(dir, 2, 3, [](std::int64_t i) { return static_cast<double>(i); });
  const std::string png = ppe_test::read_file(dir / "plot.png");
  const ppe_test::DecodedPng d = ppe_test::decode_png(png);
  CHECK(d.width == 640);
  CHECK(d.height == 480);
  CHECK(d.distinct_colors() > 50);                      // antialiased text, line, grid
  CHECK(d.non_white() > 640 * 480 / 100);               // not blank
  CHECK(d.count_near(0x1f, 0x77, 0xb4) > 30);          // the line in matplotlib's C0 blue
  CHECK_FALSE(has_temp_files(dir.path));
  REQUIRE(plot.data("main/loss").size() == 2);
  CHECK(plot.data("main/loss")[1].y == 5.0);
  CHECK(plot.state_dict() ==
        ppe::State::dict({{"_plot_plot.png", std::string(R"({"main/loss": [[3, 2.0], [6, 5.0]]})")}}));
}

TEST_CASE("PlotReport: the PNG changes with the data") {
  ppe_test::TempDir a, b;
  run(a, 2, 3, [](std::int64_t i) { return static_cast<double>(i); });
  run(b, 2, 3, [](std::int64_t i) { return 10.0 - static_cast<double>(i); });
  const ppe_test::DecodedPng da = ppe_test::decode_png(ppe_test::read_file(a / "plot.png"));
  const ppe_test::DecodedPng db = ppe_test::decode_png(ppe_test::read_file(b / "plot.png"));
  REQUIRE(da.width == 640);
  REQUIRE(db.width == 640);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < da.rgba.size(); ++i) differing += da.rgba[i] != db.rgba[i];
  CHECK(differing > 1000);
}

TEST_CASE("PlotReport state round trip, PPE's JSON with NaN and Infinity") {
  ext::PlotReport p({"main/loss", "val/acc"});
  // json.dumps({"main/loss": [(3, 1.0), (6, 2.5)], "val/acc": [(6, float("nan"))]})
  const std::string ppe_json = R"({"main/loss": [[3, 1.0], [6, 2.5]], "val/acc": [[6, NaN]]})";
  p.load_state_dict(ppe::State::dict({{"_plot_plot.png", ppe_json}}));
  REQUIRE(p.data("main/loss").size() == 2);
  CHECK(p.data("main/loss")[0].x == 3);
  CHECK(p.data("main/loss")[0].x_is_int);
  CHECK(p.data("main/loss")[1].y == 2.5);
  CHECK(std::isnan(p.data("val/acc")[0].y));
  CHECK(p.state_dict().at("_plot_plot.png").as_string() == ppe_json);

  // json.dumps({"na\u00efve": [(1, 0.1 + 0.2), (2, 1e16), (3, float("inf"))]})
  const std::string escaped = R"({"na\u00efve": [[1, 0.30000000000000004], [2, 1e+16], [3, Infinity]]})";
  ext::PlotReport q("na\xc3\xafve", ext::PlotReportOptions().filename("curves/loss.png"));
  q.load_state_dict(ppe::State::dict({{"_plot_curves/loss.png", escaped}}));
  CHECK(q.data("na\xc3\xafve").size() == 3);
  CHECK(q.state_dict().at("_plot_curves/loss.png").as_string() == escaped);

  CHECK_THROWS_WITH_AS(q.load_state_dict(ppe::State::dict({{"_plot_plot.png", escaped}})),
                       doctest::Contains("the state has no \"_plot_curves/loss.png\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(q.load_state_dict(ppe::State::dict({{"_plot_curves/loss.png", "{\"a\": [[1]]}"}})),
                       doctest::Contains("is not an [x, y] pair"), std::invalid_argument);
}

TEST_CASE("PlotReport's plot data: a deeply nested point is an error, not a stack overflow") {
  // The message rendered the point with nlohmann's recursive dump.
  const std::string deep = "{\"k\": [" + std::string(300000, '[') + std::string(300000, ']') + "]}";
  CHECK_THROWS_WITH_AS(ext::detail::plot_data_from_json(deep),
                       doctest::Contains("a point of \"k\" is not an [x, y] pair: a list of 1"), std::invalid_argument);
  const std::string coordinate = "{\"k\": [[" + std::string(300000, '[') + std::string(300000, ']') + ", 1]]}";
  CHECK_THROWS_WITH_AS(ext::detail::plot_data_from_json(coordinate),
                       doctest::Contains("a coordinate is not a number: a list of 1"), std::invalid_argument);
}

TEST_CASE("PlotReport: resuming continues the plot") {
  ppe_test::TempDir dir;
  ext::PlotReport first = run(dir, 1, 2, [](std::int64_t i) { return static_cast<double>(i); });
  const ppe::State state = first.state_dict();
  ppe_test::TempDir dir2;
  auto manager = tr::ExtensionsManager(options_in(dir2, 2, 2), tr::Models{}, tr::Optimizers{},
                                       ext::PlotReport("main/loss"));
  manager.get_extension<ext::PlotReport>("PlotReport").load_state_dict(state);
  manager.set_iteration(2);
  for (int i = 0; i < 2; ++i) manager.run_iteration([&] { ppe::reporting::report({{"main/loss", 7.0}}); });
  manager.finalize();
  CHECK(manager.get_extension<ext::PlotReport>("PlotReport").state_dict().at("_plot_plot.png").as_string() ==
        R"({"main/loss": [[2, 1.5], [4, 7.0]]})");
}

TEST_CASE("PlotReport: bad arguments give clear errors") {
  CHECK_THROWS_WITH_AS(ext::PlotReport(std::vector<std::string>{}), doctest::Contains("no y key given"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::PlotReport({"a", ""}), doctest::Contains("y key 1 is empty"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::PlotReport({"a", "a"}), doctest::Contains("\"a\" is given twice"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::PlotReport("a", ext::PlotReportOptions().marker("q")),
                       doctest::Contains("unknown marker \"q\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::PlotReport("a", ext::PlotReportOptions().filename("plot.jpg")),
                       doctest::Contains("must end in \".png\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::PlotReport("a", ext::PlotReportOptions().filename("")),
                       doctest::Contains("it is empty"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::PlotReport("a", ext::PlotReportOptions().filename("/tmp/x.png")),
                       doctest::Contains("relative"), std::invalid_argument);
  CHECK_NOTHROW(ext::PlotReport("a", ext::PlotReportOptions().marker("None")));
  CHECK_NOTHROW(ext::PlotReport("a", ext::PlotReportOptions().marker("o")));

  // An x key that is neither iteration, epoch nor reported: the emission names it.
  ppe_test::TempDir dir;
  auto manager = tr::ExtensionsManager(options_in(dir, 1, 2).check_report_keys(false), tr::Models{},
                                       tr::Optimizers{}, ext::PlotReport("a", ext::PlotReportOptions().x_key("b")));
  manager.run_iteration([] { ppe::reporting::report({{"a", 1.0}}); });
  CHECK_THROWS_WITH_AS(manager.run_iteration([] { ppe::reporting::report({{"a", 1.0}}); }),
                       doctest::Contains("the x key \"b\" was not reported"), std::out_of_range);
}

TEST_CASE("PlotReport: x_key may be a y key; keys never reported are warned about and not written") {
  ppe_test::TempDir dir;
  ppe_test::WarningCollector warnings;
  auto manager = tr::ExtensionsManager(
      options_in(dir, 2, 2).check_report_keys(false), tr::Models{}, tr::Optimizers{},
      ext::PlotReport({"lr", "loss"}, ext::PlotReportOptions().x_key("lr").writer(
                                          std::make_shared<ppe::writing::SimpleWriter>())),
      tr::entry(ext::PlotReport("missing", ext::PlotReportOptions().filename("missing.png")), ppe::iterations(1)));
  for (int i = 1; i <= 4; ++i)
    manager.run_iteration([&] { ppe::reporting::report({{"lr", 0.25 * i}, {"loss", 1.0 / i}}); });
  // A synchronous writer renders in the call: the file is there before finalize.
  CHECK(ppe_test::decode_png(ppe_test::read_file(dir / "plot.png")).width == 640);
  manager.finalize();
  const auto& p = manager.get_extension<ext::PlotReport>("PlotReport");
  // lr means (0.25+0.5)/2 = 0.375, (0.75+1)/2 = 0.875; loss means (1+0.5)/2 = 0.75, (1/3+1/4)/2 = 7/24.
  REQUIRE(p.data("loss").size() == 2);
  CHECK(p.data("loss")[0].x == 0.375);
  CHECK_FALSE(p.data("loss")[0].x_is_int);
  CHECK(p.data("lr")[1].x == 0.875);
  CHECK(p.data("loss")[1].y == doctest::Approx(7.0 / 24.0));
  CHECK(warnings.any_contains("no data found for the keys ['missing'], missing.png not written"));
  CHECK_FALSE(std::filesystem::exists(dir / "missing.png"));
}

TEST_CASE("PlotReport: a failed render leaves the previous PNG and is raised by finalize") {
  ppe_test::TempDir dir;
  auto manager = tr::ExtensionsManager(
      options_in(dir, 3, 1), tr::Models{}, tr::Optimizers{},  // 3 epochs: not finalized by the 2nd iteration
      ext::PlotReport("a", ext::PlotReportOptions().postprocess([](pl::Figure& f) {
        if (f.axes[0].series[0].x.size() == 2) f.width = 40;  // too small for the labels: fails in the render
      })));
  manager.run_iteration([] { ppe::reporting::report({{"a", 1.0}}); });
  manager.run_iteration([] { ppe::reporting::report({{"a", 2.0}}); });
  try {
    manager.finalize();
    FAIL("finalize did not raise the render's error");
  } catch (const ppe::writing::WriteError& e) {
    try {
      std::rethrow_if_nested(e);
      FAIL("no nested exception");
    } catch (const std::invalid_argument& inner) {
      CHECK(std::string(inner.what()).find("too small") != std::string::npos);
    }
  }
  // The first emission's PNG is intact and no temporary file is left.
  CHECK(ppe_test::decode_png(ppe_test::read_file(dir / "plot.png")).width == 640);
  CHECK_FALSE(has_temp_files(dir.path));
}

TEST_CASE("plot::render_png: subplots, bands, markers, size and errors") {
  pl::Figure f;
  f.width = 500;
  f.height = 300;
  f.rows = 1;
  f.cols = 2;
  f.axes.resize(2);
  for (int c = 0; c < 2; ++c) {
    pl::Axes& a = f.at(0, c);
    a.title = c ? "grad" : "data";
    pl::Band b{"band", {0, 1, 2}, {0, 1, 0}, {2, 3, 2}, pl::cycle_color(1).with_alpha(0.3)};
    a.bands.push_back(b);
    pl::Series s;
    s.label = "s";
    s.x = {0, 1, 2, std::numeric_limits<double>::quiet_NaN(), 4};
    s.y = {1, 2, 1, 0, 1};
    s.marker = pl::parse_marker(c ? "o" : "+");
    a.series.push_back(s);
  }
  const ppe_test::DecodedPng d = ppe_test::decode_png(pl::render_png(f));
  CHECK(d.width == 500);
  CHECK(d.height == 300);
  CHECK(d.count_near(0xff, 0x7f, 0x0e) == 0);  // the band is translucent orange, never opaque orange
  CHECK(d.distinct_colors() > 50);

  CHECK(pl::cycle_color(0) == pl::Color{0x1f, 0x77, 0xb4, 1.0});
  CHECK(pl::cycle_color(11) == pl::cycle_color(1));
  CHECK_THROWS_WITH_AS(f.at(1, 0), doctest::Contains("outside the 1x2 grid"), std::out_of_range);
  pl::Figure bad = f;
  bad.axes[1].series[0].y.pop_back();
  CHECK_THROWS_WITH_AS(pl::render_png(bad), doctest::Contains("subplot 1, series \"s\": x has 5 values, y 4"),
                       std::invalid_argument);
  bad = f;
  bad.axes.pop_back();
  CHECK_THROWS_WITH_AS(pl::render_png(bad), doctest::Contains("expected rows * cols = 2"), std::invalid_argument);
  bad = f;
  bad.width = 0;
  CHECK_THROWS_AS(pl::render_png(bad), std::invalid_argument);
  // After a failed render the next one works (the PLplot stream was ended).
  CHECK(ppe_test::decode_png(pl::render_png(f)).width == 500);
}

TEST_CASE("plot::render_png from several threads at once (renders are serialised)") {
  pl::Figure f;
  pl::Series s;
  s.label = "s";
  for (int i = 0; i < 50; ++i) {
    s.x.push_back(i);
    s.y.push_back(std::sin(0.2 * i));
  }
  f.axes[0].series.push_back(s);
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] { results[t] = pl::render_png(f); });
  for (auto& t : threads) t.join();
  for (const auto& png : results) {
    CHECK(ppe_test::decode_png(png).width == 640);
    CHECK(png == results.front());  // the same figure renders to the same bytes
  }
}

}  // namespace ppe_test_training_tests_extensions_tests_test_plot_report
