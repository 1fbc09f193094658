#pragma once
/// \file
/// Conversion of `ppe::State` to and from LibTorch's `c10::IValue`, and the
/// pickle byte format that Python's `torch.load` reads (`torch::pickle_save`).

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <string>
#include <vector>

#include "ppe/state.hpp"

namespace ppe {

/// The IValue form of a State: dictionaries become `Dict[str, Any]` (insertion
/// order kept), lists `List[Any]`, tensors stay tensors.
inline c10::IValue to_ivalue(const State& s) {
  switch (s.kind()) {
    case State::Kind::None: return c10::IValue();
    case State::Kind::Bool: return c10::IValue(s.as_bool());
    case State::Kind::Int: return c10::IValue(s.as_int());
    case State::Kind::Double: return c10::IValue(s.as_double());
    case State::Kind::String: return c10::IValue(s.as_string());
    case State::Kind::Tensor: return c10::IValue(s.as_tensor());
    case State::Kind::List: {
      c10::impl::GenericList list(c10::AnyType::get());
      list.reserve(s.as_list().size());
      for (const auto& item : s.as_list()) list.push_back(to_ivalue(item));
      return c10::IValue(std::move(list));
    }
    case State::Kind::Dict: {
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [k, v] : s.as_dict()) dict.insert(k, to_ivalue(v));
      return c10::IValue(std::move(dict));
    }
  }
  throw StateError("ppe::to_ivalue: unknown state kind");
}

/// The State form of an IValue. Tuples become lists; dictionary keys must be
/// strings or integers (integers are written as their decimal text).
inline State from_ivalue(const c10::IValue& v) {
  if (v.isNone()) return State();
  if (v.isBool()) return State(v.toBool());
  if (v.isInt()) return State(v.toInt());
  if (v.isDouble()) return State(v.toDouble());
  if (v.isString()) return State(v.toStringRef());
  if (v.isTensor()) return State(v.toTensor());
  if (v.isList()) {
    State::List out;
    for (const c10::IValue& item : v.toListRef()) out.push_back(from_ivalue(item));
    return State(std::move(out));
  }
  if (v.isTuple()) {
    State::List out;
    for (const c10::IValue& item : v.toTupleRef().elements()) out.push_back(from_ivalue(item));
    return State(std::move(out));
  }
  if (v.isGenericDict()) {
    State out = State::dict();
    for (const auto& entry : v.toGenericDict()) {
      const c10::IValue& key = entry.key();
      if (key.isString())
        out.set(key.toStringRef(), from_ivalue(entry.value()));
      else if (key.isInt())
        out.set(std::to_string(key.toInt()), from_ivalue(entry.value()));
      else
        throw StateError("ppe::from_ivalue: dictionary key of type " + key.tagKind() +
                         " is not supported (expected str or int)");
    }
    return out;
  }
  throw StateError("ppe::from_ivalue: value of type " + v.tagKind() + " has no ppe::State form");
}

/// Pickle bytes of a State, readable by Python's `torch.load`.
inline std::vector<char> pickle_dumps(const State& s) { return torch::jit::pickle_save(to_ivalue(s)); }

/// The State stored in pickle bytes written by `pickle_dumps` or Python's `torch.save`.
inline State pickle_loads(const std::vector<char>& bytes) { return from_ivalue(torch::jit::pickle_load(bytes)); }

/// Deep equality that compares tensors by dtype, shape and values.
inline bool state_equal(const State& a, const State& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case State::Kind::Tensor: {
      const at::Tensor& x = a.as_tensor();
      const at::Tensor& y = b.as_tensor();
      return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() && x.equal(y);
    }
    case State::Kind::List: {
      const auto& x = a.as_list();
      const auto& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!state_equal(x[i], y[i])) return false;
      return true;
    }
    case State::Kind::Dict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (x[i].first != y[i].first || !state_equal(x[i].second, y[i].second)) return false;
      return true;
    }
    default: return a == b;
  }
}

}  // namespace ppe
