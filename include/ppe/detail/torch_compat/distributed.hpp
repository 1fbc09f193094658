#pragma once
/// \file
/// c10d under one spelling for every LibTorch (see `ppe/detail/torch_compat.hpp`):
/// from 2.0 a backend (`ProcessGroupGloo`, `ProcessGroupNCCL`) is a
/// `c10d::Backend` that a `c10d::ProcessGroup` dispatches to by device type,
/// where 1.13's backends were process groups themselves. Needs c10d's headers
/// (ppe-distributed's flags), hence apart from torch_compat.hpp.

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <c10/core/DeviceType.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "ppe/detail/dependent.hpp"
#include "ppe/detail/torch_compat.hpp"

namespace ppe::detail::compat {

/// The process group that collectives go through, for `backend` (named
/// `name`: "gloo" or "nccl") serving tensors of `device`: `backend` itself up
/// to LibTorch 1.13, a `c10d::ProcessGroup` with `backend` registered as its
/// default from 2.0. A gloo group also serves CUDA tensors, as Python's
/// `init_process_group("gloo")` registers it for both device types.
template <class Backend>
c10::intrusive_ptr<c10d::ProcessGroup> as_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                          int size, std::string_view name,
                                                          c10::intrusive_ptr<Backend> backend,
                                                          std::chrono::milliseconds timeout) {
#if PPE_TORCH_C10D_BACKENDS
  // Dependent, so that only the constructor this LibTorch has is compiled:
  // the group's options argument went away in LibTorch 2.4.
  using Group = dependent_t<c10d::ProcessGroup, Backend>;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  if constexpr (std::is_constructible_v<Group, c10::intrusive_ptr<c10d::Store>, int, int>)
    group = c10::make_intrusive<Group>(store, rank, size);
  else
    group = c10::make_intrusive<Group>(store, rank, size,
                                       c10::make_intrusive<typename Group::Options>(std::string(name), timeout));
  const auto type = name == "nccl" ? Group::BackendType::NCCL : Group::BackendType::GLOO;
  group->setDefaultBackend(type);
  if (name == "gloo") group->setBackend(c10::DeviceType::CPU, type, backend);
  group->setBackend(c10::DeviceType::CUDA, type, backend);
  return group;
#else
  (void)store, (void)rank, (void)size, (void)name, (void)timeout;
  return backend;
#endif
}

/// Whether `store_options` asks for the libuv backend of the TCPStore (from
/// LibTorch 2.4, where it is the default); it has no such choice before.
template <class Options>
bool tcp_store_uses_libuv(const Options& store_options) {
  if constexpr (requires { store_options.useLibUV; })
    return store_options.useLibUV;
  else
    return false;
}

/// Chooses the TCPStore's backend as Python's `env://` does: libuv unless the
/// environment variable USE_LIBUV is "0". Both backends speak one protocol,
/// so a store of either kind serves clients of both.
template <class Options>
void choose_tcp_store_backend(Options& store_options, bool libuv) {
  if constexpr (requires { store_options.useLibUV; }) store_options.useLibUV = libuv;
}

/// USE_LIBUV as Python reads it: "1" (libuv), anything else (the classic
/// backend), or unset.
inline std::optional<bool> use_libuv_from_environment() {
  const char* v = std::getenv("USE_LIBUV");
  if (!v) return std::nullopt;
  return std::string_view(v) == "1";
}

}  // namespace ppe::detail::compat
