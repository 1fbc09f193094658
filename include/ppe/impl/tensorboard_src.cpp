// The TensorBoard feature's functions (TensorBoardWriter), compiled once
// (separate compilation: ppe/impl/tensorboard_src.hpp); Meson's
// `ppe-tensorboard-separate` dependency builds and links it.
#include "ppe/impl/tensorboard_src.hpp"
