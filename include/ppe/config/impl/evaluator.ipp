// The lazy evaluator (`ConfigState`): the state behind a `Config` (the tree as
// written, the registry, the cache, the trace) and the evaluation of a key.
// Internal (ppe::config::detail); included by impl/config.ipp.
//
// Evaluation order. Reading a file evaluates nothing: parse/load only build the
// tree as written and the line of each path. `config[key]` (and `get<T>`)
// clears the trace and evaluates the key; `eval` on a key, named by its
// `dump_key` (`/a/b`, `/a/b.x`, `!/a/b`), does in this order:
//  1. A key in the cache returns the cached value: every reference to a path
//     shares one result, and a factory runs at most once per cache lifetime.
//  2. A key already on the trace (being evaluated further up this chain) is a
//     cycle: `a: '@/b'`, `b: '@/a'` fails as "circular dependency /a -> /b ->
//     /a". A trace longer than ConfigOptions::max_depth fails too. Otherwise
//     the key is pushed on the trace (popped when eval returns or throws).
//  3. `!/path` is the node as written: nothing runs, nothing is cached.
//  4. `/path.a.b` evaluates `/path.a` (so `/path` first), then takes `b` of
//     it: a dict's key, a list's index or an object's attribute (Types).
//  5. `/path` walks to the node as written and evaluates it by its kind:
//     - a dict with `type:` calls that factory (`call`): unknown keys are
//       refused before anything runs; the given parameters are evaluated as
//       `/path/<key>` in the file's order; then the missing ones in the
//       factory's order: a default path (relative to `/path`) is evaluated, a
//       default value copied, an optional one left empty; then the factory
//       runs. A factory that takes any keys gets them all, evaluated in the
//       file's order, as one dict.
//     - any other dict: each `/path/<key>` in the file's order; a list: each
//       `/path/<i>` in index order.
//     - a str `@ref`: `ref` is parsed relative to the dict or list holding the
//       str (`..` goes up; it may end in attributes or start with `!`) and
//       evaluated by this same procedure, so references chain, share the
//       cache and take part in cycle detection.
//     - any other scalar is itself.
//  6. The result is cached under the key. A failure caches nothing.
// `set` (impl/overrides.ipp) replaces part of the tree as written and clears
// the whole cache, so the factories that depend on it run again.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ppe/config/config.hpp"
#include "ppe/config/impl/key.ipp"
#include "ppe/config/impl/yaml_reader.ipp"
#include "ppe/config/types.hpp"
#include "ppe/detail/error_message.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::config::detail {

/// What a `Config` holds, and the evaluation of its keys.
struct ConfigState {
  Value root;  ///< the tree as written (after any `set`)
  Types types;
  ConfigOptions options;
  Marks marks;
  std::unordered_map<std::string, Value> cache;  ///< by `dump_key`
  std::size_t cache_bytes = 0;                   ///< the cache's keys, against max_path_bytes
  std::vector<std::string> trace;                ///< the keys being evaluated, outermost first

  int line_of(const std::vector<std::string>& path, std::size_t n) const {
    auto it = marks.find(path_text(path, n));
    return it == marks.end() ? 0 : it->second;
  }
  std::string line_text(const std::vector<std::string>& path, std::size_t n) const {
    const int line = line_of(path, n);
    return line ? " (line " + std::to_string(line) + ")" : std::string();
  }

  /// A trace as PPE prints it, `/a -> /b -> !/c`.
  static std::string join(const std::vector<std::string>& t, std::size_t from = 0) {
    std::string s;
    const std::size_t n = t.size() - from;
    for (std::size_t i = from; i < t.size(); ++i) {
      // Long chains keep their ends.
      if (n > 12 && i == from + 5) {
        s += " -> ... (" + std::to_string(n - 10) + " more)";
        i = t.size() - 5;
      }
      s += (i == from ? "" : " -> ") + t[i];
    }
    return s;
  }
  /// Throws a ConfigError ending with the trace (plus `extra` keys).
  [[noreturn]] void fail(const std::string& what, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> t = trace;
    t.insert(t.end(), extra.begin(), extra.end());
    throw ConfigError("ppe::config: " + what + " (trace: " + join(t) + ")");
  }

  /// The node at `path` of the tree as written; errors as PPE's (the trace
  /// continues with the `!` keys down to the failing one).
  const Value& walk(const std::vector<std::string>& path) const {
    const Value* v = &root;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const Value* next = nullptr;
      if (v->is_dict()) {
        next = v->find(path[i]);
      } else if (v->is_list()) {
        if (auto idx = list_index(path[i], v->size())) next = &v->as_list()[*idx];
      }
      if (!next) {
        std::vector<std::string> extra;
        for (std::size_t n = path.size(); n > i; --n) extra.push_back("!" + path_text(path, n));
        std::string why;
        if (v->is_dict())
          why = "no key '" + path[i] + "'";
        else if (v->is_list())
          why = is_integer_text(path[i]) ? "index " + path[i] + " out of range for " + std::to_string(v->size()) +
                                               " elements"
                                         : "'" + path[i] + "' is not a list index";
        else
          why = "a " + std::string(Value::kind_name(v->kind())) + " has no elements";
        fail(path[i] + " not in !" + path_text(path, i) + ": " + why + line_text(path, i), extra);
      }
      v = next;
    }
    return *v;
  }

  /// Pops the trace when an evaluation returns or throws.
  struct Push {
    std::vector<std::string>& t;
    ~Push() { t.pop_back(); }
  };

  /// Evaluates `key` (the order: this file's top comment). `written`: the
  /// node at `key.path` when the caller holds it (its parent's entry), so it
  /// is not looked up again from the root: a lookup scans each dict on the
  /// way, and repeating it per entry made wide dicts quadratic.
  Value eval(const Key& key, const Value* written = nullptr) {
    std::string id = dump_key(key);
    if (auto it = cache.find(id); it != cache.end()) return it->second;
    if (auto at = std::find(trace.begin(), trace.end(), id); at != trace.end()) {
      std::vector<std::string> cycle(at, trace.end());
      cycle.push_back(id);
      fail("circular dependency " + join(cycle), {id});
    }
    if (trace.size() >= options.max_depth())
      fail("evaluation nested deeper than " + std::to_string(options.max_depth()) + " levels at " + id +
               " (ConfigOptions::max_depth is the limit)",
           {id});
    trace.push_back(id);
    Push pop{trace};
    if (!key.attrs) return written ? *written : walk(key.path);
    Value out;
    if (!key.attrs->empty()) {
      Key parent = key;
      parent.attrs->pop_back();
      out = attribute(eval(parent), parent, key.attrs->back());
    } else {
      const Value raw = written ? *written : walk(key.path);
      if (raw.is_dict()) {
        if (const Value* type = raw.find("type"))
          out = call(key.path, raw, *type);
        else
          out = eval_dict(key.path, raw);
      } else if (raw.is_list()) {
        Value::List l;
        l.reserve(raw.size());
        Key child{key.path, std::vector<std::string>{}};
        child.path.emplace_back();
        for (std::size_t i = 0; i < raw.size(); ++i) {
          child.path.back() = std::to_string(i);
          l.push_back(eval(child, &raw.as_list()[i]));
        }
        out = Value(std::move(l));
      } else if (raw.is_string() && !raw.as_string().empty() && raw.as_string()[0] == '@') {
        std::vector<std::string> parent(key.path.begin(), key.path.end() - (key.path.empty() ? 0 : 1));
        Key ref;
        try {
          ref = parse_key(std::string_view(raw.as_string()).substr(1), parent);
        } catch (const ConfigError& e) {
          fail(std::string(e.what()).substr(13) + " at " + id + line_text(key.path, key.path.size()));
        }
        out = eval(ref);
      } else {
        out = raw;
      }
    }
    cache_bytes += id.size();
    if (cache_bytes > options.max_path_bytes())
      fail("the evaluated keys add up to more than " + std::to_string(options.max_path_bytes()) +
           " bytes (ConfigOptions::max_path_bytes is the limit)");
    cache.emplace(std::move(id), out);
    return out;
  }

  /// A dict without `type:`: its entries evaluated in the file's order.
  Value eval_dict(const std::vector<std::string>& path, const Value& raw) {
    Value::Dict d;
    d.reserve(raw.size());
    Key child{path, std::vector<std::string>{}};
    child.path.emplace_back();
    for (const auto& [k, v] : raw.as_dict()) {
      child.path.back() = k;
      d.emplace_back(k, eval(child, &v));
    }
    return Value(std::move(d));
  }

  /// `name` of an evaluated value: a dict's key, a list's index or an
  /// object's attribute (Types::attribute_of); else an error saying what
  /// the value has.
  Value attribute(const Value& obj, const Key& parent, const std::string& name) {
    Value out;
    if (obj.is_dict()) {
      if (const Value* v = obj.find(name)) return *v;
    } else if (obj.is_list()) {
      if (auto i = list_index(name, obj.size())) return obj.as_list()[*i];
    } else if (obj.is_object()) {
      if (types.attribute_of(obj.as_object(), name, out)) return out;
      std::string names;
      for (const auto& n : types.attribute_names(obj.as_object())) names += (names.empty() ? "" : ", ") + n;
      fail(name + " not in " + dump_key(parent) + ": a " + std::string(obj.as_object().type_name()) +
           " object has no attribute '" + name + "' (its attributes: " + (names.empty() ? "none" : names) +
           "; register them with Types::attribute, or make the type a Boost.Hana struct)");
    }
    fail(name + " not in " + dump_key(parent) + " (" + obj.repr() + ")");
  }

  /// "factory 'T' at /path (line n)", for messages.
  std::string factory_at(const std::string& type, const std::vector<std::string>& path) const {
    return "factory '" + type + "' at " + path_text(path, path.size()) + line_text(path, path.size());
  }

  /// The factory call of a `type:` dict at `path` (step 5 of the order).
  Value call(const std::vector<std::string>& path, const Value& raw, const Value& type_value) {
    const std::string where = path_text(path, path.size()) + line_text(path, path.size());
    if (!type_value.is_string())
      fail("'type' at " + where + " must be a str naming a registered type, got " + type_value.describe());
    const std::string& type = type_value.as_string();
    const Factory* f = types.find(type);
    if (!f) {
      fail(type + " not in types: unknown type '" + type + "' at " + where +
           "; registered types: " + ppe::detail::python_str_list(types.names()) +
           " (nothing a configuration names runs unless the program registered it)");
    }
    Key child{path, std::vector<std::string>{}};
    child.path.emplace_back();
    if (f->any_keys) {
      Value::Dict d;
      for (const auto& [k, v] : raw.as_dict()) {
        if (k == "type") continue;
        child.path.back() = k;
        d.emplace_back(k, eval(child, &v));
      }
      const Value kwargs(std::move(d));
      return invoke(*f, path, {&kwargs});
    }
    auto param_list = [&] {
      std::string s;
      for (const auto& p : f->params) {
        s += (s.empty() ? "" : ", ") + p.name + " (" + p.expected;
        if (p.default_value) s += ", default " + p.default_value->repr();
        if (p.default_path) s += ", default @" + *p.default_path;
        if (p.optional && !p.default_value && !p.default_path) s += ", optional";
        s += ")";
      }
      return s.empty() ? std::string("none") : s;
    };
    auto index_of = [&](const std::string& name) -> std::size_t {
      for (std::size_t i = 0; i < f->params.size(); ++i)
        if (f->params[i].name == name) return i;
      return f->params.size();
    };
    // Unknown keys first: no factory below runs for a dict that cannot be called.
    for (const auto& [k, v] : raw.as_dict()) {
      if (k == "type" || index_of(k) < f->params.size()) continue;
      std::vector<std::string> at = path;
      at.push_back(k);
      fail(factory_at(type, path) + " has no parameter '" + k + "'" + line_text(at, at.size()) +
           "; its parameters: " + param_list());
    }
    std::vector<std::optional<Value>> args(f->params.size());
    for (const auto& [k, v] : raw.as_dict()) {
      if (k == "type") continue;
      child.path.back() = k;
      args[index_of(k)] = eval(child, &v);
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const ParamInfo& p = f->params[i];
      if (args[i]) continue;
      if (p.default_path) {
        Key ref;
        try {
          ref = parse_key(*p.default_path, path);
        } catch (const ConfigError& e) {
          fail(std::string(e.what()).substr(13) + ": the default path of parameter '" + p.name + "' of " +
               factory_at(type, path));
        }
        args[i] = eval(ref);
      } else if (p.default_value) {
        args[i] = *p.default_value;
      } else if (!p.optional) {
        fail(factory_at(type, path) + ": missing parameter '" + p.name + "' (" + p.expected +
             "); its parameters: " + param_list());
      }
    }
    std::vector<const Value*> ptrs(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) ptrs[i] = args[i] ? &*args[i] : nullptr;
    return invoke(*f, path, ptrs);
  }

  /// Runs the factory. A conversion error names the parameter and its line;
  /// any other exception is wrapped in a ConfigError naming the factory.
  Value invoke(const Factory& f, const std::vector<std::string>& path, const std::vector<const Value*>& args) {
    try {
      return f.call(args);
    } catch (const ArgumentError& e) {
      const ParamInfo& p = f.params.at(e.index());
      std::vector<std::string> at = path;
      at.push_back(p.name);
      fail(factory_at(f.name, path) + ": parameter '" + p.name + "'" + line_text(at, at.size()) + ": " + e.what());
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      // The factory's own exception stays reachable (std::rethrow_if_nested).
      std::throw_with_nested(ConfigError("ppe::config: " + factory_at(f.name, path) + " failed: " +
                                         ppe::detail::error_message(e) +
                                         " (trace: " + join(trace) + ")"));
    }
  }

  /// PPE's `update_via_args` on the tree as written (impl/overrides.ipp).
  void set(std::string_view path_text_in, std::string_view text);
  /// PPE converts an override to the type of the value it replaces.
  static Value typed_like(const Value& old, const Value& v, std::string_view text, const std::string& where);
};

}  // namespace ppe::config::detail
