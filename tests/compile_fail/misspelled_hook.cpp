// expect: declares none of the extension hooks \(a misspelled hook\?\)\. Fix: declare one of
// Opted in, but its only hook is misspelled, so it would never be called.
#include <ppe/training.hpp>

struct Printer {
  using extension_concept = ppe::training::extension_tag;
  void initialise(ppe::training::Manager&) {}
};

int main() { (void)ppe::training::entry(Printer{}, ppe::epochs(1)); }
