// Fuzz target: a YAML configuration document (tests/fuzz/README.md). The
// bytes go through Config::parse with the standard registrations plus a few
// small factories (a Hana struct for attributes, a dict-taking one, default
// paths), and then every path of the tree as written is evaluated, so that
// references, attributes and factories run. Only ConfigError may escape
// Config's API; anything else is a finding.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/hana/define_struct.hpp>

#include <ppe/config.hpp>
#include <ppe/config/standard_types.hpp>
#include <ppe/config/types.hpp>

namespace {

namespace cfg = ppe::config;

struct Pair {
  BOOST_HANA_DEFINE_STRUCT(Pair, (std::int64_t, a), (std::int64_t, b));
};

cfg::Types fuzz_types() {
  cfg::Types t = cfg::standard_types();
  // The same parameters without reading a dataset from the disk (the IDX
  // files have their own target, idx_file).
  t.add("FashionMNIST", {"root", cfg::arg("mode", std::string("train")), "limit"},
        [](std::optional<std::string> root, std::string mode, std::optional<std::int64_t> limit) {
          return root.value_or("") + mode + std::to_string(limit.value_or(0));
        });
  t.add("sum", {"a", "b", cfg::arg("c", 10)}, [](std::int64_t a, std::int64_t b, std::int64_t c) {
    // Wrapping, not overflowing: the fuzzer picks the numbers.
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b) +
                                     static_cast<std::uint64_t>(c));
  });
  t.add("pair", {"a", cfg::arg("b").path("../b")}, [](std::int64_t a, std::int64_t b) { return Pair{a, b}; });
  t.add("concat", {"x0", "x1"}, [](const std::string& x0, const std::string& x1) { return x0 + x1; });
  t.add("tree", {cfg::arg("config").path("!/")}, [](cfg::Value v) { return v; });
  t.add_dict("kwargs", [](const cfg::Value& d) { return static_cast<std::int64_t>(d.size()); });
  return t;
}

// Evaluates `path` and, below it, every path of the tree as written, up to
// `budget` paths: each `config[path]` looks its path up from the root, so
// all the paths of a 10^5-node tree would cost the harness, not the reader,
// most of the time (the whole tree is evaluated through "/" anyway).
void evaluate_all(cfg::Config& config, const cfg::Value& written, std::string& path, int& budget) {
  if (--budget < 0) return;
  try {
    (void)config[path.empty() ? std::string("/") : path];
  } catch (const cfg::ConfigError&) {
  }
  (void)config.line_of(path.empty() ? "/" : path);
  const std::size_t len = path.size();
  if (written.is_dict()) {
    for (const auto& [key, value] : written.as_dict()) {
      path += "/" + key;
      evaluate_all(config, value, path, budget);
      path.resize(len);
    }
  } else if (written.is_list()) {
    for (std::size_t i = 0; i < written.size(); ++i) {
      path += "/" + std::to_string(i);
      evaluate_all(config, written.at(i), path, budget);
      path.resize(len);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cfg::Types types = fuzz_types();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    // A fifth of the default node limit: the cost per node is linear and
    // measured by the unit tests (tests/test_config.cpp, "bounds"), but 10^5
    // nodes under ASan on a busy machine pass libFuzzer's 1 s timeout.
    cfg::Config config = cfg::Config::parse(text, types, cfg::ConfigOptions().max_nodes(20000));
    const cfg::Value written = config["!/"];
    std::string path;
    int budget = 2000;
    evaluate_all(config, written, path, budget);
  } catch (const cfg::ConfigError&) {
  }
  return 0;
}
