// expect: a trigger must be a trigger type .* or a callable bool\(const ppe::training::Manager&\)
#include <ppe/training.hpp>

struct Printer {
  using extension_concept = ppe::training::extension_tag;
  void operator()(ppe::training::Manager&) {}
};

int main() { (void)ppe::training::entry(Printer{}, 5); }
