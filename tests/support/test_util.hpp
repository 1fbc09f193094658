#pragma once
// Helpers shared by the tests: managers in PPE's test protocol, a fake clock.

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/record_function.h>
#include <ppe/ppe.hpp>

namespace ppe_test {

/// PPE's `ExtensionsManager({}, [], max_epochs, iters_per_epoch=ipe)`.
inline ppe::training::ManagerOptions options(double max_epochs, std::int64_t ipe) {
  return ppe::training::ManagerOptions().max_epochs(max_epochs).iters_per_epoch(ipe).out_dir("result");
}

/// A manager with no models, no optimizers and the given extensions.
template <class... Es>
auto make_manager(double max_epochs, std::int64_t ipe, Es&&... exts) {
  return ppe::training::ExtensionsManager(options(max_epochs, ipe), ppe::training::Models{},
                                          ppe::training::Optimizers{}, std::forward<Es>(exts)...);
}

/// One iteration with an empty body.
template <class M>
void step(M& manager) {
  manager.run_iteration([] {});
}

/// PPE's resume protocol for trigger tables: one empty iteration per expected
/// value, then the trigger's answer; after `resume` steps the state moves into
/// a fresh trigger from `make()`, which must continue identically.
template <class Make>
void check_resumed_table(Make make, double max_epochs, std::int64_t ipe, const std::vector<bool>& expected,
                         std::size_t resume) {
  auto manager = make_manager(max_epochs, ipe);
  auto first = make();
  for (std::size_t i = 0; i < resume; ++i) {
    step(manager);
    CHECK(first(manager) == expected[i]);
  }
  const ppe::State state = first.state_dict();
  auto second = make();
  second.load_state_dict(state);
  for (std::size_t i = resume; i < expected.size(); ++i) {
    step(manager);
    CHECK(second(manager) == expected[i]);
  }
}

/// The message of the exception `f()` throws, or "(no exception)".
template <class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

/// Collects ppe::warn messages while alive (thread-safe: asynchronous writers
/// warn from their workers).
struct WarningCollector {
  std::mutex m;
  std::vector<std::string> messages;
  ppe::WarningHandler previous;
  WarningCollector()
      : previous(ppe::set_warning_handler([this](std::string_view msg) {
          std::lock_guard lock(m);
          messages.emplace_back(msg);
        })) {}
  WarningCollector(const WarningCollector&) = delete;
  WarningCollector& operator=(const WarningCollector&) = delete;
  ~WarningCollector() { ppe::set_warning_handler(std::move(previous)); }
  /// Every message, one per line.
  std::string all() {
    std::lock_guard lock(m);
    std::string out;
    for (const auto& s : messages) out += s + "\n";
    return out;
  }
  /// Whether some message contains `text`.
  bool any_contains(std::string_view text) {
    std::lock_guard lock(m);
    for (const auto& s : messages)
      if (s.find(text) != std::string::npos) return true;
    return false;
  }
};

/// A settable clock for deterministic elapsed times: `options(...).clock(clock.fn())`.
struct FakeClock {
  std::shared_ptr<double> now = std::make_shared<double>(0.0);
  std::function<double()> fn() const {
    auto p = now;
    return [p] { return *p; };
  }
  void set(double t) const { *now = t; }
  void advance(double dt) const { *now += dt; }
};

/// Counts, while alive, the host reads of tensor values on this thread
/// (`aten::_local_scalar_dense`: `item()`, `to_double()`...), through a
/// LibTorch op-call hook: checks that an extension syncs once, or never.
class HostReadCounter {
 public:
  HostReadCounter() {
    count_ref() = 0;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
          if (std::string_view(fn.name()) == "aten::_local_scalar_dense") ++count_ref();
          return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
  }
  HostReadCounter(const HostReadCounter&) = delete;
  HostReadCounter& operator=(const HostReadCounter&) = delete;
  ~HostReadCounter() { at::removeCallback(handle_); }
  /// The reads since construction.
  int count() const { return count_ref(); }

 private:
  static int& count_ref() {
    static thread_local int n = 0;
    return n;
  }
  at::CallbackHandle handle_;
};

}  // namespace ppe_test
