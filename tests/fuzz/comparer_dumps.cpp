// Fuzz target: the comparer reading two saved runs (PPE's `add_dump`), as a
// user compares a run against dumps that another program wrote. The input is
// split at "\n--ppe-file--\n" into up to eight files; each part is a file
// name (its first line: letters, digits and '_' are kept, anything else
// becomes '_') and the file's bytes (the rest). Parts alternate between the
// directories of run "a" and run "b"; `compare()` replays both: file names
// parsed as comparison points, each file through `load_file`, its values as
// tensors, compared point by point.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ppe/utils/comparer.hpp>

namespace {

namespace fs = std::filesystem;

const fs::path& directory() {
  static const fs::path dir = fs::temp_directory_path() / ("ppe_fuzz_comparer_dumps." + std::to_string(::getpid()));
  return dir;
}

std::string file_name(std::string_view line) {
  std::string name(line.substr(0, 96));
  for (char& c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  return name.empty() ? "_" : name;
}

void write_files(std::string_view input) {
  fs::remove_all(directory());
  fs::create_directories(directory() / "a");
  fs::create_directories(directory() / "b");
  constexpr std::string_view separator = "\n--ppe-file--\n";
  for (int k = 0; k < 8 && !input.empty(); ++k) {
    const std::size_t end = k == 7 ? std::string_view::npos : input.find(separator);
    const std::string_view part = input.substr(0, end);
    const std::size_t newline = part.find('\n');
    const std::string_view body = newline == std::string_view::npos ? std::string_view() : part.substr(newline + 1);
    const fs::path file = directory() / (k % 2 == 0 ? "a" : "b") / file_name(part.substr(0, newline));
    std::ofstream(file, std::ios::binary).write(body.data(), static_cast<std::streamsize>(body.size()));
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + separator.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_files(std::string_view(reinterpret_cast<const char*>(data), size));
  namespace cmp = ppe::utils::comparer;
  cmp::Comparer comparer;
  comparer.add_dump("a", (directory() / "a").string());
  comparer.add_dump("b", (directory() / "b").string());
  try {
    comparer.compare();
  } catch (const cmp::ComparisonError&) {  // the runs differ at a point
  } catch (const std::runtime_error&) {     // a file does not read (CorruptFileError, StateError), a name
                                           // that is no comparison point, runs reaching different points
  } catch (const std::invalid_argument&) {  // a value that is no tensor
  }
  return 0;
}
