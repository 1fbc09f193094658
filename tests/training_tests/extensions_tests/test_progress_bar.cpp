// Port of PPE's tests/.../extensions_tests/test_progress_bar.py (table D3),
// plus exact output on a terminal (a pseudo-terminal) and on a plain stream,
// which are ours: PPE writes its terminal display to every stream.
#include "ppe_test.hpp"

#include <ppe/training/extensions/progress_bar.hpp>

#include <regex>
#include <sstream>

#include "pseudo_terminal.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_progress_bar {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

/// A manager on a fake clock with the given extensions.
template <class... Es>
auto clocked_manager(const ppe_test::FakeClock& clock, double max_epochs, std::int64_t ipe, Es&&... exts) {
  return tr::ExtensionsManager(ppe_test::options(max_epochs, ipe).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                               std::forward<Es>(exts)...);
}

/// Runs iterations whose body takes `dt` seconds of the fake clock.
template <class M>
void run(M& manager, const ppe_test::FakeClock& clock, int iterations, double dt) {
  for (int i = 0; i < iterations; ++i) manager.run_iteration([&] { clock.advance(dt); });
}

/// Splits `text` after each "\n".
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(text.substr(start, nl + 1 - start));
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

}  // namespace

// PPE's test_run: max_epochs 5, ipe 5, ProgressBar(update_interval=1,
// bar_length=40, out=StringIO); the body "takes" 0.12 s (PPE sleeps 0.1 s and
// accepts 7..12 iters/sec; on the fake clock the speed is exactly
// 1 / 0.12 = 8.3333 iters/sec, which also has the decimal point PPE's regex wants).
TEST_CASE("PPE test_run: the status line names iteration, epoch and length; the speed is measured") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager = clocked_manager(clock, 5, 5, ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).bar_length(40).out(&out)));
  const std::regex speed(R"(([0-9]+\.[0-9]*) iters/sec)");
  int checked = 0;
  for (int epoch = 0; epoch < 5; ++epoch) {
    for (int i = 0; i < 5; ++i) {
      manager.run_iteration([&] {
        clock.advance(0.12);
        if (manager.iteration() < 2) return;
        const std::string status = out.str();
        const std::string expected =
            std::to_string(manager.iteration()) + " iter, " + std::to_string(epoch) + " epoch / 5 epochs";
        CHECK(status.find(expected) != std::string::npos);
        std::string last;
        for (auto it = std::sregex_iterator(status.begin(), status.end(), speed); it != std::sregex_iterator(); ++it)
          last = (*it)[1];
        REQUIRE(!last.empty());
        const double v = std::stod(last);
        CHECK(v >= 7);
        CHECK(v <= 12);
        ++checked;
      });
    }
  }
  CHECK(checked == 23);
}

// A plain stream gets one line per update and no control characters.
// max_epochs 2, ipe 2, each iteration 0.5 s, update every iteration:
//   it  t    epoch_detail  total rate   this epoch  speed (window from it 1)      ETA (remaining epochs / epochs per sec)
//   1   0.5  0.5           0.5/2=25%    50%         span 0 -> inf                 1.5/inf = 0
//   2   1.0  1.0           50%          0%          (2-1)/(1.0-0.5)   = 2         (2-1)/((1.0-0.5)/0.5=1) = 1 s
//   3   1.5  1.5           75%          50%         (3-1)/(1.5-0.5)   = 2         0.5/1 = 0.5 s
//   4   2.0  2.0           100%         0%          (4-1)/(2.0-0.5)   = 2         0 remaining -> 0
TEST_CASE("ProgressBar on a plain stream: exact status lines, nothing on finalize") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager =
      clocked_manager(clock, 2, 2, ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).bar_length(10).out(&out)));
  run(manager, clock, 4, 0.5);
  CHECK(manager.finalized());
  CHECK(out.str() ==
        "1 iter, 0 epoch / 2 epochs, 25.00% total, 50.00% this epoch, inf iters/sec, ETA 0:00:00\n"
        "2 iter, 1 epoch / 2 epochs, 50.00% total, 0.00% this epoch, 2 iters/sec, ETA 0:00:01\n"
        "3 iter, 1 epoch / 2 epochs, 75.00% total, 50.00% this epoch, 2 iters/sec, ETA 0:00:00.500000\n"
        "4 iter, 2 epoch / 2 epochs, 100.00% total, 0.00% this epoch, 2 iters/sec, ETA 0:00:00\n");
}

// The same run on a pseudo-terminal, detected as a terminal without any
// option: PPE's four lines per update, "\033[J" before, "\033[4A" after;
// finalize (the stop trigger fires after iteration 4) erases.
// Bars of 10: int(rate * 10) marks; rates as in the table above.
TEST_CASE("ProgressBar on a terminal: PPE's exact display, erased on finalize") {
  ppe_test::PseudoTerminal pty;
  ppe::detail::FdOStream tty(pty.slave_fd());
  ppe_test::FakeClock clock;
  auto manager =
      clocked_manager(clock, 2, 2, ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).bar_length(10).out(&tty)));
  CHECK(manager.get_extension<ext::ProgressBar>("ProgressBar").terminal());

  manager.run_iteration([&] { clock.advance(0.5); });
  CHECK(pty.read_all() ==
        "\033[J"
        "     total [##........] 25.00%\n"  // int(0.25 * 10) = 2 marks
        "this epoch [#####.....] 50.00%\n"
        "         1 iter, 0 epoch / 2 epochs\n"
        "       inf iters/sec. Estimated time to finish: 0:00:00.\n"
        "\033[4A");
  run(manager, clock, 3, 0.5);
  CHECK(pty.read_all() ==
        "\033[J"
        "     total [#####.....] 50.00%\n"
        "this epoch [..........]  0.00%\n"  // " 0.00%": width 6
        "         2 iter, 1 epoch / 2 epochs\n"
        "         2 iters/sec. Estimated time to finish: 0:00:01.\n"
        "\033[4A"
        "\033[J"
        "     total [#######...] 75.00%\n"  // int(7.5) = 7
        "this epoch [#####.....] 50.00%\n"
        "         3 iter, 1 epoch / 2 epochs\n"
        "         2 iters/sec. Estimated time to finish: 0:00:00.500000.\n"
        "\033[4A"
        "\033[J"
        "     total [##########] 100.00%\n"  // wider than 6: not cut
        "this epoch [..........]  0.00%\n"
        "         4 iter, 2 epoch / 2 epochs\n"
        "         2 iters/sec. Estimated time to finish: 0:00:00.\n"
        "\033[4A"
        "\033[J");  // finalize
}

// An iteration-unit length from the options (the stop trigger says 2.5 epochs
// = 10 iterations, the bar 10 iterations), updates every 3 iterations, 0.3 s
// per iteration (ipe 4):
//   it  t    rate      epoch_detail  this epoch  speed                         ETA
//   3   0.9  3/10=30%  0.75          75%         inf                           0
//   6   1.8  60%       1.5           50%         (6-3)/(1.8-0.9) = 3.3333      (10-6)/3.3333 = 1.2 s
//   9   2.7  90%       2.25          25%         (9-3)/(2.7-0.9) = 3.3333      1/3.3333 = 0.3 s
TEST_CASE("ProgressBar: explicit iteration length, update interval, Python's g format") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager = clocked_manager(
      clock, 2.5, 4,
      ext::ProgressBar(ext::ProgressBarOptions().training_length(tr::TrainingLength{10, tr::Unit::Iteration}).update_interval(3).out(&out)));
  run(manager, clock, 10, 0.3);
  CHECK(out.str() ==
        "3 iter, 0 epoch / 10 iterations, 30.00% total, 75.00% this epoch, inf iters/sec, ETA 0:00:00\n"
        "6 iter, 1 epoch / 10 iterations, 60.00% total, 50.00% this epoch, 3.3333 iters/sec, ETA 0:00:01.200000\n"
        "9 iter, 2 epoch / 10 iterations, 90.00% total, 25.00% this epoch, 3.3333 iters/sec, ETA 0:00:00.300000\n");
}

// The run above on a terminal, compared with what PPE 0.9.0 writes for it
// (run from source with time.time faked the same way): bars of 50 marks,
// int(rate * 50): 0.3 -> 15, 0.75 -> 37, 0.6 -> 30, 0.5 -> 25, 0.9 -> 45, 0.25 -> 12.
TEST_CASE("ProgressBar on a terminal matches PPE's bytes (iteration length, default bar)") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager = clocked_manager(clock, 2.5, 4,
                                 ext::ProgressBar(ext::ProgressBarOptions()
                                                      .training_length(tr::TrainingLength{10, tr::Unit::Iteration})
                                                      .update_interval(3)
                                                      .out(&out)
                                                      .terminal(true)));
  run(manager, clock, 10, 0.3);
  const auto bar = [](int marks) { return "[" + std::string(marks, '#') + std::string(50 - marks, '.') + "] "; };
  CHECK(out.str() ==
        "\033[J     total " + bar(15) + "30.00%\nthis epoch " + bar(37) + "75.00%\n" +
            "         3 iter, 0 epoch / 10 iterations\n"
            "       inf iters/sec. Estimated time to finish: 0:00:00.\n\033[4A" +
            "\033[J     total " + bar(30) + "60.00%\nthis epoch " + bar(25) + "50.00%\n" +
            "         6 iter, 1 epoch / 10 iterations\n"
            "    3.3333 iters/sec. Estimated time to finish: 0:00:01.200000.\n\033[4A" +
            "\033[J     total " + bar(45) + "90.00%\nthis epoch " + bar(12) + "25.00%\n" +
            "         9 iter, 2 epoch / 10 iterations\n"
            "    3.3333 iters/sec. Estimated time to finish: 0:00:00.300000.\n\033[4A" +
            "\033[J");
}

// 10 s per iteration, a million-iteration length: at iteration 2 the speed is
// 1/10 = 0.1 iters/sec and the ETA (1e6 - 2) / 0.1 = 9,999,980 s
// = 115 days (9,936,000 s) + 63,980 s = 17 h 46 min 20 s.
TEST_CASE("ProgressBar: an ETA of days prints as Python's timedelta") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager = clocked_manager(
      clock, 1e6, 1,
      ext::ProgressBar(ext::ProgressBarOptions().training_length(tr::TrainingLength{1e6, tr::Unit::Iteration}).update_interval(1).out(&out)));
  run(manager, clock, 2, 10);
  CHECK(lines_of(out.str()).back() ==
        "2 iter, 2 epoch / 1000000 iterations, 0.00% total, 0.00% this epoch, 0.1 iters/sec, ETA 115 days, 17:46:20\n");
}

// PPE measures the speed over the last 100 updates (a deque with maxlen 100).
// Iterations 1..100 take 1 s each (t_k = k), later ones 0.5 s (t_k = 100 + (k-100)/2):
//   it 100: window 1..100   -> (100-1)/(100-1)        = 1
//   it 101: window 2..101   -> (101-2)/(100.5-2)      = 99/98.5 = 1.0051
//   it 150: window 51..150  -> (150-51)/(125-51)      = 99/74   = 1.3378
TEST_CASE("ProgressBar: the speed is measured over the last 100 updates") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager = clocked_manager(clock, 1000, 1,
                                 ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).out(&out)));
  run(manager, clock, 100, 1.0);
  run(manager, clock, 50, 0.5);
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 150);
  CHECK(lines[99].find(", 1 iters/sec,") != std::string::npos);
  CHECK(lines[100].find(", 1.0051 iters/sec,") != std::string::npos);
  CHECK(lines[149].find(", 1.3378 iters/sec,") != std::string::npos);
}

// PPE raises ZeroDivisionError when nothing moved over the window; here the
// speed is 0 and the time to finish unknown.
TEST_CASE("ProgressBar: no progress over the window gives speed 0 and ETA inf") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  ext::ProgressBar bar(ext::ProgressBarOptions().out(&out));
  auto manager = clocked_manager(clock, 10, 10);
  manager.run_iteration([] {});
  bar.update(manager);
  clock.advance(1);
  bar.update(manager);  // same iteration, one second later
  CHECK(lines_of(out.str()).back() ==
        "1 iter, 0 epoch / 10 epochs, 1.00% total, 10.00% this epoch, 0 iters/sec, ETA inf\n");
}

TEST_CASE("ProgressBar updates exactly when iteration % update_interval == 0, also after the counter jumps") {
  ppe_test::FakeClock clock;
  std::ostringstream out;
  auto manager = clocked_manager(clock, 100, 10,
                                 ext::ProgressBar(ext::ProgressBarOptions().update_interval(3).out(&out)));
  auto iterations = [&] {
    std::vector<std::int64_t> out_its;
    for (const auto& l : lines_of(out.str())) out_its.push_back(std::stoll(l));
    return out_its;
  };
  run(manager, clock, 7, 1);
  CHECK(iterations() == std::vector<std::int64_t>{3, 6});
  manager.set_iteration(1);  // back (as after loading an older state)
  run(manager, clock, 2, 1);
  CHECK(iterations() == std::vector<std::int64_t>{3, 6, 3});
  manager.set_iteration(10);  // forward
  run(manager, clock, 2, 1);
  CHECK(iterations() == std::vector<std::int64_t>{3, 6, 3, 12});
}

TEST_CASE("ProgressBar: the terminal option overrides the stream") {
  ppe_test::FakeClock clock;
  SUBCASE("terminal(true) on a string stream: PPE's display, erased on finalize") {
    std::ostringstream out;
    auto manager = clocked_manager(
        clock, 1, 1, ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).bar_length(4).out(&out).terminal(true)));
    run(manager, clock, 1, 0.25);
    CHECK(out.str() ==
          "\033[J"
          "     total [####] 100.00%\n"
          "this epoch [....]  0.00%\n"
          "         1 iter, 1 epoch / 1 epochs\n"
          "       inf iters/sec. Estimated time to finish: 0:00:00.\n"
          "\033[4A"
          "\033[J");
  }
  SUBCASE("terminal(false) on a terminal: plain lines") {
    ppe_test::PseudoTerminal pty;
    ppe::detail::FdOStream tty(pty.slave_fd());
    auto manager = clocked_manager(
        clock, 1, 1, ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).out(&tty).terminal(false)));
    run(manager, clock, 1, 0.25);
    CHECK(pty.read_all() == "1 iter, 1 epoch / 1 epochs, 100.00% total, 0.00% this epoch, inf iters/sec, ETA 0:00:00\n");
  }
}

TEST_CASE("ProgressBar: the training length comes from the stop trigger, else is a clear error") {
  std::ostringstream out;
  SUBCASE("from max_epochs") {
    auto manager = ppe_test::make_manager(3, 4, ext::ProgressBar(ext::ProgressBarOptions().out(&out)));
    ppe_test::step(manager);
    CHECK(manager.get_extension<ext::ProgressBar>("ProgressBar").training_length() ==
          tr::TrainingLength{3, tr::Unit::Epoch});
  }
  SUBCASE("a fractional length prints as Python's float repr, an integral one as an int") {
    auto manager = ppe_test::make_manager(2.5, 4, ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).out(&out)),
                                          ext::ProgressBar(ext::ProgressBarOptions()
                                                               .training_length(tr::TrainingLength{1e20, tr::Unit::Iteration})
                                                               .update_interval(1)
                                                               .out(&out)));
    ppe_test::step(manager);
    const std::string text = out.str();
    CHECK(text.find("1 iter, 0 epoch / 2.5 epochs, ") != std::string::npos);
    CHECK(text.find("1 iter, 0 epoch / 1e+20 iterations, ") != std::string::npos);  // repr(1e20)
  }
  SUBCASE("a stop trigger without a length") {
    auto manager = tr::ExtensionsManager(ppe_test::options(3, 4), tr::Models{}, tr::Optimizers{},
                                         tr::stop_when([](const tr::Manager& m) { return m.iteration() == 5; }),
                                         ext::ProgressBar(ext::ProgressBarOptions().out(&out)));
    CHECK_THROWS_WITH_AS(ppe_test::step(manager), doctest::Contains("ProgressBar does not know the training length"),
                         std::invalid_argument);
  }
}

TEST_CASE("ProgressBarOptions are checked") {
  using O = ext::ProgressBarOptions;
  CHECK_THROWS_WITH_AS(ext::ProgressBar(O().update_interval(0)),
                       "ppe: ProgressBar update_interval must be >= 1, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ProgressBar(O().bar_length(-1)), "ppe: ProgressBar bar_length must be >= 1, got -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ProgressBar(O().out(nullptr)), doctest::Contains("out must be a stream"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::ProgressBar(O().training_length(tr::TrainingLength{0, tr::Unit::Epoch})),
                       doctest::Contains("training_length must be a finite length > 0"), std::invalid_argument);
}

TEST_CASE("ProgressBar: PPE's defaults") {
  ext::ProgressBar bar;
  using Tr = tr::extension_traits<ext::ProgressBar>;
  CHECK(Tr::default_name() == "ProgressBar");
  CHECK(Tr::priority() == tr::kPriorityReader);
  CHECK(Tr::default_trigger().training_length() == tr::TrainingLength{1, tr::Unit::Iteration});
  CHECK(ppe::training::extension_state_dict(bar) == ppe::State::dict());
  static_assert(tr::extension<ext::ProgressBar>);
}

// The example in the header and in docs/progress-bar.md (the terminal frame as
// PPE 0.9.0 prints it for this run): 5 epochs of 500 iterations, 0.1 s each,
// at iteration 790: rate 1.58 / 5 = 31.60% (int(15.8) = 15 marks), this epoch
// 58% (29 marks), 10 iters/sec = 0.02 epochs/sec, ETA 3.42 / 0.02 = 171 s.
TEST_CASE("ProgressBar: the documented example") {
  for (bool terminal : {true, false}) {
    ppe_test::FakeClock clock;
    std::ostringstream out;
    auto manager = clocked_manager(
        clock, 5, 500, ext::ProgressBar(ext::ProgressBarOptions().update_interval(10).out(&out).terminal(terminal)));
    for (int i = 0; i < 790; ++i) manager.run_iteration([&] { clock.set((i + 1) / 10.0); });
    const std::string text = out.str();
    if (terminal)
      CHECK(text.substr(text.rfind("\033[J")) ==
            "\033[J"
            "     total [###############...................................] 31.60%\n"
            "this epoch [#############################.....................] 58.00%\n"
            "       790 iter, 1 epoch / 5 epochs\n"
            "        10 iters/sec. Estimated time to finish: 0:02:51.\n"
            "\033[4A");
    else
      CHECK(lines_of(text).back() ==
            "790 iter, 1 epoch / 5 epochs, 31.60% total, 58.00% this epoch, 10 iters/sec, ETA 0:02:51\n");
  }
}

// Distributed training (ARCHITECTURE section 9): one bar, on rank 0, unless told otherwise.
TEST_CASE("ProgressBar draws on rank 0 by default; rank() picks another, or every rank") {
  for (const auto& [rank, bar_rank, draws] : std::vector<std::tuple<int, std::optional<int>, bool>>{
           {0, 0, true}, {1, 0, false}, {1, 1, true}, {1, std::nullopt, true}}) {
    CAPTURE(rank);
    ppe_test::FakeClock clock;
    std::ostringstream out;
    auto manager = tr::ExtensionsManager(ppe_test::options(1, 2).clock(clock.fn()).rank(rank).world_size(2),
                                         tr::Models{}, tr::Optimizers{},
                                         ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).out(&out).rank(bar_rank)));
    run(manager, clock, 2, 0.5);
    CHECK(out.str().empty() == !draws);
  }
  CHECK(ext::ProgressBarOptions().rank() == 0);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_progress_bar
