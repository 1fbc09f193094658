// expect: extension_concept
// Proof that the compile-fail harness works: a static_assert that only fires when its
// template is instantiated, the way the library's concept diagnostics fire.
#include <ppe/state.hpp>

template <class T>
inline constexpr bool false_v = false;

template <class T>
void require_extension(const T&) {
  static_assert(false_v<T>, "extension_concept demo: T is not an extension");
}

int main() { require_extension(ppe::State()); }
