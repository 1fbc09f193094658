// serialization::Staging (serialization/staging.hpp): the copy of a state that
// asynchronous snapshots write from, kept between snapshots.
#include "ppe_test.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_serialization_tests_test_staging {

using ppe::State;
using ppe::serialization::Staging;

namespace {

State live_state(const torch::Tensor& w, const torch::Tensor& b) {
  return State::dict({{"w", w}, {"nested", State::list({b, 3})}, {"name", "x"}});
}

const torch::Tensor& tensor_at(const State& s, bool nested) {
  return nested ? s.at("nested").as_list()[0].as_tensor() : s.at("w").as_tensor();
}

}  // namespace

TEST_CASE("Staging copies a state; later changes do not reach it; a later stage copies into the same memory") {
  torch::Tensor w = torch::randn({4, 3});
  torch::Tensor b = torch::arange(5, torch::kLong);
  auto staging = std::make_shared<Staging>();
  const void* first_w = nullptr;
  {
    const auto staged = staging->stage(live_state(w, b));
    CHECK(staging->busy());
    CHECK(ppe::serialization::state_equal(*staged, live_state(w, b)));
    first_w = tensor_at(*staged, false).data_ptr();
    CHECK(first_w != w.data_ptr());
    const torch::Tensor before = w.clone();
    w.add_(1);  // training goes on
    CHECK(torch::equal(tensor_at(*staged, false), before));
  }
  CHECK_FALSE(staging->busy());
  // Same shapes: copied into the tensors of the first stage.
  {
    const auto staged = staging->stage(live_state(w, b));
    CHECK(tensor_at(*staged, false).data_ptr() == first_w);
    CHECK(torch::equal(tensor_at(*staged, false), w));
    CHECK(torch::equal(tensor_at(*staged, true), b));
  }
  // A changed shape gets new memory; the rest is still reused.
  {
    const torch::Tensor wider = torch::randn({4, 4});
    const auto staged = staging->stage(live_state(wider, b));
    CHECK(torch::equal(tensor_at(*staged, false), wider));
    CHECK(staged->at("name").as_string() == "x");
  }
}

TEST_CASE("Staging without keep releases the copy when its lease ends") {
  auto staging = std::make_shared<Staging>();
  torch::Tensor kept;
  {
    const auto staged = staging->stage(live_state(torch::ones({8}), torch::zeros({2})), /*keep=*/false);
    kept = tensor_at(*staged, false);
    CHECK(kept.use_count() >= 2);
  }
  CHECK(kept.use_count() == 1);  // the staging dropped its copy
}

TEST_CASE("Staging waits for the lease of the previous stage: one copy of the state at a time") {
  auto staging = std::make_shared<Staging>();
  auto lease = staging->stage(live_state(torch::ones({8}), torch::zeros({2})));
  std::atomic<bool> staged_again{false};
  std::thread second([&] {
    const auto again = staging->stage(live_state(torch::full({8}, 2.0), torch::zeros({2})));
    staged_again = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(staged_again.load());  // it cannot finish while the first lease is held
  CHECK(torch::equal(tensor_at(*lease, false), torch::ones({8})));
  lease.reset();
  second.join();
  CHECK(staged_again.load());
}

}  // namespace ppe_test_serialization_tests_test_staging
