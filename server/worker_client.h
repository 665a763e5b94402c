// The daemon's handle on its GPU worker process (server/worker/main.cc):
// starts it with Unix sockets for its stdio, talks the framed protocol of
// server/common/ipc.h, and restarts it when it dies. Not thread-safe: the job runner alone uses it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tuned/v1/tuner.pb.h"
#include "tuned/v1/worker.pb.h"

namespace tuned {

/// The environment a worker process starts with: of this process's
/// variables (`env`, NAME=value strings), only those of an allowlist of
/// exact names that the worker's parts read: PATH (the sanitizers'
/// symbolizer), LD_LIBRARY_PATH (the dynamic linker), CUDA_HOME and
/// CUDA_PATH (the toolkit's headers), CUDA_VISIBLE_DEVICES,
/// CUDA_DEVICE_ORDER, CUDA_MODULE_LOADING, CUDA_LAUNCH_BLOCKING,
/// CUDA_CACHE_DISABLE, CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE and
/// CUDA_MPS_PIPE_DIRECTORY (the CUDA driver), ASAN_OPTIONS, LSAN_OPTIONS,
/// UBSAN_OPTIONS, and the test worker's TUNED_WORKER_FAKE_BASELINE_MS. No
/// prefix: a worker compiles and runs users' kernel specs, so no secret of
/// the daemon (TUNED_DB's password, TUNED_TOKEN, an NVIDIA_API_KEY) reaches
/// it, whatever its name.
std::vector<std::string> WorkerEnvironment(const char* const* env);

class WorkerClient {
 public:
  /// Starts `path args...` (e.g. {"--gpu", "0"}) and asks it for its device.
  /// FAILED_PRECONDITION with the worker's reason if it cannot start (no GPU).
  /// `role` names it in logs and errors ("GPU worker", "compiler").
  static absl::StatusOr<std::unique_ptr<WorkerClient>> Start(const std::string& path,
                                                             std::vector<std::string> args,
                                                             std::string role = "GPU worker");
  ~WorkerClient();

  const v1::Device& device() const { return device_; }
  /// What confines the process, as it said at start: "Landlock ABI 7", or
  /// "none (<why>)" (server/worker/sandbox.h).
  const std::string& sandbox() const { return sandbox_; }
  /// Sends one request and waits for its response, at most `timeout`.
  /// UNAVAILABLE if the worker died; DEADLINE_EXCEEDED if it did not answer
  /// in time (it is then killed with SIGKILL: a hung kernel or NVRTC call
  /// cannot be stopped any other way). Either way it is reaped: call Restart.
  /// Response.error is not converted.
  absl::StatusOr<v1::worker::Response> Call(const v1::worker::Request& request,
                                            absl::Duration timeout = absl::InfiniteDuration());
  /// Call for a request answered in parts (a Compile with `stream`): hands
  /// each partial answer (Response.compiled_one) to `on_partial` as it
  /// arrives, on this thread, and returns the final response. `timeout`
  /// bounds the whole call; death and timeout are as for Call (UNAVAILABLE,
  /// DEADLINE_EXCEEDED, the worker reaped), the partial answers handed over
  /// before them stay handed over. A worker that answers at once (no
  /// partial answers) is accepted: its response is the final one.
  absl::StatusOr<v1::worker::Response> CallStreaming(
      const v1::worker::Request& request, absl::Duration timeout,
      const std::function<void(const v1::worker::CompiledOne&)>& on_partial);
  /// True while the worker process is running (false after it died or was
  /// killed, until Restart).
  bool alive() const { return pid_ > 0; }
  /// Stops the worker (if alive) and starts a new one; calls the
  /// on_restart callback first.
  absl::Status Restart();
  /// Stops the worker and starts a fresh process on purpose (not a failure:
  /// neither restarts() nor the on_restart callback count it), e.g. to judge
  /// the job's finalists in a process that measured nothing else.
  /// Takes the spare process if StartSpare made one (its start already
  /// done), else starts one.
  absl::Status Respawn();
  /// Starts the next fresh process now, beside the running one, so that
  /// Respawn finds it started (a GPU worker's start, CUDA's context
  /// included, took ~0.25 s of each job's judging on the H100). No-op while
  /// a spare is there; a spare that cannot start is logged, and Respawn
  /// starts one as before.
  void StartSpare();
  int restarts() const { return restarts_; }
  /// True while a started worker answers; false from its death until a
  /// restart succeeds. Safe to read from any thread (health checks).
  bool ready() const { return ready_.load(); }
  /// Kills the worker process now, from any thread (a daemon that stops
  /// does not wait for a compile batch): the call in progress returns
  /// UNAVAILABLE. Restart brings it back.
  void Interrupt();
  /// Called at each Restart (metrics); set before the runner starts.
  void set_on_restart(std::function<void()> on_restart) { on_restart_ = std::move(on_restart); }

 private:
  WorkerClient(std::string path, std::vector<std::string> args, std::string role)
      : path_(std::move(path)), role_(std::move(role)), args_(std::move(args)) {}
  /// A worker process and its pipes.
  struct Process {
    pid_t pid = -1;
    int to = -1;    // its standard input
    int from = -1;  // its standard output
  };
  /// Starts `path args...` with pipes into `p`.
  absl::Status Launch(Process* p);
  /// Launch as the worker, then its hello (Greet).
  absl::Status Spawn();
  /// Reads the worker's answer to its hello: its device, or why it could not start.
  absl::Status Greet();
  void Stop();
  void StopSpare();
  /// Waits up to 5 s for `pid` to exit, then kills it.
  static void Reap(pid_t pid);
  /// Reads one message of the worker into `response`, waiting until
  /// `deadline` (InfiniteFuture: no limit) at most; past it, the worker is
  /// killed and DEADLINE_EXCEEDED names `timeout`. Errors pass through Fail.
  absl::Status Receive(absl::Time deadline, absl::Duration timeout, v1::worker::Response* response);
  /// `s` unchanged if OK; else the worker is reaped and stopped, and
  /// UNAVAILABLE says how it ended and why (`s`).
  absl::Status Fail(const absl::Status& s);

  std::string path_;
  std::string role_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  int restarts_ = 0;
  std::atomic<bool> ready_{false};
  std::atomic<pid_t> interruptible_{-1};  // pid_ for Interrupt, -1 once being reaped
  std::function<void()> on_restart_;
  v1::Device device_;
  std::string sandbox_;
  Process spare_;  // StartSpare's, until Respawn takes it
};

}  // namespace tuned
