#include "server/worker_client.h"

#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/common/ipc.h"
#include "core/status.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace tuned {

std::vector<std::string> WorkerEnvironment(const char* const* env) {
  // Exact names, each read by a part of the worker (its header says which);
  // never a prefix, so that no secret of the daemon passes for a setting.
  static constexpr std::string_view kNames[] = {
      "PATH",  // the sanitizers' symbolizer
      "LD_LIBRARY_PATH",  // the dynamic linker: NVRTC's and the driver's libraries
      "CUDA_HOME", "CUDA_PATH",  // the toolkit's headers (ToolkitIncludePaths)
      "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",  // which GPU --gpu N names (the driver)
      "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING",  // the driver's loading and launches
      "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE",  // its JIT cache
      "CUDA_MPS_PIPE_DIRECTORY",  // a GPU shared through MPS
      "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS",  // sanitizer builds
      "TUNED_WORKER_FAKE_BASELINE_MS",  // the test worker's baseline (tests/fake_worker.cc)
  };
  std::vector<std::string> out;
  for (; env != nullptr && *env != nullptr; ++env) {
    const std::string_view var(*env);
    const std::string_view name = var.substr(0, var.find('='));
    const bool kept = std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
    if (kept && name.size() < var.size()) out.emplace_back(var);
  }
  return out;
}

namespace {

/// Copies a worker's stderr (`fd`, its read end; closed at its end) to this
/// process's stderr, whole lines at a time so that they do not interleave
/// with this process's own lines (a line longer than the buffer goes in parts).
void ForwardLog(int fd) {
  std::string pending;
  char buffer[16384];
  auto put = [](std::string_view text) {
    while (!text.empty()) {
      const ssize_t n = write(STDERR_FILENO, text.data(), text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      text.remove_prefix(static_cast<size_t>(n));
    }
  };
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    const size_t end = pending.rfind('\n');
    if (end != std::string::npos) {
      put(std::string_view(pending).substr(0, end + 1));
      pending.erase(0, end + 1);
    } else if (pending.size() >= sizeof buffer) {
      put(pending);
      pending.clear();
    }
  }
  put(pending);
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerClient>> WorkerClient::Start(const std::string& path,
                                                                  std::vector<std::string> args,
                                                                  std::string role) {
  auto w = std::unique_ptr<WorkerClient>(new WorkerClient(path, std::move(args), std::move(role)));
  TUNED_RETURN_IF_ERROR(w->Spawn());
  return w;
}

WorkerClient::~WorkerClient() {
  Stop();
  StopSpare();
}

absl::Status WorkerClient::Launch(Process* p) {
  // A worker that dies (or is stopped) while a request is being written to
  // its pipe must not kill this process with SIGPIPE: the write then fails
  // with EPIPE, which Call reports. Process-wide, once, here where the pipes
  // are made: the daemon and every test that embeds a WorkerClient (a test
  // died of it in CI, 2026-11-25, ServiceTest.GetBestFallsBackToTheNearestTunedShape).
  static const bool sigpipe_ignored = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  if (!sigpipe_ignored) return absl::InternalError("cannot ignore SIGPIPE");
  // Its stdio are Unix sockets, not pipes: a socket cannot be opened again
  // through /proc/self/fd/N (ENXIO), where a pipe could (a spec's #include
  // of it would hang its compile). Its stderr is one that ForwardLog copies
  // into this process's log, never this process's stderr itself: a worker
  // compiles users' code, and the daemon's log file must be no open away.
  int to[2], from[2], err[2];
  auto pair = [](int fds[2]) { return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0; };
  if (!pair(to) || !pair(from) || !pair(err)) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<const char*> argv = {path_.c_str()};
  for (const auto& a : args_) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const std::vector<std::string> env = WorkerEnvironment(environ);
  std::vector<const char*> envp;
  for (const auto& e : env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, path_.c_str(), &actions, nullptr,
                              const_cast<char* const*>(argv.data()),
                              const_cast<char* const*>(envp.data()));
  posix_spawn_file_actions_destroy(&actions);
  close(to[0]);
  close(from[1]);
  close(err[1]);
  if (spawned != 0) {
    close(to[1]);
    close(from[0]);
    close(err[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", role_, " ", path_, ": ", std::strerror(spawned)));
  }
  std::thread(ForwardLog, err[0]).detach();  // ends when the worker's last stderr closes
  *p = {.pid = pid, .to = to[1], .from = from[0]};
  return absl::OkStatus();
}

absl::Status WorkerClient::Spawn() {
  Process p;
  TUNED_RETURN_IF_ERROR(Launch(&p));
  pid_ = p.pid;
  to_worker_ = p.to;
  from_worker_ = p.from;
  interruptible_ = pid_;
  v1::worker::Request hello;
  hello.mutable_hello();
  if (absl::Status s = Fail(WriteMessage(to_worker_, hello)); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(role_, " ", path_, " exited at start: ", s.message()));
  }
  return Greet();
}

absl::Status WorkerClient::Greet() {
  v1::worker::Response response;
  if (absl::Status s = Receive(absl::InfiniteFuture(), absl::InfiniteDuration(), &response); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(role_, " ", path_, " exited at start: ", s.message()));
  }
  if (!response.error().empty()) {
    Stop();
    return absl::FailedPreconditionError(absl::StrCat(role_, ": ", response.error()));
  }
  device_ = response.device();
  sandbox_ = response.sandbox();
  ready_ = true;
  spdlog::info("{} pid {} ready: {} sm_{}{}{}; sandbox: {}", role_, pid_, device_.name(),
               device_.cc_major(), device_.cc_minor(), device_.compile_only() ? " (compile-only)" : "",
               sandbox_);
  return absl::OkStatus();
}

void WorkerClient::StartSpare() {
  if (spare_.pid > 0) return;
  Process p;
  if (absl::Status s = Launch(&p); !s.ok()) {
    spdlog::warn("no spare {}: {}", role_, s.ToString());
    return;
  }
  spare_ = p;
  v1::worker::Request hello;  // answered once it has started; read by Respawn
  hello.mutable_hello();
  if (absl::Status s = WriteMessage(spare_.to, hello); !s.ok()) StopSpare();
}

void WorkerClient::StopSpare() {
  if (spare_.pid <= 0) return;
  close(spare_.to);  // the worker exits on end of input
  close(spare_.from);
  Reap(spare_.pid);
  spare_ = {};
}

void WorkerClient::Interrupt() {
  if (const pid_t pid = interruptible_.load(); pid > 0) kill(pid, SIGKILL);
}

void WorkerClient::Stop() {
  ready_ = false;
  interruptible_ = -1;  // before any reaping: the pid may then be reused
  if (to_worker_ >= 0) close(to_worker_);  // the worker exits on end of input
  if (from_worker_ >= 0) close(from_worker_);
  to_worker_ = from_worker_ = -1;
  if (pid_ <= 0) return;
  Reap(pid_);
  pid_ = -1;
}

void WorkerClient::Reap(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 500; ++i) {  // up to 5 s for a clean exit
    if (waitpid(pid, &status, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

absl::StatusOr<v1::worker::Response> WorkerClient::Call(const v1::worker::Request& request,
                                                        absl::Duration timeout) {
  if (pid_ <= 0) return absl::UnavailableError(absl::StrCat(role_, " is not running"));
  const absl::Time deadline =
      timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
  TUNED_RETURN_IF_ERROR(Fail(WriteMessage(to_worker_, request)));
  v1::worker::Response response;
  TUNED_RETURN_IF_ERROR(Receive(deadline, timeout, &response));
  return response;
}

absl::StatusOr<v1::worker::Response> WorkerClient::CallStreaming(
    const v1::worker::Request& request, absl::Duration timeout,
    const std::function<void(const v1::worker::CompiledOne&)>& on_partial) {
  if (pid_ <= 0) return absl::UnavailableError(absl::StrCat(role_, " is not running"));
  const absl::Time deadline =
      timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
  TUNED_RETURN_IF_ERROR(Fail(WriteMessage(to_worker_, request)));
  while (true) {
    v1::worker::Response response;
    TUNED_RETURN_IF_ERROR(Receive(deadline, timeout, &response));
    if (!response.has_compiled_one()) return response;
    on_partial(response.compiled_one());
  }
}

absl::Status WorkerClient::Receive(absl::Time deadline, absl::Duration timeout,
                                   v1::worker::Response* response) {
  if (deadline != absl::InfiniteFuture()) {
    // Wait for the message to begin; the worker writes each message at once.
    while (true) {
      pollfd p{from_worker_, POLLIN, 0};
      const int ms = static_cast<int>(
          std::clamp<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 0, 1000));
      const int n = poll(&p, 1, ms);
      if (n > 0) break;  // readable, or hung up: ReadMessage tells which
      if (n < 0 && errno != EINTR) {
        return Fail(absl::InternalError(absl::StrCat("poll: ", std::strerror(errno))));
      }
      if (absl::Now() >= deadline) {
        interruptible_ = -1;
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        Stop();
        return absl::DeadlineExceededError(absl::StrCat(
            role_, " gave no answer within ", absl::FormatDuration(timeout), "; killed"));
      }
    }
  }
  return Fail(ReadMessage(from_worker_, response));
}

absl::Status WorkerClient::Fail(const absl::Status& s) {
  if (s.ok()) return s;
  int status = 0;
  std::string how = "is gone";
  interruptible_ = -1;
  if (waitpid(pid_, &status, 0) == pid_) {
    how = WIFSIGNALED(status) ? absl::StrCat("was killed by signal ", WTERMSIG(status))
                              : absl::StrCat("exited with status ", WEXITSTATUS(status));
  }
  pid_ = -1;
  Stop();
  return absl::UnavailableError(absl::StrCat(role_, " ", how, " (", s.message(), ")"));
}

absl::Status WorkerClient::Respawn() {
  Stop();
  if (spare_.pid > 0) {
    spdlog::info("taking the spare {} (pid {})", role_, spare_.pid);
    pid_ = spare_.pid;
    to_worker_ = spare_.to;
    from_worker_ = spare_.from;
    interruptible_ = pid_;
    spare_ = {};
    if (Greet().ok()) return absl::OkStatus();
    Stop();  // it died at start: a fresh one, as without a spare
  }
  spdlog::info("starting a fresh {}", role_);
  return Spawn();
}

absl::Status WorkerClient::Restart() {
  Stop();
  ++restarts_;
  if (on_restart_) on_restart_();
  spdlog::warn("restarting {} (restart {})", role_, restarts_);
  return Spawn();
}

}  // namespace tuned
