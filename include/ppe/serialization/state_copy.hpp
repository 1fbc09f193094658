#pragma once
/// \file
/// Tensor-aware operations on a whole `ppe::State`: `owned_copy` (what an
/// asynchronous snapshot keeps while training goes on) and `state_equal`
/// (deep equality comparing tensors by value).

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <utility>

#include "ppe/state.hpp"

namespace ppe {

/// A copy of `s` that nothing else can change: every tensor whose data or
/// TensorImpl anything else still references (e.g. a model's parameters, held
/// by `detach()`ed handles) is cloned; tensors only this state holds (e.g. the
/// clones an optimizer state already made) are shared, not copied again.
/// What an asynchronous snapshot keeps while training goes on.
inline State owned_copy(const State& s) {
  switch (s.kind()) {
    case State::Kind::Tensor: {
      const at::Tensor& t = s.as_tensor();
      const bool sole = !t.defined() || (t.use_count() == 1 && t.storage().use_count() == 1);
      return sole ? s : State(t.detach().clone());
    }
    case State::Kind::List: {
      State::List out;
      out.reserve(s.as_list().size());
      for (const auto& item : s.as_list()) out.push_back(owned_copy(item));
      return State(std::move(out));
    }
    case State::Kind::Dict: {
      State out = s.has_int_keys() ? State::int_dict() : State::dict();
      out.as_dict().reserve(s.as_dict().size());
      for (const auto& [k, v] : s.as_dict()) out.as_dict().emplace_back(k, owned_copy(v));
      return out;
    }
    default: return s;
  }
}

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
