// ppe's distributed functions, compiled once (separate compilation, see
// ppe/detail/config.hpp and ppe/distributed/impl/src.hpp); Meson's
// `ppe-distributed` dependency builds and links it.
#include "ppe/distributed/impl/src.hpp"
