// Port of PPE's tests/.../extensions_tests/test_timeline_trace.py (test_tracer_tls with the
// process-wide tracer, test_tracer_object, test_tracer_no_append_object, test_tracer_enable), the
// 0.1 s sleeps left out (the event count is what they check); plus the file's layout, the
// flush schedule and the state.
#include "ppe_test.hpp"

#include <ppe/profiler/chrome_trace_json.hpp>
#include <ppe/profiler/record.hpp>
#include <ppe/profiler/tracing.hpp>
#include <ppe/training/extensions/timeline_trace.hpp>
#include <ppe/training/triggers/manual_schedule_trigger.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_timeline_trace {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace prof = ppe::profiler;

namespace {

template <class... Es>
auto make_manager(const ppe_test::TempDir& dir, double max_epochs, std::int64_t ipe, Es&&... exts) {
  return tr::ExtensionsManager(ppe_test::options(max_epochs, ipe).out_dir(dir.str()), tr::Models{}, tr::Optimizers{},
                               std::forward<Es>(exts)...);
}

// One iteration whose body is a traced scope "tag" (into `tracer`, or the process-wide one).
template <class M>
void traced_step(M& manager, prof::Tracer* tracer = nullptr) {
  manager.run_iteration([&] { prof::Record r("tag", prof::RecordOptions().enable(false).trace(true).tracer(tracer)); });
}

std::size_t events_in(const std::filesystem::path& p) { return prof::load_chrome_trace_as_json(p).size(); }

}  // namespace

// PPE test_tracer_tls: the process-wide tracer; 3 epochs of 5 iterations -> 15 events in the file.
TEST_CASE("PPE test_tracer_tls") {
  prof::clear_tracer();
  ppe_test::TempDir dir;
  auto manager = make_manager(dir, 3, 5, ext::TimelineTrace(ext::TimelineTraceOptions().filename("trace.json")));
  for (int i = 0; i < 15; ++i) traced_step(manager);
  CHECK(events_in(dir / "trace.json") == 15);
  prof::clear_tracer();
}

// PPE test_tracer_object (append) and test_tracer_no_append_object: a tracer of one's own; its
// event count grows by one per iteration; the file holds every event.
TEST_CASE("PPE test_tracer_object / test_tracer_no_append_object") {
  for (bool append : {true, false}) {
    CAPTURE(append);
    auto tracer = std::make_shared<prof::ChromeTracer>(std::nullopt, true, append);
    ppe_test::TempDir dir;
    auto manager =
        make_manager(dir, 3, 5, ext::TimelineTrace(ext::TimelineTraceOptions().filename("trace.json").tracer(tracer)));
    for (int count = 1; count <= 15; ++count) {
      traced_step(manager, tracer.get());
      CHECK(tracer->event_count() == count);
      // Flushed at each epoch's end: append mode forgets what it wrote, the other keeps it.
      if (count % 5 == 0) {
        CHECK(events_in(dir / "trace.json") == static_cast<std::size_t>(count));
        CHECK(tracer->events().size() == (append ? 0u : static_cast<std::size_t>(count)));
      }
    }
    const std::string text = ppe_test::read_file(dir / "trace.json");
    CHECK(text.starts_with(append ? "[\n{\n    \"name\": \"tag\",\n    \"cat\": \"\",\n    \"ph\": \"X\",\n"
                                  : "[\n    {\n        \"name\": \"tag\",\n        \"cat\": \"\",\n"));
    CHECK(text.ends_with(append ? "},": "    }\n]"));
  }
}

// PPE test_tracer_enable: disabled at iteration 10, enabled again at 15; 4 epochs of 5 -> the
// iterations 1-10 and 16-20 are traced: 20 - 10 + 5 = 15 events.
TEST_CASE("PPE test_tracer_enable: enable and disable triggers") {
  auto tracer = std::make_shared<prof::ChromeTracer>();
  ppe_test::TempDir dir;
  auto manager = make_manager(dir, 4, 5,
                              ext::TimelineTrace(ext::TimelineTraceOptions()
                                                     .filename("trace.json")
                                                     .tracer(tracer)
                                                     .enable(tr::triggers::ManualScheduleTrigger(15, "iteration"))
                                                     .disable(tr::triggers::ManualScheduleTrigger(10, "iteration"))));
  for (int it = 1; it <= 20; ++it) {
    traced_step(manager, tracer.get());
    CHECK(tracer->enabled() == (it < 10 || it >= 15));
  }
  CHECK(tracer->event_count() == 15);
  CHECK(events_in(dir / "trace.json") == 15);
}

// The file is opened with "[" at initialize and flushed only at the trigger (not before
// training), and once more by finalize.
TEST_CASE("initialize, flush schedule and finalize") {
  auto tracer = std::make_shared<prof::ChromeTracer>();
  ppe_test::TempDir dir;
  auto manager = make_manager(dir, 10, 4,
                              ext::TimelineTrace(ext::TimelineTraceOptions().tracer(tracer).trigger(ppe::epochs(2))));
  manager.start_extensions();
  CHECK(ppe_test::read_file(dir / "chrome_trace.json") == "[");
  for (int i = 0; i < 7; ++i) traced_step(manager, tracer.get());
  CHECK(events_in(dir / "chrome_trace.json") == 0);  // the first flush is at iteration 8
  traced_step(manager, tracer.get());
  CHECK(events_in(dir / "chrome_trace.json") == 8);
  traced_step(manager, tracer.get());
  manager.finalize();
  CHECK(events_in(dir / "chrome_trace.json") == 9);
}

// State: PPE's {"_trigger", "_tracer"} (plus the enable/disable triggers' states when set); a
// restored extension and tracer continue where they were.
TEST_CASE("state round trip") {
  auto tracer = std::make_shared<prof::ChromeTracer>(std::nullopt, true, false);
  ppe_test::TempDir dir;
  auto manager = make_manager(dir, 2, 4, ext::TimelineTrace(ext::TimelineTraceOptions().tracer(tracer)));
  for (int i = 0; i < 2; ++i) traced_step(manager, tracer.get());
  const auto& tt = manager.get_extension<ext::TimelineTrace>("TimelineTrace");
  const ppe::State s = tt.state_dict();
  CHECK(s.size() == 2);
  CHECK(s.contains("_trigger"));
  CHECK(s.at("_tracer") == tracer->state_dict());
  CHECK(s.at("_tracer").at("_event_count").as_int() == 2);

  auto tracer2 = std::make_shared<prof::ChromeTracer>();
  ext::TimelineTrace restored(ext::TimelineTraceOptions().tracer(tracer2));
  restored.load_state_dict(s);
  CHECK(tracer2->events() == tracer->events());
  CHECK(restored.state_dict().at("_tracer") == s.at("_tracer"));

  ext::TimelineTrace with_triggers(
      ext::TimelineTraceOptions().tracer(tracer2).enable(ppe::iterations(3)).disable(ppe::iterations(5)));
  const ppe::State s2 = with_triggers.state_dict();
  CHECK(s2.contains("_enable_trigger"));
  CHECK(s2.contains("_disable_trigger"));
  with_triggers.load_state_dict(s2);
  CHECK_THROWS(restored.load_state_dict(ppe::State::dict()));
  CHECK_THROWS_AS(ext::TimelineTrace(ext::TimelineTraceOptions().filename("")), std::invalid_argument);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_timeline_trace
