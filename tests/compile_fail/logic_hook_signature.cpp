// expect: the logic declares train_epoch_end but the engine cannot call it so; expected: void train_epoch_end\(const ppe::training::Models&, std::int64_t epoch\)
#include <ppe/handler/logic.hpp>

struct MyLogic : ppe::handler::BaseLogic {
  void train_epoch_end(int) {}  // wrong arguments: silently skipped if not diagnosed
};

int main() {
  MyLogic l;
  ppe::training::Models models;
  ppe::handler::train_epoch_end(l, models, 0);
}
