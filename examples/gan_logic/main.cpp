// A custom training Logic for the engine: a small GAN with two models and two
// optimizers. The real data is a mixture of four Gaussians in the plane; the
// generator maps noise to points, the discriminator maps points to a logit.
// One trainer step is one discriminator update and one generator update.
//
//   gan_logic [--epochs N] [--seed N]
//
// At the end it compares generated samples with the data before and after
// training and prints PASS or FAIL for each check. The checks have wide
// margins, so the output does not depend on the last digits of the float
// arithmetic (which BLAS builds may change).

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <ppe/engine.hpp>
#include <ppe/ppe.hpp>
#include <ppe/runtime/to.hpp>

namespace ext = ppe::training::extensions;
namespace F = torch::nn::functional;

namespace {

constexpr std::int64_t kNoise = 4;
constexpr std::int64_t kHidden = 32;
constexpr std::int64_t kBatch = 64;
constexpr std::int64_t kBatches = 16;  // per epoch
constexpr double kModeDistance = 1.5;  // of each mode from the centre
constexpr double kModeStd = 0.2;

struct GeneratorImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  GeneratorImpl() {
    l1 = register_module("l1", torch::nn::Linear(kNoise, kHidden));
    l2 = register_module("l2", torch::nn::Linear(kHidden, kHidden));
    l3 = register_module("l3", torch::nn::Linear(kHidden, 2));
  }
  torch::Tensor forward(const torch::Tensor& z) { return l3(torch::relu(l2(torch::relu(l1(z))))); }
};
TORCH_MODULE(Generator);

struct DiscriminatorImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  DiscriminatorImpl() {
    l1 = register_module("l1", torch::nn::Linear(2, kHidden));
    l2 = register_module("l2", torch::nn::Linear(kHidden, kHidden));
    l3 = register_module("l3", torch::nn::Linear(kHidden, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = F::leaky_relu(l1(x), F::LeakyReLUFuncOptions().negative_slope(0.2));
    h = F::leaky_relu(l2(h), F::LeakyReLUFuncOptions().negative_slope(0.2));
    return l3(h);
  }
};
TORCH_MODULE(Discriminator);

// The logic. LibTorch's Module::forward is not virtual, so the named models
// the engine passes (type-erased) cannot run the networks: the logic keeps
// the typed handles and looks up only the optimizers by name.
//
// There is no train_step_optimizers: the engine calls it once, after
// train_step, but a GAN step needs two updates in order. The generator's loss
// must be computed through the discriminator after its update, and the
// generator's backward pass leaves gradients in the discriminator that must
// not be applied. So both steps happen inside train_step.
struct GanLogic {
  using logic_concept = ppe::handler::logic_tag;

  Generator gen;
  Discriminator dis;

  // Train mode at each epoch, as the default Logic does: an evaluator's setup
  // (or a train_validation_begin) may have left the models in eval mode.
  void train_epoch_begin(const ppe::training::Models& models, std::int64_t /*epoch*/,
                         std::int64_t /*iters_per_epoch*/) {
    for (const auto& [name, model] : models) model.module()->train(true);
  }

  ppe::handler::Outputs train_step(const ppe::training::Models& /*models*/, const ppe::training::Optimizers& optimizers,
                                   std::int64_t /*batch_idx*/, torch::Tensor& real) {
    auto& opt_gen = optimizers.find("gen")->optimizer();
    auto& opt_dis = optimizers.find("dis")->optimizer();
    const auto n = real.size(0);
    const auto ones = torch::ones({n, 1});
    const auto zeros = torch::zeros({n, 1});
    const auto fake = gen(torch::randn({n, kNoise}));

    // Discriminator: real points are 1, generated points 0. detach() keeps
    // this backward pass out of the generator.
    opt_dis.zero_grad();
    const auto dis_loss = F::binary_cross_entropy_with_logits(dis(real), ones) +
                          F::binary_cross_entropy_with_logits(dis(fake.detach()), zeros);
    dis_loss.backward();
    opt_dis.step();

    // Generator: make the updated discriminator call its points real (the
    // non-saturating loss). The gradients it leaves in the discriminator are
    // cleared by the next discriminator step's zero_grad.
    opt_gen.zero_grad();
    const auto gen_loss = F::binary_cross_entropy_with_logits(dis(fake), ones);
    gen_loss.backward();
    opt_gen.step();

    // Tensors are summarised lazily: reporting them costs no host sync.
    ppe::reporting::report({{"gen/loss", gen_loss.detach()}, {"dis/loss", dis_loss.detach()}});
    ppe::handler::Outputs outs;
    outs.insert("gen/loss", gen_loss.detach());
    outs.insert("dis/loss", dis_loss.detach());
    return outs;
  }
};

// n points of the data: four Gaussians at centre +- (1.5, 0), centre +- (0, 1.5).
torch::Tensor sample_real(std::int64_t n, const torch::Tensor& modes) {
  const auto which = torch::randint(modes.size(0), {n}, torch::kLong);
  return modes.index_select(0, which) + kModeStd * torch::randn({n, 2});
}

// The distance from each point to its nearest mode, averaged.
double mean_distance_to_modes(const torch::Tensor& points, const torch::Tensor& modes) {
  return torch::cdist(points, modes).amin(1).mean().item<double>();
}

struct Args {
  int epochs = 100;
  int seed = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--epochs" && i + 1 < argc)
      a.epochs = std::stoi(argv[++i]);
    else if (flag == "--seed" && i + 1 < argc)
      a.seed = std::stoi(argv[++i]);
    else
      throw std::invalid_argument("unknown flag " + flag + " (expected --epochs N, --seed N)");
  }
  if (a.epochs < 1) throw std::invalid_argument("--epochs must be >= 1");
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  // One thread: the sums inside matmuls then run in one order on every run.
  torch::set_num_threads(1);
  torch::manual_seed(args.seed);

  const auto centre = torch::tensor({2.0, -1.0});
  const auto modes =
      centre +
      torch::tensor({{kModeDistance, 0.0}, {-kModeDistance, 0.0}, {0.0, kModeDistance}, {0.0, -kModeDistance}});
  std::vector<torch::Tensor> data;  // any input range of batches is a loader
  for (std::int64_t i = 0; i < kBatches; ++i) data.push_back(sample_real(kBatch, modes));
  const auto real_mean = torch::cat(data).mean(0);

  Generator gen;
  Discriminator dis;
  // The trainer runs the runtime hooks of every model and refuses models
  // that have no runtime.
  ppe::to(gen, "cpu");
  ppe::to(dis, "cpu");
  torch::optim::Adam opt_gen(gen->parameters(), torch::optim::AdamOptions(2e-3).betas({0.5, 0.999}));
  torch::optim::Adam opt_dis(dis->parameters(), torch::optim::AdamOptions(2e-3).betas({0.5, 0.999}));

  // Fixed noise to compare the generator before and after training.
  const auto z_eval = torch::randn({1000, kNoise});
  auto generate = [&] {
    torch::NoGradGuard no_grad;
    return gen(z_eval);
  };
  const auto before = generate();

  auto trainer = ppe::engine::create_trainer(
      ppe::training::Models{{"gen", gen}, {"dis", dis}}, ppe::training::Optimizers{{"gen", opt_gen}, {"dis", opt_dis}},
      args.epochs, ppe::engine::TrainerOptions().out_dir("result_gan_logic"),
      ppe::engine::with_logic(GanLogic{gen, dis}), ext::LogReport(ext::LogReportOptions().trigger(ppe::epochs(20))),
      ext::PrintReport(ext::PrintReportOptions().entries({"epoch", "iteration", "gen/loss", "dis/loss"})));
  trainer.run(data);

  const auto after = generate();
  const double mean_before = (before.mean(0) - real_mean).norm().item<double>();
  const double mean_after = (after.mean(0) - real_mean).norm().item<double>();
  const double modes_before = mean_distance_to_modes(before, modes);
  const double modes_after = mean_distance_to_modes(after, modes);
  std::printf("distance of the generated mean to the data mean: %.3f before, %.3f after\n", mean_before, mean_after);
  std::printf("%s: the generated mean moved toward the data mean (after < before / 4)\n",
              mean_after < mean_before / 4 ? "PASS" : "FAIL");
  std::printf("mean distance of a generated point to its nearest mode: %.3f before, %.3f after\n", modes_before,
              modes_after);
  std::printf("%s: generated points moved onto the modes (after < before / 2)\n",
              modes_after < modes_before / 2 ? "PASS" : "FAIL");
  // The spread of the generated points along each axis, relative to the
  // data's (about 0.07 before training: the untrained generator is nearly constant).
  const auto spread = after.std(0) / torch::cat(data).std(0);
  const double spread_x = spread[0].item<double>(), spread_y = spread[1].item<double>();
  std::printf("spread of the generated points / spread of the data: %.3f (x), %.3f (y)\n", spread_x, spread_y);
  const bool spread_ok = spread_x > 0.75 && spread_x < 1.25 && spread_y > 0.75 && spread_y < 1.25;
  std::printf("%s: the generated points spread like the data (within 25%% on each axis)\n",
              spread_ok ? "PASS" : "FAIL");
  return 0;
} catch (const std::exception& e) {
  std::cerr << "gan_logic: " << e.what() << "\n";
  return 2;
}
