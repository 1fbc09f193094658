#pragma once
/// \file
/// Internals of the process writers: content serialised in the parent, and a
/// forked child that only writes those bytes to the destination with the
/// same atomic steps as `Writer::save`, then exits.
///
/// After `fork()` in a multithreaded process the child has one thread, and
/// any lock another thread held (the allocator's, a stream's) stays locked
/// forever; only async-signal-safe functions may be called. So the parent
/// prepares everything (paths as C strings, the bytes), and the child uses
/// nothing but `open`, `write`, `fsync`, `close`, `stat`, `rename`, `unlink`,
/// `ftruncate` and `_exit`. It reports the step that failed and its `errno`
/// through a pipe; the parent turns that into a `WriteError`.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <utility>

#include "ppe/writing/writer.hpp"

namespace ppe::writing::detail {

/// A stream buffer appending to a string: where a `SaveFn` is run to
/// serialise the content in the parent.
class StringSink : public std::streambuf {
 public:
  explicit StringSink(std::string& out) : out_(out) {}

 protected:
  int_type overflow(int_type ch) override {
    if (!traits_type::eq_int_type(ch, traits_type::eof())) out_.push_back(traits_type::to_char_type(ch));
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  std::string& out_;
};

/// One write for a child: prepared in the parent, read-only in the child.
struct ChildJob {
  std::filesystem::path dest;
  std::string dest_s, tmp_s, bak_s, dir_s;
  std::shared_ptr<const void> owner;  // keeps `data` alive until the child is reaped
  const char* data = nullptr;
  std::size_t size = 0;
  SaveFn stream;  // or the content, written by the child (`in_writing_process`)
  bool append = false;
  off_t size_before = -1;  // append: the length to cut a failed append back to
};

/// The steps a child can fail at (reported through the pipe with `errno`).
enum ChildStep : int {
  kChildOk = 0,
  kChildIsDirectory,
  kChildOpenTemp,
  kChildOpenAppend,
  kChildWrite,
  kChildFsync,
  kChildClose,
  kChildRenameOld,
  kChildRenameNew,
  kChildSaveFn,
};

struct ChildReport {
  int step = -1;
  int err = 0;
};

/// Serialises `save_fn` into an owned buffer in the calling thread (this is
/// the owned copy of the state), or takes the buffer of an `owned_bytes` as
/// it is. A throwing `SaveFn` is a `WriteError` naming `dest`, with the
/// exception nested.
inline std::shared_ptr<ChildJob> make_child_job(std::filesystem::path dest, const SaveFn& save_fn, bool append) {
  auto job = std::make_shared<ChildJob>();
  if (const auto* bytes = save_fn.target<OwnedBytes>()) {
    job->owner = bytes->owner;
    job->data = bytes->data;
    job->size = bytes->size;
  } else if (const auto* in_child = save_fn.target<InWritingProcess>()) {
    job->stream = in_child->save;  // it owns its data; the child runs it
  } else {
    auto buffer = std::make_shared<std::string>();
    StringSink sink(*buffer);
    std::ostream os(&sink);
    try {
      save_fn(os);
    } catch (...) {
      std::throw_with_nested(
          WriteError("ppe::writing: cannot write '" + dest.string() + "': the save function threw", dest));
    }
    if (!os) throw WriteError("ppe::writing: cannot write '" + dest.string() + "': the output stream went bad", dest);
    job->data = buffer->data();
    job->size = buffer->size();
    job->owner = std::move(buffer);
  }
  job->dest_s = dest.string();
  job->tmp_s = temp_path(dest).string();
  job->bak_s = backup_path(dest).string();
  job->dir_s = dir_of(dest).string();
  job->append = append;
  job->dest = std::move(dest);
  return job;
}

/// Writes `n` bytes, retrying short and interrupted writes. Async-signal-safe.
inline bool child_write_all(int fd, const char* p, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// Writes the job's content into `fd`: its bytes, or what its save function
/// streams (a step and an errno on failure, else kChildOk). The save
/// function is C++ run in the child of a process that may have threads:
/// glibc's `fork` leaves `malloc` usable there, and the save functions ppe
/// gives (a staged state streamed by serialization::write_pickle) take no
/// other lock.
inline std::pair<int, int> child_write_content(int fd, const ChildJob& job) noexcept {
  if (!job.stream) return child_write_all(fd, job.data, job.size) ? std::pair{kChildOk, 0} : std::pair{kChildWrite, errno};
  try {
    FdStreamBuf buf(fd, std::size_t{1} << 20);
    std::ostream os(&buf);
    job.stream(os);
    const bool flushed = buf.flush();
    if (buf.error()) return {kChildWrite, buf.error()};
    if (!flushed || !os) return {kChildWrite, EIO};
    return {kChildOk, 0};
  } catch (...) {
    return {kChildSaveFn, 0};
  }
}

/// Reports `step` (and `err`) to the parent and ends the child.
[[noreturn]] inline void child_exit(int report_fd, int step, int err) noexcept {
  const ChildReport r{step, err};
  child_write_all(report_fd, reinterpret_cast<const char*>(&r), sizeof r);
  ::_exit(step == kChildOk ? 0 : 1);
}

/// The child: only async-signal-safe calls from here to `_exit`, but for a
/// save function it runs (child_write_content).
[[noreturn]] inline void child_main(const ChildJob& job, int report_fd) noexcept {
  if (job.append) {
    const int fd = ::open(job.dest_s.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) child_exit(report_fd, kChildOpenAppend, errno);
    if (const auto [step, err] = child_write_content(fd, job); step != kChildOk) {
      if (job.size_before >= 0 && ::ftruncate(fd, job.size_before) != 0) {
        // The write error is the one to report.
      }
      child_exit(report_fd, step, err);
    }
    if (::fsync(fd) != 0) child_exit(report_fd, kChildFsync, errno);
    if (::close(fd) != 0) child_exit(report_fd, kChildClose, errno);
    child_exit(report_fd, kChildOk, 0);
  }

  struct stat st {};
  if (::stat(job.dest_s.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) child_exit(report_fd, kChildIsDirectory, EISDIR);
  const int fd = ::open(job.tmp_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) child_exit(report_fd, kChildOpenTemp, errno);
  auto [step, err] = child_write_content(fd, job);
  if (step == kChildOk && ::fsync(fd) != 0) {
    step = kChildFsync;
    err = errno;
  }
  if (step != kChildOk) {
    ::close(fd);
    ::unlink(job.tmp_s.c_str());
    child_exit(report_fd, step, err);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(job.tmp_s.c_str());
    child_exit(report_fd, kChildClose, err);
  }
  // A `.bak` left by an earlier crash is stale: the destination is newer.
  ::unlink(job.bak_s.c_str());
  const bool had_dest = ::rename(job.dest_s.c_str(), job.bak_s.c_str()) == 0;
  if (!had_dest && errno != ENOENT) {
    const int err = errno;
    ::unlink(job.tmp_s.c_str());
    child_exit(report_fd, kChildRenameOld, err);
  }
  if (::rename(job.tmp_s.c_str(), job.dest_s.c_str()) != 0) {
    const int err = errno;
    if (had_dest) ::rename(job.bak_s.c_str(), job.dest_s.c_str());
    ::unlink(job.tmp_s.c_str());
    child_exit(report_fd, kChildRenameNew, err);
  }
  // The rename is durable only once the directory entry is on disk.
  const int dfd = ::open(job.dir_s.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  if (had_dest) ::unlink(job.bak_s.c_str());
  child_exit(report_fd, kChildOk, 0);
}

/// A started child and the job it writes.
struct Child {
  pid_t pid = -1;
  int report_fd = -1;
  std::shared_ptr<ChildJob> job;
};

/// Forks the child for `job`. `WriteError` when no pipe or process can be made.
inline Child start_child(std::shared_ptr<ChildJob> job) {
  if (job->append) {
    // Measured here, not in the child, so that the parent can also undo the
    // append of a child that was killed half-way.
    struct stat st {};
    job->size_before = ::stat(job->dest_s.c_str(), &st) == 0 ? st.st_size : -1;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw WriteError("ppe::writing: cannot write '" + job->dest_s +
                         "': creating the pipe to the writing process failed: " + errno_text(errno),
                     job->dest);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw WriteError("ppe::writing: cannot write '" + job->dest_s +
                         "': starting the writing process (fork) failed: " + errno_text(err),
                     job->dest);
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(*job, fds[1]);
  }
  ::close(fds[1]);
  return Child{pid, fds[0], std::move(job)};
}

/// What failed, in words, for a step a child reported.
inline std::string child_step_text(const ChildJob& job, int step) {
  switch (step) {
    case kChildIsDirectory: return "the destination is a directory";
    case kChildOpenTemp: return "creating the temporary file '" + job.tmp_s + "' failed";
    case kChildOpenAppend: return "opening for append failed";
    case kChildWrite: return "writing '" + (job.append ? job.dest_s : job.tmp_s) + "' failed";
    case kChildFsync: return "fsync of '" + (job.append ? job.dest_s : job.tmp_s) + "' failed";
    case kChildClose: return "closing '" + (job.append ? job.dest_s : job.tmp_s) + "' failed";
    case kChildRenameOld: return "renaming the old file to '" + job.bak_s + "' failed";
    case kChildRenameNew: return "renaming '" + job.tmp_s + "' to it failed";
    case kChildSaveFn: return "the save function threw in the writing process";
    default: return "the writing process reported an unknown step " + std::to_string(step);
  }
}

/// Puts things back after a child that did not report success (it may have
/// been killed at any point): the temporary file goes, an old file parked as
/// `.bak` comes back, a half-done append is cut off.
inline void undo_child(const ChildJob& job) noexcept {
  if (job.append) {
    if (job.size_before >= 0 && ::truncate(job.dest_s.c_str(), job.size_before) != 0) {
      // Best effort: the child's failure is the error to report.
    }
    return;
  }
  ::unlink(job.tmp_s.c_str());
  struct stat st {};
  if (::stat(job.dest_s.c_str(), &st) != 0 && errno == ENOENT && ::stat(job.bak_s.c_str(), &st) == 0)
    ::rename(job.bak_s.c_str(), job.dest_s.c_str());
}

/// Waits for the child and returns normally if it wrote the file; otherwise
/// cleans up after it and throws a `WriteError` naming the file.
inline void finish_child(Child& child) {
  ChildReport report;
  std::size_t got = 0;
  auto* p = reinterpret_cast<char*>(&report);
  // Blocks until the child reported or its end of the pipe closed (it exited).
  while (got < sizeof report) {
    const ssize_t r = ::read(child.report_fd, p + got, sizeof report - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(child.report_fd);
  child.report_fd = -1;
  int status = 0;
  pid_t waited = -1;
  do {
    waited = ::waitpid(child.pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  const int wait_err = waited < 0 ? errno : 0;
  const ChildJob& job = *child.job;
  const bool reported = got == sizeof report;
  // The report decides: it is there even when the exit status is lost (an
  // application that ignores SIGCHLD has its children reaped for it).
  if (reported && report.step == kChildOk) return;
  undo_child(job);
  std::string why;
  if (reported)
    why = child_step_text(job, report.step) +
          (report.step == kChildIsDirectory || report.step == kChildSaveFn ? "" : ": " + errno_text(report.err));
  else if (waited < 0)
    why = "the writing process (pid " + std::to_string(child.pid) +
          ") ended without reporting, and its exit status is unknown: waitpid failed: " + errno_text(wait_err);
  else if (WIFSIGNALED(status)) {
    const char* name = ::sigdescr_np(WTERMSIG(status));  // thread-safe, unlike strsignal
    why = "the writing process (pid " + std::to_string(child.pid) + ") was killed by signal " +
          std::to_string(WTERMSIG(status)) + (name ? std::string(" (") + name + ")" : std::string());
  }
  else
    why = "the writing process (pid " + std::to_string(child.pid) + ") exited with status " +
          std::to_string(WEXITSTATUS(status)) + " without reporting";
  throw WriteError("ppe::writing: cannot write '" + job.dest_s + "': " + why, job.dest);
}

}  // namespace ppe::writing::detail
