// Port of PPE's tests/.../extensions_tests/test_evaluator.py (evaluation
// results, metrics, names, current report, tuple and dict batches, eval_func,
// progress bar), plus what is ours: exact progress-bar bytes on a terminal and
// on a plain stream, LibTorch data loaders, train/eval mode and no-grad, the
// evaluator inside a manager (trigger, name, submodules, priority), eval_hook,
// fresh observations per batch, errors. PPE's DistributedEvaluator and
// IgniteEvaluator cases do not apply.
#include "ppe_test.hpp"

#include <ppe/training/extensions/evaluator.hpp>

#include <map>
#include <sstream>

#include "pseudo_terminal.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_evaluator {

namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace rep = ppe::reporting;

namespace {

/// PPE's DummyModel: records its argument, reports its sum as "loss" with
/// itself as the observer, returns it.
struct DummyModelImpl : torch::nn::Module {
  std::vector<torch::Tensor> args;
  torch::Tensor forward(const torch::Tensor& x) {
    args.push_back(x);
    rep::report({{"loss", x.sum()}}, this);
    return x;
  }
};
TORCH_MODULE(DummyModel);

/// PPE's DummyModelTwoArgs: reports `x.sum() + y.sum()`, returns nothing.
struct TwoArgsImpl : torch::nn::Module {
  std::vector<std::pair<torch::Tensor, torch::Tensor>> args;
  void forward(const torch::Tensor& x, const torch::Tensor& y) {
    args.emplace_back(x, y);
    rep::report({{"loss", x.sum() + y.sum()}}, this);
  }
};
TORCH_MODULE(TwoArgs);

/// A model with a submodule "enc": reports "top", then runs the child.
struct OuterImpl : torch::nn::Module {
  DummyModel enc{register_module("enc", DummyModel())};
  torch::Tensor forward(const torch::Tensor& x) {
    rep::report({{"top", x.sum()}}, this);
    return enc(x);
  }
};
TORCH_MODULE(Outer);

/// Two batches whose sums are 12 and -6 (2*3*4 = 24 elements of 0.5 and of
/// -0.25): the mean loss is (12 - 6) / 2 = 3.
std::vector<torch::Tensor> two_batches() { return {torch::full({2, 3, 4}, 0.5), torch::full({2, 3, 4}, -0.25)}; }
constexpr double kExpectMean = 3.0;

double value(const rep::Observation& o, std::string_view key) { return o.at(key).to_double(); }

bool same_tensors(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

/// A dataset of (x[i], t[i]) examples for LibTorch data loaders.
struct PairDataset : torch::data::datasets::Dataset<PairDataset> {
  torch::Tensor x, t;
  PairDataset(torch::Tensor x_, torch::Tensor t_) : x(std::move(x_)), t(std::move(t_)) {}
  torch::data::Example<> get(std::size_t i) override {
    const auto k = static_cast<std::int64_t>(i);
    return {x[k], t[k]};
  }
  torch::optional<std::size_t> size() const override { return static_cast<std::size_t>(x.size(0)); }
};

/// A sequential LibTorch loader over 5 examples x = [1..5], t = 10 x, in
/// batches of 2 (sizes 2, 2, 1).
auto make_loader() {
  auto x = torch::arange(1, 6, torch::kDouble).reshape({5, 1});
  return torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      PairDataset(x, x * 10).map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions().batch_size(2));
}

}  // namespace

// ---- PPE's cases ------------------------------------------------------------

TEST_CASE("PPE test_evaluate: evaluate() averages into a fresh observation and reports nothing itself") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target);
  rep::Reporter reporter;
  reporter.add_observer("target", target);
  rep::Observation mean;
  {
    auto scope = reporter.scope();
    mean = evaluator.evaluate();
  }
  // Nothing goes to the current reporter: the evaluator collects the values.
  CHECK(reporter.observation().empty());
  CHECK(same_tensors(target->args, data));
  CHECK(value(mean, "target/loss") == doctest::Approx(kExpectMean));
}

TEST_CASE("PPE test_metric: a metric's reports join the result") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target);
  evaluator.add_metric([](const torch::Tensor&, const torch::Tensor& out, bool) {
    rep::report({{"custom-metric", out.sum()}});
  });
  const rep::Observation mean = evaluator();
  CHECK(mean.contains("custom-metric"));
  CHECK(value(mean, "custom-metric") == doctest::Approx(kExpectMean));  // out is the batch: same sums
  CHECK(value(mean, "main/loss") == doctest::Approx(kExpectMean));       // "main" is used by default
}

TEST_CASE("PPE test_call: called without a manager, the target is 'main'") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target);
  const rep::Observation mean = evaluator();
  CHECK(mean.keys() == std::vector<std::string>{"main/loss"});
  CHECK(value(mean, "main/loss") == doctest::Approx(kExpectMean));
}

TEST_CASE("PPE test_evaluator_name: the name prefixes the observers") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target);
  evaluator.set_name("eval");
  const rep::Observation mean = evaluator();
  CHECK(value(mean, "eval/main/loss") == doctest::Approx(kExpectMean));
}

TEST_CASE("PPE test_current_report: the result is reported to the current reporter") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target);
  rep::Reporter reporter;
  rep::Observation mean;
  {
    auto scope = reporter.scope();
    mean = evaluator();
  }
  REQUIRE(reporter.observation().keys() == mean.keys());
  for (auto [k, v] : mean) CHECK(value(reporter.observation(), k) == v.to_double());
}

TEST_CASE("PPE test_evaluator_tuple_data: a tuple batch is unpacked into the arguments") {
  // Sums: batch 0 x 24*0.5 + y 24*1 = 36; batch 1 x 24*(-1) + y 24*0.25 = -18; mean 9.
  std::vector<std::tuple<torch::Tensor, torch::Tensor>> data{
      {torch::full({2, 3, 4}, 0.5), torch::full({2, 3, 4}, 1.0)},
      {torch::full({2, 3, 4}, -1.0), torch::full({2, 3, 4}, 0.25)}};
  TwoArgs target;
  ext::Evaluator evaluator(data, target);
  rep::Reporter reporter;
  reporter.add_observer("target", target);
  auto scope = reporter.scope();
  const rep::Observation mean = evaluator.evaluate();
  REQUIRE(target->args.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(torch::equal(target->args[i].first, std::get<0>(data[i])));
    CHECK(torch::equal(target->args[i].second, std::get<1>(data[i])));
  }
  CHECK(value(mean, "target/loss") == doctest::Approx(9.0));
}

TEST_CASE("PPE test_evaluator_dict_data: a name->tensor batch goes whole to the evaluation function") {
  // C++ has no keyword arguments: the function receives the map (PPE: f(**batch)).
  // Sums as in the tuple case: mean 9.
  using Batch = std::map<std::string, torch::Tensor>;
  std::vector<Batch> data{{{"x", torch::full({2, 3, 4}, 0.5)}, {"y", torch::full({2, 3, 4}, 1.0)}},
                          {{"x", torch::full({2, 3, 4}, -1.0)}, {"y", torch::full({2, 3, 4}, 0.25)}}};
  TwoArgs target;
  ext::Evaluator evaluator(data, target, [&](const Batch& b) { target->forward(b.at("x"), b.at("y")); });
  rep::Reporter reporter;
  reporter.add_observer("target", target);
  auto scope = reporter.scope();
  const rep::Observation mean = evaluator.evaluate();
  REQUIRE(target->args.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(torch::equal(target->args[i].first, data[i].at("x")));
    CHECK(torch::equal(target->args[i].second, data[i].at("y")));
  }
  CHECK(value(mean, "target/loss") == doctest::Approx(9.0));
}

TEST_CASE("PPE test_evaluator_with_eval_func: no targets, a module as the evaluation function") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, {}, target);
  CHECK(evaluator.targets().empty());
  rep::Reporter reporter;
  reporter.add_observer("target", target);
  auto scope = reporter.scope();
  evaluator.evaluate();
  CHECK(same_tensors(target->args, data));
}

// ---- the progress bar ---------------------------------------------------------

// PPE's test_evaluator_progress_bar checks substrings of its terminal display;
// here the exact bytes, on a pseudo-terminal, with a fake clock: each batch
// takes 0.5 s. As PPE (verified with PPE 0.9.0 on two batches), the frame drawn
// for batch i shows i batches done, and close() erases the display:
//   frame 0 (t 0):   0/2 = 0.00%, speed over one sample: inf, ETA (1 - 0) / inf = 0
//   frame 1 (t 0.5): 1/2 = 50.00% (25 of 50 marks), (1 - 0) / 0.5 = 2 iters/sec,
//                    epochs/sec (0.5 - 0) / 0.5 = 1, ETA (1 - 0.5) / 1 = 0.5 s
TEST_CASE("Progress bar on a terminal: PPE's three lines, byte for byte") {
  for (const std::string name : {"", "my_own_evaluator"}) {
    CAPTURE(name);
    ppe_test::PseudoTerminal pty;
    ppe::detail::FdOStream tty(pty.slave_fd());
    ppe_test::FakeClock clock;
    auto data = two_batches();
    DummyModel target;
    ext::Evaluator evaluator(data, {}, [&](const torch::Tensor& x) {
      clock.advance(0.5);
      return target(x);
    }, ext::EvaluatorOptions().progress_bar(true).out(&tty).clock(clock.fn()));
    if (!name.empty()) evaluator.set_name(name);  // PPE's test_evaluator_progress_bar_custom_label
    evaluator.evaluate();
    tty.flush();
    const std::string label = name.empty() ? "validation" : name;
    const std::string pad(label.size() - 1, ' ');  // numbers are right-aligned to the label's width
    const std::string expected = "\033[J" + label + " [" + std::string(50, '.') + "]  0.00%\n" + pad +
                                 "0 iterations\n" + std::string(label.size() - 3, ' ') +
                                 "inf iters/sec. Estimated time to finish: 0:00:00.\n\033[3A" + "\033[J" + label +
                                 " [" + std::string(25, '#') + std::string(25, '.') + "] 50.00%\n" + pad +
                                 "1 iterations\n" + pad + "2 iters/sec. Estimated time to finish: 0:00:00.500000.\n" +
                                 "\033[3A" + "\033[J";
    CHECK(pty.read_all() == expected);
  }
}

TEST_CASE("Progress bar on a terminal: a failing pass erases its display") {
  ppe_test::PseudoTerminal pty;
  ppe::detail::FdOStream tty(pty.slave_fd());
  auto data = two_batches();
  ext::Evaluator evaluator(data, {}, [](const torch::Tensor&) -> torch::Tensor { throw std::runtime_error("boom"); },
                           ext::EvaluatorOptions().progress_bar(true).out(&tty));
  CHECK_THROWS_WITH_AS(evaluator.evaluate(), "boom", std::runtime_error);
  tty.flush();
  const std::string bytes = pty.read_all();
  CHECK(bytes.rfind("\033[J", 0) == 0);                            // the first frame
  CHECK(bytes.substr(bytes.size() - 7) == "\033[3A\033[J");          // then erased
}

// On a plain stream: one line after each batch, no control characters.
//   after batch 1 (t 0.5): 1 / 2, 50.00%, 1 / 0.5 = 2 iters/sec, ETA (1 - 0.5) / (0.5 / 0.5) = 0.5 s
//   after batch 2 (t 1.0): 2 / 2, 100.00%, 2 / 1.0 = 2 iters/sec, nothing remains: ETA 0
TEST_CASE("Progress bar on a plain stream: one line per batch") {
  std::ostringstream out;
  ppe_test::FakeClock clock;
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, {}, [&](const torch::Tensor& x) {
    clock.advance(0.5);
    return target(x);
  }, ext::EvaluatorOptions().progress_bar(true).out(&out).clock(clock.fn()));
  evaluator.evaluate();
  CHECK(out.str() ==
        "validation: 1 / 2 iterations, 50.00%, 2 iters/sec, ETA 0:00:00.500000\n"
        "validation: 2 / 2 iterations, 100.00%, 2 iters/sec, ETA 0:00:00\n");
}

// A LibTorch data loader has no size: the first pass shows counts and speed
// only (PPE needs len(loader)); later passes know the count from the first,
// and num_batches gives it up front. Batches take 1 s each (3 batches).
TEST_CASE("Progress bar of a loader without size: counted on the first pass, or given") {
  std::ostringstream out;
  ppe_test::FakeClock clock;
  auto loader = make_loader();
  auto eval_func = [&](const torch::Tensor& x, const torch::Tensor&) {
    clock.advance(1.0);
    return x;
  };
  ext::Evaluator evaluator(*loader, {}, eval_func, ext::EvaluatorOptions().progress_bar(true).out(&out).clock(clock.fn()));
  evaluator.evaluate();
  CHECK(out.str() ==
        "validation: 1 iterations, 1 iters/sec\n"
        "validation: 2 iterations, 1 iters/sec\n"
        "validation: 3 iterations, 1 iters/sec\n");
  out.str("");
  evaluator.evaluate();  // 1/3 done after 1 s: 1/3 epoch per second, 2/3 left: 2 s
  CHECK(out.str() ==
        "validation: 1 / 3 iterations, 33.33%, 1 iters/sec, ETA 0:00:02\n"
        "validation: 2 / 3 iterations, 66.67%, 1 iters/sec, ETA 0:00:01\n"
        "validation: 3 / 3 iterations, 100.00%, 1 iters/sec, ETA 0:00:00\n");

  std::ostringstream given;
  ext::Evaluator told(*loader, {}, eval_func,
                      ext::EvaluatorOptions().progress_bar(true).out(&given).clock(clock.fn()).num_batches(4));
  told.evaluate();
  CHECK(given.str().rfind("validation: 1 / 4 iterations, 25.00%", 0) == 0);
}

TEST_CASE("No progress bar unless asked") {
  std::ostringstream out;
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target, ext::EvaluatorOptions().out(&out));
  evaluator();
  CHECK(out.str().empty());
}

// ---- batches and loaders ----------------------------------------------------------

// Examples x = [1..5], t = 10 x in batches [1, 2], [3, 4], [5]: the losses
// sum(x) + sum(t) = 11 * sum(x) are 33, 77, 55; their mean is 165 / 3 = 55.
TEST_CASE("A LibTorch data loader: Example batches as (data, target), by reference or owned, every pass whole") {
  TwoArgs target;
  SUBCASE("by reference to the unique_ptr") {
    auto loader = make_loader();
    ext::Evaluator evaluator(loader, target);
    CHECK(value(evaluator(), "main/loss") == doctest::Approx(55.0));
    CHECK(value(evaluator(), "main/loss") == doctest::Approx(55.0));  // a new pass each time
    CHECK(target->args.size() == 6);
  }
  SUBCASE("owned (moved in)") {
    ext::Evaluator evaluator(make_loader(), target);
    static_assert(!std::is_copy_constructible_v<decltype(evaluator)>);
    CHECK(value(evaluator(), "main/loss") == doctest::Approx(55.0));
    CHECK(torch::equal(target->args[2].first, torch::full({1, 1}, 5.0, torch::kDouble)));
    CHECK(torch::equal(target->args[2].second, torch::full({1, 1}, 50.0, torch::kDouble)));
  }
}

TEST_CASE("Metrics get the batch, the outputs and whether the batch is the last one") {
  SUBCASE("a single-pass loader (LibTorch): batches [1, 2], [3, 4], [5]") {
    auto loader = make_loader();
    ext::Evaluator evaluator(loader, {}, [](const torch::Tensor& x, const torch::Tensor&) { return x * 2; });
    std::vector<double> sums;
    std::vector<bool> last;
    evaluator.add_metric([&](const torch::data::Example<>& b, const torch::Tensor& out, bool is_last) {
      CHECK(torch::equal(out, b.data * 2));
      sums.push_back(b.data.sum().item<double>());
      last.push_back(is_last);
    });
    evaluator();
    CHECK(sums == std::vector<double>{3, 7, 5});
    CHECK(last == std::vector<bool>{false, false, true});
  }
  SUBCASE("a vector") {
    auto data = two_batches();
    DummyModel target;
    ext::Evaluator evaluator(data, target);
    std::vector<bool> last;
    evaluator.add_metric([&](const torch::Tensor&, const torch::Tensor&, bool is_last) { last.push_back(is_last); });
    evaluator();
    CHECK(last == std::vector<bool>{false, true});
  }
}

TEST_CASE("An evaluation function that returns nothing gives metrics NoOutput") {
  auto data = two_batches();
  int calls = 0;
  ext::Evaluator evaluator(data, {}, [](const torch::Tensor&) {});
  evaluator.add_metric([&](const torch::Tensor&, const tr::metrics::NoOutput&, bool) { ++calls; });
  CHECK(evaluator().empty());
  CHECK(calls == 2);
}

TEST_CASE("A function taking the whole Example is given the whole batch") {
  auto loader = make_loader();
  double total = 0;
  ext::Evaluator evaluator(loader, {}, [&](const torch::data::Example<>& b) { total += b.target.sum().item<double>(); });
  evaluator();
  CHECK(total == 150.0);  // 10 * (1 + 2 + 3 + 4 + 5)
}

TEST_CASE("Each batch has a fresh observation (PPE's engine evaluator re-adds stale values)") {
  // "a" is reported at batches 0 (1) and 2 (5) of 3: the mean is (1 + 5) / 2 = 3.
  // PPE 0.9.0's engine evaluator keeps one dict and gets (1 + 1 + 5) / 3 = 2.333.
  std::vector<double> data{1, 0, 5};
  ext::Evaluator evaluator(data, {}, [](double x) {
    if (x != 0) rep::report({{"a", x}});
  });
  CHECK(value(evaluator(), "a") == 3.0);
}

TEST_CASE("An empty loader gives an empty result") {
  std::vector<torch::Tensor> none;
  DummyModel target;
  ext::Evaluator evaluator(none, target);
  CHECK(evaluator().empty());
}

// ---- modes and gradients -------------------------------------------------------------

namespace {
/// Records the mode of itself and its child, and whether gradients are on.
struct ProbeImpl : torch::nn::Module {
  torch::nn::Linear lin{register_module("lin", torch::nn::Linear(3, 1))};
  std::vector<bool> training, child_training, grad_enabled, output_requires_grad;
  torch::Tensor forward(const torch::Tensor& x) {
    training.push_back(is_training());
    child_training.push_back(lin->is_training());
    grad_enabled.push_back(torch::GradMode::is_enabled());
    auto y = lin(x);
    output_requires_grad.push_back(y.requires_grad());
    rep::report({{"out", y.sum()}}, this);
    return y;
  }
};
TORCH_MODULE(Probe);
}  // namespace

TEST_CASE("Targets are evaluated in eval mode without gradients; their modes are restored") {
  std::vector<torch::Tensor> data{torch::ones({2, 3}), torch::ones({1, 3})};
  Probe model;
  model->train();
  model->lin->train(false);  // a child in eval mode stays so (PPE's train(True) on the target would change it)
  ext::Evaluator evaluator(data, model);
  const rep::Observation result = evaluator();
  CHECK(model->training == std::vector<bool>{false, false});
  CHECK(model->child_training == std::vector<bool>{false, false});
  CHECK(model->grad_enabled == std::vector<bool>{false, false});
  CHECK(model->output_requires_grad == std::vector<bool>{false, false});
  CHECK(model->is_training());
  CHECK(!model->lin->is_training());
  CHECK(torch::GradMode::is_enabled());
  CHECK(!result.at("main/out").tensor().requires_grad());
  for (const auto& p : model->parameters()) CHECK(!p.grad().defined());  // no gradient recorded

  {  // also when the evaluation function throws
    ext::Evaluator failing(data, tr::Models{model}, [](const torch::Tensor&) -> torch::Tensor {
      throw std::runtime_error("boom");
    });
    CHECK_THROWS_WITH_AS(failing(), "boom", std::runtime_error);
    CHECK(model->is_training());
    CHECK(!model->lin->is_training());
    CHECK(torch::GradMode::is_enabled());
  }
}

// ---- inside a manager -----------------------------------------------------------------

TEST_CASE("In a manager: every epoch by default, as 'validation', before the readers") {
  static_assert(ext::Evaluator<std::vector<torch::Tensor>*, DummyModel>::priority == tr::kPriorityWriter);
  auto data = two_batches();
  DummyModel target;
  std::vector<std::int64_t> seen_at;
  auto reader = tr::make_extension(
      [&](tr::Manager& m) {
        if (m.observation().contains("validation/main/loss")) seen_at.push_back(m.iteration());
      },
      ppe::iterations(1));
  auto manager = ppe_test::make_manager(2, 2, reader, ext::Evaluator(data, target));  // registered after the reader
  CHECK(manager.extension_names() == std::vector<std::string>{"extension", "validation"});
  for (int i = 0; i < 4; ++i) ppe_test::step(manager);
  CHECK(seen_at == std::vector<std::int64_t>{2, 4});  // epochs end at iterations 2 and 4
  CHECK(target->args.size() == 4);                    // two passes of two batches
  CHECK(value(manager.observation(), "validation/main/loss") == doctest::Approx(kExpectMean));
  auto& ev = manager.get_extension<ext::Evaluator<std::vector<torch::Tensor>*, DummyModel>>("validation");
  CHECK(ev.name() == "validation");
}

TEST_CASE("In a manager: the registered name prefixes the keys; submodules get '<name>/main/<child>'") {
  auto data = two_batches();
  Outer model;
  auto manager = ppe_test::make_manager(1, 1, tr::entry(ext::Evaluator(data, model), ppe::iterations(1), "val"),
                                        ext::Evaluator(data, model), ext::Evaluator(data, model));
  ppe_test::step(manager);
  // PPE 0.9.0 names the child "validation/mainenc/loss" (verified); ARCHITECTURE §5 adds the '/'.
  std::vector<std::string> expected;
  for (std::string n : {"val", "validation", "validation_1"}) {
    expected.push_back(n + "/main/top");
    expected.push_back(n + "/main/enc/loss");
  }
  CHECK(manager.observation().keys() == expected);
  CHECK(value(manager.observation(), "validation_1/main/enc/loss") == doctest::Approx(kExpectMean));
}

TEST_CASE("In a manager: an owned LibTorch loader, and a runtime-added evaluator") {
  TwoArgs target;
  auto manager = ppe_test::make_manager(1, 2, ext::Evaluator(make_loader(), target));
  manager.extend(tr::AnyExtension(ext::Evaluator(make_loader(), target)), std::nullopt, "more");
  ppe_test::step(manager);
  CHECK(manager.observation().empty());
  ppe_test::step(manager);
  CHECK(value(manager.observation(), "validation/main/loss") == doctest::Approx(55.0));
  CHECK(value(manager.observation(), "more/main/loss") == doctest::Approx(55.0));
}

TEST_CASE("Called by hand with a manager outside an iteration, the result goes to the manager's observation") {
  auto data = two_batches();
  DummyModel target;
  auto manager = ppe_test::make_manager(1, 1);
  ext::Evaluator evaluator(data, target);
  evaluator(manager);
  CHECK(evaluator.name().empty());  // not registered: no prefix
  CHECK(value(manager.observation(), "main/loss") == doctest::Approx(kExpectMean));
}

TEST_CASE("The progress bar runs on the manager's clock and is labelled with the registered name") {
  std::ostringstream out;
  ppe_test::FakeClock clock;
  auto data = two_batches();
  DummyModel target;
  auto manager = tr::ExtensionsManager(ppe_test::options(1, 1).clock(clock.fn()), tr::Models{}, tr::Optimizers{},
                                       tr::entry(ext::Evaluator(data, target, [&](const torch::Tensor& x) {
                                         clock.advance(0.25);
                                         return target(x);
                                       }, ext::EvaluatorOptions().progress_bar(true).out(&out)), ppe::epochs(1), "val"));
  ppe_test::step(manager);
  // 1 batch per 0.25 s: 4 iters/sec.
  CHECK(out.str() ==
        "val: 1 / 2 iterations, 50.00%, 4 iters/sec, ETA 0:00:00.250000\n"
        "val: 2 / 2 iterations, 100.00%, 4 iters/sec, ETA 0:00:00\n");
}

// ---- eval_hook, targets, errors -----------------------------------------------------------

TEST_CASE("eval_hook is called with the evaluator before each evaluation") {
  auto data = two_batches();
  DummyModel target;
  std::vector<std::string> calls;
  ext::Evaluator evaluator(data, target, ext::EvaluatorOptions().eval_hook([&](ext::EvaluatorBase& e) {
    calls.push_back(e.name() + ":" + std::to_string(target->args.size()));
    CHECK(e.get_target("main").get() == target.ptr().get());
  }));
  evaluator.set_name("v");
  evaluator();
  evaluator.set_eval_hook([&](ext::EvaluatorBase&) { calls.push_back("replaced"); });
  evaluator();
  CHECK(calls == std::vector<std::string>{"v:0", "replaced"});
}

TEST_CASE("Several named targets are observers under their names") {
  auto data = two_batches();
  DummyModel a, b;
  ext::Evaluator evaluator(data, tr::Models{{"a", a}, {"b", b}}, [&](const torch::Tensor& x) {
    a(x);
    return b(x * 2);
  });
  const rep::Observation r = evaluator();
  CHECK(r.keys() == std::vector<std::string>{"a/loss", "b/loss"});
  CHECK(value(r, "b/loss") == doctest::Approx(2 * kExpectMean));
}

TEST_CASE("Errors: unknown target, null loader, null stream, negative num_batches") {
  auto data = two_batches();
  DummyModel target;
  ext::Evaluator evaluator(data, target);
  CHECK_THROWS_WITH_AS(evaluator.get_target("enc"), "ppe: Evaluator has no target named 'enc'; targets: ['main']",
                       std::out_of_range);
  std::unique_ptr<std::vector<torch::Tensor>> none;
  ext::Evaluator null_loader(std::move(none), target);
  CHECK_THROWS_WITH_AS(null_loader(), "ppe: Evaluator: the loader is a null pointer", std::invalid_argument);
  CHECK_THROWS_AS(ext::Evaluator(data, target, ext::EvaluatorOptions().out(nullptr)), std::invalid_argument);
  CHECK_THROWS_AS(ext::Evaluator(data, target, ext::EvaluatorOptions().num_batches(-1)), std::invalid_argument);
}

}  // namespace ppe_test_training_tests_extensions_tests_test_evaluator
