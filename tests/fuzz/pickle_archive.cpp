// Fuzz target: torch.save / ppe archives through ppe::serialization::pickle_loads
// (the archive in memory) and load_file (the same bytes as a file, read
// through its directory and records with pread: the streaming reader every
// snapshot load uses). Every tensor read is copied whole, so that a tensor
// reaching past its storage is read (and ASan sees it). A sealed archive
// (ppe's own) is also read with its seal removed: mutations of ppe's files
// then reach the reader behind the checksum.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include <ppe/serialization/pickle.hpp>

namespace {

void touch(const ppe::State& s) {
  switch (s.kind()) {
    case ppe::State::Kind::Tensor: (void)s.as_tensor().clone(); break;
    case ppe::State::Kind::List:
      for (const auto& item : s.as_list()) touch(item);
      break;
    case ppe::State::Kind::Dict:
      for (const auto& [key, value] : s.as_dict()) touch(value);
      break;
    default: break;
  }
}

/// The bytes as a file (in memory: a memfd), for load_file.
void load_as_file(const std::vector<char>& bytes) {
  const int fd = ::memfd_create("pickle_archive", MFD_CLOEXEC);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  try {
    if (done == bytes.size()) touch(ppe::serialization::load_file("/proc/self/fd/" + std::to_string(fd)));
  } catch (const ppe::serialization::CorruptFileError&) {
  } catch (const ppe::StateError&) {
  }
  ::close(fd);
}

void load(const std::vector<char>& bytes) {
  try {
    touch(ppe::serialization::pickle_loads(bytes, "the fuzz input"));
  } catch (const ppe::serialization::CorruptFileError&) {
  } catch (const ppe::StateError&) {
  }
  load_as_file(bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<char> bytes(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  load(bytes);
  // ppe's seal: the zip comment "ppe-crc32:" and 8 hex digits, its length just before it.
  constexpr std::string_view tag = "ppe-crc32:";
  constexpr std::size_t seal = 18;
  if (size >= 22 + seal && std::string_view(bytes.data() + size - seal, tag.size()) == tag) {
    bytes.resize(size - seal);
    bytes[bytes.size() - 2] = 0;
    bytes[bytes.size() - 1] = 0;
    load(bytes);
  }
  return 0;
}
