// Snapshots of training states of the sizes users train (issue 48, docs/snapshot.md):
// a stack of Linear layers with Adam after one step (parameters + two moments:
// 3x the parameters), saved and resumed, side by side in one run with what
// LibTorch does with the same model and optimizer and with the disk itself:
//
//   <size>/dd              `dd conv=fsync` of as many bytes as ppe's snapshot
//                          file (the disk's floor)
//   <size>/torch_save      torch::save of the model and of the optimizer, then
//                          fsync of both files
//   <size>/ppe_sync        one `snapshot()` through SimpleWriter (what the
//                          loop waits for: the state, the file, fsync, rename)
//   <size>/ppe_thread      two snapshots through ThreadWriter: `stall_s` is
//                          what the loop waits for at the second (the first
//                          write finished), `seconds` that call to the second
//                          file on disk
//   <size>/copy            copying the model's and the optimizer's tensors into
//                          copies allocated (and touched) before: the floor
//                          of an asynchronous snapshot's stall
//   <size>/torch_load      torch::load of the model and of the optimizer
//   <size>/ppe_load_file   ppe::serialization::load_file of ppe_sync's file
//                          (a State: the tensors it returns are new memory)
//   <size>/ppe_autoload    a manager with `snapshot(autoload)` starting from
//                          ppe_sync's file (model and optimizer restored)
//
// Sizes: 0.5 GB (10 x Linear(2048, 2048)), 1.6 GB (2 x Linear(8192, 8192))
// and 4.8 GB (6 x Linear(8192, 8192)); a size is skipped (said on stderr) when
// the machine has less than three times it available. Each configuration
// runs in a child process that builds the state itself (as a training
// program has it: its pages touched); the counters are the child's:
// `seconds`, `stall_s`, `extra_mib` (its peak resident memory during the
// operation over what it held before: /proc/self/clear_refs resets the
// peak), `state_gb`. The files were just written: reads come from the page
// cache, for LibTorch and ppe alike. Before anything is measured, a file of
// twice the largest state is written and removed (see main: on a virtual
// machine, the first configuration would otherwise pay for the memory's
// first use). One iteration each; files go to a
// scratch directory under the system temp directory, removed at the end.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include <ATen/ops/randn.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <ppe/ppe.hpp>
#include <ppe/serialization.hpp>
#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/writing/thread_writer.hpp>

#include "bench_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Size {
  const char* name;
  int layers;
  int width;
  double gb() const { return 3.0 * layers * (double(width) * width + width) * 4 / 1e9; }
};
constexpr Size kSizes[] = {{"0.5GB", 10, 2048}, {"1.6GB", 2, 8192}, {"4.8GB", 6, 8192}};

/// The model and Adam; `stepped`: after one step (the moments exist), else fresh (a program about to resume).
struct Training {
  torch::nn::Sequential net;
  std::unique_ptr<torch::optim::Adam> opt;
  Training(const Size& size, bool stepped) {
    for (int i = 0; i < size.layers; ++i) net->push_back(torch::nn::Linear(size.width, size.width));
    opt = std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(1e-3));
    if (!stepped) return;
    net->forward(at::randn({1, size.width})).sum().backward();
    opt->step();
    for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
  }
};

/// What a child reports.
struct Report {
  double seconds = -1, stall = -1, extra_mib = -1;
  bool ok = false;
};

long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
  return -1;
}

/// Resets the peak resident memory (VmHWM) to the current; the baseline in MiB.
double reset_peak() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
  return status_kib("VmRSS") / 1024.0;
}

/// Runs `body` (which fills the times) in a child process after `setup`;
/// the child's peak memory over its baseline is measured around `body`.
template <class Setup, class Body>
Report in_child(Setup setup, Body body) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Report r;
    try {
      auto context = setup();
      const double base = reset_peak();
      body(context, r);
      r.extra_mib = status_kib("VmHWM") / 1024.0 - base;
      r.ok = true;
    } catch (const std::exception& e) {
      std::cerr << "bench_snapshot_scale: " << e.what() << "\n";
    }
    (void)!::write(fds[1], &r, sizeof r);
    ::_exit(0);
  }
  ::close(fds[1]);
  Report r;
  const bool got = ::read(fds[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!got) r.ok = false;
  return r;
}

ppe_bench::ScratchDir& scratch() {
  static ppe_bench::ScratchDir dir("ppe_bench_snapshot_scale");
  return dir;
}

fs::path dir_for(const Size& size, const std::string& what) {
  fs::path d = scratch().path / size.name / what;
  fs::create_directories(d);
  return d;
}

void fsync_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void report(benchmark::State& state, const Report& r, const Size& size) {
  if (!r.ok) {
    state.SkipWithError("the child failed");
    return;
  }
  state.SetIterationTime(r.seconds);
  state.counters["seconds"] = r.seconds;
  if (r.stall >= 0) state.counters["stall_s"] = r.stall;
  if (r.extra_mib >= 0) state.counters["extra_mib"] = r.extra_mib;
  state.counters["state_gb"] = size.gb();
}

fs::path ppe_file(const Size& size) { return dir_for(size, "sync") / "snapshot_iter_1"; }

void BM_Dd(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const auto bytes = fs::exists(ppe_file(size)) ? fs::file_size(ppe_file(size)) : std::uintmax_t(size.gb() * 1e9);
    const std::string cmd = "dd if=/dev/zero of=" + (dir_for(size, "dd") / "dd.bin").string() +
                            " bs=1M count=" + std::to_string(bytes >> 20) + " conv=fsync status=none";
    Report r;
    const auto t0 = Clock::now();
    r.ok = std::system(cmd.c_str()) == 0;
    r.seconds = seconds_since(t0);
    fs::remove(dir_for(size, "dd") / "dd.bin");
    report(state, r, size);
  }
}

void BM_TorchSave(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const fs::path d = dir_for(size, "torch");
    const Report r = in_child([&] { return std::make_shared<Training>(size, true); },
                              [&](auto& t, Report& out) {
                                const auto t0 = Clock::now();
                                torch::save(t->net, (d / "model.pt").string());
                                torch::save(*t->opt, (d / "optimizer.pt").string());
                                fsync_file(d / "model.pt");
                                fsync_file(d / "optimizer.pt");
                                out.seconds = seconds_since(t0);
                              });
    report(state, r, size);
  }
}

template <class W>
auto snapshot_manager(Training& t, std::shared_ptr<W> writer, bool autoload) {
  return tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(1).iters_per_epoch(1000).out_dir(writer->out_dir().string()), t.net, *t.opt,
      tr::entry(ext::snapshot(ext::SnapshotOptions().writer(writer).autoload(autoload)),
                autoload ? ppe::iterations(1000) : ppe::iterations(1)));
}

void BM_PpeSync(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const fs::path d = dir_for(size, "sync");
    fs::remove_all(d);
    const Report r = in_child([&] { return std::make_shared<Training>(size, true); },
                              [&](auto& t, Report& out) {
                                auto manager = snapshot_manager(*t, std::make_shared<ppe::writing::SimpleWriter>(d), false);
                                const auto t0 = Clock::now();
                                manager.run_iteration([] {});
                                out.seconds = out.stall = seconds_since(t0);
                              });
    report(state, r, size);
  }
}

void BM_PpeThread(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const fs::path d = dir_for(size, "thread");
    fs::remove_all(d);
    const Report r = in_child([&] { return std::make_shared<Training>(size, true); },
                              [&](auto& t, Report& out) {
                                auto writer = std::make_shared<ppe::writing::ThreadWriter>(d);
                                std::mutex m;
                                std::condition_variable cv;
                                int written = 0;
                                writer->add_post_save_hook([&](const fs::path&) {
                                  std::lock_guard lock(m);
                                  ++written;
                                  cv.notify_all();
                                });
                                auto manager = snapshot_manager(*t, writer, false);
                                manager.run_iteration([] {});
                                {
                                  std::unique_lock lock(m);
                                  cv.wait(lock, [&] { return written == 1; });
                                }
                                const auto t0 = Clock::now();
                                manager.run_iteration([] {});
                                out.stall = seconds_since(t0);
                                std::unique_lock lock(m);
                                cv.wait(lock, [&] { return written == 2; });
                                out.seconds = seconds_since(t0);
                              });
    report(state, r, size);
  }
}

void BM_Copy(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const Report r = in_child(
        [&] {
          auto t = std::make_shared<Training>(size, true);
          auto live = std::make_shared<std::vector<at::Tensor>>();
          for (const auto& p : t->net->parameters()) live->push_back(p.detach());
          for (const auto& [key, st] : t->opt->state()) {
            const auto& adam = static_cast<const torch::optim::AdamParamState&>(*st);
            live->push_back(adam.exp_avg());
            live->push_back(adam.exp_avg_sq());
          }
          auto copies = std::make_shared<std::vector<at::Tensor>>();
          for (const auto& x : *live) copies->push_back(x.clone());
          return std::make_tuple(t, live, copies);
        },
        [&](auto& context, Report& out) {
          auto& [t, live, copies] = context;
          torch::NoGradGuard no_grad;
          const auto t0 = Clock::now();
          for (std::size_t i = 0; i < live->size(); ++i) (*copies)[i].copy_((*live)[i]);
          out.seconds = seconds_since(t0);
        });
    report(state, r, size);
  }
}

void BM_TorchLoad(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const fs::path d = dir_for(size, "torch");
    const Report r = in_child([&] { return std::make_shared<Training>(size, false); },
                              [&](auto& t, Report& out) {
                                const auto t0 = Clock::now();
                                torch::load(t->net, (d / "model.pt").string());
                                torch::load(*t->opt, (d / "optimizer.pt").string());
                                out.seconds = seconds_since(t0);
                              });
    report(state, r, size);
  }
}

void BM_PpeLoadFile(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const Report r = in_child([&] { return std::make_shared<Training>(size, false); },
                              [&](auto&, Report& out) {
                                const auto t0 = Clock::now();
                                const ppe::State s = ppe::serialization::load_file(ppe_file(size));
                                out.seconds = seconds_since(t0);
                                benchmark::DoNotOptimize(s.size());
                              });
    report(state, r, size);
  }
}

void BM_PpeAutoload(benchmark::State& state, Size size) {
  for (auto _ : state) {
    const fs::path d = dir_for(size, "sync");
    const Report r = in_child([&] { return std::make_shared<Training>(size, false); },
                              [&](auto& t, Report& out) {
                                auto manager = snapshot_manager(*t, std::make_shared<ppe::writing::SimpleWriter>(d), true);
                                const auto t0 = Clock::now();
                                manager.run_iteration([] {});  // starts the manager: autoload
                                out.seconds = seconds_since(t0);
                                if (manager.iteration() != 2) throw std::runtime_error("autoload did not resume");
                              });
    report(state, r, size);
  }
}

double available_gb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0 / 1e9;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const double available = available_gb();
  for (const Size& size : kSizes) {
    if (3 * size.gb() > available) {
      std::cerr << "bench_snapshot_scale: " << size.name << " skipped: " << available
                << " GB available, 3x the state needed\n";
      continue;
    }
    const std::string n = std::string("BM_SnapshotScale/") + size.name + "/";
    const std::pair<const char*, void (*)(benchmark::State&, Size)> configs[] = {
        {"ppe_sync", BM_PpeSync},       {"dd", BM_Dd},                {"torch_save", BM_TorchSave},
        {"ppe_thread", BM_PpeThread},   {"copy", BM_Copy},            {"torch_load", BM_TorchLoad},
        {"ppe_load_file", BM_PpeLoadFile},
        {"ppe_autoload", BM_PpeAutoload}};
    for (const auto& [name, fn] : configs)
      benchmark::RegisterBenchmark((n + name).c_str(), fn, size)
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kSecond);
  }
  // On a virtual machine the first use of a page of its memory costs a fault
  // in the host too (the ~0.4 GB/s of a fresh allocation here), and the page
  // cache of a new file takes such pages. A file of twice the largest state,
  // written and removed before anything is measured, leaves the memory the
  // configurations use equally warm: otherwise the first one run pays.
  double largest = 0;
  for (const Size& size : kSizes)
    if (3 * size.gb() <= available) largest = size.gb();
  const fs::path warm = scratch().path / "warm_up";
  const std::string cmd = "dd if=/dev/zero of=" + warm.string() + " bs=1M count=" +
                          std::to_string(static_cast<long>(2 * largest * 1e9) >> 20) + " conv=fsync status=none";
  if (largest > 0 && std::system(cmd.c_str()) != 0) std::cerr << "bench_snapshot_scale: the warm-up write failed\n";
  fs::remove(warm);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
