#pragma once
/// \file
/// Tensors whose data are still in their file: what a resume reads straight
/// into its destinations (issue 48). `detail::load_file_deferred` returns a
/// State in which each large tensor that the caller will load into
/// something (a model's parameters, an optimizer's state) keeps its storage
/// unread: reserved address space, not memory, and where its bytes are in
/// the file. Loading it then costs no second copy:
///  - `copy_saved(dst, src)` (a model's parameter) reads the record from the
///    file straight into `dst` when their layouts agree (else reads it,
///    copies, and gives the memory back: one record at a time);
///  - `take_saved(src, device, dtype)` (an optimizer's state) reads the record
///    into the tensor's own memory and hands that tensor over, when it alone
///    uses its storage and has the device and dtype asked for.
/// Every other tensor of the State is read before it is returned. A tensor
/// that is no record of a file passes through both unchanged (copied or
/// converted as `copy_`/`to` do).

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"

namespace ppe::detail {

/// Whether the tensor at `path` (keys from the root: {"models", "main",
/// "0.weight"}) may stay unread until it is loaded.
using MayDefer = std::function<bool(const std::vector<std::string>& path)>;

/// `ppe::serialization::load_file`, but the large tensors (1 MiB and more)
/// for which `may_defer` says yes stay in the file until `copy_saved` or
/// `take_saved` reads them, and the seal is verified first by reading the
/// file once through a bounded buffer (every byte is checked before any is
/// loaded anywhere). The file stays open while such a tensor lives.
PPE_DECL State load_file_deferred(const std::filesystem::path& path, const MayDefer& may_defer);

/// The paths of a manager's state that `Manager::load_state_dict` loads
/// through `copy_saved` or `take_saved`: the models' tensors and the
/// optimizers' per-parameter state.
PPE_DECL bool manager_may_defer(const std::vector<std::string>& path);

/// `dst.copy_(src)` (under no_grad, as a model's load is), reading an unread
/// `src` from its file straight into `dst` where it can.
PPE_DECL void copy_saved(const at::Tensor& dst, const at::Tensor& src);

/// `src` read in, as a tensor on `device` of `dtype` that nothing else
/// shares: `src` itself when it is a file record it alone uses (read into
/// its own memory), else a copy (`to(..., copy=true)`).
PPE_DECL at::Tensor take_saved(const at::Tensor& src, c10::Device device, c10::ScalarType dtype);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/file_records.ipp"
#endif
