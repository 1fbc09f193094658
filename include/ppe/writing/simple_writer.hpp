#pragma once
/// \file
/// `ppe::writing::SimpleWriter`: the synchronous writer (PPE's
/// `ppe.writing.SimpleWriter`), and the manager's default writer.

#include <filesystem>
#include <string>
#include <utility>

#include "ppe/writing/writer.hpp"

namespace ppe::writing {

/// Writes in the calling thread: when the call returns, the file is complete
/// and on disk (fsync'ed), and the post-save hooks have run.
///
/// Logs (`write_log`, LogReport's emissions) are the exception: replaced or
/// appended as atomically, but not fsync'ed, as PPE's SimpleWriter never
/// does. The training thread then does not wait for the disk at each
/// emission (an fsync costs about a millisecond, more than a thousand tiny
/// steps' worth of the loop's own cost); a process that dies still leaves a
/// whole file, and only a crash of the machine can lose the latest entries.
/// Snapshots and every other file are fsync'ed.
///
/// PPE's `savefun` and its keyword arguments have no counterpart: the content
/// comes with each call as a `SaveFn`.
class SimpleWriter : public Writer {
 public:
  /// Files go under `out_dir` (created on the first write).
  explicit SimpleWriter(std::filesystem::path out_dir = {}) : Writer(std::move(out_dir)) {}

  void operator()(const std::string& filename, SaveFn save_fn, bool append = false) override {
    save(filename, save_fn, append);
  }

  void write_log(const std::string& filename, SaveFn save_fn, bool append,
                 const reporting::LogEntry& /*latest*/) override {
    save(filename, save_fn, append, Durability::Atomic);
  }

  WriteMode write_mode() const noexcept override { return WriteMode::Synchronous; }
};

}  // namespace ppe::writing
