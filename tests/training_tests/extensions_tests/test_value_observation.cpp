// Port of PPE's tests/.../extensions_tests/test_value_observation.py (table
// F3), plus PPE's defaults (name, trigger, priority), param groups, every
// torch::optim optimizer and the errors, which are ours.
#include "ppe_test.hpp"

#include <ppe/training/extensions/value_observation.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_value_observation {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

double observed(const tr::Manager& m, std::string_view key) { return m.observation().at(key).to_double(); }

/// An SGD optimizer with two param groups: lr 0.1 (the default) and 0.5.
struct TwoGroups {
  torch::nn::Linear a{2, 2}, b{2, 2};
  torch::optim::SGD sgd{std::vector<torch::optim::OptimizerParamGroup>{
                            torch::optim::OptimizerParamGroup(a->parameters()),
                            torch::optim::OptimizerParamGroup(b->parameters(),
                                                              std::make_unique<torch::optim::SGDOptions>(0.5))},
                        torch::optim::SGDOptions(0.1)};
};

std::vector<torch::Tensor> one_parameter() { return {torch::zeros({1}, torch::requires_grad())}; }

}  // namespace

// PPE test_observe_value: max_epochs 1, ipe 1; observe_value("lr", lambda m: 0.1).
TEST_CASE("PPE test_observe_value") {
  auto manager = ppe_test::make_manager(1, 1, ext::observe_value("lr", [](tr::Manager&) { return 0.1; }));
  ppe_test::step(manager);
  CHECK(observed(manager, "lr") == 0.1);
}

// PPE test_observe_lr: Adam(lr=0.01).
TEST_CASE("PPE test_observe_lr") {
  torch::nn::Linear model(1, 1);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(0.01));
  auto manager = ppe_test::make_manager(1, 1, ext::observe_lr(adam));
  ppe_test::step(manager);
  CHECK(observed(manager, "lr") == 0.01);
}

TEST_CASE("observe_value: PPE's name, trigger (every epoch) and priority (writer)") {
  auto e = ext::observe_value("x", [](tr::Manager& m) { return m.iteration(); });
  CHECK(e.name == "_observe_value");
  CHECK(decltype(e)::priority == tr::kPriorityWriter);
  CHECK(e.trigger.training_length() == tr::TrainingLength{1, tr::Unit::Epoch});

  // ipe 3: the value is in the observation at iterations 3 and 6 only, and a
  // reader registered before the writer still sees it in the same iteration.
  std::vector<std::int64_t> seen;
  torch::optim::SGD sgd(one_parameter(), torch::optim::SGDOptions(0.3));
  auto manager = ppe_test::make_manager(
      2, 3,
      tr::make_extension(
          [&seen](tr::Manager& m) {
            if (m.observation().contains("x")) seen.push_back(static_cast<std::int64_t>(observed(m, "x")));
          },
          ppe::iterations(1), "reader"),
      std::move(e), ext::observe_lr(sgd));
  for (int i = 0; i < 6; ++i) ppe_test::step(manager);
  CHECK(seen == std::vector<std::int64_t>{3, 6});
  // A second one gets a suffix on the default name (PPE names it "None_1").
  CHECK(manager.extension_names() == std::vector<std::string>{"reader", "_observe_value", "_observe_value_1"});
}

TEST_CASE("observe_value/observe_lr: the trigger and the name can be overridden") {
  torch::optim::SGD sgd(one_parameter(), torch::optim::SGDOptions(0.3));
  auto lr = ext::observe_lr(sgd, 0, "lr", ppe::iterations(2));
  lr.name = "observe_lr";
  std::vector<double> seen;
  auto manager = ppe_test::make_manager(
      1, 10, std::move(lr),
      tr::entry(ext::observe_value("it", [](tr::Manager& m) { return m.iteration(); }).extension, ppe::iterations(1),
                "observe_it", tr::priority<tr::kPriorityWriter>),
      tr::make_extension([&seen](tr::Manager& m) { seen.push_back(m.observation().contains("lr") ? observed(m, "lr") : 0); },
                         ppe::iterations(1), "reader"));
  for (int i = 0; i < 4; ++i) {
    ppe_test::step(manager);
    CHECK(observed(manager, "it") == i + 1);
  }
  CHECK(seen == std::vector<double>{0, 0.3, 0, 0.3});
  CHECK(manager.extension_names() == std::vector<std::string>{"observe_lr", "observe_it", "reader"});
}

TEST_CASE("observe_lr: param groups by index, Python-style negative indices, the key") {
  TwoGroups g;
  auto manager = ppe_test::make_manager(1, 1, ext::observe_lr(g.sgd), ext::observe_lr(g.sgd, 1, "lr1"),
                                        ext::observe_lr(g.sgd, -1, "last"), ext::observe_lr(g.sgd, -2, "first"));
  ppe_test::step(manager);
  CHECK(observed(manager, "lr") == 0.1);
  CHECK(observed(manager, "lr1") == 0.5);
  CHECK(observed(manager, "last") == 0.5);
  CHECK(observed(manager, "first") == 0.1);
}

TEST_CASE("observe_lr: an index out of range is a clear error, at construction and when called") {
  TwoGroups g;
  CHECK_THROWS_WITH_AS(ext::observe_lr(g.sgd, 2),
                       "ppe: observe_lr param_group 2 is out of range: the optimizer has 2 parameter group(s), so the "
                       "index must be in [-2, 1]",
                       std::out_of_range);
  CHECK_THROWS_AS(ext::observe_lr(g.sgd, -3), std::out_of_range);

  // The groups can change after construction.
  torch::optim::SGD sgd(std::vector<torch::optim::OptimizerParamGroup>{
                            torch::optim::OptimizerParamGroup(one_parameter()),
                            torch::optim::OptimizerParamGroup(one_parameter())},
                        torch::optim::SGDOptions(0.1));
  auto manager = ppe_test::make_manager(1, 1, ext::observe_lr(sgd, 1));
  sgd.param_groups().pop_back();
  CHECK_THROWS_WITH_AS(ppe_test::step(manager), doctest::Contains("param_group 1 is out of range"), std::out_of_range);
}

TEST_CASE("observe_lr: the learning rate is read when the extension runs") {
  torch::optim::SGD sgd(one_parameter(), torch::optim::SGDOptions(1.0));
  auto manager = ppe_test::make_manager(3, 1, ext::observe_lr(sgd));
  for (double lr : {0.5, 0.25, 0.125}) {
    manager.run_iteration([&] { sgd.param_groups()[0].options().set_lr(lr); });
    CHECK(observed(manager, "lr") == lr);
  }
}

TEST_CASE("observe_lr: every torch::optim optimizer") {
  namespace o = torch::optim;
  auto params = one_parameter();
  o::SGD sgd(params, o::SGDOptions(0.1));
  o::Adam adam(params, o::AdamOptions(0.2));
  o::AdamW adamw(params, o::AdamWOptions(0.3));
  o::Adagrad adagrad(params, o::AdagradOptions(0.4));
  o::RMSprop rmsprop(params, o::RMSpropOptions(0.5));
  o::LBFGS lbfgs(params, o::LBFGSOptions(0.6));
  auto manager = ppe_test::make_manager(1, 1, ext::observe_lr(sgd, 0, "sgd"), ext::observe_lr(adam, 0, "adam"),
                                        ext::observe_lr(adamw, 0, "adamw"), ext::observe_lr(adagrad, 0, "adagrad"),
                                        ext::observe_lr(rmsprop, 0, "rmsprop"), ext::observe_lr(lbfgs, 0, "lbfgs"));
  ppe_test::step(manager);
  CHECK(observed(manager, "sgd") == 0.1);
  CHECK(observed(manager, "adam") == 0.2);
  CHECK(observed(manager, "adamw") == 0.3);
  CHECK(observed(manager, "adagrad") == 0.4);
  CHECK(observed(manager, "rmsprop") == 0.5);
  CHECK(observed(manager, "lbfgs") == 0.6);
}

TEST_CASE("observe_lr: a shared_ptr optimizer is kept alive by the extension") {
  auto e = [] {
    auto adam = std::make_shared<torch::optim::Adam>(one_parameter(), torch::optim::AdamOptions(0.02));
    return ext::observe_lr(adam);
  }();
  auto manager = ppe_test::make_manager(1, 1, std::move(e));
  ppe_test::step(manager);
  CHECK(observed(manager, "lr") == 0.02);
}

TEST_CASE("observe_value: tensors (stored detached), deferred values, runtime extend") {
  auto w = torch::ones({1}, torch::requires_grad());
  auto manager = ppe_test::make_manager(1, 1, ext::observe_value("t", [&w](tr::Manager&) { return w * 3; }));
  manager.extend(ext::observe_value(
      "deferred", [](tr::Manager&) { return ppe::reporting::Value([] { return 7.0; }); }, ppe::iterations(1)));
  ppe_test::step(manager);
  const auto& t = manager.observation().at("t");
  REQUIRE(t.is_tensor());
  CHECK_FALSE(t.tensor().requires_grad());
  CHECK(t.to_double() == 3.0);
  CHECK(manager.observation().at("deferred").is_deferred());
  CHECK(observed(manager, "deferred") == 7.0);
  CHECK(manager.extension_names() == std::vector<std::string>{"_observe_value", "_observe_value_1"});
}

TEST_CASE("observe_value writes the observation directly: no observer prefix") {
  torch::nn::Linear model(1, 1);
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 1), model, tr::Optimizers{},
                                       ext::observe_value("v", [](tr::Manager&) { return 1; }));
  ppe_test::step(manager);
  CHECK(manager.observation().keys() == std::vector<std::string>{"v"});
}

TEST_CASE("observe_value: an empty key is an error") {
  CHECK_THROWS_WITH_AS(ext::observe_value("", [](tr::Manager&) { return 1.0; }),
                       "ppe: observe_value needs a non-empty observation key", std::invalid_argument);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_value_observation
