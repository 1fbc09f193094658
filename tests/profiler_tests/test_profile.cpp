// ppe::profiler::Profile (torch.profiler.profile as PPE's Trainer/Evaluator
// use it): the schedule's action tables and the trace handler's calls
// against PyTorch 1.13's, the Chrome trace export, the event summary, and
// the session's errors.
#include "ppe_test.hpp"

#include <ppe/profiler/profile.hpp>

#include <ATen/record_function.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_profiler_tests_test_profile {

namespace prof = ppe::profiler;
using prof::ProfilerAction;

namespace {

// The actions of steps 0..n-1 as PyTorch's enum values, one digit a step.
std::string actions(const prof::ScheduleFn& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += std::to_string(static_cast<int>(s(i)));
  return out;
}

// Runs a session of `steps` steps and returns step_num() at each call of the
// trace handler (the stop included).
std::vector<std::int64_t> handler_calls(prof::ScheduleFn s, int steps) {
  std::vector<std::int64_t> calls;
  prof::Profile p(prof::ProfileOptions().schedule(std::move(s)).on_trace_ready(
      [&](prof::Profile& pr) { calls.push_back(pr.step_num()); }));
  p.start();
  for (int i = 0; i < steps; ++i) {
    torch::ones({2}).add_(1);
    p.step();
  }
  p.stop();
  CHECK(p.traces() == static_cast<std::int64_t>(calls.size()));
  return calls;
}

prof::ScheduleFn sched(std::int64_t wait, std::int64_t warmup, std::int64_t active, std::int64_t repeat = 0,
                       std::int64_t skip_first = 0) {
  return prof::schedule(
      prof::ScheduleOptions().wait(wait).warmup(warmup).active(active).repeat(repeat).skip_first(skip_first));
}

void user_range_work(const char* name) {
  RECORD_USER_SCOPE(name);
  auto a = torch::ones({4, 4});
  (void)torch::mm(a, a);
}

}  // namespace

TEST_CASE("schedule: PyTorch's action tables") {
  // Generated with /usr/bin/python3 (torch 1.13): for each argument set,
  // ''.join(str(torch.profiler.schedule(**args)(i).value) for i in range(24))
  // (0 NONE, 1 WARMUP, 2 RECORD, 3 RECORD_AND_SAVE).
  CHECK(actions(sched(0, 1, 9), 24) == "122222222312222222231222");
  CHECK(actions(sched(1, 1, 2), 24) == "012301230123012301230123");
  CHECK(actions(sched(1, 1, 2, 2), 24) == "012301230000000000000000");
  CHECK(actions(sched(2, 0, 1, 1, 3), 24) == "000003000000000000000000");
  CHECK(actions(sched(0, 0, 1), 24) == "333333333333333333333333");
  CHECK(actions(sched(1, 2, 3, 0, 2), 24) == "000112230112230112230112");
  CHECK(prof::to_string(ProfilerAction::RecordAndSave) == "RECORD_AND_SAVE");
}

TEST_CASE("schedule: bad arguments and steps are errors") {
  CHECK_THROWS_AS(sched(0, 0, 0), std::invalid_argument);  // active must be >= 1
  CHECK_THROWS_AS(sched(-1, 1, 1), std::invalid_argument);
  CHECK_THROWS_AS(sched(0, 1, 1, -1), std::invalid_argument);
  CHECK_THROWS_AS(sched(0, 1, 1, 0, -2), std::invalid_argument);
  CHECK(ppe_test::error_of([] { sched(0, 1, 0); }).find("active=0") != std::string::npos);
  CHECK_THROWS_AS(sched(0, 1, 1)(-1), std::invalid_argument);
}

TEST_CASE("Profile: on_trace_ready calls as PyTorch's profile") {
  // Generated with /usr/bin/python3 (torch 1.13): `with profile(schedule=s,
  // on_trace_ready=lambda p: calls.append(p.step_num)) as p:` and `steps`
  // times `torch.ones(2).add_(1); p.step()`; `calls` after the block.
  CHECK(handler_calls(sched(0, 1, 9), 200).size() == 20);  // PPE's test_trainer_profile: one per epoch
  CHECK(handler_calls(sched(0, 1, 9), 200).front() == 10);
  CHECK(handler_calls(sched(1, 1, 2), 10) == std::vector<std::int64_t>{4, 8, 10});  // the stop saves the RECORD step
  CHECK(handler_calls(sched(1, 1, 2), 11) == std::vector<std::int64_t>{4, 8, 11});
  CHECK(handler_calls(sched(1, 1, 2, 2), 20) == std::vector<std::int64_t>{4, 8});
  CHECK(handler_calls(sched(2, 0, 1, 1, 3), 10) == std::vector<std::int64_t>{6});
  CHECK(handler_calls(sched(0, 0, 1), 5) == std::vector<std::int64_t>{1, 2, 3, 4, 5, 5});
  CHECK(handler_calls(sched(1, 2, 3, 0, 2), 14) == std::vector<std::int64_t>{8, 14});
  // No schedule: one trace, from start to stop ([3] in Python after 3 steps).
  CHECK(handler_calls(nullptr, 3) == std::vector<std::int64_t>{3});
}

TEST_CASE("Profile: a custom schedule's incorrect transitions warn as PyTorch's") {
  // PyTorch 1.13 with this schedule: calls [6, 9] after 9 steps, [6] after 8
  // (a session ending in WARMUP keeps no trace); it warns for RECORD->NONE,
  // WARMUP->NONE and RECORD->WARMUP.
  using A = ProfilerAction;
  const std::vector<A> seq = {A::Record, A::Record, A::None,   A::Warmup, A::None,
                              A::RecordAndSave, A::Warmup, A::Record, A::Warmup, A::Record};
  auto s = [seq](std::int64_t i) { return seq.at(static_cast<std::size_t>(i)); };
  ppe_test::WarningCollector warnings;
  CHECK(handler_calls(s, 9) == std::vector<std::int64_t>{6, 9});
  CHECK(warnings.messages.size() == 3);
  CHECK(warnings.any_contains("RECORD followed by NONE"));
  CHECK(warnings.any_contains("WARMUP followed by NONE"));
  CHECK(warnings.any_contains("RECORD followed by WARMUP"));
  CHECK(handler_calls(s, 8) == std::vector<std::int64_t>{6});
}

TEST_CASE("Profile: the trace has the operators and user ranges; key averages count them") {
  prof::Profile p;
  CHECK_THROWS_AS(p.key_averages(), std::logic_error);  // no trace yet
  p.start();
  CHECK(p.recording());
  for (int i = 0; i < 3; ++i) user_range_work("my_range");
  p.stop();
  CHECK_FALSE(p.recording());
  REQUIRE(p.result());
  const prof::ProfileResult& r = *p.result();
  CHECK(r.count("my_range") == 3);
  CHECK(r.count("aten::mm") == 3);
  bool found = false;
  for (const prof::EventAverage& row : p.key_averages()) {
    CHECK(row.self_cpu_time_total_us <= row.cpu_time_total_us + 1e-9);
    CHECK(row.cpu_time_total_us >= 0);
    if (row.key == "my_range") {
      found = true;
      CHECK(row.count == 3);
      CHECK(row.cpu_time_total_us > 0);
      // Its operators ran inside it: its self time is below its total.
      CHECK(row.self_cpu_time_total_us < row.cpu_time_total_us);
    }
  }
  CHECK(found);
  CHECK(p.key_averages().front().key == "my_range");  // the first to start

  ppe_test::TempDir dir;
  p.export_chrome_trace(dir / "sub/trace.json");
  CHECK_FALSE(std::filesystem::exists(dir / "sub/tmp_trace.json"));
  std::ifstream in(dir / "sub/trace.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  REQUIRE(trace.is_array());
  std::multiset<std::string> names;
  for (const auto& e : trace) {
    CHECK(e.at("ph") == "X");
    CHECK(e.at("dur").get<double>() >= 0);
    names.insert(e.at("name").get<std::string>());
  }
  CHECK(names.count("my_range") == 3);
  CHECK(names.count("aten::mm") == 3);
  CHECK(names.size() == r.events().size());
}

TEST_CASE("Profile: a schedule records only its active steps, each a ProfilerStep range") {
  // wait 1, warmup 1, active 2: steps 2 and 3 recorded, the trace ready at step_num 4.
  std::vector<std::int64_t> ready;
  std::shared_ptr<const prof::ProfileResult> first;
  prof::Profile p(prof::ProfileOptions().schedule(sched(1, 1, 2)).on_trace_ready([&](prof::Profile& pr) {
    ready.push_back(pr.step_num());
    if (!first) first = pr.result();
  }));
  p.start();
  for (int i = 0; i < 6; ++i) {
    user_range_work(("work" + std::to_string(i)).c_str());
    p.step();
  }
  p.stop();
  CHECK(ready == std::vector<std::int64_t>{4, 6});  // step 6 records again: the stop saves it
  REQUIRE(first);
  CHECK(first->step_num() == 4);
  CHECK(first->count("work1") == 0);
  CHECK(first->count("work2") == 1);
  CHECK(first->count("work3") == 1);
  CHECK(first->count("work4") == 0);
  CHECK(first->count("ProfilerStep#2") == 1);
  CHECK(first->count("ProfilerStep#3") == 1);
  CHECK(first->count("ProfilerStep#1") == 0);
}

TEST_CASE("chrome_trace_handler writes trace_<step>.json") {
  ppe_test::TempDir dir;
  const std::vector<std::int64_t> calls = [&] {
    std::vector<std::int64_t> c;
    auto write = prof::chrome_trace_handler(dir / "traces");
    prof::Profile p(prof::ProfileOptions().schedule(sched(1, 1, 2)).on_trace_ready([&](prof::Profile& pr) {
      c.push_back(pr.step_num());
      write(pr);
    }));
    p.start();
    for (int i = 0; i < 10; ++i) {
      user_range_work("step");
      p.step();
    }
    p.stop();
    return c;
  }();
  CHECK(calls == std::vector<std::int64_t>{4, 8, 10});
  for (const char* f : {"trace_4.json", "trace_8.json", "trace_10.json"}) {
    CAPTURE(f);
    REQUIRE(std::filesystem::exists(dir / "traces" / f));
    std::ifstream in(dir / "traces" / f);
    CHECK(nlohmann::json::parse(in).is_array());
  }
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir / "traces")) ++files;
  CHECK(files == 3);
}

TEST_CASE("Profile: shapes and memory when asked") {
  prof::Profile p(prof::ProfileOptions().record_shapes(true).profile_memory(true));
  p.start();
  {
    RECORD_USER_SCOPE("alloc");
    auto a = torch::ones({16, 16});
    auto b = torch::mm(a, a);
    CHECK(b.numel() == 256);
  }
  p.stop();
  bool mm = false, alloc = false;
  for (const prof::Event& e : p.result()->events()) {
    if (e.name == "aten::mm") {
      mm = true;
      CHECK(e.input_shapes == std::vector<std::vector<std::int64_t>>{{16, 16}, {16, 16}});
    }
    if (e.name == "alloc") {
      alloc = true;
      // Two 16x16 floats allocated and freed inside the range: net 0, but
      // aten::ones' own range holds its allocation.
      CHECK(e.cpu_memory_usage == 0);
    }
    if (e.name == "aten::empty") CHECK(e.cpu_memory_usage == 16 * 16 * 4);
  }
  CHECK(mm);
  CHECK(alloc);
}

TEST_CASE("Profile: session errors; start after stop goes on counting; the destructor releases the profiler") {
  prof::Profile p(prof::ProfileOptions().schedule(sched(0, 1, 2)));
  CHECK_THROWS_AS(p.step(), std::logic_error);
  CHECK_THROWS_AS(p.stop(), std::logic_error);
  p.start();
  CHECK_THROWS_AS(p.start(), std::logic_error);
  p.step();  // step 1: RECORD
  CHECK(p.recording());
  {
    prof::Profile other;  // one LibTorch profiler per thread
    CHECK_THROWS_AS(other.start(), std::runtime_error);
  }
  p.stop();
  CHECK(p.step_num() == 1);
  p.start();  // the Evaluator's next pass: the step number goes on
  CHECK(p.current_action() == ProfilerAction::Record);
  p.step();
  CHECK(p.step_num() == 2);
  CHECK(p.current_action() == ProfilerAction::RecordAndSave);
  p.stop();
  CHECK(p.traces() == 2);
  {
    prof::Profile abandoned;
    abandoned.start();
    CHECK(abandoned.recording());
  }
  // Destroyed while recording: the profiler is free again.
  prof::Profile next;
  next.start();
  next.stop();
  CHECK(next.traces() == 1);
}

TEST_CASE("Profile: a session stopped during a warm-up keeps the last trace") {
  // warmup 1, active 1: step 1 records, its trace is ready at step_num 2;
  // the stop at step 2 (WARMUP) records nothing.
  prof::Profile p(prof::ProfileOptions().schedule(sched(0, 1, 1)));
  p.start();
  user_range_work("warm");
  p.step();
  user_range_work("recorded");
  p.step();
  user_range_work("warm again");
  p.stop();
  CHECK(p.traces() == 1);
  REQUIRE(p.result());
  CHECK(p.result()->step_num() == 2);
  CHECK(p.result()->count("recorded") == 1);
  CHECK(p.result()->count("warm") == 0);
  CHECK(p.result()->count("warm again") == 0);
}

}  // namespace ppe_test_profiler_tests_test_profile
