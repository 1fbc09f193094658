#pragma once
/// \file
/// `ppe::training::extensions::snapshot` and `snapshot_object` (PPE's
/// `extensions.snapshot` / `snapshot_object`): save the state of the manager,
/// or of given objects, to a file whose name comes from a template, keep the
/// newest N files, and load the newest good one when training starts again.
///
/// Files are `ppe::serialization::pickle_dumps` archives: Python's `torch.load` reads them
/// (a manager snapshot in PPE's layout), they carry a checksum, and writers
/// publish them by atomic rename. Autoload verifies the newest file and, when
/// it is truncated or corrupted, says so and falls back to the next older one.

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/detail/named_format.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/serialization/staging.hpp"
#include "ppe/serialization/state_copy.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/snapshot_files.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions {

/// Options of a snapshot (PPE's keyword arguments).
struct SnapshotOptions {
  /// File name template, relative to the writer's directory. Fields:
  /// `{iteration}`, `{epoch}`, `{epoch_detail}`, `{elapsed_time}`; PPE's
  /// attribute spelling `{.iteration}` means the same.
  PPE_ARG(std::string, filename) = "snapshot_iter_{.iteration}";
  /// Computes the file name instead of `filename` (PPE's callable filename).
  /// Autoload and `n_retains` need a template, so they cannot be combined
  /// with it.
  PPE_ARG(std::function<std::string(const Manager&)>, filename_fn);
  /// Asked at each firing; the snapshot is taken only when it returns true.
  PPE_ARG(std::function<bool()>, condition);
  /// The writer; null: the manager's writer.
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// Also take a snapshot when an iteration throws.
  PPE_ARG(bool, snapshot_on_error) = false;
  /// Keep only the newest N snapshot files (deleted after each successful
  /// write); not positive: keep all.
  PPE_ARG(std::int64_t, n_retains) = -1;
  /// When the manager starts, load the newest snapshot found in the writer's
  /// directory (falling back to older ones that verify).
  PPE_ARG(bool, autoload) = false;
  /// Only this rank writes (every rank loads, from the same directory: a
  /// shared file system across machines). Checked against the manager's
  /// world size when it starts. `snapshot_on_error` writes on this rank
  /// only too (PPE #779). Unset: every rank writes (give each its own
  /// directory or a filename with the rank).
  PPE_ARG(std::optional<int>, saver_rank);
  /// PPE's `SnapshotMode.SHARDED` (needs `saver_rank` and the manager's
  /// communicator): the filename names a directory and every rank writes
  /// its own state into `<directory>/<rank>`; after all ranks have handed
  /// their file to their writer, the saver rank writes `<directory>/complete`.
  /// Autoload takes the newest complete directory, the same on every rank
  /// (checked), each rank its own file; `n_retains` removes whole
  /// directories. For states that differ between ranks. A directory written
  /// by another number of ranks W (elastic training) loads too: rank r takes
  /// file `r % W` (its own while r < W), and what the manager re-splits (the
  /// `ResumableSampler`'s data) continues exactly; other per-rank state of
  /// the ranks beyond W starts from that file's.
  PPE_ARG(bool, sharded) = false;
  /// Autoload a manager snapshot taken with another composition (an
  /// extension added, removed, renamed or retyped): what matches is loaded,
  /// what differs skipped with a warning listing it. False: such a snapshot
  /// is an error naming each difference (`Manager::load_state_dict`).
  PPE_ARG(bool, allow_composition_change) = false;
  /// Also write the models' weights beside each snapshot, as
  /// `<snapshot>.safetensors` (docs/safetensors.md), for tools that read the
  /// format: one model under its own names (`0.weight`), several under
  /// `<model>.<name>`; metadata `format` "pt" and the snapshot's iteration
  /// and epoch. The snapshot itself stays what resumes a run. A manager
  /// snapshot's option (not `snapshot_object`'s), not with `sharded`.
  /// `n_retains` removes a snapshot's weights with it; files ending in
  /// `.safetensors` are never snapshot files (snapshot_files.hpp).
  PPE_ARG(bool, safetensors) = false;
  /// Asynchronous writers (ThreadWriter, ThreadQueueWriter, ProcessWriter,
  /// ProcessQueueWriter): the loop waits while the state is copied once,
  /// into a staging copy that the write then streams from
  /// (serialization/staging.hpp). True: the copy stays allocated between
  /// snapshots, so that later ones copy into memory already there (a fresh
  /// allocation costs page faults: several times the copy; docs/snapshot.md).
  /// False: its memory is released after each write, and each snapshot
  /// allocates it again. Either way a snapshot taken while the previous one
  /// is still being written waits for that write: at most one copy of the
  /// state is held, however many snapshots are triggered.
  PPE_ARG(bool, keep_staging) = true;
};

/// What a snapshot saves and loads: a `State` getter and setter.
struct SnapshotTarget {
  std::function<State()> save;
  std::function<void(const State&)> load;

  /// An object with `state_dict()` returning a `ppe::State` and
  /// `load_state_dict(const ppe::State&)` (a manager, an extension, a
  /// state object), a LibTorch module holder, or a `torch::optim` optimizer.
  /// Held by reference: it must outlive the snapshot.
  template <class T>
    requires(!std::is_same_v<std::remove_cvref_t<T>, SnapshotTarget>)
  static SnapshotTarget of(T& object, std::string name = "target") {
    if constexpr (requires(const T& c, T& o, const State& s) {
                    { c.state_dict() } -> std::convertible_to<State>;
                    o.load_state_dict(s);
                  }) {
      return {[&object] { return State(object.state_dict()); }, [&object](const State& s) { object.load_state_dict(s); }};
    } else if constexpr (std::is_constructible_v<ModelRef, T&>) {
      ModelRef ref(object);
      return {[ref] { return ref.state_dict(); }, [ref, name](const State& s) { ref.load_state_dict(s, name); }};
    } else if constexpr (std::is_constructible_v<OptimizerRef, T&>) {
      OptimizerRef ref(object);
      return {[ref] { return ref.state_dict(); }, [ref, name](const State& s) { ref.load_state_dict(s, name); }};
    } else {
      static_assert(sizeof(T) == 0,
                    "ppe::snapshot_object: the target must have `ppe::State state_dict() const` and "
                    "`void load_state_dict(const ppe::State&)`, or be a torch::nn module or a torch::optim optimizer");
    }
  }
};

/// The snapshot extension; make it with `snapshot()` or `snapshot_object()`.
/// Priority `kPrioritySnapshot` (-100): it runs after the other extensions
/// of its iteration and sees their state after their firing.
class Snapshot {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "_Snapshot";  // PPE's name, so snapshots interchange
  static constexpr int priority = kPrioritySnapshot;
  static constexpr bool needs_model_state = true;
  static auto default_trigger() { return ppe::epochs(1); }

  /// A named target: `{"model", SnapshotTarget::of(model, "model")}`.
  using NamedTarget = std::pair<std::string, SnapshotTarget>;

  /// Saves the manager (no targets), one object (one target with an empty
  /// name: saved as it is) or several objects (saved as `{name: state}`).
  explicit Snapshot(SnapshotOptions options = {}, std::vector<NamedTarget> targets = {});
  // Move-only; out of line with separate compilation (the members' code is compiled once).
  Snapshot(Snapshot&&) noexcept;
  Snapshot& operator=(Snapshot&&) noexcept;
  ~Snapshot();

  /// Resolves the writer, loads the newest snapshot when `autoload` is on,
  /// and registers the cleanup of old files when `n_retains` is positive.
  void initialize(Manager& m);

  /// Takes a snapshot when the condition (if any) allows. With a saver rank
  /// in distributed training, every rank then waits for the others (PPE), so
  /// no rank runs ahead of a snapshot that the saver is still taking.
  void operator()(Manager& m) {
    if (options_.condition() && !options_.condition()()) return;
    take(m);
    if (options_.saver_rank() && m.communicator() && m.world_size() > 1) m.communicator()->barrier();
    if (options_.sharded()) mark_complete(m);
  }

  void on_error(Manager& m, std::exception_ptr) {
    if (options_.snapshot_on_error()) take(m);
  }

  /// A requested stop (Manager::request_stop, StopOnSignal) saves the state
  /// at that iteration boundary, so that autoload resumes from there, unless
  /// this iteration was just saved.
  void on_stop(Manager& m) {
    if (last_taken_ != m.iteration()) take(m);
  }

  /// Waits for this snapshot's writes (its own writer, or the manager's).
  void finalize(Manager&) {
    if (writer_) writer_->finalize();
  }

  State state_dict() const { return State::dict(); }
  void load_state_dict(const State&) {}

  /// The file autoload loaded at the last start (relative to the writer's
  /// directory), or "" (PPE's `initialize` return value).
  const std::string& loaded_file() const noexcept { return loaded_; }

  /// Writes a snapshot now, whatever the trigger and condition.
  void take(Manager& m);

 private:
  // The sharded autoload: the newest directory complete on every rank.
  void autoload_sharded(Manager& m);
  // The sharded mode's marker, written by the saver rank once every rank's
  // shard of this snapshot is with its writer.
  void mark_complete(Manager& m);
  static bool is_field(std::string_view f) {
    return f == "iteration" || f == "epoch" || f == "epoch_detail" || f == "elapsed_time";
  }
  // PPE formats the template with the manager as its argument ("{.iteration}");
  // the fields here are named ("{iteration}"): drop the dot.
  static std::string dotless(std::string_view pattern);
  std::string format_name(const Manager& m) const;

  // The state to write; `copy`: whether the manager's optimizer state is
  // cloned or shared (a snapshot's own targets give what they give).
  State collect(Manager& m, StateCopy copy) const;
  // The models' weights as a safetensors file `name` (`safetensors`): the
  // live weights, or those of `staged` (an asynchronous snapshot's copy).
  void write_weights(const Manager& m, writing::Writer& w, const std::string& name,
                     const std::shared_ptr<const State>& staged) const;

  void restore(Manager& m, const State& state, const std::string& file) const;
  // The state in a snapshot file, to be restored.
  State read_snapshot(const std::filesystem::path& path) const;

  // Newest first; a file that is truncated or corrupted (or vanished) is
  // skipped with a warning. A file that reads but does not fit the targets
  // is an error: an older one would not fit either, and starting over
  // silently would lose the run.
  void autoload(Manager& m);

  SnapshotOptions options_;
  std::vector<NamedTarget> targets_;
  bool single_ = false;
  ppe::detail::NamedFormat filename_;
  writing::Writer* writer_ = nullptr;
  bool cleanup_registered_ = false;
  // The copy asynchronous writers write from, kept between snapshots.
  std::shared_ptr<serialization::Staging> staging_;
  std::string loaded_;
  std::int64_t last_taken_ = -1;
};

/// A snapshot of the whole manager (PPE's `snapshot()`): models, optimizers,
/// extensions and their triggers, state objects, counters and elapsed time.
inline Snapshot snapshot(SnapshotOptions options = {}) { return Snapshot(std::move(options)); }

/// A snapshot of one object (PPE's `snapshot_object(target, filename)`); see
/// `SnapshotTarget::of` for what the target may be. The filename is a
/// template as in `SnapshotOptions::filename`.
template <class T>
Snapshot snapshot_object(T& target, std::string filename, SnapshotOptions options = {}) {
  options.filename(std::move(filename));
  return Snapshot(std::move(options), {{std::string(), SnapshotTarget::of(target)}});
}

/// A snapshot of several objects saved as `{name: state}` (PPE's
/// `snapshot_object` with a dict target): `snapshot_object({{"model",
/// SnapshotTarget::of(model, "model")}, ...}, "objects.pt")`.
inline Snapshot snapshot_object(std::vector<Snapshot::NamedTarget> targets, std::string filename,
                                SnapshotOptions options = {}) {
  for (const auto& [name, t] : targets)
    if (name.empty()) throw std::invalid_argument("ppe::snapshot_object: a named target has an empty name");
  options.filename(std::move(filename));
  return Snapshot(std::move(options), std::move(targets));
}

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/snapshot.ipp"
#endif
