// The contract every asynchronous writer shares (issue 4, spec §6, and the
// quirks of ARCHITECTURE §5 we do not copy), run for ThreadWriter,
// ThreadQueueWriter, ProcessWriter and ProcessQueueWriter: the expected bytes
// land atomically with nothing left behind, writes complete in call order,
// the content is an owned copy taken at call time, errors surface at the next
// call or at finalize naming the file, idle finalize is a no-op, and a call
// after finalize is a logic error.
#include "ppe_test.hpp"
#include "temp_dir.hpp"
#include "async_writer_support.hpp"

#include <thread>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_writing_tests_test_async_writers {

namespace wr = ppe::writing;
using ppe_test::HookLog;
using ppe_test::list_dir;
using ppe_test::read_file;
using ppe_test::TempDir;
using ppe_test::text;

namespace {

static_assert(wr::writer<wr::ThreadWriter>);
static_assert(wr::writer<wr::ThreadQueueWriter>);
static_assert(wr::writer<wr::ProcessWriter>);
static_assert(wr::writer<wr::ProcessQueueWriter>);
static_assert(!std::is_copy_constructible_v<wr::ThreadWriter>);
static_assert(!std::is_copy_constructible_v<wr::ProcessQueueWriter>);

}  // namespace

#define ASYNC_WRITERS wr::ThreadWriter, wr::ThreadQueueWriter, wr::ProcessWriter, wr::ProcessQueueWriter

TEST_CASE("each writer says when it runs a call's SaveFn") {
  TempDir tmp;
  CHECK(wr::SimpleWriter(tmp.path).write_mode() == wr::WriteMode::Synchronous);
  CHECK(wr::ProcessWriter(tmp.path).write_mode() == wr::WriteMode::OwnedBytes);
  CHECK(wr::ProcessQueueWriter(tmp.path).write_mode() == wr::WriteMode::OwnedBytes);
  CHECK(wr::ThreadWriter(tmp.path).write_mode() == wr::WriteMode::Deferred);
  CHECK(wr::ThreadQueueWriter(tmp.path).write_mode() == wr::WriteMode::Deferred);
}

TEST_CASE_TEMPLATE("an asynchronous writer writes the expected bytes under its out_dir, nothing else left", W,
                   ASYNC_WRITERS) {
  TempDir tmp;
  const auto out = tmp / "out";
  {
    W w(out);
    CHECK(w.out_dir() == out);
    std::string binary = "bytes\0with\nnul and \xff";
    binary += std::string(300000, 'z');  // more than one stream buffer
    w("myfile.dat", text("hello"));
    w("sub/dir/blob.bin", wr::owned_bytes(binary));
    w("lines.txt", text("a\n"), true);
    w("lines.txt", text("b\n"), true);
    w.finalize();
    CHECK(read_file(out / "myfile.dat") == "hello");
    CHECK(read_file(out / "sub/dir/blob.bin") == binary);
    CHECK(read_file(out / "lines.txt") == "a\nb\n");
    // No tmp_* or *.bak after success (PPE test_snapshot: no tmpmyfile.dat leftovers).
    CHECK(list_dir(out) == std::set<std::string>{"myfile.dat", "sub", "sub/dir", "sub/dir/blob.bin", "lines.txt"});
  }
  CHECK(list_dir(out).size() == 5);  // the destructor of a finalized writer does nothing more
}

TEST_CASE_TEMPLATE("replacing an existing file is atomic: old content until the new one is complete", W,
                   ASYNC_WRITERS) {
  TempDir tmp;
  ppe_test::write_file(tmp / "snap", "old");
  ppe_test::write_file(tmp / "snap.bak", "stale backup of a crashed run");
  W w(tmp.path);
  w("snap", text("new content"));
  w.finalize();
  CHECK(read_file(tmp / "snap") == "new content");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"snap"});
}

TEST_CASE_TEMPLATE("several writes complete in call order; hooks see them in that order", W, ASYNC_WRITERS) {
  TempDir tmp;
  W w(tmp.path);
  HookLog hooks;
  hooks.attach(w);
  for (int i = 0; i < 8; ++i) {
    w("same", text("version " + std::to_string(i)));
    w("log", text(std::to_string(i) + "\n"), true);
    w("file_" + std::to_string(i), text(std::to_string(i)));
  }
  w.finalize();
  CHECK(read_file(tmp / "same") == "version 7");
  CHECK(read_file(tmp / "log") == "0\n1\n2\n3\n4\n5\n6\n7\n");
  for (int i = 0; i < 8; ++i) CHECK(read_file(tmp / ("file_" + std::to_string(i))) == std::to_string(i));
  std::vector<std::string> expected;
  for (int i = 0; i < 8; ++i) {
    expected.push_back("same");
    expected.push_back("log");
    expected.push_back("file_" + std::to_string(i));
  }
  CHECK(hooks.seen() == expected);
  CHECK(list_dir(tmp.path).size() == 10);
}

TEST_CASE_TEMPLATE("the content is the owned copy taken at call time", W, ASYNC_WRITERS) {
  TempDir tmp;
  W w(tmp.path);
  ppe_test::Gate gate;  // thread writers: hold the write until the caller changed its data

  SUBCASE("owned_bytes") {
    std::string data = "version 1";
    w("f", wr::owned_bytes(data));
    data = "version 2";
    w.finalize();
    CHECK(read_file(tmp / "f") == "version 1");
  }
  SUBCASE("a SaveFn holding cloned tensors, pickled when it runs (what snapshots do)") {
    auto weight = torch::arange(6, torch::kFloat32).reshape({2, 3});
    const auto expected = weight.clone();
    wr::SaveFn save = [state = ppe::State::dict({{"w", weight.clone()}})](std::ostream& os) {
      const auto bytes = ppe::serialization::pickle_dumps(state);
      os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    if constexpr (ppe_test::is_process_writer<W>) {
      w("snap", std::move(save));
    } else {
      w("snap", [gate_fn = gate.save(""), save = std::move(save)](std::ostream& os) {
        gate_fn(os);  // waits for the gate
        save(os);
      });
    }
    // The next optimizer step: in place, on the caller's tensor.
    { torch::NoGradGuard no_grad; weight.mul_(100).add_(1); }
    if constexpr (!ppe_test::is_process_writer<W>) gate.open();
    w.finalize();
    const auto raw = read_file(tmp / "snap");
    const auto loaded = ppe::serialization::pickle_loads(std::vector<char>(raw.begin(), raw.end()));
    CHECK(torch::equal(loaded.at("w").as_tensor(), expected));
  }
}

TEST_CASE_TEMPLATE("a destination that is a directory: the error surfaces at the next call, naming the file", W,
                   ASYNC_WRITERS) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "log" / "inner");
  W w(tmp.path);
  HookLog hooks;
  hooks.attach(w);
  w("log", text("x"));  // accepted: the failure happens on the worker
  ppe_test::settle(w, hooks, "marker");
  const std::string msg = ppe_test::error_of([&] { w("after", text("y")); });
  CHECK(msg.find("cannot write '" + (tmp / "log").string() + "': the destination is a directory") !=
        std::string::npos);
  try {
    w("after2", text("z"));  // the error was reported once; the writer goes on
  } catch (...) {
    FAIL("the error must be reported once");
  }
  w.finalize();
  CHECK_FALSE(std::filesystem::exists(tmp / "after"));  // the call that reported did not write
  CHECK(read_file(tmp / "after2") == "z");
  CHECK(std::filesystem::is_directory(tmp / "log" / "inner"));
  std::set<std::string> expected{"log", "log/inner", "after2"};
  if constexpr (ppe_test::is_queue_writer<W>) expected.insert("marker");
  CHECK(list_dir(tmp.path) == expected);
}

TEST_CASE_TEMPLATE("a failed write surfaces at finalize as a WriteError naming the file", W, ASYNC_WRITERS) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "snap");
  W w(tmp.path);
  w("ok", text("1"));
  w("snap", text("x"));
  try {
    w.finalize();
    FAIL("expected a WriteError");
  } catch (const wr::WriteError& e) {
    CHECK(e.path() == tmp / "snap");
    CHECK(std::string(e.what()).find("'" + (tmp / "snap").string() + "'") != std::string::npos);
  }
  CHECK(read_file(tmp / "ok") == "1");
  CHECK_NOTHROW(w.finalize());  // reported once
  CHECK(list_dir(tmp.path) == std::set<std::string>{"ok", "snap"});
}

TEST_CASE_TEMPLATE("finalize of a writer that never wrote is a no-op (PPE raises); a call after finalize is not",
                   W, ASYNC_WRITERS) {
  TempDir tmp;
  {
    W never(tmp / "never");
    CHECK_NOTHROW(never.finalize());
    CHECK_NOTHROW(never.finalize());
    CHECK_FALSE(std::filesystem::exists(tmp / "never"));
  }
  { W destroyed_unused(tmp / "unused"); }
  CHECK_FALSE(std::filesystem::exists(tmp / "unused"));

  W w(tmp.path);
  w("a", text("1"));
  w.finalize();
  CHECK_NOTHROW(w.finalize());
  CHECK_THROWS_WITH_AS(w("b", text("2")), doctest::Contains("called after finalize()"), std::logic_error);
  CHECK_FALSE(std::filesystem::exists(tmp / "b"));
}

TEST_CASE_TEMPLATE("bad input fails the call itself", W, ASYNC_WRITERS) {
  TempDir tmp;
  W w(tmp.path);
  CHECK_THROWS_WITH_AS(w("", text("x")), doctest::Contains("expected a file name"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(w("/abs", text("x")), doctest::Contains("absolute path '/abs'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(w("f", wr::SaveFn{}), doctest::Contains("the save function for 'f' is empty"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(wr::owned_bytes(std::shared_ptr<const std::string>{}), doctest::Contains("null"),
                       std::invalid_argument);
  CHECK_NOTHROW(w.finalize());
  CHECK(list_dir(tmp.path).empty());
}

TEST_CASE_TEMPLATE("a throwing SaveFn: WriteError naming the file with the exception nested", W, ASYNC_WRITERS) {
  TempDir tmp;
  ppe_test::write_file(tmp / "snap", "old");
  W w(tmp.path);
  auto boom = [](std::ostream& os) {
    os << "partial";
    throw std::runtime_error("serializer exploded");
  };
  auto check = [&](const wr::WriteError& e) {
    CHECK(e.path() == tmp / "snap");
    CHECK(std::string(e.what()).find("cannot write '" + (tmp / "snap").string() + "': the save function threw") !=
          std::string::npos);
    CHECK_THROWS_WITH_AS(std::rethrow_if_nested(e), "serializer exploded", std::runtime_error);
  };
  if constexpr (ppe_test::is_process_writer<W>) {
    // Process writers run the SaveFn in the calling thread: the call fails.
    try {
      w("snap", boom);
      FAIL("expected a WriteError");
    } catch (const wr::WriteError& e) {
      check(e);
    }
    CHECK_NOTHROW(w.finalize());
  } else {
    w("snap", boom);
    try {
      w.finalize();
      FAIL("expected a WriteError");
    } catch (const wr::WriteError& e) {
      check(e);
    }
  }
  CHECK(read_file(tmp / "snap") == "old");
  CHECK(list_dir(tmp.path) == std::set<std::string>{"snap"});
}

TEST_CASE_TEMPLATE("a throwing post-save hook becomes a WriteError naming the file", W, ASYNC_WRITERS) {
  TempDir tmp;
  W w(tmp.path);
  w.add_post_save_hook([](const std::filesystem::path&) { throw std::runtime_error("hook failed"); });
  w("f", text("1"));
  const std::string msg = ppe_test::error_of([&] { w.finalize(); });
  CHECK(msg.find("cannot write '" + (tmp / "f").string() + "': hook failed") != std::string::npos);
  CHECK(read_file(tmp / "f") == "1");  // the write itself was complete
}

TEST_CASE_TEMPLATE("the destructor waits for pending writes and warns about an unreported error", W,
                   ASYNC_WRITERS) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "bad");
  ppe_test::WarningCollector warnings;
  {
    W w(tmp.path);
    w("good", text("written"));
    w("bad", text("x"));
  }  // no finalize: must neither throw nor lose the error silently
  CHECK(read_file(tmp / "good") == "written");
  const auto all = warnings.all();
  CHECK(all.find("never reported") != std::string::npos);
  CHECK(all.find("'" + (tmp / "bad").string() + "'") != std::string::npos);
}

TEST_CASE_TEMPLATE("a writer as the manager's writer: an unused one finalizes cleanly with the manager", W,
                   ASYNC_WRITERS) {
  // PPE: a Thread/ProcessWriter that never wrote makes manager.finalize() raise.
  TempDir tmp;
  namespace tr = ppe::training;
  auto w = std::make_shared<W>(tmp / "res");
  auto m = tr::ExtensionsManager(ppe_test::options(1, 2).writer(w), tr::Models{}, tr::Optimizers{});
  ppe_test::step(m);
  ppe_test::step(m);
  CHECK(m.finalized());
  CHECK_THROWS_AS((*w)("late", text("x")), std::logic_error);
}

}  // namespace ppe_test_writing_tests_test_async_writers
