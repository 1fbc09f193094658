// Writers: PPE's writing tests (test_writing.py has only the TensorBoard case,
// and the SimpleWriter cases of test_snapshot.py: files land in the writer's
// out_dir, no tmp_* leftovers), plus the atomic-write contract of spec §6 as
// we implement it: replace through tmp_ + .bak, append, sub-directories,
// post-save hooks, and failures that leave the previous file intact.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_writing_tests_test_simple_writer {

namespace wr = ppe::writing;
using ppe_test::list_dir;
using ppe_test::read_file;
using ppe_test::TempDir;

namespace {

wr::SaveFn text(std::string s) {
  return [s = std::move(s)](std::ostream& os) { os << s; };
}

// What a failed write must leave: the old content, and no temporary or backup file.
void check_intact(const TempDir& dir, const std::string& name, const std::string& old_content) {
  CHECK(read_file(dir / name) == old_content);
  CHECK(list_dir(dir.path) == std::set<std::string>{name});
}

// Counts finalize calls; writes synchronously.
struct CountingWriter : wr::Writer {
  using Writer::Writer;
  int finalized = 0;
  std::vector<std::string> written;
  void operator()(const std::string& filename, wr::SaveFn save_fn, bool append) override {
    written.push_back(filename);
    save(filename, save_fn, append);
  }
  void finalize() override { ++finalized; }
};

static_assert(wr::writer<wr::SimpleWriter>);
static_assert(wr::writer<CountingWriter>);
static_assert(!wr::writer<int>);
static_assert(!std::is_copy_constructible_v<wr::SimpleWriter>);

}  // namespace

TEST_CASE("SimpleWriter writes under its out_dir, created on first use") {
  TempDir tmp;
  const auto out = tmp / "a" / "b";
  wr::SimpleWriter w(out);
  CHECK(w.out_dir() == out);
  CHECK_FALSE(std::filesystem::exists(out));  // not at construction
  w("myfile.dat", text("hello"));
  CHECK(read_file(out / "myfile.dat") == "hello");
  CHECK(list_dir(out) == std::set<std::string>{"myfile.dat"});  // no tmp_myfile.dat left (PPE test_snapshot)
  CHECK(w.initialized());
}

TEST_CASE("Writer::initialize creates the directory; finalize of an unused writer is a no-op") {
  TempDir tmp;
  wr::SimpleWriter w(tmp / "x");
  w.initialize();
  CHECK(std::filesystem::is_directory(tmp / "x"));
  CHECK_NOTHROW(w.finalize());
  CHECK_NOTHROW(w.finalize());
  wr::SimpleWriter never(tmp / "never");
  CHECK_NOTHROW(never.finalize());
  CHECK_FALSE(std::filesystem::exists(tmp / "never"));
}

TEST_CASE("replacing a file leaves neither tmp_ nor .bak behind") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  w("log", text("first"));
  w("log", text("second, longer"));
  CHECK(read_file(tmp / "log") == "second, longer");
  w("log", text("3"));
  CHECK(read_file(tmp / "log") == "3");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"log"});
}

TEST_CASE("a stale .bak or tmp_ file from a crashed run does not get in the way") {
  TempDir tmp;
  ppe_test::write_file(tmp / "log", "old");
  ppe_test::write_file(tmp / "log.bak", "stale backup");
  ppe_test::write_file(tmp / "tmp_log", "stale temporary file, longer than the new content");
  wr::SimpleWriter w(tmp.path);
  w("log", text("new"));
  CHECK(read_file(tmp / "log") == "new");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"log"});
}

TEST_CASE("append mode appends, and creates the file when missing") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  w("lines", text("a\n"), true);
  w("lines", text("b\n"), true);
  w("lines", text("c\n"), /*append=*/true);
  CHECK(read_file(tmp / "lines") == "a\nb\nc\n");
  w("lines", text("reset\n"));  // a non-append write replaces
  CHECK(read_file(tmp / "lines") == "reset\n");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"lines"});
}

TEST_CASE("sub-directories in file names are created") {
  TempDir tmp;
  wr::SimpleWriter w(tmp / "out");
  w("snapshots/epoch_1/model.pt", text("m"));
  w("logs/train.jsonl", text("{}\n"), true);
  CHECK(read_file(tmp / "out/snapshots/epoch_1/model.pt") == "m");
  CHECK(read_file(tmp / "out/logs/train.jsonl") == "{}\n");
}

TEST_CASE("an empty out_dir means the current directory") {
  TempDir tmp;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(tmp.path);
  wr::SimpleWriter w;
  w("here.txt", text("x"));
  std::filesystem::current_path(cwd);
  CHECK(read_file(tmp / "here.txt") == "x");
}

TEST_CASE("large content goes through unchanged") {
  TempDir tmp;
  std::string big;
  for (int i = 0; i < 200000; ++i) big += static_cast<char>('a' + i % 26);
  wr::SimpleWriter w(tmp.path);
  w("big", [&big](std::ostream& os) {
    os << big.substr(0, 10);                           // buffered
    os.write(big.data() + 10, 100000);                 // larger than the buffer
    os << big.substr(100010);                          // the rest
  });
  CHECK(read_file(tmp / "big") == big);
}

TEST_CASE("post-save hooks run after each completed write with the written path") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  std::vector<std::string> seen;
  w.add_post_save_hook([&](const std::filesystem::path& p) {
    // The file is complete when the hook runs.
    seen.push_back(std::filesystem::relative(p, tmp.path).generic_string() + "=" + read_file(p));
  });
  w.add_post_save_hook([&](const std::filesystem::path&) { seen.push_back("second hook"); });
  w("a", text("1"));
  w("sub/b", text("2"), true);
  CHECK(seen == std::vector<std::string>{"a=1", "second hook", "sub/b=2", "second hook"});
  CHECK_THROWS_WITH_AS(w.add_post_save_hook({}), doctest::Contains("the hook is empty"), std::invalid_argument);
}

TEST_CASE("hooks do not run for a failed write") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  int calls = 0;
  w.add_post_save_hook([&](const std::filesystem::path&) { ++calls; });
  CHECK_THROWS_AS(w("f", [](std::ostream&) { throw std::runtime_error("boom"); }), wr::WriteError);
  CHECK(calls == 0);
}

TEST_CASE("file names must be relative and non-empty") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  CHECK_THROWS_WITH_AS(w("", text("x")), doctest::Contains("expected a file name"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(w("dir/", text("x")), doctest::Contains("expected a file name"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(w("/etc/passwd", text("x")), doctest::Contains("absolute path '/etc/passwd'"),
                       std::invalid_argument);
}

TEST_CASE("a save function that throws: error names the path, old file intact, no temporary file") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  w("log", text("old content"));
  const std::string path = (tmp / "log").string();
  try {
    w("log", [](std::ostream& os) {
      os << "partial";
      throw std::runtime_error("serializer exploded");
    });
    FAIL("expected a WriteError");
  } catch (const wr::WriteError& e) {
    CHECK(std::string(e.what()).find("'" + path + "'") != std::string::npos);
    CHECK(std::string(e.what()).find("the save function threw") != std::string::npos);
    CHECK(e.path() == tmp / "log");
    // The save function's own exception is nested.
    CHECK_THROWS_WITH_AS(std::rethrow_if_nested(e), "serializer exploded", std::runtime_error);
  }
  check_intact(tmp, "log", "old content");

  SUBCASE("in append mode too: nothing of the failed append remains") {
    CHECK_THROWS_AS(w(
                        "log",
                        [](std::ostream& os) {
                          os << std::string(100000, 'x');  // more than the buffer: part of it reaches the file
                          throw std::runtime_error("late failure");
                        },
                        true),
                    wr::WriteError);
    check_intact(tmp, "log", "old content");
  }
}

TEST_CASE("destination is a directory: error, directory untouched, no temporary file (fails for root too)") {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "log" / "inner");
  wr::SimpleWriter w(tmp.path);
  CHECK_THROWS_WITH_AS(w("log", text("x")),
                       doctest::Contains(("cannot write '" + (tmp / "log").string() + "': the destination is a directory").c_str()),
                       wr::WriteError);
  CHECK_THROWS_WITH_AS(w("log", text("x"), true), doctest::Contains("it is a directory"), wr::WriteError);
  CHECK(list_dir(tmp.path) == std::set<std::string>{"log", "log/inner"});
}

TEST_CASE("a sub-directory that cannot be created: error names the path") {
  TempDir tmp;
  ppe_test::write_file(tmp / "file", "I am a file");
  wr::SimpleWriter w(tmp.path);
  CHECK_THROWS_WITH_AS(w("file/inside", text("x")), doctest::Contains("creating the directory"), wr::WriteError);
  CHECK(read_file(tmp / "file") == "I am a file");
}

TEST_CASE("read-only directory: error names the path, old file intact") {
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  w("log", text("old"));
  std::filesystem::permissions(tmp.path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  // Root (and CAP_DAC_OVERRIDE) ignores permission bits: probe before relying on them.
  const auto probe = tmp / "probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT, 0600);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    MESSAGE("skipped: this process may write to a read-only directory (running as root?)");
    return;
  }
  CHECK_THROWS_WITH_AS(w("log", text("new")),
                       doctest::Contains(("cannot write '" + (tmp / "log").string() + "': creating the temporary file").c_str()),
                       wr::WriteError);
  CHECK_THROWS_WITH_AS(w("log", text("new")), doctest::Contains("Permission denied"), wr::WriteError);
  std::filesystem::permissions(tmp.path, std::filesystem::perms::owner_all);
  check_intact(tmp, "log", "old");
}

TEST_CASE("a write that fails on the way to the disk (file size limit, as a full disk): old file intact") {
  // RLIMIT_FSIZE makes write() fail with EFBIG past the limit, for root too;
  // SIGXFSZ would kill the process instead, so it is ignored meanwhile.
  TempDir tmp;
  wr::SimpleWriter w(tmp.path);
  w("log", text("old"));
  w("lines", text("line 1\n"), true);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string big(100000, 'y');
  std::string replace_error, append_error;
  try {
    w("log", text(big));
  } catch (const wr::WriteError& e) {
    replace_error = e.what();
  }
  try {
    w("lines", text(big), true);
  } catch (const wr::WriteError& e) {
    append_error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);
  CHECK(replace_error.find("cannot write '" + (tmp / "log").string() + "': writing") != std::string::npos);
  CHECK(replace_error.find("File too large") != std::string::npos);
  CHECK(append_error.find("File too large") != std::string::npos);
  CHECK(read_file(tmp / "log") == "old");
  CHECK(read_file(tmp / "lines") == "line 1\n");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"log", "lines"});
}

TEST_CASE("the save function may be kept and run after the call returned") {
  // What asynchronous writers will do: the SaveFn owns its data.
  TempDir tmp;
  struct Deferred : wr::Writer {
    using Writer::Writer;
    std::vector<std::pair<std::string, wr::SaveFn>> queue;
    void operator()(const std::string& f, wr::SaveFn s, bool = false) override { queue.emplace_back(f, std::move(s)); }
    void finalize() override {
      for (auto& [f, s] : queue) save(f, s, false);
      queue.clear();
    }
  } w(tmp.path);
  {
    std::string local = "owned content";
    w("later", text(local));
  }
  CHECK_FALSE(std::filesystem::exists(tmp / "later"));
  w.finalize();
  CHECK(read_file(tmp / "later") == "owned content");
}

TEST_CASE("the manager's writer: a SimpleWriter on out_dir by default, or the given one") {
  TempDir tmp;
  namespace tr = ppe::training;
  SUBCASE("default") {
    auto m = tr::ExtensionsManager(ppe_test::options(1, 1).out_dir((tmp / "res").string()), tr::Models{},
                                   tr::Optimizers{});
    CHECK(dynamic_cast<wr::SimpleWriter*>(&m.writer()) != nullptr);
    CHECK(m.writer().out_dir() == tmp / "res");
    CHECK_FALSE(std::filesystem::exists(tmp / "res"));  // created on first use, not by the manager
    m.writer()("f", text("1"));
    CHECK(read_file(tmp / "res/f") == "1");
  }
  SUBCASE("given: its directory is the manager's out, and finalize reaches it") {
    auto w = std::make_shared<CountingWriter>(tmp / "mine");
    auto m = tr::ExtensionsManager(ppe_test::options(1, 2).out_dir("ignored").writer(w), tr::Models{},
                                   tr::Optimizers{});
    CHECK(&m.writer() == w.get());
    CHECK(m.out() == (tmp / "mine").string());
    ppe_test::step(m);
    CHECK(w->finalized == 0);
    ppe_test::step(m);  // the end of training finalizes the manager
    CHECK(m.finalized());
    CHECK(w->finalized == 1);
    m.finalize();
    CHECK(w->finalized == 1);
  }
}

}  // namespace ppe_test_writing_tests_test_simple_writer
