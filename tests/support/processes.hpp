#pragma once
// Real processes for the distributed tests: a test starts this same test
// binary N times, each running one worker test case (a TEST_CASE marked
// doctest::skip(), so the normal run leaves it out) with its own environment,
// then waits for them with a deadline and kills them all when it passes. The
// workers' output goes to files that a failure prints.

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ppe_test {

/// A TCP port that was free a moment ago (the kernel's choice for port 0).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("free_port: cannot bind a loopback socket");
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// How one started process ended.
struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal or at the deadline
  bool timed_out = false;
  std::string output;  // stdout and stderr
};

/// One process to start: its argv and the environment variables it gets on
/// top of this process's.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

/// This test binary, running only the worker test case `test_case`.
inline std::vector<std::string> worker_argv(const std::string& test_case) {
  return {std::filesystem::read_symlink("/proc/self/exe").string(), "--no-skip=true", "--test-case=" + test_case,
          "--no-version=true", "--no-intro=true"};
}

/// Starts every spec, waits until all have ended or `deadline` has passed
/// (then kills the rest), and returns their results in order. `dir` holds the
/// output files.
inline std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs,
                                                const std::filesystem::path& dir, std::chrono::seconds deadline) {
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> logs;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : specs[i].env) env[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = specs[i].argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    logs.push_back(dir / ("process_" + std::to_string(i) + ".log"));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL), ::waitpid(p, nullptr, 0);
      throw std::runtime_error("run_processes: cannot start " + specs[i].argv.front());
    }
    pids.push_back(pid);
  }

  std::vector<ProcessResult> results(specs.size());
  std::vector<bool> done(specs.size(), false);
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::size_t remaining = specs.size();
  while (remaining > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        done[i] = true;
        --remaining;
        results[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() >= end) {
      for (std::size_t i = 0; i < pids.size(); ++i)
        if (!done[i]) {
          ::kill(pids[i], SIGKILL);
          ::waitpid(pids[i], nullptr, 0);
          results[i].timed_out = true;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::ifstream in(logs[i]);
    std::ostringstream text;
    text << in.rdbuf();
    results[i].output = text.str();
  }
  return results;
}

/// `n` workers of `test_case` as torchrun would start them on one machine:
/// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
/// plus `extra` (e.g. the scratch directory).
inline std::vector<ProcessSpec> torchrun_like(const std::string& test_case, int n, int port,
                                              const std::map<std::string, std::string>& extra = {}) {
  std::vector<ProcessSpec> specs;
  for (int r = 0; r < n; ++r) {
    ProcessSpec s{worker_argv(test_case), extra};
    s.env["RANK"] = std::to_string(r);
    s.env["LOCAL_RANK"] = std::to_string(r);
    s.env["WORLD_SIZE"] = std::to_string(n);
    s.env["LOCAL_WORLD_SIZE"] = std::to_string(n);
    s.env["MASTER_ADDR"] = "127.0.0.1";
    s.env["MASTER_PORT"] = std::to_string(port);
    s.env["GLOO_SOCKET_IFNAME"] = "lo";  // loopback only
    specs.push_back(std::move(s));
  }
  return specs;
}

/// Every result's output, for a failure message.
inline std::string outputs(const std::vector<ProcessResult>& results) {
  std::string text;
  for (std::size_t i = 0; i < results.size(); ++i)
    text += "--- process " + std::to_string(i) + " (exit " + std::to_string(results[i].exit_code) +
            (results[i].timed_out ? ", killed at the deadline" : "") + ")\n" + results[i].output;
  return text;
}

/// Runs the worker test case `test_case` in 2 processes on loopback with
/// torchrun's variables (and `extra`), their output files in `dir`, and
/// checks their exit codes against `expected`; a failure shows their output.
/// (doctest's macros: include this after ppe_test.hpp.)
inline void check_workers(const std::string& test_case, const std::filesystem::path& dir,
                          const std::map<std::string, std::string>& extra = {}, std::vector<int> expected = {0, 0},
                          std::chrono::seconds deadline = std::chrono::seconds(120)) {
  const auto results = run_processes(torchrun_like(test_case, 2, free_port(), extra), dir, deadline);
  INFO(outputs(results));
  CHECK(results[0].exit_code == expected[0]);
  CHECK(results[1].exit_code == expected[1]);
}

}  // namespace ppe_test
