#pragma once
/// \file
/// The check of an explicit (num_replicas, rank) pair that the samplers and
/// index splits share.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <stdexcept>
#include <string>
#include <string_view>

namespace ppe::distributed::detail {

/// Throws `std::invalid_argument` prefixed with `where` when `num_replicas < 1`
/// or `rank` is outside [0, num_replicas - 1].
inline void check_replicas(std::string_view where, int num_replicas, int rank) {
  if (num_replicas < 1)
    throw std::invalid_argument(std::string(where) + ": num_replicas is " + std::to_string(num_replicas) +
                                ", expected at least 1");
  if (rank < 0 || rank >= num_replicas)
    throw std::invalid_argument(std::string(where) + ": rank is " + std::to_string(rank) +
                                ", expected a rank in the interval [0, " + std::to_string(num_replicas - 1) + "]");
}

}  // namespace ppe::distributed::detail
