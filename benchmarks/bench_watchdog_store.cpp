// The store's load from the ranks' heartbeats (ppe::distributed's watchdog,
// distributed/detail/liveness.hpp), simulated for W ranks against one real
// TCPStore on loopback (hosted in this process, as rank 0 hosts it):
//   BM_HeartbeatInterval/<W>   one heartbeat interval's store traffic of W
//                              ranks: each rank's `Liveness::round` (its beat,
//                              the counters up to the coordinator's, the loss
//                              key; the coordinator reads all W counters)
//   BM_AllPeersInterval/<W>    the same interval if every rank read every
//                              rank's counter (the watchdog before issue 41):
//                              W beats and W·(W − 1) reads
// <W> = 256 and 1024. The W ranks' operations go through 8 client
// connections on 8 threads (a real job has W connections; the store's server
// is what is measured). Counters: store_ops per interval; the time of one
// interval is the benchmark's real time: when it passes the heartbeat
// interval (1 s by default), rounds queue and a deadline of a few intervals
// takes healthy ranks for lost.
#include <benchmark/benchmark.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <ppe/detail/torch_compat/distributed.hpp>
#include <ppe/distributed/detail/liveness.hpp>

namespace {

using Liveness = ppe::distributed::detail::Liveness;

constexpr int kClients = 8;

// A store hosted here (the classic TCPStore backend: Debian's LibTorch has no
// libuv) and kClients client connections to it.
struct Stores {
  c10::intrusive_ptr<c10d::TCPStore> server;
  std::vector<c10::intrusive_ptr<c10d::Store>> clients;
  Stores() {
    c10d::TCPStoreOptions o;
    o.port = 0;  // any free one
    o.isServer = true;
    o.waitWorkers = false;
    o.timeout = std::chrono::seconds(60);
    ppe::detail::compat::choose_tcp_store_backend(o, false);
    server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o);
    o.port = server->getPort();
    o.isServer = false;
    for (int c = 0; c < kClients; ++c) clients.push_back(c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o));
  }
};

Stores& stores() {
  static Stores s;
  return s;
}

// Runs `op(client, rank)` for every rank, the ranks split over the clients'
// threads; returns the store operations done.
template <class Op>
std::int64_t each_rank(int world, Op op) {
  auto& s = stores();
  std::atomic<std::int64_t> ops{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      std::int64_t mine = 0;
      for (int r = c; r < world; r += kClients) mine += op(*s.clients[static_cast<std::size_t>(c)], r);
      ops += mine;
    });
  for (auto& t : threads) t.join();
  return ops;
}

int run = 0;

void BM_HeartbeatInterval(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const std::string prefix = "hb" + std::to_string(run++) + "/";
  const std::vector<bool> known(static_cast<std::size_t>(world), true);
  auto interval = [&](c10d::Store& store, int r) -> std::int64_t {
    const ppe::distributed::detail::Round round = Liveness::round(store, prefix, r, world, known);
    return 2 + static_cast<std::int64_t>(round.counts.size());  // the beat, the reads, the loss key's check
  };
  each_rank(world, interval);  // every rank has beaten once: the steady state
  std::int64_t ops = 0;
  for (auto _ : state) ops = each_rank(world, interval);
  state.counters["store_ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_HeartbeatInterval)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

void BM_AllPeersInterval(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const std::string prefix = "all" + std::to_string(run++) + "/";
  auto interval = [&](c10d::Store& store, int r) -> std::int64_t {
    store.add(Liveness::counter_key(prefix, r), 1);
    for (int p = 0; p < world; ++p)
      if (p != r) store.add(Liveness::counter_key(prefix, p), 0);
    return world;
  };
  std::int64_t ops = 0;
  for (auto _ : state) ops = each_rank(world, interval);
  state.counters["store_ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_AllPeersInterval)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
