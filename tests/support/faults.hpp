#pragma once
// The test side of tests/support/faults.cpp: the environment that preloads
// the fault library in a worker process, and its switches, found in the
// running process (a worker started without it fails with that said).

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

namespace ppe_test::faults {

/// The environment of a worker that preloads the fault library
/// (PPE_TEST_FAULTS: its path, which `meson test` sets).
inline std::map<std::string, std::string> preload() {
  const char* lib = std::getenv("PPE_TEST_FAULTS");
  if (lib == nullptr || *lib == '\0')
    throw std::runtime_error("PPE_TEST_FAULTS is not set (meson test sets it to the fault library's path)");
  return {{"LD_PRELOAD", lib}};
}

namespace faults_impl {
template <class F>
F* find(const char* name) {
  void* f = ::dlsym(RTLD_DEFAULT, name);
  if (f == nullptr)
    throw std::runtime_error(std::string(name) + " is not in this process: start it with faults::preload()");
  return reinterpret_cast<F*>(f);
}
}  // namespace faults_impl

/// After `pass` more threads have started, the next `fail` fail (EAGAIN).
inline void fail_threads(int pass, int fail) { faults_impl::find<void(int, int)>("ppe_test_fail_threads")(pass, fail); }

/// Counts the connections to TCP port `port` from now; after `pass` of them,
/// the others fail (EACCES); `pass` < 0: none fails; port 0: no port watched.
inline void watch_connects(int port, int pass) {
  faults_impl::find<void(int, int)>("ppe_test_watch_connects")(port, pass);
}

/// The connections to the watched port since watch_connects.
inline int connects() { return faults_impl::find<int()>("ppe_test_connects")(); }

}  // namespace ppe_test::faults
