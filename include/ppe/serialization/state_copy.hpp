#pragma once
/// \file
/// Tensor-aware operations on a whole `ppe::State`: `owned_copy` (what an
/// asynchronous snapshot keeps while training goes on) and `state_equal`
/// (deep equality comparing tensors by value).

#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"

namespace ppe::serialization {

/// A copy of `s` that nothing else can change: every tensor whose data or
/// TensorImpl anything else still references (e.g. a model's parameters, held
/// by `detach()`ed handles) is cloned; tensors only this state holds (e.g. the
/// clones an optimizer state already made) are shared, not copied again.
/// What an asynchronous snapshot keeps while training goes on.
PPE_DECL State owned_copy(const State& s);

/// Deep equality that compares tensors by dtype, shape and values.
PPE_DECL bool state_equal(const State& a, const State& b);

}  // namespace ppe::serialization

// ppe 0.1 spelled these `ppe::serialization::owned_copy` etc.; the old names stay for one release.
namespace ppe {
using serialization::owned_copy;
using serialization::state_equal;
}  // namespace ppe

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/state_copy.ipp"
#endif
