// Fuzz target: the JSON that ppe reads back from files and states another
// program may have written (tests/fuzz/README.md). The first byte picks the
// reader, the rest is its text:
//   0  LogReport's saved log (`_log`): log_from_json_string
//   1  a ChromeTracer state's `_event_list`: ChromeTracer::load_state_dict
//   2  a Chrome trace file: load_chrome_trace_as_json, then trace_events_from_json
//   3  PlotReport's plot data (`_plot_data`): plot_data_from_json (only when
//      built with PPE_FUZZ_PLOT: the plot feature needs PLplot)
// Each catches only what its reader documents: std::invalid_argument, and
// std::runtime_error for the file reader.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

// First: under clang some LibTorch header that ppe's profiler headers reach
// instantiates std::vector<IValue> before IValue is complete (GCC accepts it).
#include <ATen/core/ivalue.h>
#include <ppe/profiler/chrome_trace_json.hpp>
#include <ppe/profiler/tracing.hpp>
#include <ppe/state.hpp>
#include <ppe/training/extensions/log_format.hpp>
#if PPE_FUZZ_PLOT
#include <ppe/training/extensions/plot_report.hpp>
#endif

namespace {

void saved_log(std::string_view text) {
  try {
    (void)ppe::training::extensions::log_from_json_string(text);
  } catch (const std::invalid_argument&) {
  }
}

void tracer_state(std::string_view text) {
  ppe::State state = ppe::State::dict();
  state.set("_enable", true);
  state.set("_event_list", std::string(text));
  state.set("_max_event_count", 10);
  state.set("_event_count", 0);
  ppe::profiler::ChromeTracer tracer;
  try {
    tracer.load_state_dict(state);
  } catch (const std::invalid_argument&) {
  }
}

void trace_file(std::string_view text) {
  // One file per process: libFuzzer's workers may share the directory.
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ppe_fuzz_trace_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  try {
    const nlohmann::json trace = ppe::profiler::load_chrome_trace_as_json(path);
    (void)ppe::profiler::trace_events_from_json(trace);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  std::error_code ignored;
  std::filesystem::remove(path, ignored);  // leave no file behind the process
}

#if PPE_FUZZ_PLOT
void plot_data(std::string_view text) {
  try {
    (void)ppe::training::extensions::detail::plot_data_from_json(std::string(text));
  } catch (const std::invalid_argument&) {
  }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: saved_log(text); break;
    case 1: tracer_state(text); break;
    case 2: trace_file(text); break;
    default:
#if PPE_FUZZ_PLOT
      plot_data(text);
#endif
      break;
  }
  return 0;
}
