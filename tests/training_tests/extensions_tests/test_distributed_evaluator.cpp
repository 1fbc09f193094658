// DistributedEvaluator and the engine's evaluator with distributed_evaluation
// (PPE's DistributedEvaluator, create_evaluator(distributed=True)): two real
// processes each evaluate their DistributedValidationSampler share of 11
// samples; every reducer's result equals, on both ranks and bitwise, one
// process evaluating the concatenated batches.
#include "ppe_test.hpp"

#include <ppe/distributed/distributed_validation_sampler.hpp>
#include <ppe/distributed/evaluation.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/distributed/distributed_evaluator.hpp>

#include "processes.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_distributed_evaluator {

namespace dist = ppe::distributed;
namespace ext = ppe::training::extensions;
namespace m = ppe::training::metrics;
namespace rep = ppe::reporting;

namespace {

constexpr std::size_t kSamples = 11;  // not divisible by 2 ranks
constexpr std::int64_t kBatch = 2;

// Sample i is the value 1 / (i + 1): sums of these are not exact in binary,
// so a different summation order would show.
torch::Tensor sample(std::int64_t i) { return torch::tensor({1.0 / static_cast<double>(i + 1)}, torch::kFloat64); }

// The batches of a share of sample indices.
std::vector<torch::Tensor> batches_of(const std::vector<std::size_t>& indices) {
  std::vector<torch::Tensor> out;
  for (std::size_t b = 0; b < indices.size(); b += kBatch) {
    std::vector<torch::Tensor> xs;
    for (std::size_t i = b; i < std::min(indices.size(), b + kBatch); ++i)
      xs.push_back(sample(static_cast<std::int64_t>(indices[i])));
    out.push_back(torch::cat(xs));
  }
  return out;
}

// Reports, per batch, the same batch statistic under five keys, each with its reducer.
void report_batch(const torch::Tensor& x) {
  rep::report({{"mean", x.mean()}, {"sum", x.sum()}, {"min", x.min()}, {"max", x.max()}, {"count", x.numel()}});
}

template <class Options>
Options with_reducers(Options o) {
  o.reducer("sum", m::Reducer::sum()).reducer("min", m::Reducer::min()).reducer("max", m::Reducer::max());
  // Custom: the batch counts in order, as a number (1e3-based digits): order-sensitive.
  o.reducer("count", m::Reducer([](const std::vector<rep::Value>& vs) {
    double code = 0;
    for (const auto& v : vs) code = code * 10 + v.to_double();
    return rep::Value(code);
  }));
  return o;
}

// Every key's value, bitwise.
void check_same(const rep::Observation& got, const rep::Observation& want) {
  for (const char* key : {"mean", "sum", "min", "max", "count"}) {
    INFO(std::string(key));
    REQUIRE(got.contains(key));
    REQUIRE(want.contains(key));
    CHECK(got.at(key).to_double() == want.at(key).to_double());
  }
}

struct IdentityImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x) {
    report_batch(x);
    return x.sum();
  }
};
TORCH_MODULE(Identity);

}  // namespace

TEST_CASE("worker: distributed evaluation equals one process" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  dist::DistributedValidationSampler mine(kSamples, info.world_size, info.rank, /*shuffle=*/false);
  const auto local = batches_of(mine.indices());
  // One process on the concatenated batches: rank 0's, then rank 1's.
  std::vector<torch::Tensor> all;
  for (int r = 0; r < info.world_size; ++r) {
    const auto b = batches_of(dist::DistributedValidationSampler(kSamples, info.world_size, r, false).indices());
    all.insert(all.end(), b.begin(), b.end());
  }
  CHECK(mine.size() == (info.rank == 0 ? 6u : 5u));  // numpy.array_split(range(11), 2)

  {
    INFO("DistributedEvaluator (the extension)");
    auto eval_fn = [](const torch::Tensor& x) { report_batch(x); };
    ext::DistributedEvaluator distributed(local, {}, eval_fn, with_reducers(ext::EvaluatorOptions()));
    ext::Evaluator single(all, {}, eval_fn, with_reducers(ext::EvaluatorOptions()));
    rep::Reporter reporter;  // evaluate() reports into the current reporter's observation (none: dropped, as PPE)
    auto scope = reporter.scope();
    const rep::Observation got = distributed.evaluate();
    const rep::Observation want = single.evaluate();
    check_same(got, want);
    // The count code lists the 6 batch sizes in order: 2, 2, 2, 2, 2, 1.
    CHECK(got.at("count").to_double() == 222222.0 - 1.0);
  }
  {
    INFO("the engine's evaluator with distributed_evaluation (create_evaluator(distributed=True))");
    Identity model;
    ppe::to(model, "cpu");
    auto distributed =
        ppe::engine::create_evaluator(model, dist::distributed_evaluation(with_reducers(ppe::engine::EvaluatorOptions())));
    auto single = ppe::engine::create_evaluator(model, with_reducers(ppe::engine::EvaluatorOptions()));
    auto run = [](auto& evaluator, auto& data) {
      rep::Reporter reporter;
      rep::Observation observation;
      auto scope = reporter.scope(observation);
      evaluator.run(data);
      return observation;
    };
    check_same(run(distributed, local), run(single, all));
  }
  dist::destroy_process_group();
}

TEST_CASE("DistributedEvaluator: every reducer equals one process, on both ranks") {
  ppe_test::TempDir dir;
  ppe_test::check_workers("worker: distributed evaluation equals one process", dir.path);
}

TEST_CASE("DistributedEvaluator needs a process group") {
  std::vector<torch::Tensor> data{torch::ones({1})};
  CHECK(ppe_test::error_of([&] {
          ext::DistributedEvaluator e(data, {}, [](const torch::Tensor&) {});
        }).find("needs the default process group") != std::string::npos);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_distributed_evaluator
