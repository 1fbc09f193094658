// ppe::utils::RngState: LibTorch's default generators saved and restored
// through ppe::State, bitwise; malformed states are rejected before anything changes.
#include "ppe_test.hpp"
#include "python.hpp"

#include <string>

#include <ppe/utils/rng_state.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_utils_tests_test_rng_state {

using ppe::State;
using ppe::utils::RngState;

namespace {

/// Draws from the default CPU generator through three different kernels.
torch::Tensor draw() {
  return torch::cat({torch::rand({16}), torch::randn({16}), torch::randint(0, 1000, {16}).to(torch::kFloat)});
}

using ppe_test::error_of;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("RngState restores the default CPU generator bitwise") {
  torch::manual_seed(123);
  RngState rng;
  draw();  // move away from the freshly seeded state
  const State saved = rng.state_dict();
  const torch::Tensor first = draw();
  const torch::Tensor second = draw();
  CHECK_FALSE(torch::equal(first, second));  // the generator moves on

  rng.load_state_dict(saved);
  CHECK(torch::equal(draw(), first));
  CHECK(torch::equal(draw(), second));

  // The saved tensor is a copy: drawing did not change it, so it restores again.
  rng.load_state_dict(saved);
  CHECK(torch::equal(draw(), first));
}

TEST_CASE("RngState layout: cpu tensor as torch.get_rng_state(), no CUDA here") {
  const State s = RngState().state_dict();
  REQUIRE(s.is_dict());
  REQUIRE(s.at("cpu").is_tensor());
  const auto& t = s.at("cpu").as_tensor();
  CHECK((t.scalar_type() == torch::kByte));
  CHECK(t.dim() == 1);
  CHECK(torch::equal(t, at::detail::getDefaultCPUGenerator().get_state()));
  REQUIRE(s.at("cuda").is_list());
  CHECK(s.at("cuda").size() == static_cast<std::size_t>(RngState::num_cuda_devices()));
  if (!torch::cuda::is_available()) CHECK(RngState::num_cuda_devices() == 0);
}

TEST_CASE("RngState survives a pickle round trip (the bytes of a snapshot)") {
  torch::manual_seed(7);
  RngState rng;
  const std::vector<char> bytes = ppe::serialization::pickle_dumps(rng.state_dict());
  const torch::Tensor expected = draw();
  draw();
  rng.load_state_dict(ppe::serialization::pickle_loads(bytes));
  CHECK(torch::equal(draw(), expected));
}

TEST_CASE("RngState rejects malformed states with a clear message and changes nothing") {
  RngState rng;
  torch::manual_seed(99);
  const State good = rng.state_dict();
  const std::int64_t size = good.at("cpu").as_tensor().numel();
  const std::string expected_shape = "expected a Byte (uint8) tensor of shape [" + std::to_string(size) + "] on cpu";

  auto with_cpu = [&](State cpu) { return State::dict({{"cpu", std::move(cpu)}, {"cuda", State::list()}}); };
  std::string msg;

  msg = error_of([&] { rng.load_state_dict(with_cpu(torch::zeros({size - 1}, torch::kByte))); });
  CHECK(contains(msg, "'cpu' is a Byte tensor of shape [" + std::to_string(size - 1) + "] on cpu"));
  CHECK(contains(msg, expected_shape));

  msg = error_of([&] { rng.load_state_dict(with_cpu(torch::zeros({size}, torch::kFloat))); });
  CHECK(contains(msg, "'cpu' is a Float tensor"));
  CHECK(contains(msg, expected_shape));

  msg = error_of([&] { rng.load_state_dict(with_cpu(torch::zeros({2, size / 2}, torch::kByte))); });
  CHECK(contains(msg, "of shape [2, " + std::to_string(size / 2) + "]"));

  msg = error_of([&] { rng.load_state_dict(with_cpu(State(5))); });
  CHECK(contains(msg, "'cpu' is a int, expected a uint8 tensor"));

  msg = error_of([&] { rng.load_state_dict(State::dict({{"cuda", State::list()}})); });
  CHECK(contains(msg, "key 'cpu' not found"));

  msg = error_of([&] { rng.load_state_dict(State(3)); });
  CHECK(contains(msg, "expected a dict {cpu, cuda}, got int"));

  if (RngState::num_cuda_devices() == 0) {
    State extra = with_cpu(good.at("cpu"));
    extra.set("cuda", State::list({State(good.at("cpu").as_tensor().clone())}));
    msg = error_of([&] { rng.load_state_dict(extra); });
    CHECK(contains(msg, "'cuda' holds 1 generator states, this process has 0 CUDA devices"));
    // "cuda" may be absent when there are no devices.
    CHECK_NOTHROW(rng.load_state_dict(State::dict({{"cpu", good.at("cpu")}})));
  }

  // None of the rejected loads changed the generator.
  rng.load_state_dict(good);
  const torch::Tensor a = draw();
  torch::manual_seed(99);
  CHECK(torch::equal(draw(), a));
}

TEST_CASE("RngState: states move between C++ and Python's torch.get_rng_state / set_rng_state") {
  if (ppe_test::python_with_torch().empty()) {
    MESSAGE("python3-torch not installed: skipping");
    return;
  }
  ppe_test::TempDir dir;
  torch::manual_seed(31);
  RngState rng;
  ppe_test::write_file(dir / "cpp.pt", ppe::serialization::pickle_dumps(rng.state_dict()));
  const torch::Tensor cpp_draw = torch::rand({8}, torch::kDouble);
  // Python restores the C++ state and draws; it saves its own state after
  // torch.manual_seed(32) for C++ to restore.
  const std::string script = R"PY(
import sys, torch
d = torch.load(sys.argv[1] + "/cpp.pt")
assert set(d.keys()) == {"cpu", "cuda"} and d["cuda"] == [], d.keys()
torch.set_rng_state(d["cpu"])
torch.save(torch.rand(8, dtype=torch.float64), sys.argv[1] + "/py_draw.pt")
torch.manual_seed(32)
torch.save({"cpu": torch.get_rng_state(), "cuda": []}, sys.argv[1] + "/py.pt")
print("OK")
)PY";
  const auto out = ppe_test::run_python(dir, script, "'" + dir.str() + "'");
  INFO(out.text);
  REQUIRE(out.status == 0);
  const State py_draw = ppe::serialization::pickle_loads(ppe_test::read_bytes(dir / "py_draw.pt"));
  REQUIRE(py_draw.is_tensor());
  CHECK(torch::equal(py_draw.as_tensor(), cpp_draw));

  rng.load_state_dict(ppe::serialization::pickle_loads(ppe_test::read_bytes(dir / "py.pt")));
  const torch::Tensor after_python_state = torch::rand({8}, torch::kDouble);
  torch::manual_seed(32);
  CHECK(torch::equal(torch::rand({8}, torch::kDouble), after_python_state));
}

}  // namespace ppe_test_utils_tests_test_rng_state
