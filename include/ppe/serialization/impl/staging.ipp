// Definitions of serialization/staging.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

#include <cstddef>
#include <utility>

#include "ppe/detail/huge_pages.hpp"
#include "ppe/serialization/staging.hpp"

namespace ppe::detail {

/// `live` copied into the tensors of `old` (the last staged state) where a
/// tensor at the same place has its shape, dtype and device; into new
/// tensors elsewhere.
inline State restage(const State& live, const State* old) {
  switch (live.kind()) {
    case State::Kind::Tensor: {
      const at::Tensor& t = live.as_tensor();
      if (!t.defined()) return live;
      if (old && old->is_tensor()) {
        at::Tensor o = old->as_tensor();
        if (o.defined() && o.sizes() == t.sizes() && o.scalar_type() == t.scalar_type() && o.device() == t.device() &&
            o.is_contiguous()) {
          o.copy_(t);
          return State(std::move(o));
        }
      }
      at::Tensor fresh = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
      if (fresh.device().is_cpu()) prefer_huge_pages(fresh.data_ptr(), fresh.nbytes());
      fresh.copy_(t);
      return State(std::move(fresh));
    }
    case State::Kind::List: {
      const State::List* before = old && old->is_list() ? &old->as_list() : nullptr;
      State::List out;
      out.reserve(live.as_list().size());
      for (std::size_t i = 0; i < live.as_list().size(); ++i)
        out.push_back(restage(live.as_list()[i], before && i < before->size() ? &(*before)[i] : nullptr));
      return State(std::move(out));
    }
    case State::Kind::Dict: {
      const State::Dict* before = old && old->is_dict() ? &old->as_dict() : nullptr;
      State out = live.has_int_keys() ? State::int_dict() : State::dict();
      out.as_dict().reserve(live.as_dict().size());
      for (std::size_t i = 0; i < live.as_dict().size(); ++i) {
        const auto& [key, value] = live.as_dict()[i];
        // The same layout as last time, almost always: the entry at the same
        // place, else a search.
        const State* was = before && i < before->size() && (*before)[i].first == key ? &(*before)[i].second
                           : old ? old->find(key)
                                 : nullptr;
        out.as_dict().emplace_back(key, restage(value, was));
      }
      return out;
    }
    default: return live;
  }
}

}  // namespace ppe::detail

namespace ppe::serialization {

PPE_DECL std::shared_ptr<const State> Staging::stage(const State& live, bool keep) {
  std::unique_lock lock(m_);
  cv_.wait(lock, [this] { return !busy_; });
  {
    at::NoGradGuard no_grad;
    state_ = ppe::detail::restage(live, &state_);
  }
  busy_ = true;
  // The lease: the staged state, released (waking the next stage) when the
  // last copy of the pointer goes.
  auto self = shared_from_this();
  return std::shared_ptr<const State>(&state_, [self, keep](const State*) { self->release(keep); });
}

PPE_DECL bool Staging::busy() const {
  std::lock_guard lock(m_);
  return busy_;
}

PPE_DECL void Staging::release(bool keep) noexcept {
  {
    std::lock_guard lock(m_);
    if (!keep) state_ = State();
    busy_ = false;
  }
  cv_.notify_all();
}

}  // namespace ppe::serialization
