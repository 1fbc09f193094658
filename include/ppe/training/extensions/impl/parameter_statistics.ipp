// Definitions of training/extensions/parameter_statistics.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/quantile.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/training/extensions/parameter_statistics.hpp"

namespace ppe::training::extensions {

namespace detail {

inline constexpr double kStatisticNaN = std::numeric_limits<double>::quiet_NaN();

/// Throws unless `name` is a usable statistic name and `function` is set.
inline void check_statistic(const std::string& name, const StatisticFunction& function) {
  if (name.empty()) throw std::invalid_argument("ppe::ParameterStatistics: a statistic has an empty name");
  if (!function)
    throw std::invalid_argument("ppe::ParameterStatistics: the statistic '" + name + "' has no function");
}

}  // namespace detail

PPE_DECL Statistics default_parameter_statistics() {
  // min and max have no value on an empty tensor: NaN, where torch.min raises.
  const auto extremum = [](bool max) {
    return [max](const at::Tensor& x) {
      if (x.numel() == 0) return at::full({}, detail::kStatisticNaN, x.options());
      return max ? x.max() : x.min();
    };
  };
  return {
      {"mean", [](const at::Tensor& x) { return x.mean(); }},
      {"std", [](const at::Tensor& x) { return x.std(); }},
      {"min", extremum(false)},
      {"max", extremum(true)},
      // numel - count_nonzero: PPE's (x == 0).sum() in one pass, without a bool tensor (NaN is not a zero in either).
      {"zeros", [](const at::Tensor& x) { return at::rsub(at::count_nonzero(x), x.numel()); }},
  };
}

PPE_DECL StatisticFunction percentile_statistic(std::vector<double> sigmas) {
  if (sigmas.empty()) throw std::invalid_argument("ppe::percentile_statistic: no percentiles given");
  std::vector<double> q;
  for (double s : sigmas) {
    if (!(s >= 0.0 && s <= 100.0))
      throw std::invalid_argument("ppe::percentile_statistic: a percentile must be in [0, 100], got " +
                                  std::to_string(s));
    q.push_back(s / 100.0);
  }
  return [q = std::move(q)](const at::Tensor& x) {
    const at::ScalarType type = x.scalar_type();
    const at::Tensor v = type == at::kFloat || type == at::kDouble ? x : x.to(at::kFloat);  // quantile's types
    if (v.numel() == 0) return at::full({static_cast<std::int64_t>(q.size())}, detail::kStatisticNaN, v.options());
    return at::quantile(v, at::tensor(q, v.options()));
  };
}

namespace detail {

PPE_DECL ParameterStatisticsCore::ParameterStatisticsCore(std::vector<std::shared_ptr<torch::nn::Module>> links,
                                                          ParameterStatisticsOptions options)
    : links_(std::move(links)),
      statistics_(std::move(options.statistics())),
      report_params_(options.report_params()),
      report_grads_(options.report_grads()),
      skip_nan_(options.skip_nan_params()),
      prefix_(std::move(options.prefix())) {
  for (std::size_t i = 0; i < links_.size(); ++i)
    if (!links_[i])
      throw std::invalid_argument("ppe::ParameterStatistics: module " + std::to_string(i) + " of the list is null");
  for (std::size_t i = 0; i < statistics_.size(); ++i) {
    check_statistic(statistics_[i].name, statistics_[i].function);
    for (std::size_t j = 0; j < i; ++j)
      if (statistics_[j].name == statistics_[i].name)
        throw std::invalid_argument("ppe::ParameterStatistics: the statistic '" + statistics_[i].name +
                                    "' is given twice");
  }
}

PPE_DECL void ParameterStatisticsCore::register_statistics(std::string name, StatisticFunction function) {
  check_statistic(name, function);
  // The sums so far keep their keys; the next call lays out the new list.
  fold();
  groups_.clear();
  widths_.clear();
  keys_.clear();
  for (Statistic& s : statistics_)
    if (s.name == name) {
      s.function = std::move(function);
      return;
    }
  statistics_.push_back({std::move(name), std::move(function)});
}

PPE_DECL void ParameterStatisticsCore::add() {
  const at::NoGradGuard no_grad;
  std::size_t groups = 0;
  call_widths_.clear();
  values_.clear();
  at::Device device = at::kCPU;  // where the sums are: the first statistic's device
  for (std::size_t link = 0; link < links_.size(); ++link) {
    for (const auto& item : links_[link]->named_parameters(/*recurse=*/true)) {
      for (const bool grad : {false, true}) {
        if (!(grad ? report_grads_ : report_params_)) continue;
        const at::Tensor& t = grad ? item.value().grad() : item.value();
        if (!t.defined()) continue;  // no gradient yet: no grad keys in this call
        // Flattened: a statistic assumes no axes (PPE).
        const at::Tensor x = (t.is_sparse() ? t.to_dense() : t).reshape(-1);
        const std::size_t first = values_.size();
        for (const Statistic& s : statistics_) {
          at::Tensor r = s.function(x);
          if (!r.defined() || r.dim() > 1 || r.numel() == 0)
            throw std::invalid_argument("ppe::ParameterStatistics: the statistic '" + s.name + "' of '" + item.key() +
                                        (grad ? "/grad" : "/data") + "' returned " +
                                        (r.defined() ? "a tensor of shape " + ppe::detail::python_shape(r.sizes())
                                                     : std::string("an undefined tensor")) +
                                        "; a statistic returns a 0-dim tensor, or a 1-D tensor of one or more values");
          if (values_.empty()) device = r.device();
          values_.push_back(r.reshape(-1).to(device, at::kDouble));
          call_widths_.push_back(values_.back().numel());
        }
        if (skip_nan_ && values_.size() > first) {
          // One NaN per value when the tensor has a NaN, decided on the device.
          const std::size_t n = values_.size() - first;
          at::Tensor group = n == 1 ? values_[first] : at::cat(at::TensorList(values_.data() + first, n));
          group = group.masked_fill(at::isnan(x).any().to(device), kStatisticNaN);
          values_.resize(first);
          values_.push_back(std::move(group));
        }
        // Reuses the strings of the previous call: no allocation in a steady state.
        if (groups < call_groups_.size()) {
          Group& g = call_groups_[groups];
          g.link = link;
          g.name.assign(item.key());
          g.grad = grad;
        } else {
          call_groups_.push_back({link, item.key(), grad});
        }
        ++groups;
      }
    }
  }
  call_groups_.resize(groups);
  if (values_.empty()) return;  // nothing to observe in this call
  at::Tensor v = values_.size() == 1 ? values_.front() : at::cat(values_);
  values_.clear();
  if (call_groups_ != groups_ || call_widths_ != widths_) relayout();
  if (count_ == 0) {
    sum_ = v.clone();  // v may share memory with a statistic's result
    sq_ = v.square();
  } else {
    sum_.add_(v);
    sq_.addcmul_(v, v);
  }
  ++count_;
  ++calls_;
}

PPE_DECL void ParameterStatisticsCore::relayout() {
  std::vector<std::string> keys;
  const std::string prefix = prefix_.empty() ? std::string() : prefix_ + "/";
  std::size_t w = 0;
  for (const Group& g : call_groups_) {
    const std::string base = prefix + g.name + (g.grad ? "/grad/" : "/data/");
    for (const Statistic& s : statistics_) {
      const std::int64_t width = call_widths_[w++];
      if (width == 1) {
        keys.push_back(base + s.name);
      } else {
        for (std::int64_t i = 0; i < width; ++i) keys.push_back(base + s.name + "/" + std::to_string(i));
      }
    }
  }
  std::unordered_set<std::string_view> seen;
  for (const std::string& k : keys)
    if (!seen.insert(k).second)
      throw std::invalid_argument(
          "ppe::ParameterStatistics: two values would be reported under the key '" + k +
          "' (two of the modules have a parameter of that name, or statistic names clash); observe the modules "
          "through one parent module (whose parameter names differ), or with one ParameterStatistics per module "
          "and different prefixes");
  fold();
  groups_ = call_groups_;
  widths_ = call_widths_;
  keys_ = std::move(keys);
}

PPE_DECL at::Tensor ParameterStatisticsCore::device_sums_on_host() const {
  return at::stack({sum_, sq_}).to(at::kCPU).contiguous();
}

PPE_DECL ParameterStatisticsCore::HostSum& ParameterStatisticsCore::host_sum(const std::string& key) {
  for (HostSum& h : host_)
    if (h.key == key) return h;
  host_.push_back({key, 0.0, 0.0, 0});
  return host_.back();
}

PPE_DECL void ParameterStatisticsCore::fold() {
  if (count_ == 0) return;
  const at::Tensor sums = device_sums_on_host();
  const auto a = sums.accessor<double, 2>();
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    HostSum& h = host_sum(keys_[i]);
    h.x += a[0][static_cast<std::int64_t>(i)];
    h.x2 += a[1][static_cast<std::int64_t>(i)];
    h.n += count_;
  }
  sum_ = at::Tensor();
  sq_ = at::Tensor();
  count_ = 0;
}

PPE_DECL void ParameterStatisticsCore::report() {
  if (reporting::Reporter* r = reporting::Reporter::current()) {
    if (host_.empty()) {
      // The usual interval: one layout, read in one transfer.
      if (count_ > 0) {
        const at::Tensor sums = device_sums_on_host();
        const auto a = sums.accessor<double, 2>();
        const double n = static_cast<double>(count_);
        for (std::size_t i = 0; i < keys_.size(); ++i)
          r->report(keys_[i], reporting::Value(a[0][static_cast<std::int64_t>(i)] / n));
      }
    } else {
      fold();
      for (const HostSum& h : host_) r->report(h.key, reporting::Value(h.x / static_cast<double>(h.n)));
    }
  }
  host_.clear();
  sum_ = at::Tensor();
  sq_ = at::Tensor();
  count_ = 0;
  calls_ = 0;
}

PPE_DECL State ParameterStatisticsCore::summary_state() const {
  std::vector<HostSum> all = host_;
  if (count_ > 0) {
    const at::Tensor sums = device_sums_on_host();
    const auto a = sums.accessor<double, 2>();
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      auto it = std::find_if(all.begin(), all.end(), [&](const HostSum& h) { return h.key == keys_[i]; });
      if (it == all.end()) it = all.insert(all.end(), HostSum{keys_[i], 0.0, 0.0, 0});
      it->x += a[0][static_cast<std::int64_t>(i)];
      it->x2 += a[1][static_cast<std::int64_t>(i)];
      it->n += count_;
    }
  }
  State out = State::dict();
  for (const HostSum& h : all) out.set(h.key, State::dict({{"_x", h.x}, {"_x2", h.x2}, {"_n", h.n}}));
  return out;
}

PPE_DECL void ParameterStatisticsCore::load_summary_state(const State& state) {
  const auto fail = [](const std::string& what) {
    return std::invalid_argument("ppe::ParameterStatistics::load_state_dict: " + what);
  };
  if (!state.is_dict())
    throw fail("'_summary' must be a dict of {\"_x\", \"_x2\", \"_n\"} per key, got a " +
               std::string(State::kind_name(state.kind())));
  std::vector<HostSum> loaded;
  std::int64_t calls = 0;
  for (const State::Item& item : state.as_dict()) {
    const std::string& key = item.first;
    const State& entry = item.second;
    const auto number = [&](std::string_view field) {
      const State* f = entry.find(field);
      if (f && f->is_number()) return f->as_double();
      if (f && f->is_tensor() && f->as_tensor().numel() == 1) return f->as_tensor().item<double>();
      throw fail("'_summary' entry '" + key + "' needs a number '" + std::string(field) + "'");
    };
    const double x = number("_x"), x2 = number("_x2"), n = number("_n");
    if (!(n >= 0) || n != std::floor(n)) throw fail("'_summary' entry '" + key + "' has a '_n' that is no count");
    loaded.push_back({key, x, x2, static_cast<std::int64_t>(n)});
    calls = std::max(calls, loaded.back().n);
  }
  host_ = std::move(loaded);
  sum_ = at::Tensor();
  sq_ = at::Tensor();
  count_ = 0;
  calls_ = calls;
}

}  // namespace detail

}  // namespace ppe::training::extensions
