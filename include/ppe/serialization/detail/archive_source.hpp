#pragma once
/// \file
/// `detail::ArchiveSource`: the bytes of an archive being read, by offset:
/// a buffer in memory (`pickle_loads`) or an open file (`load_file`), so
/// that one reader serves both and a file is never read whole into memory:
/// the reader takes its directory and its program first (small), then reads
/// each record once, into the storage that keeps it.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

class ArchiveSource {
 public:
  explicit ArchiveSource(std::string name) : name_(std::move(name)) {}
  ArchiveSource(const ArchiveSource&) = delete;
  ArchiveSource& operator=(const ArchiveSource&) = delete;
  virtual ~ArchiveSource() = default;

  /// What it is, for messages (a file's path).
  const std::string& name() const noexcept { return name_; }
  /// Its size in bytes.
  virtual std::uint64_t size() const noexcept = 0;
  /// Copies the `n` bytes at `offset` (within `size()`) to `out`. A file
  /// that holds fewer bytes than when it was opened (another program cut it
  /// meanwhile) is a CorruptFileError naming it; a read error a
  /// std::system_error naming it.
  virtual void read(std::uint64_t offset, void* out, std::size_t n) const = 0;
  /// The `n` bytes at `offset` (within `size()`) copied into a string.
  std::string bytes(std::uint64_t offset, std::size_t n) const;

 private:
  std::string name_;
};

/// Bytes in memory, not owned.
class MemorySource final : public ArchiveSource {
 public:
  MemorySource(const char* data, std::size_t size, std::string name)
      : ArchiveSource(std::move(name)), data_(data), size_(size) {}
  std::uint64_t size() const noexcept override { return size_; }
  void read(std::uint64_t offset, void* out, std::size_t n) const override;

 private:
  const char* data_;
  std::size_t size_;
};

/// A file, open for reading while the source lives. Its size is taken when
/// it is opened. Opening a missing file, a directory or one that cannot be
/// read is a std::system_error naming it (as detail::read_file).
class FileSource final : public ArchiveSource {
 public:
  explicit FileSource(const std::filesystem::path& path);
  ~FileSource() override;
  std::uint64_t size() const noexcept override { return size_; }
  void read(std::uint64_t offset, void* out, std::size_t n) const override;
  /// Whether it is a regular file (a pipe or a device is read whole first:
  /// `pread` needs a file).
  static bool is_regular(const std::filesystem::path& path);

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/archive_source.ipp"
#endif
