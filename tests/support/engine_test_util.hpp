#pragma once
// Models and data shared by the engine tests (PPE's test_trainer.py MyModel and
// MyModelWithLossFn), and an instrumented handler that records the call order.

#include <ppe/engine.hpp>
#include <ppe/runtime/to.hpp>

#include <string>
#include <tuple>
#include <vector>

namespace engine_test {

// PPE's MyModel: Linear(20, 15) → relu → Linear(15, 10), every weight and bias 1.
struct MyModelImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr};
  MyModelImpl() {
    l1 = register_module("l1", torch::nn::Linear(20, 15));
    l2 = register_module("l2", torch::nn::Linear(15, 10));
    torch::NoGradGuard g;
    for (auto& p : parameters()) p.fill_(1.0);
  }
  torch::Tensor forward(const torch::Tensor& x) { return l2(torch::relu(l1(x))); }
};
TORCH_MODULE(MyModel);

// PPE's MyModelWithLossFn: reports "train/loss" or "val/loss" and returns the L1 loss.
struct WithLossImpl : torch::nn::Module {
  MyModel model{nullptr};
  explicit WithLossImpl(MyModel m) { model = register_module("model", m); }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t) {
    auto loss = torch::l1_loss(model(x), t);
    ppe::reporting::report({{is_training() ? "train/loss" : "val/loss", loss}});
    return loss;
  }
};
TORCH_MODULE(WithLoss);

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

// Value equality of two states (State's operator== compares tensors by identity).
inline bool states_equal(const ppe::State& a, const ppe::State& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ppe::State::Kind::Tensor: {
      const auto& x = a.as_tensor();
      const auto& y = b.as_tensor();
      return x.sizes() == y.sizes() && x.scalar_type() == y.scalar_type() && torch::equal(x, y);
    }
    case ppe::State::Kind::List:
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!states_equal(a.as_list()[i], b.as_list()[i])) return false;
      return true;
    case ppe::State::Kind::Dict:
      if (a.size() != b.size()) return false;
      for (const auto& [k, v] : a.as_dict()) {
        const ppe::State* w = b.find(k);
        if (!w || !states_equal(v, *w)) return false;
      }
      return true;
    default:
      return a == b;
  }
}

// n batches of one random sample ([1, 20] inputs, [1, 10] targets), as PPE's
// DataLoader over a list of n pairs.
inline std::vector<Batch> random_data(int n, double scale = 1.0) {
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i) out.emplace_back(torch::rand({1, 20}) * scale, torch::rand({1, 10}));
  return out;
}

// Records every handler call, then does what the default handler does.
struct RecordingHandler : ppe::handler::Handler {
  std::vector<std::string>* log;
  explicit RecordingHandler(std::vector<std::string>& l) : log(&l) {}
  template <class T, class L>
  void train_setup(T& t, const L& loader) {
    log->push_back("train_setup");
    Handler::train_setup(t, loader);
  }
  template <class T>
  void train_epoch_begin(T& t, std::int64_t n) {
    log->push_back("train_epoch_begin");
    Handler::train_epoch_begin(t, n);
  }
  template <class T>
  void train_epoch_end(T& t) {
    log->push_back("train_epoch_end");
    Handler::train_epoch_end(t);
  }
  template <class T, class B, class C>
  void train_step(T& t, std::int64_t idx, B& batch, C&& complete) {
    log->push_back("train_step " + std::to_string(idx));
    Handler::train_step(t, idx, batch, complete);
  }
  template <class T, class B, class O>
  void train_post_step(T& t, std::int64_t idx, const B& batch, const O& outs) {
    log->push_back("train_post_step " + std::to_string(idx));
    Handler::train_post_step(t, idx, batch, outs);
  }
  template <class T, class E>
  void train_validation_begin(T& t, E& e) {
    log->push_back("train_validation_begin");
    Handler::train_validation_begin(t, e);
  }
  template <class T, class E>
  void train_validation_end(T& t, E& e) {
    log->push_back("train_validation_end");
    Handler::train_validation_end(t, e);
  }
  template <class T>
  void train_cleanup(T& t) {
    log->push_back("train_cleanup");
    Handler::train_cleanup(t);
  }
  template <class E, class L>
  void eval_setup(E& e, const L& loader) {
    log->push_back("eval_setup");
    Handler::eval_setup(e, loader);
  }
  template <class E>
  void eval_loop_begin(E&) {
    log->push_back("eval_loop_begin");
  }
  template <class E>
  void eval_loop_end(E&) {
    log->push_back("eval_loop_end");
  }
  template <class E, class B, class C>
  void eval_step(E& e, std::int64_t idx, B& batch, C&& complete) {
    log->push_back("eval_step " + std::to_string(idx));
    Handler::eval_step(e, idx, batch, complete);
  }
  template <class E, class B, class O>
  void eval_post_step(E& e, std::int64_t idx, const B& batch, const O& outs) {
    log->push_back("eval_post_step " + std::to_string(idx));
    Handler::eval_post_step(e, idx, batch, outs);
  }
};

}  // namespace engine_test
