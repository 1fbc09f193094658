// ppe::utils::comparer. Ports PPE's utils_tests/test_new_comparer.py (Comparer:
// every epoch, wrong values, trigger, tolerances, incompatible triggers,
// concurrency, parameters, tuple outputs, intermediate values, dumps, baseline) and
// the cases of utils_tests/test_comparer.py that the Comparer covers (PPE's
// older OutputsComparer/ModelComparer are not ported: the Comparer does what
// they do). PPE compares CPU with CUDA; here both engines are on the CPU and
// the difference is planted in one of them.

#include "ppe_test.hpp"

#include <ppe/engine.hpp>
#include <ppe/handler/code_block_logic.hpp>
#include <ppe/runtime/to.hpp>
#include <ppe/utils/comparer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_utils_tests_test_comparer {

namespace cmp = ppe::utils::comparer;
using ppe::handler::Outputs;
using ppe_test::error_of;

namespace {

auto options(const ppe_test::TempDir& dir) { return ppe::engine::TrainerOptions().out_dir(dir.str()); }

// PPE's Model(device, ret_val): returns {"a": ret_val (a leaf: nothing to
// back-propagate), "iter": how many times forward ran}.
struct RetModelImpl : torch::nn::Module {
  torch::Tensor w;
  double ret;
  std::int64_t iter = 0;
  explicit RetModelImpl(double r) : ret(r) { w = register_parameter("w", torch::zeros({10})); }
  Outputs forward(const torch::Tensor&) {
    ++iter;
    return {{"a", torch::full({}, ret).requires_grad_()}, {"iter", torch::tensor(iter)}};
  }
};
TORCH_MODULE(RetModel);

std::vector<torch::Tensor> ones_loader() { return std::vector<torch::Tensor>(10, torch::ones({10})); }

// PPE's three engine kinds (_get_trainer, _get_evaluator,
// _get_trainer_with_evaluator) over the same model type.
enum class Kind { Trainer, Evaluator, TrainerWithEvaluator };

// Two engines of `kind` over models `a` and `b` (on the CPU runtime), added
// to `comp` as "cpu" and "other" with 10 batches each; then compare().
template <class M>
void compare_pair(Kind kind, cmp::Comparer& comp, M a, M b, double max_epochs = 10,
                  std::optional<ppe::training::triggers::IntervalTrigger> stop_b = std::nullopt) {
  ppe_test::TempDir dir;
  ppe::to(a, "cpu");
  ppe::to(b, "cpu");
  auto loader_a = ones_loader();
  auto loader_b = ones_loader();
  torch::optim::SGD oa(a->parameters(), 1.0), ob(b->parameters(), 1.0);
  if (kind == Kind::Evaluator) {
    auto ea = ppe::engine::create_evaluator(a);
    auto eb = ppe::engine::create_evaluator(b);
    comp.add_engine("cpu", ea, loader_a);
    comp.add_engine("other", eb, loader_b);
    comp.compare();
  } else if (kind == Kind::Trainer) {
    auto ta = ppe::engine::create_trainer(a, oa, max_epochs, options(dir));
    auto tb = ppe::engine::create_trainer(b, ob, max_epochs, options(dir),
                                          ppe::engine::stop_when(stop_b.value_or(ppe::epochs(max_epochs))));
    comp.add_engine("cpu", ta, loader_a);
    comp.add_engine("other", tb, loader_b);
    comp.compare();
  } else {
    auto ta = ppe::engine::create_trainer(a, oa, max_epochs, options(dir), ppe::engine::create_evaluator(a));
    auto tb = ppe::engine::create_trainer(b, ob, max_epochs, options(dir), ppe::engine::create_evaluator(b),
                                          ppe::engine::stop_when(stop_b.value_or(ppe::epochs(max_epochs))));
    comp.add_engine("cpu", ta, loader_a, loader_a);
    comp.add_engine("other", tb, loader_b, loader_b);
    comp.compare();
  }
}

const Kind kKinds[] = {Kind::Trainer, Kind::Evaluator, Kind::TrainerWithEvaluator};
const char* kind_name(Kind k) {
  return k == Kind::Trainer ? "trainer" : k == Kind::Evaluator ? "evaluator" : "trainer with evaluator";
}

std::vector<std::string> names_of(const cmp::ComparisonError& e) {
  std::vector<std::string> out;
  for (const auto& m : e.mismatches()) out.push_back(m.name);
  return out;
}

}  // namespace

TEST_CASE("Comparer: identical engines pass, compared every epoch and every evaluation step (test_compare_every_epoch)") {
  // Trainer: 10 epochs, compared at each epoch's end: 10. Evaluator: 10
  // batches: 10. Trainer with evaluator: 10 + 10 evaluations of 10 batches.
  const std::map<Kind, std::int64_t> expected{{Kind::Trainer, 10}, {Kind::Evaluator, 10}, {Kind::TrainerWithEvaluator, 110}};
  for (Kind k : kKinds) {
    CAPTURE(kind_name(k));
    cmp::Comparer comp(cmp::ComparerOptions().outputs({"a"}));
    compare_pair(k, comp, RetModel(1.0), RetModel(1.0));
    CHECK(comp.comparisons() == expected.at(k));
  }
}

TEST_CASE("Comparer: a different output is caught at the first comparison point, by name (test_comparer_wrong)") {
  for (Kind k : kKinds) {
    CAPTURE(kind_name(k));
    cmp::Comparer comp(cmp::ComparerOptions().outputs({"a"}));
    try {
      compare_pair(k, comp, RetModel(1.0), RetModel(0.5));
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(e.index() == 0);
      REQUIRE(e.mismatches().size() == 1);
      CHECK(e.mismatches()[0].name == "output:a");
      CHECK(e.mismatches()[0].baseline == "cpu");
      CHECK(e.mismatches()[0].engine == "other");
      CHECK(e.mismatches()[0].detail.find("1 of 1 elements differ") != std::string::npos);
      if (k == Kind::Evaluator) {
        CHECK(e.point() == cmp::Point{cmp::Phase::Eval, 0, std::nullopt, std::nullopt});
        CHECK(std::string(e.what()).find("the engines differ at evaluation batch 0 (after 0 matching comparison "
                                         "points):\n  'output:a': 'cpu' (baseline) vs 'other': 1 of 1 elements "
                                         "differ (100%); the greatest absolute difference is 0.5") != std::string::npos);
      } else {
        // The first epoch's end, before its evaluation.
        CHECK(e.point() == cmp::Point{cmp::Phase::Train, 9, 10, 0});
        CHECK(std::string(e.what()).find("training iteration 10 (epoch 0, batch 9)") != std::string::npos);
      }
    }
    CHECK(comp.comparisons() == 0);
  }
}

TEST_CASE("Comparer: the trigger selects the trainer's steps; evaluation steps are all compared (test_comparer_trigger)") {
  for (Kind k : {Kind::Trainer, Kind::TrainerWithEvaluator}) {
    CAPTURE(kind_name(k));
    std::vector<std::int64_t> iters;
    auto record = [&](const std::string& e1, const std::string& e2, const std::string& name, const torch::Tensor& v1,
                      const torch::Tensor& v2) -> std::optional<std::string> {
      CHECK(e1 == "cpu");
      CHECK(e2 == "other");
      CHECK((name == "output:a" || name == "output:iter"));
      CHECK(torch::equal(v1, v2));
      if (name == "output:iter") iters.push_back(v1.item<std::int64_t>());
      return std::nullopt;
    };
    cmp::Comparer comp(cmp::ComparerOptions().trigger(ppe::iterations(3)).compare_fn(record));
    compare_pair(k, comp, RetModel(1.0), RetModel(1.0), /*max_epochs=*/1);
    // PPE's expected values: the forward count at iterations 3, 6, 9, then
    // the evaluation's 10 steps on the same model (11 to 20).
    if (k == Kind::Trainer)
      CHECK(iters == std::vector<std::int64_t>{3, 6, 9});
    else
      CHECK(iters == std::vector<std::int64_t>{3, 6, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20});
  }
}

TEST_CASE("Comparer: tolerances of get_default_comparer (test_comparer_kwargs)") {
  for (Kind k : kKinds) {
    CAPTURE(kind_name(k));
    cmp::Comparer loose(cmp::ComparerOptions().outputs({"a"}).compare_fn(cmp::get_default_comparer(1e-2, 1e-2)));
    compare_pair(k, loose, RetModel(1.0), RetModel(0.991));
    cmp::Comparer strict(cmp::ComparerOptions().outputs({"a"}));
    CHECK_THROWS_AS(compare_pair(k, strict, RetModel(1.0), RetModel(0.991)), cmp::ComparisonError);
  }
}

TEST_CASE("Comparer: engines that reach different points are an error (test_comparer_incompat_trigger)") {
  for (Kind k : {Kind::Trainer, Kind::TrainerWithEvaluator}) {
    CAPTURE(kind_name(k));
    cmp::Comparer comp(cmp::ComparerOptions().outputs({"a"}));
    const std::string err =
        error_of([&] { compare_pair(k, comp, RetModel(1.0), RetModel(1.0), 10, ppe::iterations(1)); });
    CHECK(err.find("the engines reached different comparison points") != std::string::npos);
  }
}

namespace {

// Counts the forward passes in flight across both engines.
std::atomic<int> in_flight{0}, most{0};
struct SlowImpl : RetModelImpl {
  using RetModelImpl::RetModelImpl;
  Outputs forward(const torch::Tensor& x) {
    const int now = ++in_flight;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    --in_flight;
    return RetModelImpl::forward(x);
  }
};
TORCH_MODULE(Slow);

// Returns a tuple (a, x) (PPE's ModelRetTuple).
struct TupleImpl : RetModelImpl {
  using RetModelImpl::RetModelImpl;
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x) {
    return {torch::full({}, ret).requires_grad_(), x};
  }
};
TORCH_MODULE(Tuple);

// Throws at its 5th forward pass.
struct FailingImpl : RetModelImpl {
  using RetModelImpl::RetModelImpl;
  Outputs forward(const torch::Tensor& x) {
    if (iter == 4) throw std::domain_error("planted failure");
    return RetModelImpl::forward(x);
  }
};
TORCH_MODULE(Failing);

}  // namespace

TEST_CASE("Comparer: concurrency 1 runs one engine at a time (test_compare_concurrency(_wrong))") {
  for (Kind k : kKinds) {
    CAPTURE(kind_name(k));
    most = 0;
    cmp::Comparer comp(cmp::ComparerOptions().outputs({"a"}).concurrency(1));
    compare_pair(k, comp, Slow(1.0), Slow(1.0), /*max_epochs=*/2);
    CHECK(most.load() == 1);
    cmp::Comparer wrong(cmp::ComparerOptions().outputs({"a"}).concurrency(1));
    CHECK_THROWS_AS(compare_pair(k, wrong, Slow(1.0), Slow(0.5), 2), cmp::ComparisonError);
  }
  CHECK_THROWS_WITH_AS(cmp::Comparer(cmp::ComparerOptions().concurrency(0)), doctest::Contains("concurrency must be >= 1"),
                       std::invalid_argument);
}

namespace {

// PPE's ModelForComparer, smaller: parameters and buffers, and an output that
// depends only on the batch (nothing is trained).
struct ParamModelImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  explicit ParamModelImpl(int seed) {
    torch::manual_seed(seed);
    l = register_module("l", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return x.sum(); }
};
TORCH_MODULE(ParamModel);

}  // namespace

TEST_CASE("Comparer: parameters and buffers (test_model_comparer(_invalid))") {
  for (Kind k : kKinds) {
    CAPTURE(kind_name(k));
    cmp::Comparer same(cmp::ComparerOptions().params(true).compare_fn(cmp::get_default_comparer(1e-2, 1e-2)));
    compare_pair(k, same, ParamModel(0), ParamModel(0));
    cmp::Comparer differ(cmp::ComparerOptions().params(true).compare_fn(cmp::get_default_comparer(1e-2, 1e-2)));
    try {
      compare_pair(k, differ, ParamModel(0), ParamModel(1));
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      // The batch-norm buffers and affine parameters start equal; the Linear's do not.
      CHECK(names_of(e) == std::vector<std::string>{"param:l.bias", "param:l.weight"});
    }
  }
  SUBCASE("patterns select by prefix match (Python's re.match); one matching nothing is an error naming it") {
    cmp::Comparer some(cmp::ComparerOptions().outputs(false).params({"l\\.w", "bn\\.running_"}));
    try {
      compare_pair(Kind::Evaluator, some, ParamModel(0), ParamModel(1));
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(names_of(e) == std::vector<std::string>{"param:l.weight"});
    }
    cmp::Comparer none(cmp::ComparerOptions().params("weight"));  // re.match: 'weight' is no prefix of 'l.weight'
    const std::string err = error_of([&] { compare_pair(Kind::Evaluator, none, ParamModel(0), ParamModel(0)); });
    CHECK(err.find("no parameter name matches the pattern 'weight'; the names: ['l.weight', 'l.bias', 'bn.weight'") !=
          std::string::npos);
  }
}

TEST_CASE("Comparer: tuple outputs are compared as output:0, output:1 (test_compare_tuple_output)") {
  std::mutex mutex;
  std::vector<std::string> names;
  auto record = [&](const std::string&, const std::string&, const std::string& name, const torch::Tensor&,
                    const torch::Tensor&) -> std::optional<std::string> {
    std::lock_guard lock(mutex);
    names.push_back(name);
    return std::nullopt;
  };
  cmp::Comparer comp(cmp::ComparerOptions().compare_fn(record));
  compare_pair(Kind::Evaluator, comp, Tuple(1.0), Tuple(1.0));
  CHECK(names.size() == 20);
  CHECK(names[0] == "output:0");
  CHECK(names[1] == "output:1");
}

namespace {

// PPE's ModelForIntermediateValue: five intermediate values per step.
struct IntermediateImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  torch::Tensor hidden;
  explicit IntermediateImpl(float v) {
    torch::manual_seed(0);
    l = register_module("l", torch::nn::Linear(10, 4));
    hidden = register_parameter("hidden", torch::full({4}, v));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = l(x);
    for (int i = 0; i < 5; ++i) cmp::intermediate_value("y", y + hidden + i);
    return y.abs().mean();
  }
};
TORCH_MODULE(Intermediate);

}  // namespace

TEST_CASE("Comparer: intermediate values (test_compare_intermediate(_invalid))") {
  cmp::intermediate_value("y", torch::ones({1}));  // outside a comparison: nothing happens
  for (Kind k : kKinds) {
    CAPTURE(kind_name(k));
    cmp::Comparer same;
    compare_pair(k, same, Intermediate(10.0f), Intermediate(10.0f), 1);
    cmp::Comparer differ(cmp::ComparerOptions().outputs(false));
    try {
      compare_pair(k, differ, Intermediate(10.0f), Intermediate(11.1f), 1);
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(names_of(e) == std::vector<std::string>{"intermediate:y_0", "intermediate:y_1", "intermediate:y_2",
                                                    "intermediate:y_3", "intermediate:y_4"});
    }
  }
}

namespace {

// Linear regression whose prediction is shifted by 0.5 at its
// `perturb_at`-th forward pass (never when 0): a planted difference.
struct RegressionImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  int calls = 0;
  int perturb_at = 0;
  RegressionImpl() {
    torch::manual_seed(0);
    l = register_module("l", torch::nn::Linear(3, 1));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
    auto y = l(x);
    if (++calls == perturb_at) y = y + 0.5;
    return torch::mse_loss(y, t);
  }
};
TORCH_MODULE(Regression);

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

std::vector<Batch> regression_data() {
  torch::manual_seed(1);
  std::vector<Batch> data;
  for (int i = 0; i < 4; ++i) data.emplace_back(torch::randn({8, 3}), torch::randn({8, 1}));
  return data;
}

// Trains a and b (SGD with lr_a, lr_b) for 2 epochs of 4 batches, compared
// at every iteration: outputs, parameters and gradients.
void compare_training(cmp::Comparer& comp, Regression a, Regression b, double lr_a = 0.1, double lr_b = 0.1) {
  ppe_test::TempDir dir;
  ppe::to(a, "cpu");
  ppe::to(b, "cpu");
  auto data = regression_data();
  torch::optim::SGD oa(a->parameters(), lr_a), ob(b->parameters(), lr_b);
  auto ta = ppe::engine::create_trainer(a, oa, 2, options(dir));
  auto tb = ppe::engine::create_trainer(b, ob, 2, options(dir));
  comp.add_engine("a", ta, data);
  comp.add_engine("b", tb, data);
  comp.compare();
}

cmp::ComparerOptions every_step() {
  return cmp::ComparerOptions().trigger(ppe::iterations(1)).params(true).grads(true);
}

}  // namespace

TEST_CASE("Comparer: a planted difference in training is caught at its step, with the values it changed") {
  SUBCASE("identical engines: 8 comparisons, all equal") {
    cmp::Comparer comp(every_step());
    compare_training(comp, Regression(), Regression());
    CHECK(comp.comparisons() == 8);
  }
  SUBCASE("b's prediction shifted at its 3rd step: the loss, gradients and parameters differ there") {
    Regression b;
    b->perturb_at = 3;
    cmp::Comparer comp(every_step());
    try {
      compare_training(comp, Regression(), b);
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(e.point() == cmp::Point{cmp::Phase::Train, 2, 3, 0});
      CHECK(e.index() == 2);  // steps 1 and 2 matched
      CHECK(names_of(e) ==
            std::vector<std::string>{"grad:l.bias", "grad:l.weight", "output:0", "param:l.bias", "param:l.weight"});
      CHECK(e.mismatches()[0].engine == "b");
      CHECK(std::string(e.what()).find("training iteration 3 (epoch 0, batch 2) (after 2 matching comparison points)") !=
            std::string::npos);
    }
    CHECK(comp.comparisons() == 2);
  }
  SUBCASE("a different learning rate: the parameters after the first step, nothing else") {
    cmp::Comparer comp(every_step());
    try {
      compare_training(comp, Regression(), Regression(), 0.1, 0.2);
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(e.point() == cmp::Point{cmp::Phase::Train, 0, 1, 0});
      CHECK(names_of(e) == std::vector<std::string>{"param:l.bias", "param:l.weight"});
    }
  }
  SUBCASE("the baseline option: 'b' is compared against (test_compare_baseline)") {
    Regression b;
    b->perturb_at = 5;
    cmp::Comparer comp(every_step().baseline("b"));
    try {
      compare_training(comp, Regression(), b);
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(e.point() == cmp::Point{cmp::Phase::Train, 0, 5, 1});  // the 2nd epoch's first batch
      CHECK(e.mismatches()[0].baseline == "b");
      CHECK(e.mismatches()[0].engine == "a");
    }
  }
}

TEST_CASE("Comparer: dump and add_dump (test_dump, test_dump_invalid)") {
  ppe_test::TempDir dir;
  // Dumps a trainer with an evaluator: 2 epochs of 3 batches, compared at
  // each epoch's end and at every evaluation step.
  auto dump = [&](cmp::Comparer& comp, Regression m, const std::string& sub) {
    ppe::to(m, "cpu");
    auto data = regression_data();
    data.resize(3);
    torch::optim::SGD o(m->parameters(), 0.1);
    auto t = ppe::engine::create_trainer(m, o, 2, options(dir), ppe::engine::create_evaluator(m));
    comp.dump(t, (dir / sub).string(), data, data);
  };
  cmp::Comparer writer(cmp::ComparerOptions().params(true));
  dump(writer, Regression(), "a");
  // PPE's file names for the same run (PPE 0.9.0's Comparer.dump of a trainer
  // with an evaluator, 2 epochs of 3 batches, listed with os.listdir).
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir / "a")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"dump_00000000_Trainer_epoch_0_iter_2", "dump_00000001_Evaluator_epoch_0_iter_0",
                                          "dump_00000002_Evaluator_epoch_0_iter_1", "dump_00000003_Evaluator_epoch_0_iter_2",
                                          "dump_00000004_Trainer_epoch_1_iter_2", "dump_00000005_Evaluator_epoch_1_iter_0",
                                          "dump_00000006_Evaluator_epoch_1_iter_1", "dump_00000007_Evaluator_epoch_1_iter_2"});
  const ppe::State first = ppe::serialization::load_file(dir / "a" / files[0]);
  CHECK(first.contains("output:0"));
  CHECK(first.contains("param:l.weight"));
  dump(writer, Regression(), "same");
  Regression perturbed;
  perturbed->perturb_at = 7;  // forwards 1-3 train epoch 0, 4-6 evaluate it: 7 is the 2nd epoch's first step
  dump(writer, perturbed, "perturbed");

  SUBCASE("two equal dumps") {
    cmp::Comparer comp;
    comp.add_dump("a", (dir / "a").string());
    comp.add_dump("same", (dir / "same").string());
    comp.compare();
    CHECK(comp.comparisons() == 8);
  }
  SUBCASE("a perturbed run: caught at the 2nd epoch's end, the first point after the change") {
    cmp::Comparer comp;
    comp.add_dump("a", (dir / "a").string());
    comp.add_dump("perturbed", (dir / "perturbed").string());
    try {
      comp.compare();
      FAIL("no ComparisonError");
    } catch (const cmp::ComparisonError& e) {
      CHECK(e.point() == cmp::Point{cmp::Phase::Train, 2, std::nullopt, 1});
      CHECK(e.index() == 4);
      CHECK(names_of(e) == std::vector<std::string>{"output:0", "param:l.bias", "param:l.weight"});
    }
  }
  SUBCASE("a live engine against a dump") {
    Regression m;
    ppe::to(m, "cpu");
    auto data = regression_data();
    data.resize(3);
    torch::optim::SGD o(m->parameters(), 0.1);
    auto t = ppe::engine::create_trainer(m, o, 2, options(dir), ppe::engine::create_evaluator(m));
    cmp::Comparer comp(cmp::ComparerOptions().params(true));
    comp.add_dump("saved", (dir / "a").string());
    comp.add_engine("live", t, data, data);
    comp.compare();
    CHECK(comp.comparisons() == 8);
  }
  SUBCASE("a dump with fewer points is an error") {
    std::filesystem::remove(dir / "same" / "dump_00000007_Evaluator_epoch_1_iter_2");
    cmp::Comparer comp;
    comp.add_dump("a", (dir / "a").string());
    comp.add_dump("same", (dir / "same").string());
    CHECK_THROWS_WITH_AS(comp.compare(), doctest::Contains("the engines reached different comparison points"),
                         std::runtime_error);
  }
  CHECK_THROWS_WITH_AS(writer.add_dump("x", (dir / "missing").string()), doctest::Contains("is not a directory"),
                       std::invalid_argument);
}

namespace {

// Named tensors in and out: runs under Logic and CodeBlockLogic alike.
struct MapImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  MapImpl() {
    torch::manual_seed(0);
    l = register_module("l", torch::nn::Linear(3, 1));
  }
  std::map<std::string, torch::Tensor> forward(const std::map<std::string, torch::Tensor>& b) {
    return {{"loss", torch::mse_loss(l(b.at("x")), b.at("t"))}};
  }
};
TORCH_MODULE(Map);

}  // namespace

TEST_CASE("Comparer: a model before and after a refactor: Logic against CodeBlockLogic") {
  ppe_test::TempDir dir;
  Map a, b;
  ppe::to(a, "cpu");
  ppe::to(b, "cpu");
  std::vector<std::map<std::string, torch::Tensor>> data;
  for (const auto& [x, t] : regression_data()) data.push_back({{"x", x}, {"t", t}});
  torch::optim::SGD oa(a->parameters(), 0.1), ob(b->parameters(), 0.1);
  auto ta = ppe::engine::create_trainer(a, oa, 2, options(dir));
  auto tb = ppe::engine::create_trainer(b, ob, 2, options(dir), ppe::engine::with_logic(ppe::handler::CodeBlockLogic(b)));
  cmp::Comparer comp(every_step());
  comp.add_engine("logic", ta, data);
  comp.add_engine("code_block", tb, data);
  comp.compare();
  CHECK(comp.comparisons() == 8);
}

TEST_CASE("Comparer: errors and the runtimes' restoration") {
  ppe_test::TempDir dir;
  auto loader = ones_loader();
  RetModel a(1.0), b(1.0);
  ppe::to(a, "cpu");
  ppe::to(b, "cpu");
  const auto rt_a = ppe::runtime::module_runtime(*a);
  torch::optim::SGD oa(a->parameters(), 1.0), ob(b->parameters(), 1.0);
  auto ta = ppe::engine::create_trainer(a, oa, 1, options(dir));
  auto tb = ppe::engine::create_trainer(b, ob, 1, options(dir));
  auto ea = ppe::engine::create_evaluator(a);
  SUBCASE("adding") {
    cmp::Comparer comp;
    comp.add_engine("a", ta, loader);
    CHECK_THROWS_WITH_AS(comp.add_engine("a", tb, loader), doctest::Contains("an engine named 'a' is already added"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(comp.add_engine("e", ea, loader),
                         doctest::Contains("'e' is an evaluator but 'a' is a trainer: all the engines must be of the same type"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(comp.compare(), doctest::Contains("needs at least two engines, got 1"), std::invalid_argument);
    cmp::Comparer with_trigger(cmp::ComparerOptions().trigger(ppe::iterations(2)));
    CHECK_THROWS_WITH_AS(with_trigger.add_engine("e", ea, loader), doctest::Contains("a trigger selects trainers' steps"),
                         std::invalid_argument);
  }
  SUBCASE("an engine that already ran") {
    tb.run(loader);
    cmp::Comparer comp;
    CHECK_THROWS_WITH_AS(comp.add_engine("b", tb, loader), doctest::Contains("already ran"), std::invalid_argument);
  }
  SUBCASE("two engines sharing a model; an unknown baseline") {
    auto ta2 = ppe::engine::create_trainer(a, ob, 1, options(dir));
    cmp::Comparer comp;
    comp.add_engine("a", ta, loader);
    comp.add_engine("a2", ta2, loader);
    CHECK_THROWS_WITH_AS(comp.compare(), doctest::Contains("the engines 'a' and 'a2' share the module"),
                         std::invalid_argument);
    cmp::Comparer unknown(cmp::ComparerOptions().baseline("gpu"));
    unknown.add_engine("a", ta, loader);
    unknown.add_engine("b", tb, loader);
    CHECK_THROWS_WITH_AS(unknown.compare(), doctest::Contains("the baseline 'gpu' is not an engine; engines: ['a', 'b']"),
                         std::invalid_argument);
  }
  SUBCASE("a model without a runtime") {
    RetModel c(1.0);
    torch::optim::SGD oc(c->parameters(), 1.0);
    auto tc = ppe::engine::create_trainer(c, oc, 1, options(dir));
    cmp::Comparer comp;
    comp.add_engine("a", ta, loader);
    comp.add_engine("c", tc, loader);
    CHECK_THROWS_WITH_AS(comp.compare(), doctest::Contains("call ppe::to(model, device) before comparing"),
                         std::invalid_argument);
  }
  SUBCASE("an engine's own error stops the comparison and is rethrown; the runtimes are restored") {
    Failing f(1.0);
    ppe::to(f, "cpu");
    torch::optim::SGD of(f->parameters(), 1.0);
    auto tf = ppe::engine::create_trainer(f, of, 1, options(dir));
    cmp::Comparer comp(cmp::ComparerOptions().trigger(ppe::iterations(1)));
    comp.add_engine("a", ta, loader);
    comp.add_engine("f", tf, loader);
    CHECK_THROWS_WITH_AS(comp.compare(), "planted failure", std::domain_error);
    CHECK(comp.comparisons() == 4);
    CHECK(ppe::runtime::module_runtime(*a) == rt_a);
    CHECK(ta.iteration() == 4);  // a stopped at the next comparison point
  }
  SUBCASE("no comparison point reached: a warning, not a silent pass") {
    ppe_test::WarningCollector warnings;
    cmp::Comparer comp(cmp::ComparerOptions().trigger(ppe::iterations(20)));  // 10 iterations
    comp.add_engine("a", ta, loader);
    comp.add_engine("b", tb, loader);
    comp.compare();
    CHECK(comp.comparisons() == 0);
    CHECK(warnings.all().find("no comparison point was reached") != std::string::npos);
  }
  SUBCASE("after a comparison the model's own runtime is back") {
    cmp::Comparer comp;
    comp.add_engine("a", ta, loader);
    comp.add_engine("b", tb, loader);
    comp.compare();
    CHECK(comp.comparisons() == 1);
    CHECK(ppe::runtime::module_runtime(*a) == rt_a);
    CHECK_THROWS_WITH_AS(comp.compare(), doctest::Contains("compared already"), std::logic_error);
  }
}

TEST_CASE("Comparer: get_default_comparer follows torch.testing.assert_close's rule") {
  const auto same = cmp::get_default_comparer();  // rtol 1e-4, atol 0, NaNs equal
  auto cmp_ = [](const cmp::CompareFn& f, const torch::Tensor& a, const torch::Tensor& b) {
    return f("x", "y", "v", a, b);
  };
  const auto a = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  CHECK_FALSE(cmp_(same, a, a.clone()));
  // |1.00005 - 1| = 5e-5 <= 1e-4 * 1.00005: close; 1.001: not.
  CHECK_FALSE(cmp_(same, torch::tensor({1.0}), torch::tensor({1.00005})));
  CHECK(cmp_(same, torch::tensor({1.0}), torch::tensor({1.001})));
  // Two elements differ; the greatest absolute difference is at index 3.
  // Two elements differ: by 0.5 (relative to 1.5: 0.333333) at index 1, by 1 (relative 0.2) at index 3.
  const auto d = cmp_(same, a, torch::tensor({1.0f, 1.5f, 3.0f, 5.0f}));
  REQUIRE(d);
  CHECK(*d == "2 of 4 elements differ (50%); the greatest absolute difference is 1 at index (3,), the greatest "
              "relative difference 0.333333 at index (1,) (allowed: |v1 - v2| <= 0 + 0.0001 * |v2|)");
  // NaN: equal to NaN by default (PPE's equal_nan=True), not otherwise.
  const auto nan = torch::tensor({std::numeric_limits<double>::quiet_NaN()});
  CHECK_FALSE(cmp_(same, nan, nan.clone()));
  CHECK(cmp_(cmp::get_default_comparer(1e-4, 0, false), nan, nan.clone()));
  // Shapes and dtypes must agree; integers are compared with the tolerances too.
  CHECK(*cmp_(same, torch::zeros({2, 3}), torch::zeros({3})) == "the shapes differ: [2, 3] vs [3]");
  CHECK(*cmp_(same, torch::zeros({2}), torch::zeros({2}, torch::kDouble)) == "the dtypes differ: Float vs Double");
  CHECK(cmp_(same, torch::tensor({7}), torch::tensor({8})));
  CHECK_FALSE(cmp_(cmp::get_default_comparer(0, 1), torch::tensor({7}), torch::tensor({8})));
  CHECK_THROWS_AS(cmp::get_default_comparer(-1), std::invalid_argument);
}

}  // namespace ppe_test_utils_tests_test_comparer
