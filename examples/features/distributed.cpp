// The distributed feature as a downstream program uses it (ppe::distributed /
// ppe-distributed): c10d's headers compile and the library links; no process group is
// started (tests/distributed_tests start real ones).
#include <ppe/distributed/initialize.hpp>

#include <iostream>

int main() {
  const auto info = ppe::distributed::process_info();
  std::cout << "initialized=" << ppe::distributed::is_initialized() << " world_size=" << info.world_size << "\n";
  return info.world_size == 1 ? 0 : 1;
}
