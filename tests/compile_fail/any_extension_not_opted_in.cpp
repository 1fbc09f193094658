// expect: does not opt in\.
// The type-erased holder checks the protocol as the static entries do.
#include <ppe/training.hpp>

struct Printer {
  void operator()(ppe::training::Manager&) {}
};

int main() { ppe::training::AnyExtension any{Printer{}}; }
