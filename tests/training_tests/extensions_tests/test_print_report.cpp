// Port of PPE's tests/.../extensions_tests/test_print_report.py (table D3) and
// of the PrintReport case of test_log_buffer.py (table D2), plus ours: exact
// output for a fixed run on a plain stream and on a pseudo-terminal (PPE writes
// its terminal bytes to every stream), inferred entries that grow (header
// printed again), explicit entries with a missing key (blank cell), Python's
// `g` cells, a LogReport given by name or as an instance (state), errors.
#include "ppe_test.hpp"
#include <ppe/training/extensions/log_format_yaml.hpp>  // the yaml format (ppe-config)
#include "temp_dir.hpp"

#include <ppe/training/extensions/print_report.hpp>

#include <limits>
#include <sstream>

#include "pseudo_terminal.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_print_report {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace rp = ppe::reporting;
using ext::LogEntry;
using ext::LogReport;
using ext::LogReportOptions;
using ext::PrintReport;
using ext::PrintReportOptions;
using ppe_test::TempDir;

namespace {

/// A manager writing under `dir`, on `clock`, with the given extensions.
template <class... Es>
auto manager_in(const TempDir& dir, const ppe_test::FakeClock& clock, double max_epochs, std::int64_t ipe,
                Es&&... exts) {
  // These tests print PPE's blank cells for keys nobody reports, which the
  // manager's report-key check (tests/training_tests/test_manager.cpp) warns
  // about at the end of a run.
  return tr::ExtensionsManager(
      ppe_test::options(max_epochs, ipe).out_dir(dir.str()).clock(clock.fn()).check_report_keys(false), tr::Models{},
      tr::Optimizers{}, std::forward<Es>(exts)...);
}

// The fixed run: 2 epochs of 3 iterations, each taking 0.25 s of the fake
// clock; LogReport every 2 iterations (unit: iteration), its postprocess adding
// the int "samples" = iteration * 250000; PrintReport after it.
//   it  main/loss   other
//   1   1.0
//   2   0.5                     -> entry 1: main/loss (1.0 + 0.5) / 2 = 0.75, iteration 2, elapsed 0.5, samples 500000
//   3   0.125
//   4   0.375       val/accuracy 0.9
//                               -> entry 2: main/loss 0.25, val/accuracy 0.9, iteration 4, elapsed 1.0, samples 1000000
//   5   1234567.0
//   6   1234567.0               -> entry 3: main/loss 1234567.0, iteration 6, elapsed 1.5, samples 1500000
// Entry keys: the means, epoch, iteration, elapsed_time, then samples.
// Inferred columns (unit iteration: "iteration" first, "epoch" dropped,
// "elapsed_time" last): [iteration, main/loss, samples, elapsed_time], then
// with val/accuracy (first seen in entry 2, after samples) before elapsed_time.
// Widths max(10, len): 10, 10, 10, 12 ("val/accuracy"), 12 ("elapsed_time").
// Cells, Python format(v, "<10g") / "<12g" plus two spaces:
//   2 -> "2         "   0.75 -> "0.75      "   500000 -> "500000    "   0.5 -> "0.5         "
//   4, 0.25, 1000000 -> "1e+06     " (an int in g format), 0.9 -> "0.9         ", 1.0 -> "1           "
//   1234567.0 -> "1.23457e+06" (11 > 10: not cut), 1500000 -> "1.5e+06   ",
//   no val/accuracy in entry 3 -> 12 + 2 = 14 spaces
// The first call (iteration 1) has no entry yet: the inferred header of no
// columns, "\n", as PPE.
// PPE 0.9.0 writes for this run (its clock faked the same way) exactly
// kTerminalOutput below, "\033[J" included, to any stream.
void run_fixed(const TempDir& dir, const ppe_test::FakeClock& clock, std::ostream& out,
               std::optional<bool> terminal = std::nullopt, bool instance = false) {
  auto log_options = LogReportOptions().trigger(ppe::iterations(2)).postprocess([](LogEntry& e) {
    e.set("samples", e.at("iteration").as_int() * 250000);
  });
  PrintReportOptions print_options = PrintReportOptions().out(&out);
  if (terminal) print_options.terminal(*terminal);
  const double losses[] = {1.0, 0.5, 0.125, 0.375, 1234567.0, 1234567.0};
  auto body = [&](auto& m) {
    for (int i = 1; i <= 6; ++i)
      m.run_iteration([&] {
        clock.advance(0.25);
        rp::report({{"main/loss", losses[i - 1]}});
        if (i == 4) rp::report({{"val/accuracy", 0.9}});
      });
  };
  if (instance) {
    auto m = manager_in(dir, clock, 2, 3, PrintReport(print_options.log_report(LogReport(log_options))));
    body(m);
  } else {
    auto m = manager_in(dir, clock, 2, 3, LogReport(log_options), PrintReport(print_options));
    body(m);
  }
}

const std::string kPlainOutput =
    "\n"
    "iteration   main/loss   samples     elapsed_time\n"
    "2           0.75        500000      0.5           \n"
    "iteration   main/loss   samples     val/accuracy  elapsed_time\n"
    "4           0.25        1e+06       0.9           1             \n"
    "6           1.23457e+06  1.5e+06                   1.5           \n";
const std::string kTerminalOutput =
    "\n"
    "iteration   main/loss   samples     elapsed_time\n"
    "\033[J2           0.75        500000      0.5           \n"
    "iteration   main/loss   samples     val/accuracy  elapsed_time\n"
    "\033[J4           0.25        1e+06       0.9           1             \n"
    "\033[J6           1.23457e+06  1.5e+06                   1.5           \n";

}  // namespace

// PPE's test_run_print_report: max_epochs 5, ipe 5, LogReport() then
// PrintReport(out=StringIO); after each epoch the output holds the header of
// the inferred columns (unit epoch: "epoch" padded to 10, two spaces).
TEST_CASE("PPE test_run_print_report: the inferred header after each epoch") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 5, 5, LogReport(), PrintReport(PrintReportOptions().out(&out)));
  for (int epoch = 0; epoch < 5; ++epoch) {
    for (int i = 0; i < 5; ++i) m.run_iteration([&] { clock.advance(1); });
    CHECK(out.str().find("epoch       elapsed_time") != std::string::npos);
  }
  // Five rows (epoch e at 5e seconds), no control characters on a string stream.
  CHECK(out.str() ==
        "\n"
        "epoch       elapsed_time\n"
        "1           5             \n"
        "2           10            \n"
        "3           15            \n"
        "4           20            \n"
        "5           25            \n");
}

// PPE's test_log_buffer case with a PrintReport: LogReport(append, yaml) every
// epoch, PrintReport every 3 epochs; the shared log never holds more than the
// 3 entries PrintReport has not printed yet, and the file gets all 10.
TEST_CASE("PPE test_log_buffer with PrintReport: the log holds at most what PrintReport has not printed") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 10, 5, LogReport(LogReportOptions().filename("out").format("yaml").append(true)),
                      tr::entry(PrintReport(PrintReportOptions().out(&out)), ppe::epochs(3)));
  const LogReport& log_report = m.get_extension<LogReport>("LogReport");
  std::size_t largest = 0;
  for (int i = 0; i < 50; ++i) {
    m.run_iteration([&] {
      largest = std::max(largest, log_report.buffer().size());
      CHECK(log_report.buffer().size() <= 3);
    });
  }
  // LogReport appends at the end of epochs 1 and 2; at the end of epoch 3 it
  // appends the third and PrintReport, after it, prints all three in the same
  // iteration: between iterations the log holds at most 2.
  CHECK(largest == 2);
  const std::string yaml = ppe_test::read_file(dir / "out");
  std::size_t entries = 0;
  for (std::size_t p = 0; (p = yaml.find("- ", p)) != std::string::npos; ++p) ++entries;
  CHECK(entries == 10);
  // Printed at epochs 3, 6, 9: rows for epochs 1..9; epoch 10 is never printed.
  CHECK(out.str().find("\n9   ") != std::string::npos);
  CHECK(out.str().find("\n10  ") == std::string::npos);
}

TEST_CASE("PrintReport on a plain stream: PPE's table without control characters") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  run_fixed(dir, clock, out);
  CHECK(out.str() == kPlainOutput);
}

TEST_CASE("PrintReport on a terminal: PPE's exact bytes, \"\\033[J\" before each row") {
  TempDir dir;
  ppe_test::FakeClock clock;
  ppe_test::PseudoTerminal pty;
  ppe::detail::FdOStream tty(pty.slave_fd());
  run_fixed(dir, clock, tty);  // detected, no option
  CHECK(pty.read_all() == kTerminalOutput);
}

TEST_CASE("PrintReport: the terminal option overrides the stream") {
  TempDir dir;
  ppe_test::FakeClock clock;
  SUBCASE("terminal(true) on a string stream") {
    std::ostringstream out;
    run_fixed(dir, clock, out, true);
    CHECK(out.str() == kTerminalOutput);
  }
  SUBCASE("terminal(false) on a terminal") {
    ppe_test::PseudoTerminal pty;
    ppe::detail::FdOStream tty(pty.slave_fd());
    run_fixed(dir, clock, tty, false);
    CHECK(pty.read_all() == kPlainOutput);
  }
}

// PPE's PrintReport(log_report=LogReport(...)): the instance is not registered;
// PrintReport calls it first at each call, so the table is the same.
TEST_CASE("PrintReport with a LogReport instance prints the same table") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  run_fixed(dir, clock, out, std::nullopt, /*instance=*/true);
  CHECK(out.str() == kPlainOutput);
  // The instance writes its log file through the manager's writer; PPE would
  // also log an entry for iteration 0 (it calls the instance in initialize).
  const std::string log = ppe_test::read_file(dir / "log");
  CHECK(log.find("\"iteration\": 0") == std::string::npos);
  CHECK(log.find("\"iteration\": 6") != std::string::npos);
}

// Explicit entries (LogReport every epoch, 2 iterations of 0.5 s): the header
// is printed at the first call, before any entry; a key no entry has gets
// blank cells (width + 2 spaces); a long key widens its column; "iteration" is
// shown because it was asked for.
//   epoch 1: main/loss (2 + 4) / 2 = 3, iteration 2, elapsed 1
//   epoch 2: main/loss (6 + 8) / 2 = 7, iteration 4, elapsed 2, and "extra" 0.5 reported at iteration 4
// Widths: epoch 10, iteration 10, main/loss 10, missing 10, "a_rather_long_key" 17, extra 10.
TEST_CASE("PrintReport with explicit entries: header first, blank cells for missing keys") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 2, 2, LogReport(),
                      PrintReport({"epoch", "iteration", "main/loss", "missing", "a_rather_long_key", "extra"},
                                  PrintReportOptions().out(&out)));
  const std::string header =
      "epoch       iteration   main/loss   missing     a_rather_long_key  extra     \n";
  for (int i = 1; i <= 4; ++i)
    m.run_iteration([&] {
      clock.advance(0.5);
      rp::report({{"main/loss", 2.0 * i}});
      if (i == 4) rp::report({{"extra", 0.5}});
    });
  CHECK(m.get_extension<PrintReport>("PrintReport").entries() ==
        std::vector<std::string>{"epoch", "iteration", "main/loss", "missing", "a_rather_long_key", "extra"});
  // Cells "<10g" + 2 spaces: "1           ". Blanks: missing 10 + 2, the long
  // key 17 + 2, extra (row 1) 10 + 2. (PPE 0.9.0 prints these lines, minus its "\033[J".)
  CHECK(out.str() == header + "1           2           3           " + std::string(12 + 19 + 12, ' ') + "\n" +
                         "2           4           7           " + std::string(12 + 19, ' ') + "0.5         \n");
}

// The header is printed once, at the first call, also when no entry comes for
// a while; an explicit table never changes its header.
TEST_CASE("PrintReport with explicit entries prints the header once") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 3, 2, LogReport(), PrintReport({"epoch"}, PrintReportOptions().out(&out)));
  m.run_iteration([] {});
  CHECK(out.str() == "epoch     \n");
  for (int i = 0; i < 5; ++i) m.run_iteration([] {});
  CHECK(out.str() == "epoch     \n1           \n2           \n3           \n");
}

// Cells are Python's format(v, "<10g"): ints are formatted as the float they
// convert to (checked with Python 3.11: format(1000000, "<10g") == "1e+06     ",
// format(2**53 + 1, "<10g") == "9.0072e+15").
TEST_CASE("PrintReport cells: Python's g format for ints and floats") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    ext::LogValue value;
    std::string cell;
  };
  const std::vector<Case> cases = {
      {1, "1         "},
      {123456, "123456    "},
      {1000000, "1e+06     "},
      {std::int64_t{9007199254740993}, "9.0072e+15"},  // 2^53 + 1
      {1e15, "1e+15     "},
      {1234567.0, "1.23457e+06"},
      {0.1, "0.1       "},
      {1e-05, "1e-05     "},
      {0.0001, "0.0001    "},
      {-0.0, "-0        "},
      {-2.5, "-2.5      "},
      {nan, "nan       "},
      {inf, "inf       "},
      {-inf, "-inf      "},
  };
  for (const auto& c : cases) {
    CAPTURE(c.cell);
    TempDir dir;
    ppe_test::FakeClock clock;
    std::ostringstream out;
    auto m = manager_in(dir, clock, 1, 1,
                        LogReport(LogReportOptions().postprocess([&](LogEntry& e) { e.set("v", c.value); })),
                        PrintReport({"v"}, PrintReportOptions().out(&out)));
    m.run_iteration([] {});
    CHECK(out.str() == "v         \n" + c.cell + "  \n");
  }
}

// Python's len counts code points: "損失" (2 code points, 6 bytes) is padded to 10.
TEST_CASE("PrintReport pads keys by code points, as Python") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 1, 1, LogReport(),
                      PrintReport({"\xe6\x90\x8d\xe5\xa4\xb1", "epoch"}, PrintReportOptions().out(&out)));
  m.run_iteration([] { rp::report({{"\xe6\x90\x8d\xe5\xa4\xb1", 0.5}}); });
  CHECK(out.str() ==
        "\xe6\x90\x8d\xe5\xa4\xb1        "  // 2 + 8
        "  epoch     \n"
        "0.5         1           \n");
}

// Inferred entries with the default LogReport (unit epoch): "epoch" first,
// "iteration" never shown (PPE's filter_and_sort_entries), elapsed_time last;
// a key first reported in the second epoch re-prints the header.
TEST_CASE("PrintReport infers entries: epoch unit, a key that appears later re-prints the header") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 2, 1, LogReport(), PrintReport(PrintReportOptions().out(&out)));
  m.run_iteration([&] {
    clock.advance(2);
    rp::report({{"b", 1.0}});
  });
  m.run_iteration([&] {
    clock.advance(2);
    rp::report({{"a", 3.0}, {"b", 2.0}});
  });
  const auto& pr = m.get_extension<PrintReport>("PrintReport");
  CHECK(pr.infers_entries());
  CHECK(pr.entries() == std::vector<std::string>{"epoch", "b", "a", "elapsed_time"});
  CHECK(out.str() ==
        "epoch       b           elapsed_time\n"
        "1           1           2             \n"
        "epoch       b           a           elapsed_time\n"
        "2           2           3           4             \n");
}

// PPE's filter_and_sort_entries.
TEST_CASE("PrintReport::sorted_entries is PPE's filter_and_sort_entries") {
  using V = std::vector<std::string>;
  const V keys = {"main/loss", "epoch", "iteration", "elapsed_time", "lr"};
  CHECK(PrintReport::sorted_entries(keys, tr::Unit::Epoch) == V{"epoch", "main/loss", "lr", "elapsed_time"});
  CHECK(PrintReport::sorted_entries(keys, tr::Unit::Iteration) == V{"iteration", "main/loss", "lr", "elapsed_time"});
  CHECK(PrintReport::sorted_entries({"elapsed_time", "x"}, tr::Unit::Epoch) == V{"x", "elapsed_time"});
  CHECK(PrintReport::sorted_entries({"iteration", "x"}, tr::Unit::Epoch) == V{"x"});
  CHECK(PrintReport::sorted_entries({}, tr::Unit::Iteration).empty());
}

// Same priority as LogReport: registered before it, PrintReport sees an entry
// one iteration late (PPE's note); registered after, in the same iteration.
TEST_CASE("PrintReport registered before its LogReport prints one iteration later") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto m = manager_in(dir, clock, 3, 1, PrintReport({"epoch"}, PrintReportOptions().out(&out)), LogReport());
  m.run_iteration([] {});
  CHECK(out.str() == "epoch     \n");
  m.run_iteration([] {});
  CHECK(out.str() == "epoch     \n1           \n");
}

TEST_CASE("PrintReport state: the instance's state, else {}") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  SUBCASE("by name: {} (the registered LogReport saves its own)") {
    auto m = manager_in(dir, clock, 2, 1, LogReport(), PrintReport(PrintReportOptions().out(&out)));
    m.run_iteration([] {});
    CHECK(tr::extension_state_dict(m.get_extension<PrintReport>("PrintReport")) == ppe::State::dict());
    CHECK(m.state_dict().at("extensions").at("PrintReport").at("extension") == ppe::State::dict());
  }
  SUBCASE("with an instance: {\"_log_report\": its state}; loading restores it and counts the entries as printed") {
    auto make = [&] {
      return manager_in(dir, clock, 3, 1,
                        PrintReport(PrintReportOptions().out(&out).log_report(LogReport(LogReportOptions().filename("l")))));
    };
    auto m = make();
    m.run_iteration([] { rp::report({{"x", 1.0}}); });
    m.run_iteration([] { rp::report({{"x", 3.0}}); });
    const auto& pr = m.get_extension<PrintReport>("PrintReport");
    const ppe::State s = pr.state_dict();
    CHECK(s.size() == 1);
    CHECK(s.at("_log_report") == pr.log_report_instance()->state_dict());
    CHECK(pr.log_report_instance()->log().size() == 2);

    std::ostringstream out2;
    auto m2 = manager_in(dir, clock, 3, 1,
                         PrintReport(PrintReportOptions().out(&out2).log_report(LogReport(LogReportOptions().filename("l")))));
    m2.load_state_dict(m.state_dict());
    m2.run_iteration([] { rp::report({{"x", 5.0}}); });
    auto& pr2 = m2.get_extension<PrintReport>("PrintReport");
    CHECK(pr2.log_report_instance()->log().size() == 3);
    // Only the new entry is printed, under a new header (inferred anew).
    CHECK(out2.str() ==
          "epoch       x           elapsed_time\n"
          "3           5           0             \n");  // elapsed 0: the clock did not move
    CHECK_THROWS_WITH_AS(pr2.load_state_dict(ppe::State::dict()), doctest::Contains("_log_report"), ppe::StateError);
  }
}

TEST_CASE("PrintReport errors name the problem") {
  TempDir dir;
  ppe_test::FakeClock clock;
  std::ostringstream out;
  SUBCASE("no LogReport of that name: the registered extensions are listed") {
    auto m = manager_in(dir, clock, 1, 1, LogReport(), PrintReport(PrintReportOptions().out(&out).log_report("Log")));
    CHECK_THROWS_WITH_AS(
        m.run_iteration([] {}),
        "ppe: PrintReport reads the log of the LogReport named 'Log' (option log_report): extension 'Log' not found; "
        "registered extensions: ['LogReport', 'PrintReport']",
        std::out_of_range);
  }
  SUBCASE("the default name without a LogReport") {
    auto m = manager_in(dir, clock, 1, 1, PrintReport(PrintReportOptions().out(&out)));
    CHECK_THROWS_WITH_AS(m.run_iteration([] {}),
                         doctest::Contains("LogReport named 'LogReport' (option log_report): extension 'LogReport' "
                                           "not found; registered extensions: ['PrintReport']"),
                         std::out_of_range);
  }
  SUBCASE("the name of an extension that is not a LogReport: its type is named") {
    auto m = manager_in(dir, clock, 1, 1, LogReport(),
                        PrintReport(PrintReportOptions().out(&out).log_report("PrintReport")));
    CHECK_THROWS_WITH_AS(m.run_iteration([] {}),
                         "ppe: PrintReport reads the log of the LogReport named 'PrintReport' (option log_report): "
                         "extension 'PrintReport' is a PrintReport, not a LogReport",
                         std::invalid_argument);
  }
  SUBCASE("options") {
    using O = PrintReportOptions;
    CHECK_THROWS_WITH_AS(PrintReport(O().out(nullptr)), "ppe: PrintReport out must be a stream, got a null pointer",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(PrintReport(O().entries({})), doctest::Contains("PrintReport entries is empty"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(PrintReport(O().log_report("")), doctest::Contains("PrintReport log_report is empty"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(PrintReport(O().log_report(std::shared_ptr<LogReport>())),
                         doctest::Contains("PrintReport log_report is empty"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(PrintReport({"a"}, O().entries({"b"})), doctest::Contains("entries twice"),
                         std::invalid_argument);
  }
  SUBCASE("called before initialize") {
    PrintReport pr(PrintReportOptions().out(&out));
    auto m = manager_in(dir, clock, 1, 1);
    CHECK_THROWS_WITH_AS(pr(m), doctest::Contains("PrintReport was called before initialize"), std::logic_error);
  }
}

TEST_CASE("PrintReport: PPE's defaults") {
  using Tr = tr::extension_traits<PrintReport>;
  CHECK(Tr::default_name() == "PrintReport");
  CHECK(Tr::priority() == tr::kPriorityReader);
  CHECK(Tr::default_trigger().training_length() == tr::TrainingLength{1, tr::Unit::Iteration});
  static_assert(tr::extension<PrintReport>);
  static_assert(!std::is_copy_constructible_v<PrintReport>);
  static_assert(std::is_nothrow_move_constructible_v<PrintReport>);
  PrintReportOptions o;
  CHECK(o.out() == &std::cout);
  CHECK(o.log_report_name() == "LogReport");
  CHECK(!o.entries());
  CHECK(!o.terminal());
  CHECK(PrintReport().infers_entries());
  CHECK(PrintReport().entries().empty());
}

// Distributed training (ARCHITECTURE section 9): the log and the table are
// written by rank 0 alone unless told otherwise.
TEST_CASE("LogReport and PrintReport act on rank 0 by default; rank() picks another, or every rank") {
  auto run_as = [](int rank, const std::optional<int>& writer_rank, const TempDir& dir, std::ostringstream& out) {
    ppe_test::FakeClock clock;
    auto m = tr::ExtensionsManager(
        ppe_test::options(2, 2).out_dir(dir.str()).clock(clock.fn()).rank(rank).world_size(2), tr::Models{},
        tr::Optimizers{}, LogReport(LogReportOptions().rank(writer_rank)),
        PrintReport(PrintReportOptions().out(&out).rank(writer_rank)));
    for (int i = 0; i < 4; ++i) m.run_iteration([&] { clock.advance(1); });
  };
  for (const auto& [rank, writer_rank, writes] : std::vector<std::tuple<int, std::optional<int>, bool>>{
           {0, 0, true}, {1, 0, false}, {1, 1, true}, {0, 1, false}, {1, std::nullopt, true}}) {
    CAPTURE(rank);
    CAPTURE(writer_rank.value_or(-1));
    TempDir dir;
    std::ostringstream out;
    run_as(rank, writer_rank, dir, out);
    CHECK(std::filesystem::exists(dir / "log") == writes);
    CHECK(out.str().empty() == !writes);
  }
  // The default option is rank 0.
  CHECK(LogReportOptions().rank() == 0);
  CHECK(PrintReportOptions().rank() == 0);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_print_report
