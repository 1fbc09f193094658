#pragma once
/// \file
/// The ranks' liveness (`InitOptions::heartbeat`, `heartbeat_timeout`): each
/// rank beats a counter in the store from a thread with its own store
/// connection, and a watchdog thread ends the process when a watched peer's
/// counter stood still, or the store did not answer, for longer than the
/// deadline.
///
/// Who watches whom, so that the store serves O(W) operations an interval
/// (W ranks reading every counter would be W²: a million reads an interval
/// for 1024 ranks, longer than the deadline): the *coordinator*, the lowest
/// rank that beats and has not left, reads every rank's counter; every other
/// rank reads the counters up to the coordinator's (those below it are ranks
/// that never beat or have left: usually none) and one key where a loss is
/// published. A rank that sees a peer lost publishes what it saw before it
/// ends, and the others end at their next heartbeat with that message (one
/// heartbeat after the deadline). Each rank's round: one beat, one read of the
/// coordinator's counter (the coordinator: W − 1 reads), one check of the key.
///
/// A collective blocked on a lost peer cannot
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
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
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

/// How long the watchdog waits for `InitOptions::on_lost_peer` before it ends
/// the process anyway: user code (a logger waiting on a dead server, a call
/// that takes a lock the main thread holds) must not keep alive a process
/// whose collectives will never return.
inline constexpr std::chrono::seconds kOnLostPeerBound{5};

/// What one heartbeat round read from the store (`Liveness::round`).
struct Round {
  /// The ranks whose counters were read, with the values.
  std::vector<std::pair<int, std::int64_t>> counts;
  /// The lowest rank that beats and has not left (this rank when no lower one does).
  int coordinator = -1;
  /// A loss another rank published ("rank 3 on node2 (...) is lost (...) (seen by rank 0 on node1)").
  std::optional<std::string> loss;
  /// Host names read for the first time.
  std::vector<std::pair<int, std::string>> hosts;
};

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
  /// Called with the message before the process ends, on a thread of its
  /// own, given at most kOnLostPeerBound (InitOptions::on_lost_peer); the
  /// default writes it to stderr.
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
  /// Where rank `rank` beats its counter under `prefix`.
  static std::string counter_key(const std::string& prefix, int rank) { return prefix + std::to_string(rank); }
  /// Where a rank that saw a peer lost publishes what it saw.
  static std::string loss_key(const std::string& prefix) { return prefix + "lost"; }
  /// Publishes this machine's host name for `rank`: called by every rank
  /// before the group forms, so that each knows the others' hosts from its
  /// first heartbeat on (a machine lost a moment later is still named).
  static void publish_host(c10d::Store& store, const std::string& prefix, int rank) {
    const std::string h = host_name();
    store.set(host_key(prefix, rank), std::vector<std::uint8_t>(h.begin(), h.end()));
  }

  /// One heartbeat of rank `me` of `world` (the beat thread's, and the
  /// benchmark's): beats, reads the counters up to the coordinator's (all of
  /// them on the coordinator), checks the loss key, and reads the host names
  /// of the ranks read whose `host_known` is false. Throws what the store throws.
  static Round round(c10d::Store& store, const std::string& prefix, int me, int world,
                     const std::vector<bool>& host_known) {
    Round out;
    store.add(counter_key(prefix, me), 1);
    for (int r = 0; r < world && out.coordinator < 0; ++r) {
      if (r == me) {
        out.coordinator = me;
        break;
      }
      const std::int64_t c = store.add(counter_key(prefix, r), 0);
      out.counts.emplace_back(r, c);
      if (c > 0 && c < kLeftMark) out.coordinator = r;
    }
    if (out.coordinator == me)
      for (int r = me + 1; r < world; ++r) out.counts.emplace_back(r, store.add(counter_key(prefix, r), 0));
    if (store.check({loss_key(prefix)})) {
      // Another process wrote it, and it only goes into messages: at most 4 KiB kept.
      const auto bytes = store.get(loss_key(prefix));
      out.loss.emplace(bytes.begin(), bytes.begin() + std::min<std::size_t>(bytes.size(), 4096));
    }
    for (const auto& [r, c] : out.counts) {
      if (host_known[static_cast<std::size_t>(r)] || !store.check({host_key(prefix, r)})) continue;
      // Also only for messages: at most 255 bytes kept.
      const auto bytes = store.get(host_key(prefix, r));
      out.hosts.emplace_back(r, std::string(bytes.begin(), bytes.begin() + std::min<std::size_t>(bytes.size(), 255)));
    }
    return out;
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
  /// silence for a loss) and stops both threads. Waits for the mark as long
  /// as the others would wait before taking this rank for lost (the
  /// deadline; without a watchdog, an interval plus a second): a store that
  /// answers in that time gets the mark. One that does not is lost to the
  /// others too; the beat thread is then let go (it holds its own share of
  /// the state).
  ~Liveness() {
    stop_beat();
    if (watch_.joinable()) watch_.join();
    std::unique_lock lock(s_->mutex);
    const auto wait = std::max<std::chrono::milliseconds>(s_->config.interval + std::chrono::seconds(1),
                                                          s_->config.deadline);
    const bool done = s_->wake.wait_for(lock, wait, [this] { return s_->beat_done; });
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
    bool watched = false;           // read in the last round
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
    std::optional<std::string> loss;            // another rank's published loss, to end with
    std::optional<std::string> to_publish;      // this rank's report, for the beat thread to write
    bool published = false;                     // written (or given up: the store failed)
  };


  // One round a heartbeat (`round`), and a report to publish when the
  // watchdog asks. A round that fails after taking an interval or more is
  // silence; one that fails at once is a store that is gone.
  static void beat(Shared& s) {
    const int me = s.config.rank;
    const auto wanted = [&s] { return s.stop || (s.to_publish && !s.published); };
    std::unique_lock lock(s.mutex);
    while (!s.stop) {
      if (s.to_publish && !s.published) {
        const std::string report = *s.to_publish;
        lock.unlock();
        try {
          s.store->set(loss_key(s.prefix), std::vector<std::uint8_t>(report.begin(), report.end()));
        } catch (const std::exception&) {
          // The others watch the coordinator, or this rank: they see it end.
        }
        lock.lock();
        s.published = true;
        s.wake.notify_all();
        continue;
      }
      const auto started = Clock::now();
      s.in_flight = started;
      std::vector<bool> known(s.peers.size());
      for (std::size_t r = 0; r < known.size(); ++r) known[r] = !s.peers[r].host.empty();
      lock.unlock();
      std::optional<Round> got;
      try {
        got = round(*s.store, s.prefix, me, s.config.world_size, known);
      } catch (const std::exception&) {
      }
      const auto now = Clock::now();
      lock.lock();
      s.in_flight.reset();
      if (got) {
        std::vector<bool> read(s.peers.size(), false);
        for (const auto& [r, c] : got->counts) {
          read[static_cast<std::size_t>(r)] = true;
          Peer& p = s.peers[static_cast<std::size_t>(r)];
          // Newly watched: its silence counts from now.
          if (!p.watched || c != p.count) p.changed = now;
          p.watched = true;
          p.count = c;
          p.left = c >= kLeftMark;
        }
        for (std::size_t r = 0; r < read.size(); ++r)
          if (!read[r]) s.peers[r].watched = false;
        for (auto& [r, h] : got->hosts) s.peers[static_cast<std::size_t>(r)].host = std::move(h);
        if (got->loss && !s.loss) s.loss = std::move(got->loss);
        s.last_ok = now;
        s.silent.reset();
        s.store_refused = false;
      } else if (now - started >= s.config.interval) {
        if (!s.silent) s.silent = started;
      } else {
        s.store_refused = true;
      }
      s.wake.wait_for(lock, s.config.interval, wanted);
    }
    lock.unlock();
    try {
      s.store->add(counter_key(s.prefix, me), kLeftMark);
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
          if (r == s.config.rank || !p.watched || p.left || p.count == 0 || now - p.changed <= deadline) continue;
          lost += (lost.empty() ? "" : ", ") + ("rank " + std::to_string(r)) + on_host(p.host) +
                  " (no heartbeat for " + seconds(now - p.changed) + ")";
        }
        if (!lost.empty()) what = lost + (lost.find(", rank") == std::string::npos ? " is" : " are") +
                                  " lost (dead, hung or cut off from the network)";
      }
      const std::string self = "rank " + std::to_string(s.config.rank) + on_host(host_name());
      bool published = false;
      if (!what.empty() && !silent) {
        // Published for the ranks that do not watch the lost one; they end
        // with this message at their next heartbeat. Waited for at most an
        // interval and a second (the beat thread may be in a round).
        s.to_publish = what + " (seen by " + self + ")";
        s.wake.notify_all();
        published = s.wake.wait_for(lock, s.config.interval + std::chrono::seconds(1), [&s] { return s.published; });
      } else if (what.empty() && s.loss) {
        what = *s.loss;  // another rank's report
      }
      if (what.empty()) continue;
      const std::string message = "ppe::distributed: " + what + "; the deadline is " + seconds(deadline) +
                                  " (InitOptions::heartbeat_timeout, PPE_HEARTBEAT_TIMEOUT). " + self +
                                  " ends its process with exit status " + std::to_string(kLostPeerExitCode) +
                                  " so that the launcher can restart the job from its last snapshot.\n";
      lock.unlock();
      report(s.config.on_lost, message);
      // The store ends with this process when it hosts it: it stays two
      // heartbeats more, so that every rank's next round reads the report.
      if (published && s.config.store_rank == s.config.rank) std::this_thread::sleep_for(2 * s.config.interval);
      // No destructors, no atexit: the main thread is blocked in a collective
      // whose peer will never answer; files are written atomically, so the
      // last snapshot stays whole.
      std::_Exit(kLostPeerExitCode);
    }
  }

  // Hands the message to `on_lost` on a thread of its own and waits for it
  // at most kOnLostPeerBound (the process ends after either); without one,
  // writes it to stderr with write(2): the main thread may hold stdio's locks.
  static void report(const std::function<void(const std::string&)>& on_lost, const std::string& message) {
    if (on_lost) {
      try {
        auto done = std::make_shared<std::promise<void>>();
        auto returned = done->get_future();
        std::thread([on_lost, message, done] {
          try {
            on_lost(message);
          } catch (...) {
          }
          done->set_value();
        }).detach();
        returned.wait_for(kOnLostPeerBound);
      } catch (const std::system_error&) {
        // No thread to be had: the callback runs here, unbounded.
        try {
          on_lost(message);
        } catch (...) {
        }
      }
      return;
    }
    for (std::size_t done = 0; done < message.size();) {
      const ssize_t n = ::write(2, message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
  }

  std::shared_ptr<Shared> s_;
  std::thread beat_, watch_;
};

}  // namespace ppe::distributed::detail
