// Compile-time benchmark, TU A: a manager with 16 statically typed extensions
// and one iteration (compile_time_bench.sh compares it with without_ppe.cpp).
// It includes the header that declares what it uses, as a TU that uses the
// manager alone would; docs/build-cost.md also gives the cost with <ppe/ppe.hpp>.

#include <ppe/training/extensions_manager.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace {

std::int64_t calls[16];

template <std::size_t I>
struct Ext {
  using extension_concept = ppe::training::extension_tag;
  static constexpr std::string_view default_name = "ext";
  void operator()(ppe::training::Manager&) { ++calls[I]; }
};

template <std::size_t... I>
auto make_manager(std::index_sequence<I...>) {
  return ppe::training::ExtensionsManager(
      ppe::training::ManagerOptions().max_epochs(10).iters_per_epoch(100), ppe::training::Models{},
      ppe::training::Optimizers{}, ppe::training::entry(Ext<I>{}, ppe::iterations(static_cast<double>(I + 1)))...);
}

}  // namespace

int main() {
  auto manager = make_manager(std::make_index_sequence<16>{});
  manager.run_iteration([] {});
  std::int64_t total = 0;
  for (std::int64_t c : calls) total += c;
  return total == 1 ? 0 : 1;
}
