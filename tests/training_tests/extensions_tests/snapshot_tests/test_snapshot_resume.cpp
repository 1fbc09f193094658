// A resume reads a manager snapshot's tensors from the file into the model
// and the optimizer (issue 48; serialization/detail/file_records.hpp): the
// models' tensors stay in the file until the model's load reads them into its
// parameters, the optimizers' are read into memory the optimizer then keeps,
// and a corrupted file is refused before anything is loaded.
//
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "ppe/serialization/detail/file_records.hpp"
#include "python.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_snapshot_resume {

namespace fs = std::filesystem;
using ppe::State;
using ppe::serialization::CorruptFileError;
using ppe_test::TempDir;

TEST_CASE("a resume reads the models' tensors from the file into the model and hands the optimizer its own") {
  TempDir dir;
  // Large enough (1 MiB and more per tensor) to stay in the file until loaded.
  torch::manual_seed(3);
  torch::nn::Linear model(512, 1024);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.1));
  model->forward(torch::ones({1, 512})).sum().backward();
  optimizer.step();
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 2), model, optimizer);
  const State saved = ppe::serialization::owned_copy(manager.state_dict());
  const fs::path file = dir.path / "snapshot";
  ppe_test::write_file(file, ppe::serialization::pickle_dumps(manager.state_dict()));

  torch::nn::Linear fresh(512, 1024);
  torch::optim::Adam fresh_optimizer(fresh->parameters(), torch::optim::AdamOptions(0.1));
  auto resumed = ppe::training::ExtensionsManager(ppe_test::options(1, 2), fresh, fresh_optimizer);
  const State state = ppe::detail::load_file_deferred(file, ppe::detail::manager_may_defer);
  // The model's weight is still in the file: its memory in the State was never written.
  const torch::Tensor unread = state.at("models").at("main").at("weight").as_tensor();
  CHECK(unread.sizes() == model->weight.sizes());
  CHECK(unread.abs().sum().item<double>() == 0.0);
  // Small tensors (the bias, 4 KiB) and everything outside the models and optimizers are read.
  CHECK(torch::equal(state.at("models").at("main").at("bias").as_tensor(), model->bias));
  resumed.load_state_dict(state);
  CHECK(torch::equal(fresh->weight, model->weight));
  CHECK(torch::equal(fresh->bias, model->bias));
  CHECK(ppe::serialization::state_equal(resumed.state_dict().at("optimizers"), saved.at("optimizers")));
  // The optimizer took the tensor read for it: no second copy.
  std::vector<const void*> moments;
  for (const auto& [key, st] : fresh_optimizer.state())
    moments.push_back(static_cast<const torch::optim::AdamParamState&>(*st).exp_avg().data_ptr());
  const auto& in_state = state.at("optimizers").at("main").at("state");
  CHECK(std::find(moments.begin(), moments.end(), in_state.at("0").at("exp_avg").as_tensor().data_ptr()) !=
        moments.end());
  // A second load from the same State copies (the tensor is the optimizer's now).
  torch::optim::Adam other(fresh->parameters(), torch::optim::AdamOptions(0.1));
  auto again = ppe::training::ExtensionsManager(ppe_test::options(1, 2), fresh, other);
  again.load_state_dict(state);
  for (const auto& [key, st] : other.state())
    CHECK(std::find(moments.begin(), moments.end(),
                    static_cast<const torch::optim::AdamParamState&>(*st).exp_avg().data_ptr()) == moments.end());
  CHECK(ppe::serialization::state_equal(again.state_dict().at("optimizers"), saved.at("optimizers")));
}

TEST_CASE("a resume refuses a corrupted file before it changes the model") {
  TempDir dir;
  torch::nn::Linear model(512, 1024);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto manager = ppe::training::ExtensionsManager(ppe_test::options(1, 2), model, optimizer);
  const fs::path file = dir.path / "snapshot";
  std::vector<char> bytes = ppe::serialization::pickle_dumps(manager.state_dict());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);  // in the weight's record
  ppe_test::write_file(file, bytes);
  CHECK_THROWS_WITH_AS(ppe::detail::load_file_deferred(file, ppe::detail::manager_may_defer),
                       doctest::Contains("is corrupted"), CorruptFileError);
}

}  // namespace ppe_test_training_tests_extensions_tests_snapshot_tests_test_snapshot_resume
