#pragma once
/// \file
/// `ppe::nn::LazyBatchNorm1d`, `LazyBatchNorm2d`, `LazyBatchNorm3d` (PPE's
/// modules of the same names): `torch::nn::BatchNormNd` whose
/// `num_features` is taken from the first input's channel dimension.
///
/// \code
///   ppe::nn::LazyBatchNorm2d bn;                    // or (LazyBatchNormOptions().momentum(0.01))
///   auto y = bn(torch::rand({8, 16, 5, 5}));        // weight, bias, running stats become [16]
/// \endcode

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/nn/modules/lazy.hpp"

namespace ppe::nn {

/// Options of `LazyBatchNorm{D}d`: those of `torch::nn::BatchNormOptions`
/// (the same defaults) with `num_features` optional.
struct LazyBatchNormOptions {
  /// Channels; none (the default) takes them from the first input
  /// (PPE: `num_features=None`). Given, the module is a plain BatchNorm.
  PPE_ARG(std::optional<std::int64_t>, num_features) = std::nullopt;
  /// Added to the variance for numerical stability.
  PPE_ARG(double, eps) = 1e-5;
  /// Running statistics' momentum; none: a cumulative average.
  PPE_ARG(std::optional<double>, momentum) = 0.1;
  /// Learnable weight and bias; must be true (PPE: affine=False is a
  /// ValueError, use torch::nn::BatchNorm instead: there is nothing lazy).
  PPE_ARG(bool, affine) = true;
  /// Whether running mean and variance are tracked.
  PPE_ARG(bool, track_running_stats) = true;

 public:
  /// LibTorch's options for `num_features` channels.
  torch::nn::BatchNormOptions torch_options(std::int64_t num_features) const {
    return torch::nn::BatchNormOptions(num_features)
        .eps(eps())
        .momentum(momentum() ? c10::optional<double>(*momentum()) : c10::nullopt)
        .affine(affine())
        .track_running_stats(track_running_stats());
  }
};

/// A D-dimensional batch normalization with lazy `num_features` (see
/// `LazyModule`). `weight`, `bias` (and, when tracked, `running_mean`,
/// `running_var`) are placeholders of shape `[0]` until the first forward
/// gives them `[num_features]` and initializes them as
/// `torch::nn::BatchNorm{D}d` does.
///
/// The channels are the input's dimension 1 (PPE 0.9.0 takes the last
/// dimension, which is the channel dimension only for 2-d input of
/// BatchNorm1d; its tests use inputs where the two are equal).
template <std::size_t D, class Derived, class Inner>
class LazyBatchNormImpl : public LazyModule<Derived, Inner, LazyBatchNormImpl<D, Derived, Inner>> {
 public:
  explicit LazyBatchNormImpl(LazyBatchNormOptions options = {}) : options(std::move(options)) {
    if (!this->options.affine())
      throw std::invalid_argument("ppe::nn::" + lazy_type_name() +
                                  ": affine=false is not supported (nothing would be lazy); use torch::nn::BatchNorm" +
                                  std::to_string(D) + "d");
    reset();
  }

  void reset() override {
    this->drop_inner();
    weight = this->register_parameter("weight", detail::placeholder());
    bias = this->register_parameter("bias", detail::placeholder());
    if (options.track_running_stats()) {
      running_mean = this->register_buffer("running_mean", detail::placeholder());
      running_var = this->register_buffer("running_var", detail::placeholder());
      num_batches_tracked = this->register_buffer("num_batches_tracked", detail::placeholder().new_zeros({}, at::kLong));
    } else {
      running_mean = this->register_buffer("running_mean", at::Tensor());
      running_var = this->register_buffer("running_var", at::Tensor());
      num_batches_tracked = this->register_buffer("num_batches_tracked", at::Tensor());
    }
    if (options.num_features()) this->materialize_features(*options.num_features());
  }

  at::Tensor forward(const at::Tensor& input) {
    if (!this->is_materialized()) {
      if (input.dim() < 2)
        throw std::invalid_argument("ppe::nn::" + lazy_type_name() + ": expected an input of at least 2 dimensions " +
                                    "(batch, channels, ...), got " + ppe::detail::python_shape(input.sizes()));
      this->materialize_features(input.size(1));
    }
    return this->inner().forward(input);
  }

  /// The inferred `num_features`; none before the first forward.
  std::optional<std::int64_t> num_features() const {
    if (detail::is_placeholder(weight)) return std::nullopt;
    return weight.size(0);
  }

  void pretty_print(std::ostream& stream) const override {
    const auto n = num_features();
    stream << "ppe::nn::" << lazy_type_name() << "(" << (n ? std::to_string(*n) : std::string("None"))
           << ", eps=" << options.eps() << ", momentum=";
    if (options.momentum())
      stream << *options.momentum();
    else
      stream << "None";
    stream << ", affine=" << std::boolalpha << options.affine()
           << ", track_running_stats=" << options.track_running_stats() << ")";
  }

  LazyBatchNormOptions options;
  at::Tensor weight;
  at::Tensor bias;
  at::Tensor running_mean;
  at::Tensor running_var;
  at::Tensor num_batches_tracked;

  // The LazyModule protocol.
  static std::string lazy_type_name() { return "LazyBatchNorm" + std::to_string(D) + "d"; }
  std::vector<std::string> lazy_names() const {
    if (options.track_running_stats()) return {"weight", "bias", "running_mean", "running_var"};
    return {"weight", "bias"};
  }
  std::int64_t features_from(const std::string& name, at::IntArrayRef sizes) const {
    if (sizes.size() != 1 || sizes[0] == 0)
      detail::throw_bad_saved_shape(lazy_type_name(), name, sizes, "[num_features]");
    return sizes[0];
  }
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> lazy_shapes(std::int64_t n) const {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
    for (const auto& name : lazy_names()) out.emplace_back(name, std::vector<std::int64_t>{n});
    return out;
  }
  torch::nn::BatchNormOptions inner_options() const { return options.torch_options(weight.size(0)); }
  void bind_inner(Inner& inner) const {
    detail::bind_tensor(inner.weight, weight);
    detail::bind_tensor(inner.bias, bias);
    if (options.track_running_stats()) {
      detail::bind_tensor(inner.running_mean, running_mean);
      detail::bind_tensor(inner.running_var, running_var);
      detail::bind_tensor(inner.num_batches_tracked, num_batches_tracked);
    }
  }
};

/// `LazyBatchNormImpl` for `[N, C]` or `[N, C, L]` inputs.
class LazyBatchNorm1dImpl : public LazyBatchNormImpl<1, LazyBatchNorm1dImpl, torch::nn::BatchNorm1dImpl> {
 public:
  using LazyBatchNormImpl::LazyBatchNormImpl;
};
/// `LazyBatchNormImpl` for `[N, C, H, W]` inputs.
class LazyBatchNorm2dImpl : public LazyBatchNormImpl<2, LazyBatchNorm2dImpl, torch::nn::BatchNorm2dImpl> {
 public:
  using LazyBatchNormImpl::LazyBatchNormImpl;
};
/// `LazyBatchNormImpl` for `[N, C, D, H, W]` inputs.
class LazyBatchNorm3dImpl : public LazyBatchNormImpl<3, LazyBatchNorm3dImpl, torch::nn::BatchNorm3dImpl> {
 public:
  using LazyBatchNormImpl::LazyBatchNormImpl;
};

/// `std::shared_ptr<LazyBatchNorm1dImpl>` holder.
TORCH_MODULE(LazyBatchNorm1d);
/// `std::shared_ptr<LazyBatchNorm2dImpl>` holder.
TORCH_MODULE(LazyBatchNorm2d);
/// `std::shared_ptr<LazyBatchNorm3dImpl>` holder.
TORCH_MODULE(LazyBatchNorm3d);

}  // namespace ppe::nn
