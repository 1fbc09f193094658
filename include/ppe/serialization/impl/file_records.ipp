// Definitions of serialization/detail/file_records.hpp (load_file_deferred is
// in pickle.ipp, beside the reader it shares): included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <ATen/core/grad_mode.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ppe/detail/huge_pages.hpp"
#include "ppe/serialization/detail/archive_source.hpp"
#include "ppe/serialization/detail/file_records.hpp"

namespace ppe::detail {

/// The storage of a tensor whose bytes are still in the file: an anonymous
/// mapping of the record's size (address space until written) and where the
/// record is.
struct UnreadRecord {
  std::shared_ptr<const ArchiveSource> source;
  std::uint64_t offset = 0, size = 0;
  void* memory = nullptr;
  std::size_t mapped = 0;
  bool read = false;

  void fill() {
    if (read) return;
    source->read(offset, memory, static_cast<std::size_t>(size));
    read = true;
  }
  /// Reads it for good: the tensor keeps its memory and no longer needs the
  /// file (which it would otherwise keep open, and on disk after its removal).
  void fill_for_good() {
    fill();
    source.reset();
  }
  /// Gives the memory back (the pages are zero again; the record can be read again).
  void release() noexcept {
    ::madvise(memory, mapped, MADV_DONTNEED);
    read = false;
  }
};

/// The DataPtr deleter of an UnreadRecord storage: it also tells them apart.
inline void delete_unread_record(void* context) noexcept {
  auto* r = static_cast<UnreadRecord*>(context);
  ::munmap(r->memory, r->mapped);
  delete r;
}

/// A storage's DataPtr for the `size` bytes at `offset` of `source`, unread.
inline at::DataPtr unread_record(std::shared_ptr<const ArchiveSource> source, std::uint64_t offset,
                                 std::uint64_t size) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = (static_cast<std::size_t>(size) + page - 1) / page * page;
  void* memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  prefer_huge_pages(memory, mapped);
  auto* record = new UnreadRecord{std::move(source), offset, size, memory, mapped, false};
  return at::DataPtr(memory, record, &delete_unread_record, at::Device(at::kCPU));
}

/// The record behind `t`'s storage, or nullptr when it is no unread record.
inline UnreadRecord* unread_of(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return nullptr;
  const at::DataPtr& p = t.storage().data_ptr();
  return p.get_deleter() == &delete_unread_record ? static_cast<UnreadRecord*>(p.get_context()) : nullptr;
}

/// Reads every unread tensor of `s` whose path `may_defer` refuses.
inline void read_undeferred(const State& s, std::vector<std::string>& path, const MayDefer& may_defer) {
  switch (s.kind()) {
    case State::Kind::Tensor:
      if (UnreadRecord* r = unread_of(s.as_tensor()); r && !may_defer(path)) r->fill_for_good();
      return;
    case State::Kind::List:
      for (std::size_t i = 0; i < s.as_list().size(); ++i) {
        path.push_back(std::to_string(i));
        read_undeferred(s.as_list()[i], path, may_defer);
        path.pop_back();
      }
      return;
    case State::Kind::Dict:
      for (const auto& [key, value] : s.as_dict()) {
        path.push_back(key);
        read_undeferred(value, path, may_defer);
        path.pop_back();
      }
      return;
    default: return;
  }
}

PPE_DECL bool manager_may_defer(const std::vector<std::string>& path) {
  return (path.size() >= 3 && path[0] == "models") ||
         (path.size() >= 4 && path[0] == "optimizers" && path[2] == "state");
}

PPE_DECL void copy_saved(const at::Tensor& dst, const at::Tensor& src) {
  at::NoGradGuard no_grad;
  at::Tensor into = dst;
  UnreadRecord* r = unread_of(src);
  if (!r || r->read || !r->source) {
    into.copy_(src);
    return;
  }
  const std::size_t n = src.nbytes();
  if (into.device().is_cpu() && into.is_contiguous() && src.is_contiguous() && src.storage_offset() == 0 &&
      into.scalar_type() == src.scalar_type() && into.nbytes() == n && n <= r->size) {
    r->source->read(r->offset, into.data_ptr(), n);  // the file straight into the parameter
    return;
  }
  r->fill();
  into.copy_(src);
  r->release();  // one record's memory at a time
}

PPE_DECL at::Tensor take_saved(const at::Tensor& src, c10::Device device, c10::ScalarType dtype) {
  UnreadRecord* r = unread_of(src);
  if (r && src.device() == device && src.scalar_type() == dtype && src.is_contiguous() && src.storage_offset() == 0 &&
      src.use_count() == 1 && src.storage().use_count() == 1) {
    r->fill_for_good();  // into the tensor's own memory, which becomes the destination's
    return src;
  }
  const bool filled_here = r && !r->read && r->source;
  if (filled_here) r->fill();
  at::Tensor out = src.to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
  if (filled_here) r->release();
  return out;
}

}  // namespace ppe::detail
