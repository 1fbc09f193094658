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
};

/// Prints a progress bar and recent training speed every `update_interval`
/// iterations. Default trigger: every iteration; priority: reader; no state.
class ProgressBar {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "ProgressBar";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Number of recent updates the speed is measured over (PPE's deque maxlen).
  static constexpr std::size_t kSpeedWindow = detail::SpeedWindow::kSize;

  explicit ProgressBar(ProgressBarOptions options = {})
      : length_(options.training_length()),
        interval_(options.update_interval()),
        bar_length_(options.bar_length()),
        output_(options.out(), options.terminal()) {
    if (interval_ < 1)
      throw std::invalid_argument("ppe: ProgressBar update_interval must be >= 1, got " + std::to_string(interval_));
    if (bar_length_ < 1)
      throw std::invalid_argument("ppe: ProgressBar bar_length must be >= 1, got " + std::to_string(bar_length_));
    if (options.out() == nullptr)
      throw std::invalid_argument("ppe: ProgressBar out must be a stream, got a null pointer");
    if (length_) check_length(*length_);
    // The frame is assembled in a reserved string: an update allocates nothing.
    frame_.reserve(frame_capacity());
  }

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
  void finalize(Manager&) {
    if (!output_.terminal()) return;
    output_.erase_below();
    output_.flush();
  }

  /// Draws the display for the manager's current state now.
  void update(Manager& manager) {
    const TrainingLength& length = resolve_length(manager);
    const std::int64_t iteration = manager.iteration();
    const double epoch = manager.epoch_detail();
    const double rate =
        std::min((length.unit == Unit::Iteration ? static_cast<double>(iteration) : epoch) / length.length, 1.0);
    const double epoch_rate = epoch - std::trunc(epoch);
    const auto [speed_t, speed_e] = speed_.update(iteration, epoch, manager.now());
    const double remaining = length.length - (length.unit == Unit::Iteration ? static_cast<double>(iteration) : epoch);
    const double eta = detail::estimated_time(remaining, length.unit == Unit::Iteration ? speed_t : speed_e);

    namespace pf = ppe::detail::pyfmt;
    frame_.clear();
    frame_.reserve(frame_capacity());  // a no-op unless this object was copied
    if (output_.terminal()) {
      frame_.append(ppe::detail::kEraseBelow);
      frame_.append("     total ");
      append_bar(rate);
      pf::append_percent(frame_, rate, 2, 6);
      frame_.append("\nthis epoch ");
      append_bar(epoch_rate);
      pf::append_percent(frame_, epoch_rate, 2, 6);
      frame_.push_back('\n');
      pf::append_int(frame_, iteration, 10);
      append_progress(manager.epoch(), length);
      frame_.push_back('\n');
      pf::append_general(frame_, speed_t, 5, 10);
      frame_.append(" iters/sec. Estimated time to finish: ");
      append_eta(eta);
      frame_.append(".\n");
      ppe::detail::append_cursor_up(frame_, 4);
    } else {
      pf::append_int(frame_, iteration);
      append_progress(manager.epoch(), length);
      frame_.append(", ");
      pf::append_percent(frame_, rate, 2);
      frame_.append(" total, ");
      pf::append_percent(frame_, epoch_rate, 2);
      frame_.append(" this epoch, ");
      pf::append_general(frame_, speed_t, 5);
      frame_.append(" iters/sec, ETA ");
      append_eta(eta);
      frame_.push_back('\n');
    }
    output_.write(frame_);
    output_.flush();
  }

  /// The training length in use (after the first update or `initialize`).
  const std::optional<TrainingLength>& training_length() const noexcept { return length_; }
  /// Whether the terminal display is used (decides it if not yet decided).
  bool terminal() { return output_.terminal(); }

 private:
  static void check_length(const TrainingLength& l) {
    if (!(l.length > 0) || !std::isfinite(l.length))
      throw std::invalid_argument("ppe: ProgressBar training_length must be a finite length > 0, got " +
                                  std::to_string(l.length) + " " + unit_name(l.unit) + "s");
  }

  const TrainingLength& resolve_length(const Manager& manager) {
    if (!length_) {
      length_ = manager.training_length();
      if (!length_)
        throw std::invalid_argument(
            "ppe: ProgressBar does not know the training length: the manager's stop trigger does not state one "
            "(interval, early-stopping and manual-schedule triggers do). Fix: pass "
            "ProgressBarOptions().training_length({length, ppe::training::Unit::Epoch}) (or Unit::Iteration)");
      check_length(*length_);
    }
    if (length_text_.empty()) length_text_ = length_text(length_->length);
    return *length_;
  }

  /// The length as PPE prints it (`"%s" % length`): an integral length as an
  /// int (`5`, what a PPE user passes), any other as Python's float repr (`2.5`).
  static std::string length_text(double length) {
    if (length == std::trunc(length) && length < 1e15) return std::to_string(static_cast<std::int64_t>(length));
    return ppe::detail::python_float_repr(length);
  }

  void append_bar(double rate) { detail::append_bar(frame_, rate, bar_length_); }

  /// `" iter, {epoch} epoch / {length} {unit}s"`.
  void append_progress(std::int64_t epoch, const TrainingLength& length) {  // after resolve_length
    frame_.append(" iter, ");
    ppe::detail::pyfmt::append_int(frame_, epoch);
    frame_.append(" epoch / ");
    frame_.append(length_text_);
    frame_.push_back(' ');
    frame_.append(unit_name(length.unit));
    frame_.push_back('s');
  }

  void append_eta(double eta) { detail::append_eta(frame_, eta); }

  /// Enough for the longest frame: two bars plus bounded numbers.
  std::size_t frame_capacity() const noexcept { return 2 * static_cast<std::size_t>(bar_length_) + 512; }

  std::optional<TrainingLength> length_;
  std::int64_t interval_;
  std::int64_t bar_length_;
  ppe::detail::DisplayOutput output_;
  std::int64_t next_ = 0;
  detail::SpeedWindow speed_;
  std::string frame_;
  std::string length_text_;  ///< set with the length
};

}  // namespace ppe::training::extensions
