// Ports PPE's tests/pytorch_pfn_extras_tests/nn_tests/modules_tests/test_extended_sequential.py
// and test_ensure_shape.py (folded into one file to save a test binary).
// Not ported: Sequential/ModuleList/ModuleDict as the inner container
// (LibTorch's ModuleList and ModuleDict have no forward and Sequential's is a
// template, so a Sequential cannot hold them; ExtendedSequential, whose forward
// is Tensor -> Tensor, is the inner container), `_reset_parameters` on user modules (the C++ opt-in is
// ppe::nn::ResetParameters), Ensure under torch.jit (no C++ meaning).
#include "ppe_test.hpp"

#include "ppe/nn/modules/ensure_shape.hpp"
#include "ppe/nn/modules/extended_sequential.hpp"
#include "ppe/nn/modules/lazy_conv.hpp"
#include "ppe/nn/modules/lazy_linear.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_nn_tests_modules_tests_test_extended_sequential {

namespace pnn = ppe::nn;
using ModulePtr = std::shared_ptr<torch::nn::Module>;

namespace {

ModulePtr child(const ModulePtr& m, std::size_t i) {
  auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m);
  REQUIRE(seq);
  return seq->ptr(i);
}
torch::Tensor param(const ModulePtr& m, const std::string& name) { return m->named_parameters(false)[name]; }
bool same_values(const torch::Tensor& a, const torch::Tensor& b) { return torch::equal(a, b); }

// User modules are Cloneable: modes init and copy deep-copy with clone().
struct UserDefinedLayerImpl : torch::nn::Cloneable<UserDefinedLayerImpl> {
  void reset() override {}
  torch::Tensor forward(const torch::Tensor& x) { return x; }
};
TORCH_MODULE(UserDefinedLayer);

struct UserDefinedLayerWithResetImpl : torch::nn::Cloneable<UserDefinedLayerWithResetImpl>, pnn::ResetParameters {
  UserDefinedLayerWithResetImpl() { reset(); }
  void reset() override { weight = register_parameter("weight", torch::zeros({1, 1})); }
  torch::Tensor forward(const torch::Tensor& x) { return x; }
  void reset_parameters() override { weight.fill_(7); }
  torch::Tensor weight;
};
TORCH_MODULE(UserDefinedLayerWithReset);

struct UserDefinedLayerWithParametersImpl : torch::nn::Cloneable<UserDefinedLayerWithParametersImpl> {
  UserDefinedLayerWithParametersImpl() { reset(); }
  void reset() override { register_parameter("weight", torch::zeros({1, 1})); }
  torch::Tensor forward(const torch::Tensor& x) { return x; }
};
TORCH_MODULE(UserDefinedLayerWithParameters);

struct UserDefinedLayerWithBufferImpl : torch::nn::Cloneable<UserDefinedLayerWithBufferImpl> {
  UserDefinedLayerWithBufferImpl() { reset(); }
  void reset() override { register_buffer("weight", torch::zeros({1, 1})); }
  torch::Tensor forward(const torch::Tensor& x) { return x; }
};
TORCH_MODULE(UserDefinedLayerWithBuffer);

// PPE's fixture: s2 = ExtendedSequential(s1 = container(l1, l2), l3, l4).
struct Fixture {
  pnn::LazyLinear l1{3};
  torch::nn::Linear l2{3, 2};
  torch::nn::Linear l3{2, 3};
  pnn::ExtendedSequential s1{l1, l2};
  pnn::ExtendedSequential s2{nullptr};
  explicit Fixture(torch::nn::AnyModule l4) : s2(s1, l3, std::move(l4)) {}
};

std::vector<std::pair<std::string, std::function<torch::nn::AnyModule()>>> irregular_layers() {
  return {
      {"UserDefinedLayer", [] { return torch::nn::AnyModule(UserDefinedLayer()); }},
      {"ReLU", [] { return torch::nn::AnyModule(torch::nn::ReLU()); }},
      {"BatchNorm1d(1)", [] { return torch::nn::AnyModule(torch::nn::BatchNorm1d(1)); }},
      {"MultiheadAttention(1, 1)", [] { return torch::nn::AnyModule(torch::nn::MultiheadAttention(1, 1)); }},
      {"LazyConv1d(None, 1, 1)", [] { return torch::nn::AnyModule(pnn::LazyConv1d(pnn::LazyConv1dOptions(1, 1))); }},
  };
}

}  // namespace

TEST_CASE("ExtendedSequential::repeat (PPE's TestExtendedSequential, every irregular layer)") {
  {
    for (const auto& [layer_name, make_layer] : irregular_layers()) {
      CAPTURE(layer_name);
      Fixture f(make_layer());
      const ModulePtr s2 = f.s2.ptr();
      ppe_test::WarningCollector warnings;
      SUBCASE("init") {
        auto ret = f.s2->repeat(2);
        REQUIRE(ret->size() == 2);
        CHECK(ret[0] != s2);
        CHECK(std::dynamic_pointer_cast<pnn::ExtendedSequentialImpl>(ret[0]));
        CHECK(ret[1] != s2);
        CHECK(std::dynamic_pointer_cast<pnn::ExtendedSequentialImpl>(ret[1]));
        // l1's bias is filled with 0 (still uninitialized): the same values
        CHECK(same_values(param(child(child(ret[0], 0), 0), "bias"), param(child(child(ret[1], 0), 0), "bias")));
        // weights are initialized again: different values and tensors
        CHECK(!same_values(param(child(ret[0], 1), "weight"), f.l3->weight));
        CHECK(param(child(ret[0], 1), "weight").data_ptr() != f.l3->weight.data_ptr());
        CHECK(ret[0] != ret[1]);
        CHECK(param(child(ret[0], 1), "weight").data_ptr() != param(child(ret[1], 1), "weight").data_ptr());
        CHECK(!same_values(param(child(ret[0], 1), "weight"), param(child(ret[1], 1), "weight")));
        CHECK(f.s2->repeat(0, "init")->size() == 0);
        CHECK(warnings.messages.empty());  // every layer here can be reset or has nothing to reset
      }
      SUBCASE("copy") {
        auto ret = f.s2->repeat(2, "copy");
        REQUIRE(ret->size() == 2);
        CHECK(ret[0] != s2);
        CHECK(std::dynamic_pointer_cast<pnn::ExtendedSequentialImpl>(ret[0]));
        CHECK(ret[1] != s2);
        CHECK(ret[0] != ret[1]);
        CHECK(same_values(param(child(child(ret[0], 0), 0), "bias"), param(child(child(ret[1], 0), 0), "bias")));
        // the same values in other tensors
        CHECK(same_values(param(child(ret[0], 1), "weight"), f.l3->weight));
        CHECK(param(child(ret[0], 1), "weight").data_ptr() != f.l3->weight.data_ptr());
        CHECK(child(ret[0], 0) != child(ret[1], 0));
        CHECK(param(child(ret[0], 1), "weight").data_ptr() != param(child(ret[1], 1), "weight").data_ptr());
        CHECK(same_values(param(child(ret[0], 1), "weight"), param(child(ret[1], 1), "weight")));
        CHECK(f.s2->repeat(0, pnn::RepeatMode::Copy)->size() == 0);
      }
      SUBCASE("share") {
        auto ret = f.s2->repeat(2, "share");
        REQUIRE(ret->size() == 2);
        CHECK(ret[0] != s2);
        CHECK(std::dynamic_pointer_cast<pnn::ExtendedSequentialImpl>(ret[0]));
        CHECK(ret[1] != s2);
        CHECK(same_values(param(child(child(ret[0], 0), 0), "bias"), param(child(child(ret[1], 0), 0), "bias")));
        // the very same tensors
        CHECK(param(child(ret[0], 1), "weight").unsafeGetTensorImpl() == f.l3->weight.unsafeGetTensorImpl());
        CHECK(param(child(ret[1], 1), "weight").unsafeGetTensorImpl() == f.l3->weight.unsafeGetTensorImpl());
        CHECK(ret[0] != ret[1]);
        CHECK(f.s2->repeat(0, "share")->size() == 0);
      }
    }
  }
}

TEST_CASE("ExtendedSequential::repeat: which modules warn in mode init (PPE's test_(no_)warning_when_repeat)") {
  auto warned = [](torch::nn::AnyModule m) {
    ppe_test::WarningCollector warnings;
    pnn::ExtendedSequential(std::move(m))->repeat(2);
    return warnings.messages;
  };
  CHECK(warned(torch::nn::AnyModule(torch::nn::ReLU())).empty());
  CHECK(warned(torch::nn::AnyModule(UserDefinedLayer())).empty());
  CHECK(warned(torch::nn::AnyModule(UserDefinedLayerWithReset())).empty());
  const auto with_params = warned(torch::nn::AnyModule(UserDefinedLayerWithParameters()));
  REQUIRE(with_params.size() == 2);  // once per copy
  CHECK(with_params[0].find("cannot reset the parameters of module '0.0'") != std::string::npos);
  CHECK(warned(torch::nn::AnyModule(UserDefinedLayerWithBuffer())).size() == 2);
}

TEST_CASE("ExtendedSequential::repeat: reset_parameters is called; a materialized lazy module is re-initialized") {
  UserDefinedLayerWithReset user;
  pnn::LazyLinear lazy(2);
  lazy(torch::rand({1, 3}));
  pnn::ExtendedSequential s(user, lazy);
  auto ret = s->repeat(1);
  CHECK(param(child(ret[0], 0), "weight").item<float>() == 7);
  CHECK(user->weight.item<float>() == 0);
  const auto w = param(child(ret[0], 1), "weight");
  CHECK(w.sizes() == torch::IntArrayRef{2, 3});
  CHECK(!same_values(w, lazy->weight));
  CHECK(ppe_test::error_of([&] { s->repeat(2, "deep"); }) ==
        "ppe::nn::ExtendedSequential::repeat: the mode must be 'init', 'copy' or 'share', got 'deep'");
  // the copies work
  CHECK(ret->forward(torch::rand({4, 3})).sizes() == torch::IntArrayRef{4, 2});
}

// ---- Ensure (PPE's test_ensure_shape.py) ----

namespace {
using Shape = std::vector<std::optional<std::int64_t>>;
std::vector<std::int64_t> concrete(const Shape& s) {
  std::vector<std::int64_t> out;
  for (const auto& d : s) out.push_back(*d);
  return out;
}
std::string ensure_error(const torch::Tensor& t, const pnn::EnsureOptions& o) {
  return ppe_test::error_of([&] { pnn::Ensure{o}(t); });
}
}  // namespace

TEST_CASE("Ensure: construction needs something to check (test_wrong_initialization)") {
  CHECK_THROWS_WITH_AS(pnn::Ensure{pnn::EnsureOptions{}}, doctest::Contains("must be specified"),
                       std::invalid_argument);
}

TEST_CASE("Ensure: shapes (test_valid_shape, test_invalid_shape)") {
  const std::vector<Shape> shapes{{}, {1}, {1, 1}, {2}, {2, 4}, {2, 3, 4}};
  for (const auto& shape : shapes) {
    CAPTURE(shape.size());
    const auto t = torch::zeros(concrete(shape));
    pnn::Ensure module(pnn::EnsureOptions().shape(shape));
    CHECK(module(t).unsafeGetTensorImpl() == t.unsafeGetTensorImpl());  // returns its input
    CHECK_NOTHROW(pnn::ensure(t, pnn::EnsureOptions().shape(shape)));
    const auto wrong = torch::zeros({1, 2, 3});
    CHECK(ensure_error(wrong, pnn::EnsureOptions().shape(shape)).find("input shape is [1, 2, 3]") != std::string::npos);
    CHECK_THROWS_AS(pnn::ensure(wrong, pnn::EnsureOptions().shape(shape)), std::invalid_argument);
  }
  CHECK(ensure_error(torch::zeros({1, 2, 3}), pnn::EnsureOptions().shape({2, 4})) ==
        "ppe::nn::Ensure: expected shape [2, 4], input shape is [1, 2, 3]");
}

TEST_CASE("Ensure: broadcastable shapes (test_broadcastable_shape, test_nonbroadcastable_shape)") {
  const std::vector<std::pair<Shape, Shape>> ok{{{}, {2}},        {{3}, {}},        {{1}, {2}},
                                                {{1, 1}, {2, 1}}, {{1, 1}, {2}},    {{2, 1}, {2, 2}},
                                                {{2, 4}, {4}},    {{2, 3, 4}, {1, 4}}};
  for (const auto& [t, c] : ok) CHECK_NOTHROW(pnn::Ensure(pnn::EnsureOptions().shape(c).broadcastable(true))(torch::zeros(concrete(t))));
  const std::vector<std::pair<Shape, Shape>> bad{
      {{3}, {2}}, {{2, 3}, {2, 2}}, {{2, 4}, {3, 4}}, {{2, 4}, {3}}, {{2, 3, 4}, {2, 2, 1}}};
  for (const auto& [t, c] : bad)
    CHECK(ensure_error(torch::zeros(concrete(t)), pnn::EnsureOptions().shape(c).broadcastable(true))
              .find("non broadcastable") != std::string::npos);
  CHECK(ensure_error(torch::zeros({2, 3}), pnn::EnsureOptions().shape({2, 2}).broadcastable(true)) ==
        "ppe::nn::Ensure: shapes [2, 2] and [2, 3] (input) are non broadcastable (dimension 1 of the input)");
}

TEST_CASE("Ensure: any-size dimensions (test_unknown_shape, test_invalid_unknown_shape)") {
  const std::vector<std::pair<std::vector<std::int64_t>, Shape>> ok{
      {{2}, {pnn::kAnyDim}}, {{2, 2}, {2, pnn::kAnyDim}}, {{2, 1}, {pnn::kAnyDim, 2}},
      {{1, 4}, {pnn::kAnyDim, 4}}, {{2, 3, 4}, {2, pnn::kAnyDim, 4}}};
  for (const auto& [t, c] : ok) CHECK_NOTHROW(pnn::Ensure(pnn::EnsureOptions().shape(c))(torch::zeros(t)));
  const std::vector<std::pair<std::vector<std::int64_t>, Shape>> bad{
      {{3, 2}, {2, pnn::kAnyDim}}, {{1, 4}, {pnn::kAnyDim, 2}}, {{2, 3, 4}, {3, pnn::kAnyDim, 4}}};
  for (const auto& [t, c] : bad)
    CHECK(ensure_error(torch::zeros(t), pnn::EnsureOptions().shape(c)).find("non broadcastable") != std::string::npos);
  CHECK(ensure_error(torch::zeros({3, 2}), pnn::EnsureOptions().shape({2, pnn::kAnyDim})) ==
        "ppe::nn::Ensure: shapes [2, *] and [3, 2] (input) are non broadcastable (dimension 0 of the input)");
}

TEST_CASE("Ensure: dtypes, casts, device (test_valid_dtypes ... test_valid_shape_and_dtype)") {
  for (const auto dtype : {torch::kInt32, torch::kFloat32, torch::kComplexFloat}) {
    CHECK_NOTHROW(pnn::Ensure(pnn::EnsureOptions().dtype(dtype))(torch::zeros({1}, dtype)));
    CHECK_NOTHROW(pnn::ensure(torch::zeros({1}, dtype), pnn::EnsureOptions().dtype(dtype)));
  }
  const std::vector<std::pair<c10::ScalarType, c10::ScalarType>> invalid{{torch::kInt32, torch::kInt16},
                                                                         {torch::kInt32, torch::kFloat32},
                                                                         {torch::kFloat32, torch::kFloat64},
                                                                         {torch::kFloat32, torch::kComplexFloat}};
  for (const auto& [t, c] : invalid)
    CHECK(ensure_error(torch::zeros({1}, t), pnn::EnsureOptions().dtype(c)).find("input dtype") != std::string::npos);
  CHECK(ensure_error(torch::zeros({1}, torch::kInt32), pnn::EnsureOptions().dtype(torch::kInt16)) ==
        "ppe::nn::Ensure: expected dtype Short, input dtype is Int");
  const std::vector<std::pair<c10::ScalarType, c10::ScalarType>> castable{
      {torch::kInt32, torch::kFloat32}, {torch::kInt32, torch::kComplexDouble}, {torch::kInt8, torch::kFloat16}};
  for (const auto& [t, c] : castable)
    CHECK_NOTHROW(pnn::Ensure(pnn::EnsureOptions().dtype(c).can_cast(true))(torch::zeros({1}, t)));
  const std::vector<std::pair<c10::ScalarType, c10::ScalarType>> not_castable{{torch::kComplexFloat, torch::kInt32},
                                                                              {torch::kFloat32, torch::kInt32}};
  for (const auto& [t, c] : not_castable)
    CHECK(ensure_error(torch::zeros({1}, t), pnn::EnsureOptions().dtype(c).can_cast(true)).find("be casted to") !=
          std::string::npos);
  CHECK_NOTHROW(pnn::ensure(torch::zeros({10, 5}), pnn::EnsureOptions().shape({10, 5}).dtype(torch::kFloat32)));
  // The device (not in PPE): by type, or by type and index.
  CHECK_NOTHROW(pnn::ensure(torch::zeros({1}), pnn::EnsureOptions().device(torch::kCPU)));
  CHECK(ppe_test::error_of([] { pnn::ensure(torch::zeros({1}), pnn::EnsureOptions().device(torch::Device("cuda:1"))); }) ==
        "ppe::nn::Ensure: expected device cuda:1, input device is cpu");
  // In a Sequential, and printed.
  torch::nn::Sequential net(torch::nn::Linear(3, 4), pnn::Ensure(pnn::EnsureOptions().shape({pnn::kAnyDim, 4})));
  CHECK(net->forward(torch::rand({5, 3})).sizes() == torch::IntArrayRef{5, 4});
  std::ostringstream s;
  pnn::Ensure(pnn::EnsureOptions().shape({pnn::kAnyDim, 4}).dtype(torch::kFloat))->pretty_print(s);
  CHECK(s.str() == "ppe::nn::Ensure(shape=[*, 4], dtype=Float)");
}

}  // namespace ppe_test_nn_tests_modules_tests_test_extended_sequential
