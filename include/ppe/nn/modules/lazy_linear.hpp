#pragma once
/// \file
/// `ppe::nn::LazyLinear` (PPE's `LazyLinear`): a `torch::nn::Linear` whose
/// `in_features` is taken from the first input's last dimension.
///
/// \code
///   ppe::nn::LazyLinear fc(ppe::nn::LazyLinearOptions(20));
///   torch::optim::SGD opt(fc->parameters(), 0.1);  // before the first forward: fine
///   auto y = fc(torch::rand({8, 10}));             // weight becomes [20, 10]
/// \endcode

#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/nn/modules/lazy.hpp"

namespace ppe::nn {

/// Options of `LazyLinear`: PPE's `LazyLinear(in_features, out_features, bias=True)`.
struct LazyLinearOptions {
  LazyLinearOptions(std::int64_t out_features) : out_features_(out_features) {}  // NOLINT: implicit, as LibTorch's
  /// The size of each input sample; none (the default) takes it from the
  /// first input (PPE: `in_features=None`). Given, the module is a plain
  /// Linear from the start.
  PPE_ARG(std::optional<std::int64_t>, in_features) = std::nullopt;
  /// The size of each output sample.
  PPE_ARG(std::int64_t, out_features);
  /// Whether the layer learns an additive bias.
  PPE_ARG(bool, bias) = true;
};

/// A Linear layer with lazy `in_features` (see `LazyModule` for the
/// machinery). `weight` is a placeholder of shape `[0]` until the first
/// forward gives it `[out_features, in_features]` and initializes weight and
/// bias exactly as `torch::nn::Linear` would with that size.
class LazyLinearImpl : public LazyModule<LazyLinearImpl, torch::nn::LinearImpl> {
 public:
  explicit LazyLinearImpl(LazyLinearOptions options) : options(std::move(options)) { reset(); }

  void reset() override {
    drop_inner();
    weight = register_parameter("weight", detail::placeholder());
    if (options.bias())
      bias = register_parameter("bias", detail::placeholder().new_zeros({options.out_features()}));
    else
      bias = register_parameter("bias", at::Tensor(), /*requires_grad=*/false);
    if (options.in_features()) materialize_features(*options.in_features());
  }

  /// `x.matmul(weight.t()) + bias`, materializing the module at the first call.
  at::Tensor forward(const at::Tensor& input) {
    if (!is_materialized()) materialize_features(input.size(-1));
    return inner().forward(input);
  }

  /// The inferred `in_features`; none before the first forward.
  std::optional<std::int64_t> in_features() const {
    if (detail::is_placeholder(weight)) return std::nullopt;
    return weight.size(1);
  }

  void pretty_print(std::ostream& stream) const override {
    const auto in = in_features();
    stream << "ppe::nn::LazyLinear(in_features=" << (in ? std::to_string(*in) : std::string("None"))
           << ", out_features=" << options.out_features() << ", bias=" << std::boolalpha << options.bias() << ")";
  }

  LazyLinearOptions options;
  at::Tensor weight;
  at::Tensor bias;

  // The LazyModule protocol.
  static std::string lazy_type_name() { return "LazyLinear"; }
  std::vector<std::string> lazy_names() const { return {"weight"}; }
  std::int64_t features_from(const std::string& name, at::IntArrayRef sizes) const {
    if (name != "weight" || sizes.size() != 2 || sizes[0] != options.out_features())
      detail::throw_bad_saved_shape("LazyLinear", name, sizes,
                                    "[" + std::to_string(options.out_features()) + ", in_features]");
    return sizes[1];
  }
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> lazy_shapes(std::int64_t n) const {
    return {{"weight", {options.out_features(), n}}};
  }
  torch::nn::LinearOptions inner_options() const {
    return torch::nn::LinearOptions(weight.size(1), options.out_features()).bias(options.bias());
  }
  void bind_inner(torch::nn::LinearImpl& inner) const {
    detail::bind_tensor(inner.weight, weight);
    if (options.bias()) detail::bind_tensor(inner.bias, bias);
  }
};

/// `std::shared_ptr<LazyLinearImpl>` holder (see `torch::nn::ModuleHolder`).
TORCH_MODULE(LazyLinear);

}  // namespace ppe::nn
