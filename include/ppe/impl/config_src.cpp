// The configuration feature's functions (ppe/config/*, LogReport's yaml
// format), compiled once (separate compilation: ppe/impl/config_src.hpp);
// Meson's `ppe-config-separate` dependency builds and links it.
#include "ppe/impl/config_src.hpp"
