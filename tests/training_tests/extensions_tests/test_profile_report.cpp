// Port of PPE's tests/.../extensions_tests/test_profile_report.py (table F6: formats x append,
// an entry per epoch with the body's time), with the times on a fake clock so that the values
// are exact; plus the entry's exact bytes, store_keys, report_keys, sorted keys, state.
#include "ppe_test.hpp"
#include <ppe/training/extensions/log_format_yaml.hpp>  // the yaml format (ppe-config)

#include <ppe/profiler/record.hpp>
#include <ppe/training/extensions/profile_report.hpp>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_profile_report {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace prof = ppe::profiler;

namespace {

std::int64_t fake_now = 0;
std::int64_t fake_clock() { return fake_now; }

// The body of every test: a record scope "iter-time" of 0.25 s on even iterations, 0.75 s on
// odd ones, so each epoch of 2 iterations has mean (0.25 + 0.75) / 2 = 0.5, std 0.25 (see
// test_time_summary.cpp), min 0.25, max 0.75; the manager's fake clock advances 1 s per iteration.
struct Run {
  ppe_test::TempDir dir;
  ppe_test::FakeClock clock;
  std::shared_ptr<prof::TimeSummary> summary = std::make_shared<prof::TimeSummary>(&fake_clock);

  template <class... Es>
  auto manager(double max_epochs, std::int64_t ipe, Es&&... exts) {
    return tr::ExtensionsManager(ppe_test::options(max_epochs, ipe).out_dir(dir.str()).clock(clock.fn()),
                                 tr::Models{}, tr::Optimizers{}, std::forward<Es>(exts)...);
  }
  template <class M>
  void step(M& m) {
    m.run_iteration([&] {
      prof::Record r("iter-time", prof::RecordOptions().summary(summary.get()));
      fake_now += m.iteration() % 2 == 0 ? 250'000'000 : 750'000'000;
      clock.advance(1.0);
    });
  }
};

std::vector<nlohmann::json> read_entries(const std::filesystem::path& p, const std::string& format) {
  const std::string data = ppe_test::read_file(p);
  std::vector<nlohmann::json> out;
  if (format == "json") {
    for (const auto& e : nlohmann::json::parse(data)) out.push_back(e);
  } else if (format == "json-lines") {
    std::istringstream in(data);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  } else {
    for (const auto& n : YAML::Load(data)) {
      nlohmann::json e = nlohmann::json::object();
      for (const auto& kv : n) e[kv.first.as<std::string>()] = kv.second.as<double>();
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace

// PPE test_profile_report: after each epoch the file "log" has one entry per epoch so far, each
// with the body's time (PPE: 0.1 s of sleep, +-0.02; here 0.5 s on the fake clock, exactly).
TEST_CASE("PPE test_profile_report") {
  const std::vector<std::pair<std::string, bool>> table = {
      {"json", false}, {"json-lines", true}, {"json-lines", false}, {"yaml", true}, {"yaml", false}};
  for (const auto& [format, append] : table) {
    CAPTURE(format);
    CAPTURE(append);
    Run run;
    auto manager = run.manager(
        3, 2, ext::ProfileReport(ext::ProfileReportOptions().format(format).append(append).time_summary(run.summary)));
    for (int epoch = 0; epoch < 3; ++epoch) {
      for (int i = 0; i < 2; ++i) run.step(manager);
      const auto values = read_entries(run.dir / "log", format);
      REQUIRE(values.size() == static_cast<std::size_t>(epoch + 1));
      for (const auto& v : values) {
        CHECK(v.at("iter-time").get<double>() == 0.5);
        CHECK(v.at("iter-time.std").get<double>() == 0.25);
        CHECK(v.at("iter-time.min").get<double>() == 0.25);
        CHECK(v.at("iter-time.max").get<double>() == 0.75);
      }
      CHECK(values.back().at("epoch").get<double>() == epoch + 1);
      CHECK(values.back().at("iteration").get<double>() == 2 * (epoch + 1));
    }
  }
}

// The bytes: keys sorted (as PPE's OrderedDict over sorted keys), epoch and iteration integers.
TEST_CASE("the entries' keys are sorted; exact json-lines bytes") {
  Run run;
  auto manager = run.manager(2, 2,
                             ext::ProfileReport(ext::ProfileReportOptions().filename("profile.jsonl").append(true)
                                                    .time_summary(run.summary)));
  for (int i = 0; i < 4; ++i) run.step(manager);
  CHECK(ppe_test::read_file(run.dir / "profile.jsonl") ==
        "{\"elapsed_time\": 2.0, \"epoch\": 1, \"iter-time\": 0.5, \"iter-time.max\": 0.75, \"iter-time.min\": 0.25, "
        "\"iter-time.std\": 0.25, \"iteration\": 2}\n"
        "{\"elapsed_time\": 4.0, \"epoch\": 2, \"iter-time\": 0.5, \"iter-time.max\": 0.75, \"iter-time.min\": 0.25, "
        "\"iter-time.std\": 0.25, \"iteration\": 4}\n");
  auto& pr = manager.get_extension<ext::ProfileReport>("ProfileReport");
  CHECK(pr.log().empty());  // append: written entries are dropped
  CHECK(pr.format() == ext::LogFormat::JsonLines);
}

// store_keys keeps the listed keys and their ".std"; report_keys reports "time.<key>".
TEST_CASE("store_keys and report_keys") {
  Run run;
  auto manager = run.manager(1, 2,
                             ext::ProfileReport(ext::ProfileReportOptions()
                                                    .store_keys({"iter-time"})
                                                    .report_keys({"iter-time", "iter-time.max"})
                                                    .time_summary(run.summary)));
  run.step(manager);
  CHECK_FALSE(manager.observation().contains("time.iter-time"));
  run.step(manager);
  CHECK(manager.observation().at("time.iter-time").scalar() == 0.5);
  CHECK(manager.observation().at("time.iter-time.max").scalar() == 0.75);
  CHECK_FALSE(manager.observation().contains("time.iter-time.min"));
  auto& pr = manager.get_extension<ext::ProfileReport>("ProfileReport");
  REQUIRE(pr.log().size() == 1);
  std::vector<std::string> keys;
  for (const auto& [k, v] : pr.log()[0]) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"elapsed_time", "epoch", "iter-time", "iter-time.std", "iteration"});
}

// By default the process-wide TimeSummary is read (and cleared), several tags in sorted order.
TEST_CASE("the default TimeSummary; several tags") {
  prof::get_time_summary().clear();
  ppe_test::TempDir dir;
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 1).out_dir(dir.str()), tr::Models{}, tr::Optimizers{},
                                       ext::ProfileReport());
  manager.run_iteration([] {
    { prof::Record r("zeta"); }
    { prof::Record r("alpha"); }
  });
  const auto entries = nlohmann::json::parse(ppe_test::read_file(dir / "log"));
  REQUIRE(entries.size() == 1);
  std::vector<std::string> keys;
  for (const auto& [k, v] : entries[0].items()) keys.push_back(k);
  // nlohmann's object sorts keys too; the file's own order is checked above.
  CHECK(keys == std::vector<std::string>{"alpha", "alpha.max", "alpha.min", "alpha.std", "elapsed_time", "epoch",
                                         "iteration", "zeta", "zeta.max", "zeta.min", "zeta.std"});
  CHECK(prof::get_time_summary().summary().empty());
}

// No file name: entries are logged, no file is written (PPE's log_name=None).
TEST_CASE("no filename, no file") {
  Run run;
  auto manager =
      run.manager(1, 2, ext::ProfileReport(ext::ProfileReportOptions().filename(std::nullopt).time_summary(run.summary)));
  run.step(manager);
  run.step(manager);
  CHECK(manager.get_extension<ext::ProfileReport>("ProfileReport").log().size() == 1);
  CHECK(ppe_test::list_dir(run.dir.path).empty());
}

// State in PPE's layout: {"_trigger", "_log": json.dumps(log)}; a restored report continues the log.
TEST_CASE("state round trip") {
  Run run;
  auto manager = run.manager(2, 2, ext::ProfileReport(ext::ProfileReportOptions().time_summary(run.summary)));
  for (int i = 0; i < 2; ++i) run.step(manager);
  const auto& pr = manager.get_extension<ext::ProfileReport>("ProfileReport");
  const ppe::State s = pr.state_dict();
  CHECK(s.size() == 2);
  CHECK(s.at("_log").as_string() == ext::log_to_json_string(pr.log()));
  CHECK(s.at("_log").as_string() ==
        "[{\"elapsed_time\": 2.0, \"epoch\": 1, \"iter-time\": 0.5, \"iter-time.max\": 0.75, \"iter-time.min\": "
        "0.25, \"iter-time.std\": 0.25, \"iteration\": 2}]");
  CHECK(s.contains("_trigger"));

  ext::ProfileReport restored(ext::ProfileReportOptions().time_summary(run.summary));
  restored.load_state_dict(s);
  CHECK(restored.log() == pr.log());
  CHECK(restored.state_dict() == s);
  CHECK_THROWS_AS(restored.load_state_dict(ppe::State::dict({{"_log", 3}})), std::invalid_argument);
}

TEST_CASE("bad options are rejected") {
  CHECK_THROWS_AS(ext::ProfileReport(ext::ProfileReportOptions().format("xml")), std::invalid_argument);
  CHECK_THROWS_AS(ext::ProfileReport(ext::ProfileReportOptions().append(true)), std::invalid_argument);  // json
  CHECK_THROWS_AS(ext::ProfileReport(ext::ProfileReportOptions().filename("")), std::invalid_argument);
  CHECK_THROWS_AS(ext::ProfileReport(ext::ProfileReportOptions().filename("log_{")), std::invalid_argument);
  // A file name field the entry lacks is named in the error.
  Run run;
  auto manager =
      run.manager(1, 1, ext::ProfileReport(ext::ProfileReportOptions().filename("p_{nope}").time_summary(run.summary)));
  CHECK(ppe_test::error_of([&] { run.step(manager); }).find("'{nope}'") != std::string::npos);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_profile_report
