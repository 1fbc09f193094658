// Definitions of config/types.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/config_src.hpp with PPE_SEPARATE_COMPILATION.
// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "ppe/config/types.hpp"

namespace ppe::config {

PPE_DECL void Types::check_arity(const std::string& name, std::size_t given, std::size_t arity) {
  if (given != arity)
    throw std::invalid_argument("ppe::config::Types::add(\"" + name + "\"): " + std::to_string(given) +
                                " parameter names for a function of " + std::to_string(arity) +
                                " parameters (name each parameter, in order)");
}

PPE_DECL Types& Types::insert(Factory f) {
  if (f.name.empty()) throw std::invalid_argument("ppe::config::Types: a factory needs a non-empty name");
  if (!f.call) throw std::invalid_argument("ppe::config::Types: factory '" + f.name + "' has no function");
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const ParamInfo& p = f.params[i];
    if (p.name.empty() || p.name == "type")
      throw std::invalid_argument("ppe::config::Types: factory '" + f.name + "': parameter " + std::to_string(i) +
                                  " needs a name other than '' and 'type'");
    for (std::size_t j = 0; j < i; ++j)
      if (f.params[j].name == p.name)
        throw std::invalid_argument("ppe::config::Types: factory '" + f.name + "' names two parameters '" +
                                    p.name + "'");
  }
  std::string name = f.name;
  factories_.insert_or_assign(std::move(name), std::move(f));
  return *this;
}

PPE_DECL Types& Types::customize_type(std::string_view name,
                                      const std::vector<std::pair<std::string, std::string>>& default_paths) {
  auto it = factories_.find(name);
  if (it == factories_.end())
    throw std::invalid_argument("ppe::config::Types::customize_type: no type '" + std::string(name) +
                                "' is registered");
  Factory& f = it->second;
  for (const auto& [param, path] : default_paths) {
    auto p = std::find_if(f.params.begin(), f.params.end(), [&](const ParamInfo& i) { return i.name == param; });
    if (p == f.params.end()) {
      std::string names;
      for (const auto& i : f.params) names += (names.empty() ? "" : ", ") + i.name;
      throw std::invalid_argument("ppe::config::Types::customize_type: type '" + std::string(name) +
                                  "' has no parameter '" + param + "' (parameters: " + names + ")");
    }
    if (path.empty())
      throw std::invalid_argument("ppe::config::Types::customize_type: an empty path for parameter '" + param +
                                  "' of '" + std::string(name) + "'");
    p->default_path = path;
    p->default_value.reset();
  }
  return *this;
}

PPE_DECL const Factory* Types::find(std::string_view name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : &it->second;
}

PPE_DECL std::vector<std::string> Types::names() const {
  std::vector<std::string> out;
  out.reserve(factories_.size());
  for (const auto& [name, f] : factories_) out.push_back(name);
  return out;
}

PPE_DECL Types& Types::merge(const Types& other) {
  for (const auto& [name, f] : other.factories_) factories_.insert_or_assign(name, f);
  attributes_.insert(attributes_.end(), other.attributes_.begin(), other.attributes_.end());
  return *this;
}

PPE_DECL bool Types::attribute_of(const Object& object, std::string_view name, Value& out) const {
  // Registered for the exact type first, then for a base class; the last
  // registration of a name wins.
  const std::type_index type(object.type());
  for (auto it = attributes_.rbegin(); it != attributes_.rend(); ++it)
    if (it->type == type && it->name == name && it->get(object, out)) return true;
  for (auto it = attributes_.rbegin(); it != attributes_.rend(); ++it)
    if (it->type != type && it->name == name && it->get(object, out)) return true;
  return object.hana_attribute(name, out);
}

PPE_DECL std::vector<std::string> Types::attribute_names(const Object& object) const {
  std::vector<std::string> names = object.hana_attribute_names();
  Value ignored;
  for (const auto& a : attributes_)
    if (std::find(names.begin(), names.end(), a.name) == names.end() && a.get(object, ignored))
      names.push_back(a.name);
  return names;
}

}  // namespace ppe::config
