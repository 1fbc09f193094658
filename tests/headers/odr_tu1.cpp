// Two-TU ODR test, part 1 (with main). Both TUs include every header, header-only; a non-inline
// function or variable defined in any header makes the link fail with a duplicate symbol, and
// both TUs must see the same values of the inline entities they use.
#include <ppe/ppe.hpp>

#include "odr_all.hpp"  // every other header too (generated)

#include <cstdint>

std::int64_t odr_tu1_value() {
  return static_cast<std::int64_t>(ppe::State::dict({{"a", 1}}).size()) * 1000 +
         static_cast<std::int64_t>(ppe::training::kPriorityReader);
}

std::int64_t odr_tu2_value();  // odr_tu2.cpp

int main() { return odr_tu1_value() == odr_tu2_value() ? 0 : 1; }
