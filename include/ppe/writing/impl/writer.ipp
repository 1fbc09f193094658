// Definitions of writing/writer.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <exception>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "ppe/writing/writer.hpp"

namespace ppe::writing {

PPE_DECL SaveFn in_writing_process(SaveFn save) {
  if (!save) throw std::invalid_argument("ppe::writing::in_writing_process: the save function is empty");
  return detail::InWritingProcess{std::move(save)};
}

PPE_DECL SaveFn owned_bytes(std::string bytes) {
  auto owner = std::make_shared<const std::string>(std::move(bytes));
  const char* data = owner->data();
  const std::size_t size = owner->size();
  return detail::OwnedBytes{std::move(owner), data, size};
}

PPE_DECL SaveFn owned_bytes(std::vector<char> bytes) {
  auto owner = std::make_shared<const std::vector<char>>(std::move(bytes));
  const char* data = owner->data();
  const std::size_t size = owner->size();
  return detail::OwnedBytes{std::move(owner), data, size};
}

PPE_DECL SaveFn owned_bytes(std::shared_ptr<const std::string> bytes) {
  if (!bytes) throw std::invalid_argument("ppe::writing::owned_bytes: the buffer is null");
  const char* data = bytes->data();
  const std::size_t size = bytes->size();
  return detail::OwnedBytes{std::move(bytes), data, size};
}

PPE_DECL void Writer::initialize() {
  if (!out_dir_.empty()) create_dirs(out_dir_, out_dir_);
  initialized_ = true;
}

PPE_DECL void Writer::add_post_save_hook(PostSaveHook hook) {
  if (!hook) throw std::invalid_argument("ppe::writing::Writer::add_post_save_hook: the hook is empty");
  hooks_.push_back(std::move(hook));
}

PPE_DECL void Writer::save(const std::string& filename, const SaveFn& save_fn, bool append, Durability durability) {
  const std::filesystem::path dest = prepare(filename);
  if (append)
    append_to(dest, save_fn, durability);
  else
    replace(dest, save_fn, durability);
  run_post_save_hooks(dest);
}

PPE_DECL std::filesystem::path Writer::destination(const std::string& filename) const {
  const std::filesystem::path name(filename);
  if (filename.empty() || !name.has_filename())
    throw std::invalid_argument("ppe::writing: expected a file name, got '" + filename + "'");
  if (name.is_absolute())
    throw std::invalid_argument("ppe::writing: expected a file name relative to the writer's directory '" +
                                out_dir_.string() + "', got the absolute path '" + filename + "'");
  return out_dir_ / name;
}

PPE_DECL std::filesystem::path Writer::prepare(const std::string& filename) {
  std::filesystem::path dest = destination(filename);
  if (!initialized_) initialize();
  create_dirs(dest.parent_path(), dest);
  return dest;
}

PPE_DECL void Writer::run_post_save_hooks(const std::filesystem::path& dest) const {
  for (const auto& hook : hooks_) hook(dest);
}

PPE_DECL void Writer::create_dirs(const std::filesystem::path& dir, const std::filesystem::path& for_path) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw WriteError("ppe::writing: cannot write '" + for_path.string() + "': creating the directory '" + dir.string() +
                         "' failed: " + ec.message(),
                     for_path);
}

PPE_DECL void Writer::fail(const std::filesystem::path& dest, const std::string& step, int err) {
  throw WriteError(
      "ppe::writing: cannot write '" + dest.string() + "': " + step + " failed: " + detail::errno_text(err), dest);
}

PPE_DECL void Writer::write_content(int fd, const std::filesystem::path& dest, const std::filesystem::path& file,
                                    const SaveFn& save_fn, Durability durability) {
  detail::FdStreamBuf buf(fd);
  std::ostream os(&buf);
  try {
    save_fn(os);
  } catch (...) {
    std::throw_with_nested(
        WriteError("ppe::writing: cannot write '" + dest.string() + "': the save function threw", dest));
  }
  const bool flushed = buf.flush();
  if (buf.error()) fail(dest, "writing '" + file.string() + "'", buf.error());
  if (!flushed || !os)
    throw WriteError("ppe::writing: cannot write '" + dest.string() + "': the output stream went bad", dest);
  if (durability == Durability::Durable && ::fsync(fd) != 0) fail(dest, "fsync of '" + file.string() + "'", errno);
}

PPE_DECL void Writer::append_to(const std::filesystem::path& dest, const SaveFn& save_fn, Durability durability) {
  if (std::filesystem::is_directory(dest))
    throw WriteError("ppe::writing: cannot append to '" + dest.string() + "': it is a directory", dest);
  detail::Fd fd(::open(dest.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666));
  if (fd.get() < 0) fail(dest, "opening for append", errno);
  // Remember the size, so a failed append can be cut off again.
  struct stat st {};
  const off_t before = ::fstat(fd.get(), &st) == 0 ? st.st_size : -1;
  try {
    write_content(fd.get(), dest, dest, save_fn, durability);
  } catch (...) {
    if (before >= 0 && ::ftruncate(fd.get(), before) != 0) {
      // Nothing more to do: the original error is the one to report.
    }
    throw;
  }
  if (const int err = fd.close()) fail(dest, "closing", err);
}

PPE_DECL void Writer::replace(const std::filesystem::path& dest, const SaveFn& save_fn, Durability durability) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(dest, ec))
    throw WriteError("ppe::writing: cannot write '" + dest.string() + "': the destination is a directory", dest);
  const fs::path dir = detail::dir_of(dest);
  const fs::path tmp = detail::temp_path(dest);
  {
    detail::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (fd.get() < 0) fail(dest, "creating the temporary file '" + tmp.string() + "'", errno);
    try {
      write_content(fd.get(), dest, tmp, save_fn, durability);
      if (const int err = fd.close()) fail(dest, "closing '" + tmp.string() + "'", err);
    } catch (...) {
      fd.close();
      ::unlink(tmp.c_str());
      throw;
    }
  }
  const fs::path bak = detail::backup_path(dest);
  const bool had_dest = fs::exists(dest, ec);
  if (had_dest) {
    // A `.bak` left by an earlier crash is stale: the destination is newer.
    ::unlink(bak.c_str());
    if (::rename(dest.c_str(), bak.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      fail(dest, "renaming the old file to '" + bak.string() + "'", err);
    }
  }
  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    const int err = errno;
    if (had_dest) ::rename(bak.c_str(), dest.c_str());
    ::unlink(tmp.c_str());
    fail(dest, "renaming '" + tmp.string() + "' to it", err);
  }
  // The rename is durable only once the directory entry is on disk.
  if (durability == Durability::Durable) {
    detail::Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() >= 0) ::fsync(dfd.get());
  }
  if (had_dest) ::unlink(bak.c_str());
}

}  // namespace ppe::writing
