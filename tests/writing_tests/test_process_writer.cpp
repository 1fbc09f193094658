// ProcessWriter and ProcessQueueWriter: PPE's test_snapshot_writers.py cases
// for them (a worker process per write; a failing worker surfaces at
// finalize), plus the parts of the design PPE does not have: serialisation
// in the caller, a child that only writes, hooks in the parent, and cleanup
// after a child killed half-way through a write.
#include "ppe_test.hpp"
#include "temp_dir.hpp"
#include "async_writer_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_writing_tests_test_process_writer {

namespace wr = ppe::writing;
using ppe_test::list_dir;
using ppe_test::read_file;
using ppe_test::TempDir;
using ppe_test::text;

namespace {

// A process's command name and parent pid (from /proc/<pid>/stat).
bool command_and_parent(const std::filesystem::path& proc_dir, std::string& command, int& ppid) {
  std::ifstream in(proc_dir / "stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto open = stat.find('('), close = stat.rfind(')');  // the command name may contain spaces
  if (open == std::string::npos || close == std::string::npos) return false;
  command = stat.substr(open + 1, close - open - 1);
  char state = 0;
  return std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2;
}

// The pids of this process's forked children (from /proc; the writing child
// is one): those with this program's command name, so that a helper another
// tool starts (a sanitizer's symbolizer, addr2line) is not taken for one.
std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  std::string own;
  int own_parent = 0;
  if (!command_and_parent("/proc/self", own, own_parent)) return out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string command;
    int ppid = 0;
    if (command_and_parent(e.path(), command, ppid) && ppid == self && command == own)
      out.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("a process writer runs the SaveFn in the caller, before the call returns", W, wr::ProcessWriter,
                   wr::ProcessQueueWriter) {
  TempDir tmp;
  W w(tmp.path);
  std::thread::id ran_on;
  w("f", [&ran_on](std::ostream& os) {
    ran_on = std::this_thread::get_id();
    os << "serialised in the parent";
  });
  CHECK(ran_on == std::this_thread::get_id());
  w.finalize();
  CHECK(read_file(tmp / "f") == "serialised in the parent");
}

TEST_CASE_TEMPLATE("post-save hooks run in the parent process after the child wrote the file", W, wr::ProcessWriter,
                   wr::ProcessQueueWriter) {
  TempDir tmp;
  W w(tmp.path);
  std::vector<pid_t> pids;
  std::vector<std::string> contents;
  w.add_post_save_hook([&](const std::filesystem::path& p) {
    pids.push_back(::getpid());  // a hook run in the child would not reach this vector
    contents.push_back(read_file(p));
  });
  w("a", text("1"));
  w("b", text("2"));
  w.finalize();
  CHECK(pids == std::vector<pid_t>{::getpid(), ::getpid()});
  CHECK(contents == std::vector<std::string>{"1", "2"});
}

TEST_CASE_TEMPLATE("a failing child surfaces at finalize (PPE test_process_writer_fail)", W, wr::ProcessWriter,
                   wr::ProcessQueueWriter) {
  TempDir tmp;
  W w(tmp.path);
  w("myfile.dat", text("fine"));  // PPE test_process_writer_create_worker
  // The child cannot create tmp_myfile2.dat: its name is taken by a directory.
  std::filesystem::create_directories(tmp / "tmp_myfile2.dat" / "x");
  w("myfile2.dat", text("test"));
  try {
    w.finalize();
    FAIL("expected a WriteError");
  } catch (const wr::WriteError& e) {
    CHECK(e.path() == tmp / "myfile2.dat");
    const std::string msg = e.what();
    CHECK(msg.find("cannot write '" + (tmp / "myfile2.dat").string() + "': creating the temporary file") !=
          std::string::npos);
    CHECK(msg.find("Is a directory") != std::string::npos);  // the child's errno
  }
  CHECK(read_file(tmp / "myfile.dat") == "fine");
  CHECK_FALSE(std::filesystem::exists(tmp / "myfile2.dat"));
}

TEST_CASE_TEMPLATE("a child killed half-way through writing: no partial file, the error surfaces", W,
                   wr::ProcessWriter, wr::ProcessQueueWriter) {
  TempDir tmp;
  ppe_test::write_file(tmp / "snap", "old snapshot");
  // The child's temporary file is a FIFO that this test reads from: the child
  // blocks in write() once the pipe is full, mid-way through the content.
  const auto fifo = tmp / "tmp_snap";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  W w(tmp.path);
  std::atomic<int> hooks{0};
  w.add_post_save_hook([&](const std::filesystem::path&) { ++hooks; });
  w("snap", wr::owned_bytes(std::string(4 << 20, 'n')));

  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(fd >= 0);
  std::size_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char buf[8192];
  while (received < 100000 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 50);
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0)
      received += static_cast<std::size_t>(n);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the child has not opened the FIFO yet
  }
  REQUIRE(received >= 100000);
  const auto kids = children_of_this_process();
  REQUIRE(kids.size() == 1);
  REQUIRE(::kill(kids[0], SIGKILL) == 0);
  ::close(fd);

  const std::string msg = [&] {
    try {
      w.finalize();
    } catch (const wr::WriteError& e) {
      CHECK(e.path() == tmp / "snap");
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  }();
  CHECK(msg.find("cannot write '" + (tmp / "snap").string() + "': the writing process (pid " +
                 std::to_string(kids[0]) + ") was killed by signal 9") != std::string::npos);
  CHECK(read_file(tmp / "snap") == "old snapshot");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"snap"});  // the temporary file is gone, no .bak
  CHECK(hooks == 0);
  CHECK(children_of_this_process().empty());  // reaped
}

TEST_CASE("ProcessWriter: the error of a child surfaces at the next call, which does not write") {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "tmp_a" / "x");
  wr::ProcessWriter w(tmp.path);
  w("a", text("1"));
  CHECK_THROWS_WITH_AS(w("b", text("2")), doctest::Contains(("cannot write '" + (tmp / "a").string() + "'").c_str()),
                       wr::WriteError);
  w.finalize();
  CHECK_FALSE(std::filesystem::exists(tmp / "b"));
}

}  // namespace ppe_test_writing_tests_test_process_writer
