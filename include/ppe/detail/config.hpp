#pragma once
/// \file
/// Header-only or separate compilation (Boost.Asio's model).
///
/// By default ppe is header-only: every function is defined in the headers
/// (`inline`). Defining `PPE_SEPARATE_COMPILATION` in every translation unit
/// of a program turns the functions that are not templates on the user's
/// types into declarations, so their definitions (and the heavy headers they
/// need: LibTorch's pickler, zlib, ...) are compiled once, in the one
/// translation unit that compiles `ppe/impl/src.cpp` (or includes
/// `<ppe/impl/src.hpp>`), or in the `ppe-separate` library Meson provides.
/// See docs/build-cost.md.

/// `inline` when header-only; nothing with separate compilation (the
/// definitions in `impl/*.ipp` are then compiled once, by `impl/src.hpp`).
#if defined(PPE_SEPARATE_COMPILATION)
#define PPE_DECL
#else
#define PPE_DECL inline
#endif
