// ppe::nn::parallel::DistributedDataParallel (PPE's nn/parallel/distributed.py),
// with two real processes on loopback: PPE's test table (its MyModule, inputs
// 1 and 2 on ranks 0 and 1), then training equal to one process on the
// concatenated batches, no_sync accumulation, and mismatched models.
#include "ppe_test.hpp"

#include <ppe/distributed/initialize.hpp>
#include <ppe/handler/logic.hpp>
#include <ppe/nn/parallel/distributed.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>

#include <cstdlib>

#include "processes.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_nn_tests_parallel_tests_test_distributed {

namespace dist = ppe::distributed;
using ppe::nn::parallel::DistributedDataParallel;
using ppe::nn::parallel::DistributedDataParallelOptions;

namespace {

// PPE's MyModule: two scalar parameters, of which the sign of the input picks
// one, and a buffer that accumulates the inputs.
struct MyModuleImpl : torch::nn::Module {
  torch::Tensor param0, param1, buffer;
  MyModuleImpl() {
    param0 = register_parameter("param0", torch::tensor(-1.0));
    param1 = register_parameter("param1", torch::tensor(1.0));
    buffer = register_buffer("buffer", torch::zeros({1}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto s = x.sum();
    {
      torch::NoGradGuard no_grad;
      buffer.add_(s);
    }
    return (s.item<double>() > 0 ? param0 : param1) * s.abs();
  }
};
TORCH_MODULE(MyModule);

// A gradient that is undefined reads as NaN in the tables (PPE's None).
double grad_of(const torch::Tensor& p) { return p.grad().defined() ? p.grad().item<double>() : std::nan(""); }

// PPE's step: forward, backward; returns the output.
double step(DistributedDataParallel<MyModule>& ddp, double input) {
  auto out = ddp(torch::tensor({input}));
  out.backward();
  return out.item<double>();
}

// Gathers `t` (flattened) from every rank.
std::vector<torch::Tensor> all_gather(const torch::Tensor& t) {
  auto group = dist::default_process_group();
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < group->getSize(); ++r) out[0].push_back(torch::empty_like(t));
  std::vector<at::Tensor> in{t.contiguous()};
  group->allgather(out, in)->wait();
  return out[0];
}

torch::Tensor flat_params(torch::nn::Module& m) {
  std::vector<torch::Tensor> ps;
  for (const auto& p : m.parameters()) ps.push_back(p.detach().flatten());
  return torch::cat(ps);
}

torch::Tensor flat_grads(torch::nn::Module& m) {
  std::vector<torch::Tensor> gs;
  for (const auto& p : m.parameters()) gs.push_back(p.grad().flatten());
  return torch::cat(gs);
}

// A small model with a BatchNorm (buffers) for the training scenarios.
torch::nn::Sequential make_net(int seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(6, 8), torch::nn::BatchNorm1d(8), torch::nn::Functional(torch::relu),
                               torch::nn::Linear(8, 2));
}

// The net with its loss, as the handler's Logic wants a model: forward(x, y) -> loss.
struct WithLossImpl : torch::nn::Module {
  torch::nn::Sequential net;
  explicit WithLossImpl(torch::nn::Sequential n) : net(register_module("net", std::move(n))) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& y) { return torch::mse_loss(net->forward(x), y); }
};
TORCH_MODULE(WithLoss);

// Rank r's batch of step k (the same on every run).
std::pair<torch::Tensor, torch::Tensor> batch(int rank, int k) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(1000 * k + rank);
  return {torch::randn({4, 6}, g), torch::randn({4, 2}, g)};
}

}  // namespace

TEST_CASE("worker: PPE's DistributedDataParallel table" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  const int rank = info.rank;
  const double input = rank == 0 ? 1.0 : 2.0;  // PPE's inputs per rank

  {
    INFO("test_sync_init_params: rank 0's parameters everywhere");
    MyModule m;
    if (rank == 0) m->param0.data().fill_(1.0);
    DistributedDataParallel ddp(m);
    CHECK(step(ddp, input) == input);  // param0 = 1 on both: output = |x|
    CHECK(m->param0.item<double>() == 1.0);
  }
  {
    INFO("test_all_reduce: the average of 1 and 2; param1, unused everywhere, keeps no gradient");
    MyModule m;
    DistributedDataParallel ddp(m);
    CHECK(step(ddp, input) == -input);
    CHECK(grad_of(m->param0) == 1.5);
    CHECK_FALSE(m->param1.grad().defined());
  }
  {
    INFO("test_specific_reduce: a reduce_function that zeroes");
    MyModule m;
    DistributedDataParallel ddp(m, DistributedDataParallelOptions().reduce_function(
                                       [](std::vector<at::Tensor>& ts, const auto&) {
                                         for (auto& t : ts) t.zero_();
                                       }));
    step(ddp, input);
    CHECK(grad_of(m->param0) == 0.0);
  }
  {
    INFO("test_nosync_buffer: without broadcast_buffers each rank keeps its own");
    MyModule m;
    DistributedDataParallel ddp(m, DistributedDataParallelOptions().broadcast_buffers(false));
    CHECK(step(ddp, input) == -input);
    CHECK(m->buffer.item<double>() == input);
  }
  {
    INFO("test_sync_buffer: rank 0's buffer after backward");
    MyModule m;
    DistributedDataParallel ddp(m, DistributedDataParallelOptions().broadcast_buffers(true));
    CHECK(step(ddp, input) == -input);
    CHECK(m->buffer.item<double>() == 1.0);
  }
  {
    INFO("test_specific_broadcast: a broadcast_function that zeroes");
    MyModule m;
    DistributedDataParallel ddp(m, DistributedDataParallelOptions().broadcast_function(
                                       [](std::vector<at::Tensor>& ts, const auto&) {
                                         for (auto& t : ts) t.zero_();
                                       }));
    step(ddp, input);
    CHECK(m->buffer.item<double>() == 0.0);
  }
  {
    INFO("test_define_by_run: each rank uses another parameter; both get half a gradient");
    MyModule m;
    DistributedDataParallel ddp(m);
    CHECK(step(ddp, rank == 0 ? 1.0 : -1.0) == (rank == 0 ? -1.0 : 1.0));
    CHECK(grad_of(m->param0) == 0.5);
    CHECK(grad_of(m->param1) == 0.5);
  }
  {
    INFO("test_no_sync: local gradients");
    MyModule m;
    DistributedDataParallel ddp(m);
    {
      auto guard = ddp.no_sync();
      CHECK_FALSE(ddp.require_backward_grad_sync());
      CHECK(step(ddp, input) == -input);
    }
    CHECK(ddp.require_backward_grad_sync());
    CHECK(grad_of(m->param0) == input);
    CHECK_FALSE(m->param1.grad().defined());
  }
  {
    INFO("test_hook: a communication hook replaces the all-reduce (here: zeroes each bucket)");
    MyModule m;
    DistributedDataParallel ddp(m);
    ddp.register_comm_hook([](c10d::GradBucket& bucket) {
      bucket.getBufferRef().zero_();
      auto future = c10::make_intrusive<c10::ivalue::Future>(c10::TensorType::get());
      future->markCompleted(c10::IValue(bucket.getBufferRef()));
      return future;
    });
    CHECK(step(ddp, input) == -input);
    CHECK(grad_of(m->param0) == 0.0);
    CHECK(ppe_test::error_of([&] { ddp.register_comm_hook({}); }).find("registered already") != std::string::npos);
  }
  {
    INFO("test_save_load: the state dict is the module's, without a prefix");
    MyModule m;
    DistributedDataParallel ddp(m);
    const auto wrapped = ppe::training::ModelRef(ddp).state_dict();
    const auto plain = ppe::training::ModelRef(m).state_dict();
    REQUIRE(wrapped.as_dict().size() == 3);
    REQUIRE(plain.as_dict().size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(wrapped.as_dict()[i].first == plain.as_dict()[i].first);
      CHECK(torch::equal(wrapped.as_dict()[i].second.as_tensor(), plain.as_dict()[i].second.as_tensor()));
    }
  }
  dist::destroy_process_group();
}

TEST_CASE("worker: DDP training equals one process on the concatenated batches" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  const int rank = info.rank;
  constexpr int kSteps = 5;
  {
    INFO("k steps of SGD: bitwise equal on both ranks, and equal to one process");
    auto net = make_net(/*seed=*/rank);  // different on each rank: the constructor broadcasts rank 0's
    DistributedDataParallel ddp(net, DistributedDataParallelOptions().negotiate_grads(false));
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    auto ref = make_net(/*seed=*/0);  // rank 0's initial model, trained on both ranks' batches at once
    torch::optim::SGD ref_opt(ref->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int k = 0; k < kSteps; ++k) {
      auto [x, y] = batch(rank, k);
      opt.zero_grad();
      torch::mse_loss(ddp(x), y).backward();
      opt.step();

      auto [x0, y0] = batch(0, k);
      auto [x1, y1] = batch(1, k);
      ref_opt.zero_grad();
      // The mean over 8 samples is the average of the two ranks' means over 4.
      // BatchNorm normalizes per rank (4 samples), as Python DDP without
      // SyncBatchNorm: so the reference runs it per half too.
      auto out = torch::cat({ref->forward(x0), ref->forward(x1)});
      torch::mse_loss(out, torch::cat({y0, y1})).backward();
      ref_opt.step();
    }
    const auto params = all_gather(flat_params(*net));
    CHECK(torch::equal(params[0], params[1]));
    // Float sums in another order: equal to ~1e-6 relative.
    CHECK(torch::allclose(flat_params(*net), flat_params(*ref), /*rtol=*/1e-5, /*atol=*/1e-6));
    // BatchNorm's running statistics: rank 0's after each backward.
    const auto stats = all_gather(net[1]->as<torch::nn::BatchNorm1d>()->running_mean);
    CHECK(torch::equal(stats[0], stats[1]));
  }
  {
    INFO("no_sync accumulation equals local accumulation followed by one averaged all-reduce");
    auto net = make_net(0);
    DistributedDataParallel ddp(net);
    auto plain = make_net(0);
    for (int k = 0; k < 2; ++k) {
      auto [x, y] = batch(rank, k);
      if (k == 0) {
        auto guard = ddp.no_sync();
        torch::mse_loss(ddp(x), y).backward();
      } else {
        torch::mse_loss(ddp(x), y).backward();
      }
      torch::mse_loss(plain->forward(x), y).backward();
    }
    std::vector<at::Tensor> summed{flat_grads(*plain)};
    dist::default_process_group()->allreduce(summed)->wait();
    CHECK(torch::allclose(flat_grads(*net), summed[0] / 2, 1e-6, 1e-7));
  }
  {
    INFO("the handler's Logic with accumulation_steps 2: local gradients on the first batch, averaged on the last");
    WithLoss net(make_net(0));
    DistributedDataParallel ddp(net);
    auto plain = make_net(0);
    torch::optim::SGD opt(net->parameters(), 0.0);  // lr 0: the step leaves the parameters for the comparison
    ppe::training::Models models(ddp);
    ppe::training::Optimizers optimizers(opt);
    ppe::handler::Logic logic(ddp, ppe::handler::LogicOptions().accumulation_steps(2));
    for (int k = 0; k < 2; ++k) {
      auto [x, y] = batch(rank, k);
      std::tuple<torch::Tensor, torch::Tensor> b{x, y};
      logic.train_step(models, optimizers, k, b);
      // What the Logic back-propagates: the loss over the group of 2.
      (torch::mse_loss(plain->forward(x), y) / 2).backward();
      if (k == 0) {
        CHECK_FALSE(ddp.require_backward_grad_sync());
        CHECK(torch::allclose(flat_grads(*net), flat_grads(*plain), 1e-6, 1e-7));  // not synchronized
      }
      logic.train_step_optimizers(models, optimizers, k);
    }
    CHECK(ddp.require_backward_grad_sync());
    std::vector<at::Tensor> summed{flat_grads(*plain)};
    dist::default_process_group()->allreduce(summed)->wait();
    CHECK(torch::allclose(flat_grads(*net), summed[0] / 2, 1e-6, 1e-7));
  }
  {
    INFO("a rank whose model has other shapes: an error on every rank, not a hang");
    auto net = rank == 0 ? torch::nn::Sequential(torch::nn::Linear(6, 8)) : torch::nn::Sequential(torch::nn::Linear(6, 9));
    CHECK_THROWS(DistributedDataParallel(net));
  }
  dist::destroy_process_group();
}

TEST_CASE("DistributedDataParallel: PPE's test table on two processes") {
  ppe_test::TempDir dir;
  ppe_test::check_workers("worker: PPE's DistributedDataParallel table", dir.path);
}

TEST_CASE("DistributedDataParallel: training on two processes equals one process") {
  ppe_test::TempDir dir;
  ppe_test::check_workers("worker: DDP training equals one process on the concatenated batches", dir.path);
}

TEST_CASE("DistributedDataParallel needs a process group") {
  MyModule m;
  CHECK(ppe_test::error_of([&] { DistributedDataParallel ddp(m); }).find("no default process group") !=
        std::string::npos);
}

}  // namespace ppe_test_nn_tests_parallel_tests_test_distributed
