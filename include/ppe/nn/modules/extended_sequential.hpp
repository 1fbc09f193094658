#pragma once
/// \file
/// `ppe::nn::ExtendedSequential` (PPE's `ExtendedSequential`, from Chainer):
/// a `torch::nn::Sequential` that can repeat itself.
///
/// \code
///   ppe::nn::ExtendedSequential block(torch::nn::Linear(8, 8), torch::nn::ReLU());
///   auto deep = block->repeat(4);                                  // 4 blocks, each freshly initialized
///   auto tied = block->repeat(4, ppe::nn::RepeatMode::Share);      // 4 times the same parameters
/// \endcode

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "ppe/detail/config.hpp"
#include "ppe/nn/modules/lazy.hpp"

namespace ppe::nn {

/// How `ExtendedSequential::repeat` makes each copy (PPE's `mode`).
enum class RepeatMode {
  /// A deep copy whose parameters are initialized again (PPE: "init").
  Init,
  /// A deep copy with the same values (PPE: "copy").
  Copy,
  /// A new sequential holding the same modules: parameters are shared (PPE: "share").
  Share,
};

/// `"init"`, `"copy"` or `"share"` as a RepeatMode; std::invalid_argument otherwise.
PPE_DECL RepeatMode repeat_mode(std::string_view mode);

class ExtendedSequential;

/// A Sequential with `repeat`. Modules are re-initialized (mode `Init`)
/// through their `reset_parameters()` (LibTorch's Linear, Bilinear, Conv,
/// ConvTranspose, BatchNorm, InstanceNorm, LayerNorm, GroupNorm, Embedding,
/// EmbeddingBag, RNN, LSTM, GRU and their cells, MultiheadAttention's
/// `_reset_parameters`, ppe's lazy modules, and any module deriving from
/// `ppe::nn::ResetParameters`); Sequential and ExtendedSequential are
/// recursed into. Another module that has parameters or buffers keeps its
/// copied values, with a warning (ppe::warn), as PPE warns. Its forward takes
/// and returns one tensor, so that ExtendedSequentials nest.
class ExtendedSequentialImpl : public torch::nn::SequentialImpl {
 public:
  using torch::nn::SequentialImpl::SequentialImpl;

  /// The modules applied in turn to a tensor. (Sequential's own forward is a
  /// template, which `torch::nn::AnyModule` cannot hold: this one lets an
  /// ExtendedSequential be an element of another, as in PPE. For other
  /// signatures, call `SequentialImpl::forward<R>(...)`.)
  at::Tensor forward(const at::Tensor& input) { return torch::nn::SequentialImpl::forward(input); }

  /// A deep copy that is an ExtendedSequential too (with the same names).
  PPE_DECL std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<c10::Device>& device = c10::nullopt) const override;

  /// An ExtendedSequential of `n` copies of this one, made as `mode` says
  /// (PPE's `repeat(n_repeat, mode="init")`); empty when `n <= 0`. Modes
  /// init and copy deep-copy with `clone()` (Python's `copy.deepcopy`), so
  /// every module must be `torch::nn::Cloneable`.
  ExtendedSequential repeat(std::int64_t n, RepeatMode mode = RepeatMode::Init) const;
  /// `repeat` with PPE's mode names: "init", "copy" or "share".
  ExtendedSequential repeat(std::int64_t n, std::string_view mode) const;

  void pretty_print(std::ostream& stream) const override { stream << "ppe::nn::ExtendedSequential"; }
};

/// `std::shared_ptr<ExtendedSequentialImpl>` holder.
TORCH_MODULE(ExtendedSequential);

namespace detail {
/// PPE's `_reset_parameters`: re-initializes `module` (see ExtendedSequentialImpl).
PPE_DECL void reset_module_parameters(torch::nn::Module& module, const std::string& name);
/// `repeat` without the holder.
PPE_DECL std::shared_ptr<ExtendedSequentialImpl> repeat_sequential(const ExtendedSequentialImpl& self, std::int64_t n,
                                                                    RepeatMode mode);
}  // namespace detail

inline ExtendedSequential ExtendedSequentialImpl::repeat(std::int64_t n, RepeatMode mode) const {
  return ExtendedSequential(detail::repeat_sequential(*this, n, mode));
}

inline ExtendedSequential ExtendedSequentialImpl::repeat(std::int64_t n, std::string_view mode) const {
  return repeat(n, repeat_mode(mode));
}

}  // namespace ppe::nn

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/nn/modules/impl/extended_sequential.ipp"
#endif
