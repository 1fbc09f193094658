// Definitions of profiler/record.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
// LibTorch's RecordFunction (and, in CUDA builds, its CUDA events) are needed here only.
#pragma once

#include <ATen/record_function.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "ppe/profiler/record.hpp"

// CUDA timing exists only where LibTorch was built with CUDA and CUDA's own
// headers are there to compile it: c10's CUDA library generates
// c10/cuda/impl/cuda_cmake_macros.h in CUDA builds only (LibTorch defines no
// AT_CUDA_ENABLED; a CPU build, such as Debian's libtorch-dev, ships c10's
// and ATen's CUDA headers but not this one). Elsewhere `use_cuda` is
// accepted and ignored.
#if __has_include(<c10/cuda/impl/cuda_cmake_macros.h>) && __has_include(<cuda_runtime_api.h>)
#define PPE_PROFILER_CUDA 1
#else
#define PPE_PROFILER_CUDA 0
#endif
#if PPE_PROFILER_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace ppe::profiler::detail {

PPE_DECL void* torch_scope_begin(std::string_view tag) {
  // Empty unless a profiler (or another RecordFunction observer) is on:
  // then, and only then, the range is allocated.
  c10::optional<at::StepCallbacks> callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE);
  if (!callbacks) return nullptr;
  auto scope = std::make_unique<at::RecordFunction>(std::move(*callbacks));
  scope->before(std::string(tag));
  return scope.release();
}

PPE_DECL void torch_scope_end(void* scope) noexcept { delete static_cast<at::RecordFunction*>(scope); }

#if PPE_PROFILER_CUDA
PPE_DECL void* cuda_begin() {
  if (!at::hasCUDA()) return nullptr;
  auto begin = std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);  // with timing
  begin->record();
  return begin.release();
}

PPE_DECL void cuda_end(TimeSummary& summary, std::string_view metric, void* begin_event) {
  std::shared_ptr<at::cuda::CUDAEvent> begin(static_cast<at::cuda::CUDAEvent*>(begin_event));
  auto end = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);
  end->record();
  // Resolved by the next synchronize() (summary() calls it), so the training
  // thread does not wait for the GPU here.
  summary.add_deferred(std::string(metric) + ".cuda", [begin, end] {
    end->synchronize();
    return static_cast<double>(begin->elapsed_time(*end)) / 1000.0;
  });
}

PPE_DECL void cuda_discard(void* begin_event) noexcept { delete static_cast<at::cuda::CUDAEvent*>(begin_event); }
#else
PPE_DECL void* cuda_begin() { return nullptr; }
PPE_DECL void cuda_end(TimeSummary&, std::string_view, void*) {}
PPE_DECL void cuda_discard(void*) noexcept {}
#endif

PPE_DECL std::string_view inferred_tag(const char* file_name, std::uint_least32_t line, const char* function_name) {
  static std::mutex m;
  static auto* interned =
      new std::map<std::tuple<const char*, const char*, std::uint_least32_t>, std::unique_ptr<const std::string>>();
  const auto key = std::make_tuple(file_name, function_name, line);
  std::lock_guard lock(m);
  if (auto it = interned->find(key); it != interned->end()) return *it->second;

  std::string_view file = file_name;
  if (auto slash = file.find_last_of("/\\"); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  if (auto dot = file.rfind('.'); dot != std::string_view::npos && dot > 0) file = file.substr(0, dot);
  // "void ns::S::f<int>(int) const" -> "f<int>": the name before the
  // parameter list, without return type and scope. Clang spells an unnamed
  // namespace "(anonymous namespace)", which opens no parameter list.
  std::string_view fn = function_name;
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  int depth = 0;
  std::size_t open = fn.size();
  for (std::size_t i = 0; i < fn.size(); ++i) {
    if (fn.substr(i).starts_with(kAnonymous)) {
      i += kAnonymous.size() - 1;
      continue;
    }
    if (fn[i] == '<') ++depth;
    if (fn[i] == '>' && depth > 0) --depth;
    if (fn[i] == '(' && depth == 0) {
      open = i;
      break;
    }
  }
  fn = fn.substr(0, open);
  depth = 0;
  std::size_t start = 0;
  for (std::size_t i = fn.size(); i-- > 0;) {
    if (fn[i] == '>') ++depth;
    if (fn[i] == '<' && depth > 0) --depth;
    if (depth == 0 && (fn[i] == ' ' || (fn[i] == ':' && i > 0 && fn[i - 1] == ':'))) {
      start = i + 1;
      break;
    }
  }
  fn = fn.substr(start);
  auto tag = std::make_unique<const std::string>(std::string(file) + ":" + std::to_string(line) + ":" +
                                                 std::string(fn));
  const std::string& out = *tag;
  interned->emplace(key, std::move(tag));
  return out;
}

}  // namespace ppe::profiler::detail
