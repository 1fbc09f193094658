#pragma once
/// \file
/// Conversion of `ppe::State` to and from LibTorch's `c10::IValue`: the form
/// in which LibTorch's pickler writes (and its unpickler reads) a State.

#include <ATen/core/ivalue.h>

#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"

namespace ppe::serialization {

/// The IValue form of a State: dictionaries become `Dict[str, Any]` (insertion
/// order kept), lists `List[Any]`, tensors stay tensors.
PPE_DECL c10::IValue to_ivalue(const State& s);

/// The State form of an IValue. Tuples become lists; dictionary keys must be
/// strings or integers. A dictionary whose keys are all integers (or typed
/// `Dict[int, ...]`) becomes a `State::int_dict()`; in a dictionary that mixes
/// both, integer keys become their decimal text.
PPE_DECL State from_ivalue(const c10::IValue& v);

}  // namespace ppe::serialization

// ppe 0.1 spelled these `ppe::serialization::to_ivalue` etc.; the old names stay for one release.
namespace ppe {
using serialization::to_ivalue;
using serialization::from_ivalue;
}  // namespace ppe

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/ivalue.ipp"
#endif
