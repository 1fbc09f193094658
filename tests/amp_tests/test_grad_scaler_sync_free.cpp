// GradScaler's sync-free mode (masked_step.hpp): each of LibTorch's five
// maskable optimizers, stepped through a synchronising scaler and through a
// sync-free one over the same gradients (some inf or NaN, the first among
// them), must end bit for bit equal, and the sync-free step must never read a
// tensor on the host.

#include "ppe_test.hpp"
#include "sync_counter.hpp"

#include <ppe/amp/grad_scaler.hpp>
#include <ppe/amp/masked_step.hpp>

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_amp_tests_test_grad_scaler_sync_free {

using ppe::amp::GradScaler;
using ppe::amp::GradScalerOptions;
using ppe_test::error_of;

// Same dtype, shape and bytes (NaN-safe), or both undefined.
bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const torch::Tensor ca = a.contiguous();
  const torch::Tensor cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// Three parameters (2-D, 1-D, 0-dim) with a fixed start, and one that never
// gets a gradient.
std::vector<torch::Tensor> make_params() {
  torch::manual_seed(7);
  return {torch::randn({3, 4}).requires_grad_(), torch::randn({4}).requires_grad_(),
          torch::randn({}).requires_grad_(), torch::randn({2}).requires_grad_()};
}

enum class Grad { Finite, Inf, NaN };

// The step's gradients: loss = sum(x * p + 0.5 * x * p^2) over the first
// three parameters, through the scaler; Inf/NaN poison one input.
void backward(GradScaler& scaler, const std::vector<torch::Tensor>& params, int step, Grad kind) {
  torch::manual_seed(100 + step);
  torch::Tensor loss = torch::zeros({});
  for (std::size_t i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn(params[i].sizes());
    if (i == 1 && kind == Grad::Inf) x[0] = std::numeric_limits<float>::infinity();
    if (i == 0 && kind == Grad::NaN) x[1][2] = std::numeric_limits<float>::quiet_NaN();
    loss = loss + (x * params[i] + 0.5 * x * params[i] * params[i]).sum();
  }
  scaler.scale(loss).backward();
}

const std::vector<Grad> kSequence = {Grad::Inf,    Grad::Finite, Grad::Finite, Grad::NaN,   Grad::Finite,
                                     Grad::Finite, Grad::Inf,    Grad::Finite, Grad::Finite, Grad::Finite};

GradScalerOptions scaler_options(bool sync_free) {
  return GradScalerOptions().init_scale(1024.0).growth_interval(2).sync_free(sync_free);
}

template <class Opt>
using Key = typename std::remove_cvref_t<decltype(std::declval<Opt&>().state())>::key_type;

template <class Opt>
const torch::optim::OptimizerParamState* state_of(Opt& opt, const torch::Tensor& p) {
  const auto key = ppe::detail::compat::optimizer_state_key<std::remove_cvref_t<decltype(opt.state())>>(
      p.unsafeGetTensorImpl());
  const auto it = opt.state().find(key);
  return it == opt.state().end() ? nullptr : it->second.get();
}

void check_same(const torch::optim::SGDParamState& a, const torch::optim::SGDParamState& b) {
  CHECK(same_bits(a.momentum_buffer(), b.momentum_buffer()));
}
template <class PS>
  requires requires(PS s) { s.exp_avg(); }
void check_same(const PS& a, const PS& b) {
  CHECK(a.step() == b.step());
  CHECK(same_bits(a.exp_avg(), b.exp_avg()));
  CHECK(same_bits(a.exp_avg_sq(), b.exp_avg_sq()));
  CHECK(same_bits(a.max_exp_avg_sq(), b.max_exp_avg_sq()));
}
void check_same(const torch::optim::RMSpropParamState& a, const torch::optim::RMSpropParamState& b) {
  CHECK(a.step() == b.step());
  CHECK(same_bits(a.square_avg(), b.square_avg()));
  CHECK(same_bits(a.momentum_buffer(), b.momentum_buffer()));
  CHECK(same_bits(a.grad_avg(), b.grad_avg()));
}
void check_same(const torch::optim::AdagradParamState& a, const torch::optim::AdagradParamState& b) {
  CHECK(a.step() == b.step());
  CHECK(same_bits(a.sum(), b.sum()));
}

// Steps two copies through the two scalers over kSequence; after every step
// the parameters, every state (existence, tensors, step counts) and the
// scalers' scale and growth tracker must be bitwise equal.
template <class Opt, class PS, class Options>
void check_sync_free_matches(Options options) {
  auto pa = make_params();
  auto pb = make_params();
  Opt a(pa, options);
  Opt b(pb, options);
  GradScaler sync(scaler_options(false));
  GradScaler free(scaler_options(true));
  ppe::training::OptimizerRef ref(b);
  std::int64_t stepped = 0;
  for (std::size_t step = 0; step < kSequence.size(); ++step) {
    CAPTURE(step);
    a.zero_grad();
    b.zero_grad();
    backward(sync, pa, static_cast<int>(step), kSequence[step]);
    backward(free, pb, static_cast<int>(step), kSequence[step]);
    const bool did = sync.step(a);
    CHECK(did == (kSequence[step] == Grad::Finite));
    stepped += did ? 1 : 0;
    CHECK(ref.step(free));  // "issued"; counted when applied, on the device
    CHECK(same_bits(free.step_applied(b), torch::full({}, did ? 1 : 0, torch::kLong)));
    sync.update();
    free.update();
    for (std::size_t i = 0; i < pa.size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(pa[i], pb[i]));
      const auto* sa = state_of(a, pa[i]);
      const auto* sb = state_of(b, pb[i]);
      REQUIRE((sa == nullptr) == (sb == nullptr));
      if (sa) check_same(static_cast<const PS&>(*sa), static_cast<const PS&>(*sb));
    }
    CHECK(same_bits(sync.scale_tensor(), free.scale_tensor()));
    CHECK(sync.growth_tracker() == free.growth_tracker());
  }
  CHECK(stepped == 7);
  CHECK(ref.step_count() == stepped);
  CHECK(ref.has_stepped());
}

TEST_CASE("GradScaler sync-free: SGD equals the synchronising step bit for bit") {
  using torch::optim::SGD;
  using torch::optim::SGDOptions;
  using torch::optim::SGDParamState;
  SUBCASE("plain") { check_sync_free_matches<SGD, SGDParamState>(SGDOptions(0.1)); }
  SUBCASE("momentum") { check_sync_free_matches<SGD, SGDParamState>(SGDOptions(0.1).momentum(0.9)); }
  SUBCASE("nesterov") {
    check_sync_free_matches<SGD, SGDParamState>(SGDOptions(0.1).momentum(0.9).nesterov(true));
  }
  SUBCASE("dampening") {
    check_sync_free_matches<SGD, SGDParamState>(SGDOptions(0.1).momentum(0.9).dampening(0.3));
  }
  SUBCASE("weight decay") {
    check_sync_free_matches<SGD, SGDParamState>(SGDOptions(0.1).momentum(0.5).weight_decay(0.01));
  }
}

TEST_CASE("GradScaler sync-free: Adam and AdamW equal the synchronising step bit for bit") {
  using torch::optim::Adam;
  using torch::optim::AdamOptions;
  using torch::optim::AdamParamState;
  SUBCASE("Adam") { check_sync_free_matches<Adam, AdamParamState>(AdamOptions(0.01)); }
  SUBCASE("Adam amsgrad") { check_sync_free_matches<Adam, AdamParamState>(AdamOptions(0.01).amsgrad(true)); }
  SUBCASE("Adam weight decay") {
    check_sync_free_matches<Adam, AdamParamState>(AdamOptions(0.01).weight_decay(0.1).betas({0.8, 0.9}));
  }
  SUBCASE("AdamW") {
    check_sync_free_matches<torch::optim::AdamW, torch::optim::AdamWParamState>(
        torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  }
  SUBCASE("AdamW amsgrad") {
    check_sync_free_matches<torch::optim::AdamW, torch::optim::AdamWParamState>(
        torch::optim::AdamWOptions(0.01).amsgrad(true));
  }
}

TEST_CASE("GradScaler sync-free: RMSprop and Adagrad equal the synchronising step bit for bit") {
  using torch::optim::RMSprop;
  using torch::optim::RMSpropOptions;
  using torch::optim::RMSpropParamState;
  SUBCASE("RMSprop") { check_sync_free_matches<RMSprop, RMSpropParamState>(RMSpropOptions(0.01)); }
  SUBCASE("RMSprop centered") {
    check_sync_free_matches<RMSprop, RMSpropParamState>(RMSpropOptions(0.01).centered(true));
  }
  SUBCASE("RMSprop momentum, weight decay") {
    check_sync_free_matches<RMSprop, RMSpropParamState>(
        RMSpropOptions(0.01).momentum(0.9).weight_decay(0.01).centered(true));
  }
  SUBCASE("Adagrad lr_decay") {
    check_sync_free_matches<torch::optim::Adagrad, torch::optim::AdagradParamState>(
        torch::optim::AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.01).initial_accumulator_value(0.1));
  }
}

TEST_CASE("GradScaler sync-free: an overflow step leaves parameters and state untouched") {
  auto params = make_params();
  torch::optim::Adam opt(params, torch::optim::AdamOptions(0.01).amsgrad(true));
  GradScaler scaler(scaler_options(true));
  backward(scaler, params, 0, Grad::Finite);
  scaler.step(opt);
  scaler.update();
  std::vector<torch::Tensor> before;
  for (const auto& p : params) before.push_back(p.detach().clone());
  const auto& st = static_cast<const torch::optim::AdamParamState&>(*state_of(opt, params[0]));
  const torch::Tensor exp_avg = st.exp_avg().clone();
  const torch::Tensor exp_avg_sq = st.exp_avg_sq().clone();
  const torch::Tensor max_sq = st.max_exp_avg_sq().clone();
  CHECK(st.step() == 1);
  opt.zero_grad();
  backward(scaler, params, 1, Grad::NaN);
  CHECK(scaler.step(opt));
  CHECK(same_bits(scaler.step_applied(opt), torch::full({}, 0, torch::kLong)));
  scaler.update();
  for (std::size_t i = 0; i < params.size(); ++i) CHECK(same_bits(params[i], before[i]));
  CHECK(same_bits(st.exp_avg(), exp_avg));
  CHECK(same_bits(st.exp_avg_sq(), exp_avg_sq));
  CHECK(same_bits(st.max_exp_avg_sq(), max_sq));
  CHECK(st.step() == 1);
  CHECK(scaler.get_scale() == 512.0);
}

TEST_CASE("GradScaler sync-free: step reads nothing on the host; the synchronising step does") {
  auto params = make_params();
  torch::optim::Adam opt(params, torch::optim::AdamOptions(0.01));
  SUBCASE("sync-free") {
    GradScaler scaler(scaler_options(true));
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      backward(scaler, params, step, step == 1 ? Grad::Inf : Grad::Finite);
      ppe_test::SyncCounter syncs;
      scaler.step(opt);
      scaler.update();
      CHECK(syncs.text() == "none");
    }
  }
  SUBCASE("synchronising") {
    GradScaler scaler(scaler_options(false));
    backward(scaler, params, 0, Grad::Finite);
    ppe_test::SyncCounter syncs;
    scaler.step(opt);
    CHECK(syncs.count() >= 1);
  }
}

TEST_CASE("GradScaler sync-free: a never-applied first step leaves no LibTorch state") {
  auto params = make_params();
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.1).momentum(0.9).dampening(0.5));
  GradScaler scaler(scaler_options(true));
  backward(scaler, params, 0, Grad::Inf);
  scaler.step(opt);
  scaler.update();
  CHECK(opt.state().empty());  // as after LibTorch's step, which was skipped
  // state_dict settles (a no-op on the CPU, already settled) and still works.
  CHECK(scaler.state_dict().at("scale").as_double() == 512.0);
}

TEST_CASE("GradScaler sync-free: refuses LBFGS, other optimizers and sparse gradients") {
  auto params = make_params();
  SUBCASE("LBFGS") {
    torch::optim::LBFGS lbfgs(params, torch::optim::LBFGSOptions(1.0));
    torch::optim::Optimizer& opt = lbfgs;  // LBFGS::step needs a closure; the base's takes none
    GradScaler scaler(scaler_options(true));
    backward(scaler, params, 0, Grad::Finite);
    const std::string message = error_of([&] { scaler.step(opt); });
    CHECK(message.find("torch::optim::LBFGS") != std::string::npos);
    CHECK(message.find("sync_free(false)") != std::string::npos);
  }
  SUBCASE("a class derived from Adam (its step may differ)") {
    struct MyAdam : torch::optim::Adam {
      using torch::optim::Adam::Adam;
    };
    MyAdam opt(params, torch::optim::AdamOptions(0.01));
    GradScaler scaler(scaler_options(true));
    backward(scaler, params, 0, Grad::Finite);
    const std::string message = error_of([&] { scaler.step(opt); });
    CHECK(message.find("MyAdam") != std::string::npos);
    CHECK(message.find("sync_free(false)") != std::string::npos);
  }
  SUBCASE("sparse gradients") {
    torch::nn::Embedding emb(torch::nn::EmbeddingOptions(5, 2).sparse(true));
    torch::optim::SGD opt(emb->parameters(), torch::optim::SGDOptions(0.1));
    GradScaler scaler(scaler_options(true));
    scaler.scale(emb->forward(torch::tensor({1, 3})).sum()).backward();
    const std::string message = error_of([&] { scaler.step(opt); });
    CHECK(message.find("sparse") != std::string::npos);
  }
}

TEST_CASE("GradScaler::step(optimizer, counter): counts the steps applied in every mode; leaves the settle hook") {
  auto params = make_params();
  torch::optim::Adam opt(params, torch::optim::AdamOptions(0.01));
  const std::vector<Grad> grads = {Grad::Inf, Grad::Finite, Grad::NaN, Grad::Finite};
  const auto run = [&](GradScalerOptions options, ppe::amp::StepCounter& counter) {
    GradScaler scaler(options);
    for (std::size_t i = 0; i < grads.size(); ++i) {
      opt.zero_grad();
      backward(scaler, params, static_cast<int>(i), grads[i]);
      CHECK(scaler.step(opt, counter) == (grads[i] == Grad::Finite || options.sync_free() || !options.enabled()));
      scaler.update();
    }
  };
  SUBCASE("synchronising: the skipped steps are recorded, not counted") {
    ppe::amp::StepCounter counter;
    run(scaler_options(false), counter);
    CHECK(counter.recorded() == 4);
    CHECK(counter.count() == 2);
  }
  SUBCASE("disabled: every step") {
    ppe::amp::StepCounter counter;
    run(scaler_options(false).enabled(false), counter);
    CHECK(counter.count() == 4);
  }
  SUBCASE("sync-free: counted on the device, no host read; the hook settles while the scaler lives") {
    ppe::amp::StepCounter counter;
    GradScaler scaler(scaler_options(true));
    for (std::size_t i = 0; i < grads.size(); ++i) {
      opt.zero_grad();
      backward(scaler, params, static_cast<int>(i), grads[i]);
      ppe_test::SyncCounter syncs;
      CHECK(scaler.step(opt, counter));
      scaler.update();
      CHECK(syncs.text() == "none");
    }
    CHECK(counter.recorded() == 4);
    CHECK(counter.count() == 2);
    // The hook writes the scaler's device counts into LibTorch's state (what a
    // snapshot of an accelerator's optimizer needs): a count changed there is
    // restored.
    auto& st = static_cast<torch::optim::AdamParamState&>(*opt.state().begin()->second);
    st.step(99);
    counter.run_state_hook(opt);
    CHECK(st.step() == 2);
    // Once the scaler is gone the hook does nothing.
    GradScaler moved(std::move(scaler));
    st.step(99);
    counter.run_state_hook(opt);
    CHECK(st.step() == 2);  // the states moved with the scaler
    { GradScaler gone(std::move(moved)); }
    st.step(99);
    counter.run_state_hook(opt);
    CHECK(st.step() == 99);
  }
}

TEST_CASE("OptimizerRef: device step flags are counted when read; the state hook runs before state_dict") {
  auto params = make_params();
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.1));
  ppe::training::OptimizerRef ref(opt);
  CHECK_FALSE(ref.has_stepped());
  ref.record_step(torch::full({}, 0, torch::kLong));
  CHECK_FALSE(ref.has_stepped());
  ref.record_step(torch::full({}, 1, torch::kLong));
  ref.record_step(torch::full({1}, true, torch::kBool));
  ref.record_step();
  CHECK(ref.step_count() == 3);
  CHECK(ref.has_stepped());
  CHECK(error_of([&] { ref.record_step(torch::full({}, 1.0)); }).find("integer or bool") != std::string::npos);
  int runs = 0;
  int owner = 0;
  ref.set_state_hook(&owner, [&](torch::optim::Optimizer& o) { runs += &o == &opt ? 1 : 100; });
  ref.set_state_hook(&owner, [&](torch::optim::Optimizer&) { runs += 1000; });  // same owner: kept
  (void)ref.state_dict();
  CHECK(runs == 1);
}

struct TwoInImpl : torch::nn::Module {
  torch::nn::Linear l{nullptr};
  TwoInImpl() {
    l = register_module("l", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
    torch::NoGradGuard g;
    l->weight.fill_(0.5);
  }
  torch::Tensor forward(const torch::Tensor& x) { return l(x).pow(2).sum(); }
};
TORCH_MODULE(TwoIn);

TEST_CASE("Logic with a sync-free scaler: same weights and counts as with a synchronising one; states settled") {
  struct Run {
    TwoIn model;
    torch::optim::Adam opt{model->parameters(), torch::optim::AdamOptions(0.1)};
    ppe::training::Models models{model};
    ppe::training::Optimizers optimizers{opt};
    std::shared_ptr<GradScaler> scaler;
    ppe::handler::Logic<TwoIn> logic;
    explicit Run(bool sync_free)
        : scaler(std::make_shared<GradScaler>(scaler_options(sync_free))),
          logic(model, ppe::handler::LogicOptions().grad_scaler(scaler)) {}
  };
  Run sync(false);
  Run free(true);
  const std::vector<torch::Tensor> batches = {torch::tensor({{INFINITY, 1.0f}}), torch::tensor({{1.0f, 2.0f}}),
                                              torch::tensor({{NAN, 2.0f}}), torch::tensor({{-1.0f, 3.0f}}),
                                              torch::tensor({{2.0f, 0.5f}})};
  for (std::size_t i = 0; i < batches.size(); ++i) {
    for (Run* r : {&sync, &free}) {
      torch::Tensor x = batches[i];
      r->logic.train_step(r->models, r->optimizers, static_cast<std::int64_t>(i), x);
      r->logic.train_step_optimizers(r->models, r->optimizers, static_cast<std::int64_t>(i));
    }
    CHECK(same_bits(sync.model->l->weight, free.model->l->weight));
  }
  const auto& ref = *free.optimizers.find("main");
  CHECK(ref.step_count() == 3);
  CHECK(sync.optimizers.find("main")->step_count() == 3);
  // The snapshot state: Adam's step count as LibTorch's own steps leave it.
  const ppe::State state = ref.state_dict();
  CHECK(state.at("state").at("0").at("step").as_tensor().item<double>() == 3.0);
  CHECK(sync.optimizers.find("main")->state_dict().at("state").at("0").at("step").as_tensor().item<double>() == 3.0);
}

}  // namespace ppe_test_amp_tests_test_grad_scaler_sync_free
