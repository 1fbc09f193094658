#pragma once
/// \file
/// The TensorBoard feature, umbrella of `ppe-tensorboard`: TensorBoardWriter
/// (PPE's `ppe.writing.TensorBoardWriter`), which writes TensorBoard event
/// files that LogReport (or any extension) writes through (Meson
/// `ppe-tensorboard`, pkg-config `ppe-tensorboard`, CMake
/// `ppe::tensorboard`). See docs/tensorboard-writer.md.
/// Feature: ppe::tensorboard (Meson and pkg-config: ppe-tensorboard).

#include "ppe/writing/tensorboard_writer.hpp"
