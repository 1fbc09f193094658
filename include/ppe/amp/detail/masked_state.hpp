#pragma once
/// \file
/// What a sync-free GradScaler keeps between masked steps: per optimizer and
/// parameter, the real step count on the device and the LibTorch state it
/// belongs to (`MaskedParamState`, `MaskedOptimizerState`), in a list shared
/// with the settle hooks it installs (`MaskedStates`).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::amp::detail {

/// What a sync-free scaler keeps for one parameter of a masked step.
struct MaskedParamState {
  /// The LibTorch state object last seen or made for the parameter: another
  /// object there means someone else (a load, LibTorch's own step) replaced it.
  const void* state_object = nullptr;
  /// The step count the LibTorch state held when last seen or written.
  std::int64_t host_step = 0;
  /// Whether this scaler made the LibTorch state (it is removed again when no
  /// step was ever applied, as LibTorch makes it only on a real step).
  bool made_here = false;
  /// The steps really applied (float64, 0-dim, on the parameter's device).
  at::Tensor count;
};

/// What a sync-free scaler keeps for one optimizer, by parameter (TensorImpl).
struct MaskedOptimizerState {
  torch::optim::Optimizer* optimizer = nullptr;
  std::unordered_map<const void*, MaskedParamState> params;
};

/// A scaler's `MaskedOptimizerState`s, one per optimizer it stepped. Held
/// through a `shared_ptr` so that the settle hook a scaler leaves on a step
/// counter can hold it weakly: the hook finds the states while the scaler
/// lives (wherever it was moved) and does nothing after. Copying a scaler
/// copies the states, as copying a value does.
class MaskedStates {
 public:
  using List = std::vector<MaskedOptimizerState>;

  MaskedStates() = default;
  MaskedStates(const MaskedStates& other) : list_(copy(other)) {}
  MaskedStates& operator=(const MaskedStates& other) {
    if (this != &other) list_ = copy(other);
    return *this;
  }
  MaskedStates(MaskedStates&&) noexcept = default;
  MaskedStates& operator=(MaskedStates&&) noexcept = default;

  /// The state of `optimizer`, made empty at its first step.
  MaskedOptimizerState& of(torch::optim::Optimizer& optimizer) {
    for (auto& st : list())
      if (st.optimizer == &optimizer) return st;
    MaskedOptimizerState& st = list().emplace_back();
    st.optimizer = &optimizer;
    return st;
  }
  /// Calls `f(state)` on every optimizer's state, in the order of their
  /// first steps.
  template <class F>
  void for_each(F&& f) {
    if (list_)
      for (auto& st : *list_) f(st);
  }
  /// A handle on the list that does not keep it alive, for hooks.
  std::weak_ptr<List> handle() {
    list();
    return list_;
  }
  /// The list's address: who left a hook, whatever the scaler's address.
  const void* id() { return &list(); }

 private:
  static std::shared_ptr<List> copy(const MaskedStates& other) {
    return other.list_ ? std::make_shared<List>(*other.list_) : nullptr;
  }
  List& list() {
    if (!list_) list_ = std::make_shared<List>();
    return *list_;
  }
  // Made when first needed: a moved-from scaler holds none.
  std::shared_ptr<List> list_;
};

}  // namespace ppe::amp::detail
