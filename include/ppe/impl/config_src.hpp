#pragma once
/// \file
/// The definitions of the configuration feature's out-of-line functions
/// (ppe/config/*, LogReport's yaml format), for separate compilation: as
/// ppe/impl/src.hpp, but apart from it, so that a program without this
/// feature needs no yaml-cpp (Meson's `ppe-config-separate`).

#if !defined(PPE_SEPARATE_COMPILATION)
#error "ppe/impl/config_src.hpp is for separate compilation: define PPE_SEPARATE_COMPILATION in every TU"
#endif

#include "ppe/config/impl/config.ipp"
#include "ppe/config/impl/standard_types.ipp"
#include "ppe/config/impl/types.ipp"
#include "ppe/training/extensions/impl/log_format_yaml.ipp"
