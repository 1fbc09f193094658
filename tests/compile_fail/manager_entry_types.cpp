// expect: ExtensionsManager's entry types must be ppe::training::Entry<\.\.\.>; pass extensions or entry\(\.\.\.\)
// Spelling the manager's type by hand with a non-entry type.
#include <ppe/training.hpp>

int main() { ppe::training::ExtensionsManager<ppe::training::triggers::IntervalTrigger, int>* m = nullptr; (void)sizeof(*m); }
