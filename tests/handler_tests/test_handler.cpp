// PPE's handler_tests/test_handler.py: the Handler calls the hooks of the
// runtime of every module placed with ppe::to (the module itself, or each
// tagged submodule), converts batches with the entry runtime, calls the
// logic, and reports train_report_keys / eval_report_keys.

#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "test_util.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_handler_tests_test_handler {

namespace rep = ppe::reporting;
using ppe::handler::Outputs;

namespace {

// PPE's MockRuntime: moves nothing, records which hooks it saw for which module.
struct MockRuntime : ppe::runtime::BaseRuntime {
  using BaseRuntime::BaseRuntime;
  std::set<std::string> called;
  const torch::nn::Module* called_module = nullptr;
  void move_module(torch::nn::Module&) override {}
  at::Tensor move_tensor(const at::Tensor& t) override { return t; }
  void note(const char* hook, torch::nn::Module& m) {
    called.insert(hook);
    called_module = &m;
  }
  void initialize_module(torch::nn::Module& m, ppe::runtime::AnyRef loader, torch::optim::Optimizer*) override {
    CHECK(loader.has_value());
    note("initialize", m);
  }
  void train_epoch_begin(torch::nn::Module& m) override { note("train_epoch_begin", m); }
  void train_epoch_end(torch::nn::Module& m) override { note("train_epoch_end", m); }
  void train_cleanup(torch::nn::Module& m) override { note("train_cleanup", m); }
  void train_pre_step(ppe::runtime::AnyRef, torch::nn::Module& m, std::int64_t, ppe::runtime::AnyRef) override {
    note("train_pre_step", m);
  }
  void train_post_step(ppe::runtime::AnyRef, torch::nn::Module& m, std::int64_t, ppe::runtime::AnyRef,
                       ppe::runtime::AnyRef) override {
    note("train_post_step", m);
  }
  void train_validation_begin(torch::nn::Module& m) override { note("train_validation_begin", m); }
  void eval_pre_step(ppe::runtime::AnyRef, torch::nn::Module& m, std::int64_t, ppe::runtime::AnyRef) override {
    note("eval_pre_step", m);
  }
  void eval_post_step(ppe::runtime::AnyRef, torch::nn::Module& m, std::int64_t, ppe::runtime::AnyRef,
                      ppe::runtime::AnyRef) override {
    note("eval_post_step", m);
  }
};

// PPE's MockModule: two Linear(1, 1) submodules.
struct MockModuleImpl : torch::nn::Module {
  torch::nn::Linear sm1{nullptr}, sm2{nullptr};
  MockModuleImpl() {
    sm1 = register_module("sm1", torch::nn::Linear(1, 1));
    sm2 = register_module("sm2", torch::nn::Linear(1, 1));
  }
};
TORCH_MODULE(MockModule);

// PPE's MockLogic: records its hooks; the step returns {"0": batch * 2}.
struct MockLogic : ppe::handler::BaseLogic {
  std::set<std::string> called;
  void train_epoch_begin(const ppe::training::Models&, std::int64_t, std::int64_t) { called.insert("epoch_begin"); }
  void train_epoch_end(const ppe::training::Models&, std::int64_t) { called.insert("epoch_end"); }
  Outputs train_step(const ppe::training::Models&, const ppe::training::Optimizers&, std::int64_t, torch::Tensor& b) {
    called.insert("train_step");
    return ppe::handler::normalize_outputs(b * 2);
  }
  void train_step_optimizers(const ppe::training::Models&, const ppe::training::Optimizers&, std::int64_t) {
    called.insert("train_step_optimizers");
  }
  void train_validation_begin(const ppe::training::Models&) { called.insert("validation_begin"); }
  Outputs eval_step(const ppe::training::Models&, std::int64_t, torch::Tensor& b) {
    called.insert("eval_step");
    return ppe::handler::normalize_outputs(b * 3);
  }
};

// The entry runtime: marks converted batches by adding 1.
struct AddOne {
  void move_module(torch::nn::Module&) {}
  at::Tensor move_tensor(const at::Tensor& t) { return t + 1; }
};

// PPE's MockTrainer / MockEvaluator: what the handler reads.
struct Mock {
  MockModule module;
  ppe::training::Models models_{module};
  ppe::training::Optimizers optimizers_{};
  MockLogic logic_;
  AddOne runtime_;
  ppe::handler::Handler handler_;
  explicit Mock(ppe::handler::HandlerOptions o = {}) : handler_(std::move(o)) {}
  const ppe::training::Models& models() const { return models_; }
  const ppe::training::Optimizers& optimizers() const { return optimizers_; }
  MockLogic& logic() { return logic_; }
  AddOne& runtime() { return runtime_; }
  ppe::handler::Handler& handler() { return handler_; }
  std::int64_t epoch() const { return 0; }
};

using Placement = std::vector<std::string>;
const std::vector<Placement> kPlacements = {{"self"}, {"sm1"}, {"sm2"}, {"sm1", "sm2"}};

// Places the named parts on a MockRuntime ("self": the module and all of it).
void place(MockModule& m, const Placement& p) {
  for (const auto& name : p) {
    if (name == "self")
      ppe::to<MockRuntime>(m, "cpu");
    else
      ppe::to<MockRuntime>(name == "sm1" ? m->sm1 : m->sm2, "cpu");
  }
}

// PPE's _assert_called: the placed modules' runtimes saw `hook` for
// themselves; a module not placed was not the one a runtime was called for.
void check_called(MockModule& m, const Placement& p, const std::string& hook) {
  const std::vector<std::pair<std::string, torch::nn::Module*>> parts = {
      {"self", m.ptr().get()}, {"sm1", m->sm1.ptr().get()}, {"sm2", m->sm2.ptr().get()}};
  for (const auto& [name, mod] : parts) {
    auto rt = std::dynamic_pointer_cast<MockRuntime>(ppe::runtime::module_runtime(*mod));
    if (std::find(p.begin(), p.end(), name) != p.end()) {
      REQUIRE(rt);
      CHECK(rt->called.count(hook) == 1);
      CHECK(rt->called_module == mod);
    } else if (rt) {
      CHECK(rt->called_module != mod);
    }
  }
}

}  // namespace

TEST_CASE("Handler: the runtime hooks of each placed module, and the logic (PPE's TestHandlerTrainSync)") {
  for (const Placement& p : kPlacements) {
    CAPTURE(p.size());
    CAPTURE(p.front());
    Mock t;
    place(t.module, p);
    std::vector<int> loader;
    SUBCASE("train_setup") {
      t.handler_.train_setup(t, loader);
      check_called(t.module, p, "initialize");
      CHECK(t.module->is_training());
    }
    SUBCASE("train_cleanup") {
      t.handler_.train_cleanup(t);
      check_called(t.module, p, "train_cleanup");
    }
    SUBCASE("train_epoch_begin / end") {
      t.handler_.train_epoch_begin(t, 1);
      check_called(t.module, p, "train_epoch_begin");
      CHECK(t.logic_.called.count("epoch_begin") == 1);
      t.handler_.train_epoch_end(t);
      check_called(t.module, p, "train_epoch_end");
      CHECK(t.logic_.called.count("epoch_end") == 1);
    }
    SUBCASE("train_step: converted batch, logic step and optimizers, then complete(idx, outs)") {
      torch::Tensor batch = torch::ones({1});
      int completions = 0;
      t.handler_.train_step(t, 0, batch, [&](std::int64_t idx, const Outputs& outs) {
        ++completions;
        CHECK(idx == 0);
        CHECK(outs.find("0")->item<float>() == 4.0f);  // (1 + 1) * 2: the logic saw the converted batch
      });
      CHECK(completions == 1);
      check_called(t.module, p, "train_pre_step");
      CHECK(t.logic_.called.count("train_step_optimizers") == 1);
    }
    SUBCASE("train_post_step reports train/<key>") {
      Mock r(ppe::handler::HandlerOptions().train_report_keys({"output"}));
      place(r.module, p);
      rep::Reporter reporter;
      rep::Observation obs;
      {
        auto scope = reporter.scope(obs);
        std::map<std::string, torch::Tensor> outs{{"output", torch::ones({})}};
        r.handler_.train_post_step(r, 0, 0, outs);
      }
      CHECK(obs.at("train/output").to_double() == 1.0);
      check_called(r.module, p, "train_post_step");
    }
  }
}

TEST_CASE("Handler: evaluation hooks (PPE's TestHandlerValidationSync)") {
  for (const Placement& p : kPlacements) {
    CAPTURE(p.front());
    Mock e;
    place(e.module, p);
    std::vector<int> loader;
    SUBCASE("eval_setup") {
      e.handler_.eval_setup(e, loader);
      check_called(e.module, p, "initialize");
      CHECK_FALSE(e.module->is_training());
    }
    SUBCASE("train_validation_begin: the evaluator's modules and logic") {
      e.handler_.train_validation_begin(e, e);
      check_called(e.module, p, "train_validation_begin");
      CHECK(e.logic_.called.count("validation_begin") == 1);
    }
    SUBCASE("eval_step") {
      torch::Tensor batch = torch::ones({1});
      int completions = 0;
      e.handler_.eval_step(e, 0, batch, [&](std::int64_t idx, const torch::Tensor& converted, const Outputs& outs) {
        ++completions;
        CHECK(idx == 0);
        CHECK(converted.item<float>() == 2.0f);
        CHECK(outs.find("0")->item<float>() == 6.0f);
      });
      CHECK(completions == 1);
      check_called(e.module, p, "eval_pre_step");
    }
    SUBCASE("eval_post_step reports val/<key>") {
      Mock r(ppe::handler::HandlerOptions().eval_report_keys({"output"}));
      place(r.module, p);
      rep::Reporter reporter;
      rep::Observation obs;
      {
        auto scope = reporter.scope(obs);
        std::map<std::string, torch::Tensor> outs{{"output", torch::ones({})}};
        r.handler_.eval_post_step(r, 0, 0, outs);
      }
      CHECK(obs.at("val/output").to_double() == 1.0);
      check_called(r.module, p, "eval_post_step");
    }
  }
}

TEST_CASE("Handler: without any placed module, setup is an error naming ppe::to; a missing report key is named") {
  Mock t;
  std::vector<int> loader;
  CHECK_THROWS_WITH_AS(t.handler_.train_setup(t, loader), doctest::Contains("call ppe::to(module, device)"),
                       std::runtime_error);
  Mock r(ppe::handler::HandlerOptions().train_report_keys({"missing"}));
  ppe::to(r.module, "cpu");
  std::map<std::string, torch::Tensor> outs{{"output", torch::ones({})}};
  rep::Reporter reporter;
  auto scope = reporter.scope();
  CHECK_THROWS_WITH_AS(r.handler_.train_post_step(r, 0, 0, outs), doctest::Contains("'missing' not found"),
                       std::out_of_range);
}

TEST_CASE("Handler: consume_options pops PPE's handler keys") {
  ppe::handler::Handler h;
  ppe::State o = ppe::State::dict({{"train_report_keys", ppe::State::list({"a"})},
                                   {"eval_report_keys", ppe::State::list({"b"})},
                                   {"async", true},
                                   {"other", 1}});
  h.consume_options(o);
  CHECK(o.size() == 1);
  CHECK(h.options().train_report_keys() == std::vector<std::string>{"a"});
  CHECK(h.options().eval_report_keys() == std::vector<std::string>{"b"});
  ppe::State bad = ppe::State::dict({{"train_report_keys", "a"}});
  CHECK_THROWS_WITH_AS(h.consume_options(bad), doctest::Contains("must be a list of strings"), std::invalid_argument);
}

TEST_CASE("Handler: merge_options sets the report keys the given options set, and keeps the others") {
  ppe::handler::Handler h(ppe::handler::HandlerOptions().train_report_keys({"a"}).eval_report_keys({"b"}));
  h.merge_options(ppe::handler::HandlerOptions().eval_report_keys({"c"}));
  CHECK(h.options().train_report_keys() == std::vector<std::string>{"a"});
  CHECK(h.options().eval_report_keys() == std::vector<std::string>{"c"});
  // The reported names follow the merged keys.
  Mock r;
  r.handler_.merge_options(ppe::handler::HandlerOptions().eval_report_keys({"output"}));
  ppe::to(r.module, "cpu");
  rep::Reporter reporter;
  rep::Observation obs;
  {
    auto scope = reporter.scope(obs);
    std::map<std::string, torch::Tensor> outs{{"output", torch::full({}, 2.0)}};
    r.handler_.eval_post_step(r, 0, 0, outs);
  }
  CHECK(obs.at("val/output").to_double() == 2.0);
}

}  // namespace ppe_test_handler_tests_test_handler
