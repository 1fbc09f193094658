#pragma once
/// \file
/// `ppe::training::StopOnSignal`: while it lives, SIGTERM and SIGINT (or the
/// signals given) ask a manager to stop at the next iteration boundary
/// (`Manager::request_stop`), where snapshots take one last snapshot and the
/// manager finalizes. The preemption case of batch schedulers (SLURM, Kubernetes
/// send SIGTERM, then SIGKILL after a grace period). Not in PPE.
///
/// A second arrival of the same signal before the stop was carried out
/// restores the previous disposition and raises the signal again: a second
/// Ctrl-C ends a process that is stuck outside the training loop.

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppe/training/manager.hpp"

namespace ppe::training {

namespace detail::stop_signal {
// The handler can only reach globals; one StopOnSignal is active at a time.
inline std::atomic<Manager*> target{nullptr};
inline volatile std::sig_atomic_t received = 0;
inline constexpr int kMaxSignal = 65;
inline struct sigaction previous[kMaxSignal];
static_assert(std::atomic<Manager*>::is_always_lock_free);

inline void handle(int sig) {
  if (received == sig) {
    // Second time: give the signal its previous meaning and deliver it again.
    if (sig > 0 && sig < kMaxSignal) ::sigaction(sig, &previous[sig], nullptr);
    ::raise(sig);
    return;
  }
  received = sig;
  if (Manager* m = target.load(std::memory_order_relaxed)) m->request_stop();
}
}  // namespace detail::stop_signal

/// Installs the handlers in its constructor and restores the previous ones in
/// its destructor. `manager` must outlive it.
class StopOnSignal {
 public:
  explicit StopOnSignal(Manager& manager, std::initializer_list<int> signals = {SIGTERM, SIGINT})
      : signals_(signals) {
    namespace d = detail::stop_signal;
    Manager* expected = nullptr;
    if (!d::target.compare_exchange_strong(expected, &manager))
      throw std::logic_error("ppe::StopOnSignal: another StopOnSignal is active; only one can be");
    d::received = 0;
    struct sigaction action {};
    action.sa_handler = d::handle;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // interrupted reads and waits carry on; the loop sees the request
    for (std::size_t i = 0; i < signals_.size(); ++i) {
      const int sig = signals_[i];
      if (sig <= 0 || sig >= d::kMaxSignal || ::sigaction(sig, &action, &d::previous[sig]) != 0) {
        const int err = errno;
        restore(i);
        throw std::invalid_argument("ppe::StopOnSignal: cannot handle signal " + std::to_string(sig) + ": " +
                                    (sig <= 0 || sig >= d::kMaxSignal ? "not a signal number" : std::strerror(err)));
      }
    }
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  ~StopOnSignal() { restore(signals_.size()); }

  /// The signal that asked for the stop, or 0.
  int received() const noexcept { return detail::stop_signal::received; }

 private:
  void restore(std::size_t installed) noexcept {
    namespace d = detail::stop_signal;
    for (std::size_t i = 0; i < installed; ++i) ::sigaction(signals_[i], &d::previous[signals_[i]], nullptr);
    d::target.store(nullptr);
  }

  std::vector<int> signals_;
};

}  // namespace ppe::training
