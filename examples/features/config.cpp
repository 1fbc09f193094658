// The config feature as a downstream program uses it (ppe::config / ppe-config): a YAML
// config, and LogReport's yaml format, which links yaml-cpp.
#include <ppe/config/config.hpp>
#include <ppe/training/extensions/log_format_yaml.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

int main() {
  namespace ext = ppe::training::extensions;
  auto config = ppe::config::Config::parse("run: {epochs: 3}");
  const auto epochs = config.get<std::int64_t>("/run/epochs");
  const std::vector<ext::LogEntry> log{ext::LogEntry{{"epoch", 1}}};
  std::cout << "epochs=" << epochs << " yaml=" << ext::format_log(log, ext::log_format("", "log.yaml"));
  return epochs == 3 ? 0 : 1;
}
