// snapshot / snapshot_object: PPE's test_snapshot.py tables (spec §4.4,
// test cases F4), plus what issue 4 adds: checksums and autoload fallback,
// all-or-nothing loading with a list of differences, owned copies for
// asynchronous writers, and files Python's torch.load reads.
#include "ppe_test.hpp"
#include "python.hpp"
#include "temp_dir.hpp"

#include <ppe/serialization/safetensors.hpp>
#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/writing/thread_writer.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_snapshot {

namespace fs = std::filesystem;
namespace ext = ppe::training::extensions;
namespace wr = ppe::writing;
using ppe::State;
using ppe_test::list_dir;
using ppe_test::TempDir;

namespace {

/// A writer that counts calls and keeps the bytes (no files).
struct CountingWriter : wr::Writer {
  int calls = 0;
  std::vector<std::string> names;
  void operator()(const std::string& filename, wr::SaveFn save, bool) override {
    ++calls;
    names.push_back(filename);
    std::ostringstream os;
    save(os);
  }
};

/// An object with PPE's state protocol.
struct Counter {
  std::int64_t value = 0;
  State state_dict() const { return State::dict({{"value", value}}); }
  void load_state_dict(const State& s) { value = s.at("value").as_int(); }
};

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

/// Sets increasing modification times in the given order (PPE's tests force
/// them the same way).
void set_mtimes(const fs::path& dir, const std::vector<std::string>& names) {
  auto t = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& n : names) fs::last_write_time(dir / n, t += std::chrono::seconds(1));
}

std::vector<std::string> names_of(const std::vector<ext::SnapshotFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.name);
  return out;
}

std::string format_one(std::string fmt, const std::string& a) { return fmt.replace(fmt.find("{}"), 2, a); }

}  // namespace

TEST_CASE("snapshot: the condition is asked at each firing; the writer is called when it says yes") {
  // PPE: condition side_effect [True, False], two calls -> condition 2 calls, writer 1 call.
  auto writer = std::make_shared<CountingWriter>();
  int asked = 0;
  Counter target;
  auto snap = ext::snapshot_object(target, "obj", ext::SnapshotOptions().writer(writer).condition([&] {
    return ++asked == 1;
  }));
  auto manager = ppe_test::make_manager(1, 10);
  manager.start_extensions();
  snap.initialize(manager);
  snap(manager);
  snap(manager);
  CHECK(asked == 2);
  CHECK(writer->calls == 1);
}

TEST_CASE("snapshot_object: writes through the given writer; a named target saves {name: state}; autoload") {
  TempDir dir;
  auto manager = ppe_test::make_manager(1, 10);
  Counter a{3}, b{7};
  SUBCASE("one object, its state as it is") {
    auto snap = ext::snapshot_object(a, "myfile.dat",
                                     ext::SnapshotOptions().writer(std::make_shared<wr::SimpleWriter>(dir.path)));
    snap.initialize(manager);
    snap(manager);
    CHECK(list_dir(dir.path) == std::set<std::string>{"myfile.dat"});  // no tmp_ leftovers
    CHECK(ppe::serialization::load_file(dir / "myfile.dat") == State::dict({{"value", 3}}));
  }
  SUBCASE("named targets") {
    auto w = std::make_shared<wr::SimpleWriter>(dir.path);
    auto snap = ext::snapshot_object({{"trainer", ext::SnapshotTarget::of(a)}, {"other", ext::SnapshotTarget::of(b)}},
                                     "myfile.dat", ext::SnapshotOptions().writer(w));
    snap.initialize(manager);
    snap(manager);
    CHECK(ppe::serialization::load_file(dir / "myfile.dat") ==
          State::dict({{"trainer", State::dict({{"value", 3}})}, {"other", State::dict({{"value", 7}})}}));

    // autoload into fresh objects restores both and names the file.
    Counter a2, b2;
    auto load = ext::snapshot_object({{"trainer", ext::SnapshotTarget::of(a2)}, {"other", ext::SnapshotTarget::of(b2)}},
                                     "myfile.dat", ext::SnapshotOptions().writer(w).autoload(true));
    load.initialize(manager);
    CHECK(load.loaded_file() == "myfile.dat");
    CHECK(a2.value == 3);
    CHECK(b2.value == 7);
  }
  SUBCASE("autoload without a file loads nothing") {
    Counter c{42};
    auto load = ext::snapshot_object(c, "myfile.dat",
                                     ext::SnapshotOptions()
                                         .writer(std::make_shared<wr::SimpleWriter>(dir.path / "empty"))
                                         .autoload(true));
    load.initialize(manager);
    CHECK(load.loaded_file().empty());
    CHECK(c.value == 42);
  }
}

TEST_CASE("find_snapshot_files: only the template's prefix and suffix count; noise is ignored") {
  // PPE's table: 99 files fmt.format(1..99) plus noise dummy-foobar-iter{10..303}
  // and tmpsnapshot_iter_{10..303} -> exactly the 99.
  for (const std::string fmt : {"snapshot_iter_{}", "snapshot_iter_{}.npz", "{}_snapshot_man_suffix.npz"}) {
    CAPTURE(fmt);
    TempDir dir;
    std::vector<std::string> expected;
    for (int i = 1; i < 100; ++i) {
      expected.push_back(format_one(fmt, std::to_string(i)));
      touch(dir / expected.back());
    }
    for (int i = 10; i < 304; ++i) {
      touch(dir / ("dummy-foobar-iter" + std::to_string(i)));
      touch(dir / ("tmpsnapshot_iter_" + std::to_string(i)));
    }
    set_mtimes(dir.path, expected);
    CHECK(names_of(ext::find_snapshot_files(fmt, dir.path)) == expected);
    CHECK(ext::find_latest_snapshot(fmt, dir.path) == format_one(fmt, "99"));
  }
  // Two fields: 10 x 10 real files, noise tmpsnapshot_iter_{i}.{j}.
  for (const std::string fmt : {"snapshot_iter_{}_{}", "snapshot_iter_{}_{}.npz", "{}_snapshot_man_{}-suffix.npz",
                                "snapshot_iter_{}.{}"}) {
    CAPTURE(fmt);
    TempDir dir;
    std::vector<std::string> expected;
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) {
        expected.push_back(format_one(format_one(fmt, std::to_string(i)), std::to_string(j)));
        touch(dir / expected.back());
        touch(dir / ("tmpsnapshot_iter_" + std::to_string(i) + "." + std::to_string(j)));
      }
    set_mtimes(dir.path, expected);
    CHECK(names_of(ext::find_snapshot_files(fmt, dir.path)) == expected);
  }
}

TEST_CASE("find_snapshot_files: writers' tmp_ files never count, also with an empty prefix") {
  TempDir dir;
  touch(dir / "7_snap.pt");
  touch(dir / "tmp_8_snap.pt");
  CHECK(names_of(ext::find_snapshot_files("{.iteration}_snap.pt", dir.path)) == std::vector<std::string>{"7_snap.pt"});
  CHECK(ext::find_snapshot_files("x_{}", dir.path / "absent").empty());
}

TEST_CASE("find_snapshot_files: equal modification times order numbers by value") {
  TempDir dir;
  const auto t = fs::file_time_type::clock::now();
  for (const std::string n : {"snapshot_iter_10", "snapshot_iter_9", "snapshot_iter_100", "snapshot_iter_8"}) {
    touch(dir / n);
    fs::last_write_time(dir / n, t);
  }
  CHECK(names_of(ext::find_snapshot_files("snapshot_iter_{.iteration}", dir.path)) ==
        std::vector<std::string>{"snapshot_iter_8", "snapshot_iter_9", "snapshot_iter_10", "snapshot_iter_100"});
  CHECK(ext::find_stale_snapshots("snapshot_iter_{.iteration}", dir.path, 2) ==
        std::vector<std::string>{"snapshot_iter_8", "snapshot_iter_9"});
}

TEST_CASE("find_stale_snapshots: all but the newest n_retains, oldest first") {
  // PPE's table (length, retain) -> max(length - retain, 0) files, snapshot_iter_0 first.
  for (const auto& [length, retain] : std::vector<std::pair<int, int>>{
           {100, 30}, {10, 30}, {1, 1000}, {1000, 1}, {1, 1}, {1, 3}, {2, 3}}) {
    CAPTURE(length);
    CAPTURE(retain);
    TempDir dir;
    std::vector<std::string> all;
    for (int i = 0; i < length; ++i) {
      all.push_back("snapshot_iter_" + std::to_string(i));
      touch(dir / all.back());
    }
    set_mtimes(dir.path, all);
    const auto stale = ext::find_stale_snapshots("snapshot_iter_{}", dir.path, retain);
    const std::vector<std::string> expected(all.begin(), all.begin() + std::max(length - retain, 0));
    CHECK(stale == expected);
  }
}

TEST_CASE("snapshot n_retains: only the newest files are kept, in the writer's directory") {
  // PPE: trigger 1 iteration, ipe 10, 10 iterations, n_retains 3 -> snapshot_iter_8, 9, 10.
  for (const bool own_writer : {false, true}) {
    CAPTURE(own_writer);
    TempDir out, other;
    ext::SnapshotOptions opts;
    opts.filename("snapshot_iter_{.iteration}").n_retains(3);
    if (own_writer) opts.writer(std::make_shared<wr::SimpleWriter>(other.path));
    auto manager = ppe::training::ExtensionsManager(
        ppe_test::options(1, 10).out_dir(out.str()), ppe::training::Models{}, ppe::training::Optimizers{},
        ppe::training::entry(ext::snapshot(opts), ppe::iterations(1)));
    for (int i = 0; i < 10; ++i) ppe_test::step(manager);
    const std::set<std::string> want{"snapshot_iter_8", "snapshot_iter_9", "snapshot_iter_10"};
    if (own_writer) {
      CHECK(list_dir(other.path) == want);
      CHECK(list_dir(out.path).empty());
    } else {
      CHECK(list_dir(out.path) == want);
    }
  }
}

TEST_CASE("snapshot autoload: a second identical run resumes at the end and runs no iteration") {
  TempDir out;
  auto make = [&] {
    return ppe::training::ExtensionsManager(ppe_test::options(10, 10).out_dir(out.str()), ppe::training::Models{},
                                            ppe::training::Optimizers{},
                                            ext::snapshot(ext::SnapshotOptions().autoload(true)));
  };
  auto first = make();
  int ran = 0;
  while (!first.stop_trigger()) first.run_iteration([&] { ++ran; });
  CHECK(ran == 100);
  CHECK(list_dir(out.path).count("snapshot_iter_100") == 1);
  auto second = make();
  int ran2 = 0;
  while (!second.stop_trigger()) second.run_iteration([&] { ++ran2; });
  CHECK(ran2 == 0);
  CHECK(second.iteration() == 100);
}

TEST_CASE("snapshot_on_error: an iteration that throws is saved before the error propagates") {
  TempDir out;
  Counter c{5};
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(1, 1).out_dir(out.str()), ppe::training::Models{}, ppe::training::Optimizers{},
      ext::snapshot_object(c, "myfile-{.iteration}.dat", ext::SnapshotOptions().snapshot_on_error(true)));
  CHECK_THROWS_WITH(manager.run_iteration([] { throw std::runtime_error("boom"); }), "boom");
  CHECK(list_dir(out.path) == std::set<std::string>{"myfile-0.dat"});
  CHECK(ppe::serialization::load_file(out / "myfile-0.dat") == State::dict({{"value", 5}}));

  // Without the flag nothing is written.
  TempDir out2;
  auto quiet = ppe::training::ExtensionsManager(ppe_test::options(1, 1).out_dir(out2.str()), ppe::training::Models{},
                                                ppe::training::Optimizers{}, ext::snapshot_object(c, "f.dat"));
  CHECK_THROWS(quiet.run_iteration([] { throw std::runtime_error("boom"); }));
  CHECK(list_dir(out2.path).empty());
}

TEST_CASE("writers without a directory write under the manager's out_dir (PPE: the current directory)") {
  TempDir out;
  auto snap_writer = std::make_shared<wr::SimpleWriter>();
  auto log_writer = std::make_shared<wr::SimpleWriter>();
  auto own = std::make_shared<wr::SimpleWriter>(out / "own");  // a directory of its own is kept
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(1, 2).out_dir(out.str()), ppe::training::Models{}, ppe::training::Optimizers{},
      ext::snapshot(ext::SnapshotOptions().writer(snap_writer).autoload(true)),
      ext::LogReport(ext::LogReportOptions().writer(log_writer)),
      ppe::training::entry(ext::snapshot(ext::SnapshotOptions().writer(own).filename("kept_{iteration}")),
                           ppe::epochs(1), "own"));
  while (!manager.stop_trigger()) ppe_test::step(manager);
  CHECK(snap_writer->out_dir() == fs::path(out.str()));
  CHECK(log_writer->out_dir() == fs::path(out.str()));
  CHECK(list_dir(out.path) == std::set<std::string>{"snapshot_iter_2", "log", "own", "own/kept_2"});

  // The manager's own writer, made without a directory, adopts out_dir too.
  TempDir out2;
  auto mw = std::make_shared<wr::SimpleWriter>();
  auto m2 = ppe::training::ExtensionsManager(ppe_test::options(1, 2).out_dir(out2.str()).writer(mw),
                                             ppe::training::Models{}, ppe::training::Optimizers{}, ext::snapshot());
  CHECK(m2.out() == out2.str());
  while (!m2.stop_trigger()) ppe_test::step(m2);
  CHECK(list_dir(out2.path) == std::set<std::string>{"snapshot_iter_2"});

  // A writer that already wrote (to the current directory) keeps writing there.
  wr::SimpleWriter used;
  used.initialize();
  CHECK_FALSE(used.adopt_out_dir(out.path));
  CHECK(used.out_dir().empty());
}

TEST_CASE("snapshot options: bad templates and combinations are errors at construction") {
  CHECK_THROWS_WITH_AS(ext::snapshot(ext::SnapshotOptions().filename("snap_{.loss}")),
                       doctest::Contains("unknown field '{loss}'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::snapshot(ext::SnapshotOptions().filename("")), doctest::Contains("filename is empty"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ext::snapshot(ext::SnapshotOptions()
                                         .filename_fn([](const ppe::training::Manager&) { return std::string("x"); })
                                         .autoload(true)),
                       doctest::Contains("need"), std::invalid_argument);
  auto manager = ppe_test::make_manager(1, 10);
  auto snap = ext::snapshot(ext::SnapshotOptions().saver_rank(1));
  CHECK_THROWS_WITH_AS(snap.initialize(manager), doctest::Contains("saver_rank 1 is out of range for a world of 1"),
                       std::invalid_argument);
}

TEST_CASE("snapshot filename templates: PPE's {.field} and plain {field}; a callable") {
  auto writer = std::make_shared<CountingWriter>();
  Counter c;
  auto manager = ppe_test::make_manager(2, 4);
  for (int i = 0; i < 6; ++i) ppe_test::step(manager);
  auto a = ext::snapshot_object(c, "s_{.iteration}_{epoch}_{.epoch_detail}.pt", ext::SnapshotOptions().writer(writer));
  a.initialize(manager);
  a(manager);
  auto b = ext::snapshot_object(c, "unused", ext::SnapshotOptions().writer(writer).filename_fn(
                                                 [](const ppe::training::Manager& m) {
                                                   return "it" + std::to_string(m.iteration() * 2);
                                                 }));
  b.initialize(manager);
  b(manager);
  // iteration 6, epoch 6 / 4 = 1, epoch_detail 1.5 (Python's repr).
  CHECK(writer->names == std::vector<std::string>{"s_6_1_1.5.pt", "it12"});
}

// ---- integrity ------------------------------------------------------------------

namespace {

/// A manager with one model and optimizer whose snapshots go to `dir` every iteration.
struct Run {
  torch::nn::Linear model{3, 2};
  torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)};
  decltype(ppe::training::ExtensionsManager(ppe_test::options(1, 1), model, opt,
                                            ppe::training::entry(ext::snapshot(), ppe::iterations(1)))) manager;
  explicit Run(const fs::path& dir, bool autoload = false)
      : manager(ppe_test::options(5, 4).out_dir(dir.string()), model, opt,
                ppe::training::entry(ext::snapshot(ext::SnapshotOptions().autoload(autoload)), ppe::iterations(1))) {}
  void train(int n) {
    const auto x = torch::ones({1, 3});
    for (int i = 0; i < n; ++i)
      manager.run_iteration([&] {
        opt.zero_grad();
        model->forward(x).sum().backward();
        opt.step();
      });
  }
};

void corrupt(const fs::path& p) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(fs::file_size(p) / 2));
  const char c = 0x5a;
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("autoload falls back to the newest snapshot that verifies, and says which it skipped") {
  TempDir out;
  {
    torch::manual_seed(0);
    Run run(out.path);
    run.train(3);
  }
  set_mtimes(out.path, {"snapshot_iter_1", "snapshot_iter_2", "snapshot_iter_3"});
  SUBCASE("corrupted newest") { corrupt(out / "snapshot_iter_3"); }
  SUBCASE("truncated newest") { fs::resize_file(out / "snapshot_iter_3", fs::file_size(out / "snapshot_iter_3") / 2); }
  ppe_test::WarningCollector warnings;
  torch::manual_seed(1);
  Run resumed(out.path, /*autoload=*/true);
  resumed.manager.start_extensions();
  CHECK(resumed.manager.iteration() == 2);
  CHECK(warnings.any_contains("snapshot_iter_3"));
  CHECK(warnings.any_contains("trying the next older snapshot, snapshot_iter_2"));
  // The parameters are those after two steps: compare with a fresh run of two.
  TempDir again;
  torch::manual_seed(0);
  Run two(again.path);
  two.train(2);
  CHECK(torch::equal(resumed.model->weight, two.model->weight));
}

TEST_CASE("autoload with only unusable snapshots is an error listing each file") {
  TempDir out;
  {
    Run run(out.path);
    run.train(2);
  }
  corrupt(out / "snapshot_iter_1");
  fs::resize_file(out / "snapshot_iter_2", 100);
  ppe_test::WarningCollector warnings;
  Run resumed(out.path, /*autoload=*/true);
  try {
    resumed.manager.start_extensions();
    FAIL("expected an error");
  } catch (const ppe::serialization::CorruptFileError& e) {
    const std::string what = e.what();
    CHECK(what.find("none is usable") != std::string::npos);
    CHECK(what.find("snapshot_iter_1: ppe: " + (out / "snapshot_iter_1").string() + " is corrupted") !=
          std::string::npos);
    CHECK(what.find("snapshot_iter_2: ppe: cannot read") != std::string::npos);
  }
}

TEST_CASE("loading a snapshot into a different manager lists every difference and loads nothing") {
  TempDir out;
  {
    Run run(out.path);
    run.train(1);
  }
  const State saved = ppe::serialization::load_file(out / "snapshot_iter_1");

  torch::nn::Linear same(3, 2), wider(3, 4);
  torch::optim::SGD opt_same(same->parameters(), 0.1), opt_wider(wider->parameters(), 0.1);
  const auto before = same->weight.detach().clone();
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(1, 1), ppe::training::Models{{"main", same}, {"extra", wider}},
      ppe::training::Optimizers{{"main", opt_same}}, ext::snapshot());
  try {
    manager.load_state_dict(saved);
    FAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("nothing was loaded") != std::string::npos);
    CHECK(what.find("'models' lacks entries for ['extra']") != std::string::npos);
  }
  CHECK(torch::equal(same->weight, before));  // "main" fitted, but was not loaded

  auto mismatched = ppe::training::ExtensionsManager(ppe_test::options(1, 1), wider, opt_wider, ext::snapshot());
  try {
    mismatched.load_state_dict(saved);
    FAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("shape mismatch") != std::string::npos);
    CHECK(what.find("weight (saved [2, 3], model [4, 3])") != std::string::npos);
    CHECK(what.find("optimizer 'main'") != std::string::npos);  // its momentum buffers do not fit either
  }

  // A saved model the manager does not have is listed as unexpected.
  State extra = saved;
  extra.at("models").set("ghost", State::dict());
  auto plain = ppe::training::ExtensionsManager(ppe_test::options(1, 1), same, opt_same, ext::snapshot());
  CHECK_THROWS_WITH_AS(plain.load_state_dict(extra),
                       doctest::Contains("'models' has entries the manager does not have: ['ghost']"),
                       std::invalid_argument);
}

// A sharded snapshot of more ranks than the job has: the shards past this
// world are read by nobody, and the warning names them (their per-rank state
// is not restored). Two shards made from one run's shard 0, then one rank.
TEST_CASE("a sharded snapshot autoloaded on fewer ranks names the shards left unread") {
  TempDir out;
  auto sharded = [] { return ext::SnapshotOptions().sharded(true).saver_rank(0).autoload(true); };
  {
    torch::nn::Linear model(3, 2);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 2).out_dir(out.str()), model, opt,
                                                    ppe::training::entry(ext::snapshot(sharded()), ppe::iterations(2)));
    for (int i = 0; i < 2; ++i) manager.run_iteration([] {});
  }
  const auto dir = out / "snapshot_iter_2";
  REQUIRE(std::filesystem::exists(dir / "0"));
  REQUIRE(std::filesystem::exists(dir / "complete"));
  std::filesystem::copy_file(dir / "0", dir / "1");
  std::filesystem::copy_file(dir / "0", dir / "2");
  ppe_test::WarningCollector warnings;
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 2).out_dir(out.str()), model, opt,
                                                  ppe::training::entry(ext::snapshot(sharded()), ppe::iterations(2)));
  CHECK(manager.stop_trigger());  // autoload ran: shard 0 holds the end of the run
  CHECK(manager.iteration() == 2);
  const std::string all = warnings.all();
  INFO(all);
  CHECK(all.find("was written by 3 ranks and this job has 1: shards 1..2 are not read") != std::string::npos);
  CHECK(all.find("rank r loads shard r") != std::string::npos);
}

TEST_CASE("an asynchronous writer saves the state as it was when the snapshot fired") {
  TempDir out;
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto writer = std::make_shared<wr::ThreadWriter>(out.path);
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(5, 4), model, opt,
      ppe::training::entry(ext::snapshot(ext::SnapshotOptions().writer(writer)), ppe::iterations(2)));
  const auto x = torch::ones({1, 3});
  torch::Tensor at_two;
  for (int i = 0; i < 6; ++i) {
    manager.run_iteration([&] {
      opt.zero_grad();
      model->forward(x).sum().backward();
      opt.step();
    });
    if (i == 1) at_two = model->weight.detach().clone();
  }
  writer->finalize();
  const State s = ppe::serialization::load_file(out / "snapshot_iter_2");
  CHECK(torch::equal(s.at("models").at("main").at("weight").as_tensor(), at_two));
  CHECK_FALSE(torch::equal(at_two, model->weight));
}

TEST_CASE("Python's torch.load reads a snapshot file in PPE's layout") {
  TempDir out;
  {
    Run run(out.path);
    run.train(2);
  }
  if (ppe_test::python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping");
    return;
  }
  const auto res = ppe_test::run_python(out, R"PY(
import sys, torch
d = torch.load(sys.argv[1], map_location="cpu")
assert list(d.keys())[:7] == ["_start_iteration", "_start_execution", "models", "optimizers",
                              "state_objects", "extensions", "ppe_version"], list(d.keys())
assert d["_start_iteration"] == 2
assert list(d["extensions"].keys()) == ["_Snapshot"], d["extensions"].keys()
st = d["optimizers"]["main"]["state"]
assert sorted(st.keys()) == [0, 1], st.keys()
assert st[0]["momentum_buffer"].shape == (2, 3)
m = torch.nn.Linear(3, 2)
m.load_state_dict(d["models"]["main"])
o = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
o.load_state_dict(d["optimizers"]["main"])
assert len(o.state) == 2
print("OK")
)PY",
                                         "'" + (out / "snapshot_iter_2").string() + "'");
  INFO(res.text);
  CHECK(res.status == 0);
  CHECK(res.text.find("OK") != std::string::npos);
}

TEST_CASE("snapshot_on_error with a state that cannot be taken: the error propagates and no file is left") {
  // PPE: optimizers {"main": object()} make state_dict fail at the epoch-end
  // snapshot; on_error retries it, fails the same way, and the error
  // propagates out of run_iteration; no myfile-deadbeef.dat exists.
  struct Broken {
    State state_dict() const { throw std::runtime_error("Broken has no state"); }
    void load_state_dict(const State&) {}
  };
  TempDir out;
  Broken broken;
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(1, 1).out_dir(out.str()), ppe::training::Models{}, ppe::training::Optimizers{},
      ext::snapshot_object(broken, "myfile-deadbeef.dat", ext::SnapshotOptions().snapshot_on_error(true)));
  CHECK_THROWS_WITH_AS(manager.run_iteration([] {}), "Broken has no state", std::runtime_error);
  CHECK_FALSE(fs::exists(out / "myfile-deadbeef.dat"));
  CHECK(list_dir(out.path).empty());
}

TEST_CASE("a process killed in the middle of writing a snapshot leaves no file that autoload takes") {
  TempDir out;
  {
    Run run(out.path);
    run.train(1);  // snapshot_iter_1, complete
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Writes half a snapshot's worth of bytes, then waits to be killed.
    wr::SimpleWriter w(out.path);
    w("snapshot_iter_2", [](std::ostream& os) {
      os << std::string(4096, 'x') << std::flush;
      ::pause();
    });
    ::_exit(0);
  }
  // Wait until the child's temporary file exists, then kill it.
  for (int i = 0; i < 500 && !fs::exists(out / "tmp_snapshot_iter_2"); ++i) ::usleep(10000);
  REQUIRE(fs::exists(out / "tmp_snapshot_iter_2"));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(list_dir(out.path) == std::set<std::string>{"snapshot_iter_1", "tmp_snapshot_iter_2"});
  CHECK(names_of(ext::find_snapshot_files("snapshot_iter_{.iteration}", out.path)) ==
        std::vector<std::string>{"snapshot_iter_1"});
  Run resumed(out.path, /*autoload=*/true);
  resumed.manager.start_extensions();
  CHECK(resumed.manager.iteration() == 1);
}

TEST_CASE("a run's start removes the temporary snapshot files an earlier process left half written") {
  TempDir out;
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const char* name : {"tmp_snapshot_iter_2", "tmp_notes.txt", "snapshot_iter_1", "tmp_snapshot_iter_3"})
    touch(out / name);
  // Written before this process started: a write that a killed process left.
  for (const char* name : {"tmp_snapshot_iter_2", "tmp_notes.txt", "snapshot_iter_1"})
    fs::last_write_time(out / name, hour_ago);
  // tmp_snapshot_iter_3 is being written now (by another process, say): kept.
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(1, 10).out_dir(out.str()), ppe::training::Models{}, ppe::training::Optimizers{},
      ppe::training::entry(ext::snapshot(ext::SnapshotOptions().filename("snapshot_iter_{.iteration}")),
                           ppe::iterations(100)));
  manager.start_extensions();
  // Not a snapshot's temporary file (tmp_notes.txt), a snapshot: kept.
  CHECK(list_dir(out.path) == std::set<std::string>{"snapshot_iter_1", "tmp_notes.txt", "tmp_snapshot_iter_3"});
}

TEST_CASE("remove_abandoned_temps: the sharded layout's files, only before the given time") {
  TempDir out;
  fs::create_directories(out / "snapshot_iter_4");
  fs::create_directories(out / "other");
  for (const char* name : {"snapshot_iter_4/tmp_0", "snapshot_iter_4/1", "other/tmp_0", "tmp_snapshot_iter_5"})
    touch(out / name);
  const auto before = fs::file_time_type::clock::now() + std::chrono::minutes(1);
  auto removed = ext::remove_abandoned_temps("snapshot_iter_{.iteration}/{rank}", out.path, before);
  std::sort(removed.begin(), removed.end());
  // Only the template's prefix and suffix count (find_snapshot_files): other/0 is no snapshot's.
  CHECK(removed == std::vector<std::string>{"snapshot_iter_4/tmp_0", "tmp_snapshot_iter_5"});
  CHECK(list_dir(out.path / "other") == std::set<std::string>{"tmp_0"});
  touch(out / "tmp_snapshot_iter_6");
  CHECK(ext::remove_abandoned_temps("snapshot_iter_{.iteration}", out.path, before - std::chrono::hours(1)).empty());
  CHECK(ext::remove_abandoned_temps("x_{}", out.path / "absent", before).empty());
}

TEST_CASE("snapshot safetensors: the model's weights beside each snapshot, retained with it; autoload takes the snapshot") {
  TempDir out;
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), 0.1);
  auto make = [&](bool autoload) {
    return ppe::training::ExtensionsManager(
        ppe_test::options(1, 10).out_dir(out.str()), model, opt,
        ppe::training::entry(ext::snapshot(ext::SnapshotOptions().safetensors(true).n_retains(2).autoload(autoload)),
                             ppe::iterations(1)));
  };
  auto manager = make(false);
  at::Tensor weight_at_3;
  for (int i = 0; i < 3; ++i) {
    manager.run_iteration([&] {
      torch::NoGradGuard no_grad;
      model->weight.add_(1.0);
    });
    if (i == 2) weight_at_3 = model->weight.clone();
  }
  CHECK(list_dir(out.path) == std::set<std::string>{"snapshot_iter_2", "snapshot_iter_2.safetensors", "snapshot_iter_3",
                                                    "snapshot_iter_3.safetensors"});
  const auto file = ppe::serialization::load_safetensors(out / "snapshot_iter_3.safetensors");
  CHECK(file.metadata == std::map<std::string, std::string>{{"epoch", "0"}, {"format", "pt"}, {"iteration", "3"}});
  REQUIRE(file.tensors.size() == 2);
  CHECK(torch::equal(*file.find("weight"), weight_at_3));
  CHECK(torch::equal(*file.find("bias"), model->bias));
  // The .safetensors files are no snapshots: autoload takes snapshot_iter_3.
  auto resumed = make(true);
  resumed.start_extensions();
  CHECK(resumed.iteration() == 3);
  // Only a manager snapshot's option, and not sharded.
  Counter c;
  auto object = ext::snapshot_object(c, "c", ext::SnapshotOptions().safetensors(true));
  CHECK_THROWS_WITH_AS(object.initialize(resumed), doctest::Contains("not with sharded, nor for snapshot_object"),
                       std::invalid_argument);
}

}  // namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_snapshot
