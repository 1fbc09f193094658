// expect: AnyTrigger copies the trigger it holds .* make the trigger copyable
#include <memory>

#include <ppe/training.hpp>

struct MoveOnly {
  std::unique_ptr<int> state = std::make_unique<int>(0);
  bool operator()(const ppe::training::Manager&) { return ++*state % 2 == 0; }
};

int main() { ppe::training::triggers::AnyTrigger t{MoveOnly{}}; }
