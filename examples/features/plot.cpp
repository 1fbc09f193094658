// The plot feature as a downstream program uses it (ppe::plot / ppe-plot): a PlotReport
// of a reported value, rendered to PNG through PLplot.
#include <ppe/plot.hpp>
#include <ppe/reporting/reporter.hpp>
#include <ppe/training/extensions_manager.hpp>

#include <filesystem>
#include <iostream>

int main() {
  namespace tr = ppe::training;
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(2).iters_per_epoch(2).out_dir("consumer_result"),
      tr::Models{}, tr::Optimizers{},
      tr::extensions::PlotReport("loss", tr::extensions::PlotReportOptions().x_key("epoch")));
  double loss = 1.0;
  while (!manager.finalized()) manager.run_iteration([&] { ppe::reporting::report({{"loss", loss /= 2}}); });
  const bool written = std::filesystem::file_size("consumer_result/plot.png") > 0;
  std::cout << "plot=" << (written ? "written" : "missing") << "\n";
  return written ? 0 : 1;
}
