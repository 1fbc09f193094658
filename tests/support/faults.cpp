// Fault injection for the tests of failure paths that nothing outside a
// process can reach (a thread that cannot start, a second connection to a
// live server that fails): a library that worker processes preload
// (LD_PRELOAD), in front of libc's pthread_create and connect. Unarmed, both
// pass every call through; a test arms them through the functions below
// (tests/support/faults.hpp finds them with dlsym). The failures are the
// system's own: EAGAIN from pthread_create, EACCES from connect. Nothing of
// this is in ppe.
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <mutex>

namespace {

std::mutex mutex;
int threads_to_pass = 0, threads_to_fail = 0;
int watched_port = 0, connects_seen = 0, connects_to_pass = -1;

// The definition this library stands in front of.
template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

int port_of(const sockaddr* a) {
  if (a == nullptr) return -1;
  if (a->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port);
  if (a->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port);
  return -1;
}

}  // namespace

extern "C" {

/// After `pass` more threads have started, the next `fail` fail to start.
__attribute__((visibility("default"))) void ppe_test_fail_threads(int pass, int fail) {
  std::lock_guard lock(mutex);
  threads_to_pass = pass;
  threads_to_fail = fail;
}

/// From now on, counts the connections to TCP port `port` (0: none); after
/// `pass` of them, the others fail (`pass` < 0: none fails).
__attribute__((visibility("default"))) void ppe_test_watch_connects(int port, int pass) {
  std::lock_guard lock(mutex);
  watched_port = port;
  connects_seen = 0;
  connects_to_pass = pass;
}

/// The connections to the watched port since ppe_test_watch_connects.
__attribute__((visibility("default"))) int ppe_test_connects() {
  std::lock_guard lock(mutex);
  return connects_seen;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                                          void* (*start)(void*), void* arg) noexcept {
  static const auto real = next<int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*)>("pthread_create");
  {
    std::lock_guard lock(mutex);
    if (threads_to_pass > 0)
      --threads_to_pass;
    else if (threads_to_fail > 0) {
      --threads_to_fail;
      return EAGAIN;
    }
  }
  return real(thread, attr, start, arg);
}

__attribute__((visibility("default"))) int connect(int fd, const sockaddr* addr, socklen_t len) {
  static const auto real = next<int (*)(int, const sockaddr*, socklen_t)>("connect");
  {
    std::lock_guard lock(mutex);
    if (watched_port != 0 && port_of(addr) == watched_port) {
      ++connects_seen;
      if (connects_to_pass >= 0 && connects_seen > connects_to_pass) {
        errno = EACCES;
        return -1;
      }
    }
  }
  return real(fd, addr, len);
}

}  // extern "C"
