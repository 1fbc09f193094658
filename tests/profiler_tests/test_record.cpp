// Port of PPE's tests/.../profiler_tests/test_record.py (CPU cases): tags in LibTorch's profiler
// (the legacy profiler, which LibTorch 1.13's C++ API has), inferred tags, record_function,
// record_iterable, tracing from threads with the global and per-thread switches; plus what the
// C++ API adds: options, defer/complete, "off does nothing", and the Chrome trace format checked
// event by event (trace-event "X" events; nested scopes contained in their parents).
#include "ppe_test.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <ppe/profiler/chrome_trace_json.hpp>
#include <ppe/profiler/record.hpp>
#include <ppe/profiler/tracing.hpp>
#include <ppe/writing/simple_writer.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_profiler_tests_test_record {

namespace prof = ppe::profiler;
namespace legacy = torch::autograd::profiler;

namespace {

// Stops LibTorch's legacy profiler: the names of the ranges it saw.
std::set<std::string> stop_profiler() {
  std::set<std::string> names;
  for (const auto& thread_events : legacy::disableProfilerLegacy())
    for (const auto& e : thread_events)
      if (e.kindStr() == "push") names.insert(e.name());
  return names;
}

// The names of the ranges LibTorch's legacy profiler saw while `body` ran.
template <class F>
std::set<std::string> profiled_names(F&& body) {
  legacy::enableProfilerLegacy(legacy::ProfilerConfig(legacy::ProfilerState::CPU));
  prof::notify_torch_profiler_started();
  try {
    body();
  } catch (...) {
    legacy::disableProfilerLegacy();
    throw;
  }
  return stop_profiler();
}

std::int64_t fake_now = 0;
int fake_reads = 0;
std::int64_t fake_clock() {
  ++fake_reads;
  return fake_now;
}

torch::nn::Linear make_model() { return torch::nn::Linear(30, 40); }
// PPE checks for "aten::linear"; LibTorch 1.13's C++ Linear module runs aten::matmul and aten::add_.
constexpr const char* kLinearOp = "aten::matmul";
torch::Tensor input() { return torch::arange(30, torch::kFloat32); }

std::int64_t count_of(prof::TimeSummary& s, const std::string& tag) {
  for (const auto& [k, v] : s.summary())
    if (k == tag) return v.count;
  return 0;
}

// The function PPE's test_record_function_without_tag names; here it infers its tag.
void my_run(torch::nn::Linear& model, prof::TimeSummary& summary) {
  auto r = prof::record(prof::RecordOptions().summary(&summary));
  model(input());
}

}  // namespace

// PPE test_record.
TEST_CASE("PPE test_record: the tag is a range in LibTorch's profiler") {
  auto model = make_model();
  prof::TimeSummary summary;
  const auto names = profiled_names([&] {
    prof::Record r("my_tag_1", prof::RecordOptions().summary(&summary));
    model(input());
  });
  CHECK(names.count("my_tag_1") == 1);
  CHECK(names.count(kLinearOp) == 1);
  CHECK(count_of(summary, "my_tag_1") == 1);
}

// A profiler started without notify_torch_profiler_started: a thread that
// was told "no profiler" asks LibTorch again once kTorchRecheckNs has passed.
TEST_CASE("a LibTorch profiler started directly gets the ranges after the recheck interval") {
  prof::TimeSummary summary;
  { prof::Record before("before", prof::RecordOptions().summary(&summary)); }  // caches "no profiler"
  legacy::enableProfilerLegacy(legacy::ProfilerConfig(legacy::ProfilerState::CPU));
  std::this_thread::sleep_for(std::chrono::nanoseconds(2 * prof::detail::kTorchRecheckNs));
  { prof::Record r("after_interval", prof::RecordOptions().summary(&summary)); }
  const auto names = stop_profiler();
  CHECK(names.count("after_interval") == 1);
  CHECK(names.count("before") == 0);
}

// torch_range(false): the TimeSummary entry without the LibTorch range.
TEST_CASE("torch_range(false) leaves LibTorch's profiler out") {
  prof::TimeSummary summary;
  const auto names = profiled_names([&] {
    prof::Record r("no_range", prof::RecordOptions().summary(&summary).torch_range(false));
  });
  CHECK(names.count("no_range") == 0);
  CHECK(count_of(summary, "no_range") == 1);
}

// PPE test_record_without_tag: "<file stem>:<line>:<function>".
TEST_CASE("PPE test_record_without_tag: the tag is inferred from the caller") {
  auto model = make_model();
  prof::TimeSummary summary;
  const auto names = profiled_names([&] { my_run(model, summary); });
  CHECK(names.count(kLinearOp) == 1);
  const auto s = summary.summary();
  REQUIRE(s.size() == 1);
  const std::string& tag = s[0].first;
  CHECK(tag.starts_with("test_record:"));
  CHECK(tag.ends_with(":my_run"));
  CHECK(names.count(tag) == 1);
}

// PPE test_record_function.
TEST_CASE("PPE test_record_function: a wrapped callable runs in a scope") {
  auto model = make_model();
  prof::TimeSummary summary;
  auto run = prof::record_function(
      "my_tag_2", [&model](const torch::Tensor& x) { return model(x); }, prof::RecordOptions().summary(&summary));
  torch::Tensor y;
  const auto names = profiled_names([&] { y = run(input()); });
  CHECK(names.count("my_tag_2") == 1);
  CHECK(names.count(kLinearOp) == 1);
  CHECK(y.sizes() == torch::IntArrayRef{40});
  (void)run(input());
  CHECK(count_of(summary, "my_tag_2") == 2);
}

// PPE test_record_iterable: one scope per element, "<tag>-<i>"; the metric is the tag.
TEST_CASE("PPE test_record_iterable: elements are tagged <tag>-<i>") {
  auto model = make_model();
  prof::TimeSummary summary;
  const std::vector<torch::Tensor> iters = {input(), input(), input()};
  int seen = 0;
  const auto names = profiled_names([&] {
    for (const auto& x : prof::record_iterable("my_tag_3", iters, false, prof::RecordOptions().summary(&summary))) {
      model(x);
      ++seen;
    }
  });
  CHECK(seen == 3);
  CHECK(names.count(kLinearOp) == 1);
  for (const char* tag : {"my_tag_3-0", "my_tag_3-1", "my_tag_3-2"}) CHECK(names.count(tag) == 1);
  CHECK(names.count("my_tag_3-3") == 0);
  const auto s = summary.summary();
  REQUIRE(s.size() == 1);
  CHECK(s[0].first == "my_tag_3");
  CHECK(s[0].second.count == 3);
}

// What a record_iterable scope times: the loop body's work on its element (PPE's generator yields
// inside the record), with divide_metric one entry per element; an rvalue range is moved in.
TEST_CASE("record_iterable times each element's body; divide_metric") {
  prof::TimeSummary summary(&fake_clock);
  fake_now = 0;
  std::int64_t i = 0;
  for (int x : prof::record_iterable("it", std::vector<int>{1, 2, 3}, true, prof::RecordOptions().summary(&summary))) {
    CHECK(x == ++i);
    fake_now += x * 100'000'000;  // the body of element k lasts k * 0.1 s
  }
  const auto s = summary.summary();
  REQUIRE(s.size() == 3);
  CHECK(s[0].first == "it-0");
  CHECK(s[0].second.sum == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(s[1].first == "it-1");
  CHECK(s[1].second.sum == doctest::Approx(0.2).epsilon(1e-15));
  CHECK(s[2].first == "it-2");
  CHECK(s[2].second.sum == doctest::Approx(0.3).epsilon(1e-15));

  // Leaving the loop early closes the current element's scope; an empty range records nothing.
  summary.clear();
  for (int x : prof::record_iterable("early", std::vector<int>{1, 2, 3}, false, prof::RecordOptions().summary(&summary)))
    if (x == 2) break;
  CHECK(count_of(summary, "early") == 2);
  for (int x : prof::record_iterable("none", std::vector<int>{}, false, prof::RecordOptions().summary(&summary)))
    (void)x;
  CHECK(count_of(summary, "none") == 0);
}

// Off (enable and trace false): nothing at all, not even a clock read or a LibTorch range.
TEST_CASE("a disabled record does nothing") {
  prof::TimeSummary summary(&fake_clock);
  prof::ChromeTracer tracer;
  fake_reads = 0;
  const auto off = prof::RecordOptions().enable(false).trace(false).summary(&summary).tracer(&tracer);
  const auto names = profiled_names([&] {
    prof::Record r("off_tag", off);
    r.complete();
    auto inferred = prof::record(off);
    for (int x : prof::record_iterable("off_it", std::vector<int>{1, 2}, false, off)) (void)x;
    prof::record_function("off_fn", [] {}, off)();
  });
  CHECK(fake_reads == 0);
  CHECK(summary.summary().empty());
  CHECK(tracer.event_count() == 0);
  for (const char* n : {"off_tag", "off_it-0", "off_fn"}) CHECK(names.count(n) == 0);
}

// enable feeds the TimeSummary, trace the tracer (PPE 0.9.0 has them the other way round).
TEST_CASE("enable feeds the TimeSummary, trace the tracer; metric names the entry") {
  prof::TimeSummary summary;
  prof::ChromeTracer tracer;
  const auto base = prof::RecordOptions().summary(&summary).tracer(&tracer);
  { prof::Record r("only_summary", base); }
  { prof::Record r("only_trace", prof::RecordOptions(base).enable(false).trace(true)); }
  { prof::Record r("both", prof::RecordOptions(base).trace(true).metric("both_metric")); }
  CHECK(count_of(summary, "only_summary") == 1);
  CHECK(count_of(summary, "only_trace") == 0);
  CHECK(count_of(summary, "both") == 0);
  CHECK(count_of(summary, "both_metric") == 1);
  const auto events = tracer.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].name == "only_trace");
  CHECK(events[1].name == "both");  // the tracer uses the tag, not the metric
}

// A Record borrows its tag: a temporary std::string is rejected at compile time.
static_assert(!std::is_constructible_v<prof::Record, std::string>);
static_assert(std::is_constructible_v<prof::Record, std::string&>);
static_assert(std::is_constructible_v<prof::Record, const char*>);
static_assert(std::is_constructible_v<prof::Record, std::string_view>);

// use_cuda is accepted; on a CPU-only LibTorch it adds nothing.
TEST_CASE("use_cuda is accepted without CUDA") {
  prof::TimeSummary summary;
  { prof::Record r("c", prof::RecordOptions().summary(&summary).use_cuda(true)); }
  CHECK(count_of(summary, "c") == 1);
  if (!torch::cuda::is_available()) CHECK(count_of(summary, "c.cuda") == 0);
}

// PPE test_record_iterable_with_trace: a traced scope, flushed to a file.
TEST_CASE("PPE test_record_iterable_with_trace") {
  prof::clear_tracer();
  auto model = make_model();
  ppe_test::TempDir dir;
  ppe::writing::SimpleWriter w(dir.path);
  {
    prof::Record r("tag", prof::RecordOptions().enable(false).trace(true));
    model(input());
  }
  prof::get_tracer().flush("trace.json", w);
  CHECK(std::filesystem::exists(dir / "trace.json"));
  prof::clear_tracer();
}

namespace {
// PPE's thread tests: 10 threads, 10 traced records each; `setup(i)` runs first in thread i.
template <class Setup>
std::int64_t traced_from_threads(Setup setup) {
  prof::clear_tracer();
  std::vector<std::thread> threads;
  for (int i = 0; i < 10; ++i)
    threads.emplace_back([i, &setup] {
      setup(i);
      const std::string tag = std::to_string(i);  // a Record borrows its tag
      for (int k = 0; k < 10; ++k) prof::Record r(tag, prof::RecordOptions().enable(false).trace(true));
      prof::enable_thread_trace(true);
    });
  for (auto& t : threads) t.join();
  const std::int64_t n = prof::get_tracer().event_count();
  ppe_test::TempDir dir;
  ppe::writing::SimpleWriter w(dir.path);
  prof::get_tracer().flush("trace.json", w);
  CHECK(std::filesystem::exists(dir / "trace.json"));
  prof::clear_tracer();
  return n;
}
}  // namespace

TEST_CASE("PPE test_record_iterable_with_threads") { CHECK(traced_from_threads([](int) {}) == 100); }

TEST_CASE("PPE test_record_iterable_with_thread_disabled") {
  CHECK(traced_from_threads([](int i) {
          if (i == 0) prof::enable_thread_trace(false);
        }) == 90);
}

TEST_CASE("PPE test_record_iterable_with_all_thread_disabled") {
  prof::enable_global_trace(false);
  const std::int64_t n = traced_from_threads([](int) {});
  prof::enable_global_trace(true);
  CHECK(n == 0);
}

// The trace file read back and checked against the trace-event format's "X" (complete) events:
// name, ph, ts, dur, pid, tid present with the right types, ts and dur non-negative, and nested
// scopes inside their parents (same thread, [ts, ts + dur] contained).
TEST_CASE("the Chrome trace file, event by event") {
  for (bool append : {true, false}) {
    CAPTURE(append);
    auto tracer = std::make_shared<prof::ChromeTracer>(std::nullopt, true, append);
    const auto traced = prof::RecordOptions().enable(false).trace(true).tracer(tracer.get());
    ppe_test::TempDir dir;
    ppe::writing::SimpleWriter w(dir.path);
    tracer->initialize_writer("trace.json", w);
    {
      prof::Record outer("outer", traced);
      { prof::Record inner("inner", traced); }
      std::thread([&] { prof::Record other("other_thread", traced); }).join();
    }
    tracer->flush("trace.json", w);
    { prof::Record last("last", traced); }
    tracer->flush("trace.json", w);

    const std::string text = ppe_test::read_file(dir / "trace.json");
    CHECK(text.starts_with("["));
    CHECK(text.ends_with(append ? "}," : "}\n]"));
    const nlohmann::json events = prof::load_chrome_trace_as_json(dir / "trace.json");
    REQUIRE(events.is_array());
    REQUIRE(events.size() == 4);
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& e : events) {
      REQUIRE(e.is_object());
      CHECK(e.size() == 7);
      CHECK(e.at("name").is_string());
      CHECK(e.at("cat") == "");
      CHECK(e.at("ph") == "X");
      CHECK(e.at("ts").is_number_float());
      CHECK(e.at("dur").is_number_float());
      CHECK(e.at("pid").is_number_integer());
      CHECK(e.at("tid").is_number_integer());
      CHECK(e.at("ts").get<double>() >= 0.0);
      CHECK(e.at("dur").get<double>() >= 0.0);
      CHECK(e.at("pid").get<std::int64_t>() == static_cast<std::int64_t>(::getpid()));
      by_name[e.at("name").get<std::string>()] = e;
    }
    REQUIRE(by_name.size() == 4);
    const auto& outer = by_name.at("outer");
    const auto& inner = by_name.at("inner");
    const auto& other = by_name.at("other_thread");
    const auto end = [](const nlohmann::json& e) { return e.at("ts").get<double>() + e.at("dur").get<double>(); };
    CHECK(inner.at("tid") == outer.at("tid"));
    CHECK(other.at("tid") != outer.at("tid"));
    CHECK(inner.at("ts").get<double>() >= outer.at("ts").get<double>());
    CHECK(end(inner) <= end(outer) + 1e-3);  // microseconds: allow float rounding
    CHECK(other.at("ts").get<double>() >= outer.at("ts").get<double>());
    CHECK(end(other) <= end(outer) + 1e-3);
    CHECK(by_name.at("last").at("ts").get<double>() >= end(outer) - 1e-3);
  }
}

// The exact bytes (expected text from Python's json.dumps on the same events).
TEST_CASE("trace events are written as PPE writes them") {
  const std::vector<prof::TraceEvent> events = {{"a/b", 1234.5, 0.25, 7, 8},
                                                {"caf\xc3\xa9\n", 1e13, 3.0, 7, 9}};
  CHECK(prof::format_trace_events(events, false) ==
        "[\n    {\n        \"name\": \"a/b\",\n        \"cat\": \"\",\n        \"ph\": \"X\",\n        \"ts\": "
        "1234.5,\n        \"dur\": 0.25,\n        \"pid\": 7,\n        \"tid\": 8\n    },\n    {\n        \"name\": "
        "\"caf\\u00e9\\n\",\n        \"cat\": \"\",\n        \"ph\": \"X\",\n        \"ts\": 10000000000000.0,\n   "
        "     \"dur\": 3.0,\n        \"pid\": 7,\n        \"tid\": 9\n    }\n]");
  CHECK(prof::format_trace_events(events, true) ==
        "\n{\n    \"name\": \"a/b\",\n    \"cat\": \"\",\n    \"ph\": \"X\",\n    \"ts\": 1234.5,\n    \"dur\": "
        "0.25,\n    \"pid\": 7,\n    \"tid\": 8\n},\n{\n    \"name\": \"caf\\u00e9\\n\",\n    \"cat\": \"\",\n    "
        "\"ph\": \"X\",\n    \"ts\": 10000000000000.0,\n    \"dur\": 3.0,\n    \"pid\": 7,\n    \"tid\": 9\n},");
  CHECK(prof::trace_events_to_json_string(events) ==
        "[{\"name\": \"a/b\", \"cat\": \"\", \"ph\": \"X\", \"ts\": 1234.5, \"dur\": 0.25, \"pid\": 7, \"tid\": 8}, "
        "{\"name\": \"caf\\u00e9\\n\", \"cat\": \"\", \"ph\": \"X\", \"ts\": 10000000000000.0, \"dur\": 3.0, "
        "\"pid\": 7, \"tid\": 9}]");
  CHECK(prof::format_trace_events({}, false) == "[]");
  CHECK(prof::format_trace_events({}, true).empty());
  CHECK(prof::trace_events_from_json(nlohmann::json::parse(prof::trace_events_to_json_string(events))) == events);
}

TEST_CASE("load_chrome_trace_as_json closes an append-mode file") {
  ppe_test::TempDir dir;
  ppe_test::write_file(dir / "only_open.json", "[");
  CHECK(prof::load_chrome_trace_as_json(dir / "only_open.json") == nlohmann::json::array());
  ppe_test::write_file(dir / "bad.json", "[{");
  CHECK_THROWS_AS(prof::load_chrome_trace_as_json(dir / "bad.json"), std::runtime_error);
  CHECK_THROWS_AS(prof::load_chrome_trace_as_json(dir / "missing.json"), std::runtime_error);
  // A directory opens as a stream on Linux: the error names it and says why.
  const std::string sub = (dir / "sub.json").string();
  std::filesystem::create_directory(sub);
  CHECK_THROWS_WITH_AS(prof::load_chrome_trace_as_json(sub), doctest::Contains((sub + "': Is a directory").c_str()),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(prof::load_chrome_trace_as_json(dir / "missing.json"),
                       doctest::Contains("missing.json': No such file or directory"), std::runtime_error);
}

// ChromeTracer's limit, switch and state (PPE's layout: _enable, _event_list, _max_event_count, _event_count).
TEST_CASE("ChromeTracer: max_event_count, enable, state round trip") {
  prof::ChromeTracer tracer(2);
  for (int i = 0; i < 3; ++i) {
    auto e = tracer.add_event("e");
  }
  CHECK(tracer.event_count() == 2);
  tracer.enable(false);
  { auto e = tracer.add_event("off"); }
  CHECK(tracer.event_count() == 2);

  const ppe::State s = tracer.state_dict();
  CHECK(s.at("_enable").as_bool() == false);
  CHECK(s.at("_max_event_count").as_int() == 2);
  CHECK(s.at("_event_count").as_int() == 2);
  CHECK(s.at("_event_list").as_string() == prof::trace_events_to_json_string(tracer.events()));
  prof::ChromeTracer restored;
  CHECK(std::isinf(restored.state_dict().at("_max_event_count").as_double()));
  restored.load_state_dict(s);
  CHECK(restored.events() == tracer.events());
  CHECK(restored.event_count() == 2);
  CHECK_FALSE(restored.enabled());
  CHECK(restored.state_dict() == s);
  { auto e = restored.add_event("x"); }  // disabled, and at the limit
  CHECK(restored.event_count() == 2);
  CHECK_THROWS_AS(prof::ChromeTracer(-1), std::invalid_argument);
}

TEST_CASE("trace_events_from_json: wrong types are std::invalid_argument naming the key") {
  const auto events = [](const char* text) { return prof::trace_events_from_json(nlohmann::json::parse(text)); };
  // nlohmann's type_error escaped before, and a float pid was cast out of range.
  CHECK_THROWS_WITH_AS(events(R"([{"name": 5, "ts": 1, "dur": 2, "pid": 3, "tid": 4}])"),
                       doctest::Contains("'name' is not a string"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(events(R"([{"name": "a", "ts": "1", "dur": 2, "pid": 3, "tid": 4}])"),
                       doctest::Contains("'ts' is not a number"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(events(R"([{"name": "a", "ts": 1, "dur": 2, "pid": 1e300, "tid": 4}])"),
                       doctest::Contains("'pid' is not an integer"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(events(R"([{"name": "a", "ts": 1, "dur": 2, "pid": 3, "tid": 18446744073709551615}])"),
                       doctest::Contains("'tid' is not an int64 integer"), std::invalid_argument);
  const auto ok = events(R"([{"name": "a", "ts": 1, "dur": 2.5, "pid": 3, "tid": -4}])");
  REQUIRE(ok.size() == 1);
  CHECK((ok[0].name == "a" && ok[0].ts == 1.0 && ok[0].dur == 2.5 && ok[0].pid == 3 && ok[0].tid == -4));
}

}  // namespace ppe_test_profiler_tests_test_record
