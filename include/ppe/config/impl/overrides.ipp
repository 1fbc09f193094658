// Overrides of the tree as written (`Config::set`, `--set`, PPE's
// `update_via_args`): the new value is typed like the one it replaces, the
// containers above it are rebuilt (values are immutable), and the cache and
// the lines of the replaced subtree are forgotten. Internal
// (ppe::config::detail); included by impl/config.ipp.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "ppe/config/config.hpp"
#include "ppe/config/impl/evaluator.ipp"
#include "ppe/config/impl/key.ipp"
#include "ppe/config/impl/yaml_reader.ipp"

namespace ppe::config::detail {

inline void ConfigState::set(std::string_view path_text_in, std::string_view text) {
  Key k;
  try {
    k = parse_key(path_text_in, {});
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (in a --set)");
  }
  const std::string where(path_text_in);
  if (path_text_in.empty() || (path_text_in[0] != '/' && path_text_in.substr(0, 2) != "!/"))
    throw ConfigError("ppe::config: set '" + where + "': the path must be absolute (/a/b)");
  if (k.attrs && !k.attrs->empty())
    throw ConfigError("ppe::config: set '" + where + "': a path to set takes no attributes ('.')");
  Value v;
  if (!text.empty() && text[0] == '@') {
    v = Value(text);  // `@` cannot start a plain YAML scalar: a reference is taken as written
  } else {
    try {
      YAML::Node n = load_yaml(text, "the value of '" + where + "': ");
      v = read_yaml(n, options, nullptr);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) + " (set " + where + ")");
    }
  }
  // Walk down, keeping the chain of containers to rebuild.
  std::vector<Value> chain{root};
  for (std::size_t i = 0; i + 1 < k.path.size(); ++i) {
    const Value& c = chain.back();
    const Value* next = nullptr;
    if (c.is_dict()) next = c.find(k.path[i]);
    else if (c.is_list()) {
      if (auto idx = list_index(k.path[i], c.size())) next = &c.as_list()[*idx];
    }
    if (!next)
      throw ConfigError("ppe::config: set '" + where + "': " + k.path[i] + " not in !" +
                        path_text(k.path, i));
    chain.push_back(*next);
  }
  if (k.path.empty()) {
    root = v;
  } else {
    const Value& parent = chain.back();
    const std::string& last = k.path.back();
    const Value* old = nullptr;
    std::optional<std::size_t> idx;
    if (parent.is_dict()) {
      old = parent.find(last);
    } else if (parent.is_list()) {
      idx = list_index(last, parent.size());
      if (!idx)
        throw ConfigError("ppe::config: set '" + where + "': " + last + " not in !" +
                          path_text(k.path, k.path.size() - 1) + " (a list of " + std::to_string(parent.size()) +
                          " elements)");
      old = &parent.as_list()[*idx];
    } else {
      throw ConfigError("ppe::config: set '" + where + "': !" + path_text(k.path, k.path.size() - 1) +
                        " is " + parent.describe() + ", not a dict or a list");
    }
    if (old) v = typed_like(*old, v, text, where);
    // Rebuild the containers from the bottom up (values are immutable).
    Value replaced = v;
    for (std::size_t i = k.path.size(); i-- > 0;) {
      const Value& c = chain[i];
      if (c.is_dict()) {
        Value::Dict d = c.as_dict();
        bool found = false;
        for (auto& [key, e] : d)
          if (key == k.path[i]) {
            e = replaced;
            found = true;
          }
        if (!found) d.emplace_back(k.path[i], replaced);
        replaced = Value(std::move(d));
      } else {
        Value::List l = c.as_list();
        l[*list_index(k.path[i], l.size())] = replaced;
        replaced = Value(std::move(l));
      }
    }
    root = replaced;
  }
  // The lines of the replaced subtree are gone.
  const std::string prefix = path_text(k.path, k.path.size());
  for (auto it = marks.begin(); it != marks.end();) {
    const std::string& p = it->first;
    if (p == prefix || (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0 &&
                        (prefix == "/" || p[prefix.size()] == '/')))
      it = marks.erase(it);
    else
      ++it;
  }
  cache.clear();
  cache_bytes = 0;
}

inline Value ConfigState::typed_like(const Value& old, const Value& v, std::string_view text, const std::string& where) {
  auto bad = [&](const char* expected) -> ConfigError {
    return ConfigError("ppe::config: set '" + where + "': the file has " + old.describe() + " there, so the value must be " +
                       expected + "; got '" + std::string(text) + "'");
  };
  switch (old.kind()) {
    case Value::Kind::Bool:
      if (!v.is_bool()) throw bad("true or false");
      return v;
    case Value::Kind::Int:
      if (!v.is_int()) throw bad("an int");
      return v;
    case Value::Kind::Double:
      if (!v.is_number()) throw bad("a number");
      return Value(v.as_double());
    case Value::Kind::String:
      // A scalar stays the text given (PPE's str(v)); `@` references too.
      if (v.is_list() || v.is_dict()) return v;
      return Value(std::string(text));
    default: return v;
  }
}

}  // namespace ppe::config::detail
