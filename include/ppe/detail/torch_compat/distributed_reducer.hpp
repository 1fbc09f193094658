#pragma once
/// \file
/// c10d's `Reducer` (Python DDP's engine) built the same way on every LibTorch
/// (see `ppe/detail/torch_compat.hpp`): up to 2.13 it takes each bucket's size
/// limit; 2.14 dropped that argument and added three (skipping the all-reduce
/// of unused parameters, the Python reducer, per-bucket caps for rebuilding).
/// Apart from torch_compat/distributed.hpp because reducer.hpp is heavy and
/// only DDP needs it.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppe/detail/dependent.hpp"
#include "ppe/detail/torch_compat.hpp"

namespace ppe::detail::compat {

/// What Python's DDP hands its reducer, in the order it hands it.
struct ReducerArgs {
  std::vector<at::Tensor> params;
  std::vector<std::vector<std::size_t>> buckets;  ///< parameter indices, in all-reduce order
  std::vector<std::size_t> bucket_limits;         ///< each bucket's size limit, in bytes
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::vector<bool> sparse;
  std::int64_t bucket_bytes_cap = 0;
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
  std::unordered_map<std::size_t, std::string> param_names;
  std::int64_t first_bucket_bytes_cap = 0;
};

/// A reducer from `args`; the arguments that a LibTorch adds keep Python
/// DDP's defaults (2.14: no skipping of unused parameters' all-reduce, the
/// C++ reducer, the reducer's own caps when it rebuilds buckets).
template <class Args = ReducerArgs>
std::unique_ptr<c10d::Reducer> make_reducer(Args args) {
  using Reducer = dependent_t<c10d::Reducer, Args>;
  if constexpr (std::is_constructible_v<Reducer, std::vector<at::Tensor>, std::vector<std::vector<std::size_t>>,
                                        std::vector<std::size_t>, c10::intrusive_ptr<c10d::ProcessGroup>,
                                        std::vector<bool>, std::int64_t, bool, bool,
                                        std::unordered_map<std::size_t, std::string>, std::int64_t>)
    return std::make_unique<Reducer>(std::move(args.params), std::move(args.buckets), std::move(args.bucket_limits),
                                     std::move(args.group), std::move(args.sparse), args.bucket_bytes_cap,
                                     args.find_unused_parameters, args.gradient_as_bucket_view,
                                     std::move(args.param_names), args.first_bucket_bytes_cap);
  else
    return std::make_unique<Reducer>(std::move(args.params), std::move(args.buckets), std::move(args.group),
                                     std::move(args.sparse), args.bucket_bytes_cap, args.find_unused_parameters,
                                     args.gradient_as_bucket_view, std::move(args.param_names),
                                     args.first_bucket_bytes_cap, /*skip_all_reduce_unused_params=*/false,
                                     /*use_python_reducer=*/false, /*bucket_bytes_cap_list=*/std::vector<std::int64_t>{});
}

}  // namespace ppe::detail::compat
