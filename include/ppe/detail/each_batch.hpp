#pragma once
/// \file
/// `for_each_batch`: the loop of both evaluators, which must tell each step
/// whether its batch is the last one (the `last_batch` argument of metrics).

#include <cstdint>
#include <iterator>
#include <optional>
#include <type_traits>
#include <utility>

namespace ppe::detail {

/// Calls `step(batch, is_last)` on each element of `[it, last)`, at most
/// `limit` of them (unset: all), and returns how many it visited. `is_last`
/// is true for the element the limit stops at or after which the range ends.
/// A forward iterator is looked one ahead. A single-pass iterator (a
/// LibTorch loader's) invalidates its element when advanced, so the element
/// is moved out first; nothing is pulled past the limit.
template <class It, class Sent, class F>
std::int64_t for_each_batch(It it, Sent last, std::optional<std::int64_t> limit, F&& step) {
  std::int64_t n = 0;
  while ((!limit || n < *limit) && !(it == last)) {
    const bool at_limit = limit && n + 1 == *limit;
    if (at_limit) {
      step(*it, true);
    } else if constexpr (std::forward_iterator<It>) {
      It current = it;
      ++it;
      step(*current, it == last);
    } else {
      std::remove_cvref_t<decltype(*it)> batch = std::move(*it);
      ++it;
      step(batch, it == last);
    }
    ++n;
    if (at_limit) break;
  }
  return n;
}

}  // namespace ppe::detail
