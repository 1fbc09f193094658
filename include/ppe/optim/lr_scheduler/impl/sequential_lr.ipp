// Definitions of optim/lr_scheduler/sequential_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <torch/optim/optimizer.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/optim/lr_scheduler/sequential_lr.hpp"

namespace ppe::optim::lr_scheduler {

PPE_DECL SequentialLR::SequentialLR(torch::optim::Optimizer& optimizer,
                                    std::vector<std::reference_wrapper<LRScheduler>> schedulers,
                                    std::vector<std::int64_t> milestones, SequentialLROptions options)
    : optimizer_(&optimizer),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)),
      last_epoch_(options.last_epoch() + 1) {
  if (schedulers_.empty()) throw std::invalid_argument("ppe::SequentialLR: expects at least one scheduler, got none");
  for (std::size_t i = 0; i < schedulers_.size(); ++i)
    if (&schedulers_[i].get().optimizer() != &optimizer)
      throw std::invalid_argument(
          "ppe::SequentialLR: Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
          "schedulers at index " +
          std::to_string(i) + " to be different than the optimizer passed in.");
  if (milestones_.size() != schedulers_.size() - 1)
    throw std::invalid_argument(
        "ppe::SequentialLR: Sequential Schedulers expects number of schedulers provided to be one more than the "
        "number of milestone points, but got number of schedulers " +
        std::to_string(schedulers_.size()) + " and the number of milestones to be equal to " +
        std::to_string(milestones_.size()));
  // Back to the initial rates, every scheduler one step back, the first restarted (Python's order).
  LRScheduler& first = schedulers_.front().get();
  auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(first.extra(g, "initial_lr"));
  for (auto& s : schedulers_) s.get().last_epoch_ -= 1;
  first.initial_step();
  last_lr_ = first.get_last_lr();
}

PPE_DECL void SequentialLR::step() {
  ++last_epoch_;
  // Python's bisect_right, probe for probe (milestones are not checked to be sorted, as in Python).
  std::size_t lo = 0, hi = milestones_.size();
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (last_epoch_ < milestones_[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  const std::size_t idx = lo;
  LRScheduler& scheduler = schedulers_[idx].get();
  try {
    if (idx > 0 && milestones_[idx - 1] == last_epoch_)
      scheduler.step(std::int64_t{0});
    else
      scheduler.step();
  } catch (...) {
    --last_epoch_;
    throw;
  }
  last_lr_ = scheduler.get_last_lr();
}

PPE_DECL State SequentialLR::state_dict() const {
  State milestones = State::list();
  for (std::int64_t m : milestones_) milestones.as_list().emplace_back(m);
  State children = State::list();
  for (const auto& s : schedulers_) children.as_list().push_back(s.get().state_dict());
  return State::dict({{"_milestones", std::move(milestones)},
                      {"last_epoch", last_epoch_},
                      {"_last_lr", detail::number_list(last_lr_)},
                      {"_schedulers", std::move(children)}});
}

PPE_DECL void SequentialLR::load_state_dict(const State& state) {
  constexpr std::string_view who = "ppe::SequentialLR";
  const State& saved_milestones = detail::state_field(state, "_milestones", who);
  if (!saved_milestones.is_list()) detail::wrong_kind(saved_milestones, "_milestones", who, "a list of ints");
  std::vector<std::int64_t> milestones;
  for (const State& m : saved_milestones.as_list()) {
    if (!m.is_int()) detail::wrong_kind(m, "_milestones[" + std::to_string(milestones.size()) + "]", who, "an int");
    milestones.push_back(m.as_int());
  }
  if (milestones.size() != schedulers_.size() - 1)
    throw std::invalid_argument(std::string(who) + ": the saved state has " + std::to_string(milestones.size()) +
                                " milestones, expected " + std::to_string(schedulers_.size() - 1) +
                                " (one less than the schedulers)");
  const std::int64_t last_epoch = detail::int_field(state, "last_epoch", who);
  std::vector<double> last_lr = detail::number_list_field(state, "_last_lr", who, optimizer_->param_groups().size());
  const State& children = detail::state_field(state, "_schedulers", who);
  if (!children.is_list()) detail::wrong_kind(children, "_schedulers", who, "a list of scheduler states");
  if (children.size() != schedulers_.size())
    throw std::invalid_argument(std::string(who) + ": the saved state has " + std::to_string(children.size()) +
                                " schedulers, this one " + std::to_string(schedulers_.size()));
  milestones_ = std::move(milestones);
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
  for (std::size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i].get().load_state_dict(children.as_list()[i]);
}

}  // namespace ppe::optim::lr_scheduler
