// The real `tuned` binary as a child process, for tests that drive the daemon
// as a user or an operator does (ops_test, jobs_test): compile-only (no GPU),
// its socket and database in a test directory, its log (stdout and stderr,
// JSON lines) appended to dir/tuned.log. TUNED_* variables of the test's own
// environment are not passed on, so only the test's flags count, but
// TUNED_WORK_PRIORITY (scripts/test.sh: the daemons' compiles at normal
// priority, so that the tests beside do not starve them).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" char** environ;

namespace tuned {

/// The whole file as text ("" if unreadable).
inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class DaemonProcess {
 public:
  /// Starts `daemon` (path of the tuned binary) --compile-only on dir/run/gpu0.sock
  /// and dir/tuned.db (unless `flags` name a --db) with `flags`, plus
  /// `env_extra` ("NAME=value") in its environment.
  DaemonProcess(std::string daemon, std::filesystem::path dir, std::vector<std::string> flags,
                std::vector<std::string> env_extra = {})
      : daemon_(std::move(daemon)),
        dir_(std::move(dir)),
        flags_(std::move(flags)),
        env_extra_(std::move(env_extra)) {
    Spawn();
  }
  ~DaemonProcess() { Kill(); }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  std::filesystem::path socket() const { return dir_ / "run" / "gpu0.sock"; }
  std::filesystem::path db() const { return dir_ / "tuned.db"; }
  std::filesystem::path log() const { return dir_ / "tuned.log"; }
  std::string address() const { return "unix:" + socket().string(); }
  pid_t pid() const { return pid_; }

  /// Starts it (again, after Kill or an exit) with the same flags and database.
  void Spawn() {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    log_offset_ = std::filesystem::exists(log()) ? std::filesystem::file_size(log(), ec) : 0;
    std::vector<std::string> args = {daemon_, "--compile-only", "--socket", socket().string()};
    if (std::find(flags_.begin(), flags_.end(), "--db") == flags_.end()) {
      args.insert(args.end(), {"--db", db().string()});
    }
    args.insert(args.end(), flags_.begin(), flags_.end());
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var(*e);
      if (var.rfind("TUNED_", 0) != 0 || var.rfind("TUNED_WORK_PRIORITY=", 0) == 0) env.push_back(var);
    }
    env.insert(env.end(), env_extra_.begin(), env_extra_.end());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log().c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    code_ = -1;
  }

  /// The log written since the last Spawn.
  std::string RunLog() const { return ReadAll(log()).substr(log_offset_); }

  /// Waits until this run logs that it serves (true) or exits (false).
  bool WaitServing() {
    for (int i = 0; i < 400; ++i) {
      if (RunLog().find("serving on unix:") != std::string::npos) return true;
      if (Exited(nullptr)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  /// The port logged after `prefix` ("listening tcp 127.0.0.1:"), 0 if none.
  int LoggedPort(const std::string& prefix) const {
    const std::string text = RunLog();
    const size_t at = text.find(prefix);
    return at == std::string::npos ? 0 : std::atoi(text.c_str() + at + prefix.size());
  }
  /// True once the process has ended; its exit code (128 + signal) in `*code`.
  bool Exited(int* code) {
    if (pid_ <= 0) {
      if (code != nullptr) *code = code_;
      return true;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != nullptr) *code = code_;
    return true;
  }
  /// Waits up to `timeout` for the exit; its code, or -1 if still running.
  int WaitExit(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    for (auto end = std::chrono::steady_clock::now() + timeout;
         std::chrono::steady_clock::now() < end;) {
      if (int code = -1; Exited(&code)) return code;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pid_ > 0 ? -1 : code_;
  }
  /// kill -9, as a crash or the OOM killer would.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    code_ = 128 + SIGKILL;
  }
  /// SIGTERM, then the exit code.
  int Terminate() {
    if (pid_ > 0) kill(pid_, SIGTERM);
    return WaitExit();
  }

 private:
  std::string daemon_;
  std::filesystem::path dir_;
  std::vector<std::string> flags_, env_extra_;
  pid_t pid_ = -1;
  int code_ = -1;
  size_t log_offset_ = 0;
};

}  // namespace tuned
