// Port of PPE's tests/.../profiler_tests/test_time_summary.py (test_report, test_report_async,
// test_clear, test_global_summary with a thread instead of a process), plus exact statistics on a
// fake clock, thread safety, first-value order, deferred values and the per-thread slot cache.
#include "ppe_test.hpp"

#include <ppe/profiler/record.hpp>
#include <ppe/profiler/time_summary.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_profiler_tests_test_time_summary {

namespace prof = ppe::profiler;

namespace {

// A fake clock (nanoseconds) that the test moves by hand.
std::int64_t fake_now = 0;
std::int64_t fake_clock() { return fake_now; }

const prof::TimeStats* find(const std::vector<std::pair<std::string, prof::TimeStats>>& s, const std::string& tag) {
  for (const auto& [k, v] : s)
    if (k == tag) return &v;
  return nullptr;
}

std::vector<std::string> tags_of(const std::vector<std::pair<std::string, prof::TimeStats>>& s) {
  std::vector<std::string> out;
  for (const auto& [k, v] : s) out.push_back(k);
  return out;
}

}  // namespace

// Two scopes of 0.25 s and 0.75 s: count 2, mean (0.25 + 0.75) / 2 = 0.5,
// E[x^2] = (0.0625 + 0.5625) / 2 = 0.3125, std = sqrt(0.3125 - 0.25) = 0.25,
// min 0.25, max 0.75 (all exact in binary floating point).
TEST_CASE("statistics of record scopes on a fake clock") {
  prof::TimeSummary summary(&fake_clock);
  const auto options = prof::RecordOptions().summary(&summary);
  fake_now = 1'000'000'000;
  {
    prof::Record r("foo", options);
    fake_now += 250'000'000;
  }
  {
    prof::Record r("foo", options);
    fake_now += 750'000'000;
  }
  const auto s = summary.summary();
  REQUIRE(s.size() == 1);
  CHECK(s[0].first == "foo");
  CHECK(s[0].second.count == 2);
  CHECK(s[0].second.sum == 1.0);
  CHECK(s[0].second.mean() == 0.5);
  CHECK(s[0].second.std() == 0.25);
  CHECK(s[0].second.min == 0.25);
  CHECK(s[0].second.max == 0.75);

  const auto stats = summary.make_statistics();
  const std::vector<std::pair<std::string, double>> expected = {
      {"foo", 0.5}, {"foo.std", 0.25}, {"foo.min", 0.25}, {"foo.max", 0.75}};
  CHECK(stats == expected);
  CHECK(summary.summary().size() == 1);  // not cleared
}

// PPE test_report: a report makes "foo", "foo.min", "foo.max".
TEST_CASE("PPE test_report") {
  prof::TimeSummary summary;
  { prof::Record r("foo", prof::RecordOptions().summary(&summary)); }
  const auto stats = summary.make_statistics();
  REQUIRE(stats.size() == 4);
  CHECK(stats[0].first == "foo");
  CHECK(stats[2].first == "foo.min");
  CHECK(stats[3].first == "foo.max");
  CHECK(stats[0].second >= 0.0);
}

// PPE test_report_async: defer() in the scope, complete() 0.5 s later; on the fake clock exactly 0.5.
TEST_CASE("PPE test_report_async") {
  prof::TimeSummary summary(&fake_clock);
  fake_now = 0;
  {
    prof::Record r("afoo", prof::RecordOptions().summary(&summary));
    r.defer();
    fake_now += 100'000'000;
  }  // deferred and never completed: nothing
  CHECK(summary.summary().empty());

  std::optional<prof::Record> r;
  r.emplace("afoo", prof::RecordOptions().summary(&summary));
  r->defer();
  fake_now += 500'000'000;
  r->complete();
  fake_now += 1'000'000'000;
  r->complete();  // once
  r.reset();
  const auto s = summary.summary();
  REQUIRE(s.size() == 1);
  CHECK(s[0].second.count == 1);
  CHECK(s[0].second.mean() == 0.5);
  CHECK(s[0].second.min == 0.5);
  CHECK(s[0].second.max == 0.5);
}

// PPE test_clear: add 10, 5, 15 -> mean 10, min 5, max 15; a clearing summary empties it.
TEST_CASE("PPE test_clear") {
  prof::TimeSummary summary;
  summary.add("foo", 10);
  summary.add("foo", 5);
  summary.add("foo", 15);
  const auto first = summary.make_statistics(true);
  REQUIRE(first.size() == 4);
  CHECK(first[0] == std::pair<std::string, double>("foo", 10.0));
  CHECK(first[2] == std::pair<std::string, double>("foo.min", 5.0));
  CHECK(first[3] == std::pair<std::string, double>("foo.max", 15.0));
  // std: E[x^2] = (100 + 25 + 225) / 3 = 350 / 3; var = 350/3 - 100 = 50/3
  CHECK(first[1].second == doctest::Approx(std::sqrt(50.0 / 3.0)).epsilon(1e-12));
  CHECK(summary.make_statistics(true).empty());
  CHECK(summary.summary().empty());
}

// Tags come out in the order of their first value since the last clear (as PPE's new DictSummary).
TEST_CASE("first-value order, restarted by clear") {
  prof::TimeSummary summary;
  summary.add("b", 1);
  summary.add("a", 1);
  summary.add("b", 1);
  CHECK(tags_of(summary.summary(true)) == std::vector<std::string>{"b", "a"});
  summary.add("a", 2);
  summary.add("c", 2);
  summary.add("b", 2);
  CHECK(tags_of(summary.summary()) == std::vector<std::string>{"a", "c", "b"});
  summary.clear();
  CHECK(summary.summary().empty());
}

// Several threads add at once: every value is counted, once.
TEST_CASE("thread safety: concurrent adds are all counted") {
  prof::TimeSummary summary;
  constexpr int kThreads = 4, kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&summary, t] {
      const std::string own = "own" + std::to_string(t);
      for (int i = 0; i < kAdds; ++i) {
        summary.add("shared", 1.0);
        summary.add(own, 0.5);
      }
    });
  for (auto& th : threads) th.join();
  const auto s = summary.summary();
  REQUIRE(s.size() == kThreads + 1);
  const prof::TimeStats* shared = find(s, "shared");
  REQUIRE(shared);
  CHECK(shared->count == kThreads * kAdds);
  CHECK(shared->sum == kThreads * kAdds * 1.0);  // integers: exact
  for (int t = 0; t < kThreads; ++t) {
    const prof::TimeStats* own = find(s, "own" + std::to_string(t));
    REQUIRE(own);
    CHECK(own->count == kAdds);
    CHECK(own->sum == kAdds * 0.5);
  }
}

// Clearing while threads add: each value lands in exactly one of the summaries.
TEST_CASE("thread safety: clearing summaries while threads add lose nothing") {
  prof::TimeSummary summary;
  constexpr int kThreads = 3, kAdds = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) summary.add("x", 1.0);
      ++done;
    });
  std::int64_t total = 0;
  while (done.load() < kThreads)
    for (const auto& [k, v] : summary.summary(true)) total += v.count;
  for (auto& th : threads) th.join();
  for (const auto& [k, v] : summary.summary(true)) total += v.count;
  CHECK(total == kThreads * kAdds);
}

// PPE test_global_summary (a process there; a thread here): the process-wide instance sees
// values from every thread.
TEST_CASE("PPE test_global_summary: get_time_summary is shared by threads") {
  prof::TimeSummary& global = prof::get_time_summary();
  CHECK(&global == &prof::get_time_summary());
  global.clear();
  std::thread([] { prof::Record r("ppe_test_global_foo"); }).join();
  const auto s = global.summary(true);
  REQUIRE(find(s, "ppe_test_global_foo"));
  CHECK(find(s, "ppe_test_global_foo")->count == 1);
}

// CUDA timings arrive as deferred values, resolved by synchronize() (summary() calls it).
TEST_CASE("deferred values are resolved by summary") {
  prof::TimeSummary summary;
  int calls = 0;
  summary.add_deferred("k.cuda", [&calls] {
    ++calls;
    return 0.125;
  });
  CHECK(calls == 0);
  const auto s = summary.summary();
  CHECK(calls == 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].first == "k.cuda");
  CHECK(s[0].second.mean() == 0.125);
  summary.synchronize();
  CHECK(calls == 1);
}

// The per-thread slot cache is keyed by the tag's address: a buffer reused with other text, and a
// new TimeSummary at a destroyed one's address, must still find the right slot.
TEST_CASE("slot cache: reused buffers and reused addresses") {
  prof::TimeSummary summary;
  std::string buffer = "alpha";
  summary.add(buffer, 1.0);
  buffer.replace(0, 5, "omega");  // same address, other text
  summary.add(buffer, 2.0);
  const auto s = summary.summary();
  REQUIRE(s.size() == 2);
  CHECK(s[0].first == "alpha");
  CHECK(s[0].second.sum == 1.0);
  CHECK(s[1].first == "omega");
  CHECK(s[1].second.sum == 2.0);

  static const char tag[] = "same-literal";
  for (int i = 0; i < 3; ++i) {
    auto fresh = std::make_unique<prof::TimeSummary>();
    fresh->add(tag, 1.0);
    const auto fs = fresh->summary();
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].second.count == 1);  // not a previous instance's slot
  }
}

TEST_CASE("population std never NaN from rounding; NaN without values") {
  prof::TimeStats st;
  CHECK(std::isnan(st.mean()));
  CHECK(std::isnan(st.std()));
  for (int i = 0; i < 3; ++i) st.add(0.1);
  CHECK(st.std() >= 0.0);
  CHECK(st.std() < 1e-9);
}

// The default clock follows steady_clock (it is calibrated against it).
TEST_CASE("the default clock runs with steady_clock") {
  const std::int64_t a = prof::detail::fast_clock_ns();
  const std::int64_t s0 = prof::detail::steady_clock_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::int64_t b = prof::detail::fast_clock_ns();
  const std::int64_t s1 = prof::detail::steady_clock_ns();
  CHECK(b - a >= 19'000'000);
  CHECK(b - a < 2'000'000'000);
  // Same time line: within 1 ms of steady_clock, and the same elapsed time within 1 %.
  CHECK(std::llabs(a - s0) < 1'000'000);
  CHECK(std::llabs((b - a) - (s1 - s0)) < (s1 - s0) / 100 + 100'000);
}

}  // namespace ppe_test_profiler_tests_test_time_summary
