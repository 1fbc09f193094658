#pragma once
/// \file
/// `ppe::nn::LazyStateHooks`: what a module whose parameters or buffers are
/// placeholders until their shapes are known (the lazy modules,
/// ppe/nn/modules/lazy.hpp) tells the code that saves and loads model states
/// (ppe/training/models.hpp). An interface of its own so that the lazy
/// modules implement it without including training/.

#include <c10/util/ArrayRef.h>

#include <string>

namespace ppe::nn {

/// Implemented by modules whose parameters or buffers are placeholders until
/// their shapes are known (ppe::nn's lazy modules, ppe/nn/modules/lazy.hpp).
/// The model state functions of ppe/training/models.hpp ask it, so that such
/// a module saves and loads as PPE's LazyInitializationMixin does.
class LazyStateHooks {
 public:
  /// Whether the module's own parameter or buffer `name` is a placeholder.
  virtual bool is_placeholder(const std::string& name) const = 0;
  /// Gives the module the shapes that make its entry `name` of shape
  /// `sizes`, keeping its tensors (which an optimizer may hold), and
  /// initializes it as its first forward would.
  virtual void materialize(const std::string& name, c10::IntArrayRef sizes) = 0;

 protected:
  ~LazyStateHooks() = default;
};

}  // namespace ppe::nn
