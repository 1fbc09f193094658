// Exact resume after SIGKILL. The program trains a small classifier (with
// dropout, Adam, a shuffled torch::data loader with two workers) and takes a
// snapshot every few iterations through a ThreadWriter. It runs that
// training twice: once without interruption, and once killed with SIGKILL at
// random moments and restarted each time with `autoload`. Then it compares
// the two: the final parameters must be bitwise identical and the LogReport
// files must hold the same entries.
//
//   resume [--kills K] [--seed S] [--out DIR]      the demonstration (default)
//   resume train --out DIR [--epochs E]            one training process
//
// What makes the resume exact: the manager's snapshot holds the model, the
// optimizer (Adam's moments), LogReport's log, the counters, and two state
// objects: the data order and position (ppe::dataloaders::ResumableSampler,
// through ppe::dataloaders::range, which counts the batches the loop
// consumed) and LibTorch's random generator (ppe::utils::RngState, for the
// dropout masks). Snapshot files carry a checksum and are published by
// rename, so a process killed mid-write leaves only a `tmp_` file that
// autoload never takes.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/data/dataloader.h>
#include <torch/data/datasets/base.h>
#include <torch/data/datasets/map.h>
#include <torch/data/transforms/stack.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/activation.h>
#include <torch/optim/adam.h>
#include <ATen/Parallel.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <ppe/dataloaders/loader_range.hpp>
#include <ppe/dataloaders/resumable_sampler.hpp>
#include <ppe/ppe.hpp>
#include <ppe/serialization.hpp>
#include <ppe/training/extensions/snapshot.hpp>
#include <ppe/training/stop_on_signal.hpp>
#include <ppe/utils/rng_state.hpp>
#include <ppe/writing/thread_writer.hpp>

namespace fs = std::filesystem;
namespace tr = ppe::training;
namespace ext = ppe::training::extensions;

namespace {

constexpr const char* kSnapshotPattern = "snapshot_iter_{.iteration}";

// ---- one training process ---------------------------------------------------------

// 1024 samples of 32 features in 4 classes, the same in every process.
class Blobs : public torch::data::datasets::Dataset<Blobs> {
 public:
  Blobs() {
    auto gen = at::detail::createCPUGenerator(1234);
    x_ = at::randn({1024, 32}, gen);
    y_ = at::matmul(x_, at::randn({32, 4}, gen)).argmax(1);
  }
  torch::data::Example<> get(std::size_t i) override {
    const auto k = static_cast<std::int64_t>(i);
    return {x_[k], y_[k]};
  }
  c10::optional<std::size_t> size() const override { return static_cast<std::size_t>(x_.size(0)); }

 private:
  torch::Tensor x_, y_;
};

int train(const fs::path& out, int epochs) {
  at::set_num_threads(1);  // one thread: the same floating-point sums in every process
  torch::manual_seed(0);   // initial weights; a resumed process loads them from the snapshot
  auto dataset = Blobs().map(torch::data::transforms::Stack<>());
  const std::size_t size = *dataset.size();
  ppe::dataloaders::ResumableSampler sampler(size, ppe::dataloaders::ResumableSamplerOptions().seed(7));
  auto loader = torch::data::make_data_loader(dataset, sampler, torch::data::DataLoaderOptions(32).workers(2));
  auto batches = ppe::dataloaders::range(*loader, sampler);

  torch::nn::Sequential model(torch::nn::Linear(32, 256), torch::nn::ReLU(), torch::nn::Dropout(0.2),
                              torch::nn::Linear(256, 4));
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  ppe::utils::RngState rng;

  auto snapshots = std::make_shared<ppe::writing::ThreadWriter>(out);
  auto manager = tr::ExtensionsManager(
      tr::ManagerOptions().max_epochs(epochs).iters_per_epoch(static_cast<std::int64_t>(size / 32)).out_dir(
          out.string()),
      model, optimizer, ext::LogReport(),
      tr::entry(ext::snapshot(ext::SnapshotOptions().filename(kSnapshotPattern).writer(snapshots).autoload(true).n_retains(3)),
                ppe::iterations(4)));
  manager.register_state_object("sampler", sampler);
  manager.register_state_object("rng", rng);
  tr::StopOnSignal stop_on_signal(manager);  // SIGTERM: last snapshot, clean exit

  manager.start_extensions();  // autoload happens here
  std::cout << "started at iteration " << manager.iteration() << std::endl;
  while (!manager.stop_trigger()) {
    for (auto& batch : batches) {
      manager.run_iteration([&] {
        optimizer.zero_grad();
        auto loss = torch::nn::functional::cross_entropy(model->forward(batch.data), batch.target);
        ppe::reporting::report({{"main/loss", loss}});
        loss.backward();
        optimizer.step();
      });
      // Slow enough for the demonstration to kill it mid-run.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (manager.stop_trigger()) break;
    }
  }
  snapshots->finalize();
  // The result: the final parameters, written atomically.
  ppe::State final_state = ppe::State::dict();
  for (const auto& p : model->named_parameters()) final_state.set(p.key(), p.value().detach());
  ppe::writing::SimpleWriter result(out);
  result("final.pt", ppe::writing::owned_bytes(ppe::serialization::pickle_dumps(final_state)));
  std::cout << "finished at iteration " << manager.iteration() << std::endl;
  return 0;
}

// ---- the demonstration --------------------------------------------------------------

// Starts `self train --out dir`; its stdout comes back through a pipe.
struct Child {
  pid_t pid;
  int out;
};

Child spawn(const std::string& self, const fs::path& dir) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const std::string d = dir.string();
    ::execl(self.c_str(), self.c_str(), "train", "--out", d.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// One line of the child's output ("" at its end).
std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1) {
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// Every snapshot file on disk must verify: a write cut short leaves only its
// tmp_ file. Returns how many tmp_ files there are.
int check_files(const fs::path& dir) {
  for (const auto& f : ext::find_snapshot_files(kSnapshotPattern, dir)) ppe::serialization::load_file(dir / f.name);
  int temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("tmp_")) ++temporaries;
  return temporaries;
}

nlohmann::json log_without_time(const fs::path& file) {
  std::ifstream in(file);
  nlohmann::json log = nlohmann::json::parse(in);
  for (auto& entry : log) entry.erase("elapsed_time");  // wall-clock time differs, of course
  return log;
}

int demonstrate(const std::string& self, const fs::path& root, int kills, unsigned seed) {
  fs::remove_all(root);
  const fs::path reference = root / "reference", resumed = root / "resumed";
  fs::create_directories(reference);
  fs::create_directories(resumed);

  std::cout << "uninterrupted run..." << std::endl;
  {
    Child c = spawn(self, reference);
    while (!read_line(c.out).empty()) {
    }
    ::close(c.out);
    if (int s = wait_for(c.pid); !WIFEXITED(s) || WEXITSTATUS(s) != 0) throw std::runtime_error("reference run failed");
  }

  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_ms(20, 150);
  int cut_writes = 0;
  for (int k = 1; k <= kills; ++k) {
    Child c = spawn(self, resumed);
    const std::string started = read_line(c.out);  // "started at iteration N": training is under way
    const int delay = delay_ms(random);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ::kill(c.pid, SIGKILL);
    wait_for(c.pid);
    ::close(c.out);
    const int temporaries = check_files(resumed);
    cut_writes += temporaries > 0;
    std::cout << "run " << k << ": " << started << ", killed with SIGKILL " << delay << " ms later; snapshot files "
              << ext::find_snapshot_files(kSnapshotPattern, resumed).size() << ", all verified" << std::endl;
    for (const auto& e : fs::directory_iterator(resumed))  // leftovers of cut writes, which autoload ignores anyway
      if (e.path().filename().string().starts_with("tmp_")) fs::remove(e.path());
  }
  {
    Child c = spawn(self, resumed);
    std::string line, last;
    std::string started = read_line(c.out);
    while (!(line = read_line(c.out)).empty()) last = line;
    ::close(c.out);
    if (int s = wait_for(c.pid); !WIFEXITED(s) || WEXITSTATUS(s) != 0) throw std::runtime_error("final run failed");
    std::cout << "last run: " << started << ", " << last << std::endl;
  }
  std::cout << "kills that cut a snapshot write short: " << cut_writes << std::endl;

  const ppe::State a = ppe::serialization::load_file(reference / "final.pt"), b = ppe::serialization::load_file(resumed / "final.pt");
  bool same = a.size() == b.size();
  for (const auto& [name, t] : a.as_dict()) {
    const ppe::State* u = b.find(name);
    same = same && u && t.as_tensor().equal(u->as_tensor());
  }
  const auto la = log_without_time(reference / "log"), lb = log_without_time(resumed / "log");
  std::cout << "parameters: " << (same ? "bitwise identical" : "DIFFERENT") << std::endl;
  std::cout << "log: " << la.size() << " and " << lb.size() << " entries, "
            << (la == lb ? "identical" : "DIFFERENT") << " (elapsed_time aside)" << std::endl;
  const bool ok = same && la == lb;
  std::cout << (ok ? "the resumed run matches the uninterrupted run" : "MISMATCH") << std::endl;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto value = [&](std::size_t& i) {
      if (i + 1 >= args.size()) throw std::invalid_argument("missing value after " + args[i]);
      return args[++i];
    };
    if (!args.empty() && args[0] == "train") {
      fs::path out;
      int epochs = 4;
      for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--out") out = value(i);
        else if (args[i] == "--epochs") epochs = std::stoi(value(i));
        else throw std::invalid_argument("unknown argument " + args[i]);
      }
      if (out.empty()) throw std::invalid_argument("train needs --out DIR");
      return train(out, epochs);
    }
    int kills = 4;
    unsigned seed = 1;
    fs::path out = "result_resume";
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--kills") kills = std::stoi(value(i));
      else if (args[i] == "--seed") seed = static_cast<unsigned>(std::stoul(value(i)));
      else if (args[i] == "--out") out = value(i);
      else throw std::invalid_argument("unknown argument " + args[i] + " (usage: resume [--kills K] [--seed S] [--out DIR])");
    }
    return demonstrate(fs::read_symlink("/proc/self/exe").string(), out, kills, seed);
  } catch (const std::exception& e) {
    std::cerr << "resume: " << e.what() << std::endl;
    return 2;
  }
}
