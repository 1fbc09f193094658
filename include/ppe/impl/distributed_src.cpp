// ppe's distributed functions, compiled once (separate compilation, see
// ppe/detail/config.hpp and ppe/impl/distributed_src.hpp); Meson's
// `ppe-distributed-separate` dependency builds and links it.
#include "ppe/impl/distributed_src.hpp"
