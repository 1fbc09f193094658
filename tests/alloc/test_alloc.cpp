// No heap allocation per iteration in steady state when no extension fires
// (ARCHITECTURE §6). This binary replaces every form of the global operator
// new and delete with counting versions; a counter that is active only on the
// testing thread, only around the measured iterations, must stay at zero.
//
// To find an allocation: run with PPE_ALLOC_TRACE=1 and every counted
// allocation prints a backtrace to standard error (or break on
// `note_allocation` in gdb).
#include "ppe_test.hpp"

#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <ppe/training/extensions/progress_bar.hpp>
#include <ppe/training/extensions/value_observation.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>

// ---- the counting allocator ---------------------------------------------------

namespace {

// Trivially initialised thread-locals: reading them never allocates.
thread_local bool t_counting = false;
thread_local bool t_tracing = false;
thread_local std::size_t t_count = 0;
const bool g_trace = std::getenv("PPE_ALLOC_TRACE") != nullptr;

__attribute__((noinline)) void note_allocation(std::size_t size) noexcept {
  if (!t_counting) return;
  ++t_count;
  if (g_trace && !t_tracing) {
    t_tracing = true;
    char line[96];
    const int len = std::snprintf(line, sizeof line, "ppe test_alloc: allocation #%zu of %zu bytes at\n", t_count, size);
    if (len > 0) {
      const ssize_t written = ::write(2, line, static_cast<std::size_t>(len));
      static_cast<void>(written);  // best effort: a diagnostic on stderr
    }
    void* frames[48];
    const int n = ::backtrace(frames, 48);
    ::backtrace_symbols_fd(frames, n, 2);
    t_tracing = false;
  }
}

void* allocate(std::size_t size) noexcept {
  note_allocation(size);
  return std::malloc(size ? size : 1);
}

void* allocate_aligned(std::size_t size, std::align_val_t align) noexcept {
  note_allocation(size);
  std::size_t a = static_cast<std::size_t>(align);
  if (a < sizeof(void*)) a = sizeof(void*);
  void* p = nullptr;
  return ::posix_memalign(&p, a, size ? size : 1) == 0 ? p : nullptr;
}

void* allocate_or_throw(std::size_t size) {
  if (void* p = allocate(size)) return p;
  throw std::bad_alloc();
}

void* allocate_aligned_or_throw(std::size_t size, std::align_val_t align) {
  if (void* p = allocate_aligned(size, align)) return p;
  throw std::bad_alloc();
}

/// Counts the allocations of the calling thread while alive.
class CountAllocations {
 public:
  CountAllocations() noexcept {
    if (g_trace) {
      void* frames[4];
      ::backtrace(frames, 4);  // loads the unwinder now, not while counting
    }
    t_count = 0;
    t_counting = true;
  }
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  ~CountAllocations() { t_counting = false; }
  std::size_t stop() noexcept {
    t_counting = false;
    return t_count;
  }
};

}  // namespace

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) { return allocate_aligned_or_throw(size, align); }
void* operator new[](std::size_t size, std::align_val_t align) { return allocate_aligned_or_throw(size, align); }
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return allocate_aligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return allocate_aligned(size, align);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

// ---- the tests ------------------------------------------------------------------

namespace {

using ppe::training::Manager;
namespace training = ppe::training;

constexpr int kWarmup = 5;
constexpr int kMeasured = 2000;

/// A struct extension whose default trigger does not fire during the test.
struct Quiet {
  using extension_concept = training::extension_tag;
  static constexpr std::string_view default_name = "Quiet";
  static auto default_trigger() { return ppe::epochs(1000); }
  int* calls;
  void operator()(Manager&) { ++*calls; }
  ppe::State state_dict() const { return ppe::State::dict({{"calls", *calls}}); }
};

/// The body: three plain reports (keys of 4, 1 and 33 characters; the last
/// past the 15 characters of std::string's small buffer), one through the
/// model as observer (key "main/" + 30 characters), and one key that comes
/// and goes every other iteration.
template <class Model>
void body(const Model& model, int i) {
  ppe::reporting::report({{"loss", 0.5}, {"a", 1.0}, {"main/a_key_longer_than_the_buffer", 2.0}});
  ppe::reporting::report({{"observer_key_longer_than_sso!!", 0.9}}, model);
  if (i % 2 == 0) ppe::reporting::report({{"sometimes", 3}});
}

void check_observation(const Manager& manager) {
  const auto& obs = manager.observation();
  CHECK(obs.at("loss").to_double() == 0.5);
  CHECK(obs.at("a").to_double() == 1.0);
  CHECK(obs.at("main/a_key_longer_than_the_buffer").to_double() == 2.0);
  CHECK(obs.at("main/observer_key_longer_than_sso!!").to_double() == 0.9);
}

}  // namespace

TEST_CASE("a manager with 8 non-firing extensions allocates nothing per iteration") {
  torch::nn::Linear model(2, 2);
  int calls = 0;
  auto count = [&calls](Manager&) { ++calls; };
  auto manager = training::ExtensionsManager(
      ppe_test::options(100000, 100), model, training::Optimizers{},
      Quiet{&calls},                                                           // 1: default trigger epochs(1000)
      training::entry(Quiet{&calls}, ppe::epochs(1000.5)),                     // 2: named Quiet_1
      training::make_extension(count, ppe::epochs(1000), "lambda"),            // 3
      training::make_extension(count, ppe::iterations(1000000), "writer",      // 4
                               training::priority<training::kPriorityWriter>),
      training::make_extension(count, ppe::epochs(2000), "editor",             // 5
                               training::priority<training::kPriorityEditor>),
      training::make_extension(count, ppe::epochs(1000), "snapshot_like",      // 6: deferred priority
                               training::priority<training::kPrioritySnapshot>),
      training::make_extension(count, [](const Manager& m) { return m.iteration() < 0; },  // 7: callable trigger
                               "callable_trigger"),
      training::entry(Quiet{&calls}, ppe::epochs(3000), "quiet_last", training::priority<-5>));  // 8
  CHECK(manager.extension_names().size() == 8);

  int i = 0;
  for (; i < kWarmup; ++i) manager.run_iteration([&] { body(model, i); });
  std::size_t allocations = 0;
  {
    CountAllocations counter;
    for (; i < kWarmup + kMeasured; ++i) manager.run_iteration([&] { body(model, i); });
    allocations = counter.stop();
  }
  CHECK(allocations == 0);
  CHECK(calls == 0);
  CHECK(manager.iteration() == kWarmup + kMeasured);
  check_observation(manager);
}

TEST_CASE("runtime-extended extensions allocate nothing per iteration either") {
  torch::nn::Linear model(2, 2);
  int calls = 0;
  auto count = [&calls](Manager&) { ++calls; };
  auto manager = training::ExtensionsManager(ppe_test::options(100000, 100), model, training::Optimizers{},
                                             Quiet{&calls},
                                             training::make_extension(count, ppe::epochs(1000), "static_lambda"));
  manager.extend(training::make_extension(count, ppe::epochs(1000), "runtime_lambda"));
  manager.extend(training::AnyExtension(Quiet{&calls}), training::triggers::AnyTrigger(ppe::epochs(1500)),
                 "runtime_snapshot", training::kPrioritySnapshot);
  manager.extend(training::AnyExtension(Quiet{&calls}), std::nullopt, "runtime_default_trigger",
                 training::kPriorityWriter);
  CHECK(manager.extension_names().size() == 5);

  int i = 0;
  for (; i < kWarmup; ++i) manager.run_iteration([&] { body(model, i); });
  std::size_t allocations = 0;
  {
    CountAllocations counter;
    for (; i < kWarmup + kMeasured; ++i) manager.run_iteration([&] { body(model, i); });
    allocations = counter.stop();
  }
  CHECK(allocations == 0);
  CHECK(calls == 0);
  check_observation(manager);
}

TEST_CASE("ProgressBar and observe_lr/observe_value allocate nothing, also when they run") {
  // The bar draws every iteration (terminal display) into a descriptor
  // stream on /dev/null, whose buffer is fixed; the observers write every
  // iteration into a key slot the observation keeps.
  torch::nn::Linear model(2, 2);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  const int null_fd = ::open("/dev/null", O_WRONLY);
  REQUIRE(null_fd >= 0);
  ppe::detail::FdOStream devnull(null_fd);
  namespace ext = training::extensions;
  auto manager = training::ExtensionsManager(
      ppe_test::options(100000, 100), model, sgd,
      ext::ProgressBar(ext::ProgressBarOptions().update_interval(1).out(&devnull).terminal(true)),
      ext::observe_lr(sgd, 0, "lr", ppe::iterations(1)),
      ext::observe_value("iteration", [](Manager& m) { return m.iteration(); }, ppe::iterations(1)));
  int i = 0;
  for (; i < kWarmup; ++i) manager.run_iteration([&] { body(model, i); });
  std::size_t allocations = 0;
  {
    CountAllocations counter;
    for (; i < kWarmup + kMeasured; ++i) manager.run_iteration([&] { body(model, i); });
    allocations = counter.stop();
  }
  CHECK(allocations == 0);
  CHECK(manager.observation().at("lr").to_double() == 0.1);
  CHECK(manager.observation().at("iteration").to_double() == kWarmup + kMeasured);
  check_observation(manager);
  ::close(null_fd);
}

TEST_CASE("the measurement sees an allocation inside run_iteration") {
  // Guards the measurement: the same loop with a body that builds a heap
  // string every iteration must count at least one allocation per iteration.
  torch::nn::Linear model(2, 2);
  auto manager = training::ExtensionsManager(ppe_test::options(100000, 100), model, training::Optimizers{});
  int i = 0;
  for (; i < kWarmup; ++i) manager.run_iteration([&] { body(model, i); });
  std::size_t allocations = 0;
  {
    CountAllocations counter;
    for (; i < kWarmup + kMeasured; ++i)
      manager.run_iteration([&] {
        body(model, i);
        const std::string key(40, static_cast<char>('a' + i % 2));  // past the small buffer
        ppe::reporting::report({{key, 1.0}});
      });
    allocations = counter.stop();
  }
  CHECK(allocations >= static_cast<std::size_t>(kMeasured));
}

TEST_CASE("the allocation counter counts") {
  // Guards the test itself: a counter that never counts would pass anything.
  std::size_t n = 0;
  {
    CountAllocations counter;
    auto p = std::make_unique<std::string>(100, 'x');  // the object and its heap buffer
    auto q = std::unique_ptr<int[]>(new (std::nothrow) int[4]);
    n = counter.stop();
    CHECK(p->size() == 100);
    CHECK(q != nullptr);
  }
  CHECK(n == 3);
}
