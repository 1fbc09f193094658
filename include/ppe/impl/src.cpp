// ppe's out-of-line functions, compiled once (separate compilation, see
// ppe/detail/config.hpp): build this file with PPE_SEPARATE_COMPILATION
// defined, as every other translation unit of the program, and link it in.
// Meson's `ppe-separate` dependency does both.
#include "ppe/impl/src.hpp"
