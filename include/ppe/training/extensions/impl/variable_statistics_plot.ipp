// Definitions of training/extensions/variable_statistics_plot.hpp's out-of-line functions: included by it
// when header-only, compiled once by impl/plot_src.hpp with PPE_SEPARATE_COMPILATION.
// Feature: ppe::plot (Meson and pkg-config: ppe-plot).
#pragma once

#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/quantile.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/variable_statistics_plot.hpp"
#include "ppe/writing/thread_queue_writer.hpp"

namespace ppe::training::extensions {

namespace variable_statistics_plot {

PPE_DECL Reservoir::Reservoir(std::int64_t size, std::vector<std::int64_t> data_shape, std::uint64_t seed)
    : size_(size), shape_(std::move(data_shape)), rng_(seed) {
  if (size_ < 1) throw std::invalid_argument("ppe::Reservoir: the size must be >= 1, got " + std::to_string(size_));
  for (std::int64_t d : shape_)
    if (d < 0)
      throw std::invalid_argument("ppe::Reservoir: negative dimension in the data shape " +
                                  ppe::detail::python_shape(shape_));
}

PPE_DECL void Reservoir::add(const at::Tensor& x, std::optional<std::int64_t> idx) {
  if (!x.defined() || x.sizes() != at::IntArrayRef(shape_))
    throw std::invalid_argument("ppe::Reservoir: a value of shape " +
                                (x.defined() ? ppe::detail::python_shape(x.sizes()) : "(undefined)") +
                                " was added to a reservoir of shape " + ppe::detail::python_shape(shape_));
  const std::int64_t index = idx && *idx != 0 ? *idx : counter_;
  std::int64_t slot = -1;
  if (counter_ < size_) {
    slot = counter_;
  } else if (std::uniform_real_distribution<double>(0.0, 1.0)(rng_) <
             static_cast<double>(size_) / static_cast<double>(counter_ + 1)) {
    slot = std::uniform_int_distribution<std::int64_t>(0, size_ - 1)(rng_);
  }
  if (slot >= 0) {
    if (!data_.defined()) {
      std::vector<std::int64_t> full{size_};
      full.insert(full.end(), shape_.begin(), shape_.end());
      data_ = at::zeros(full, x.options().dtype(at::kFloat));
    }
    at::NoGradGuard no_grad;
    data_[slot].copy_(x.detach());  // on the device: no synchronisation
    if (slot == static_cast<std::int64_t>(idxs_.size()))
      idxs_.push_back(index);
    else
      idxs_[static_cast<std::size_t>(slot)] = index;
  }
  ++counter_;
}

PPE_DECL std::pair<std::vector<std::int64_t>, at::Tensor> Reservoir::get_data() const {
  std::vector<std::int64_t> order(idxs_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return idxs_[static_cast<std::size_t>(a)] < idxs_[static_cast<std::size_t>(b)];
  });
  std::vector<std::int64_t> sorted;
  sorted.reserve(order.size());
  for (std::int64_t i : order) sorted.push_back(idxs_[static_cast<std::size_t>(i)]);
  std::vector<std::int64_t> empty_shape{0};
  empty_shape.insert(empty_shape.end(), shape_.begin(), shape_.end());
  if (!data_.defined()) return {std::move(sorted), at::empty(empty_shape, at::TensorOptions().dtype(at::kFloat))};
  const at::Tensor perm = at::tensor(order, at::TensorOptions().dtype(at::kLong)).to(data_.device());
  return {std::move(sorted), data_.index_select(0, perm)};
}

PPE_DECL State Reservoir::state_dict() const {
  auto [idxs, data] = get_data();
  return State::dict({{"counter", counter_},
                      {"idxs", at::tensor(idxs, at::TensorOptions().dtype(at::kLong))},
                      {"data", data.to(at::kCPU)}});
}

PPE_DECL void Reservoir::load_state_dict(const State& state) {
  const std::int64_t counter = state.at("counter").as_int();
  const at::Tensor idxs = state.at("idxs").as_tensor<at::Tensor>().to(at::kLong).contiguous();
  const at::Tensor data = state.at("data").as_tensor<at::Tensor>();
  std::vector<std::int64_t> full{idxs.numel()};
  full.insert(full.end(), shape_.begin(), shape_.end());
  if (idxs.dim() != 1 || data.sizes() != at::IntArrayRef(full) || idxs.numel() > size_ || counter < idxs.numel())
    throw std::invalid_argument("ppe::Reservoir: the state's sample (idxs " + ppe::detail::python_shape(idxs.sizes()) +
                                ", data " + ppe::detail::python_shape(data.sizes()) + ", counter " +
                                std::to_string(counter) + ") does not fit a reservoir of size " +
                                std::to_string(size_) + " and shape " + ppe::detail::python_shape(shape_));
  std::vector<std::int64_t> all{size_};
  all.insert(all.end(), shape_.begin(), shape_.end());
  const at::Device device = data_.defined() ? data_.device() : data.device();
  at::Tensor buffer = at::zeros(all, at::TensorOptions().dtype(at::kFloat).device(device));
  if (idxs.numel() > 0) buffer.narrow(0, 0, idxs.numel()).copy_(data);
  const std::int64_t* p = idxs.data_ptr<std::int64_t>();
  idxs_.assign(p, p + idxs.numel());
  data_ = idxs.numel() > 0 || data_.defined() ? buffer : at::Tensor();
  counter_ = counter;
}

PPE_DECL Statistician::Statistician(bool collect_mean, bool collect_std, std::vector<double> percentile_sigmas)
    : mean_(collect_mean), std_(collect_std) {
  for (double s : percentile_sigmas) {
    if (!(s >= 0.0 && s <= 100.0))
      throw std::invalid_argument("ppe::VariableStatisticsPlot: a percentile must be in [0, 100], got " +
                                  std::to_string(s));
    q_.push_back(s / 100.0);
  }
}

PPE_DECL at::Tensor Statistician::operator()(const at::Tensor& x) const {
  at::NoGradGuard no_grad;
  const at::ScalarType type = x.scalar_type();
  const at::Tensor v = (type == at::kFloat || type == at::kDouble ? x : x.to(at::kFloat)).detach().reshape({-1});
  if (v.numel() == 0) return at::full({width()}, std::numeric_limits<double>::quiet_NaN(), v.options());
  std::vector<at::Tensor> parts;
  if (mean_) parts.push_back(v.mean().reshape({1}));
  if (std_) parts.push_back(v.std().reshape({1}));  // unbiased, as torch.std
  if (!q_.empty()) parts.push_back(at::quantile(v, at::tensor(q_, v.options())));
  return at::cat(parts);
}

}  // namespace variable_statistics_plot

namespace detail {

PPE_DECL std::vector<at::Tensor> parameters_of(const std::vector<std::shared_ptr<torch::nn::Module>>& modules) {
  std::vector<at::Tensor> out;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (!modules[i])
      throw std::invalid_argument("ppe::VariableStatisticsPlot: module " + std::to_string(i) + " of the list is null");
    for (const auto& p : modules[i]->parameters(/*recurse=*/true)) out.push_back(p);
  }
  return out;
}

}  // namespace detail

namespace detail {
inline std::vector<std::string> statistics_keys(bool data, bool grad) {
  std::vector<std::string> k;
  if (data) k.emplace_back("data");
  if (grad) k.emplace_back("grad");
  return k;
}
}  // namespace detail

PPE_DECL VariableStatisticsPlot::VariableStatisticsPlot(std::vector<at::Tensor> targets,
                                                        VariableStatisticsPlotOptions options)
    : vars_(std::move(targets)),
      keys_(detail::statistics_keys(options.report_data(), options.report_grad())),
      statistician_(options.plot_mean(), options.plot_std(), options.percentile_sigmas()),
      plot_mean_(options.plot_mean()),
      plot_std_(options.plot_std()),
      n_percentile_(static_cast<std::int64_t>(options.percentile_sigmas().size())),
      trigger_(options.trigger()),
      filename_(std::move(options.filename())),
      width_(options.figsize() ? options.figsize()->first : 640),
      height_(options.figsize() ? options.figsize()->second : 480),
      marker_(plot::parse_marker(options.marker())),
      grid_(options.grid()),
      writer_(std::move(options.writer())),
      rank_(options.rank()),
      samples_(options.max_sample_size() >= 1 ? options.max_sample_size() : 1,
               {static_cast<std::int64_t>(keys_.size()), statistician_.width()}, options.seed()) {
  if (vars_.empty())
    throw std::invalid_argument("ppe::VariableStatisticsPlot: need at least one variable for which to collect "
                                "statistics (the targets hold no tensor)");
  for (std::size_t i = 0; i < vars_.size(); ++i)
    if (!vars_[i].defined())
      throw std::invalid_argument("ppe::VariableStatisticsPlot: target " + std::to_string(i) + " is undefined");
  if (!plot_mean_ && !plot_std_ && n_percentile_ == 0)
    throw std::invalid_argument("ppe::VariableStatisticsPlot: nothing to plot (plot_mean, plot_std and "
                                "percentile_sigmas are all off)");
  if (keys_.empty())
    throw std::invalid_argument("ppe::VariableStatisticsPlot: nothing to plot (report_data and report_grad are "
                                "both false)");
  if (options.max_sample_size() < 1)
    throw std::invalid_argument("ppe::VariableStatisticsPlot: max_sample_size must be >= 1, got " +
                                std::to_string(options.max_sample_size()));
  plot::check_png_filename(filename_, "ppe::VariableStatisticsPlot");
  plot::Figure probe;
  probe.width = width_;
  probe.height = height_;
  plot::check_figure(probe);  // the figsize
  if (!writer_) writer_ = std::make_shared<writing::ThreadQueueWriter>();
}

PPE_DECL VariableStatisticsPlot::VariableStatisticsPlot(VariableStatisticsPlot&&) noexcept = default;
PPE_DECL VariableStatisticsPlot& VariableStatisticsPlot::operator=(VariableStatisticsPlot&&) noexcept = default;
PPE_DECL VariableStatisticsPlot::~VariableStatisticsPlot() = default;

PPE_DECL void VariableStatisticsPlot::operator()(Manager& m) {
  if (rank_ && *rank_ != m.rank()) return;
  // [kinds, statistics] on the targets' device; no host read.
  std::vector<at::Tensor> rows;
  for (const std::string& k : keys_) {
    std::vector<at::Tensor> xs;
    for (const at::Tensor& v : vars_) {
      const at::Tensor t = k == "data" ? v : v.grad();
      if (t.defined()) xs.push_back(t.detach().reshape({-1}).to(vars_.front().device()));
    }
    if (xs.empty())
      rows.push_back(at::zeros({statistician_.width()}, vars_.front().options().dtype(at::kFloat)));
    else
      rows.push_back(statistician_(xs.size() == 1 ? xs.front() : at::cat(xs)).to(at::kFloat));
  }
  samples_.add(at::stack(rows), m.iteration());
  if (trigger_(m)) m.writer_for(writer_)(filename_, plot::png_save_fn(figure()));
}

PPE_DECL plot::Figure VariableStatisticsPlot::figure() const {
  auto [idxs, device_data] = samples_.get_data();
  const at::Tensor data = device_data.to(at::kCPU).to(at::kDouble).contiguous();  // the one host transfer
  const std::int64_t n = data.size(0), width = data.size(2);
  const double* d = data.data_ptr<double>();
  const auto column = [&](std::size_t kind, std::int64_t stat) {
    std::vector<double> out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      out[static_cast<std::size_t>(i)] = d[(i * static_cast<std::int64_t>(keys_.size()) + static_cast<std::int64_t>(kind)) * width + stat];
    return out;
  };
  const std::vector<double> x(idxs.begin(), idxs.end());
  const plot::Color color = plot::cycle_color(0);
  const plot::Color translucent = color.with_alpha(0.2);

  plot::Figure f;
  f.width = width_;
  f.height = height_;
  f.rows = static_cast<int>(plot_mean_ || plot_std_) + static_cast<int>(n_percentile_ > 0);
  f.cols = static_cast<int>(keys_.size());
  f.axes.assign(static_cast<std::size_t>(f.rows * f.cols), plot::Axes{});
  for (auto& a : f.axes) a.grid = grid_;
  const std::int64_t offset = static_cast<std::int64_t>(plot_mean_) + static_cast<std::int64_t>(plot_std_);
  for (std::size_t col = 0; col < keys_.size(); ++col) {
    int row = 0;
    f.at(0, static_cast<int>(col)).title = keys_[col];
    if (plot_mean_ || plot_std_) {
      plot::Axes& a = f.at(row, static_cast<int>(col));
      plot::Series s;
      s.x = x;
      s.y = column(col, 0);
      s.color = color;
      s.marker = marker_;
      if (plot_mean_ && plot_std_) {
        const std::vector<double> sd = column(col, 1);
        plot::Band band;
        band.x = x;
        for (std::size_t i = 0; i < x.size(); ++i) {
          band.lower.push_back(s.y[i] - sd[i]);
          band.upper.push_back(s.y[i] + sd[i]);
        }
        band.color = translucent;
        a.bands.push_back(std::move(band));
        s.label = "mean, std";
      } else {
        s.label = plot_mean_ ? "mean" : "std";
      }
      a.series.push_back(std::move(s));
      ++row;
    }
    if (n_percentile_ > 0) {
      plot::Axes& a = f.at(row, static_cast<int>(col));
      a.x_label = "iteration";
      const std::int64_t mid = n_percentile_ / 2;
      const bool odd = n_percentile_ % 2 == 1;
      for (std::int64_t i = 0; i <= mid; ++i) {
        if (odd && i == mid) {
          plot::Series s;
          s.label = "percentile";
          s.x = x;
          s.y = column(col, offset + i);
          s.color = color;
          s.marker = marker_;
          a.series.push_back(std::move(s));
        } else {
          plot::Band b;
          b.label = i == mid ? "percentile" : "_nolegend_";
          b.x = x;
          b.lower = column(col, offset + i);
          b.upper = column(col, offset + n_percentile_ - 1 - i);
          b.color = translucent;
          a.bands.push_back(std::move(b));
        }
      }
    }
  }
  return f;
}

PPE_DECL void VariableStatisticsPlot::finalize(Manager&) { writer_->finalize(); }

PPE_DECL State VariableStatisticsPlot::state_dict() const {
  return State::dict({{"_trigger", trigger_.state_dict()}, {"_samples", samples_.state_dict()}});
}

PPE_DECL void VariableStatisticsPlot::load_state_dict(const State& state) {
  if (const State* s = state.find("_samples")) samples_.load_state_dict(*s);
  if (const State* t = state.find("_trigger")) trigger_.load_state_dict(*t);
}

}  // namespace ppe::training::extensions
