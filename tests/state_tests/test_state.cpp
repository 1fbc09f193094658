// ppe::State (the library's one nested state type) and its serialization:
// IValue conversion and the pickle bytes that Python's torch.load reads.
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <ppe/detail/crc32.hpp>
#include <ppe/detail/torch_compat.hpp>

// LibTorch's pickler and archive writer, called directly to build test inputs
// (ppe's own headers keep them out of user code: serialization/impl/pickle.ipp).
#include <sys/types.h>  // off_t: in_memory_adapter.h uses it without including it

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <type_traits>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_state_tests_test_state {

using ppe::State;
using ppe::StateError;
using ppe_test::TempDir;

TEST_CASE("State kinds") {
  CHECK(State().kind() == State::Kind::None);
  CHECK(State(nullptr).is_none());
  CHECK(State(true).is_bool());
  CHECK(State(true).as_bool());
  CHECK(State(3).is_int());
  CHECK(State(std::int64_t{1} << 40).as_int() == (std::int64_t{1} << 40));
  CHECK(State(std::uint8_t{7}).as_int() == 7);
  CHECK(State(2.5).is_double());
  CHECK(State(2.5f).as_double() == 2.5);
  CHECK(State("abc").is_string());
  CHECK(State(std::string("abc")).as_string() == "abc");
  CHECK(State(std::string_view("xy")).as_string() == "xy");
  CHECK(State(torch::ones({2})).is_tensor());
  CHECK(State::list().is_list());
  CHECK(State::dict().is_dict());
  // An int is a number and reads as a double; a double does not read as an int.
  CHECK(State(3).is_number());
  CHECK(State(3).as_double() == 3.0);
  CHECK(State(2.5).is_number());
  CHECK_THROWS_AS(State(2.5).as_int(), StateError);
  CHECK_FALSE(State(true).is_number());
  // The names used in messages.
  CHECK(State::kind_name(State::Kind::Dict) == "dict");
  CHECK(State::kind_name(State::Kind::Tensor) == "tensor");
}

TEST_CASE("State dictionaries keep insertion order; set overwrites in place") {
  State d = State::dict({{"b", 1}, {"a", 2}, {"c", 3}});
  REQUIRE(d.size() == 3);
  auto keys = [&] {
    std::vector<std::string> out;
    for (const auto& [k, v] : d.as_dict()) out.push_back(k);
    return out;
  };
  CHECK(keys() == std::vector<std::string>{"b", "a", "c"});
  d.set("a", "replaced");
  CHECK(keys() == std::vector<std::string>{"b", "a", "c"});
  CHECK(d.at("a").as_string() == "replaced");
  d.set("d", 4);
  CHECK(keys() == std::vector<std::string>{"b", "a", "c", "d"});
  CHECK(d.contains("d"));
  CHECK_FALSE(d.contains("e"));
  CHECK(d.find("e") == nullptr);
  // set() returns the stored value; nested dictionaries are built in place.
  d.set("nested", State::dict()).set("x", 1.5);
  CHECK(d.at("nested").at("x").as_double() == 1.5);
  // set() on None makes a dictionary.
  State none;
  none.set("k", 1);
  CHECK(none.is_dict());
  CHECK(none.at("k").as_int() == 1);
  // find() on a non-dictionary is nullptr, not an error.
  CHECK(State(1).find("k") == nullptr);
}

TEST_CASE("State::at names the missing key and the keys present") {
  const State d = State::dict({{"alpha", 1}, {"beta", 2}});
  CHECK_THROWS_WITH_AS(d.at("gamma"), "ppe::State: key 'gamma' not found; keys present: ['alpha', 'beta']",
                       StateError);
  CHECK_THROWS_WITH_AS(State::dict().at("x"), "ppe::State: key 'x' not found; keys present: []", StateError);
  CHECK_THROWS_WITH_AS(State(3).at("x"), doctest::Contains("the state is a int, not a dict"), StateError);
}

TEST_CASE("State kind mismatches name both kinds") {
  CHECK_THROWS_WITH_AS(State("s").as_int(), "ppe::State: expected int, got string", StateError);
  CHECK_THROWS_WITH_AS(State(1).as_dict(), "ppe::State: expected dict, got int", StateError);
  CHECK_THROWS_WITH_AS(State().as_list(), "ppe::State: expected list, got None", StateError);
  CHECK_THROWS_WITH_AS(State(1.0).as_tensor(), "ppe::State: expected tensor, got double", StateError);
  CHECK_THROWS_WITH_AS(State(1).size(), doctest::Contains("expected a dict or a list, got int"), StateError);
  // StateError is a std::runtime_error.
  CHECK_THROWS_AS(State(1).as_string(), std::runtime_error);
}

TEST_CASE("copies of lists and dictionaries are deep; tensors are shared handles") {
  torch::Tensor t = torch::zeros({2});
  State a = State::dict({{"list", State::list({1, 2})}, {"dict", State::dict({{"x", 1}})}, {"t", t}});
  State b = a;
  CHECK(b == a);
  b.at("list").as_list().push_back(3);
  b.at("dict").set("y", 2);
  b.at("dict").set("x", 10);
  CHECK(a.at("list").size() == 2);
  CHECK(a.at("dict").size() == 1);
  CHECK(a.at("dict").at("x").as_int() == 1);
  CHECK(b.at("list").size() == 3);
  CHECK(b != a);
  // The tensor is the same tensor in both copies (a handle, as in Python).
  CHECK(b.at("t") == a.at("t"));
  b.at("t").as_tensor().fill_(7);
  CHECK(t[0].item<float>() == 7.0f);
  // Copy assignment is deep too, and self-assignment keeps the value.
  State c;
  c = a;
  c.at("list").as_list().clear();
  CHECK(a.at("list").size() == 2);
  State& alias = c;
  c = alias;
  CHECK(c.at("list").size() == 0);
  // Moves leave a usable source.
  State moved = std::move(c);
  CHECK(moved.at("list").size() == 0);
}

TEST_CASE("State equality") {
  CHECK(State() == State(nullptr));
  CHECK(State(1) == State(1));
  CHECK(State(1) != State(2));
  CHECK(State(1) != State(1.0));  // kinds differ: int vs double
  CHECK(State(true) != State(1));
  CHECK(State("a") == State(std::string("a")));
  CHECK(State::list({1, "x"}) == State::list({1, "x"}));
  CHECK(State::list({1, "x"}) != State::list({"x", 1}));
  // Dictionaries compare in order.
  CHECK(State::dict({{"a", 1}, {"b", 2}}) == State::dict({{"a", 1}, {"b", 2}}));
  CHECK(State::dict({{"a", 1}, {"b", 2}}) != State::dict({{"b", 2}, {"a", 1}}));
  CHECK(State::dict() != State::list());
  CHECK(State::dict() != State());
  // Tensors: operator== is identity, state_equal compares dtype, shape, values.
  torch::Tensor t = torch::arange(3);
  CHECK(State(t) == State(t));
  CHECK(State(t) != State(t.clone()));
  CHECK(ppe::serialization::state_equal(State(t), State(t.clone())));
  CHECK_FALSE(ppe::serialization::state_equal(State(t), State(t.to(torch::kDouble))));
  CHECK_FALSE(ppe::serialization::state_equal(State(t), State(t.reshape({3, 1}))));
  CHECK_FALSE(ppe::serialization::state_equal(State(t), State(t + 1)));
  CHECK(ppe::serialization::state_equal(State::dict({{"t", t}}), State::dict({{"t", t.clone()}})));
  CHECK_FALSE(ppe::serialization::state_equal(State::dict({{"t", t}}), State::dict({{"u", t}})));
  CHECK_FALSE(ppe::serialization::state_equal(State::list({t}), State::list({t, t})));
}

namespace {
/// A nested state with every kind: tensors of several dtypes and shapes, ints,
/// doubles, bools, None, strings, nested lists and dictionaries.
State sample_state() {
  State s = State::dict();
  s.set("_start_iteration", 11);
  s.set("int_max", std::numeric_limits<std::int64_t>::max());
  s.set("negative", -5);
  s.set("lr", 0.1);
  s.set("whole_double", 2.0);
  s.set("flag", true);
  s.set("off", false);
  s.set("nothing", nullptr);
  s.set("name", "main/loss");
  s.set("empty_string", "");
  s.set("weight", torch::arange(6, torch::kFloat).reshape({2, 3}));
  s.set("scalar", torch::tensor(3.5, torch::kDouble));
  s.set("ints", torch::tensor({1, 2, 3}, torch::kLong));
  s.set("mask", torch::tensor({true, false}));
  s.set("list", State::list({1, 2.5, "x", State(), State::list({true}), torch::ones({1})}));
  s.set("empty_list", State::list());
  s.set("empty_dict", State::dict());
  State models = State::dict();
  models.set("main", State::dict({{"fc.weight", torch::eye(2)}, {"fc.bias", torch::zeros({2})}}));
  s.set("models", std::move(models));
  s.set("param_groups", State::list({State::dict({{"lr", 0.01}, {"params", State::list({0, 1})}})}));
  return s;
}
}  // namespace

TEST_CASE("to_ivalue / from_ivalue round-trip a nested state") {
  const State s = sample_state();
  c10::IValue iv = ppe::serialization::to_ivalue(s);
  REQUIRE(iv.isGenericDict());
  CHECK(iv.toGenericDict().size() == s.size());
  const State back = ppe::serialization::from_ivalue(iv);
  CHECK(ppe::serialization::state_equal(back, s));
  // Ints stay ints and whole doubles stay doubles.
  CHECK(back.at("_start_iteration").is_int());
  CHECK(back.at("whole_double").is_double());
  CHECK(back.at("nothing").is_none());
  // The IValue dictionary keeps the insertion order.
  std::vector<std::string> keys;
  for (const auto& entry : iv.toGenericDict()) keys.push_back(entry.key().toStringRef());
  std::vector<std::string> expected;
  for (const auto& [k, v] : s.as_dict()) expected.push_back(k);
  CHECK(keys == expected);
}

TEST_CASE("pickle round trip of a nested state") {
  const State s = sample_state();
  const std::vector<char> bytes = ppe::serialization::pickle_dumps(s);
  CHECK_FALSE(bytes.empty());
  const State back = ppe::serialization::pickle_loads(bytes);
  CHECK(ppe::serialization::state_equal(back, s));
  CHECK(back.at("int_max").as_int() == std::numeric_limits<std::int64_t>::max());
  CHECK(back.at("whole_double").is_double());
  CHECK((back.at("weight").as_tensor().scalar_type() == torch::kFloat));
  CHECK(back.at("models").at("main").at("fc.weight").as_tensor().equal(torch::eye(2)));
  // The loaded tensors are copies, not the saved tensors.
  CHECK(back.at("weight") != s.at("weight"));
  // A second trip gives the same bytes' content again.
  CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(back)), s));
}

TEST_CASE("pickle round trip of plain values") {
  for (const State& s : {State(), State(true), State(-3), State(0.25), State("text"), State::list(), State::dict()}) {
    const std::string kind(State::kind_name(s.kind()));
    CAPTURE(kind);
    CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(s)), s));
  }
}

TEST_CASE("from_ivalue: tuples become lists, integer keys make an int dict, other keys are errors") {
  auto tuple = c10::ivalue::Tuple::create({c10::IValue(1), c10::IValue(std::string("a"))});
  CHECK(ppe::serialization::from_ivalue(c10::IValue(tuple)) == State::list({1, "a"}));

  c10::Dict<int64_t, double> int_keys;
  int_keys.insert(2, 0.5);
  int_keys.insert(1, 1.5);
  State ints = State::int_dict();
  ints.set("2", 0.5);
  ints.set("1", 1.5);
  CHECK(ppe::serialization::from_ivalue(c10::IValue(int_keys)) == ints);
  // Python's {0: x} and {"0": x} differ, so do the States.
  CHECK(ppe::serialization::from_ivalue(c10::IValue(int_keys)) != State::dict({{"2", 0.5}, {"1", 1.5}}));

  // Mixed keys: the integers become text.
  c10::impl::GenericDict mixed(c10::AnyType::get(), c10::AnyType::get());
  mixed.insert(c10::IValue(int64_t{3}), c10::IValue(1.0));
  mixed.insert(c10::IValue(std::string("a")), c10::IValue(2.0));
  const State m = ppe::serialization::from_ivalue(c10::IValue(mixed));
  CHECK_FALSE(m.has_int_keys());
  CHECK(m == State::dict({{"3", 1.0}, {"a", 2.0}}));

  c10::Dict<double, int64_t> double_keys;
  double_keys.insert(0.5, 1);
  CHECK_THROWS_WITH_AS(ppe::serialization::from_ivalue(c10::IValue(double_keys)), doctest::Contains("dictionary key of type Double"),
                       StateError);
  CHECK_THROWS_WITH_AS(ppe::serialization::from_ivalue(c10::IValue(c10::Device(c10::kCPU))),
                       doctest::Contains("has no ppe::State form"), StateError);
}

TEST_CASE("int dicts: integer keys as decimal text, kept through pickling") {
  State d = State::int_dict();
  CHECK(d.is_dict());
  CHECK(d.has_int_keys());
  CHECK_FALSE(State::dict().has_int_keys());
  d.set("0", 1.5);
  d.set("-7", "x");
  State inner = State::int_dict();
  inner.set("3", 1);
  d.set("12", inner);
  CHECK(d.at("0") == State(1.5));
  CHECK_THROWS_WITH_AS(d.set("a", 1), doctest::Contains("key 'a' is not an integer"), StateError);
  CHECK_THROWS_AS(d.set("", 1), StateError);
  CHECK_THROWS_AS(d.set("1.5", 1), StateError);
  const State copy = d;  // copies keep the flag
  CHECK(copy.has_int_keys());
  CHECK(copy == d);

  const c10::IValue iv = ppe::serialization::to_ivalue(d);
  REQUIRE(iv.isGenericDict());
  CHECK(iv.toGenericDict().keyType()->kind() == c10::TypeKind::IntType);
  CHECK(iv.toGenericDict().contains(int64_t{-7}));
  const State back = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(State::dict({{"state", d}})));
  CHECK(back.at("state").has_int_keys());
  CHECK(back.at("state").at("12").has_int_keys());
  CHECK(back.at("state") == d);
  // A pickle carries no key type (ppe writes no type tags, as Python does
  // not): an empty dict comes back as a dict of strings.
  CHECK_FALSE(ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(State::int_dict())).has_int_keys());
}

TEST_CASE("a manager's state survives pickling") {
  torch::manual_seed(0);
  torch::nn::Linear model(3, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(10, 4), model, optimizer);
  for (int i = 0; i < 3; ++i) ppe_test::step(manager);
  const State s = manager.state_dict();
  const State back = ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(s));
  CHECK(ppe::serialization::state_equal(back, s));
  CHECK(back.at("_start_iteration").as_int() == 3);
  CHECK(back.at("models").at("main").at("weight").as_tensor().equal(model->weight));

  // And loads into a fresh manager.
  torch::nn::Linear model2(3, 2);
  torch::optim::SGD optimizer2(model2->parameters(), 0.5);
  auto manager2 = ppe::training::ExtensionsManager(ppe_test::options(10, 4), model2, optimizer2);
  manager2.load_state_dict(back);
  CHECK(manager2.iteration() == 3);
  CHECK(model2->weight.equal(model->weight));
  CHECK(optimizer2.param_groups()[0].options().get_lr() == doctest::Approx(0.1));
}

// ---- files in Python's pickle encoding ------------------------------------------
// Python's pickler writes one-element lists with APPEND, one-item dicts with
// SETITEM and every state_dict() as an OrderedDict with a BUILD of its
// `_metadata`: LibTorch 1.13's C++ reader knows none of these, so
// ppe::serialization::pickle_loads rewrites them (detail::rewrite_python_pickle).

namespace {
using namespace std::string_literals;

/// A torch.save-style archive holding `program` as data.pkl and the given
/// storage records (data/0, data/1, ...), written with LibTorch's own writer.
std::vector<char> archive(const std::string& program, const std::vector<std::vector<float>>& storages = {}) {
  std::vector<char> bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&bytes](const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    bytes.insert(bytes.end(), p, p + n);
    return n;
  });
  writer.writeRecord("data.pkl", program.data(), program.size());
  for (std::size_t i = 0; i < storages.size(); ++i)
    writer.writeRecord("data/" + std::to_string(i), storages[i].data(), storages[i].size() * sizeof(float));
  writer.writeEndOfFile();
  return bytes;
}

// data.pkl of Python 3.11 `torch.save(torch.nn.Linear(2, 2).state_dict(), f)`
// (torch 1.13.1, protocol 2), byte for byte: an OrderedDict (GLOBAL
// collections.OrderedDict, REDUCE, SETITEMS) of two _rebuild_tensor_v2 tensors
// on storages "0" (4 floats) and "1" (2 floats), then BUILD with its
// {'_metadata': OrderedDict({'': {'version': 1}})} (nested SETITEMs).
const std::string kLinearStateDict =
    "\x80\x02""ccollections\nOrderedDict\nq\x00"")Rq\x01""(X\x06""\x00""\x00""\x00""weightq\x02"
    "ctorch._utils\n_rebuild_tensor_v2\nq\x03""((X\x07""\x00""\x00""\x00""storageq\x04"
    "ctorch\nFloatStorage\nq\x05""X\x01""\x00""\x00""\x00""0q\x06""X\x03""\x00""\x00""\x00""cpuq\x07"
    "K\x04""tq\x08""QK\x00""K\x02""K\x02""\x86""q\x09""K\x02""K\x01""\x86""q\n\x89""h\x00"")Rq\x0b"
    "tq\x0c""Rq\x0d""X\x04""\x00""\x00""\x00""biasq\x0e""h\x03""((h\x04""h\x05""X\x01""\x00""\x00""\x00"
    "1q\x0f""h\x07""K\x02""tq\x10""QK\x00""K\x02""\x85""q\x11""K\x01""\x85""q\x12""\x89""h\x00"")Rq\x13"
    "tq\x14""Rq\x15""u}q\x16""X\x09""\x00""\x00""\x00""_metadataq\x17""h\x00"")Rq\x18"
    "X\x00""\x00""\x00""\x00""q\x19""}q\x1a""X\x07""\x00""\x00""\x00""versionq\x1b""K\x01""sssb."s;

// data.pkl of `torch.save({'one': [True], 'single': {'k': -1}}, f)`: APPEND and SETITEM.
const std::string kOneElement =
    "\x80\x02""}q\x00""(X\x03""\x00""\x00""\x00""oneq\x01""]q\x02""\x88""aX\x06""\x00""\x00""\x00"
    "singleq\x03""}q\x04""X\x01""\x00""\x00""\x00""kq\x05""J\xff""\xff""\xff""\xff""su."s;
}  // namespace

TEST_CASE("pickle_loads reads Python's encoding of a state_dict") {
  REQUIRE(kLinearStateDict.size() == 290);  // as Python wrote it
  const State s = ppe::serialization::pickle_loads(archive(kLinearStateDict, {{1, 2, 3, 4}, {5, 6}}));
  // The OrderedDict's `_metadata` attribute is not an entry.
  CHECK(ppe::serialization::state_equal(s, State::dict({{"weight", torch::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}})},
                                         {"bias", torch::tensor({5.0f, 6.0f})}})));
  // LibTorch's own reader cannot: it reads the OrderedDict as None.
  CHECK_THROWS(torch::jit::pickle_load(archive(kLinearStateDict, {{1, 2, 3, 4}, {5, 6}})));
}

TEST_CASE("pickle_loads reads Python's one-element lists and one-item dicts") {
  REQUIRE(kOneElement.size() == 53);
  const State s = ppe::serialization::pickle_loads(archive(kOneElement));
  CHECK(s == State::dict({{"one", State::list({true})}, {"single", State::dict({{"k", -1}})}}));
  // LibTorch 1.13's own reader cannot (it lacks APPEND and SETITEM); 2.x's can.
  if (!PPE_TORCH_VERSION_AT_LEAST(2, 0)) CHECK_THROWS(torch::jit::pickle_load(archive(kOneElement)));
}

TEST_CASE("rewrite_python_pickle: the rewrites, byte for byte") {
  using ppe::detail::rewrite_python_pickle;
  // [1]: EMPTY_LIST BINPUT 0 BININT1 1 APPEND -> ... MARK BININT1 1 APPENDS
  CHECK(rewrite_python_pickle("\x80\x02]q\x00K\x01""a."s) == "\x80\x02]q\x00(K\x01""e."s);
  // {'k': 2}: the MARK goes before the key, ahead of the key's BINPUT.
  CHECK(rewrite_python_pickle("\x80\x02}q\x00X\x01\x00\x00\x00kq\x01K\x02s."s) ==
        "\x80\x02}q\x00(X\x01\x00\x00\x00kq\x01K\x02u."s);
  // OrderedDict(): GLOBAL, BINPUT, EMPTY_TUPLE, REDUCE -> EMPTY_DICT; the
  // slots after the dropped one renumbered (Python numbers them 0, 1, ...).
  CHECK(rewrite_python_pickle("\x80\x02""ccollections\nOrderedDict\nq\x00)Rq\x01."s) == "\x80\x02}q\x00."s);
  // An OrderedDict's BUILD is dropped with its state.
  CHECK(rewrite_python_pickle("\x80\x02""ccollections\nOrderedDict\nq\x00)Rq\x01}q\x02""b."s) ==
        "\x80\x02}q\x00."s);
  // Nothing to rewrite, protocol 4, unknown opcodes, no STOP: left to LibTorch.
  CHECK_FALSE(rewrite_python_pickle("\x80\x02](K\x01K\x02""e."s).has_value());
  CHECK_FALSE(rewrite_python_pickle("\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00]K\x01""a."s).has_value());
  CHECK_FALSE(rewrite_python_pickle("\x80\x02]K\x01""a"s).has_value());
  CHECK_FALSE(rewrite_python_pickle("\x80\x02]\x8f."s).has_value());
  // A memo slot written inside a dropped BUILD state and read afterwards: the
  // rewrite would break the program, so it declines.
  CHECK_FALSE(rewrite_python_pickle("\x80\x02](ccollections\nOrderedDict\nq\x00)Rq\x01}q\x02X\x01\x00\x00\x00zq\x03"
                                    "K\x01sbh\x03""e."s)
                  .has_value());
}

TEST_CASE("pickle_loads names a Python object a State cannot hold, the key where it is, and what to do") {
  // torch.save({'lr_scheduler': {'milestones': Counter({30: 1, 80: 1}), 'gamma': 0.5}}, f)'s
  // data.pkl: byte for byte what Python 3's pickle writes with protocol 2 (MultiStepLR keeps its
  // milestones in a collections.Counter, pickled as a call of the class on a dict):
  //   PROTO 2; EMPTY_DICT BINPUT 0;
  //   BINUNICODE 'lr_scheduler' BINPUT 1; EMPTY_DICT BINPUT 2; MARK          (the inner dict's SETITEMS)
  //   BINUNICODE 'milestones' BINPUT 3; GLOBAL 'collections\nCounter\n' BINPUT 4
  //   EMPTY_DICT BINPUT 5 MARK BININT1 30 BININT1 1 BININT1 80 BININT1 1 SETITEMS  ({30: 1, 80: 1})
  //   TUPLE1 BINPUT 6 REDUCE BINPUT 7                                            (Counter(that dict))
  //   BINUNICODE 'gamma' BINPUT 8 BINFLOAT 0.5; SETITEMS; SETITEM; STOP
  const std::string counter =
      "\x80\x02}q\x00"
      "X\x0c\x00\x00\x00lr_schedulerq\x01}q\x02("
      "X\x0a\x00\x00\x00milestonesq\x03""ccollections\nCounter\nq\x04"
      "}q\x05(K\x1eK\x01K\x50K\x01u\x85q\x06Rq\x07"
      "X\x05\x00\x00\x00gammaq\x08G\x3f\xe0\x00\x00\x00\x00\x00\x00"
      "us."s;
  std::string what;
  try {
    ppe::serialization::pickle_loads(archive(counter), "sched.pt");
  } catch (const ppe::StateError& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("sched.pt") != std::string::npos);
  CHECK(what.find("collections.Counter") != std::string::npos);
  CHECK(what.find("'lr_scheduler/milestones'") != std::string::npos);
  CHECK(what.find("convert") != std::string::npos);  // what to do
  CHECK(what.find("truncated") == std::string::npos);

  // {'fns': [1, functools.partial(print)]} (OneCycleLR's anneal_func is such a callable), as
  // Python's pickle writes it with protocol 2:
  //   EMPTY_DICT; BINUNICODE 'fns'; EMPTY_LIST; MARK BININT1 1
  //   GLOBAL 'functools\npartial\n' GLOBAL '__builtin__\nprint\n' TUPLE1 REDUCE   (partial(print))
  //   MARK BINGET print EMPTY_TUPLE EMPTY_DICT NONE TUPLE BUILD                      (its state)
  //   APPENDS; SETITEM; STOP
  const std::string partial =
      "\x80\x02}q\x00X\x03\x00\x00\x00""fnsq\x01]q\x02(K\x01"
      "cfunctools\npartial\nq\x03""c__builtin__\nprint\nq\x04\x85q\x05Rq\x06"
      "(h\x04)}q\x07Ntq\x08""b"
      "es."s;
  CHECK_THROWS_WITH_AS(ppe::serialization::pickle_loads(archive(partial), "cb.pt"),
                       doctest::Contains("functools.partial at 'fns/1'"), ppe::StateError);
}

TEST_CASE("states written by pickle_dumps still load after the rewrite") {
  // LibTorch's writer encodes a tensor's (empty) backward hooks as
  // collections.OrderedDict(): those files go through the rewrite too.
  const State s = State::dict({{"t", torch::arange(4, torch::kFloat)}, {"l", State::list({torch::ones({1})})}});
  const std::vector<char> bytes = ppe::serialization::pickle_dumps(s);
  CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(bytes), s));
  CHECK(ppe::serialization::state_equal(ppe::serialization::from_ivalue(torch::jit::pickle_load(bytes)), s));
}

TEST_CASE("the seal's CRC-32 is zlib's") {
  // CRC-32's check value: the CRC of "123456789".
  CHECK(ppe::detail::crc32(0, "123456789", 9) == 0xCBF43926u);
  CHECK(ppe::detail::crc32(0, "", 0) == 0u);
  // Every length from 0 to 40 at every offset 0 to 7 (the 8-byte slices and
  // the byte tail), whole and in two pieces, against zlib's crc32.
  std::vector<unsigned char> data(48);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 37u + 11u);
  for (std::size_t offset = 0; offset < 8; ++offset)
    for (std::size_t n = 0; n <= 40; ++n) {
      CAPTURE(offset);
      CAPTURE(n);
      const unsigned char* p = data.data() + offset;
      const auto expected = static_cast<std::uint32_t>(::crc32(0, p, static_cast<uInt>(n)));
      CHECK(ppe::detail::crc32(0, p, n) == expected);
      CHECK(ppe::detail::crc32(ppe::detail::crc32(0, p, n / 3), p + n / 3, n - n / 3) == expected);
    }
}

TEST_CASE("serialization: 0.1's names in namespace ppe are the ppe::serialization entities") {
  // using-declarations, not copies: a program written against 0.1 calls the same functions.
  static_assert(std::is_same_v<ppe::CorruptFileError, ppe::serialization::CorruptFileError>);
  const auto same = [](auto* a, auto* b) { return a == b; };
  CHECK(same(&ppe::pickle_dumps, &ppe::serialization::pickle_dumps));
  CHECK(same(&ppe::pickle_loads, &ppe::serialization::pickle_loads));
  CHECK(same(&ppe::load_file, &ppe::serialization::load_file));
  CHECK(same(&ppe::to_ivalue, &ppe::serialization::to_ivalue));
  CHECK(same(&ppe::owned_copy, &ppe::serialization::owned_copy));
  CHECK(same(&ppe::state_equal, &ppe::serialization::state_equal));
  const ppe::State s = ppe::State::dict({{"a", 1}});
  CHECK(ppe::serialization::state_equal(ppe::pickle_loads(ppe::serialization::pickle_dumps(s)), s));
}

TEST_CASE("pickle_dumps seals its archive; pickle_loads rejects corrupted and truncated bytes naming the source") {
  const State s = State::dict({{"w", torch::arange(1000, torch::kFloat)}, {"n", 3}});
  const std::vector<char> bytes = ppe::serialization::pickle_dumps(s);
  // The seal is the zip comment: "ppe-crc32:" and 8 hex digits at the very end.
  const std::string tail(bytes.end() - 18, bytes.end());
  CHECK(tail.rfind("ppe-crc32:", 0) == 0);
  // LibTorch's archive, whose program names no global but the tensors'
  // (Python's torch.load refuses torch.jit._pickle.restore_type_tag by default
  // from PyTorch 2.6).
  caffe2::serialize::PyTorchStreamReader reader(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
  const auto [program, program_size] = reader.getRecord("data.pkl");
  const std::string_view text(static_cast<const char*>(program.get()), program_size);
  CHECK(text.find("restore_type_tag") == std::string_view::npos);
  CHECK(text.find("_rebuild_tensor_v2") != std::string_view::npos);
  CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(bytes), s));

  SUBCASE("one flipped bit in a tensor's data") {
    std::vector<char> bad = bytes;
    // The 4000 bytes of "w" are the bulk of the archive; its middle is inside them.
    bad[bad.size() / 2] ^= 0x10;
    CHECK_THROWS_WITH_AS(ppe::serialization::pickle_loads(bad, "snap.pt"), doctest::Contains("snap.pt is corrupted"),
                         ppe::serialization::CorruptFileError);
  }
  SUBCASE("a changed seal") {
    std::vector<char> bad = bytes;
    bad.back() = bad.back() == '0' ? '1' : '0';
    CHECK_THROWS_WITH_AS(ppe::serialization::pickle_loads(bad, "snap.pt"), doctest::Contains("written with"), ppe::serialization::CorruptFileError);
  }
  SUBCASE("truncated at several lengths") {
    for (std::size_t keep : {std::size_t{0}, std::size_t{10}, bytes.size() / 3, bytes.size() - 19, bytes.size() - 1}) {
      CAPTURE(keep);
      const std::vector<char> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
      CHECK_THROWS_WITH_AS(ppe::serialization::pickle_loads(cut, "snap.pt"), doctest::Contains("cannot read snap.pt (truncated"),
                           ppe::serialization::CorruptFileError);
    }
  }
  SUBCASE("an archive without a seal (Python's torch.save) loads unverified") {
    const std::vector<char> plain = torch::jit::pickle_save(ppe::serialization::to_ivalue(s));
    CHECK(ppe::serialization::state_equal(ppe::serialization::pickle_loads(plain), s));
  }
  SUBCASE("load_file names the file") {
    TempDir dir;
    const auto path = dir.path / "x.pt";
    std::vector<char> bad = bytes;
    bad[bad.size() / 2] ^= 0x10;
    std::ofstream(path, std::ios::binary).write(bad.data(), static_cast<std::streamsize>(bad.size()));
    const std::string want = path.string() + " is corrupted";
    CHECK_THROWS_WITH_AS(ppe::serialization::load_file(path), doctest::Contains(want.c_str()), ppe::serialization::CorruptFileError);
    CHECK_THROWS_WITH_AS(ppe::serialization::load_file(dir.path / "absent.pt"),
                         doctest::Contains("absent.pt': No such file or directory"), std::runtime_error);
    // A directory opens as a stream on Linux; the error must still name it (PPE: IsADirectoryError).
    const auto sub = dir.path / "sub.pt";
    std::filesystem::create_directory(sub);
    CHECK_THROWS_WITH_AS(ppe::serialization::load_file(sub), doctest::Contains((sub.string() + "': Is a directory").c_str()),
                         std::runtime_error);
  }
}

}  // namespace ppe_test_state_tests_test_state
