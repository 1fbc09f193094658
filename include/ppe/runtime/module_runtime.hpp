#pragma once
/// \file
/// Which runtime a module uses (PPE's `_ppe_runtime` attribute that `ppe.to`
/// sets on a module and all its submodules): `set_module_runtime`,
/// `module_runtime`, and `named_runtime_modules`, which finds the top-most
/// modules that have a runtime.
///
/// LibTorch modules cannot carry extra attributes, so the record is a
/// process-wide table keyed by the module's identity: its `std::shared_ptr`
/// ownership. A module must therefore be owned by a `std::shared_ptr` (as
/// `torch::nn::ModuleHolder`s such as `torch::nn::Linear`, and every registered
/// submodule, are). An entry ends when its module is destroyed (a new module at
/// the same address is not mistaken for it); the table holds the runtime alive
/// until then. Nothing is added to the module, so its state_dict, its printing
/// and its serialization are unchanged (PPE needs a `__getstate__` patch for that).

#include <torch/nn/module.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppe/runtime/base_runtime.hpp"

namespace ppe::runtime {

namespace detail {

struct ModuleRuntimeTable {
  struct Entry {
    std::weak_ptr<torch::nn::Module> owner;
    std::shared_ptr<BaseRuntime> runtime;
  };
  std::mutex mutex;
  std::unordered_map<const torch::nn::Module*, Entry> entries;

  static ModuleRuntimeTable& instance() {
    static ModuleRuntimeTable table;
    return table;
  }
  // Same object: same address and same ownership (control block).
  static bool same(const std::weak_ptr<torch::nn::Module>& a, const std::weak_ptr<const torch::nn::Module>& b) {
    return !a.owner_before(b) && !b.owner_before(a);
  }
};

inline void require_shared(const torch::nn::Module& module, const char* what) {
  if (module.weak_from_this().expired())
    throw std::invalid_argument(std::string(what) + ": the module '" + module.name() +
                                "' is not owned by a std::shared_ptr; create it with std::make_shared or as a "
                                "torch::nn::ModuleHolder (e.g. torch::nn::Linear), which is how its runtime is recorded");
}

}  // namespace detail

/// Records `runtime` as the runtime of `module` (not of its submodules; `ppe::to`
/// records all of them). A null runtime removes the record.
inline void set_module_runtime(torch::nn::Module& module, std::shared_ptr<BaseRuntime> runtime) {
  detail::require_shared(module, "ppe::runtime::set_module_runtime");
  auto& table = detail::ModuleRuntimeTable::instance();
  std::lock_guard lock(table.mutex);
  // Drop the entries of destroyed modules while we are here.
  for (auto it = table.entries.begin(); it != table.entries.end();)
    it = it->second.owner.expired() ? table.entries.erase(it) : std::next(it);
  if (!runtime) {
    table.entries.erase(&module);
    return;
  }
  table.entries[&module] = {module.weak_from_this(), std::move(runtime)};
}

/// The runtime recorded for `module` (PPE's `_module_runtime_tag`), or null.
inline std::shared_ptr<BaseRuntime> module_runtime(const torch::nn::Module& module) {
  auto& table = detail::ModuleRuntimeTable::instance();
  std::lock_guard lock(table.mutex);
  const auto it = table.entries.find(&module);
  if (it == table.entries.end()) return nullptr;
  if (it->second.owner.expired() || !detail::ModuleRuntimeTable::same(it->second.owner, module.weak_from_this())) {
    table.entries.erase(it);  // a destroyed module's record
    return nullptr;
  }
  return it->second.runtime;
}

namespace detail {
inline void collect_runtime_modules(torch::nn::Module& module, const std::string& name, bool first_level,
                                    bool recursive,
                                    std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>& out) {
  if (module_runtime(module)) {
    out.emplace_back(name, module.shared_from_this());  // recorded modules are shared-owned
    return;  // a runtime nested below a recorded module is ignored, as in PPE
  }
  if (first_level || recursive)
    for (const auto& child : module.named_children())
      collect_runtime_modules(*child.value(), child.key(), false, recursive, out);
}
}  // namespace detail

/// PPE's `named_runtime_modules(module, module_name, recursive)`: `module`
/// itself when it has a runtime (named `module_name`), else, depth first, the
/// top-most descendants with a runtime, each named by its attribute name in
/// its parent (not the dotted path, as in PPE). With `recursive = false` only
/// the direct children are looked at.
inline std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> named_runtime_modules(
    torch::nn::Module& module, const std::string& module_name = "", bool recursive = true) {
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> out;
  detail::collect_runtime_modules(module, module_name, true, recursive, out);
  return out;
}

}  // namespace ppe::runtime
