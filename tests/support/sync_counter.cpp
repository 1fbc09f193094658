// SyncCounter's callback (see sync_counter.hpp); compiled with NDEBUG.
#include "sync_counter.hpp"

#include <cstring>

namespace ppe_test {

bool SyncCounter::starts_with(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

std::unique_ptr<at::ObserverContext> SyncCounter::on_start(const at::RecordFunction& fn) {
  SyncCounter* self = current();
  // is_pinned() below is an operation too: not counted, not re-entered.
  if (!self || self->inside_) return nullptr;
  self->inside_ = true;
  self->inspect(fn);
  self->inside_ = false;
  ++self->depth_;
  return nullptr;
}

void SyncCounter::on_end(const at::RecordFunction&, at::ObserverContext*) {
  SyncCounter* self = current();
  if (self && !self->inside_ && self->depth_ > 0) --self->depth_;
}

void SyncCounter::inspect(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const bool read = std::strcmp(name, "aten::item") == 0 || std::strcmp(name, "aten::_local_scalar_dense") == 0 ||
                    std::strcmp(name, "aten::is_nonzero") == 0 || std::strcmp(name, "aten::nonzero") == 0 ||
                    std::strcmp(name, "aten::masked_select") == 0 || starts_with(name, "aten::unique_") ||
                    starts_with(name, "aten::_unique");
  if (read) {
    if (depth_ == 0) events_.emplace_back(name);
  } else if (std::strcmp(name, "aten::copy_") == 0) {
    const auto inputs = fn.inputs();
    if (inputs.size() >= 2 && inputs[0].isTensor() && inputs[1].isTensor()) {
      const at::Tensor& dst = inputs[0].toTensor();
      const at::Tensor& src = inputs[1].toTensor();
      const bool non_blocking = inputs.size() >= 3 && inputs[2].isBool() && inputs[2].toBool();
      if (dst.device() != src.device() && !(non_blocking && src.is_cpu() && dst.is_cuda() && src.is_pinned()))
        events_.push_back("aten::copy_ " + src.device().str() + " -> " + dst.device().str());
    }
  }
}

}  // namespace ppe_test
