#pragma once
/// \file
/// The config registration of PlotReport (`{type: PlotReport, y_keys: [...]}`),
/// apart from `standard_types()` because it needs the `ppe-plot` feature
/// (PLplot): a program that has both adds it with `add_plot_types(types)`.
/// Features: ppe::config, ppe::plot (Meson and pkg-config: ppe-config, ppe-plot).

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ppe/config/standard_types.hpp"
#include "ppe/training/extensions/plot_report.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::config {

/// Adds `PlotReport` (parameters: docs/config.md) to `types`.
inline Types& add_plot_types(Types& types) {
  namespace ext = ppe::training::extensions;
  using WriterPtr = std::optional<std::shared_ptr<writing::Writer>>;
  const Value epoch = Value::list({1, "epoch"});
  add_extension(types, "PlotReport",
                {"y_keys", arg("x_key", std::string("iteration")), arg("trigger", epoch),
                 arg("filename", std::string("plot.png")), arg("marker", std::string("x")), arg("grid", true), "writer"},
                [](std::vector<std::string> y_keys, std::string x_key, training::triggers::IntervalTrigger trigger,
                   std::string filename, std::string marker, bool grid, WriterPtr writer) {
                  ext::PlotReportOptions o;
                  o.x_key(std::move(x_key)).trigger(trigger).filename(std::move(filename)).marker(std::move(marker)).grid(
                      grid);
                  if (writer) o.writer(*writer);
                  return ext::PlotReport(std::move(y_keys), std::move(o));
                });
  return types;
}

}  // namespace ppe::config
