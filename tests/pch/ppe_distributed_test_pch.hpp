// Precompiled header of the distributed test binary: the test header and
// every distributed header (c10d's process group and reducer headers cost
// each of its translation units about as much as LibTorch's own).
#include "../support/ppe_test.hpp"

#include <ppe/distributed.hpp>
