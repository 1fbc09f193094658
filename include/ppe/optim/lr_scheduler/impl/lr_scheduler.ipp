// Definitions of optim/lr_scheduler/lr_scheduler.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <torch/optim/optimizer.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"

namespace ppe::optim::lr_scheduler {

PPE_DECL std::vector<double> PerGroup::expand(std::size_t groups, std::string_view who, std::string_view name) const {
  if (scalar_) return std::vector<double>(groups, values_.front());
  if (values_.size() != groups)
    throw std::invalid_argument(std::string(who) + ": expected " + std::to_string(groups) + " values for " +
                                std::string(name) + " (one per param group), got " + std::to_string(values_.size()));
  return values_;
}

namespace detail {

PPE_DECL std::shared_ptr<GroupExtras> group_extras(const torch::optim::Optimizer& optimizer, bool create) {
  // Keyed by address and held weakly: an entry lives exactly as long as a
  // scheduler of that optimizer, which the optimizer must outlive, so a new
  // optimizer at a reused address never finds a stale entry of its own.
  static std::mutex mutex;
  static std::vector<std::pair<const void*, std::weak_ptr<GroupExtras>>> registry;
  std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(registry, [](const auto& entry) { return entry.second.expired(); });
  for (const auto& [key, weak] : registry)
    if (key == &optimizer)
      if (auto found = weak.lock()) return found;
  if (!create) return nullptr;
  auto made = std::make_shared<GroupExtras>();
  registry.emplace_back(&optimizer, made);
  return made;
}

PPE_DECL double py_div(double a, double b, std::string_view who) {
  if (b == 0)
    throw std::domain_error(std::string(who) + ": float division by zero (Python raises ZeroDivisionError here)");
  return a / b;
}

PPE_DECL const State& state_field(const State& state, std::string_view key, std::string_view who) {
  if (!state.is_dict())
    throw std::invalid_argument(std::string(who) + ": the saved scheduler state is a " +
                                std::string(State::kind_name(state.kind())) + ", expected a dict");
  if (const State* s = state.find(key)) return *s;
  throw std::invalid_argument(std::string(who) + ": the saved scheduler state has no '" + std::string(key) +
                              "' (keys present: " + ppe::detail::python_key_list(state.as_dict()) + ")");
}

[[noreturn]] PPE_DECL void wrong_kind(const State& value, std::string_view key, std::string_view who,
                                      std::string_view expected) {
  throw std::invalid_argument(std::string(who) + ": the saved '" + std::string(key) + "' is a " +
                              std::string(State::kind_name(value.kind())) + ", expected " + std::string(expected));
}

PPE_DECL std::int64_t int_field(const State& state, std::string_view key, std::string_view who) {
  const State& v = state_field(state, key, who);
  if (!v.is_int()) wrong_kind(v, key, who, "an int");
  return v.as_int();
}

PPE_DECL double number_field(const State& state, std::string_view key, std::string_view who) {
  const State& v = state_field(state, key, who);
  if (!v.is_number()) wrong_kind(v, key, who, "a number");
  return v.as_double();
}

PPE_DECL bool bool_field(const State& state, std::string_view key, std::string_view who) {
  const State& v = state_field(state, key, who);
  if (!v.is_bool()) wrong_kind(v, key, who, "a bool");
  return v.as_bool();
}

PPE_DECL std::vector<double> number_list_field(const State& state, std::string_view key, std::string_view who,
                                               std::optional<std::size_t> size) {
  const State& v = state_field(state, key, who);
  if (!v.is_list()) wrong_kind(v, key, who, "a list of numbers");
  std::vector<double> out;
  for (const State& x : v.as_list()) {
    if (!x.is_number()) wrong_kind(x, std::string(key) + "[" + std::to_string(out.size()) + "]", who, "a number");
    out.push_back(x.as_double());
  }
  if (size && out.size() != *size)
    throw std::invalid_argument(std::string(who) + ": the saved '" + std::string(key) + "' has " +
                                std::to_string(out.size()) + " values, expected " + std::to_string(*size) +
                                " (one per param group)");
  return out;
}

PPE_DECL State number_list(const std::vector<double>& values) {
  State::List out;
  out.reserve(values.size());
  for (double v : values) out.emplace_back(v);
  return State(std::move(out));
}

}  // namespace detail

PPE_DECL std::vector<std::map<std::string, double, std::less<>>> param_group_extras(
    const torch::optim::Optimizer& optimizer) {
  const auto extras = detail::group_extras(optimizer, false);
  if (!extras) return {};
  auto out = *extras;
  out.resize(optimizer.param_groups().size());
  return out;
}

PPE_DECL LRScheduler::LRScheduler(torch::optim::Optimizer& optimizer, std::string_view name)
    : optimizer_(&optimizer), extras_(detail::group_extras(optimizer)), name_("ppe::" + std::string(name)) {}

PPE_DECL std::size_t LRScheduler::num_groups() const { return optimizer_->param_groups().size(); }

PPE_DECL bool LRScheduler::has_extra(std::size_t g, std::string_view key) const {
  return g < extras_->size() && (*extras_)[g].find(key) != (*extras_)[g].end();
}

PPE_DECL double LRScheduler::extra(std::size_t g, std::string_view key) const {
  if (!has_extra(g, key))
    throw std::invalid_argument(name_ + ": param '" + std::string(key) + "' is not specified in param_groups[" +
                                std::to_string(g) + "]");
  return (*extras_)[g].find(key)->second;
}

PPE_DECL void LRScheduler::set_extra(std::size_t g, std::string_view key, double value) {
  if (extras_->size() <= g) extras_->resize(g + 1);
  (*extras_)[g].insert_or_assign(std::string(key), value);
}

PPE_DECL std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  out.reserve(num_groups());
  for (const auto& group : optimizer_->param_groups()) out.push_back(group.options().get_lr());
  return out;
}

PPE_DECL void LRScheduler::start(std::int64_t last_epoch, bool verbose) {
  const std::size_t groups = num_groups();
  if (last_epoch == -1) {
    for (std::size_t g = 0; g < groups; ++g)
      if (!has_extra(g, "initial_lr")) set_extra(g, "initial_lr", optimizer_->param_groups()[g].options().get_lr());
  } else {
    for (std::size_t g = 0; g < groups; ++g)
      if (!has_extra(g, "initial_lr"))
        throw std::invalid_argument(name_ + ": param 'initial_lr' is not specified in param_groups[" +
                                    std::to_string(g) + "] when resuming an optimizer (last_epoch " +
                                    std::to_string(last_epoch) +
                                    " needs the initial rates, which a scheduler of this optimizer records while "
                                    "it lives; to resume, construct with last_epoch -1 and load_state_dict)");
  }
  std::vector<double> base;
  for (std::size_t g = 0; g < groups; ++g) base.push_back(extra(g, "initial_lr"));
  base_lrs_ = std::move(base);
  last_epoch_ = last_epoch;
  verbose_ = verbose;
  initial_step();
}

PPE_DECL void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

PPE_DECL void LRScheduler::step() {
  const std::int64_t saved_epoch = last_epoch_, saved_count = step_count_;
  ++step_count_;
  ++last_epoch_;
  std::vector<double> lrs;
  try {
    lrs = get_lr();
  } catch (...) {
    last_epoch_ = saved_epoch;
    step_count_ = saved_count;
    throw;
  }
  apply_lrs(lrs);
}

PPE_DECL void LRScheduler::step(std::int64_t epoch) {
  const std::int64_t saved_epoch = last_epoch_, saved_count = step_count_;
  ++step_count_;
  last_epoch_ = epoch;
  std::vector<double> lrs;
  try {
    auto closed = closed_form_lr();
    lrs = closed ? std::move(*closed) : get_lr();
  } catch (...) {
    last_epoch_ = saved_epoch;
    step_count_ = saved_count;
    throw;
  }
  apply_lrs(lrs, epoch);
}

PPE_DECL void LRScheduler::apply_lrs(const std::vector<double>& lrs,
                                     std::variant<std::monostate, std::int64_t, double> epoch) {
  auto& groups = optimizer_->param_groups();
  const std::size_t n = std::min(groups.size(), lrs.size());
  for (std::size_t g = 0; g < n; ++g) {
    groups[g].options().set_lr(lrs[g]);
    if (verbose_) {
      // Python's print_lr: "%.4e" rates, "%.5d" int epochs, "%.2f" float epochs.
      if (const auto* e = std::get_if<std::int64_t>(&epoch))
        std::printf("Epoch %.5lld: adjusting learning rate of group %zu to %.4e.\n", static_cast<long long>(*e), g,
                    lrs[g]);
      else if (const auto* f = std::get_if<double>(&epoch))
        std::printf("Epoch %.2f: adjusting learning rate of group %zu to %.4e.\n", *f, g, lrs[g]);
      else
        std::printf("Adjusting learning rate of group %zu to %.4e.\n", g, lrs[g]);
    }
  }
  last_lr_ = group_lrs();
}

PPE_DECL void LRScheduler::write_base_state(State& state) const {
  state.set("base_lrs", detail::number_list(base_lrs_));
  state.set("last_epoch", last_epoch_);
  state.set("verbose", verbose_);
  state.set("_step_count", step_count_);
  // Python sets it only while step() runs; a saved state always has False.
  state.set("_get_lr_called_within_step", false);
  state.set("_last_lr", detail::number_list(last_lr_));
}

PPE_DECL LRScheduler::BaseFields LRScheduler::read_base_state(const State& state) const {
  BaseFields f;
  f.base_lrs = detail::number_list_field(state, "base_lrs", name_, num_groups());
  f.last_epoch = detail::int_field(state, "last_epoch", name_);
  f.step_count = detail::int_field(state, "_step_count", name_);
  f.verbose = detail::bool_field(state, "verbose", name_);
  f.last_lr = detail::number_list_field(state, "_last_lr", name_, num_groups());
  return f;
}

PPE_DECL void LRScheduler::commit_base_state(BaseFields fields) {
  base_lrs_ = std::move(fields.base_lrs);
  last_lr_ = std::move(fields.last_lr);
  last_epoch_ = fields.last_epoch;
  step_count_ = fields.step_count;
  verbose_ = fields.verbose;
}

}  // namespace ppe::optim::lr_scheduler
