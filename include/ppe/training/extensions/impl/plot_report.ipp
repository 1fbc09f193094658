// Definitions of training/extensions/plot_report.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/plot_src.hpp with PPE_SEPARATE_COMPILATION.
// Feature: ppe::plot (Meson and pkg-config: ppe-plot).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/plot_report.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing/thread_queue_writer.hpp"

namespace ppe::training::extensions {

namespace detail {

PPE_DECL std::string plot_data_to_json(const std::vector<std::string>& keys,
                                       const std::vector<std::vector<PlotReport::Point>>& data) {
  std::string out = "{";
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (k) out += ", ";
    // Python's json.dumps escapes as nlohmann does with ensure_ascii.
    out += nlohmann::json(keys[k]).dump(-1, ' ', true);
    out += ": [";
    for (std::size_t i = 0; i < data[k].size(); ++i) {
      const PlotReport::Point& p = data[k][i];
      if (i) out += ", ";
      out += '[';
      out += p.x_is_int ? std::to_string(static_cast<std::int64_t>(p.x)) : ppe::detail::python_json_float(p.x);
      out += ", ";
      out += ppe::detail::python_json_float(p.y);
      out += ']';
    }
    out += ']';
  }
  out += '}';
  return out;
}

PPE_DECL std::vector<std::pair<std::string, std::vector<PlotReport::Point>>> plot_data_from_json(
    const std::string& text) {
  // Python's json writes NaN, Infinity and -Infinity, which nlohmann does not
  // read: outside strings they become strings first.
  std::string t;
  t.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      t += c;
      if (c == '\\' && i + 1 < text.size()) t += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::char_traits<char>::length(word);
      if (text.compare(i, n, word) == 0) {
        t += '"';
        t += word;
        t += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) t += c;
  }
  const auto fail = [](const std::string& why) {
    throw std::invalid_argument("ppe::PlotReport: the state's plot data is not PPE's {key: [[x, y], ...]} JSON: " +
                                why);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(t);
  } catch (const nlohmann::json::exception& e) {
    fail(e.what());
  }
  if (!j.is_object()) fail("not an object");
  // A value in a message: nlohmann's dump recurses into nested lists (a
  // 30,000-level one overflowed the stack) and may be as long as the file.
  const auto brief = [](const nlohmann::json& v) -> std::string {
    if (v.is_array()) return "a list of " + std::to_string(v.size());
    if (v.is_object()) return "an object of " + std::to_string(v.size()) + " keys";
    std::string s = v.dump(-1, ' ', true);
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
  };
  const auto number = [&](const nlohmann::json& v, bool& is_int) -> double {
    is_int = v.is_number_integer();
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    fail("a coordinate is not a number: " + brief(v));
    return 0;
  };
  std::vector<std::pair<std::string, std::vector<PlotReport::Point>>> out;
  for (const auto& [key, points] : j.items()) {
    if (!points.is_array()) fail("the value of \"" + key + "\" is not a list");
    std::vector<PlotReport::Point> pts;
    for (const auto& p : points) {
      if (!p.is_array() || p.size() != 2) fail("a point of \"" + key + "\" is not an [x, y] pair: " + brief(p));
      PlotReport::Point q;
      bool y_int = false;
      q.x = number(p[0], q.x_is_int);
      q.y = number(p[1], y_int);
      pts.push_back(q);
    }
    out.emplace_back(key, std::move(pts));
  }
  return out;
}

}  // namespace detail

PPE_DECL PlotReport::PlotReport(std::vector<std::string> y_keys, PlotReportOptions options)
    : y_keys_(std::move(y_keys)),
      x_key_(std::move(options.x_key())),
      trigger_(options.trigger()),
      postprocess_(std::move(options.postprocess())),
      filename_(std::move(options.filename())),
      marker_(plot::parse_marker(options.marker())),
      grid_(options.grid()),
      writer_(std::move(options.writer())),
      rank_(options.rank()) {
  if (y_keys_.empty()) throw std::invalid_argument("ppe::PlotReport: no y key given (give the report keys to plot)");
  for (std::size_t i = 0; i < y_keys_.size(); ++i) {
    if (y_keys_[i].empty()) throw std::invalid_argument("ppe::PlotReport: y key " + std::to_string(i) + " is empty");
    for (std::size_t j = 0; j < i; ++j)
      if (y_keys_[j] == y_keys_[i])
        throw std::invalid_argument("ppe::PlotReport: the y key \"" + y_keys_[i] + "\" is given twice");
  }
  if (x_key_.empty()) throw std::invalid_argument("ppe::PlotReport: the x key is empty");
  plot::check_png_filename(filename_, "ppe::PlotReport");
  if (!writer_) writer_ = std::make_shared<writing::ThreadQueueWriter>();
  data_.resize(y_keys_.size());
}

PPE_DECL PlotReport::PlotReport(PlotReport&&) noexcept = default;
PPE_DECL PlotReport& PlotReport::operator=(PlotReport&&) noexcept = default;
PPE_DECL PlotReport::~PlotReport() = default;

PPE_DECL void PlotReport::finalize(Manager&) { writer_->finalize(); }

PPE_DECL std::vector<std::string> PlotReport::consumed_keys() const {
  std::vector<std::string> keys = y_keys_;
  if (x_key_ != "iteration" && x_key_ != "epoch" &&
      std::find(keys.begin(), keys.end(), x_key_) == keys.end())
    keys.push_back(x_key_);
  return keys;
}

PPE_DECL const std::vector<PlotReport::Point>& PlotReport::data(std::string_view key) const {
  static const std::vector<Point> none;
  for (std::size_t i = 0; i < y_keys_.size(); ++i)
    if (y_keys_[i] == key) return data_[i];
  return none;
}

PPE_DECL plot::Figure PlotReport::figure() const {
  plot::Figure f;
  plot::Axes& a = f.axes.front();
  a.x_label = x_key_;
  a.grid = grid_;
  a.legend = plot::LegendPlace::OutsideRight;
  // matplotlib's colour cycle advances only for keys that are drawn.
  std::size_t color = 0;
  for (std::size_t k = 0; k < y_keys_.size(); ++k) {
    if (data_[k].empty()) continue;
    plot::Series s;
    s.label = y_keys_[k];
    s.color = plot::cycle_color(color++);
    s.marker = marker_;
    s.x.reserve(data_[k].size());
    s.y.reserve(data_[k].size());
    for (const Point& p : data_[k]) {
      s.x.push_back(p.x);
      s.y.push_back(p.y);
    }
    a.series.push_back(std::move(s));
  }
  return f;
}

PPE_DECL void PlotReport::emit(Manager& m) {
  // Every mean in one transfer per device (one host synchronisation).
  const std::vector<std::pair<std::string, double>> means = reporting::to_doubles(summary_.compute_mean());
  summary_.reset();
  Point x;
  if (x_key_ == "iteration") {
    x = {static_cast<double>(m.iteration()), 0, true};
  } else if (x_key_ == "epoch") {
    x = {static_cast<double>(m.epoch()), 0, true};
  } else {
    const auto it = std::find_if(means.begin(), means.end(), [&](const auto& kv) { return kv.first == x_key_; });
    if (it == means.end()) {
      std::vector<std::string> present = {"epoch", "iteration"};
      for (const auto& kv : means) present.push_back(kv.first);
      throw std::out_of_range("ppe::PlotReport: the x key \"" + x_key_ +
                              "\" was not reported during the interval (it must be \"iteration\", \"epoch\" or a "
                              "y key); keys present: " + ppe::detail::python_str_list(present));
    }
    x = {it->second, 0, false};
  }
  for (std::size_t k = 0; k < y_keys_.size(); ++k)
    for (const auto& [key, mean] : means)
      if (key == y_keys_[k]) data_[k].push_back(Point{x.x, mean, x.x_is_int});

  plot::Figure f = figure();
  if (!f.axes.front().has_data()) {
    ppe::warn("ppe::PlotReport: no data found for the keys " + ppe::detail::python_str_list(y_keys_) + ", " +
              filename_ + " not written");
    return;
  }
  if (postprocess_) postprocess_(f);
  plot::check_figure(f);  // a bad change fails here, on the training thread
  m.writer_for(writer_)(filename_, plot::png_save_fn(std::move(f)));
}

PPE_DECL State PlotReport::state_dict() const {
  return State::dict({{"_plot_" + filename_, detail::plot_data_to_json(y_keys_, data_)}});
}

PPE_DECL void PlotReport::load_state_dict(const State& state) {
  const std::string key = "_plot_" + filename_;
  const State* s = state.find(key);
  if (!s) {
    throw std::invalid_argument("ppe::PlotReport: the state has no \"" + key + "\" (the key follows the filename); "
                                "keys present: " +
                                ppe::detail::python_key_list(state.is_dict() ? state.as_dict() : State::Dict()));
  }
  if (!s->is_string())
    throw std::invalid_argument("ppe::PlotReport: the state's \"" + key + "\" must be a JSON string, got a " +
                                std::string(State::kind_name(s->kind())));
  auto loaded = detail::plot_data_from_json(s->as_string());
  std::vector<std::vector<Point>> data(y_keys_.size());
  for (auto& [k, pts] : loaded)
    for (std::size_t i = 0; i < y_keys_.size(); ++i)
      if (y_keys_[i] == k) data[i] = std::move(pts);
  data_ = std::move(data);
}

}  // namespace ppe::training::extensions
