// A module's weights as named tensors and back (ppe::serialization::module_weights,
// load_weights; Python's state_dict() of tensors and load_state_dict(strict)):
// through a safetensors file, the strict mode's message in Python's words,
// the non-strict report, dtype conversion and prefix maps for wrapped models.
#include "ppe_test.hpp"

#include <ppe/serialization/module_weights.hpp>
#include <ppe/serialization/safetensors.hpp>

#include <string>
#include <vector>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_serialization_tests_test_module_weights {

namespace ser = ppe::serialization;

namespace {

torch::nn::Sequential make_model() { return torch::nn::Sequential(torch::nn::Linear(4, 3), torch::nn::BatchNorm1d(3)); }

std::vector<std::string> names_of(const ser::NamedTensors& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("module weights: named as state_dict names them; through a safetensors file into another model, exactly") {
  auto trained = make_model();
  trained->train();
  (void)trained->forward(torch::randn({8, 4}));  // moves the batch norm's running statistics
  const auto weights = ser::module_weights(*trained);
  CHECK(names_of(weights) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                                      "1.running_var", "1.num_batches_tracked"});
  const auto file = ser::safetensors_loads(ser::safetensors_dumps(weights));
  auto fresh = make_model();
  const auto report = ser::load_weights(*fresh, file.tensors);
  CHECK(report.ok());
  CHECK(report.message().empty());
  CHECK(report.loaded.size() == 7);
  const auto loaded = ser::module_weights(*fresh);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    CAPTURE(weights[i].first);
    CHECK(torch::equal(loaded[i].second, weights[i].second));
  }
  CHECK(fresh->named_parameters()["0.weight"].requires_grad());  // still a parameter
}

TEST_CASE("load_weights strict: every difference named in Python's words, and nothing loaded") {
  torch::nn::Linear linear(4, 3);
  const auto before = linear->weight.clone();
  const ser::NamedTensors tensors{{"weight", torch::zeros({4, 3})}, {"extra", torch::zeros({1})}};
  try {
    (void)ser::load_weights(*linear, tensors);
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) ==
          "Error(s) in loading state_dict for torch::nn::LinearImpl:\n"
          "\tMissing key(s) in state_dict: \"bias\".\n"
          "\tUnexpected key(s) in state_dict: \"extra\".\n"
          "\tsize mismatch for weight: copying a param with shape torch.Size([4, 3]) from checkpoint, the shape in "
          "current model is torch.Size([3, 4]).\n"
          "(ppe::serialization::load_weights, strict: nothing was loaded)");
  }
  CHECK(torch::equal(linear->weight, before));
  // A dtype difference alone is an error when strict too.
  const ser::NamedTensors half{{"weight", torch::ones({3, 4}).to(torch::kHalf)}, {"bias", torch::ones({3})}};
  CHECK_THROWS_WITH_AS((void)ser::load_weights(*linear, half),
                       doctest::Contains("dtype mismatch for weight: copying a param of dtype torch.float16 from "
                                         "checkpoint, the dtype in current model is torch.float32."),
                       std::runtime_error);
  CHECK(torch::equal(linear->weight, before));
}

TEST_CASE("load_weights not strict: what matches is loaded (dtypes converted), the rest reported") {
  torch::nn::Linear linear(4, 3);
  const ser::NamedTensors tensors{{"weight", torch::ones({3, 4}).to(torch::kHalf)}, {"other", torch::zeros({2})}};
  const auto report = ser::load_weights(*linear, tensors, ser::LoadWeightsOptions().strict(false));
  CHECK(report.loaded == std::vector<std::string>{"weight"});
  CHECK(report.missing == std::vector<std::string>{"bias"});
  CHECK(report.unexpected == std::vector<std::string>{"other"});
  CHECK(report.dtype_mismatches.size() == 1);
  CHECK((linear->weight.scalar_type() == torch::kFloat));
  CHECK(torch::equal(linear->weight, torch::ones({3, 4})));
  CHECK(report.message() ==
        "Missing key(s) in state_dict: \"bias\".\n"
        "Unexpected key(s) in state_dict: \"other\".\n"
        "dtype mismatch for weight: copying a param of dtype torch.float16 from checkpoint, the dtype in current model "
        "is torch.float32.");
}

TEST_CASE("load_weights prefixes: a wrapped model's names into the bare model, and a part into a larger one") {
  auto source = make_model();
  ser::NamedTensors wrapped;
  for (const auto& [name, t] : ser::module_weights(*source)) wrapped.emplace_back("module." + name, t);
  auto bare = make_model();
  CHECK(ser::load_weights(*bare, wrapped, ser::LoadWeightsOptions().prefixes({{"module.", ""}})).ok());
  CHECK(torch::equal(bare[0]->as<torch::nn::Linear>()->weight, source[0]->as<torch::nn::Linear>()->weight));
  // The first matching pair applies; a name no pair matches stays as it is.
  torch::nn::Sequential larger(torch::nn::Linear(4, 3));
  const auto report = ser::load_weights(*larger, {{"weight", torch::ones({3, 4})}, {"bias", torch::ones({3})}},
                                        ser::LoadWeightsOptions().prefixes({{"", "0."}, {"w", "x"}}));
  CHECK(report.ok());
  CHECK(torch::equal(larger[0]->as<torch::nn::Linear>()->bias, torch::ones({3})));
}

}  // namespace ppe_test_serialization_tests_test_module_weights
