#pragma once
/// \file
/// `ppe::detail::prefer_huge_pages`: asks the kernel for transparent huge
/// pages in a large buffer before its first touch. A first touch of fresh
/// memory costs a page fault per page; on the machines ppe is measured on
/// (docs/snapshot.md) 4 KiB pages made filling a fresh buffer 3-4 times
/// slower than with 2 MiB pages, and a snapshot's staging copy or a read
/// state is gigabytes of fresh memory. Where the kernel gives huge pages
/// only on request (`transparent_hugepage/enabled` = madvise, Debian's
/// default) this is that request; elsewhere it changes nothing.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace ppe::detail {

/// Requests huge pages for the whole 2 MiB pages inside `[p, p + n)` (none
/// when it holds fewer than two). Advisory: a refusal changes nothing.
inline void prefer_huge_pages(void* p, std::size_t n) noexcept {
#if defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t begin = (at + kHuge - 1) & ~(kHuge - 1), end = (at + n) & ~(kHuge - 1);
  if (n >= 2 * kHuge && end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace ppe::detail
