// expect: does not opt in\. Fix: add `using extension_concept = ppe::training::extension_tag;`
// A type used as an extension without the opt-in tag.
#include <ppe/training.hpp>

struct Printer {
  void operator()(ppe::training::Manager&) {}
};

int main() { (void)ppe::training::entry(Printer{}); }
