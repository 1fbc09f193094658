// ThreadWriter and ThreadQueueWriter: PPE's test_snapshot_writers.py cases for
// them (StandardWriter: each call starts a worker and joins the previous one;
// ThreadWriter: a failing save surfaces at finalize; QueueWriter: one consumer
// serves every call, in order, and finalize drains and joins), plus what
// blocks the caller.
#include "ppe_test.hpp"
#include "temp_dir.hpp"
#include "async_writer_support.hpp"

#include <atomic>
#include <chrono>
#include <thread>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_writing_tests_test_thread_writer {

namespace wr = ppe::writing;
using ppe_test::Gate;
using ppe_test::read_file;
using ppe_test::TempDir;
using ppe_test::text;

namespace {

// A SaveFn that records the id of the thread it runs on.
wr::SaveFn record_thread(std::mutex& m, std::vector<std::thread::id>& ids, std::string content) {
  return [&m, &ids, content = std::move(content)](std::ostream& os) {
    {
      std::lock_guard lock(m);
      ids.push_back(std::this_thread::get_id());
    }
    os << content;
  };
}

}  // namespace

TEST_CASE("ThreadWriter: writes run on the writer's one thread, never the caller's (PPE test_standard_writer; PPE starts a thread per write)") {
  TempDir tmp;
  wr::ThreadWriter w(tmp.path);
  std::mutex m;
  std::vector<std::thread::id> ids;
  w("myfile.dat", record_thread(m, ids, "1"));
  w("myfile.dat", record_thread(m, ids, "2"));
  w.finalize();
  REQUIRE(ids.size() == 2);
  CHECK(ids[0] != std::this_thread::get_id());
  CHECK(ids[1] == ids[0]);
  CHECK(read_file(tmp / "myfile.dat") == "2");
}

TEST_CASE("ThreadWriter: a call waits for the previous write before starting its own") {
  TempDir tmp;
  wr::ThreadWriter w(tmp.path);
  Gate gate;
  std::atomic<bool> opened{false};
  w("first", gate.save("1"));  // returns at once: the SaveFn waits on its thread
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    opened = true;
    gate.open();
  });
  w("second", text("2"));  // cannot return before the first write finished
  CHECK(opened.load());
  CHECK(read_file(tmp / "first") == "1");
  opener.join();
  w.finalize();
  CHECK(read_file(tmp / "second") == "2");
}

TEST_CASE("ThreadWriter: a failing save surfaces at finalize (PPE test_thread_writer_fail)") {
  TempDir tmp;
  wr::ThreadWriter w(tmp.path);
  // PPE passes savefun=None; the closest C++ failure is a SaveFn that throws.
  w("myfile2.dat", [](std::ostream&) { throw std::runtime_error("no save function"); });
  CHECK_THROWS_WITH_AS(w.finalize(), doctest::Contains("myfile2.dat': the save function threw"), wr::WriteError);
  CHECK_FALSE(std::filesystem::exists(tmp / "myfile2.dat"));
}

TEST_CASE("ThreadQueueWriter: one consumer thread serves every call, in order (PPE test_queue_writer)") {
  TempDir tmp;
  wr::ThreadQueueWriter w(tmp.path);
  std::mutex m;
  std::vector<std::thread::id> ids;
  for (int i = 0; i < 5; ++i) w("myfile.dat", record_thread(m, ids, std::to_string(i)));
  w.finalize();
  REQUIRE(ids.size() == 5);
  for (const auto& id : ids) CHECK(id == ids[0]);
  CHECK(ids[0] != std::this_thread::get_id());
  CHECK(read_file(tmp / "myfile.dat") == "4");
}

TEST_CASE("ThreadQueueWriter: calls never wait for a write; finalize drains the queue (PPE test_queue_writer_consume)") {
  TempDir tmp;
  wr::ThreadQueueWriter w(tmp.path);
  ppe_test::HookLog hooks;
  hooks.attach(w);
  Gate gate;
  w("a", gate.save("A"));
  w("b", text("B"));  // queued behind the held write: returns at once
  w("c", text("C"), true);
  CHECK(hooks.seen().empty());
  CHECK_FALSE(std::filesystem::exists(tmp / "b"));
  gate.open();
  w.finalize();
  CHECK(hooks.seen() == std::vector<std::string>{"a", "b", "c"});
  CHECK(read_file(tmp / "a") == "A");
  CHECK(read_file(tmp / "b") == "B");
  CHECK(read_file(tmp / "c") == "C");
}

TEST_CASE("ThreadQueueWriter writes into its out_dir, not the current directory (PPE quirk not copied)") {
  TempDir tmp, cwd_dir;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(cwd_dir.path);
  {
    wr::ThreadQueueWriter w(tmp / "d");
    w("f.pt", text("x"));
    w.finalize();
  }
  std::filesystem::current_path(cwd);
  CHECK(read_file(tmp / "d" / "f.pt") == "x");
  CHECK(ppe_test::list_dir(cwd_dir.path).empty());
}

TEST_CASE("ThreadQueueWriter: later failures while one error waits go to ppe::warn; queued writes still run") {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "bad1");
  std::filesystem::create_directories(tmp / "bad2");
  ppe_test::WarningCollector warnings;
  wr::ThreadQueueWriter w(tmp.path);
  w("bad1", text("x"));
  w("bad2", text("x"));
  w("good", text("g"));
  CHECK_THROWS_WITH_AS(w.finalize(), doctest::Contains("bad1"), wr::WriteError);
  CHECK(read_file(tmp / "good") == "g");
  const auto all = warnings.all();
  CHECK(all.find("a further write failed") != std::string::npos);
  CHECK(all.find("bad2") != std::string::npos);
}

}  // namespace ppe_test_writing_tests_test_thread_writer
