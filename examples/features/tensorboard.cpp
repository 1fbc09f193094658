// The TensorBoard feature as a downstream program uses it (ppe::tensorboard /
// ppe-tensorboard): an event file with one scalar.
#include <ppe/tensorboard.hpp>

#include <filesystem>
#include <iostream>

int main() {
  namespace fs = std::filesystem;
  fs::remove_all("consumer_events");
  {
    ppe::writing::TensorBoardWriter events(fs::path("consumer_events"));
    events.add_scalar("loss", 0.5, 1);
    events.finalize();
  }
  int files = 0;
  for (const auto& f : fs::directory_iterator("consumer_events"))
    files += f.path().filename().string().starts_with("events.out.tfevents.") ? 1 : 0;
  std::cout << "event_files=" << files << "\n";
  return files == 1 ? 0 : 1;
}
