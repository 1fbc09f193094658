// expect: an int is not accepted because static entries are ordered at compile time
// A runtime int where a compile-time priority<N> is required (it would
// otherwise convert to the bool call_before_training flag).
#include <ppe/training.hpp>

struct Printer {
  using extension_concept = ppe::training::extension_tag;
  void operator()(ppe::training::Manager&) {}
};

int main() { (void)ppe::training::entry(Printer{}, ppe::epochs(1), "printer", 50); }
