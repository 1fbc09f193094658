// Port of PPE's tests/.../extensions_tests/test_log_report.py (format
// inference, output per format and append mode, deferred values; the
// TensorBoardWriter case is in writing_tests/test_tensorboard_writer.cpp), plus ours: exact file
// bytes in every format with a fake clock, filename templates, keys,
// postprocess, own writer, state (PPE layout and resume), option errors, and
// the csv format (not in PPE): columns growing, append, resume.
#include "ppe_test.hpp"
#include <ppe/training/extensions/log_format_yaml.hpp>  // the yaml format (ppe-config)
#include "python.hpp"
#include "temp_dir.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_log_report {

namespace tr = ppe::training;
namespace ex = ppe::training::extensions;
namespace wr = ppe::writing;
using ex::LogEntry;
using ex::LogReport;
using ex::LogReportOptions;
using ppe_test::read_file;
using ppe_test::TempDir;

namespace {

tr::ManagerOptions opts_in(const TempDir& dir, double max_epochs, std::int64_t ipe) {
  return ppe_test::options(max_epochs, ipe).out_dir(dir.str());
}

// The entries of a log file, read back the way PPE's test does (json.loads,
// one json.loads per line, yaml.load; csv: by the header, whose keys here need
// no quotes), as (epoch, iteration, elapsed_time).
struct Row {
  std::int64_t epoch, iteration;
  double elapsed_time;
};
std::vector<Row> parse_log(const std::string& data, const std::string& format) {
  std::vector<Row> rows;
  if (format == "csv") {
    const auto split = [](const std::string& line) {
      std::vector<std::string> cells(1);
      for (char c : line) {
        if (c == ',')
          cells.emplace_back();
        else
          cells.back().push_back(c);
      }
      return cells;
    };
    std::istringstream in(data);
    std::string line;
    std::getline(in, line);
    const auto header = split(line);
    const auto cell = [&](const std::vector<std::string>& cells, const std::string& key) {
      const auto it = std::find(header.begin(), header.end(), key);
      REQUIRE(it != header.end());
      return cells.at(static_cast<std::size_t>(it - header.begin()));
    };
    while (std::getline(in, line)) {
      const auto cells = split(line);
      REQUIRE(cells.size() == header.size());
      CHECK(cell(cells, "epoch").find('.') == std::string::npos);  // integers
      rows.push_back({std::stoll(cell(cells, "epoch")), std::stoll(cell(cells, "iteration")),
                      std::stod(cell(cells, "elapsed_time"))});
    }
    return rows;
  }
  if (format == "yaml") {
    for (const auto& n : YAML::Load(data))
      rows.push_back({n["epoch"].as<std::int64_t>(), n["iteration"].as<std::int64_t>(), n["elapsed_time"].as<double>()});
    return rows;
  }
  std::vector<nlohmann::json> objs;
  if (format == "json") {
    for (const auto& o : nlohmann::json::parse(data)) objs.push_back(o);
  } else {
    std::istringstream in(data);
    for (std::string line; std::getline(in, line);) objs.push_back(nlohmann::json::parse(line));
  }
  for (const auto& o : objs) {
    // PPE writes epoch and iteration as integers.
    CHECK(o["epoch"].is_number_integer());
    CHECK(o["iteration"].is_number_integer());
    rows.push_back({o["epoch"].get<std::int64_t>(), o["iteration"].get<std::int64_t>(), o["elapsed_time"].get<double>()});
  }
  return rows;
}

// The fixed scenario of the byte-exact tests: 2 epochs of 2 iterations, a fake
// clock starting at 100 s, a postprocess adding "scaled" = main/loss * 100.
//   it 1: +0.5 s, main/loss 1.0,   lr 1e-07, naïve 2.0
//   it 2: +0.5 s, main/loss 0.5,   lr 1e-07            -> epoch 1 entry
//   it 3: +0.25 s, main/loss 0.125, lr 1e16
//   it 4: +0.25 s, main/loss 0.375, lr 1e16, val/nan NaN, big inf -> epoch 2 entry
// Epoch 1: main/loss (1.0 + 0.5) / 2 = 0.75; lr (1e-07 + 1e-07) / 2 = 1e-07
// (doubling and halving are exact); naïve 2.0 / 1 = 2.0; elapsed 101.0 - 100.0
// = 1.0; scaled 0.75 * 100 = 75.0. Epoch 2 (fresh summary, keys in report
// order): main/loss (0.125 + 0.375) / 2 = 0.25; lr 1e16; val/nan NaN; big inf;
// elapsed 101.5 - 100.0 = 1.5; scaled 25.0. epoch/iteration are ints: 1/2, 2/4.
// (Real PPE with the same reports writes the same bytes; checked once with
// PPE 0.9.0 under /usr/bin/python3, elapsed_time pinned by its postprocess.)
struct Bytes {
  std::string after_epoch1, after_epoch2;
};
Bytes run_scenario(LogReportOptions options) {
  TempDir tmp;
  ppe_test::FakeClock clock;
  clock.set(100.0);
  options.postprocess([](LogEntry& e) { e.set("scaled", e.at("main/loss").to_double() * 100); });
  const std::string file = options.filename();
  auto m = tr::ExtensionsManager(opts_in(tmp, 2, 2).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                                 LogReport(std::move(options)));
  namespace rp = ppe::reporting;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Bytes out;
  m.run_iteration([&] {
    clock.advance(0.5);
    rp::report({{"main/loss", 1.0}, {"lr", 1e-07}, {"na\xc3\xafve", 2.0}});
  });
  m.run_iteration([&] {
    clock.advance(0.5);
    rp::report({{"main/loss", 0.5}, {"lr", 1e-07}});
  });
  out.after_epoch1 = read_file(tmp / file);
  m.run_iteration([&] {
    clock.advance(0.25);
    rp::report({{"main/loss", 0.125}, {"lr", 1e16}});
  });
  m.run_iteration([&] {
    clock.advance(0.25);
    rp::report({{"main/loss", 0.375}, {"lr", 1e16}, {"val/nan", nan}, {"big", inf}});
  });
  out.after_epoch2 = read_file(tmp / file);
  CHECK(m.finalized());
  return out;
}

const std::string kJsonLine1 =
    "{\"main/loss\": 0.75, \"lr\": 1e-07, \"na\\u00efve\": 2.0, \"epoch\": 1, \"iteration\": 2, "
    "\"elapsed_time\": 1.0, \"scaled\": 75.0}\n";
const std::string kJsonLine2 =
    "{\"main/loss\": 0.25, \"lr\": 1e+16, \"val/nan\": NaN, \"big\": Infinity, \"epoch\": 2, \"iteration\": 4, "
    "\"elapsed_time\": 1.5, \"scaled\": 25.0}\n";
const std::string kYaml1 =
    "- elapsed_time: 1.0\n"
    "  epoch: 1\n"
    "  iteration: 2\n"
    "  lr: 1.0e-07\n"
    "  main/loss: 0.75\n"
    "  \"na\\xEFve\": 2.0\n"
    "  scaled: 75.0\n";
const std::string kYaml2 =
    "- big: .inf\n"
    "  elapsed_time: 1.5\n"
    "  epoch: 2\n"
    "  iteration: 4\n"
    "  lr: 1.0e+16\n"
    "  main/loss: 0.25\n"
    "  scaled: 25.0\n"
    "  val/nan: .nan\n";

// Records calls and finalize; writes synchronously.
struct RecordingWriter : wr::Writer {
  using Writer::Writer;
  int finalized = 0;
  std::vector<std::pair<std::string, bool>> calls;
  void operator()(const std::string& filename, wr::SaveFn save_fn, bool append) override {
    calls.emplace_back(filename, append);
    save(filename, save_fn, append);
  }
  void finalize() override { ++finalized; }
};

}  // namespace

TEST_CASE("test_format_from_ext") {
  CHECK(LogReport(LogReportOptions().filename("out.json")).format() == ex::LogFormat::Json);
  CHECK(LogReport(LogReportOptions().filename("out.xyz")).format() == ex::LogFormat::Json);
  CHECK(LogReport().format() == ex::LogFormat::Json);  // PPE's filename=None
  CHECK(LogReport().filename() == "log");
  CHECK(LogReport(LogReportOptions().filename("out.yaml")).format() == ex::LogFormat::Yaml);
  CHECK(LogReport(LogReportOptions().filename("out.jsonl")).format() == ex::LogFormat::JsonLines);
  CHECK(LogReport(LogReportOptions().filename("out.csv")).format() == ex::LogFormat::Csv);  // ours
}

TEST_CASE("test_output") {
  const std::pair<const char*, bool> params[] = {
      {"json", false}, {"json-lines", true}, {"json-lines", false}, {"yaml", true}, {"yaml", false},
      {"csv", true},   {"csv", false}};
  for (const auto& [format, append] : params) {
    CAPTURE(format);
    CAPTURE(append);
    const int max_epochs = 3, ipe = 5;
    TempDir tmp;
    auto m = tr::ExtensionsManager(opts_in(tmp, max_epochs, ipe), tr::Models{}, tr::Optimizers{},
                                   LogReport(LogReportOptions().filename("out").format(format).append(append)));
    for (int epoch_idx = 0; epoch_idx < max_epochs; ++epoch_idx) {
      for (int i = 0; i < ipe; ++i) ppe_test::step(m);
      auto values = parse_log(read_file(tmp / "out"), format);
      REQUIRE(values.size() == static_cast<std::size_t>(epoch_idx + 1));
      const Row this_epoch = values.back();
      CHECK(this_epoch.epoch == epoch_idx + 1);
      CHECK(this_epoch.iteration == (epoch_idx + 1) * ipe);
      CHECK(0 < this_epoch.elapsed_time);
    }
  }
}

TEST_CASE("test_deferred_values") {
  const int max_epochs = 3, ipe = 5;
  TempDir tmp;
  auto m = tr::ExtensionsManager(opts_in(tmp, max_epochs, ipe), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().filename("out")));
  for (int epoch_idx = 0; epoch_idx < max_epochs; ++epoch_idx) {
    for (int i = 0; i < ipe; ++i)
      m.run_iteration([&] { ppe::reporting::report({{"x", [epoch_idx] { return epoch_idx; }}}); });
    const auto values = nlohmann::json::parse(read_file(tmp / "out"));
    REQUIRE(values.size() == static_cast<std::size_t>(epoch_idx + 1));
    CHECK(values.back()["x"] == epoch_idx);
  }
}

TEST_CASE("exact bytes: json (the whole history, indent 4, no final newline)") {
  const Bytes b = run_scenario(LogReportOptions().filename("log"));
  const std::string entry1 =
      "    {\n"
      "        \"main/loss\": 0.75,\n"
      "        \"lr\": 1e-07,\n"
      "        \"na\\u00efve\": 2.0,\n"
      "        \"epoch\": 1,\n"
      "        \"iteration\": 2,\n"
      "        \"elapsed_time\": 1.0,\n"
      "        \"scaled\": 75.0\n"
      "    }";
  const std::string entry2 =
      "    {\n"
      "        \"main/loss\": 0.25,\n"
      "        \"lr\": 1e+16,\n"
      "        \"val/nan\": NaN,\n"
      "        \"big\": Infinity,\n"
      "        \"epoch\": 2,\n"
      "        \"iteration\": 4,\n"
      "        \"elapsed_time\": 1.5,\n"
      "        \"scaled\": 25.0\n"
      "    }";
  CHECK(b.after_epoch1 == "[\n" + entry1 + "\n]");
  CHECK(b.after_epoch2 == "[\n" + entry1 + ",\n" + entry2 + "\n]");
}

TEST_CASE("exact bytes: json-lines, rewritten or appended") {
  for (bool append : {false, true}) {
    CAPTURE(append);
    const Bytes b = run_scenario(LogReportOptions().filename("log.jsonl").append(append));
    CHECK(b.after_epoch1 == kJsonLine1);
    CHECK(b.after_epoch2 == kJsonLine1 + kJsonLine2);
  }
}

TEST_CASE("exact bytes: yaml, rewritten or appended") {
  for (bool append : {false, true}) {
    CAPTURE(append);
    const Bytes b = run_scenario(LogReportOptions().filename("log").format("yaml").append(append));
    CHECK(b.after_epoch1 == kYaml1);
    CHECK(b.after_epoch2 == kYaml1 + kYaml2);
  }
}

TEST_CASE("exact bytes: csv, rewritten or appended (a new column at the second entry)") {
  // Python's csv.DictWriter(f, keys, lineterminator="\n") with the keys in
  // order of first appearance writes these bytes for the scenario's entries
  // (checked once with /usr/bin/python3). Epoch 2 lacks naïve and brings
  // val/nan and big: the whole file is rewritten, append or not.
  for (bool append : {false, true}) {
    CAPTURE(append);
    const Bytes b = run_scenario(LogReportOptions().filename("log.csv").append(append));
    CHECK(b.after_epoch1 ==
          "main/loss,lr,na\xc3\xafve,epoch,iteration,elapsed_time,scaled\n"
          "0.75,1e-07,2.0,1,2,1.0,75.0\n");
    CHECK(b.after_epoch2 ==
          "main/loss,lr,na\xc3\xafve,epoch,iteration,elapsed_time,scaled,val/nan,big\n"
          "0.75,1e-07,2.0,1,2,1.0,75.0,,\n"
          "0.25,1e+16,,2,4,1.5,25.0,nan,inf\n");
  }
}

TEST_CASE("csv with append: rows appended while the columns hold, the whole file rewritten when they grow") {
  TempDir tmp;
  ppe_test::write_file(tmp / "log.csv", "stale,file\n1,2\n");  // from an earlier run: replaced
  ppe_test::FakeClock clock;
  auto own = std::make_shared<RecordingWriter>(tmp.path);
  auto m = tr::ExtensionsManager(
      opts_in(tmp, 4, 1).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
      LogReport(LogReportOptions().filename("log.csv").append(true).writer(own).trigger(ppe::iterations(1))));
  // Per iteration (0.5 s each): a = 1.0; a = 0.5; a = 0.25, b = 2.0 (new column); b = 4.0 (a missing).
  const std::vector<std::vector<std::pair<std::string, double>>> reports = {
      {{"a", 1.0}}, {{"a", 0.5}}, {{"a", 0.25}, {"b", 2.0}}, {{"b", 4.0}}};
  std::vector<std::string> files;
  for (const auto& r : reports) {
    m.run_iteration([&] {
      clock.advance(0.5);
      for (const auto& [k, v] : r) ppe::reporting::report({{k, v}});
    });
    files.push_back(read_file(tmp / "log.csv"));
  }
  CHECK(files[0] == "a,epoch,iteration,elapsed_time\n1.0,1,1,0.5\n");
  CHECK(files[1] == "a,epoch,iteration,elapsed_time\n1.0,1,1,0.5\n0.5,2,2,1.0\n");
  CHECK(files[2] == "a,epoch,iteration,elapsed_time,b\n1.0,1,1,0.5,\n0.5,2,2,1.0,\n0.25,3,3,1.5,2.0\n");
  CHECK(files[3] == "a,epoch,iteration,elapsed_time,b\n1.0,1,1,0.5,\n0.5,2,2,1.0,\n0.25,3,3,1.5,2.0\n,4,4,2.0,4.0\n");
  // The first write and the write after the columns grew replace the file; the others append.
  CHECK(own->calls ==
        std::vector<std::pair<std::string, bool>>{{"log.csv", false}, {"log.csv", true}, {"log.csv", false}, {"log.csv", true}});
  // csv keeps the history in append mode (it may have to rewrite the file).
  auto& lr = m.get_extension<LogReport>("LogReport");
  CHECK(lr.log().size() == 4);
  CHECK(lr.state_dict().at("_log_read").as_int() == 0);
}

TEST_CASE("csv: Python's csv module reads the file back (a quoted key, a new column, a missing cell, nan)") {
  TempDir tmp;
  auto m = tr::ExtensionsManager(opts_in(tmp, 3, 1), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().filename("log.csv").trigger(ppe::iterations(1))));
  m.run_iteration([] { ppe::reporting::report({{"loss, \"main\"", 0.5}}); });
  m.run_iteration([] { ppe::reporting::report({{"loss, \"main\"", 0.25}, {"acc", std::nan("")}}); });
  m.run_iteration([] { ppe::reporting::report({{"acc", 0.75}}); });
  const std::string script = R"PY(
import csv, math, sys
with open(sys.argv[1] + "/log.csv", newline="") as f:
    rows = list(csv.DictReader(f))
assert list(rows[0].keys()) == ['loss, "main"', "epoch", "iteration", "elapsed_time", "acc"], list(rows[0].keys())
assert [r['loss, "main"'] for r in rows] == ["0.5", "0.25", ""], rows
assert rows[0]["acc"] == "" and math.isnan(float(rows[1]["acc"])) and float(rows[2]["acc"]) == 0.75, rows
assert [int(r["iteration"]) for r in rows] == [1, 2, 3], rows
print("OK")
)PY";
  const auto out = ppe_test::run_python(tmp, script, "'" + tmp.str() + "'");
  INFO(out.text);
  CHECK(out.status == 0);
}

TEST_CASE("csv with append: a new file name is written whole") {
  TempDir tmp;
  auto own = std::make_shared<RecordingWriter>(tmp.path);
  auto m = tr::ExtensionsManager(
      opts_in(tmp, 2, 1), tr::Models{}, tr::Optimizers{},
      LogReport(LogReportOptions().filename("log_{iteration}.csv").append(true).writer(own).postprocess(
          [](LogEntry& e) { e.erase("elapsed_time"); })));
  ppe_test::step(m);
  ppe_test::step(m);
  CHECK(own->calls == std::vector<std::pair<std::string, bool>>{{"log_1.csv", false}, {"log_2.csv", false}});
  CHECK(read_file(tmp / "log_1.csv") == "epoch,iteration\n1,1\n");
  CHECK(read_file(tmp / "log_2.csv") == "epoch,iteration\n1,1\n2,2\n");
}

TEST_CASE("csv resume: the first write rewrites the file from the restored log, then rows are appended") {
  TempDir tmp;
  // elapsed_time removed: the rows depend only on the reports and the counters.
  const auto options = [](std::shared_ptr<RecordingWriter> w) {
    return LogReportOptions().filename("log.csv").append(true).writer(std::move(w)).trigger(ppe::iterations(1)).postprocess(
        [](LogEntry& e) { e.erase("elapsed_time"); });
  };
  const auto step = [](auto& m, double loss) { m.run_iteration([&] { ppe::reporting::report({{"loss", loss}}); }); };
  auto w1 = std::make_shared<RecordingWriter>(tmp.path);
  auto first = tr::ExtensionsManager(opts_in(tmp, 4, 1), tr::Models{}, tr::Optimizers{}, LogReport(options(w1)));
  step(first, 1.0);
  step(first, 2.0);
  const ppe::State state = first.state_dict();
  const ppe::State lr_state = first.get_extension<LogReport>("LogReport").state_dict();
  CHECK(lr_state.at("_log").as_string() ==
        "[{\"loss\": 1.0, \"epoch\": 1, \"iteration\": 1}, {\"loss\": 2.0, \"epoch\": 2, \"iteration\": 2}]");
  CHECK(lr_state.at("_log_read").as_int() == 0);
  step(first, 3.0);  // written, then lost: the run resumes from the state above
  CHECK(read_file(tmp / "log.csv") == "loss,epoch,iteration\n1.0,1,1\n2.0,2,2\n3.0,3,3\n");

  auto w2 = std::make_shared<RecordingWriter>(tmp.path);
  auto second = tr::ExtensionsManager(opts_in(tmp, 4, 1), tr::Models{}, tr::Optimizers{}, LogReport(options(w2)));
  second.load_state_dict(state);
  step(second, 30.0);
  CHECK(read_file(tmp / "log.csv") == "loss,epoch,iteration\n1.0,1,1\n2.0,2,2\n30.0,3,3\n");
  step(second, 40.0);
  CHECK(read_file(tmp / "log.csv") == "loss,epoch,iteration\n1.0,1,1\n2.0,2,2\n30.0,3,3\n40.0,4,4\n");
  CHECK(w2->calls == std::vector<std::pair<std::string, bool>>{{"log.csv", false}, {"log.csv", true}});
}

TEST_CASE("entries: means as floats in report order, then epoch, iteration, elapsed_time; log() and the reader") {
  TempDir tmp;
  ppe_test::FakeClock clock;
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 3).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                                 tr::entry(LogReport(LogReportOptions().trigger(ppe::iterations(3))), ppe::iterations(1)));
  auto& lr = m.get_extension<LogReport>("LogReport");
  auto reader = lr.make_reader();
  CHECK(lr.trigger_unit() == tr::Unit::Iteration);
  for (int i = 1; i <= 3; ++i)
    m.run_iteration([&] {
      clock.advance(2.0);
      ppe::reporting::report({{"b", i}, {"t", torch::tensor(static_cast<double>(i) * 2)}});
      // The trainer reports an elapsed_time of its own: it keeps its position.
      ppe::reporting::report({{"elapsed_time", 99.0}});
    });
  const auto log = lr.log();
  REQUIRE(log.size() == 1);
  const LogEntry& e = log[0];
  std::vector<std::string> keys;
  for (const auto& [k, v] : e) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"b", "t", "elapsed_time", "epoch", "iteration"});
  CHECK(e.at("b") == ex::LogValue(2.0));  // (1 + 2 + 3) / 3, a float even though ints were reported
  CHECK(e.at("t") == ex::LogValue(4.0));  // tensors: (2 + 4 + 6) / 3
  CHECK(e.at("elapsed_time") == ex::LogValue(6.0));  // overwritten by the manager's 3 x 2 s
  CHECK(e.at("epoch") == ex::LogValue(1));
  CHECK(e.at("iteration") == ex::LogValue(3));
  REQUIRE(reader.new_entries().size() == 1);
  CHECK(reader.new_entries()[0] == e);
}

TEST_CASE("keys: only the listed keys are accumulated") {
  TempDir tmp;
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 2), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().keys({"a", "missing"})));
  for (int i = 0; i < 2; ++i) m.run_iteration([] { ppe::reporting::report({{"a", 1.0}, {"b", 2.0}}); });
  const auto log = m.get_extension<LogReport>("LogReport").log();
  REQUIRE(log.size() == 1);
  CHECK(log[0].contains("a"));
  CHECK_FALSE(log[0].contains("b"));
  CHECK_FALSE(log[0].contains("missing"));
}

TEST_CASE("before training: an entry at iteration 0 when called before training") {
  TempDir tmp;
  ppe_test::FakeClock clock;
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 2).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                                 tr::entry(LogReport(LogReportOptions().filename("l.jsonl")), ppe::iterations(1),
                                           tr::call_before_training));
  m.start_extensions();
  CHECK(read_file(tmp / "l.jsonl") == "{\"epoch\": 0, \"iteration\": 0, \"elapsed_time\": 0.0}\n");
}

TEST_CASE("filename templates: {iteration}, {epoch}, {elapsed_time}, any key; sub-directories") {
  TempDir tmp;
  ppe_test::FakeClock clock;
  auto m = tr::ExtensionsManager(
      opts_in(tmp, 2, 2).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
      LogReport(LogReportOptions().filename("log_{iteration}")),
      LogReport(LogReportOptions().filename("{epoch}/t_{elapsed_time}_{v}_{{x}}.jsonl")));
  for (int i = 0; i < 4; ++i)
    m.run_iteration([&] {
      clock.advance(0.75);
      ppe::reporting::report({{"v", 0.5}});
    });
  // elapsed 2 x 0.75 = 1.5 and 4 x 0.75 = 3.0; v's mean 0.5.
  CHECK(ppe_test::list_dir(tmp.path) == std::set<std::string>{"log_2", "log_4", "1", "1/t_1.5_0.5_{x}.jsonl", "2",
                                                                "2/t_3.0_0.5_{x}.jsonl"});
  CHECK(nlohmann::json::parse(read_file(tmp / "log_4")).size() == 2);  // json: the whole history
}

TEST_CASE("a filename field the entry lacks is an error naming the field and the keys present") {
  TempDir tmp;
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 1), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().filename("log_{loss}")));
  CHECK_THROWS_WITH_AS(ppe_test::step(m),
                       "ppe::LogReport: the filename 'log_{loss}' names the field '{loss}', which the log entry "
                       "lacks; keys present: ['epoch', 'iteration', 'elapsed_time']",
                       std::invalid_argument);
}

TEST_CASE("option errors are raised at construction") {
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().format("xml")),
                       "ppe::LogReport: unsupported log format 'xml'; expected 'json', 'json-lines', 'yaml' or 'csv'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().append(true)),
                       doctest::Contains("the json format cannot be appended to"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("x.json").format("json").append(true)),
                       doctest::Contains("use format 'json-lines', 'yaml' or 'csv' with append"), std::invalid_argument);
  CHECK_NOTHROW(LogReport(LogReportOptions().filename("x.jsonl").append(true)));
  CHECK_NOTHROW(LogReport(LogReportOptions().filename("x.csv").append(true)));
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("")), "ppe::LogReport: the filename is empty",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("log_{")), doctest::Contains("without a closing '}'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("log}")), doctest::Contains("single '}'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("log_{}")), doctest::Contains("empty field"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("log_{0}")), doctest::Contains("positional"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("log_{iteration:05d}")),
                       doctest::Contains("format spec or conversion, which is not supported"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(LogReport(LogReportOptions().filename("log_{main/loss.std}")),
                       doctest::Contains("attribute or index access"), std::invalid_argument);
}

TEST_CASE("an own writer: files go there, LogReport's finalize finalizes it") {
  TempDir tmp;
  auto own = std::make_shared<RecordingWriter>(tmp / "own");
  auto m = tr::ExtensionsManager(opts_in(tmp, 2, 1), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(own).filename("l.yaml").append(true)));
  ppe_test::step(m);
  ppe_test::step(m);
  CHECK(m.finalized());
  CHECK(own->calls == std::vector<std::pair<std::string, bool>>{{"l.yaml", true}, {"l.yaml", true}});
  CHECK(own->finalized == 1);
  CHECK(YAML::LoadFile((tmp / "own/l.yaml").string()).size() == 2);
  CHECK_FALSE(std::filesystem::exists(tmp / "l.yaml"));
}

TEST_CASE("a failed write propagates; the entry stays for the next write") {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "log");  // the destination is a directory
  auto m = tr::ExtensionsManager(opts_in(tmp, 3, 1), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().filename("log")));
  CHECK_THROWS_AS(ppe_test::step(m), wr::WriteError);
  CHECK(m.get_extension<LogReport>("LogReport").log().size() == 1);
}

TEST_CASE("state_dict: PPE's layout (_trigger, _summary, _log as a JSON string)") {
  TempDir tmp;
  ppe_test::FakeClock clock;
  auto m = tr::ExtensionsManager(opts_in(tmp, 3, 2).clock(clock.fn()), tr::Models{}, tr::Optimizers{}, LogReport());
  for (int i = 0; i < 3; ++i)
    m.run_iteration([&] {
      clock.advance(0.5);
      ppe::reporting::report({{"loss", 0.5}});
    });
  const ppe::State s = m.state_dict().at("extensions").at("LogReport").at("extension");
  CHECK(s.at("_trigger") == ppe::State::dict());
  CHECK(s.at("_summary").contains("loss"));  // iteration 3 is accumulated, not yet logged
  CHECK(s.at("_log").as_string() ==
        "[{\"loss\": 0.5, \"epoch\": 1, \"iteration\": 2, \"elapsed_time\": 1.0}]");
  CHECK(s.at("_log_read").as_int() == 0);
}

TEST_CASE("resume: a restored LogReport continues the log and the partial summary") {
  // Uninterrupted: 3 epochs of 2 iterations, loss = iteration number, 1 s each.
  auto run = [](auto& m, ppe_test::FakeClock& clock, int from, int to) {
    for (int i = from; i <= to; ++i)
      m.run_iteration([&] {
        clock.advance(1.0);
        ppe::reporting::report({{"loss", static_cast<double>(i)}});
      });
  };
  TempDir a, b;
  ppe_test::FakeClock ca, cb;
  auto whole = tr::ExtensionsManager(opts_in(a, 3, 2).clock(ca.fn()), tr::Models{}, tr::Optimizers{}, LogReport());
  run(whole, ca, 1, 6);

  auto first = tr::ExtensionsManager(opts_in(b, 3, 2).clock(cb.fn()), tr::Models{}, tr::Optimizers{}, LogReport());
  run(first, cb, 1, 3);  // stops mid-epoch: the summary holds iteration 3
  const ppe::State state = first.state_dict();
  cb.set(500.0);
  auto second = tr::ExtensionsManager(opts_in(b, 3, 2).clock(cb.fn()), tr::Models{}, tr::Optimizers{}, LogReport());
  second.load_state_dict(state);
  run(second, cb, 4, 6);
  CHECK(read_file(b / "log") == read_file(a / "log"));
  CHECK(second.get_extension<LogReport>("LogReport").log().size() == 3);
}

TEST_CASE("resume in append mode does not write the old entries again") {
  TempDir tmp;
  const auto options = LogReportOptions().filename("log.jsonl").append(true);
  auto first = tr::ExtensionsManager(opts_in(tmp, 3, 1), tr::Models{}, tr::Optimizers{}, LogReport(options));
  auto reader = first.get_extension<LogReport>("LogReport").make_reader();  // keeps entries in the buffer
  ppe_test::step(first);
  ppe_test::step(first);
  const ppe::State state = first.state_dict();
  CHECK(state.at("extensions").at("LogReport").at("extension").at("_log_read").as_int() == 2);
  auto second = tr::ExtensionsManager(opts_in(tmp, 3, 1), tr::Models{}, tr::Optimizers{}, LogReport(options));
  second.load_state_dict(state);
  ppe_test::step(second);
  std::istringstream lines(read_file(tmp / "log.jsonl"));
  std::vector<std::int64_t> iterations;
  for (std::string line; std::getline(lines, line);) iterations.push_back(nlohmann::json::parse(line)["iteration"]);
  CHECK(iterations == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("a state written by Python PPE loads (no _log_read; _log with NaN)") {
  TempDir tmp;
  LogReport lr;
  ppe::State s = ppe::State::dict();
  s.set("_trigger", ppe::State::dict());
  s.set("_summary", ppe::State::dict());
  s.set("_log", "[{\"main/loss\": NaN, \"epoch\": 1, \"iteration\": 5, \"elapsed_time\": 1.25}]");
  lr.load_state_dict(s);
  auto log = lr.log();
  REQUIRE(log.size() == 1);
  CHECK(std::isnan(log[0].at("main/loss").to_double()));
  CHECK(log[0].at("iteration") == ex::LogValue(5));
  s.set("_log", 3);
  CHECK_THROWS_WITH_AS(lr.load_state_dict(s), doctest::Contains("'_log' must be a JSON string, got a int"),
                       std::invalid_argument);
}

TEST_CASE("LogReport is an extension with PPE's traits, move-only") {
  static_assert(tr::extension<LogReport>);
  static_assert(!std::is_copy_constructible_v<LogReport>);
  static_assert(std::is_nothrow_move_constructible_v<LogReport>);
  CHECK(tr::extension_traits<LogReport>::default_name() == "LogReport");
  CHECK(tr::extension_traits<LogReport>::priority() == tr::kPriorityReader);
  CHECK(LogReport::default_trigger().unit() == tr::Unit::Iteration);
  CHECK(LogReport::default_trigger().period() == 1);
  CHECK(LogReport().trigger().unit() == tr::Unit::Epoch);
  CHECK(LogReport().trigger_unit() == tr::Unit::Epoch);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_log_report
