// doctest runner shared by every test binary. Besides doctest's own result it
// fails the run when its filters selected no test case (doctest exits 0 then:
// a filter that stopped matching would pass silently), and when the binary
// executed no assertion at all: a sign that a test's CHECK was silently taken
// over by another library's macro. A run of CUDA tests alone without a device
// exits with 77 instead (cuda.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

namespace ppe_test {
// See cuda.hpp: set when a CUDA test found no device.
bool g_cuda_skipped = false;
}  // namespace ppe_test

namespace {
int g_asserts = 0;
unsigned g_selected = 0;

struct AssertCounter : doctest::IReporter {
  explicit AssertCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_asserts = stats.numAsserts;
    g_selected = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("assert_counter", 1, AssertCounter);
}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;
  if (result == 0 && g_selected == 0) {
    std::cerr << "error: the filters on the command line selected no test case\n";
    return 1;
  }
  if (result == 0 && g_asserts == 0) {
    if (ppe_test::g_cuda_skipped) return 77;  // every test skipped: Meson's "skipped"
    std::cerr << "error: this test binary executed no assertions\n";
    return 1;
  }
  return result;
}
