// Loading a 1 GiB file of weights (16 float tensors of 64 MiB, made here in a
// temporary directory):
//   BM_LoadSafetensors/map     ppe::serialization::load_safetensors, mapped
//                              (the tensors view the file's pages)
//   BM_LoadSafetensors/read    the same file read into memory first
//   BM_TorchLoad               torch::load of the same tensors saved by
//                              torch::save (LibTorch's own archive)
// Each iteration loads in a child process and sums every tensor (so that
// every byte is read, from the page cache: the file was just written), and
// the child's peak resident memory is the counter peak_rss_mib (the parent's
// LibTorch included, about the same for all three: a fork shares it).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/serialize.h>

#include <ATen/ops/randn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <ppe/serialization/safetensors.hpp>

namespace {

namespace fs = std::filesystem;
namespace ser = ppe::serialization;

constexpr int kTensors = 16;
constexpr std::int64_t kElements = std::int64_t{16} << 20;  // 64 MiB of float each: 1 GiB in all

struct Files {
  fs::path dir, safetensors, torch_archive;
  Files() {
    dir = fs::temp_directory_path() / ("ppe_bench_safetensors_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    safetensors = dir / "weights.safetensors";
    torch_archive = dir / "weights.pt";
    ser::NamedTensors named;
    std::vector<at::Tensor> plain;
    for (int i = 0; i < kTensors; ++i) {
      at::Tensor t = at::randn({kElements});
      named.emplace_back("layer" + std::to_string(i) + ".weight", t);
      plain.push_back(t);
    }
    std::ofstream out(safetensors, std::ios::binary);
    ser::write_safetensors(out, named);
    out.close();
    torch::save(plain, torch_archive.string());
  }
  ~Files() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Files& files() {
  static Files f;
  return f;
}

// Runs `load` (returns the sum of what it loaded) in a child; the child's
// peak resident memory in MiB, or -1 when it failed.
template <class Load>
double in_child(Load load) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const double sum = load();
    ::_exit(sum == sum ? 0 : 1);  // a NaN sum: something was not read right
  }
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

double sum_all(const std::vector<at::Tensor>& tensors) {
  double s = 0;
  for (const auto& t : tensors) s += t.sum().item<double>();
  return s;
}

void BM_LoadSafetensors(benchmark::State& state) {
  const auto mapping = state.range(0) ? ser::SafetensorsMapping::Map : ser::SafetensorsMapping::Read;
  const fs::path path = files().safetensors;
  double rss = 0;
  for (auto _ : state) {
    rss = in_child([&] {
      const auto file = ser::load_safetensors(path, ser::SafetensorsReadOptions().mapping(mapping));
      std::vector<at::Tensor> tensors;
      for (const auto& [name, t] : file.tensors) tensors.push_back(t);
      return sum_all(tensors);
    });
    if (rss < 0) state.SkipWithError("the child failed");
  }
  state.counters["peak_rss_mib"] = rss;
  state.SetLabel(state.range(0) ? "map" : "read");
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(fs::file_size(path)));
}
BENCHMARK(BM_LoadSafetensors)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_TorchLoad(benchmark::State& state) {
  const fs::path path = files().torch_archive;
  double rss = 0;
  for (auto _ : state) {
    rss = in_child([&] {
      std::vector<at::Tensor> tensors;
      torch::load(tensors, path.string());
      return sum_all(tensors);
    });
    if (rss < 0) state.SkipWithError("the child failed");
  }
  state.counters["peak_rss_mib"] = rss;
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(fs::file_size(path)));
}
BENCHMARK(BM_TorchLoad)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
