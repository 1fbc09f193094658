// Definitions of config/config.hpp's out-of-line functions: included by
// config/types.hpp when header-only, compiled once by impl/config_src.hpp with
// PPE_SEPARATE_COMPILATION. This file holds `Config`'s members and
// `apply_set_args`, and includes the parts they are built on, in dependency
// order: value.ipp (the Value tree), key.ipp (keys), yaml_reader.ipp (YAML to
// a Value tree), evaluator.ipp (the lazy evaluator; its comment says the
// evaluation order) and overrides.ipp (`set`).
/// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "ppe/config/config.hpp"
#include "ppe/config/impl/value.ipp"
#include "ppe/config/impl/key.ipp"
#include "ppe/config/impl/yaml_reader.ipp"
#include "ppe/config/impl/evaluator.ipp"
#include "ppe/config/impl/overrides.ipp"
#include "ppe/config/types.hpp"
#include "ppe/detail/read_file.hpp"

namespace ppe::config {

PPE_DECL Config::Config(std::unique_ptr<detail::ConfigState> s) : s_(std::move(s)) {}

PPE_DECL Config::Config(Value tree, ConfigOptions options) : Config(std::move(tree), Types(), std::move(options)) {}

PPE_DECL Config::Config(Value tree, const Types& types, ConfigOptions options)
    : s_(std::make_unique<detail::ConfigState>()) {
  s_->root = std::move(tree);
  s_->types = types;
  s_->options = std::move(options);
}

PPE_DECL Config Config::parse(std::string_view yaml, ConfigOptions options) {
  return parse(yaml, Types(), std::move(options));
}

PPE_DECL Config Config::parse(std::string_view yaml, const Types& types, ConfigOptions options) {
  return from_yaml(detail::load_yaml(yaml, ""), types, std::move(options));
}

PPE_DECL Config Config::load(const std::string& path, ConfigOptions options) {
  return load(path, Types(), std::move(options));
}

// Every error names the file: reading it, parsing it, and converting it.
PPE_DECL Config Config::load(const std::string& path, const Types& types, ConfigOptions options) {
  std::string text;
  try {
    text = ppe::detail::read_file(path);
  } catch (const std::system_error& e) {  // names no configuration: say what the file was for
    throw ConfigError("ppe::config: cannot read the configuration file '" + path + "': " + e.code().message());
  }
  const YAML::Node node = detail::load_yaml(text, path + ": ");  // its errors name the file
  try {
    return from_yaml(node, types, std::move(options));
  } catch (const ConfigError& e) {
    throw ConfigError("ppe::config: " + path + ": " + std::string(e.what()).substr(13));
  }
}

PPE_DECL Config Config::from_yaml(const YAML::Node& node, const Types& types, ConfigOptions options) {
  auto s = std::make_unique<detail::ConfigState>();
  s->types = types;
  s->options = std::move(options);
  try {
    s->root = detail::read_yaml(node, s->options, &s->marks);
  } catch (const YAML::Exception& e) {  // yaml-cpp's depth guard and bad conversions
    throw ConfigError("ppe::config: YAML error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return Config(std::move(s));
}

PPE_DECL Config::Config(Config&&) noexcept = default;
PPE_DECL Config& Config::operator=(Config&&) noexcept = default;
PPE_DECL Config::~Config() = default;

// Each read starts with an empty trace; keys are absolute (no current path).
PPE_DECL Value Config::operator[](std::string_view key) {
  if (key.empty() || (key[0] != '/' && key.substr(0, 2) != "!/"))
    throw ConfigError("ppe::config: the key '" + std::string(key) + "' must be absolute: /path or !/path");
  s_->trace.clear();
  return s_->eval(detail::parse_key(key, {}));
}

// The tree as written, so nothing is evaluated; a malformed path is absent.
PPE_DECL bool Config::contains(std::string_view path) const {
  detail::Key k;
  try {
    k = detail::parse_key(path, {});
  } catch (const ConfigError&) {
    return false;
  }
  const Value* v = &s_->root;
  for (const auto& p : k.path) {
    const Value* next = nullptr;
    if (v->is_dict()) next = v->find(p);
    else if (v->is_list()) {
      if (auto i = detail::list_index(p, v->size())) next = &v->as_list()[*i];
    }
    if (!next) return false;
    v = next;
  }
  return true;
}

PPE_DECL void Config::set(std::string_view path, std::string_view yaml) { s_->set(path, yaml); }

PPE_DECL void Config::set(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos)
    throw ConfigError("ppe::config: '" + std::string(assignment) + "' is not of the form /path=value");
  s_->set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

PPE_DECL void Config::update_via_args(const std::vector<std::pair<std::string, std::string>>& args) {
  for (const auto& [k, v] : args) s_->set(k, v);
}

PPE_DECL int Config::line_of(std::string_view path) const {
  try {
    const detail::Key k = detail::parse_key(path, {});
    return s_->line_of(k.path, k.path.size());
  } catch (const ConfigError&) {
    return 0;
  }
}

PPE_DECL const Types& Config::types() const noexcept { return s_->types; }

PPE_DECL void Config::throw_get_error(std::string_view key, const std::string& what) const {
  std::string line;
  try {
    const detail::Key k = detail::parse_key(key, {});
    line = s_->line_text(k.path, k.path.size());
  } catch (const ConfigError&) {
  }
  throw ConfigError("ppe::config: " + std::string(key) + line + ": " + what);
}

// `--set /p=v` and `--set=/p=v`, applied in order; the other arguments are
// returned for the program's own parser.
PPE_DECL std::vector<std::string> apply_set_args(Config& config, const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--set") {
      if (i + 1 >= args.size()) throw ConfigError("ppe::config: --set needs /path=value");
      config.set(args[++i]);
    } else if (a.rfind("--set=", 0) == 0) {
      config.set(std::string_view(a).substr(6));
    } else {
      rest.push_back(a);
    }
  }
  return rest;
}

}  // namespace ppe::config
