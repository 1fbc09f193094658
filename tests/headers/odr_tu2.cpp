// Two-TU ODR test, part 2: the same computation as odr_tu1.cpp in another TU.
#include <ppe/ppe.hpp>

#include "odr_all.hpp"  // every other header too (generated)

#include <cstdint>

std::int64_t odr_tu2_value() {
  return static_cast<std::int64_t>(ppe::State::dict({{"a", 1}}).size()) * 1000 +
         static_cast<std::int64_t>(ppe::training::kPriorityReader);
}
