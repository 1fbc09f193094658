// The accumulate extensions with distributed(true) (PPE's
// AccumulateBase(distributed=True)): two real processes on loopback each
// accumulate their own values; at the report every rank's summary is gathered
// (Communicator::all_gather_state, the pickled State) and each rank reports
// the statistic over both ranks' values, as one process adding every value.
#include "ppe_test.hpp"

#include <ppe/distributed/communicator.hpp>
#include <ppe/distributed/initialize.hpp>
#include <ppe/training/extensions/accumulate.hpp>

#include "processes.hpp"
#include "temp_dir.hpp"

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_training_tests_extensions_tests_test_distributed_accumulate {

namespace dist = ppe::distributed;
namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
namespace acc = ppe::training::extensions::accumulate;

namespace {

// Each rank's values, one per iteration of its one epoch; not exact in
// binary, so a wrong combination would show.
const std::vector<std::vector<double>> kValues = {{1.0 / 3, 2.5, 4.0}, {-3.0, 7.0 / 11, 0.5}};

// A summary fed with every rank's values in rank order: one process.
template <class S>
double single_process() {
  S s;
  for (const auto& rank : kValues)
    for (double v : rank) s.add(v);
  return s.compute_accumulate().to_double();
}

// Reports "v" (a number) and "t" (a float tensor) from the rank's values.
struct Source {
  using extension_concept = tr::extension_tag;
  static constexpr int priority = tr::kPriorityWriter;
  std::vector<double> values;
  void operator()(tr::Manager& m) {
    const double v = values.at(static_cast<std::size_t>(m.iteration() - 1));
    ppe::reporting::report({{"v", v}, {"t", torch::tensor(v, torch::kFloat)}});
  }
};

}  // namespace

TEST_CASE("worker: the accumulate extensions' distributed gather" * doctest::skip()) {
  const auto info = dist::initialize(dist::InitOptions().timeout(std::chrono::seconds(60)));
  const auto communicator = dist::default_communicator();
  REQUIRE(communicator->world_size() == 2);

  {
    INFO("all_gather_state: every rank's State, nested, in rank order");
    const ppe::State mine = ppe::State::dict({{"rank", info.rank},
                                              {"nested", ppe::State::dict({{"l", ppe::State::list({0.5, "x"})}})},
                                              {"t", torch::arange(3, torch::kFloat) + info.rank}});
    const std::vector<ppe::State> all = communicator->all_gather_state(mine);
    REQUIRE(all.size() == 2u);
    for (int r = 0; r < 2; ++r) {
      const ppe::State& s = all[static_cast<std::size_t>(r)];
      CHECK(s.at("rank") == ppe::State(r));
      CHECK(s.at("nested").at("l") == ppe::State::list({0.5, "x"}));
      CHECK(s.at("t").as_tensor().equal(torch::arange(3, torch::kFloat) + r));
    }
  }

  std::map<std::string, double> reported;
  auto manager = tr::ExtensionsManager(
      dist::for_process_group(tr::ManagerOptions().max_epochs(1).iters_per_epoch(3).out_dir("result")), tr::Models{},
      tr::Optimizers{}, Source{kValues.at(static_cast<std::size_t>(info.rank))},
      ext::AverageAccumulate({"v", "v/mean"}, ext::AccumulateOptions().distributed(true)),
      ext::StandardDeviationAccumulate({"v", "v/std"}, ext::AccumulateOptions().distributed(true)),
      ext::UnbiasedStandardDeviationAccumulate({"v", "v/ustd"}, ext::AccumulateOptions().distributed(true)),
      ext::MinAccumulate({"v", "v/min"}, ext::AccumulateOptions().distributed(true)),
      ext::MaxAccumulate({"v", "v/max"}, ext::AccumulateOptions().distributed(true)),
      ext::AverageAccumulate({"t", "t/mean"}, ext::AccumulateOptions().distributed(true)),
      ext::AverageAccumulate({"v", "v/local"}),  // not distributed: this rank's values only
      tr::make_extension(
          [&](tr::Manager& m) {
            for (const auto e : m.observation()) reported[e.key] = e.value.to_double();
          },
          ppe::epochs(1), "record"));
  while (!manager.stop_trigger()) manager.run_iteration([] {});

  CHECK(reported.at("v/mean") == doctest::Approx(single_process<acc::AverageSummary>()).epsilon(1e-12));
  CHECK(reported.at("v/std") == doctest::Approx(single_process<acc::StandardDeviationSummary>()).epsilon(1e-12));
  CHECK(reported.at("v/ustd") ==
        doctest::Approx(single_process<acc::UnbiasedStandardDeviationSummary>()).epsilon(1e-12));
  CHECK(reported.at("v/min") == -3.0);
  CHECK(reported.at("v/max") == 4.0);
  CHECK(reported.at("t/mean") == doctest::Approx(single_process<acc::AverageSummary>()).epsilon(1e-6));
  const auto& local = kValues.at(static_cast<std::size_t>(info.rank));
  CHECK(reported.at("v/local") == doctest::Approx((local[0] + local[1] + local[2]) / 3).epsilon(1e-12));
  dist::destroy_process_group();
}

TEST_CASE("accumulate extensions with distributed(true): two processes report the statistic over both ranks") {
  ppe_test::TempDir dir;
  ppe_test::check_workers("worker: the accumulate extensions' distributed gather", dir.path, {},
                          std::vector<int>{0, 0}, std::chrono::seconds(120));
}

}  // namespace ppe_test_training_tests_extensions_tests_test_distributed_accumulate
