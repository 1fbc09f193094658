#pragma once
/// \file
/// The definitions of the TensorBoard feature's out-of-line functions
/// (TensorBoardWriter), for separate compilation: as ppe/impl/src.hpp, but
/// apart from it, so that a program without TensorBoard event files compiles
/// and links none of it (Meson's `ppe-tensorboard-separate`).

#if !defined(PPE_SEPARATE_COMPILATION)
#error "ppe/impl/tensorboard_src.hpp is for separate compilation: define PPE_SEPARATE_COMPILATION in every TU"
#endif

#include "ppe/writing/impl/tensorboard_writer.ipp"
