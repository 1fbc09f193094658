#pragma once
/// \file
/// Pieces shared by the progress displays: `ProgressBar` (training) and
/// `IteratorProgressBar` (the evaluators' display of one pass over a loader,
/// PPE's `_IteratorProgressBar`): the speed over recent updates, the bar, the
/// estimated time to finish.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/detail/python_format.hpp"
#include "ppe/detail/terminal.hpp"

namespace ppe::training::extensions::detail {

/// Speeds over the last `kSize` updates, the current one included (PPE's
/// `deque(maxlen=100)` of `(iteration, epoch_detail, time)`).
class SpeedWindow {
 public:
  static constexpr std::size_t kSize = 100;

  /// Records an update and returns `(iterations/s, epochs/s)` since the oldest
  /// recorded one; infinite when no time has passed since it (PPE).
  std::pair<double, double> update(std::int64_t iteration, double epoch, double now) {
    window_[(start_ + count_) % kSize] = {iteration, epoch, now};
    if (count_ < kSize)
      ++count_;
    else
      start_ = (start_ + 1) % kSize;
    const Sample& oldest = window_[start_];
    const double span = now - oldest.time;
    if (span == 0) return {INFINITY, INFINITY};
    return {static_cast<double>(iteration - oldest.iteration) / span, (epoch - oldest.epoch) / span};
  }
  void reset() noexcept { start_ = count_ = 0; }

 private:
  struct Sample {
    std::int64_t iteration;
    double epoch;
    double time;
  };
  std::array<Sample, kSize> window_{};
  std::size_t start_ = 0, count_ = 0;
};

/// Seconds to finish `remaining` at `speed`, at least 0 (PPE). PPE divides by
/// zero (ZeroDivisionError) when nothing moved over the window; here that is
/// an unknown (infinite) time, unless nothing remains.
inline double estimated_time(double remaining, double speed) {
  if (remaining <= 0) return 0;
  if (speed == 0) return INFINITY;
  return std::max(remaining / speed, 0.0);
}

/// Appends `"[###...] "`: `int(rate * bar_length)` marks, as PPE, clamped to
/// the bar.
inline void append_bar(std::string& out, double rate, std::int64_t bar_length) {
  const double scaled = rate * static_cast<double>(bar_length);
  const std::int64_t marks =
      std::isnan(scaled) ? 0 : std::clamp<std::int64_t>(static_cast<std::int64_t>(std::clamp(scaled, 0.0, 1e18)), 0,
                                                          bar_length);
  out.push_back('[');
  out.append(static_cast<std::size_t>(marks), '#');
  out.append(static_cast<std::size_t>(bar_length - marks), '.');
  out.append("] ");
}

/// Python's `str(timedelta(seconds=eta))`; `inf` when the time is unknown or
/// beyond what a timedelta holds (PPE raises there).
inline void append_eta(std::string& out, double eta) {
  if (!ppe::detail::pyfmt::append_timedelta(out, eta)) out.append("inf");
}

/// The display of one pass over a loader (PPE's `_IteratorProgressBar`).
///
/// On a terminal it draws PPE's three lines in place, byte for byte (name
/// "validation", 2 of 4 batches done, 8 batches per second):
/// ```
/// validation [#########################.........................] 50.00%
///          2 iterations
///          8 iters/sec. Estimated time to finish: 0:00:00.250000.
/// ```
/// preceded by `"\033[J"` and followed by `"\033[3A"`; `close()` erases it.
/// As PPE, the frame of batch `i` shows `i` batches done: call `before(i)`
/// before each batch. Anywhere else it writes one line after each batch
/// (`after(done)`), without control characters:
/// ```
/// validation: 2 / 4 iterations, 50.00%, 8 iters/sec, ETA 0:00:00.250000
/// ```
/// When the number of batches is unknown the bar, the percentage and the
/// estimated time are left out (`         2 iterations` / `         8 iters/sec.`;
/// `validation: 2 iterations, 8 iters/sec`); PPE needs `len(loader)` there.
class IteratorProgressBar {
 public:
  IteratorProgressBar(std::string name, std::optional<std::int64_t> total, std::ostream* out,
                      std::optional<bool> terminal, std::function<double()> clock, std::int64_t bar_length = 50)
      : name_(std::move(name)),
        total_(total),
        output_(out, terminal),
        clock_(std::move(clock)),
        bar_length_(bar_length) {
    if (out == nullptr) throw std::invalid_argument("ppe: the evaluator's progress bar needs a stream, got a null pointer");
    if (!clock_) throw std::invalid_argument("ppe: the evaluator's progress bar needs a clock");
    frame_.reserve(2 * name_.size() + static_cast<std::size_t>(bar_length_) + 256);
    // The plain display measures the first batch from the start of the pass.
    if (!output_.terminal()) record(0);
  }

  bool terminal() { return output_.terminal(); }

  /// Before batch `index` (0-based): on a terminal, draws the frame showing
  /// `index` batches done.
  void before(std::int64_t index) {
    if (output_.terminal()) draw_frame(index);
  }
  /// After a batch, `done` batches being done: elsewhere, writes a line.
  void after(std::int64_t done) {
    if (!output_.terminal()) write_line(done);
  }
  /// Erases the display (terminal only; PPE's `close()`).
  void close() {
    if (!output_.terminal()) return;
    output_.erase_below();
    output_.flush();
  }

 private:
  double rate(std::int64_t done) const {
    return static_cast<double>(done) / static_cast<double>(*total_);
  }
  std::pair<double, double> record(std::int64_t done) {
    const double epoch = total_ && *total_ > 0 ? rate(done) : 0.0;
    return speed_.update(done, epoch, clock_());
  }

  void draw_frame(std::int64_t done) {
    namespace pf = ppe::detail::pyfmt;
    const auto [speed_t, speed_e] = record(done);
    const int width = static_cast<int>(name_.size());
    const bool known = total_ && *total_ > 0;
    frame_.clear();
    frame_.append(ppe::detail::kEraseBelow);
    if (known) {
      const double r = rate(done);
      frame_.append(name_);
      frame_.push_back(' ');
      append_bar(frame_, r, bar_length_);
      pf::append_percent(frame_, r, 2, 6);
      frame_.push_back('\n');
    }
    pf::append_int(frame_, done, width);
    frame_.append(" iterations\n");
    pf::append_general(frame_, speed_t, 5, width);
    frame_.append(" iters/sec.");
    if (known) {
      frame_.append(" Estimated time to finish: ");
      append_eta(frame_, estimated_time(1.0 - rate(done), speed_e));
      frame_.push_back('.');
    }
    frame_.push_back('\n');
    ppe::detail::append_cursor_up(frame_, known ? 3 : 2);
    output_.write(frame_);
    output_.flush();
  }

  void write_line(std::int64_t done) {
    namespace pf = ppe::detail::pyfmt;
    const auto [speed_t, speed_e] = record(done);
    const bool known = total_ && *total_ > 0;
    frame_.clear();
    frame_.append(name_);
    frame_.append(": ");
    pf::append_int(frame_, done);
    if (known) {
      frame_.append(" / ");
      pf::append_int(frame_, *total_);
    }
    frame_.append(" iterations, ");
    if (known) {
      pf::append_percent(frame_, rate(done), 2);
      frame_.append(", ");
    }
    pf::append_general(frame_, speed_t, 5);
    frame_.append(" iters/sec");
    if (known) {
      frame_.append(", ETA ");
      append_eta(frame_, estimated_time(1.0 - rate(done), speed_e));
    }
    frame_.push_back('\n');
    output_.write(frame_);
    output_.flush();
  }

  std::string name_;
  std::optional<std::int64_t> total_;
  ppe::detail::DisplayOutput output_;
  std::function<double()> clock_;
  std::int64_t bar_length_;
  SpeedWindow speed_;
  std::string frame_;
};

}  // namespace ppe::training::extensions::detail
