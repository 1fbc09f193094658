#pragma once
/// \file
/// `ppe::reporting::Reporter`, `report()`, `report_scope()`: where reported
/// values go (PPE's `ppe.reporting.Reporter`).

#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/value.hpp"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ppe::reporting {

namespace detail {
/// The address that identifies the object `p` points to. A LibTorch module is
/// identified by its `torch::nn::Module` subobject, the address under which
/// the manager registers it (`named_modules()` yields `Module` pointers): for a
/// module class whose `Module` base is not its first base, `this` points
/// elsewhere.
template <class P>
const void* object_address(const P* p) noexcept {
  if constexpr (std::is_class_v<P> && requires { sizeof(P); }) {
    if constexpr (std::is_base_of_v<torch::nn::Module, P>)
      return static_cast<const void*>(static_cast<const torch::nn::Module*>(p));
    else
      return static_cast<const void*>(p);
  } else {
    return static_cast<const void*>(p);
  }
}

/// The identity of an observer: raw pointers, shared_ptrs and LibTorch module
/// holders (anything with `.ptr()`) all reduce to the object's address.
template <class T>
const void* observer_key(const T& obs) noexcept {
  if constexpr (std::is_pointer_v<T>)
    return object_address(obs);
  else if constexpr (requires { obs.ptr().get(); })
    return object_address(obs.ptr().get());
  else if constexpr (requires { obs.get(); })
    return object_address(obs.get());
  else
    return object_address(&obs);
}
}  // namespace detail

/// Collects reported values into an observation.
///
/// A reporter becomes *current* for the calling thread inside `scope()`;
/// `ppe::reporting::report()` writes into the current reporter. Scopes nest.
class Reporter {
 public:
  using Items = std::initializer_list<std::pair<std::string_view, Value>>;

  Reporter() = default;
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  /// The observation values are written to.
  Observation& observation() noexcept { return *observation_; }
  const Observation& observation() const noexcept { return *observation_; }

  /// Registers `observer` under `name`: its reports get keys `name/key`.
  template <class T>
  void add_observer(std::string name, const T& observer) {
    const void* key = detail::observer_key(observer);
    for (auto& [k, n] : observers_)
      if (k == key) {
        n = std::move(name);
        return;
      }
    observers_.emplace_back(key, std::move(name));
  }

  /// Registers every `(name, object)` of `named` as `prefix/name` (the root,
  /// whose name is empty, as `prefix`). Accepts LibTorch's `named_modules()`.
  template <class Range>
  void add_observers(std::string_view prefix, const Range& named) {
    for (const auto& item : named) {
      if constexpr (requires { item.key(); item.value(); })
        add_observer(join(prefix, item.key()), item.value());
      else
        add_observer(join(prefix, item.first), item.second);
    }
  }

  /// The name an observer (given as to `add_observer`) was registered under,
  /// or nullptr.
  template <class T>
  const std::string* observer_name(const T& observer) const noexcept {
    return name_of(detail::observer_key(observer));
  }

  /// Stores values in the observation (tensors detached from autograd).
  void report(Items values) {
    for (const auto& [k, v] : values) report(k, v);
  }
  void report(std::string_view key, const Value& value) { observation_->set(key, detached(value)); }
  /// Stores values under `observer_name/key`.
  template <class T>
  void report(Items values, const T& observer) {
    const std::string& prefix = checked_name(detail::observer_key(observer));
    for (const auto& [k, v] : values) report_prefixed(prefix, k, v);
  }
  /// Stores every entry of an observation (e.g. a summary's means).
  void report(const Observation& values) {
    for (auto [k, v] : values) report(k, v);
  }

  /// RAII: makes `reporter` current and points it at `observation` until destroyed.
  class Scope {
   public:
    Scope(Reporter& reporter, Observation& observation) noexcept
        : r_(reporter), prev_current_(current_ref()), prev_obs_(reporter.observation_) {
      r_.observation_ = &observation;
      current_ref() = &r_;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
      r_.observation_ = prev_obs_;
      current_ref() = prev_current_;
    }

   private:
    Reporter& r_;
    Reporter* prev_current_;
    Observation* prev_obs_;
  };

  /// RAII: makes this reporter current (with its own observation).
  [[nodiscard]] Scope scope() noexcept { return Scope(*this, *observation_); }
  /// RAII: makes this reporter current, writing into `observation`.
  [[nodiscard]] Scope scope(Observation& observation) noexcept { return Scope(*this, observation); }

  /// The current reporter of this thread, or nullptr.
  static Reporter* current() noexcept { return current_ref(); }

 private:
  friend class ReportScope;

  static Reporter*& current_ref() noexcept {
    thread_local Reporter* current = nullptr;
    return current;
  }
  static std::string join(std::string_view prefix, std::string_view name) {
    std::string out(prefix);
    if (!name.empty()) {
      if (!out.empty()) out += '/';
      out += name;
    }
    return out;
  }
  const std::string* name_of(const void* key) const noexcept {
    for (const auto& [k, n] : observers_)
      if (k == key) return &n;
    return nullptr;
  }
  const std::string& checked_name(const void* key) const {
    if (const std::string* n = name_of(key)) return *n;
    throw std::invalid_argument(
        "ppe::reporting::report: the given observer is not registered to the reporter "
        "(register it with Reporter::add_observer, or models passed to the manager are registered as 'main', 'main/<child>')");
  }
  void report_prefixed(const std::string& prefix, std::string_view key, const Value& v) {
    // Reused buffer: no allocation once it has grown to the longest key.
    thread_local std::string buffer;
    buffer.assign(prefix);
    buffer += '/';
    buffer += key;
    observation_->set(buffer, detached(v));
  }

  Observation own_;
  Observation* observation_ = &own_;
  std::vector<std::pair<const void*, std::string>> observers_;
};

/// Reports into the current reporter; does nothing when there is none (as PPE).
inline void report(Reporter::Items values) {
  if (Reporter* r = Reporter::current()) r->report(values);
}
/// Reports `observer_name/key` entries into the current reporter.
template <class T>
void report(Reporter::Items values, const T& observer) {
  if (Reporter* r = Reporter::current()) r->report(values, observer);
}
/// Reports every entry of an observation into the current reporter.
inline void report(const Observation& values) {
  if (Reporter* r = Reporter::current()) r->report(values);
}

/// RAII: redirects the current reporter's writes into `observation` (PPE's
/// `report_scope`); a no-op when no reporter is current.
class ReportScope {
 public:
  explicit ReportScope(Observation& observation) noexcept : r_(Reporter::current()) {
    if (r_) {
      prev_ = r_->observation_;
      r_->observation_ = &observation;
    }
  }
  ReportScope(const ReportScope&) = delete;
  ReportScope& operator=(const ReportScope&) = delete;
  ~ReportScope() {
    if (r_) r_->observation_ = prev_;
  }

 private:
  Reporter* r_;
  Observation* prev_ = nullptr;
};

/// `auto s = report_scope(obs);` — see ReportScope.
[[nodiscard]] inline ReportScope report_scope(Observation& observation) noexcept { return ReportScope(observation); }

}  // namespace ppe::reporting
