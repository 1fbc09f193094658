// Port of PPE's tests/.../training_tests/test_extension_entry.py.
#include "ppe_test.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_test_extension_entry {

namespace tr = ppe::training;

namespace {
struct Ext {
  using extension_concept = tr::extension_tag;
  static constexpr std::string_view default_name = "Ext";
  void operator()(tr::Manager&) {}
};
}  // namespace

TEST_CASE("entry: explicit name wins over the default name") {
  auto e = tr::entry(Ext{}, ppe::iterations(1), "explicit");
  CHECK(e.name == "explicit");
  auto m = ppe_test::make_manager(1, 1, e, tr::entry(Ext{}));
  CHECK(m.extension_names() == std::vector<std::string>{"explicit", "Ext"});
}

TEST_CASE("entry: explicit priority wins over the class priority") {
  auto e = tr::entry(Ext{}, ppe::iterations(1), tr::priority<10>);
  CHECK(decltype(e)::priority == 10);
  CHECK(decltype(tr::entry(Ext{}))::priority == 100);
}

TEST_CASE("entry: triggers") {
  auto a = tr::entry(Ext{});
  CHECK(a.trigger.period() == 1);
  CHECK(a.trigger.unit() == tr::Unit::Iteration);
  auto b = tr::entry(Ext{}, ppe::epochs(3));
  CHECK(b.trigger.period() == 3);
  CHECK(b.trigger.unit() == tr::Unit::Epoch);
  // A callable bool(const Manager&) is a trigger as is.
  auto c = tr::entry(Ext{}, [](const tr::Manager& m) { return m.iteration() == 3; });
  static_assert(tr::trigger<decltype(c.trigger)>);
}

TEST_CASE("entry: call_before_training as a tag or a bool") {
  CHECK(tr::entry(Ext{}, ppe::iterations(1), tr::call_before_training).call_before_training);
  CHECK(tr::entry(Ext{}, ppe::iterations(1), "n", tr::priority<1>, true).call_before_training);
  CHECK_FALSE(tr::entry(Ext{}, ppe::iterations(1), "n").call_before_training);
}

}  // namespace ppe_test_training_tests_test_extension_entry
