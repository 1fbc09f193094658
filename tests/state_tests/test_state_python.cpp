// Cross-check with Python: a manager state written with ppe::serialization::pickle_dumps is
// read by Python's torch.load with PPE's snapshot layout, and a file written by
// Python's torch.save is read by ppe::serialization::pickle_loads. Needs a Python with torch
// (Debian's python3-torch); without one the Python half is skipped with a
// message, the C++ half still runs.
#include "ppe_test.hpp"
#include "python.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <random>
#include <sstream>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_state_tests_test_state_python {

namespace fs = std::filesystem;

namespace {


using ppe_test::Output;
using ppe_test::TempDir;
using ppe_test::python_with_torch;
using ppe_test::read_bytes;
using ppe_test::run;
using ppe_test::run_python;
using ppe_test::write_file;

/// `[[a, b, c], [d, e, f]]` with float32 round-trip precision.
std::string python_list(const torch::Tensor& t) {
  std::ostringstream os;
  os << std::setprecision(9);
  if (t.dim() == 1) {
    os << '[';
    for (int64_t i = 0; i < t.size(0); ++i) os << (i ? ", " : "") << t[i].item<double>();
    os << ']';
    return os.str();
  }
  os << '[';
  for (int64_t i = 0; i < t.size(0); ++i) os << (i ? ", " : "") << python_list(t[i]);
  os << ']';
  return os.str();
}

/// An extension with state (saved under extensions/Counter/extension).
struct Counter {
  using extension_concept = ppe::training::extension_tag;
  static constexpr std::string_view default_name = "Counter";
  std::int64_t calls = 0;
  std::vector<double> history;
  void operator()(ppe::training::Manager& m) {
    ++calls;
    history.push_back(m.epoch_detail());
  }
  ppe::State state_dict() const {
    ppe::State h = ppe::State::list();
    for (double x : history) h.as_list().emplace_back(x);
    return ppe::State::dict({{"calls", calls}, {"label", "counter"}, {"history", std::move(h)}, {"done", false}});
  }
  void load_state_dict(const ppe::State& s) { calls = s.at("calls").as_int(); }
};

}  // namespace

TEST_CASE("Python's torch.load reads a manager state written by ppe::serialization::pickle_dumps") {
  TempDir dir;
  torch::manual_seed(0);
  torch::nn::Linear model(3, 2);
  {
    torch::NoGradGuard no_grad;
    model->weight.copy_(torch::arange(6, torch::kFloat).reshape({2, 3}).div(10));
    model->bias.copy_(torch::tensor({0.5f, -0.5f}));
  }
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  ppe_test::FakeClock clock;
  auto manager = ppe::training::ExtensionsManager(
      ppe_test::options(10, 4).clock(clock.fn()), model, optimizer, Counter{},
      ppe::training::make_extension([](ppe::training::Manager&) {}, ppe::epochs(1), "every_epoch"));
  const torch::Tensor x = torch::tensor({{1.0f, 2.0f, 3.0f}});
  for (int i = 0; i < 5; ++i) {
    manager.run_iteration([&] {
      optimizer.zero_grad();
      model->forward(x).sum().backward();
      optimizer.step();
    });
    clock.advance(0.5);
  }
  const ppe::State state = manager.state_dict();
  REQUIRE(state.at("_start_iteration").as_int() == 5);
  REQUIRE(state.at("_elapsed_time").as_double() == 2.5);  // 5 × 0.5 s on the fake clock
  const fs::path file = dir.path / "snapshot.pt";
  write_file(file, ppe::serialization::pickle_dumps(state));
  REQUIRE(fs::file_size(file) > 0);
  // The C++ reader agrees with itself before Python is asked.
  CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(read_bytes(file)), state));

  if (python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping");
    return;
  }
  // Counter's history: epoch_detail at iterations 1..5 with 4 per epoch.
  const std::string script = R"PY(
import sys, torch
d = torch.load(sys.argv[1])
print("keys", list(d.keys()))
# PPE's keys in PPE's order (spec 1.7), then only our own "_"-keys that PPE lacks.
assert list(d.keys())[:7] == ["_start_iteration", "_start_execution", "models", "optimizers",
                              "state_objects", "extensions", "ppe_version"], list(d.keys())
extras = list(d.keys())[7:]
assert "_elapsed_time" in extras and all(k.startswith("_") for k in extras), extras
assert type(d["_start_iteration"]) is int and d["_start_iteration"] == 5
assert type(d["_start_execution"]) is int and d["_start_execution"] == 5
m = d["models"]["main"]
assert list(m.keys()) == ["weight", "bias"], list(m.keys())
assert isinstance(m["weight"], torch.Tensor) and m["weight"].dtype == torch.float32
assert m["weight"].shape == (2, 3) and not m["weight"].requires_grad
assert torch.equal(m["weight"], torch.tensor(WEIGHT, dtype=torch.float32)), m["weight"]
assert torch.equal(m["bias"], torch.tensor(BIAS, dtype=torch.float32)), m["bias"]
o = d["optimizers"]["main"]
assert o["state"] == {}
pg = o["param_groups"]
assert isinstance(pg, list) and len(pg) == 1, pg
assert pg[0]["lr"] == 0.1 and pg[0]["params"] == [0, 1], pg
assert d["state_objects"] == {}
e = d["extensions"]
assert list(e.keys()) == ["Counter", "every_epoch"], list(e.keys())
assert e["Counter"] == {"extension": {"calls": 5, "label": "counter",
                                      "history": [0.25, 0.5, 0.75, 1.0, 1.25], "done": False},
                        "trigger": {}}, e["Counter"]
assert e["every_epoch"] == {"extension": {}, "trigger": {}}, e["every_epoch"]
assert d["ppe_version"] == VERSION, d["ppe_version"]
assert type(d["_elapsed_time"]) is float and d["_elapsed_time"] == 2.5
print("OK")
)PY";
  std::string filled = script;
  auto replace = [&filled](const std::string& what, const std::string& with) {
    const auto pos = filled.find(what);
    REQUIRE(pos != std::string::npos);
    filled.replace(pos, what.size(), with);
  };
  replace("WEIGHT", python_list(model->weight.detach()));
  replace("BIAS", python_list(model->bias.detach()));
  replace("VERSION", "\"" + std::string(ppe::kVersion) + "\"");
  const Output out = run_python(dir, filled, "'" + file.string() + "'");
  INFO(out.text);
  CHECK(out.status == 0);
  CHECK(out.text.find("OK\n") != std::string::npos);
}

TEST_CASE("ppe::serialization::pickle_loads reads a file written by Python's torch.save") {
  if (python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping");
    return;
  }
  TempDir dir;
  const fs::path file = dir.path / "from_python.pt";
  const std::string script = R"PY(
import sys, torch
torch.save({
    "weight": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "ids": torch.tensor([1, 2, 3]),
    "scalar": torch.tensor(2.5, dtype=torch.float64),
    "iteration": 7,
    "lr": 0.05,
    "whole": 2.0,
    "name": "main/loss",
    "flag": True,
    "none": None,
    "list": [1, 2.5, "x", [True]],
    "tuple": (1, "two"),
    "nested": {"a": {"b": -1}},
}, sys.argv[1])
print("saved")
)PY";
  const Output out = run_python(dir, script, "'" + file.string() + "'");
  INFO(out.text);
  REQUIRE(out.status == 0);
  const ppe::State s = ppe::serialization::pickle_loads(read_bytes(file));
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.as_dict()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"weight", "ids", "scalar", "iteration", "lr", "whole", "name", "flag", "none",
                                         "list", "tuple", "nested"});
  CHECK(ppe::serialization::state_equal(s.at("weight"), ppe::State(torch::arange(6, torch::kFloat).reshape({2, 3}))));
  CHECK(ppe::serialization::state_equal(s.at("ids"), ppe::State(torch::tensor({1, 2, 3}, torch::kLong))));
  CHECK(ppe::serialization::state_equal(s.at("scalar"), ppe::State(torch::tensor(2.5, torch::kDouble))));
  CHECK(s.at("iteration") == ppe::State(7));
  CHECK(s.at("lr") == ppe::State(0.05));
  CHECK(s.at("whole") == ppe::State(2.0));  // a double, not an int
  CHECK(s.at("name") == ppe::State("main/loss"));
  CHECK(s.at("flag") == ppe::State(true));
  CHECK(s.at("none").is_none());
  CHECK(s.at("list") == ppe::State::list({1, 2.5, "x", ppe::State::list({true})}));
  CHECK(s.at("tuple") == ppe::State::list({1, "two"}));  // tuples read as lists
  CHECK(s.at("nested") == ppe::State::dict({{"a", ppe::State::dict({{"b", -1}})}}));
}

TEST_CASE("a PPE-layout snapshot saved by Python loads into a manager") {
  if (python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping");
    return;
  }
  TempDir dir;
  const fs::path file = dir.path / "snapshot_iter_7.pt";
  // What PPE 0.9.0's manager.state_dict() holds for one model, one SGD
  // optimizer and one extension with state (spec §1.7): state_dict()s are
  // OrderedDicts with _metadata, param_groups a one-element list.
  const std::string script = R"PY(
import sys, torch
model = torch.nn.Linear(3, 2)
with torch.no_grad():
    model.weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4)
    model.bias.copy_(torch.tensor([0.25, -0.75]))
opt = torch.optim.SGD(model.parameters(), lr=0.125)
torch.save({
    "_start_iteration": 7,
    "_start_execution": 7,
    "models": {"main": model.state_dict()},
    "optimizers": {"main": opt.state_dict()},
    "state_objects": {},
    "extensions": {"Counter": {"extension": {"calls": 3}, "trigger": {}}},
    "ppe_version": "0.9.0",
}, sys.argv[1])
print("saved")
)PY";
  const Output out = run_python(dir, script, "'" + file.string() + "'");
  INFO(out.text);
  REQUIRE(out.status == 0);

  torch::nn::Linear model(3, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.5);
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(10, 4), model, optimizer, Counter{});
  std::vector<std::string> warnings;
  auto previous = ppe::set_warning_handler([&](std::string_view w) { warnings.emplace_back(w); });
  manager.load_state_dict(ppe::serialization::pickle_loads(read_bytes(file)));
  ppe::set_warning_handler(std::move(previous));

  CHECK(manager.iteration() == 7);
  // arange(6)/4 = 0, 0.25, ..., 1.25; exact in float32.
  CHECK(model->weight.equal(torch::arange(6, torch::kFloat).reshape({2, 3}).div(4)));
  CHECK(model->bias.equal(torch::tensor({0.25f, -0.75f})));
  CHECK(optimizer.param_groups()[0].options().get_lr() == 0.125);
  CHECK(manager.get_extension<Counter>("Counter").calls == 3);
  // Taken with PPE 0.9.0: the version warning names both versions.
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("0.9.0") != std::string::npos);
}

}  // namespace ppe_test_state_tests_test_state_python
