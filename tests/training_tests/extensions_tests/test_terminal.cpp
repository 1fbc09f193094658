// The display helpers every display extension shares (ours; PPE has no such
// rule): when a stream counts as a terminal (ppe/detail/terminal.hpp), and
// Python's number formats (ppe/detail/python_format.hpp).
#include "ppe_test.hpp"

#include <ppe/detail/python_format.hpp>
#include <ppe/detail/terminal.hpp>

#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "pseudo_terminal.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_terminal {

namespace det = ppe::detail;

TEST_CASE("is_terminal: the standard streams follow their file descriptors") {
  CHECK(det::is_terminal(std::cout) == (::isatty(1) == 1));
  CHECK(det::is_terminal(std::cerr) == (::isatty(2) == 1));
  CHECK(det::is_terminal(std::clog) == (::isatty(2) == 1));
  CHECK(det::stream_fd(std::cout) == 1);
  CHECK(det::stream_fd(std::cerr) == 2);
  CHECK(det::stream_fd(std::clog) == 2);
}

TEST_CASE("is_terminal: a redirected std::cout is judged by its new buffer") {
  std::ostringstream capture;
  std::streambuf* old = std::cout.rdbuf(capture.rdbuf());
  const bool judged = det::is_terminal(std::cout);
  std::cout.rdbuf(old);
  CHECK_FALSE(judged);
}

TEST_CASE("is_terminal: string and file streams are not terminals unless overridden") {
  std::ostringstream s;
  CHECK_FALSE(det::is_terminal(s));
  CHECK(det::is_terminal(s, true));
  {
    std::ofstream f("test_terminal_tmp.txt");
    CHECK_FALSE(det::is_terminal(f));
  }
  std::remove("test_terminal_tmp.txt");
  std::ostream none(nullptr);
  CHECK_FALSE(det::is_terminal(none));
}

TEST_CASE("is_terminal: a file descriptor stream is a terminal when its descriptor is one") {
  ppe_test::PseudoTerminal pty;
  det::FdOStream tty(pty.slave_fd());
  CHECK(det::is_terminal(tty));
  CHECK_FALSE(det::is_terminal(tty, false));  // the override wins

  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  {
    det::FdOStream pipe_out(fds[1]);
    CHECK_FALSE(det::is_terminal(pipe_out));
  }
  ::close(fds[0]);
  ::close(fds[1]);

  // libstdc++'s own descriptor buffer is recognised too.
  __gnu_cxx::stdio_filebuf<char> buf(::dup(pty.slave_fd()), std::ios::out);
  std::ostream via_filebuf(&buf);
  CHECK(det::is_terminal(via_filebuf));
}

TEST_CASE("DisplayOutput writes control sequences to terminals only") {
  SUBCASE("terminal") {
    ppe_test::PseudoTerminal pty;
    det::FdOStream tty(pty.slave_fd());
    det::DisplayOutput out(&tty);
    out.erase_below();
    out.write("a\nb\n");
    out.cursor_up(2);
    out.cursor_up(12);
    out.flush();
    CHECK(pty.read_all() == "\033[Ja\nb\n\033[2A\033[12A");
  }
  SUBCASE("not a terminal") {
    std::ostringstream s;
    det::DisplayOutput out(&s);
    out.erase_below();
    out.write("a\n");
    out.cursor_up(1);
    out.flush();
    CHECK(s.str() == "a\n");
  }
  SUBCASE("decided at the first use") {
    std::ostringstream capture;
    det::DisplayOutput out;  // std::cout
    std::streambuf* old = std::cout.rdbuf(capture.rdbuf());
    const bool terminal = out.terminal();
    out.erase_below();
    out.write("x");
    std::cout.rdbuf(old);
    CHECK_FALSE(terminal);
    CHECK(capture.str() == "x");
  }
}

TEST_CASE("FdOStream writes everything, beyond its buffer too") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string big(3 * 4096 + 17, 'z');
  {
    det::FdOStream out(fds[1]);
    out << "head " << 42 << '\n';
    out.flush();
    char buf[16];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    CHECK(std::string(buf, static_cast<std::size_t>(n)) == "head 42\n");
  }
  std::string got;
  {
    det::FdOStream out(fds[1]);
    out << big;  // written by overflow and at destruction (no flush)
  }
  ::close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  CHECK(got == big);
}

namespace {
std::string general(double x, int precision, int width) {
  std::string s;
  det::pyfmt::append_general(s, x, precision, width);
  return s;
}
std::string percent(double x, int precision, int width) {
  std::string s;
  det::pyfmt::append_percent(s, x, precision, width);
  return s;
}
std::string timedelta(double seconds) {
  std::string s;
  if (!det::pyfmt::append_timedelta(s, seconds)) return "(none)";
  return s;
}
}  // namespace

// Expected values printed by Python 3.11: "{:10.5g}".format(x), "{:6.2%}".format(x),
// str(datetime.timedelta(seconds=x)).
TEST_CASE("Python formats: g, percent, timedelta") {
  CHECK(general(10.0, 5, 10) == "        10");
  CHECK(general(8.333333333, 5, 10) == "    8.3333");
  CHECK(general(123456.7, 5, 10) == "1.2346e+05");
  CHECK(general(0.000012345, 5, 10) == "1.2345e-05");
  CHECK(general(0.00012345, 5, 0) == "0.00012345");
  CHECK(general(99999.5, 5, 0) == "1e+05");
  CHECK(general(INFINITY, 5, 10) == "       inf");
  CHECK(general(-INFINITY, 5, 0) == "-inf");
  CHECK(general(std::nan(""), 5, 0) == "nan");
  CHECK(general(-std::nan(""), 5, 0) == "nan");
  CHECK(general(0.0, 5, 0) == "0");

  CHECK(percent(0.25, 2, 6) == "25.00%");
  CHECK(percent(0.0, 2, 6) == " 0.00%");
  CHECK(percent(1.0, 2, 6) == "100.00%");
  CHECK(percent(0.12345, 2, 6) == "12.35%");  // x * 100 is a double just above 12.345
  CHECK(percent(0.00005, 2, 6) == " 0.01%");  // just above 0.005
  CHECK(percent(0.000049, 2, 6) == " 0.00%");

  CHECK(timedelta(0) == "0:00:00");
  CHECK(timedelta(-0.0) == "0:00:00");
  CHECK(timedelta(0.5) == "0:00:00.500000");
  CHECK(timedelta(1.2000000000000002) == "0:00:01.200000");
  CHECK(timedelta(59.9999995) == "0:01:00");           // rounds up to a whole minute
  CHECK(timedelta(0.0000005) == "0:00:00");            // 0.5 us -> 0 (even)
  CHECK(timedelta(0.0000015) == "0:00:00.000002");     // 1.5 us -> 2 (even)
  CHECK(timedelta(3.0000005) == "0:00:03.000001");     // fraction * 1e6 = 0.50000000007 -> up
  CHECK(timedelta(86400) == "1 day, 0:00:00");
  CHECK(timedelta(172800.5) == "2 days, 0:00:00.500000");
  CHECK(timedelta(1e9) == "11574 days, 1:46:40");
  CHECK(timedelta(-1) == "-1 day, 23:59:59");
  CHECK(timedelta(-86400.25) == "-2 days, 23:59:59.750000");
  CHECK(timedelta(INFINITY) == "(none)");
  CHECK(timedelta(std::nan("")) == "(none)");
  CHECK(timedelta(1e300) == "(none)");
}

}  // namespace ppe_test_training_tests_extensions_tests_test_terminal
