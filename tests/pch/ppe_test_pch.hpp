// Precompiled header of the test binaries: the heavy, stable includes.
#include "../support/ppe_test.hpp"
