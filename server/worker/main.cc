// tuned-worker: the GPU worker process. Started by the daemon, one per GPU;
// reads framed requests on stdin and writes framed responses on stdout
// (server/common/ipc.h): one a request, but for a streamed compile (Compile.stream),
// which is answered one kernel at a time before its final response. Logs go
// to stderr. Exits when stdin closes, or with status 3 after a CUDA error
// that leaves the context unusable, so the daemon restarts it.
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "server/common/idle.h"
#include "server/common/ipc.h"
#include "server/common/log.h"
#include "server/worker/compiler.h"
#include "server/worker/measure.h"
#include "server/worker/sandbox.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  // Die with the daemon: a worker orphaned in a hung kernel or compile would
  // otherwise hold the GPU (or a core) forever after a kill -9 of the daemon.
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) return 1;
  // No descriptor but stdio: whatever the daemon left open (a log file, its
  // database) is not one open of /proc/self/fd/N away from a spec's code.
  if (close_range(3, ~0U, 0) != 0) return 1;
  CLI::App app{"tuned GPU worker (started by the tuned daemon)"};
  int gpu = 0;
  bool compile_only = false;
  app.add_option("--gpu", gpu, "CUDA device ordinal");
  int64_t device_memory_mib = 0;
  app.add_flag("--compile-only", compile_only, "no GPU: compile candidates, never run them");
  app.add_option("--device-memory-mib", device_memory_mib,
                 "with --compile-only: memory of the simulated device (tests)");
  int arch = 0;
  app.add_option("--arch", arch, "with --compile-only: compute capability to compile for, e.g. 90");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off");
  bool idle = false;
  app.add_flag("--idle", idle,
               "run at idle CPU priority (SCHED_IDLE), it and the threads it starts: the "
               "compile-ahead's compiler, which yields the cores to serving and to a job's compiles");
  bool no_sandbox = false;
  app.add_flag("--no-sandbox", no_sandbox,
               "do not confine this process (server/worker/sandbox.h): for a host where the "
               "sandbox keeps the GPU from working");
  int64_t compile_memory_mib = 4096;
  app.add_option("--compile-memory-mib", compile_memory_mib,
                 "heap a compile may use (MiB, per compile running; 0: no limit): past it, the "
                 "compile fails and the process exits (server/worker/compiler.h, CompileLimits)")
      ->check(CLI::NonNegativeNumber);
  double compile_cpu_seconds = 60;
  app.add_option("--compile-cpu-seconds", compile_cpu_seconds,
                 "CPU time a compile may take (0: no limit), as --compile-memory-mib")
      ->check(CLI::NonNegativeNumber);
  std::string sandbox_kind = "auto";
  app.add_option("--sandbox", sandbox_kind,
                 "what confines a compiler (--compile-only): auto (Landlock where the kernel has "
                 "it, else a mount namespace) or mount-namespace (for a host whose Landlock is "
                 "broken, and tests)")
      ->check(CLI::IsMember({"auto", "mount-namespace"}));
  CLI11_PARSE(app, argc, argv);
  // A compiler on a host without Landlock (or asked for it) enters its
  // namespaces now, while it has one thread; its answer comes with the hello.
  std::string sandbox = "none (--no-sandbox)";
  absl::Status early_sandbox;
  const bool mount_namespace =
      !no_sandbox && compile_only && (sandbox_kind == "mount-namespace" || !tuned::HasLandlock());
  if (mount_namespace) {
    auto entered = tuned::EnterMountNamespace(tuned::ToolkitIncludePaths());
    if (entered.ok()) {
      sandbox = *entered;
    } else if (absl::IsUnimplemented(entered.status())) {
      sandbox = absl::StrCat("none (", entered.status().message(), ")");
    } else {
      early_sandbox = entered.status();
    }
    // Die with the daemon still (a change of credentials may clear it).
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) return 1;
  }
  // Before any thread starts: NVRTC's threads inherit it (Linux: per thread).
  if (idle) {
    if (auto s = tuned::EnterIdlePriority(); !s.ok()) {
      std::fprintf(stderr, "tuned-worker: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }

  // Keep the protocol on a private descriptor; stray prints go to stderr.
  const int out = dup(STDOUT_FILENO);
  if (out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return 1;
  if (auto s = tuned::SetUpLogging("worker", log_level); !s.ok()) {
    std::fprintf(stderr, "tuned-worker: %s\n", std::string(s.message()).c_str());
    return 2;
  }

  // A start that fails answers the daemon's hello with the reason, then exits.
  auto refuse = [out](const std::string& why) {
    tuned::v1::worker::Request ignored;
    (void)tuned::ReadMessage(STDIN_FILENO, &ignored);
    tuned::v1::worker::Response response;
    response.set_error(why);
    (void)tuned::WriteMessage(out, response);
    spdlog::error("cannot start: {}", why);
    return 2;
  };
  if (!early_sandbox.ok()) return refuse(absl::StrCat("sandbox: ", early_sandbox.ToString()));
  // One message at a time on `out`: the compiling threads' partial answers,
  // the final ones, and the compile limits' last word.
  std::mutex out_mu;
  std::atomic<bool> streaming{false};  // the request being handled is a streamed compile
  tuned::SetCompileLimits(
      {.memory_bytes = compile_memory_mib << 20,
       .cpu_seconds = compile_cpu_seconds,
       .exceeded = [&](int index, const std::string& message) {
         // The kernel's answer where it has an index: a streamed compile's
         // partial answer (the daemon then compiles the rest again in a
         // fresh process), else the request's error. Then the process exits.
         std::lock_guard<std::mutex> lock(out_mu);
         spdlog::error("{}; exiting", message);
         tuned::v1::worker::Response response;
         if (index >= 0 && streaming) {
           tuned::v1::worker::CompiledOne* one = response.mutable_compiled_one();
           one->set_index(index);
           one->mutable_result()->set_status(tuned::v1::MEASUREMENT_COMPILE_ERROR);
           one->mutable_result()->set_message(message);
         } else {
           response.set_error(message);
         }
         (void)tuned::WriteMessage(out, response);
       }});
  auto worker = tuned::Worker::Create(gpu, compile_only, device_memory_mib << 20, arch);
  if (!worker.ok()) return refuse(worker.status().ToString());
  // Confined once the device is open: from here on it compiles and runs
  // kernel specs' code. What confines it goes to the daemon with the hello.
  if (!no_sandbox && !mount_namespace) {
    auto entered = tuned::EnterSandbox(
        tuned::ToolkitIncludePaths(),
        compile_only ? tuned::SandboxRole::kCompiler : tuned::SandboxRole::kGpuWorker);
    if (entered.ok()) {
      sandbox = *entered;
    } else if (absl::IsUnimplemented(entered.status())) {
      sandbox = absl::StrCat("none (", entered.status().message(), ")");
    } else {
      return refuse(absl::StrCat("sandbox: ", entered.status().ToString()));
    }
  }
  spdlog::info("ready on {} (sm_{}{}){}; sandbox: {}", (*worker)->device().name(),
               (*worker)->device().cc_major(), (*worker)->device().cc_minor(),
               compile_only ? ", compile-only" : "", sandbox);
  while (true) {
    tuned::v1::worker::Request request;
    if (auto s = tuned::ReadMessage(STDIN_FILENO, &request); !s.ok()) {
      if (!absl::IsUnavailable(s)) spdlog::error("bad request: {}", s.ToString());
      return absl::IsUnavailable(s) ? 0 : 1;
    }
    // A streamed compile's partial answers, written as each kernel is
    // compiled (Worker::CompileStreamed makes one call at a time).
    auto emit = [out, &out_mu](const tuned::v1::worker::Response& partial) {
      std::lock_guard<std::mutex> lock(out_mu);
      return tuned::WriteMessage(out, partial);
    };
    streaming = request.has_compile() && request.compile().stream();
    auto response = (*worker)->Handle(request, emit);
    if (request.has_hello()) response.set_sandbox(sandbox);
    if ((*worker)->broken() && response.has_measured()) response.mutable_measured()->set_worker_exits(true);
    std::unique_lock<std::mutex> lock(out_mu);
    if (auto s = tuned::WriteMessage(out, response); !s.ok()) {
      spdlog::error("cannot answer: {}", s.ToString());
      return 1;
    }
    if ((*worker)->broken()) {
      spdlog::error("CUDA context unusable after a fault; exiting for a restart");
      return 3;
    }
  }
}
