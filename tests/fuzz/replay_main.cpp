// Replays fuzz inputs without a fuzzing engine, so that every leg runs each
// target's seed corpus and every input that once failed (tests/fuzz/README.md).
// Each file under the paths given (files, or directories read recursively)
// goes once through the target's LLVMFuzzerTestOneInput, as libFuzzer would
// pass it. A crash, a sanitizer report or an exception that escapes the
// target fails the test; so does a path that holds no input. The slowest
// input and the peak resident memory are printed (not judged: speed is
// measured by the fuzzing runs, under libFuzzer's -timeout).

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::filesystem::path> inputs_under(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> found;
  if (std::filesystem::is_regular_file(root)) return {root};
  if (!std::filesystem::is_directory(root)) return found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().filename() != ".gitkeep") found.push_back(entry.path());
  std::sort(found.begin(), found.end());  // the same order on every machine
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::size_t total = 0;
  double slowest = 0;
  std::string slowest_name;
  for (int a = 1; a < argc; ++a) {
    const auto files = inputs_under(argv[a]);
    if (files.empty() && std::string(argv[a]).find("regressions") == std::string::npos) {
      // A seed corpus that lost its files would make this test pass on nothing.
      std::fprintf(stderr, "no input under %s\n", argv[a]);
      return 1;
    }
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto start = std::chrono::steady_clock::now();
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (seconds > slowest) {
        slowest = seconds;
        slowest_name = file.string();
      }
      ++total;
    }
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("replayed %zu inputs; slowest %.3f s (%s); peak resident memory %ld MiB\n", total, slowest,
              slowest_name.c_str(), usage.ru_maxrss / 1024);
  return 0;
}
