#pragma once
/// \file
/// `ppe::training::extensions::snapshot` and `snapshot_object` (PPE's
/// `extensions.snapshot` / `snapshot_object`): save the state of the manager,
/// or of given objects, to a file whose name comes from a template, keep the
/// newest N files, and load the newest good one when training starts again.
///
/// Files are `ppe::pickle_dumps` archives: Python's `torch.load` reads them
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
#include "ppe/detail/named_format.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/serialization/state_copy.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/snapshot_files.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/process_queue_writer.hpp"
#include "ppe/writing/process_writer.hpp"
#include "ppe/writing/simple_writer.hpp"
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
  /// Only this rank writes (every rank loads). Checked against the
  /// manager's world size when it starts.
  PPE_ARG(std::optional<int>, saver_rank);
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
  explicit Snapshot(SnapshotOptions options = {}, std::vector<NamedTarget> targets = {})
      : options_(std::move(options)), targets_(std::move(targets)) {
    if (!options_.filename_fn()) {
      if (options_.filename().empty()) throw std::invalid_argument("ppe::snapshot: the filename is empty");
      filename_ = ppe::detail::NamedFormat::parse(dotless(options_.filename()), "snapshot filename");
      for (const auto& part : filename_.parts)
        if (part.is_field && !is_field(part.text))
          throw std::invalid_argument("ppe::snapshot: unknown field '{" + part.text + "}' in the filename '" +
                                      options_.filename() +
                                      "'; known fields: {iteration}, {epoch}, {epoch_detail}, {elapsed_time}");
    } else if (options_.autoload() || options_.n_retains() > 0) {
      throw std::invalid_argument(
          "ppe::snapshot: autoload and n_retains find snapshot files by the filename template, so they need "
          "`filename` (a template such as \"snapshot_iter_{.iteration}\"), not `filename_fn`");
    }
    if (targets_.size() == 1 && targets_.front().first.empty()) single_ = true;
    for (const auto& [name, t] : targets_)
      if (!t.save || !t.load) throw std::invalid_argument("ppe::snapshot: target '" + name + "' is empty");
  }

  /// Resolves the writer, loads the newest snapshot when `autoload` is on,
  /// and registers the cleanup of old files when `n_retains` is positive.
  void initialize(Manager& m) {
    writer_ = options_.writer() ? options_.writer().get() : &m.writer();
    if (const auto r = options_.saver_rank(); r && (*r < 0 || *r >= m.world_size()))
      throw std::invalid_argument("ppe::snapshot: saver_rank " + std::to_string(*r) +
                                  " is out of range for a world of " + std::to_string(m.world_size()) + " ranks");
    loaded_.clear();
    if (options_.autoload()) autoload(m);
    if (options_.n_retains() > 0 && !cleanup_registered_) {
      // Runs after every completed write of this writer (asynchronous
      // writers: on their worker), so only files already complete count.
      writer_->add_post_save_hook([pattern = options_.filename(), dir = writer_->out_dir(),
                                   n = options_.n_retains()](const std::filesystem::path&) {
        for (const auto& stale : find_stale_snapshots(pattern, dir, n)) {
          std::error_code ec;
          std::filesystem::remove(dir / stale, ec);  // a file already gone is no error
        }
      });
      cleanup_registered_ = true;
    }
  }

  /// Takes a snapshot when the condition (if any) allows.
  void operator()(Manager& m) {
    if (!options_.condition() || options_.condition()()) take(m);
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
  void take(Manager& m) {
    if (!writer_) writer_ = options_.writer() ? options_.writer().get() : &m.writer();
    if (const auto r = options_.saver_rank(); r && *r != m.rank()) return;
    const std::string name = options_.filename_fn() ? options_.filename_fn()(m) : format_name(m);
    State state = collect(m);
    last_taken_ = m.iteration();
    writing::Writer& w = *writer_;
    // What the writer gets must own its data (writing/writer.hpp). A
    // synchronous write can read the live state; process writers serialise
    // in this thread anyway; any other writer may run later, so it gets a
    // copy now and pickles on its own thread.
    if (dynamic_cast<writing::SimpleWriter*>(&w)) {
      w(name, [&state](std::ostream& os) {
        const auto bytes = pickle_dumps(state);
        os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      });
    } else if (dynamic_cast<writing::ProcessWriter*>(&w) || dynamic_cast<writing::ProcessQueueWriter*>(&w)) {
      w(name, writing::owned_bytes(pickle_dumps(state)));
    } else {
      w(name, [owned = owned_copy(state)](std::ostream& os) {
        const auto bytes = pickle_dumps(owned);
        os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      });
    }
  }

 private:
  static bool is_field(std::string_view f) {
    return f == "iteration" || f == "epoch" || f == "epoch_detail" || f == "elapsed_time";
  }
  // PPE formats the template with the manager as its argument ("{.iteration}");
  // the fields here are named ("{iteration}"): drop the dot.
  static std::string dotless(std::string_view pattern) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      out += pattern[i];
      if (pattern[i] == '{' && i + 1 < pattern.size() && pattern[i + 1] == '.' &&
          (i == 0 || pattern[i - 1] != '{'))
        ++i;
    }
    return out;
  }
  std::string format_name(const Manager& m) const {
    return filename_.format([&m](const std::string& f) -> std::string {
      if (f == "iteration") return std::to_string(m.iteration());
      if (f == "epoch") return std::to_string(m.epoch());
      if (f == "epoch_detail") return ppe::detail::python_float_repr(m.epoch_detail());
      return ppe::detail::python_float_repr(m.elapsed_time());
    });
  }

  State collect(Manager& m) const {
    if (targets_.empty()) return m.state_dict();
    if (single_) return targets_.front().second.save();
    State out = State::dict();
    for (const auto& [name, t] : targets_) out.set(name, t.save());
    return out;
  }

  void restore(Manager& m, const State& state, const std::string& file) const {
    if (targets_.empty()) return m.load_state_dict(state);
    if (single_) return targets_.front().second.load(state);
    for (const auto& [name, t] : targets_) {
      const State* s = state.find(name);
      if (!s)
        throw std::invalid_argument("ppe::snapshot: " + file + " has no entry '" + name +
                                    "' for the snapshot target of that name");
      t.load(*s);
    }
  }

  // Newest first; a file that is truncated or corrupted (or vanished) is
  // skipped with a warning. A file that reads but does not fit the targets
  // is an error: an older one would not fit either, and starting over
  // silently would lose the run.
  void autoload(Manager& m) {
    const std::filesystem::path dir = writer_->out_dir();
    const auto files = find_snapshot_files(options_.filename(), dir);
    std::vector<std::string> rejected;
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
      const std::filesystem::path path = dir / it->name;
      State state;
      try {
        state = load_file(path);
      } catch (const std::exception& e) {
        ppe::warn(std::string(e.what()) + "; " +
                  (std::next(it) == files.rend() ? std::string("no older snapshot is left")
                                                 : "trying the next older snapshot, " + std::next(it)->name));
        rejected.push_back(it->name + ": " + e.what());
        continue;
      }
      restore(m, state, path.string());
      loaded_ = it->name;
      if (!rejected.empty()) ppe::warn("ppe::snapshot: autoload loaded " + path.string() + " (newer files were unusable)");
      return;
    }
    if (!rejected.empty()) {
      std::string msg = "ppe::snapshot: autoload found snapshot files in " + dir.string() + " but none is usable:";
      for (const auto& r : rejected) msg += "\n  - " + r;
      throw CorruptFileError(msg);
    }
  }

  SnapshotOptions options_;
  std::vector<NamedTarget> targets_;
  bool single_ = false;
  ppe::detail::NamedFormat filename_;
  writing::Writer* writer_ = nullptr;
  bool cleanup_registered_ = false;
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
