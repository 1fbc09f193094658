// Fuzz target of the gzipped IDX reader (ppe/dataset/idx_file.hpp) as
// FashionMNIST uses it: the bytes are a file on disk (the reader takes a path,
// and the file's size bounds what its header may declare), opened as labels
// (magic 2049) and as images (magic 2051), read into a tensor with
// read_idx_bytes and checked to the end with finish(). Only DatasetFileError
// may escape the reader (tests/fuzz/README.md).
//
// Each input is read twice: as the file itself (mutations of the gzip stream:
// truncation, members, checksums) and gzipped here (mutations of the IDX
// content: a mutated byte of a gzip file rarely survives inflation as a
// plausible IDX header, so the header's checks would see little otherwise).

#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <ppe/dataset/fashion_mnist.hpp>

namespace {

/// One file per process, rewritten for every input: parallel fuzzing jobs
/// (-jobs, -fork) must not share it.
const std::string& input_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string p = (dir && *dir) ? dir : "/tmp";
    p += "/ppe_fuzz_idx_file_" + std::to_string(::getpid()) + ".gz";
    std::atexit([] { std::remove(input_path().c_str()); });
    return p;
  }();
  return path;
}

/// `data` as one gzip member (zlib's default level).
std::vector<std::uint8_t> gzipped(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(size)));
  z.next_in = const_cast<Bytef*>(data);  // zlib's API is not const-correct; it does not write
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void write_input(const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(input_path().c_str(), "wb");
  if (!f) std::abort();  // not the reader's fault: stop rather than fuzz nothing
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

/// What FashionMNIST does with one file: header, data into a tensor, finish.
/// `partial`: only half of the entries are kept, as with its `limit`, so that
/// finish() inflates and discards the rest.
void read_like_fashion_mnist(std::int64_t magic, bool partial) {
  try {
    ppe::dataset::IdxReader reader(input_path(), magic);
    const std::int64_t entries = reader.header().dims.at(0);
    const std::int64_t count = partial ? entries / 2 : entries;
    const at::Tensor bytes = ppe::dataset::read_idx_bytes(reader, count);
    reader.finish();
    // Touch the data as the dataset does (its labels check reads every byte).
    if (bytes.numel() > 0) (void)bytes.max().item<std::uint8_t>();
  } catch (const ppe::dataset::DatasetFileError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool partial = size % 2 == 1;  // either way, chosen by the input itself
  write_input(data, size);
  read_like_fashion_mnist(2049, partial);
  read_like_fashion_mnist(2051, partial);
  const std::vector<std::uint8_t> gz = gzipped(data, size);
  write_input(gz.data(), gz.size());
  read_like_fashion_mnist(2049, partial);
  read_like_fashion_mnist(2051, partial);
  return 0;
}
