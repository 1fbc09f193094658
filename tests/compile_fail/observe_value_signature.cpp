// expect: observe_value: the function must be callable as fn\(ppe::training::Manager&\)
#include <ppe/training/extensions/value_observation.hpp>

int main() {
  auto e = ppe::training::extensions::observe_value("x", [] { return 1.0; });
}
