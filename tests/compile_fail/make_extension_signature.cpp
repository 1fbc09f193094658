// expect: make_extension: the callable must be invocable as fn\(ppe::training::Manager&\)
#include <ppe/training.hpp>

int main() { (void)ppe::training::make_extension([](int) {}); }
