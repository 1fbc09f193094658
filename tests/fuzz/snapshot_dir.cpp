// Fuzz target: snapshot autoload from a directory, as a training program
// resumes: the input is split at "\n--ppe-file--\n" into up to three files,
// written as snapshot_iter_1 .. _3 (oldest first) into a fresh directory, and
// a manager with a model, an optimizer, LogReport and snapshot(autoload)
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

void write_files(std::string_view input) {
  fs::remove_all(directory());
  fs::create_directories(directory());
  constexpr std::string_view separator = "\n--ppe-file--\n";
  const auto now = fs::file_time_type::clock::now();
  for (int k = 1; k <= 3 && !input.empty(); ++k) {
    const std::size_t end = k == 3 ? std::string_view::npos : input.find(separator);
    const std::string_view part = input.substr(0, end);
    const fs::path file = directory() / ("snapshot_iter_" + std::to_string(k));
    std::ofstream(file, std::ios::binary).write(part.data(), static_cast<std::streamsize>(part.size()));
    fs::last_write_time(file, now - std::chrono::seconds(10 - k));  // snapshot_iter_3 is the newest
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + separator.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_files(std::string_view(reinterpret_cast<const char*>(data), size));
  torch::nn::Linear model(3, 2);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  try {
    auto manager = tr::ExtensionsManager(
        tr::ManagerOptions().max_epochs(1).iters_per_epoch(4).out_dir(directory().string()), model, optimizer,
        ext::LogReport(), ext::snapshot(ext::SnapshotOptions().autoload(true)));
    manager.run_iteration([] {});
  } catch (const ppe::serialization::CorruptFileError&) {  // no file reads
  } catch (const ppe::StateError&) {                       // a file holds what no State can
  } catch (const std::invalid_argument&) {                 // a file reads but does not fit the manager
  }
  return 0;
}
