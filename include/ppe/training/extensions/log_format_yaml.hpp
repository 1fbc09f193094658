#pragma once
/// \file
/// LogReport's yaml format (PPE's `yaml.dump` of the log), the one part of
/// LogReport that needs yaml-cpp. Including this header in one translation
/// unit of a program installs it (LogReport and ProfileReport then accept
/// `format("yaml")` and `.yaml` file names); the core leaves it out so that
/// programs without yaml logs do not link yaml-cpp. It belongs to the
/// `ppe-config` feature (Meson `ppe-config`, pkg-config `ppe-config`, CMake
/// `ppe::config`), which links yaml-cpp; `ppe/config.hpp` includes it.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).

#include <string>

#include "ppe/detail/config.hpp"
#include "ppe/training/extensions/log_format.hpp"

namespace ppe::training::extensions {

/// One entry as PyYAML's `yaml.dump([entry])` writes it: a block sequence of
/// one mapping, keys sorted by code point and quoted as PyYAML quotes them,
/// non-ASCII text escaped, floats as Python's `repr` (`.nan`, `.inf`).
PPE_DECL std::string yaml_log_entry(const LogEntry& e);

namespace detail {
/// Installs `yaml_log_entry` before `main` in every program that includes this header.
inline const bool yaml_log_format_installed = (yaml_log_entry_formatter() = &yaml_log_entry, true);
}  // namespace detail

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/log_format_yaml.ipp"
#endif
