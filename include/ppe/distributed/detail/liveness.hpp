#pragma once
/// \file
/// The ranks' liveness (`InitOptions::heartbeat`, `heartbeat_timeout`): each
/// rank beats a counter in the store from a thread with its own store
/// connection, reads the other ranks' counters, and a watchdog thread ends the
/// process when a peer's counter stood still, or the store did not answer,
/// for longer than the deadline. A collective blocked on a lost peer cannot
/// be interrupted (Gloo has no abort before LibTorch 2.x, and a no-op one
/// after), so ending the process is the one way out that every LibTorch has,
/// as NCCL's asynchronous error handling does: torchrun's agent then sees a
/// failed worker and restarts the job from its last snapshot.
///
/// What counts as lost, and what does not:
/// - a peer whose counter did not move for the deadline while the store
///   answered (dead without a reset, hung, SIGSTOPped, cut off);
/// - the store not answering an operation for the deadline (its host hung
///   or cut off). A store that refuses or resets at once (its process ended)
///   is not judged: the group's collectives fail at once by themselves, and
///   the end of a job (the store's host leaving first) must not be an error;
/// - never: a rank that left cleanly (`leave`, marked in its counter), a rank
///   that never beat (a Python rank of a mixed job), a slow loop (the beat
///   comes from a thread, not from the training loop).
///
/// Internal to ppe::distributed (included by impl/initialize.ipp).
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ppe::distributed::detail {

/// Added to a rank's counter when it leaves: counts at or above it are ranks
/// that are gone on purpose.
inline constexpr std::int64_t kLeftMark = std::int64_t{1} << 40;

/// The exit status of a process ended by the watchdog (EX_TEMPFAIL: a
/// temporary failure; the job can be retried).
inline constexpr int kLostPeerExitCode = 75;

/// What the liveness threads need to know.
struct LivenessConfig {
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds interval{1000};
  /// Zero: beat only (`lost_ranks` still works), no watchdog.
  std::chrono::milliseconds deadline{10000};
  /// "host:port" of the store, and who hosts it, for messages.
  std::string store_address;
  /// The rank whose process hosts the store (nullopt: torchrun's agent).
  std::optional<int> store_rank;
  /// Called on the watchdog thread with the message before the process ends
  /// (InitOptions::on_lost_peer); the default writes it to stderr.
  std::function<void(const std::string&)> on_lost;
};

/// This machine's host name ("unknown" when the call fails).
inline std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;

  /// Where rank `rank` publishes its host name under `prefix`.
  static std::string host_key(const std::string& prefix, int rank) { return prefix + "host/" + std::to_string(rank); }
  /// Publishes this machine's host name for `rank`: called by every rank
  /// before the group forms, so that each knows the others' hosts from its
  /// first heartbeat on (a machine lost a moment later is still named).
  static void publish_host(c10d::Store& store, const std::string& prefix, int rank) {
    const std::string h = host_name();
    store.set(host_key(prefix, rank), std::vector<std::uint8_t>(h.begin(), h.end()));
  }

  Liveness(c10::intrusive_ptr<c10d::Store> store, std::string prefix, LivenessConfig config)
      : s_(std::make_shared<Shared>(std::move(store), std::move(prefix), std::move(config))) {
    s_->peers.resize(static_cast<std::size_t>(s_->config.world_size));
    const auto now = Clock::now();
    for (auto& p : s_->peers) p.changed = now;
    s_->last_ok = now;
    beat_ = std::thread([s = s_] { beat(*s); });
    if (s_->config.deadline.count() == 0) return;
    try {
      watch_ = std::thread([s = s_] { watch(*s); });
    } catch (...) {
      // The beat thread runs already: stopped and let go (it holds its own
      // share of the state), never destroyed joinable (std::terminate).
      stop_beat();
      beat_.detach();
      throw;
    }
  }
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;
  /// Leaves (marks this rank's counter, so that the others do not take its
  /// silence for a loss) and stops both threads. Waits for the last beat at
  /// most one interval plus a second: a store that does not answer leaves the
  /// beat thread detached (it holds its own share of the state).
  ~Liveness() {
    stop_beat();
    if (watch_.joinable()) watch_.join();
    std::unique_lock lock(s_->mutex);
    const bool done = s_->wake.wait_for(lock, s_->config.interval + std::chrono::seconds(1),
                                        [this] { return s_->beat_done; });
    lock.unlock();
    if (done)
      beat_.join();
    else
      beat_.detach();
  }

  const c10::intrusive_ptr<c10d::Store>& store() const noexcept { return s_->store; }
  std::chrono::milliseconds interval() const noexcept { return s_->config.interval; }
  const std::string& prefix() const noexcept { return s_->prefix; }

 private:
  // Asks both threads to end (the beat thread then marks this rank as left).
  void stop_beat() {
    {
      std::lock_guard lock(s_->mutex);
      s_->stop = true;
    }
    s_->wake.notify_all();
  }

  struct Peer {
    std::int64_t count = 0;         // the last value read
    Clock::time_point changed;      // when it was last seen to move (or the start)
    bool left = false;              // marked as left
    std::string host;               // published by the rank ("" until read)
  };
  struct Shared {
    Shared(c10::intrusive_ptr<c10d::Store> st, std::string pre, LivenessConfig c)
        : store(std::move(st)), prefix(std::move(pre)), config(std::move(c)) {}
    c10::intrusive_ptr<c10d::Store> store;
    std::string prefix;
    LivenessConfig config;
    std::mutex mutex;
    std::condition_variable wake;
    bool stop = false, beat_done = false;
    std::vector<Peer> peers;
    Clock::time_point last_ok;                  // the end of the last round the store answered
    std::optional<Clock::time_point> silent;    // since when the store has not answered
    std::optional<Clock::time_point> in_flight;  // when the round now waiting on the store began
    bool store_refused = false;                 // the last round failed at once (its process ended)
  };

  static std::string counter_key(const Shared& s, int r) { return s.prefix + std::to_string(r); }
  static std::string host_key(const Shared& s, int r) { return host_key(s.prefix, r); }

  // One round a heartbeat: this rank's beat, then every peer's counter (and
  // host name until known: `publish_host` wrote them before the group
  // formed). A round that fails after taking an interval or more is
  // silence; one that fails at once is a store that is gone.
  static void beat(Shared& s) {
    const int me = s.config.rank;
    const std::string own = counter_key(s, me);
    std::unique_lock lock(s.mutex);
    while (!s.stop) {
      const auto started = Clock::now();
      s.in_flight = started;
      lock.unlock();
      std::vector<std::int64_t> counts(s.peers.size(), 0);
      std::vector<std::pair<int, std::string>> hosts;
      bool ok = true;
      try {
        s.store->add(own, 1);
        for (int r = 0; r < s.config.world_size; ++r) {
          if (r == me) continue;
          counts[static_cast<std::size_t>(r)] = s.store->add(counter_key(s, r), 0);
        }
        for (int r = 0; r < s.config.world_size; ++r) {
          if (r == me) continue;
          bool known;
          {
            std::lock_guard g(s.mutex);
            known = !s.peers[static_cast<std::size_t>(r)].host.empty();
          }
          if (!known && s.store->check({host_key(s, r)})) {
            // Another process wrote it, and it only goes into messages: at most 255 bytes kept.
            const auto bytes = s.store->get(host_key(s, r));
            hosts.emplace_back(r, std::string(bytes.begin(), bytes.begin() + std::min<std::size_t>(bytes.size(), 255)));
          }
        }
      } catch (const std::exception&) {
        ok = false;
      }
      const auto now = Clock::now();
      lock.lock();
      s.in_flight.reset();
      if (ok) {
        for (int r = 0; r < s.config.world_size; ++r) {
          if (r == me) continue;
          Peer& p = s.peers[static_cast<std::size_t>(r)];
          const std::int64_t c = counts[static_cast<std::size_t>(r)];
          if (c != p.count) p.changed = now;
          p.count = c;
          p.left = c >= kLeftMark;
        }
        for (auto& [r, h] : hosts) s.peers[static_cast<std::size_t>(r)].host = std::move(h);
        s.last_ok = now;
        s.silent.reset();
        s.store_refused = false;
      } else if (now - started >= s.config.interval) {
        if (!s.silent) s.silent = started;
      } else {
        s.store_refused = true;
      }
      s.wake.wait_for(lock, s.config.interval, [&s] { return s.stop; });
    }
    lock.unlock();
    try {
      s.store->add(own, kLeftMark);
    } catch (const std::exception&) {
      // The store is gone too: nobody is left to misread the silence.
    }
    lock.lock();
    s.beat_done = true;
    lock.unlock();
    s.wake.notify_all();
  }

  static std::string seconds(Clock::duration d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
    return buf;
  }
  static std::string on_host(const std::string& host) { return host.empty() ? "" : " on " + host; }

  // Checks the deadlines a few times per interval; never touches the store.
  static void watch(Shared& s) {
    const auto tick = std::min(s.config.interval, s.config.deadline) / 4 + std::chrono::milliseconds(1);
    std::unique_lock lock(s.mutex);
    while (!s.wake.wait_for(lock, tick, [&s] { return s.stop; })) {
      const auto now = Clock::now();
      const auto deadline = s.config.deadline;
      std::string what;
      const bool store_host_left = s.config.store_rank && s.peers[static_cast<std::size_t>(*s.config.store_rank)].left;
      // Not answering: a round that failed slowly, or one still waiting
      // longer than an interval. Meanwhile the peers cannot be seen.
      std::optional<Clock::time_point> silent = s.silent;
      if (!silent && s.in_flight && now - *s.in_flight > s.config.interval) silent = s.in_flight;
      if (silent && now - *silent > deadline && !store_host_left) {
        what = "the store at " + s.config.store_address + " (hosted by " +
               (s.config.store_rank ? "rank " + std::to_string(*s.config.store_rank) +
                                          on_host(s.peers[static_cast<std::size_t>(*s.config.store_rank)].host)
                                    : std::string("torchrun's agent")) +
               ") has not answered for " + seconds(now - *silent) + ": its host is lost (dead, hung or cut off)";
      } else if (!silent && !s.store_refused) {
        std::string lost;
        for (int r = 0; r < s.config.world_size; ++r) {
          const Peer& p = s.peers[static_cast<std::size_t>(r)];
          if (r == s.config.rank || p.left || p.count == 0 || now - p.changed <= deadline) continue;
          lost += (lost.empty() ? "" : ", ") + ("rank " + std::to_string(r)) + on_host(p.host) +
                  " (no heartbeat for " + seconds(now - p.changed) + ")";
        }
        if (!lost.empty()) what = lost + (lost.find(", rank") == std::string::npos ? " is" : " are") +
                                  " lost (dead, hung or cut off from the network)";
      }
      if (what.empty()) continue;
      const std::string self = "rank " + std::to_string(s.config.rank) + on_host(host_name());
      const std::string message = "ppe::distributed: " + what + "; the deadline is " + seconds(deadline) +
                                  " (InitOptions::heartbeat_timeout, PPE_HEARTBEAT_TIMEOUT). " + self +
                                  " ends its process with exit status " + std::to_string(kLostPeerExitCode) +
                                  " so that the launcher can restart the job from its last snapshot.\n";
      lock.unlock();
      if (s.config.on_lost) {
        try {
          s.config.on_lost(message);
        } catch (...) {
        }
      } else {
        // write(2): the main thread may hold stdio's locks.
        for (std::size_t done = 0; done < message.size();) {
          const ssize_t n = ::write(2, message.data() + done, message.size() - done);
          if (n <= 0) break;
          done += static_cast<std::size_t>(n);
        }
      }
      // No destructors, no atexit: the main thread is blocked in a collective
      // whose peer will never answer; files are written atomically, so the
      // last snapshot stays whole.
      std::_Exit(kLostPeerExitCode);
    }
  }

  std::shared_ptr<Shared> s_;
  std::thread beat_, watch_;
};

}  // namespace ppe::distributed::detail
