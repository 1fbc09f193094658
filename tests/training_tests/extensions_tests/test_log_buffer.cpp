// Port of PPE's tests/.../extensions_tests/test_log_buffer.py: the shared log
// and its per-reader cursors (PPE's _LogBuffer / _LogLooker; ours LogBuffer /
// LogReader, with get() → new_entries() and clear() → mark_read()).
#include "ppe_test.hpp"
#include <ppe/training/extensions/log_format_yaml.hpp>  // the yaml format (ppe-config)
#include "temp_dir.hpp"

#include <yaml-cpp/yaml.h>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_log_buffer {

namespace tr = ppe::training;
namespace ex = ppe::training::extensions;
using ex::LogEntry;

namespace {

// PPE's tests append strings; an entry with one key stands for each.
LogEntry mes(int n) { return LogEntry{{"mes", n}}; }

std::vector<int> ids(std::span<const LogEntry> entries) {
  std::vector<int> out;
  for (const auto& e : entries) out.push_back(static_cast<int>(e.at("mes").as_int()));
  return out;
}

// Stands in for PPE's PrintReport in test_buffer_size_log_report_and_print_report:
// reads the LogReport through its own cursor whenever its trigger fires.
struct FakePrintReport {
  using extension_concept = tr::extension_tag;
  static constexpr std::string_view default_name = "PrintReport";
  ex::LogReader reader;
  std::size_t printed = 0;
  void initialize(tr::Manager& m) { reader = m.get_extension<ex::LogReport>("LogReport").make_reader(); }
  void operator()(tr::Manager&) {
    printed += reader.new_entries().size();
    reader.mark_read();
  }
};

}  // namespace

TEST_CASE("test_log_buffer") {
  auto buf = ex::LogBuffer::create();
  auto looker = buf->make_reader();
  CHECK(buf->size() == 0);
  buf->append(mes(1));
  buf->append(mes(2));
  CHECK(buf->size() == 2);
  CHECK(ids(looker.new_entries()) == std::vector<int>{1, 2});
  CHECK(buf->size() == 2);
  looker.mark_read();
  CHECK(buf->size() == 0);
  CHECK(looker.new_entries().empty());
  buf->append(mes(3));
  CHECK(buf->size() == 1);
  CHECK(ids(looker.new_entries()) == std::vector<int>{3});
  CHECK(buf->size() == 1);
  looker.mark_read();
  CHECK(buf->size() == 0);
  CHECK(looker.new_entries().empty());
}

TEST_CASE("test_log_buffer_multiple_lookers") {
  auto buf = ex::LogBuffer::create();
  auto looker1 = buf->make_reader();
  auto looker2 = buf->make_reader();
  buf->append(mes(1));
  CHECK(ids(looker1.new_entries()) == std::vector<int>{1});
  CHECK(ids(looker2.new_entries()) == std::vector<int>{1});
  CHECK(buf->size() == 1);
  looker2.mark_read();
  CHECK(buf->size() == 1);
  buf->append(mes(2));
  CHECK(ids(looker1.new_entries()) == std::vector<int>{1, 2});
  CHECK(ids(looker2.new_entries()) == std::vector<int>{2});
  CHECK(buf->size() == 2);
  looker2.mark_read();
  CHECK(buf->size() == 2);
  looker1.mark_read();
  CHECK(buf->size() == 0);
}

TEST_CASE("readers: start at the end, release their place when destroyed, move") {
  auto buf = ex::LogBuffer::create();
  auto keeper = buf->make_reader();
  buf->append(mes(1));
  {
    auto late = buf->make_reader();  // sees only what comes after it
    CHECK(late.new_entries().empty());
    buf->append(mes(2));
    CHECK(ids(late.new_entries()) == std::vector<int>{2});
    keeper.mark_read();
    CHECK(buf->size() == 1);  // 2 is still needed by `late`
  }
  CHECK(buf->size() == 0);  // `late` is gone: nothing is kept for it
  auto moved = std::move(keeper);
  CHECK_FALSE(static_cast<bool>(keeper));
  CHECK_THROWS_WITH_AS(keeper.mark_read(), doctest::Contains("not attached"), std::logic_error);
  buf->append(mes(3));
  CHECK(ids(moved.new_entries()) == std::vector<int>{3});
  ex::LogReader none;
  CHECK_FALSE(static_cast<bool>(none));
}

TEST_CASE("test_buffer_size_log_report") {
  ppe_test::TempDir tmp;
  const int max_epochs = 10, ipe = 5;
  auto m = tr::ExtensionsManager(ppe_test::options(max_epochs, ipe).out_dir(tmp.str()), tr::Models{},
                                 tr::Optimizers{},
                                 tr::entry(ex::LogReport(ex::LogReportOptions().filename("out").format("yaml").append(true)),
                                           ppe::epochs(1)));
  auto& log_report = m.get_extension<ex::LogReport>("LogReport");
  for (int e = 0; e < max_epochs; ++e)
    for (int i = 0; i < ipe; ++i) {
      CHECK(log_report.buffer().size() <= 1);
      ppe_test::step(m);
    }
  const YAML::Node values = YAML::LoadFile((tmp / "out").string());
  CHECK(values.size() == static_cast<std::size_t>(max_epochs));
}

TEST_CASE("test_buffer_size_log_report_and_print_report") {
  ppe_test::TempDir tmp;
  const int max_epochs = 10, ipe = 5;
  auto m = tr::ExtensionsManager(
      ppe_test::options(max_epochs, ipe).out_dir(tmp.str()), tr::Models{}, tr::Optimizers{},
      tr::entry(ex::LogReport(ex::LogReportOptions().filename("out").format("yaml").append(true)), ppe::epochs(1)),
      tr::entry(FakePrintReport{}, ppe::epochs(3)));
  auto& log_report = m.get_extension<ex::LogReport>("LogReport");
  for (int e = 0; e < max_epochs; ++e)
    for (int i = 0; i < ipe; ++i) {
      CHECK(log_report.buffer().size() <= 3);
      ppe_test::step(m);
    }
  const YAML::Node values = YAML::LoadFile((tmp / "out").string());
  CHECK(values.size() == static_cast<std::size_t>(max_epochs));
  // Epochs 3, 6, 9 showed 3 entries each; the 10th is still waiting for the reader.
  CHECK(m.get_extension<FakePrintReport>("PrintReport").printed == 9);
  CHECK(log_report.buffer().size() == 1);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_log_buffer
