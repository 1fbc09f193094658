#pragma once
// The CUDA tests (tests/cuda_tests) run where LibTorch sees a CUDA device and
// skip otherwise: each begins with `if (!ppe_test::cuda_or_skip()) return;`.
// A run whose every test skipped prints one line and exits with 77, which
// Meson reports as a skipped test (tests/support/doctest_main.cpp).
//
// PPE_TEST_CUDA (defined by tests/meson.build when LibTorch has its CUDA
// libraries, and by `./dev gpu-check`) compiles what needs c10's CUDA
// library: the sync debug mode, which reports every host synchronisation,
// stream and device ones included.

#include <torch/cuda.h>

#include <cstdio>
#include <string>

#if PPE_TEST_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#endif

namespace ppe_test {

/// Set by cuda_or_skip() when a CUDA test skipped (read by doctest_main.cpp).
extern bool g_cuda_skipped;

/// Whether a CUDA device is visible; if not, records the skip and prints one
/// line the first time.
inline bool cuda_or_skip() {
  if (torch::cuda::is_available()) return true;
  if (!g_cuda_skipped)
    std::printf("CUDA tests skipped: no CUDA device is visible to LibTorch (torch::cuda::is_available() is false)\n");
  g_cuda_skipped = true;
  return false;
}

#if PPE_TEST_CUDA
/// Counts the host synchronisations c10's sync debug mode reports while it
/// lives (every one: item, copies, stream and device synchronisations).
class CudaSyncCounter : public c10::WarningHandler {
 public:
  CudaSyncCounter() : previous_(c10::cuda::warning_state().get_sync_debug_mode()), guard_(this) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
  }
  ~CudaSyncCounter() override { c10::cuda::warning_state().set_sync_debug_mode(previous_); }
  CudaSyncCounter(const CudaSyncCounter&) = delete;
  CudaSyncCounter& operator=(const CudaSyncCounter&) = delete;

  void process(const c10::Warning& warning) override {
    if (warning.msg().find("synchroniz") != std::string::npos) ++count_;
  }
  int count() const noexcept { return count_; }
  void clear() noexcept { count_ = 0; }

 private:
  c10::cuda::SyncDebugMode previous_;
  c10::WarningUtils::WarningHandlerGuard guard_;
  int count_ = 0;
};
#endif

}  // namespace ppe_test
