#pragma once
/// \file
/// `ppe::nn::LazyConv1d`, `LazyConv2d`, `LazyConv3d` (PPE's modules of the
/// same names): `torch::nn::ConvNd` whose `in_channels` is taken from the
/// first input.
///
/// \code
///   ppe::nn::LazyConv2d conv(ppe::nn::LazyConv2dOptions(/*out_channels=*/4, /*kernel_size=*/3).padding(1));
///   auto y = conv(torch::rand({8, 3, 32, 32}));  // weight becomes [4, 3, 3, 3]
/// \endcode

#include <torch/expanding_array.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/nn/modules/lazy.hpp"

namespace ppe::nn {

/// Options of `LazyConv{D}d`: those of `torch::nn::Conv{D}dOptions` (the
/// same defaults) with `in_channels` optional.
template <std::size_t D>
struct LazyConvOptions {
  using padding_t = torch::nn::detail::conv_padding_t<D>;
  using padding_mode_t = torch::nn::detail::conv_padding_mode_t;

  LazyConvOptions(std::int64_t out_channels, torch::ExpandingArray<D> kernel_size)
      : out_channels_(out_channels), kernel_size_(kernel_size) {}

  /// Input channels; none (the default) takes them from the first input
  /// (PPE: `in_channels=None`). Given, the module is a plain Conv from the start.
  PPE_ARG(std::optional<std::int64_t>, in_channels) = std::nullopt;
  /// Output channels.
  PPE_ARG(std::int64_t, out_channels);
  /// Kernel size.
  PPE_ARG(torch::ExpandingArray<D>, kernel_size);
  /// Stride.
  PPE_ARG(torch::ExpandingArray<D>, stride) = 1;
  /// Implicit padding (sizes, `torch::kValid` or `torch::kSame`).
  PPE_ARG(padding_t, padding) = 0;
  /// Kernel dilation.
  PPE_ARG(torch::ExpandingArray<D>, dilation) = 1;
  /// Groups (in_channels must be divisible by it).
  PPE_ARG(std::int64_t, groups) = 1;
  /// Whether the layer learns an additive bias.
  PPE_ARG(bool, bias) = true;
  /// `torch::kZeros`, `kReflect`, `kReplicate` or `kCircular`.
  PPE_ARG(padding_mode_t, padding_mode) = torch::kZeros;

 public:
  /// LibTorch's options for `in_channels` input channels.
  torch::nn::ConvOptions<D> torch_options(std::int64_t in_channels) const {
    return torch::nn::ConvOptions<D>(in_channels, out_channels(), kernel_size())
        .stride(stride())
        .padding(padding())
        .dilation(dilation())
        .groups(groups())
        .bias(bias())
        .padding_mode(padding_mode());
  }
};

using LazyConv1dOptions = LazyConvOptions<1>;
using LazyConv2dOptions = LazyConvOptions<2>;
using LazyConv3dOptions = LazyConvOptions<3>;

/// A D-dimensional convolution with lazy `in_channels` (see `LazyModule`).
/// `weight` is a placeholder of shape `[0]` until the first forward gives it
/// `[out_channels, in_channels / groups, kernel...]` and initializes weight
/// and bias exactly as `torch::nn::Conv{D}d` would with that size. The input
/// channels are dimension 1 of a batched input, 0 of an unbatched one.
template <std::size_t D, class Derived, class Inner>
class LazyConvNdImpl : public LazyModule<Derived, Inner, LazyConvNdImpl<D, Derived, Inner>> {
 public:
  explicit LazyConvNdImpl(LazyConvOptions<D> options) : options(std::move(options)) { reset(); }

  void reset() override {
    this->drop_inner();
    weight = this->register_parameter("weight", detail::placeholder());
    if (options.bias())
      bias = this->register_parameter("bias", detail::placeholder().new_zeros({options.out_channels()}));
    else
      bias = this->register_parameter("bias", at::Tensor(), /*requires_grad=*/false);
    if (options.in_channels()) this->materialize_features(*options.in_channels());
  }

  at::Tensor forward(const at::Tensor& input) {
    if (!this->is_materialized())
      this->materialize_features(input.size(input.dim() == static_cast<std::int64_t>(D) + 1 ? 0 : 1));
    return this->inner().forward(input);
  }

  /// The inferred `in_channels`; none before the first forward.
  std::optional<std::int64_t> in_channels() const {
    if (detail::is_placeholder(weight)) return std::nullopt;
    return weight.size(1) * options.groups();
  }

  void pretty_print(std::ostream& stream) const override {
    const auto in = in_channels();
    stream << "ppe::nn::" << lazy_type_name() << "(" << (in ? std::to_string(*in) : std::string("None")) << ", "
           << options.out_channels() << ", kernel_size=" << options.kernel_size()
           << ", stride=" << options.stride() << ")";
  }

  LazyConvOptions<D> options;
  at::Tensor weight;
  at::Tensor bias;

  // The LazyModule protocol.
  static std::string lazy_type_name() { return "LazyConv" + std::to_string(D) + "d"; }
  std::vector<std::string> lazy_names() const { return {"weight"}; }
  std::int64_t features_from(const std::string& name, at::IntArrayRef sizes) const {
    bool ok = name == "weight" && sizes.size() == D + 2 && sizes[0] == options.out_channels();
    for (std::size_t i = 0; ok && i < D; ++i) ok = sizes[2 + i] == (*options.kernel_size())[i];
    if (!ok)
      detail::throw_bad_saved_shape(lazy_type_name(), name, sizes,
                                    "[" + std::to_string(options.out_channels()) + ", in_channels / groups, " +
                                        ppe::detail::python_shape(*options.kernel_size()).substr(1));
    return sizes[1] * options.groups();
  }
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> lazy_shapes(std::int64_t n) const {
    std::vector<std::int64_t> shape{options.out_channels(), n / options.groups()};
    for (std::size_t i = 0; i < D; ++i) shape.push_back((*options.kernel_size())[i]);
    return {{"weight", std::move(shape)}};
  }
  torch::nn::ConvOptions<D> inner_options() const { return options.torch_options(*in_channels()); }
  void bind_inner(Inner& inner) const {
    detail::bind_tensor(inner.weight, weight);
    if (options.bias()) detail::bind_tensor(inner.bias, bias);
  }
};

/// `LazyConvNdImpl` for 1-d inputs (`[N, C, L]`).
class LazyConv1dImpl : public LazyConvNdImpl<1, LazyConv1dImpl, torch::nn::Conv1dImpl> {
 public:
  using LazyConvNdImpl::LazyConvNdImpl;
};
/// `LazyConvNdImpl` for 2-d inputs (`[N, C, H, W]`).
class LazyConv2dImpl : public LazyConvNdImpl<2, LazyConv2dImpl, torch::nn::Conv2dImpl> {
 public:
  using LazyConvNdImpl::LazyConvNdImpl;
};
/// `LazyConvNdImpl` for 3-d inputs (`[N, C, D, H, W]`).
class LazyConv3dImpl : public LazyConvNdImpl<3, LazyConv3dImpl, torch::nn::Conv3dImpl> {
 public:
  using LazyConvNdImpl::LazyConvNdImpl;
};

/// `std::shared_ptr<LazyConv1dImpl>` holder.
TORCH_MODULE(LazyConv1d);
/// `std::shared_ptr<LazyConv2dImpl>` holder.
TORCH_MODULE(LazyConv2d);
/// `std::shared_ptr<LazyConv3dImpl>` holder.
TORCH_MODULE(LazyConv3d);

}  // namespace ppe::nn
