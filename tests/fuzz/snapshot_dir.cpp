// Fuzz target: snapshot autoload from a directory, as a training program
// resumes. An input that starts with "sharded\n" is the rest of it in the
// sharded layout: split at "\n--ppe-file--\n" into up to three files, written
// as snapshot_iter_1/0 .. /2, the shards of one complete snapshot (its
// "complete" marker beside them), and the manager's snapshot is sharded
// (saver_rank 0, one rank: it reads shard 0). Any other input is split the
// same way into snapshot_iter_1 .. _3 (oldest first) in a fresh directory. A
// manager with a model, an optimizer, LogReport and snapshot(autoload)
// starts there: it loads the newest file that reads and fits, or refuses
// with the errors autoload documents (docs/snapshot.md, docs/resume.md).

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <torch/torch.h>

#include <ppe/ppe.hpp>

namespace {

namespace fs = std::filesystem;
namespace tr = ppe::training;
namespace ext = tr::extensions;

const fs::path& directory() {
  static const fs::path dir = fs::temp_directory_path() / ("ppe_fuzz_snapshot_dir." + std::to_string(::getpid()));
  return dir;
}

constexpr std::string_view kSharded = "sharded\n";

// Writes the input's files; true for the sharded layout.
bool write_files(std::string_view input) {
  fs::remove_all(directory());
  fs::create_directories(directory());
  const bool sharded = input.starts_with(kSharded);
  if (sharded) {
    input.remove_prefix(kSharded.size());
    fs::create_directories(directory() / "snapshot_iter_1");
    std::ofstream(directory() / "snapshot_iter_1" / "complete");
  }
  constexpr std::string_view separator = "\n--ppe-file--\n";
  const auto now = fs::file_time_type::clock::now();
  for (int k = 1; k <= 3 && !input.empty(); ++k) {
    const std::size_t end = k == 3 ? std::string_view::npos : input.find(separator);
    const std::string_view part = input.substr(0, end);
    const fs::path file = sharded ? directory() / "snapshot_iter_1" / std::to_string(k - 1)
                                  : directory() / ("snapshot_iter_" + std::to_string(k));
    std::ofstream(file, std::ios::binary).write(part.data(), static_cast<std::streamsize>(part.size()));
    if (!sharded) fs::last_write_time(file, now - std::chrono::seconds(10 - k));  // snapshot_iter_3 is the newest
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + separator.size());
  }
  return sharded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool sharded = write_files(std::string_view(reinterpret_cast<const char*>(data), size));
  torch::nn::Linear model(3, 2);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  try {
    auto manager = tr::ExtensionsManager(
        tr::ManagerOptions().max_epochs(1).iters_per_epoch(4).out_dir(directory().string()), model, optimizer,
        ext::LogReport(), ext::snapshot(sharded ? ext::SnapshotOptions().autoload(true).sharded(true).saver_rank(0)
                              : ext::SnapshotOptions().autoload(true)));
    manager.run_iteration([] {});
  } catch (const ppe::serialization::CorruptFileError&) {  // no file reads
  } catch (const ppe::StateError&) {                       // a file holds what no State can
  } catch (const std::invalid_argument&) {                 // a file reads but does not fit the manager
  }
  return 0;
}
