// ppe::writing::TensorBoardWriter: PPE's test_tensorboard_writer (from
// test_log_report.py: one events.out.* file holding the keys), plus ours: the
// event file read back record by record (both masked CRC-32Cs checked with
// Boost.CRC) and decoded by protoc with tests/writing_tests/tb_event.proto
// (TensorBoard's public field numbers): file name, file_version record,
// tags, steps and values, flushing on finalize and on a training error,
// `stats`, bad entries, unwritable paths.
#include "ppe_test.hpp"
#include "python.hpp"
#include "temp_dir.hpp"

#include <unistd.h>

#include <boost/crc.hpp>

#include <cmath>
#include <cstdlib>
#include <regex>

#include <ppe/writing/tensorboard_writer.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_writing_tests_test_tensorboard_writer {

namespace tr = ppe::training;
namespace ex = ppe::training::extensions;
namespace wr = ppe::writing;
using ppe::reporting::LogEntry;
using ex::LogReport;
using ex::LogReportOptions;
using ppe_test::TempDir;
using wr::TensorBoardWriter;
using wr::TensorBoardWriterOptions;

namespace {

std::uint32_t masked_crc(const std::string& bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const std::uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::uint64_t little_endian(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(bytes.at(at + static_cast<std::size_t>(i)));
  return v;
}

// The data of each TFRecord of an event file, checking the framing: the
// length, the masked CRC-32C of the length's 8 bytes, the data, the masked
// CRC-32C of the data, and nothing after the last record.
std::vector<std::string> read_records(const std::filesystem::path& file) {
  const std::vector<char> raw = ppe_test::read_bytes(file);
  const std::string bytes(raw.begin(), raw.end());
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < bytes.size()) {
    REQUIRE(at + 12 <= bytes.size());
    const std::uint64_t length = little_endian(bytes, at, 8);
    CHECK(little_endian(bytes, at + 8, 4) == masked_crc(bytes.substr(at, 8)));
    REQUIRE(at + 12 + length + 4 <= bytes.size());
    std::string data = bytes.substr(at + 12, length);
    CHECK(little_endian(bytes, at + 12 + length, 4) == masked_crc(data));
    records.push_back(std::move(data));
    at += 12 + length + 4;
  }
  CHECK(at == bytes.size());
  return records;
}

// One decoded tensorboard.Event.
struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;  // (tag, simple_value)
  bool has_value = false;
};

std::filesystem::path schema_file() {
  const char* root = std::getenv("PPE_SOURCE_ROOT");
  const std::filesystem::path p = root && *root ? std::filesystem::path(root) / "tests/writing_tests/tb_event.proto"
                                                : std::filesystem::path(__FILE__).parent_path() / "tb_event.proto";
  REQUIRE_MESSAGE(std::filesystem::exists(p), "tb_event.proto not found at " << p << " (set PPE_SOURCE_ROOT)");
  return p;
}

std::string unquote(const std::string& s) {
  REQUIRE(s.size() >= 2);
  REQUIRE(s.front() == '"');
  REQUIRE(s.back() == '"');
  return s.substr(1, s.size() - 2);  // our tags need no unescaping
}

// Decodes records with protoc: they are wrapped as the repeated field 1 of a
// tensorboard.EventList (key 0x0a, varint length, record), so one protoc run
// reads them all; its text output is parsed back.
std::vector<Event> decode(const std::vector<std::string>& records) {
  TempDir tmp;
  std::filesystem::copy_file(schema_file(), tmp / "tb_event.proto");
  std::string wrapped;
  for (const auto& r : records) {
    wrapped += '\x0a';
    for (std::uint64_t n = r.size(); ; n >>= 7) {
      if (n < 0x80) {
        wrapped += static_cast<char>(n);
        break;
      }
      wrapped += static_cast<char>((n & 0x7f) | 0x80);
    }
    wrapped += r;
  }
  ppe_test::write_file(tmp / "events.bin", std::vector<char>(wrapped.begin(), wrapped.end()));
  const ppe_test::Output out =
      ppe_test::run("cd '" + tmp.str() + "' && protoc --decode=tensorboard.EventList -I. tb_event.proto < events.bin");
  REQUIRE_MESSAGE(out.status == 0, "protoc (protobuf-compiler) failed: " << out.text);
  std::vector<Event> events;
  std::istringstream in(out.text);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (line == "event {") {
      events.emplace_back();
      continue;
    }
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;  // "summary {", "value {", "}"
    REQUIRE(!events.empty());
    Event& e = events.back();
    const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (key == "wall_time") {
      e.wall_time = std::stod(value);
    } else if (key == "step") {
      e.step = std::stoll(value);
    } else if (key == "file_version") {
      e.file_version = unquote(value);
    } else if (key == "tag") {
      e.values.emplace_back(unquote(value), 0.0f);
    } else if (key == "simple_value") {
      REQUIRE(!e.values.empty());
      // protoc prints the shortest text that reads back as the same float.
      e.values.back().second = value == "nan" ? NAN : value == "inf" ? INFINITY : std::strtof(value.c_str(), nullptr);
      e.has_value = true;
    } else {
      FAIL("unexpected field in protoc's output: " << line);
    }
  }
  REQUIRE(events.size() == records.size());
  return events;
}

std::vector<Event> read_events(const std::filesystem::path& file) { return decode(read_records(file)); }

// The event files in `dir`.
std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().filename().string().find("tfevents") != std::string::npos) files.push_back(f.path());
  return files;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The scalar events after the file_version record, as (step, tag, value).
struct Scalar {
  std::int64_t step;
  std::string tag;
  float value;
  friend bool operator==(const Scalar&, const Scalar&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Scalar& s) {
    return os << "(" << s.step << ", " << s.tag << ", " << s.value << ")";
  }
};
std::vector<Scalar> scalars(const std::vector<Event>& events) {
  REQUIRE(!events.empty());
  CHECK(events[0].file_version == "brain.Event:2");
  std::vector<Scalar> out;
  for (std::size_t i = 1; i < events.size(); ++i) {
    CHECK(events[i].file_version.empty());
    REQUIRE(events[i].values.size() == 1);  // one scalar per event, as add_scalar writes
    CHECK(events[i].has_value);
    out.push_back({events[i].step, events[i].values[0].first, events[i].values[0].second});
  }
  return out;
}

tr::ManagerOptions opts_in(const TempDir& dir, double max_epochs, std::int64_t ipe) {
  return ppe_test::options(max_epochs, ipe).out_dir(dir.str());
}

}  // namespace

TEST_CASE("PPE test_tensorboard_writer: LogReport writes one event file with its keys") {
  // PPE: LogReport(writer=TensorBoardWriter(out_dir=tmpdir), trigger=(1, "iteration")), 3 epochs of 5
  // iterations, writer.finalize(); one file "events.out.*" holding "epoch", "iteration", "elapsed_time".
  TempDir tmp;
  auto writer = std::make_shared<TensorBoardWriter>(tmp.path);
  auto m = tr::ExtensionsManager(opts_in(tmp, 3, 5), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(writer).trigger(ppe::iterations(1))));
  while (!m.stop_trigger()) ppe_test::step(m);
  writer->finalize();
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(tmp.path)) files.push_back(f.path().filename().string());
  REQUIRE(files.size() == 1);  // no "log" file: LogReport wrote through the TensorBoardWriter only
  CHECK(files[0].rfind("events.out.", 0) == 0);
  const std::string data = ppe_test::read_file(tmp / files[0]);
  for (const char* key : {"epoch", "iteration", "elapsed_time"}) CHECK(data.find(key) != std::string::npos);
}

TEST_CASE("the event file: TensorBoard's name, file_version first, one scalar event per key and entry") {
  TempDir tmp;
  ppe_test::FakeClock clock;
  clock.set(50.0);
  const double before = now_seconds();
  auto writer = std::make_shared<TensorBoardWriter>(tmp.path);
  auto m = tr::ExtensionsManager(opts_in(tmp, 2, 2).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(writer).trigger(ppe::iterations(1))));
  // Values that a float cannot hold exactly: the file must hold each rounded to float.
  const std::vector<double> losses = {1.0 / 3.0, 0.1, 1e-07, 12345.678901};
  for (double loss : losses)
    m.run_iteration([&] {
      clock.advance(0.3);
      ppe::reporting::report({{"main/loss", loss}});
    });
  const double after = now_seconds();
  CHECK(m.finalized());  // the manager finalized LogReport, which finalized its writer

  const auto files = event_files(tmp.path);
  REQUIRE(files.size() == 1);
  CHECK(writer->path() == files[0]);
  // events.out.tfevents.<10-digit unix time>.<host>.<pid>.<counter>
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  const std::string host_re = std::regex_replace(host, std::regex("\\."), "\\.");
  const std::regex pattern("events\\.out\\.tfevents\\.([0-9]{10})\\." + host_re + "\\." + std::to_string(::getpid()) +
                           "\\.[0-9]+");
  std::smatch match;
  const std::string name = files[0].filename().string();
  REQUIRE_MESSAGE(std::regex_match(name, match, pattern), name);
  const long long stamp = std::stoll(match[1].str());
  CHECK(stamp >= static_cast<long long>(std::floor(before)));
  CHECK(stamp <= static_cast<long long>(after));

  const auto events = read_events(files[0]);
  CHECK(events[0].wall_time >= before - 1e-3);
  CHECK(events[0].wall_time <= after + 1e-3);
  CHECK(events[0].step == 0);
  CHECK(events[0].values.empty());
  for (const auto& e : events) CHECK(e.wall_time >= events[0].wall_time);
  // Each entry: main/loss (the mean of one value), epoch, iteration, elapsed_time; step = iteration.
  std::vector<Scalar> expected;
  for (std::int64_t it = 1; it <= 4; ++it) {
    expected.push_back({it, "main/loss", static_cast<float>(losses[static_cast<std::size_t>(it - 1)])});
    expected.push_back({it, "epoch", static_cast<float>((it) / 2)});
    expected.push_back({it, "iteration", static_cast<float>(it)});
    expected.push_back({it, "elapsed_time", static_cast<float>(0.3 * static_cast<double>(it))});
  }
  const auto got = scalars(events);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].step == expected[i].step);
    CHECK(got[i].tag == expected[i].tag);
    // elapsed_time is a sum of doubles: compare after the same rounding to float, within one float step.
    if (expected[i].tag == "elapsed_time")
      CHECK(got[i].value == doctest::Approx(expected[i].value).epsilon(1e-6));
    else
      CHECK(got[i].value == expected[i].value);  // exact: the float nearest to the logged double
  }
}

TEST_CASE("flush_secs holds records; finalize writes them (LogReport finalizes its writer)") {
  TempDir tmp;
  auto writer = std::make_shared<TensorBoardWriter>(TensorBoardWriterOptions().out_dir(tmp.path).flush_secs(3600));
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 3), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(writer).trigger(ppe::iterations(1))));
  ppe_test::step(m);  // the first call writes at once (TensorBoard's writer too)
  ppe_test::step(m);
  REQUIRE(event_files(tmp.path).size() == 1);
  CHECK(scalars(read_events(writer->path())).size() == 3);  // iteration 1 only: 2 waits
  ppe_test::step(m);  // the last iteration: the manager finalizes
  REQUIRE(m.finalized());
  const auto got = scalars(read_events(writer->path()));
  REQUIRE(got.size() == 9);
  CHECK(got[3] == Scalar{2, "epoch", 0.0f});
  CHECK(got[8] == Scalar{3, "elapsed_time", got[8].value});
}

TEST_CASE("a training error flushes the records logged before it (PPE #581)") {
  TempDir tmp;
  auto writer = std::make_shared<TensorBoardWriter>(TensorBoardWriterOptions().out_dir(tmp.path).flush_secs(3600));
  auto m = tr::ExtensionsManager(opts_in(tmp, 2, 5), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(writer).trigger(ppe::iterations(1))));
  for (int i = 0; i < 3; ++i) ppe_test::step(m);
  CHECK(scalars(read_events(writer->path())).size() == 3);  // iterations 2 and 3 wait in memory
  CHECK_THROWS_WITH_AS(m.run_iteration([] { throw std::runtime_error("diverged"); }), "diverged", std::runtime_error);
  // The file alone (no finalize, the writer still alive) holds every entry logged before the error.
  const auto got = scalars(read_events(writer->path()));
  REQUIRE(got.size() == 9);
  CHECK(got[0].step == 1);
  CHECK(got[8] == Scalar{3, "elapsed_time", got[8].value});
}

TEST_CASE("LogReport's error path: a failing flush is a warning, the training error propagates") {
  struct FailingFlush : wr::SimpleWriter {
    using SimpleWriter::SimpleWriter;
    void flush() override { throw wr::WriteError("disk on fire", "x"); }
  };
  TempDir tmp;
  ppe_test::WarningCollector warnings;
  auto m = tr::ExtensionsManager(opts_in(tmp, 2, 5), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(std::make_shared<FailingFlush>(tmp.path))));
  ppe_test::step(m);
  CHECK_THROWS_WITH_AS(m.run_iteration([] { throw std::runtime_error("diverged"); }), "diverged", std::runtime_error);
  CHECK(warnings.any_contains("disk on fire"));
}

TEST_CASE("stats: only these keys, in this order; a key missing from an entry is skipped") {
  TempDir tmp;
  auto writer = std::make_shared<TensorBoardWriter>(
      TensorBoardWriterOptions().out_dir(tmp.path).stats({"val/loss", "iteration"}));
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 2), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(writer).trigger(ppe::iterations(1))));
  m.run_iteration([] { ppe::reporting::report({{"main/loss", 2.0}}); });
  m.run_iteration([] { ppe::reporting::report({{"main/loss", 1.0}, {"val/loss", 0.75}}); });
  CHECK(scalars(read_events(writer->path())) ==
        std::vector<Scalar>{{1, "iteration", 1.0f}, {2, "val/loss", 0.75f}, {2, "iteration", 2.0f}});
}

TEST_CASE("an empty out_dir adopts the manager's; filename_suffix; reopening after finalize appends") {
  TempDir tmp;
  auto writer = std::make_shared<TensorBoardWriter>(TensorBoardWriterOptions().filename_suffix(".run1"));
  auto m = tr::ExtensionsManager(opts_in(tmp, 1, 1), tr::Models{}, tr::Optimizers{},
                                 LogReport(LogReportOptions().writer(writer)));
  ppe_test::step(m);
  const auto files = event_files(tmp.path);
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().ends_with(".run1"));
  CHECK(writer->path() == files[0]);
  // A write after finalize appends to the same file (no second file_version record).
  writer->add_scalar("extra", 0.0, 0);
  writer->add_scalar("negative_step", -2.5, -7);
  writer->finalize();
  writer->finalize();  // idempotent
  CHECK(event_files(tmp.path).size() == 1);
  const auto got = scalars(read_events(files[0]));
  REQUIRE(got.size() == 5);
  CHECK(got[3] == Scalar{0, "extra", 0.0f});  // a zero value is written (simple_value is in a oneof)
  CHECK(got[4] == Scalar{-7, "negative_step", -2.5f});
}

TEST_CASE("post-save hooks run with the event file after each write") {
  TempDir tmp;
  TensorBoardWriter writer(tmp.path);
  std::vector<std::filesystem::path> written;
  writer.add_post_save_hook([&](const std::filesystem::path& p) { written.push_back(p); });
  writer.write(LogEntry{{"iteration", 3}, {"x", 1.5}});
  writer.write(LogEntry{{"iteration", 4.0}, {"x", 2.5}});  // an integral float is a step
  REQUIRE(written.size() == 2);
  CHECK(written[0] == writer.path());
  CHECK(scalars(read_events(writer.path())) ==
        std::vector<Scalar>{{3, "iteration", 3.0f}, {3, "x", 1.5f}, {4, "iteration", 4.0f}, {4, "x", 2.5f}});
}

TEST_CASE("bad entries and calls: no iteration, a fractional iteration, a file to write, bad options") {
  TempDir tmp;
  TensorBoardWriter writer(tmp.path);
  const std::string no_it = ppe_test::error_of([&] { writer.write(LogEntry{{"epoch", 1}, {"loss", 0.5}}); });
  CHECK(no_it.find("no 'iteration'") != std::string::npos);
  CHECK(no_it.find("'epoch', 'loss'") != std::string::npos);
  CHECK_THROWS_AS(writer.write(LogEntry{{"iteration", 2.5}}), std::invalid_argument);
  CHECK(ppe_test::error_of([&] { writer.write(LogEntry{{"iteration", 2.5}}); }).find("2.5") != std::string::npos);
  CHECK(event_files(tmp.path).empty());  // nothing was opened for a rejected entry
  const std::string file = ppe_test::error_of([&] { writer("snapshot", wr::owned_bytes(std::string("x"))); });
  CHECK(file.find("cannot write the file 'snapshot'") != std::string::npos);
  CHECK_THROWS_AS(writer("snapshot", wr::owned_bytes(std::string("x"))), std::logic_error);
  CHECK_THROWS_AS(TensorBoardWriter(TensorBoardWriterOptions().flush_secs(-1)), std::invalid_argument);
  CHECK_THROWS_AS(TensorBoardWriter(TensorBoardWriterOptions().filename_suffix("a/b")), std::invalid_argument);
  // A LogReport whose postprocess drops the iteration fails at its emission, naming the key.
  auto m = tr::ExtensionsManager(
      opts_in(tmp, 1, 1), tr::Models{}, tr::Optimizers{},
      LogReport(LogReportOptions().writer(std::make_shared<TensorBoardWriter>(tmp.path)).postprocess([](LogEntry& e) {
        e.erase("iteration");
      })));
  CHECK(ppe_test::error_of([&] { ppe_test::step(m); }).find("no 'iteration'") != std::string::npos);
}

TEST_CASE("an unwritable directory or file is a WriteError naming the path") {
  TempDir tmp;
  std::ofstream(tmp / "plain") << "a file, not a directory";
  TensorBoardWriter under_file(tmp / "plain" / "logs");
  try {
    under_file.write(LogEntry{{"iteration", 1}});
    FAIL("expected a WriteError");
  } catch (const wr::WriteError& e) {
    CHECK(std::string(e.what()).find((tmp / "plain" / "logs").string()) != std::string::npos);
  }

  // A failed write of records: the file (after finalize) replaced by /dev/full, which refuses every byte.
  ppe_test::WarningCollector warnings;
  auto writer = std::make_unique<TensorBoardWriter>(tmp / "tb");
  writer->write(LogEntry{{"iteration", 1}});
  writer->finalize();
  const std::filesystem::path file = writer->path();
  std::filesystem::remove(file);
  std::filesystem::create_symlink("/dev/full", file);
  try {
    writer->write(LogEntry{{"iteration", 2}});
    FAIL("expected a WriteError");
  } catch (const wr::WriteError& e) {
    CHECK(e.path() == file);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  // The records stay queued; the destructor's last try fails too, and warns.
  writer.reset();
  CHECK(warnings.any_contains("records lost"));
}

}  // namespace ppe_test_writing_tests_test_tensorboard_writer
