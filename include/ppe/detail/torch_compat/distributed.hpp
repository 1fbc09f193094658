#pragma once
/// \file
/// c10d under one spelling for every LibTorch (see `ppe/detail/torch_compat.hpp`):
/// from 2.0 a backend (`ProcessGroupGloo`, `ProcessGroupNCCL`) is a
/// `c10d::Backend` that a `c10d::ProcessGroup` dispatches to by device type,
/// where 1.13's backends were process groups themselves. Needs c10d's headers
/// (ppe-distributed's flags), hence apart from torch_compat.hpp.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
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

/// The store of the default group, under the "default_pg" store: where
/// `torch.distributed.init_process_group` puts the group named `name` ("0"
/// for the default group), so that C++ and Python ranks of one job meet.
/// Python 1.13 prefixes the group's name ("0/<key>"); 2.x prefixes the name
/// and a slash ("0//<key>").
inline c10::intrusive_ptr<c10d::Store> group_store(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const std::string& name) {
#if PPE_TORCH_C10D_BACKENDS
  return c10::make_intrusive<c10d::PrefixStore>(name + "/", store);
#else
  return c10::make_intrusive<c10d::PrefixStore>(name, store);
#endif
}

/// The store a backend of the group rendezvouses in: from 2.0 each backend
/// gets its own, prefixed with the first device type it serves ("cpu/" for
/// gloo, "cuda/" for nccl, then a slash: "0//cpu//<key>"); before, the group's.
inline c10::intrusive_ptr<c10d::Store> backend_store(const c10::intrusive_ptr<c10d::Store>& group_store,
                                                     std::string_view device_type) {
#if PPE_TORCH_C10D_BACKENDS
  return c10::make_intrusive<c10d::PrefixStore>(std::string(device_type) + "/", group_store);
#else
  (void)device_type;
  return group_store;
#endif
}

/// The key of Python's store-based barrier at the end of
/// `init_process_group` (in the "default_pg" store), or none where Python
/// skips it: always there before PyTorch 2.1, keyed by the number of groups
/// made ("store_based_barrier_key:1"); from 2.1 only with
/// TORCH_DIST_INIT_BARRIER=1, keyed by the group's name ("..._key:0").
inline std::optional<std::string> init_barrier_key(const std::string& group_name) {
#if PPE_TORCH_INIT_BARRIER_OPT_IN
  const char* v = std::getenv("TORCH_DIST_INIT_BARRIER");
  if (v == nullptr || std::string_view(v) != "1") return std::nullopt;
  return "store_based_barrier_key:" + group_name;
#else
  (void)group_name;
  return std::string("store_based_barrier_key:1");
#endif
}

/// On rank 0, publishes the group's first sequence number in the store, as
/// Python does after making a gloo or nccl backend; where that backend
/// inherits the method (LibTorch 2.14 made it a warning no-op) nothing is
/// published. The other ranks never wait for it: a Python rank 0 of a
/// LibTorch that publishes none would leave them waiting.
template <class Backend>
void publish_sequence_number(Backend& backend, int rank) {
  if constexpr (std::is_same_v<decltype(&Backend::setSequenceNumberForGroup), void (Backend::*)()>)
    if (rank == 0) backend.setSequenceNumberForGroup();
}

}  // namespace ppe::detail::compat
