// A runtime of our own, registered under a new device name ("counting"). It
// places everything on the CPU, as PyTorchRuntime does, and counts every hook
// call it receives. A small regression trains for a few epochs with an
// evaluator every epoch; then each runtime prints its counts.
//
//   custom_runtime
//
// Three runtimes exist, because each request for a device makes its own:
// - "model": made by ppe::to(model, "counting"). The engine finds it through
//   the model and calls the module hooks on it.
// - "trainer": made for TrainerOptions().device("counting"). It is the
//   trainer's entry runtime: it converts each training batch.
// - "evaluator": made for EvaluatorOptions().device("counting"). It converts
//   each evaluation batch.
//
// The expected counts, with E = 3 epochs, I = 10 training batches per epoch,
// V = 4 validation batches, T = 2 tensors per batch (input, target), and one
// runtime module (the model: its submodules share its runtime, and the
// engine calls hooks only on the top-most module that has one):
//   model:
//     move_module            1          ppe::to moves the model once
//     initialize_module      2          train setup (with the optimizer) + eval setup (without)
//     train_epoch_begin/end  E = 3
//     train_pre/post_step    E * I = 30
//     train_validation_*     E = 3      the evaluator runs once per epoch
//     eval_pre/post_step     E * V = 12
//     train_cleanup          1
//   trainer:    move_tensor  E * I * T = 60   (convert_batch moves each tensor)
//   evaluator:  move_tensor  E * V * T = 24
// Every other count is 0.

#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <ppe/engine.hpp>
#include <ppe/ppe.hpp>
#include <ppe/runtime/to.hpp>

namespace ext = ppe::training::extensions;
namespace rt = ppe::runtime;

namespace {

struct HookCounts {
  std::int64_t move_module = 0, move_tensor = 0, initialize_module = 0, train_epoch_begin = 0, train_epoch_end = 0,
               train_pre_step = 0, train_post_step = 0, train_validation_begin = 0, train_validation_end = 0,
               eval_pre_step = 0, eval_post_step = 0, train_cleanup = 0;
};

// Derives from PyTorchRuntime for the placing and marks every hook override,
// so a misspelled hook name is a compile error.
//
// It does not define convert_batch: BaseRuntime's convert_batch is a
// template, so it cannot be virtual, and the engine holds a runtime made by
// name as a BaseRuntime. Batch conversion reaches this class through
// move_tensor, which convert_batch calls for every tensor of the batch.
class CountingRuntime : public rt::PyTorchRuntime {
 public:
  // The registry makes runtimes as R(DeviceSpec, RuntimeOptions). The
  // three-argument base keeps the name "counting" but places on the CPU.
  CountingRuntime(const rt::DeviceSpec& device, const rt::RuntimeOptions& options)
      : PyTorchRuntime(device, options, torch::kCPU) {
    ++created;
  }

  static inline int created = 0;
  const HookCounts& counts() const noexcept { return counts_; }

  void move_module(torch::nn::Module& module) override {
    ++counts_.move_module;
    PyTorchRuntime::move_module(module);
  }
  at::Tensor move_tensor(const at::Tensor& tensor) override {
    ++counts_.move_tensor;
    return PyTorchRuntime::move_tensor(tensor);
  }
  void initialize_module(torch::nn::Module&, rt::AnyRef, torch::optim::Optimizer*) override {
    ++counts_.initialize_module;
  }
  void train_epoch_begin(torch::nn::Module&) override { ++counts_.train_epoch_begin; }
  void train_epoch_end(torch::nn::Module&) override { ++counts_.train_epoch_end; }
  void train_pre_step(rt::AnyRef, torch::nn::Module&, std::int64_t, rt::AnyRef) override { ++counts_.train_pre_step; }
  void train_post_step(rt::AnyRef, torch::nn::Module&, std::int64_t, rt::AnyRef, rt::AnyRef) override {
    ++counts_.train_post_step;
  }
  void train_validation_begin(torch::nn::Module&) override { ++counts_.train_validation_begin; }
  void train_validation_end(torch::nn::Module&) override { ++counts_.train_validation_end; }
  void eval_pre_step(rt::AnyRef, torch::nn::Module&, std::int64_t, rt::AnyRef) override { ++counts_.eval_pre_step; }
  void eval_post_step(rt::AnyRef, torch::nn::Module&, std::int64_t, rt::AnyRef, rt::AnyRef) override {
    ++counts_.eval_post_step;
  }
  void train_cleanup(torch::nn::Module&) override { ++counts_.train_cleanup; }

 private:
  HookCounts counts_;
};

// A model with two submodules whose forward returns the loss, as PPE's
// engine expects from the default Logic; it reports the loss under the name
// of the phase.
struct RegressionImpl : torch::nn::Module {
  torch::nn::Linear hidden{nullptr}, out{nullptr};
  RegressionImpl() {
    hidden = register_module("hidden", torch::nn::Linear(3, 8));
    out = register_module("out", torch::nn::Linear(8, 1));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
    auto loss = torch::nn::functional::mse_loss(out(torch::tanh(hidden(x))), t);
    ppe::reporting::report({{is_training() ? "train/loss" : "val/loss", loss}});
    return loss;
  }
};
TORCH_MODULE(Regression);

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

// n batches of 8 samples of y = 2 x0 - x1 + 0.5 x2 + noise.
std::vector<Batch> make_batches(int n) {
  std::vector<Batch> out;
  const auto w = torch::tensor({{2.0f}, {-1.0f}, {0.5f}});
  for (int i = 0; i < n; ++i) {
    auto x = torch::randn({8, 3});
    out.emplace_back(x, x.matmul(w) + 0.05 * torch::randn({8, 1}));
  }
  return out;
}

void print_row(const char* hook, std::int64_t HookCounts::*field, const HookCounts& model, const HookCounts& trainer,
               const HookCounts& evaluator) {
  std::printf("%-24s %6lld %8lld %10lld\n", hook, static_cast<long long>(model.*field),
              static_cast<long long>(trainer.*field), static_cast<long long>(evaluator.*field));
}

}  // namespace

int main() try {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  constexpr int kEpochs = 3, kTrainBatches = 10, kValBatches = 4;
  const auto train = make_batches(kTrainBatches);
  const auto val = make_batches(kValBatches);

  // From now on, ppe::to and the engine's device options accept "counting".
  rt::runtime_registry().add<CountingRuntime>("counting");

  Regression model;
  ppe::to(model, "counting");
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));

  auto trainer = ppe::engine::create_trainer(
      model, optimizer, kEpochs, ppe::engine::TrainerOptions().device("counting").out_dir("result_custom_runtime"),
      ppe::engine::create_evaluator(model, ppe::engine::EvaluatorOptions().device("counting")), ext::LogReport(),
      ext::PrintReport(ext::PrintReportOptions().entries({"epoch", "iteration", "train/loss", "val/loss"})));
  trainer.run(train, val);

  // runtime_cast finds the CountingRuntime behind each type-erased runtime.
  const auto* on_model = rt::runtime_cast<CountingRuntime>(rt::module_runtime(*model));
  const auto* on_trainer = rt::runtime_cast<CountingRuntime>(trainer.runtime());
  const auto* on_evaluator = rt::runtime_cast<CountingRuntime>(trainer.evaluator().runtime());
  if (!on_model || !on_trainer || !on_evaluator) throw std::runtime_error("a runtime is not a CountingRuntime");

  std::printf("runtimes made for \"counting\": %d\n", CountingRuntime::created);
  std::printf("%-24s %6s %8s %10s\n", "hook", "model", "trainer", "evaluator");
  const HookCounts &m = on_model->counts(), &t = on_trainer->counts(), &e = on_evaluator->counts();
  print_row("move_module", &HookCounts::move_module, m, t, e);
  print_row("move_tensor", &HookCounts::move_tensor, m, t, e);
  print_row("initialize_module", &HookCounts::initialize_module, m, t, e);
  print_row("train_epoch_begin", &HookCounts::train_epoch_begin, m, t, e);
  print_row("train_epoch_end", &HookCounts::train_epoch_end, m, t, e);
  print_row("train_pre_step", &HookCounts::train_pre_step, m, t, e);
  print_row("train_post_step", &HookCounts::train_post_step, m, t, e);
  print_row("train_validation_begin", &HookCounts::train_validation_begin, m, t, e);
  print_row("train_validation_end", &HookCounts::train_validation_end, m, t, e);
  print_row("eval_pre_step", &HookCounts::eval_pre_step, m, t, e);
  print_row("eval_post_step", &HookCounts::eval_post_step, m, t, e);
  print_row("train_cleanup", &HookCounts::train_cleanup, m, t, e);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "custom_runtime: " << e.what() << "\n";
  return 2;
}
