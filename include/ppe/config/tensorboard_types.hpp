#pragma once
/// \file
/// The config registration of TensorBoardWriter (`{type: TensorBoardWriter}`),
/// apart from `standard_types()` because it is the `ppe-tensorboard` feature:
/// a program that has both adds it with `add_tensorboard_types(types)`.
/// Features: ppe::config, ppe::tensorboard (Meson and pkg-config: ppe-config, ppe-tensorboard).

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ppe/config/standard_types.hpp"
#include "ppe/writing/tensorboard_writer.hpp"

namespace ppe::config {

/// Adds `TensorBoardWriter` (parameters: docs/config.md) to `types`.
inline Types& add_tensorboard_types(Types& types) {
  types.add("TensorBoardWriter", {"out_dir", arg("filename_suffix", std::string()), arg("flush_secs", 0.0)},
            [](std::optional<std::string> out_dir, std::string suffix, double flush_secs) {
              writing::TensorBoardWriterOptions o;
              if (out_dir) o.out_dir(*out_dir);
              o.filename_suffix(std::move(suffix)).flush_secs(flush_secs);
              return std::make_shared<writing::TensorBoardWriter>(std::move(o));
            });
  return types;
}

}  // namespace ppe::config
