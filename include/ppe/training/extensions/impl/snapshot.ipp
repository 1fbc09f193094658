// Definitions of training/extensions/snapshot.hpp's out-of-line members:
// included by it when header-only, compiled once by impl/src.hpp with
// PPE_SEPARATE_COMPILATION.
#pragma once

#include <filesystem>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "ppe/detail/error_message.hpp"
#include "ppe/detail/process_start.hpp"
#include "ppe/serialization/detail/file_records.hpp"
#include "ppe/serialization/module_weights.hpp"
#include "ppe/serialization/safetensors.hpp"
#include "ppe/training/extensions/snapshot.hpp"

namespace ppe::training::extensions {

PPE_DECL Snapshot::Snapshot(SnapshotOptions options, std::vector<NamedTarget> targets)
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

PPE_DECL void Snapshot::initialize(Manager& m) {
  writer_ = &m.writer_for(options_.writer());
  if (const auto r = options_.saver_rank(); r && (*r < 0 || *r >= m.world_size()))
    throw std::invalid_argument("ppe::snapshot: saver_rank " + std::to_string(*r) +
                                " is out of range for a world of " + std::to_string(m.world_size()) + " ranks");
  if (options_.sharded() && (!options_.saver_rank() || (m.world_size() > 1 && !m.communicator())))
    throw std::invalid_argument(
        "ppe::snapshot: the sharded mode needs a saver_rank (the rank that marks a snapshot complete) and, with "
        "more than one rank, the manager's communicator (ppe::distributed::for_process_group)");
  if (options_.sharded() && options_.filename_fn())
    throw std::invalid_argument("ppe::snapshot: the sharded mode needs `filename` (the directory template)");
  if (options_.safetensors() && (options_.sharded() || !targets_.empty()))
    throw std::invalid_argument(
        "ppe::snapshot: safetensors writes the manager's models beside a manager snapshot: not with sharded, nor "
        "for snapshot_object");
  loaded_.clear();
  // A process killed in the middle of a write (by the distributed watchdog,
  // say) left its temporary file: gone before this run writes or loads.
  if (!options_.filename_fn())
    remove_abandoned_temps(options_.sharded() ? options_.filename() + "/{rank}" : options_.filename(),
                           writer_->out_dir(), ppe::detail::process_start_file_time());
  if (options_.autoload()) options_.sharded() ? autoload_sharded(m) : autoload(m);
  if (options_.n_retains() > 0 && !cleanup_registered_) {
    // Runs after every completed write of this writer (asynchronous
    // writers: on their worker), so only files already complete count.
    // Sharded: the saver rank's complete markers count, and whole directories go.
    const bool sharded = options_.sharded();
    if (!sharded || m.rank() == *options_.saver_rank())
      writer_->add_post_save_hook([pattern = sharded ? options_.filename() + "/complete" : options_.filename(),
                                   dir = writer_->out_dir(), n = options_.n_retains(),
                                   sharded](const std::filesystem::path&) {
        for (const auto& stale : find_stale_snapshots(pattern, dir, n)) {
          std::error_code ec;  // a file already gone is no error
          if (sharded) {
            std::filesystem::remove_all((dir / stale).parent_path(), ec);
          } else {
            std::filesystem::remove(dir / stale, ec);
            std::filesystem::remove(dir / (stale + ".safetensors"), ec);  // its weights, where written
          }
        }
      });
    cleanup_registered_ = true;
  }
}

PPE_DECL void Snapshot::take(Manager& m) {
  if (!writer_) writer_ = &m.writer_for(options_.writer());
  if (const auto r = options_.saver_rank(); r && *r != m.rank() && !options_.sharded()) return;
  std::string name = options_.filename_fn() ? options_.filename_fn()(m) : format_name(m);
  if (options_.sharded()) name += "/" + std::to_string(m.rank());
  writing::Writer& w = *writer_;
  if (w.write_mode() == writing::WriteMode::Synchronous) {
    // Written before the call returns: the live state streams into the file
    // (the optimizers' tensors shared, not cloned).
    const State state = collect(m, StateCopy::Share);
    last_taken_ = m.iteration();
    if (options_.safetensors()) write_weights(m, w, name + ".safetensors", nullptr);
    w(name, [&state](std::ostream& os) { serialization::write_pickle(os, state); });
    return;
  }
  // Written later (writing/writer.hpp's ownership rule): the state is copied
  // once, into the staging copy kept between snapshots, and streamed from
  // there on the writer's thread or in its writing process. A write that
  // still holds the staging copy is waited for first.
  if (!staging_) staging_ = std::make_shared<serialization::Staging>();
  if (staging_->busy()) w.wait();
  const std::shared_ptr<const State> staged =
      staging_->stage(collect(m, StateCopy::Share), options_.keep_staging());
  last_taken_ = m.iteration();
  if (options_.safetensors()) write_weights(m, w, name + ".safetensors", staged);
  // The pickle program is made here; the writer (a process writer's child)
  // only streams the records.
  w(name, writing::in_writing_process(
              [staged, write = serialization::pickle_writer(*staged)](std::ostream& os) { write(os); }));
}

PPE_DECL void Snapshot::write_weights(const Manager& m, writing::Writer& w, const std::string& name,
                                     const std::shared_ptr<const State>& staged) const {
  serialization::NamedTensors weights;
  const auto& models = m.models();
  for (const auto& [model, ref] : models.items())
    for (auto& [key, t] : serialization::module_weights(*ref.module())) {
      // A staged snapshot writes the staged copy of the weights (held until
      // written), a synchronous one the live weights.
      const State* copy = staged ? staged->at("models").at(model).find(key) : nullptr;
      weights.emplace_back(models.size() == 1 ? key : model + "." + key,
                           copy && copy->is_tensor() ? copy->as_tensor() : staged ? t.clone() : t);
    }
  const std::map<std::string, std::string> metadata{
      {"format", "pt"}, {"iteration", std::to_string(m.iteration())}, {"epoch", std::to_string(m.epoch())}};
  if (!staged) {
    w(name, [&weights, &metadata](std::ostream& os) { serialization::write_safetensors(os, weights, metadata); });
    return;
  }
  w(name, writing::in_writing_process([staged, weights = std::move(weights), metadata](std::ostream& os) {
      serialization::write_safetensors(os, weights, metadata);
    }));
}

PPE_DECL std::string Snapshot::dotless(std::string_view pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    out += pattern[i];
    if (pattern[i] == '{' && i + 1 < pattern.size() && pattern[i + 1] == '.' &&
        (i == 0 || pattern[i - 1] != '{'))
      ++i;
  }
  return out;
}

PPE_DECL std::string Snapshot::format_name(const Manager& m) const {
  return filename_.format([&m](const std::string& f) -> std::string {
    if (f == "iteration") return std::to_string(m.iteration());
    if (f == "epoch") return std::to_string(m.epoch());
    if (f == "epoch_detail") return ppe::detail::python_float_repr(m.epoch_detail());
    return ppe::detail::python_float_repr(m.elapsed_time());
  });
}

PPE_DECL State Snapshot::collect(Manager& m, StateCopy copy) const {
  if (targets_.empty()) return m.state_dict(copy);
  if (single_) return targets_.front().second.save();
  State out = State::dict();
  for (const auto& [name, t] : targets_) out.set(name, t.save());
  return out;
}

PPE_DECL void Snapshot::restore(Manager& m, const State& state, const std::string& file) const {
  if (targets_.empty()) {
    const auto skipped =
        m.load_state_dict(state, LoadStateOptions().allow_composition_change(options_.allow_composition_change()));
    for (const auto& s : skipped) ppe::warn("ppe::snapshot: " + file + " was loaded without: " + s);
    return;
  }
  if (single_) return targets_.front().second.load(state);
  for (const auto& [name, t] : targets_) {
    const State* s = state.find(name);
    if (!s)
      throw std::invalid_argument("ppe::snapshot: " + file + " has no entry '" + name +
                                  "' for the snapshot target of that name");
    t.load(*s);
  }
}

PPE_DECL State Snapshot::read_snapshot(const std::filesystem::path& path) const {
  // A manager snapshot's models and optimizers are read from the file
  // straight into them when the manager loads the state (no second copy of
  // the state: serialization/detail/file_records.hpp).
  return targets_.empty() ? ppe::detail::load_file_deferred(path, ppe::detail::manager_may_defer)
                          : serialization::load_file(path);
}

PPE_DECL void Snapshot::mark_complete(Manager& m) {
  if (m.rank() != *options_.saver_rank()) return;
  (*writer_)(format_name(m) + "/complete", [](std::ostream&) {});
}

PPE_DECL void Snapshot::autoload_sharded(Manager& m) {
  const std::filesystem::path dir = writer_->out_dir();
  // The newest complete directory, and the number of ranks that wrote it
  // (its files 0, 1, ...).
  std::string chosen;
  int shards = 0;
  const std::string marker = "/complete";
  const auto markers = find_snapshot_files(options_.filename() + marker, dir);
  for (auto it = markers.rbegin(); it != markers.rend() && chosen.empty(); ++it) {
    const std::string d = it->name.substr(0, it->name.size() - marker.size());
    std::error_code ec;
    int n = 0;
    while (std::filesystem::exists(dir / d / std::to_string(n), ec)) ++n;
    if (n > 0) {
      chosen = d;
      shards = n;
    }
  }
  if (m.world_size() > 1) {
    const std::vector<std::string> all = m.communicator()->all_gather(chosen);
    for (std::size_t r = 0; r < all.size(); ++r)
      if (all[r] != all.front())
        throw std::runtime_error("ppe::snapshot: the ranks would autoload different sharded snapshots from " +
                                 dir.string() + ": rank 0 '" + all.front() + "', rank " + std::to_string(r) + " '" +
                                 all[r] + "' (every rank needs the same complete directory)");
  }
  if (chosen.empty()) return;
  // Fewer ranks than shards: the shards past this world are read by nobody,
  // and what only they hold (a rank's own RNG streams or extension state) is
  // lost. Said once, by rank 0, naming them.
  if (m.world_size() < shards && m.rank() == 0) {
    const std::string first = std::to_string(m.world_size()), last = std::to_string(shards - 1);
    ppe::warn("ppe::snapshot: the sharded snapshot " + (dir / chosen).string() + " was written by " +
              std::to_string(shards) + " ranks and this job has " + std::to_string(m.world_size()) + ": " +
              (first == last ? "shard " + first + " is" : "shards " + first + ".." + last + " are") +
              " not read, so the state only they hold (each rank's own random streams, extension state kept per "
              "rank) is not restored; rank r loads shard r");
  }
  // Another world size: rank r takes shard r % shards (its own while r < shards).
  const std::string shard = std::to_string(m.rank() % shards);
  const std::filesystem::path path = dir / chosen / shard;
  restore(m, read_snapshot(path), path.string());
  loaded_ = chosen + "/" + shard;
}

PPE_DECL void Snapshot::autoload(Manager& m) {
  const std::filesystem::path dir = writer_->out_dir();
  const auto files = find_snapshot_files(options_.filename(), dir);
  std::vector<std::string> rejected;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    const std::filesystem::path path = dir / it->name;
    State state;
    try {
      state = read_snapshot(path);
    } catch (const std::exception& e) {
      const std::string what = ppe::detail::error_message(e);
      ppe::warn(what + "; " +
                (std::next(it) == files.rend() ? std::string("no older snapshot is left")
                                               : "trying the next older snapshot, " + std::next(it)->name));
      rejected.push_back(it->name + ": " + what);
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
    throw serialization::CorruptFileError(msg);
  }
}

PPE_DECL Snapshot::Snapshot(Snapshot&&) noexcept = default;
PPE_DECL Snapshot& Snapshot::operator=(Snapshot&&) noexcept = default;
PPE_DECL Snapshot::~Snapshot() = default;

}  // namespace ppe::training::extensions
