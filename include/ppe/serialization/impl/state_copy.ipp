// Definitions of serialization/state_copy.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <utility>

#include "ppe/serialization/state_copy.hpp"

namespace ppe::serialization {

PPE_DECL State owned_copy(const State& s) {
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

PPE_DECL bool state_equal(const State& a, const State& b) {
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

}  // namespace ppe::serialization
