#pragma once
/// \file
/// `ProgressBar` (PPE's `ppe.training.extensions.ProgressBar`): a progress bar
/// with the training speed and the estimated time to finish.
///
/// On a terminal it draws PPE's four-line display in place, byte for byte
/// (5 epochs of 500 iterations, at iteration 790, 10 iterations per second):
/// ```
///      total [###############...................................] 31.60%
/// this epoch [#############################.....................] 58.00%
///        790 iter, 1 epoch / 5 epochs
///         10 iters/sec. Estimated time to finish: 0:02:51.
/// ```
/// preceded by `"\033[J"` (erase below) and followed by `"\033[4A"` (back to
/// the first line). Anywhere else (a pipe, a file, a string stream) it writes
/// one plain line per update instead, without control characters:
/// ```
/// 790 iter, 1 epoch / 5 epochs, 31.60% total, 58.00% this epoch, 10 iters/sec, ETA 0:02:51
/// ```
/// Which one is decided by `ppe::detail::is_terminal` (see
/// `ppe/detail/terminal.hpp`), or by the `terminal` option.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ppe/detail/config.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/python_format.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/detail/terminal.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/progress.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of `ProgressBar` (PPE's constructor arguments, plus `terminal`).
struct ProgressBarOptions {
  /// (PPE_ARG spells `const T&`: a pointer type needs a name to stay `T* const&`.)
  using OStreamPtr = std::ostream*;

  /// Length of the whole training; by default the stop trigger's
  /// (`Manager::training_length()`: interval, early-stopping and manual-schedule
  /// stop triggers know theirs). Must be > 0.
  PPE_ARG(std::optional<TrainingLength>, training_length);
  /// The bar is updated when `iteration % update_interval == 0`; must be >= 1.
  PPE_ARG(std::int64_t, update_interval) = 100;
  /// Characters between the brackets of each bar; must be >= 1.
  PPE_ARG(std::int64_t, bar_length) = 50;
  /// The stream to write to; not owned, must outlive the extension.
  PPE_ARG(OStreamPtr, out) = &std::cout;
  /// Forces the terminal display (`true`) or the line display (`false`);
  /// unset: decided from the stream (`ppe::detail::is_terminal`).
  PPE_ARG(std::optional<bool>, terminal);
  /// The rank that draws the bar in distributed training (`ManagerOptions::rank`);
  /// the others skip it. Unset: every rank (then give each its own stream).
  PPE_ARG(std::optional<int>, rank) = 0;
};

/// Prints a progress bar and recent training speed every `update_interval`
/// iterations. Default trigger: every iteration; priority: reader; no state.
class ProgressBar {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "ProgressBar";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  explicit ProgressBar(ProgressBarOptions options = {});

  /// Resolves the training length now, so that a missing one is an error
  /// before the first iteration.
  void initialize(Manager& manager) { resolve_length(manager); }

  /// Updates the display when `iteration % update_interval == 0` (as PPE).
  void operator()(Manager& manager) {
    const std::int64_t it = manager.iteration();
    // Between two multiples of the interval the answer is known without the
    // division: `next_` is the next multiple after the last one seen.
    if (it < next_ && it > next_ - interval_) return;
    const std::int64_t r = it % interval_;
    next_ = it - r + interval_;
    if (r == 0) update(manager);
  }

  /// Erases the display (terminal only; PPE's `close()`).
  void finalize(Manager&);

  /// Draws the display for the manager's current state now.
  void update(Manager& manager);

  /// The training length in use (after the first update or `initialize`).
  const std::optional<TrainingLength>& training_length() const noexcept { return length_; }
  /// Whether the terminal display is used (decides it if not yet decided).
  bool terminal() { return output_.terminal(); }

 private:
  static void check_length(const TrainingLength& l);

  const TrainingLength& resolve_length(const Manager& manager);

  /// The length as PPE prints it (`"%s" % length`): an integral length as an
  /// int (`5`, what a PPE user passes), any other as Python's float repr (`2.5`).
  static std::string length_text(double length);

  void append_bar(double rate) { detail::append_bar(frame_, rate, bar_length_); }

  /// `" iter, {epoch} epoch / {length} {unit}s"`.
  void append_progress(std::int64_t epoch, const TrainingLength& length);

  void append_eta(double eta) { detail::append_eta(frame_, eta); }

  /// Enough for the longest frame: two bars plus bounded numbers.
  std::size_t frame_capacity() const noexcept { return 2 * static_cast<std::size_t>(bar_length_) + 512; }

  std::optional<TrainingLength> length_;
  std::int64_t interval_;
  std::int64_t bar_length_;
  ppe::detail::DisplayOutput output_;
  std::optional<int> rank_;
  std::int64_t next_ = 0;
  detail::SpeedWindow speed_;
  std::string frame_;
  std::string length_text_;  ///< set with the length
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/progress_bar.ipp"
#endif
