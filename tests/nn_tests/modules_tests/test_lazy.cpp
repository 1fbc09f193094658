// Ports PPE's tests/pytorch_pfn_extras_tests/nn_tests/modules_tests/test_lazy.py,
// test_lazy_linear.py, test_lazy_conv.py and test_lazy_batchnorm.py (LazyTestBase:
// test_basic, test_double, test_save_load for the seven modules), plus what PPE
// cannot do: an optimizer built before the first forward (SGD, Adam), and a
// snapshot of a manager whose model has lazy modules, resumed into a fresh one.
// Not ported: test_cuda (no CUDA here), test_share_memory (LibTorch modules have
// no share_memory), test_lazy_warning (the optimizer case works, so nothing warns),
// the user-defined _LazyMyFunc (a lazy module here wraps a LibTorch module).
#include "ppe_test.hpp"
#include "temp_dir.hpp"

#include <sstream>

#include "ppe/nn/modules/lazy_batchnorm.hpp"
#include "ppe/nn/modules/lazy_conv.hpp"
#include "ppe/nn/modules/lazy_linear.hpp"
#include "ppe/training/extensions/snapshot.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_nn_tests_modules_tests_test_lazy {

namespace pnn = ppe::nn;

namespace {

bool same(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && torch::equal(a, b);
}

// One case of PPE's LazyTestBase: the LibTorch module, the lazy one, an input.
struct Case {
  std::string name;
  std::function<torch::nn::AnyModule()> original;
  std::function<std::shared_ptr<torch::nn::Module>()> lazy;
  std::function<torch::Tensor(const std::shared_ptr<torch::nn::Module>&, const torch::Tensor&)> forward;
  std::function<torch::Tensor()> input;
  std::vector<std::string> lazy_names;  // PPE's lazy_parameter_names + lazy_buffer_names
};

template <class Holder>
Case make_case(std::string name, std::function<torch::nn::AnyModule()> original, std::function<Holder()> lazy,
               std::vector<std::int64_t> input_shape, std::vector<std::string> lazy_names) {
  return Case{std::move(name),
              std::move(original),
              [lazy] { return std::static_pointer_cast<torch::nn::Module>(lazy().ptr()); },
              [](const std::shared_ptr<torch::nn::Module>& m, const torch::Tensor& x) {
                return std::dynamic_pointer_cast<typename Holder::ContainedType>(m)->forward(x);
              },
              [input_shape] { return torch::rand(input_shape); },
              std::move(lazy_names)};
}

// PPE's test classes: TestLazyLinear, TestLazyConv{1,2,3}d, TestLazyBatchNorm{1,2,3}d.
std::vector<Case> cases() {
  const std::vector<std::string> bn{"weight", "bias", "running_mean", "running_var"};
  return {
      make_case<pnn::LazyLinear>(
          "LazyLinear", [] { return torch::nn::AnyModule(torch::nn::Linear(10, 20)); },
          [] { return pnn::LazyLinear(20); }, {20, 10}, {"weight"}),
      make_case<pnn::LazyConv1d>(
          "LazyConv1d", [] { return torch::nn::AnyModule(torch::nn::Conv1d(3, 4, 2)); },
          [] { return pnn::LazyConv1d(pnn::LazyConv1dOptions(4, 2)); }, {4, 3, 10}, {"weight"}),
      make_case<pnn::LazyConv2d>(
          "LazyConv2d", [] { return torch::nn::AnyModule(torch::nn::Conv2d(3, 4, 2)); },
          [] { return pnn::LazyConv2d(pnn::LazyConv2dOptions(4, 2)); }, {4, 3, 10, 10}, {"weight"}),
      make_case<pnn::LazyConv3d>(
          "LazyConv3d", [] { return torch::nn::AnyModule(torch::nn::Conv3d(3, 4, 2)); },
          [] { return pnn::LazyConv3d(pnn::LazyConv3dOptions(4, 2)); }, {4, 3, 10, 10, 10}, {"weight"}),
      make_case<pnn::LazyBatchNorm1d>(
          "LazyBatchNorm1d", [] { return torch::nn::AnyModule(torch::nn::BatchNorm1d(10)); },
          [] { return pnn::LazyBatchNorm1d(); }, {10, 10}, bn),
      make_case<pnn::LazyBatchNorm2d>(
          "LazyBatchNorm2d", [] { return torch::nn::AnyModule(torch::nn::BatchNorm2d(10)); },
          [] { return pnn::LazyBatchNorm2d(); }, {10, 10, 10, 10}, bn),
      make_case<pnn::LazyBatchNorm3d>(
          "LazyBatchNorm3d", [] { return torch::nn::AnyModule(torch::nn::BatchNorm3d(10)); },
          [] { return pnn::LazyBatchNorm3d(); }, {10, 10, 10, 10, 10}, bn),
  };
}

// The dict is kept: `find` points into it (a pointer into the temporary read
// freed memory; valgrind found it, and it crashed one run in a few).
torch::Tensor entry(const std::shared_ptr<torch::nn::Module>& m, const std::string& name) {
  const auto parameters = m->named_parameters(false);
  if (const auto* p = parameters.find(name)) return *p;
  return m->named_buffers(false)[name];
}

}  // namespace

TEST_CASE("lazy modules: the first forward equals LibTorch's module built with the input's size (test_basic)") {
  for (const auto& c : cases()) {
    CAPTURE(c.name);
    torch::manual_seed(0);
    const auto input = c.input();
    torch::manual_seed(0);
    auto original = c.original();
    const auto expected = original.forward(input);
    auto lazy = c.lazy();
    for (const auto& n : c.lazy_names) CHECK(entry(lazy, n).sizes() == torch::IntArrayRef{0});
    torch::manual_seed(0);
    const auto actual = c.forward(lazy, input);
    CHECK(same(expected, actual));
    for (const auto& p : original.ptr()->named_parameters()) CHECK(same(p.value(), entry(lazy, p.key())));
    for (const auto& b : original.ptr()->named_buffers()) CHECK(same(b.value(), entry(lazy, b.key())));
  }
}

TEST_CASE("lazy modules: a module moved to double materializes in double (test_double)") {
  for (const auto& c : cases()) {
    CAPTURE(c.name);
    torch::manual_seed(0);
    const auto input = c.input().to(torch::kDouble);
    auto m1 = c.lazy();
    m1->to(torch::kDouble);
    torch::manual_seed(0);
    const auto expected = c.forward(m1, input);
    auto m2 = c.lazy();
    m2->to(torch::kDouble);
    torch::manual_seed(0);
    const auto actual = c.forward(m2, input);
    CHECK(expected.dtype() == torch::kDouble);
    CHECK(entry(m2, "weight").dtype() == torch::kDouble);
    CHECK(same(expected, actual));
  }
}

TEST_CASE("lazy modules: save and load, initialized or not, both ways (test_save_load)") {
  // PPE's four (init_src, init_dst) cases, through torch::save/torch::load and
  // through ppe's model state (ModelRef, what snapshots use).
  for (const bool through_ppe : {false, true}) {
    for (const auto& c : cases()) {
      for (const bool init_src : {true, false}) {
        for (const bool init_dst : {true, false}) {
          CAPTURE(through_ppe);
          CAPTURE(c.name);
          CAPTURE(init_src);
          CAPTURE(init_dst);
          torch::manual_seed(0);
          const auto input = c.input();
          auto src = c.lazy();
          auto dst = c.lazy();
          if (init_src) {
            torch::manual_seed(0);
            c.forward(src, input);
            // differ from dst's initialization, so that a load that did nothing fails
            torch::NoGradGuard g;
            for (auto& p : src->parameters()) p.add_(0.5);
          }
          std::vector<torch::Tensor> dst_tensors;
          if (init_dst) {
            torch::manual_seed(1);
            c.forward(dst, input);
          }
          for (const auto& n : c.lazy_names) dst_tensors.push_back(entry(dst, n));
          std::vector<const void*> dst_ptrs;
          for (const auto& t : dst_tensors) dst_ptrs.push_back(t.data_ptr());

          auto load = [&] {
            if (through_ppe) {
              const ppe::State s = ppe::training::ModelRef(src).state_dict();
              // PPE's layout: an uninitialized module saves no lazy parameter.
              CHECK(s.contains("weight") == init_src);
              ppe::training::ModelRef(dst).load_state_dict(s, "main");
            } else {
              std::stringstream buf;
              torch::serialize::OutputArchive out;
              src->save(out);
              out.save_to(buf);
              torch::serialize::InputArchive in;
              in.load_from(buf);
              dst->load(in);
            }
          };
          if (!init_src && init_dst) {
            CHECK_THROWS(load());
            continue;
          }
          load();
          // The tensors an optimizer holds are still the module's.
          for (std::size_t i = 0; i < c.lazy_names.size(); ++i) {
            CHECK(entry(dst, c.lazy_names[i]).unsafeGetTensorImpl() == dst_tensors[i].unsafeGetTensorImpl());
            if (init_dst && through_ppe) CHECK(entry(dst, c.lazy_names[i]).data_ptr() == dst_ptrs[i]);
          }
          torch::manual_seed(0);
          const auto expected = c.forward(src, input);
          torch::manual_seed(0);
          const auto actual = c.forward(dst, input);
          CHECK(same(expected, actual));
        }
      }
    }
  }
}

TEST_CASE("lazy modules: an optimizer built before the first forward trains the materialized parameters") {
  // A LazyLinear and a Linear with the same initialization, each with an
  // optimizer built from its parameters before any forward; three steps must
  // give bitwise equal parameters (and for Adam, state of the right shape).
  for (const std::string kind : {"SGD", "Adam"}) {
    CAPTURE(kind);
    torch::manual_seed(0);
    const auto x = torch::rand({6, 5});
    const auto target = torch::rand({6, 3});
    torch::manual_seed(3);
    torch::nn::Linear plain(5, 3);
    pnn::LazyLinear lazy(3);
    auto make_opt = [&](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
      if (kind == "SGD") return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1).momentum(0.9));
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01));
    };
    auto opt_plain = make_opt(plain->parameters());
    auto opt_lazy = make_opt(lazy->parameters());
    CHECK(lazy->weight.numel() == 0);
    for (int step = 0; step < 3; ++step) {
      for (auto [m, opt, seed] : {std::tuple{std::static_pointer_cast<torch::nn::Module>(plain.ptr()), opt_plain.get(), 3},
                                  std::tuple{std::static_pointer_cast<torch::nn::Module>(lazy.ptr()), opt_lazy.get(), 3}}) {
        opt->zero_grad();
        torch::manual_seed(seed);  // the lazy module initializes at its first forward
        const auto y = m.get() == plain.ptr().get() ? plain(x) : lazy(x);
        torch::mse_loss(y, target).backward();
        opt->step();
      }
      CHECK(same(plain->weight, lazy->weight));
      CHECK(same(plain->bias, lazy->bias));
    }
    CHECK(lazy->weight.sizes() == torch::IntArrayRef{3, 5});
    CHECK(*lazy->in_features() == 5);
    if (kind == "Adam") {
      auto& state = static_cast<torch::optim::AdamParamState&>(
          *opt_lazy->state().at(ppe::detail::optim_state::state_key<torch::optim::Adam>(lazy->weight)));
      CHECK(state.exp_avg().sizes() == torch::IntArrayRef{3, 5});
      CHECK(state.step() == 3);
    }
  }
}

TEST_CASE("lazy modules: options, clone, errors") {
  SUBCASE("a given size makes a plain module at construction (PPE: in_features not None)") {
    torch::manual_seed(0);
    torch::nn::Conv2d plain(torch::nn::Conv2dOptions(3, 4, 3).padding(1).padding_mode(torch::kReflect).bias(false));
    torch::manual_seed(0);
    pnn::LazyConv2d given(pnn::LazyConv2dOptions(4, 3).in_channels(3).padding(1).padding_mode(torch::kReflect).bias(false));
    CHECK(same(plain->weight, given->weight));
    const auto x = torch::rand({2, 3, 5, 5});
    CHECK(same(plain(x), given(x)));
    CHECK(!given->named_parameters().contains("bias"));
  }
  SUBCASE("clone copies the materialized tensors, not the placeholders' identity") {
    pnn::LazyLinear a(4);
    a(torch::rand({2, 3}));
    auto b = std::dynamic_pointer_cast<pnn::LazyLinearImpl>(a->clone());
    CHECK(same(a->weight, b->weight));
    CHECK(a->weight.data_ptr() != b->weight.data_ptr());
    const auto x = torch::rand({2, 3});
    CHECK(same(a(x), b->forward(x)));
    pnn::LazyLinear u(4);
    auto v = std::dynamic_pointer_cast<pnn::LazyLinearImpl>(u->clone());
    CHECK(!v->in_features().has_value());
    CHECK(v->forward(x).sizes() == torch::IntArrayRef{2, 4});
  }
  SUBCASE("train/eval reaches the LibTorch module it forwards to") {
    pnn::LazyBatchNorm1d bn;
    bn(torch::rand({4, 3}));
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
    bn->eval();
    bn(torch::rand({4, 3}));
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(pnn::LazyBatchNorm2d(pnn::LazyBatchNormOptions().affine(false)),
                         doctest::Contains("affine=false is not supported"), std::invalid_argument);
    pnn::LazyLinear lin(4);
    ppe::State bad = ppe::State::dict({{"weight", torch::zeros({5, 3})}, {"bias", torch::zeros({4})}});
    CHECK(ppe_test::error_of([&] { ppe::training::ModelRef(lin).load_state_dict(bad, "main"); }) ==
          "ppe::nn::LazyLinear: cannot take the shape of the saved 'weight' [5, 3]: expected [4, in_features]");
  }
  SUBCASE("pretty print") {
    pnn::LazyLinear lin(4);
    std::ostringstream before;
    lin->pretty_print(before);
    CHECK(before.str() == "ppe::nn::LazyLinear(in_features=None, out_features=4, bias=true)");
    lin(torch::rand({1, 7}));
    std::ostringstream after;
    lin->pretty_print(after);
    CHECK(after.str() == "ppe::nn::LazyLinear(in_features=7, out_features=4, bias=true)");
  }
}

namespace {
struct NetImpl : torch::nn::Module {
  NetImpl() {
    conv = register_module("conv", pnn::LazyConv1d(pnn::LazyConv1dOptions(4, 3)));
    bn = register_module("bn", pnn::LazyBatchNorm1d());
    fc = register_module("fc", pnn::LazyLinear(2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc(bn(conv(x)).relu().flatten(1)); }
  pnn::LazyConv1d conv{nullptr};
  pnn::LazyBatchNorm1d bn{nullptr};
  pnn::LazyLinear fc{nullptr};
};
TORCH_MODULE(Net);
}  // namespace

TEST_CASE("lazy modules: snapshot of a manager, resumed into a fresh (uninitialized) model with Adam") {
  namespace ext = ppe::training::extensions;
  ppe_test::TempDir dir;
  torch::manual_seed(0);
  const auto x = torch::rand({8, 2, 6});
  const auto y = torch::rand({8, 2});
  auto train_step = [&](Net& net, torch::optim::Adam& opt) {
    opt.zero_grad();
    torch::mse_loss(net(x), y).backward();
    opt.step();
  };
  auto make = [&](Net& net, torch::optim::Adam& opt, bool autoload) {
    return ppe::training::ExtensionsManager(
        ppe_test::options(1, 4).out_dir(dir.str()), net, opt,
        ppe::training::entry(ext::snapshot(ext::SnapshotOptions().autoload(autoload)), ppe::iterations(2)));
  };
  Net net1;
  torch::optim::Adam opt1(net1->parameters(), 0.01);  // before the first forward
  {
    auto m1 = make(net1, opt1, false);
    for (int i = 0; i < 2; ++i) m1.run_iteration([&] { train_step(net1, opt1); });
  }
  // A fresh process: the model is uninitialized, the optimizer built before any forward.
  Net net2;
  torch::optim::Adam opt2(net2->parameters(), 0.01);
  CHECK(!net2->fc->in_features().has_value());
  auto m2 = make(net2, opt2, true);
  m2.start_extensions();
  CHECK(m2.iteration() == 2);
  CHECK(*net2->fc->in_features() == 16);
  for (const auto& p : net1->named_parameters()) CHECK(same(p.value(), net2->named_parameters()[p.key()]));
  for (const auto& b : net1->named_buffers()) CHECK(same(b.value(), net2->named_buffers()[b.key()]));
  // Training continues identically (Adam's moments were restored too).
  train_step(net1, opt1);
  train_step(net2, opt2);
  for (const auto& p : net1->named_parameters()) CHECK(same(p.value(), net2->named_parameters()[p.key()]));
}

}  // namespace ppe_test_nn_tests_modules_tests_test_lazy
