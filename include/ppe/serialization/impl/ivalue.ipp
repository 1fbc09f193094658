// Definitions of serialization/ivalue.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ppe/serialization/ivalue.hpp"

namespace ppe::serialization {

PPE_DECL c10::IValue to_ivalue(const State& s) {
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
      if (s.has_int_keys()) {
        c10::impl::GenericDict dict(c10::IntType::get(), c10::AnyType::get());
        for (const auto& [k, v] : s.as_dict()) dict.insert(c10::IValue(static_cast<std::int64_t>(std::stoll(k))), to_ivalue(v));
        return c10::IValue(std::move(dict));
      }
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [k, v] : s.as_dict()) dict.insert(k, to_ivalue(v));
      return c10::IValue(std::move(dict));
    }
  }
  throw StateError("ppe::serialization::to_ivalue: unknown state kind");
}

PPE_DECL State from_ivalue(const c10::IValue& v) {
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
    const auto dict = v.toGenericDict();
    bool int_keys = dict.keyType()->kind() == c10::TypeKind::IntType || !dict.empty();
    for (const auto& entry : dict) int_keys = int_keys && entry.key().isInt();
    State out = int_keys ? State::int_dict() : State::dict();
    for (const auto& entry : dict) {
      const c10::IValue& key = entry.key();
      if (key.isString())
        out.set(key.toStringRef(), from_ivalue(entry.value()));
      else if (key.isInt())
        out.set(std::to_string(key.toInt()), from_ivalue(entry.value()));
      else
        throw StateError("ppe::serialization::from_ivalue: dictionary key of type " + key.tagKind() +
                         " is not supported (expected str or int)");
    }
    return out;
  }
  throw StateError("ppe::serialization::from_ivalue: value of type " + v.tagKind() + " has no ppe::State form");
}

}  // namespace ppe::serialization
