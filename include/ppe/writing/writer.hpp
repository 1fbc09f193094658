#pragma once
/// \file
/// `ppe::writing::Writer`: the base class of everything that puts a file under
/// an output directory (PPE's `ppe.writing.Writer`), with the atomic write that
/// every writer shares, and the `ppe::writing::writer` concept.
///
/// A non-append write goes to `tmp_<name>` in the destination's directory,
/// which is flushed and fsync'ed; an existing destination is renamed to
/// `<name>.bak`, the temporary file renamed to the destination, the directory
/// fsync'ed, and only then the `.bak` removed (PPE's sequence, so that a crash
/// leaves either the old or the new file, never a torn one). Any failure
/// leaves the previous file as it was and no temporary file behind, and raises
/// a `WriteError` naming the path and the step that failed.
///
/// Ownership rule for asynchronous writers (`ThreadWriter`, `ThreadQueueWriter`,
/// `ProcessWriter`, `ProcessQueueWriter`): the `SaveFn` given to a call must own
/// everything it writes (capture by value: an owned copy of the state, e.g.
/// cloned tensors), because it may run after the call returned, while the
/// caller keeps training. A `SaveFn` that captures by reference would write
/// whatever the data holds when it runs, i.e. later optimizer steps could leak
/// into the snapshot. `owned_bytes` covers the common case of content already
/// serialised into a buffer.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <concepts>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/detail/fd_streambuf.hpp"

namespace ppe::reporting {
class LogEntry;  // ppe/reporting/log_entry.hpp; only a reference passes through here
}  // namespace ppe::reporting

namespace ppe::writing {

/// Writes the content of one file into the stream it is given. It must own the
/// data it writes: writers may run it after their call returned (on another
/// thread, for asynchronous writers). Process writers run it in the calling
/// thread, into a buffer, before they return.
using SaveFn = std::function<void(std::ostream&)>;

/// Called with the path of every file a writer has written (after the write
/// is complete), e.g. to delete old snapshots.
using PostSaveHook = std::function<void(const std::filesystem::path&)>;

/// A failed write: the message names the path and the step that failed. When
/// the save function threw, its exception is nested (`std::rethrow_if_nested`).
class WriteError : public std::runtime_error {
 public:
  WriteError(const std::string& what, std::filesystem::path path) : std::runtime_error(what), path_(std::move(path)) {}
  /// The file that could not be written.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

namespace detail {

/// The function object behind `owned_bytes`. A named type so that process
/// writers can recognise it (`SaveFn::target`) and hand the bytes to the
/// writing process without running it into a second buffer.
struct OwnedBytes {
  std::shared_ptr<const void> owner;  // keeps `data` alive
  const char* data = nullptr;
  std::size_t size = 0;
  void operator()(std::ostream& os) const { os.write(data, static_cast<std::streamsize>(size)); }
};

/// The function object behind `in_writing_process`: recognised by process
/// writers (`SaveFn::target`), which run it in the writing process.
struct InWritingProcess {
  SaveFn save;
  void operator()(std::ostream& os) const { save(os); }
};

}  // namespace detail

/// `save`, to be run where the file is written: a process writer
/// (`ProcessWriter`, `ProcessQueueWriter`) runs it in its writing process,
/// into the file, instead of serialising it into a buffer in the caller
/// first; other writers run it as any `SaveFn`. Its data must be owned and
/// stay unchanged until the write is complete (the writing process reads
/// them through the pages `fork` shares). What asynchronous snapshots give
/// every asynchronous writer: a staged copy of the state
/// (serialization/staging.hpp) and the function that streams it.
PPE_DECL SaveFn in_writing_process(SaveFn save);

/// A `SaveFn` that writes `bytes` as they are. It owns them (moved in, no
/// copy), so it satisfies the ownership rule of asynchronous writers.
PPE_DECL SaveFn owned_bytes(std::string bytes);

/// `owned_bytes` for a byte vector (what `ppe::serialization::pickle_dumps` returns).
PPE_DECL SaveFn owned_bytes(std::vector<char> bytes);

/// `owned_bytes` sharing an immutable buffer (e.g. one snapshot written to
/// several places). A null pointer is `std::invalid_argument`.
PPE_DECL SaveFn owned_bytes(std::shared_ptr<const std::string> bytes);

namespace detail {

using ppe::detail::FdStreamBuf;

inline std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

/// The directory holding `dest` ("." for a bare name): where its temporary
/// file goes and which is fsync'ed after the rename.
inline std::filesystem::path dir_of(const std::filesystem::path& dest) {
  return dest.has_parent_path() ? dest.parent_path() : std::filesystem::path(".");
}
/// `tmp_<name>` next to `dest`: the file a replacing write goes to first.
inline std::filesystem::path temp_path(const std::filesystem::path& dest) {
  return dir_of(dest) / ("tmp_" + dest.filename().string());
}
/// `<dest>.bak`: where the previous file waits while the new one is renamed in.
inline std::filesystem::path backup_path(const std::filesystem::path& dest) {
  return std::filesystem::path(dest.string() + ".bak");
}

/// Closes a descriptor once (destructor or `close()`), reporting close errors.
class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }
  /// 0, or the errno of a failed close.
  int close() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd >= 0 && ::close(fd) != 0 ? errno : 0;
  }

 private:
  int fd_;
};

}  // namespace detail

/// What a writer does with the `SaveFn` of a call, so that a caller holding
/// a plain `Writer&` can hand it data the cheapest way that is still safe
/// (`Snapshot` does).
enum class WriteMode {
  /// The save function runs before the call returns (`SimpleWriter`), so it
  /// may read live data.
  Synchronous,
  /// The save function runs into a buffer before the call returns, and the
  /// buffer is written later (`ProcessWriter`, `ProcessQueueWriter`): give it
  /// `owned_bytes` of serialised content, which is taken as it is instead of
  /// being run into a second buffer.
  OwnedBytes,
  /// The save function may run after the call returned, on another thread
  /// (`ThreadWriter`, `ThreadQueueWriter`, and any writer that does not say
  /// otherwise): it must own a copy of its data.
  Deferred,
};

/// Base class of writers. A writer owns an output directory; file names given
/// to it are relative to that directory and may contain sub-directories.
///
/// Differences from PPE: the call takes no `out_dir` argument (PPE ignores
/// it: files always go to the writer's own directory), the content is a
/// `SaveFn` writing to a stream instead of a `(target, savefun)` pair, and
/// post-save hooks receive the written path.
class Writer {
 public:
  /// `out_dir` is created on the first write (or by `initialize()`); an empty
  /// path means the current directory.
  explicit Writer(std::filesystem::path out_dir = {}) : out_dir_(std::move(out_dir)) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  virtual ~Writer() = default;

  /// The directory every file of this writer goes to.
  const std::filesystem::path& out_dir() const noexcept { return out_dir_; }

  /// Gives a writer made without a directory (an empty `out_dir`) the
  /// directory `dir`, so that it writes there instead of the current
  /// directory; the manager does this for the writers handed to extensions
  /// (`Manager::writer_for`). No effect on a writer with a directory of its
  /// own or one that already wrote (or was initialized). Call it before the
  /// writer's first write. Returns whether the directory was adopted.
  bool adopt_out_dir(const std::filesystem::path& dir) {
    if (!out_dir_.empty() || dir.empty() || initialized_) return false;
    out_dir_ = dir;
    return true;
  }

  /// Creates the output directory (and its parents) if missing.
  void initialize();
  bool initialized() const noexcept { return initialized_; }

  /// Writes `filename` (relative to `out_dir()`) with the content `save`
  /// produces: replaced atomically, or appended to when `append` is true.
  virtual void operator()(const std::string& filename, SaveFn save, bool append = false) = 0;

  /// Writes a log (LogReport calls this): `filename` with the content `save`
  /// produces, where `latest` is the entry just added to the log. A file
  /// writer writes the file (`operator()`, the default); a writer of another
  /// sink overrides it and writes `latest` its own way (TensorBoardWriter:
  /// its scalars, ignoring the file).
  virtual void write_log(const std::string& filename, SaveFn save, bool append,
                         const reporting::LogEntry& /*latest*/) {
    (*this)(filename, std::move(save), append);
  }

  /// When the writer runs the `SaveFn` of a call (see WriteMode). Writers
  /// that run it before the call returns override this; the default is the
  /// safe assumption for any other writer.
  virtual WriteMode write_mode() const noexcept { return WriteMode::Deferred; }

  /// Makes what was written so far readable, without ending the writer
  /// (LogReport calls it when training fails). File writers have nothing to
  /// do: each write is complete, or queued to be, when the call returns.
  virtual void flush() {}

  /// Waits for pending writes (asynchronous writers). Idempotent; a writer
  /// that never wrote has nothing to do and does not throw.
  virtual void finalize() {}

  /// Blocks until every write handed to the writer so far is complete (its
  /// post-save hooks run), without ending the writer; throws a failed write's
  /// `WriteError` as the next call would. Nothing to wait for in writers that
  /// write before their call returns (the default).
  virtual void wait() {}

  /// Registers a hook run after every completed write, with the written path.
  /// Asynchronous writers run hooks on their worker thread (process writers:
  /// in this process, once the writing process succeeded); register hooks
  /// before the first write.
  void add_post_save_hook(PostSaveHook hook);

 protected:
  /// How far `save` goes: `Durable` fsyncs the file (and after a rename its
  /// directory), so that the write survives a crash of the machine; `Atomic`
  /// only makes it whole for every reader (temporary file and rename, or an
  /// append undone on failure), which survives the process dying.
  enum class Durability { Durable, Atomic };

  /// The write every writer shares (PPE's `Writer.save`): creates the
  /// directories, writes `filename` atomically (or appends), then runs the
  /// post-save hooks. Synchronous; asynchronous writers call it from their
  /// worker.
  void save(const std::string& filename, const SaveFn& save_fn, bool append,
            Durability durability = Durability::Durable);

  /// The path `filename` is written to; `std::invalid_argument` for an empty
  /// or absolute name. Asynchronous writers check names with it in the
  /// calling thread, so that a bad name fails the call itself.
  std::filesystem::path destination(const std::string& filename) const;

  /// `destination(filename)`, after creating the output directory (first
  /// use) and the destination's parent directories.
  std::filesystem::path prepare(const std::string& filename);

  /// Runs the post-save hooks for a completed write of `dest`.
  void run_post_save_hooks(const std::filesystem::path& dest) const;

 private:

  static void create_dirs(const std::filesystem::path& dir, const std::filesystem::path& for_path);

  [[noreturn]] static void fail(const std::filesystem::path& dest, const std::string& step, int err);

  // Runs the save function into `fd`, flushes and (Durable) fsyncs; throws on
  // failure (the caller cleans up).
  static void write_content(int fd, const std::filesystem::path& dest, const std::filesystem::path& file,
                            const SaveFn& save_fn, Durability durability);

  static void append_to(const std::filesystem::path& dest, const SaveFn& save_fn, Durability durability);

  static void replace(const std::filesystem::path& dest, const SaveFn& save_fn, Durability durability);

  std::filesystem::path out_dir_;
  bool initialized_ = false;
  std::vector<PostSaveHook> hooks_;
};

/// A writer type: derived from `ppe::writing::Writer`.
template <class T>
concept writer = std::derived_from<T, Writer>;

}  // namespace ppe::writing

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/writing/impl/writer.ipp"
#endif
