// expect: a manager with a custom stop trigger type must be given stop_when\(trigger\)
#include <ppe/training.hpp>

struct Never {
  bool operator()(const ppe::training::Manager&) { return false; }
};

int main() {
  auto opts = ppe::training::ManagerOptions().max_epochs(1).iters_per_epoch(1);
  ppe::training::ExtensionsManager<Never> m(opts, ppe::training::Models{}, ppe::training::Optimizers{});
}
