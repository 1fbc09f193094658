// Definitions of training/extensions/progress_bar.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ppe/training/extensions/progress_bar.hpp"

namespace ppe::training::extensions {

PPE_DECL ProgressBar::ProgressBar(ProgressBarOptions options)
    : length_(options.training_length()),
      interval_(options.update_interval()),
      bar_length_(options.bar_length()),
      output_(options.out(), options.terminal()),
      rank_(options.rank()) {
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

PPE_DECL void ProgressBar::finalize(Manager&) {
  if (!output_.terminal()) return;
  output_.erase_below();
  output_.flush();
}

PPE_DECL void ProgressBar::update(Manager& manager) {
  if (rank_ && *rank_ != manager.rank()) return;
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

PPE_DECL void ProgressBar::check_length(const TrainingLength& l) {
  if (!(l.length > 0) || !std::isfinite(l.length))
    throw std::invalid_argument("ppe: ProgressBar training_length must be a finite length > 0, got " +
                                std::to_string(l.length) + " " + unit_name(l.unit) + "s");
}

PPE_DECL const TrainingLength& ProgressBar::resolve_length(const Manager& manager) {
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

PPE_DECL std::string ProgressBar::length_text(double length) {
  if (length == std::trunc(length) && length < 1e15) return std::to_string(static_cast<std::int64_t>(length));
  return ppe::detail::python_float_repr(length);
}

// Called after resolve_length (it reads length_text_).
PPE_DECL void ProgressBar::append_progress(std::int64_t epoch, const TrainingLength& length) {
  frame_.append(" iter, ");
  ppe::detail::pyfmt::append_int(frame_, epoch);
  frame_.append(" epoch / ");
  frame_.append(length_text_);
  frame_.push_back(' ');
  frame_.append(unit_name(length.unit));
  frame_.push_back('s');
}

}  // namespace ppe::training::extensions
