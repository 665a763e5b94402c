// The daemon's settings: command-line flags, then TUNED_* environment
// variables, then a TOML config file (--config FILE / TUNED_CONFIG), first
// found wins; all three read by CLI11. Config keys are the long flag names
// without dashes, e.g.
//   listen = "0.0.0.0:50051"
//   tls-cert = "/etc/tuned-autotune/tls/server.pem"
//   max-jobs-per-client = 4
// `tuned --print-config` prints the settings in force in that form and exits.
#pragma once

#include <cstdint>
#include <string>

#include "server/jobs/jobs.h"

namespace tuned {

struct DaemonOptions {
  int gpu = 0;
  std::string db;      // path, sqlite:///path or postgresql://...; default: DefaultDbPath(gpu)
  std::string socket;  // default: DefaultSocketPath(gpu)
  std::string listen;  // TCP HOST:PORT, TLS only; empty: none
  std::string tls_cert, tls_key, tls_client_ca, token_file;
  bool allow_anonymous_reads = false;
  int max_jobs_per_client = 16;                 // queued + running; 0: no cap
  int64_t max_configs_per_client = 100000;      // not yet measured; 0: no cap
  int max_registrations_per_client = 60;        // kernel specs registered per hour; 0: no cap
  std::string metrics_listen;                   // HTTP HOST:PORT for /metrics; empty: off
  std::string health_listen;                    // plaintext gRPC health only; empty: off
  double drain_seconds = 0;                     // after SIGTERM: NOT_SERVING this long, then stop
  int lookup_threads = 0;                       // threads serving GetBest; 0: a quarter of the cores
  /// Each GetBest thread polls this long after a call before it sleeps: one
  /// client's look-ups in a row took a median 0.072 ms with it, 0.091 without
  /// (bench/RESULTS.md load-async).
  int lookup_spin_us = 100;
  /// The look-up threads' CPUs: auto, all or a CPU list (server/common/cpus.h).
  std::string serving_cpus = "auto";
  // CPU priority of the work beside serving (a job's compiles, the
  // compile-ahead, a cost model's fit): "idle" (SCHED_IDLE) or "normal".
  std::string work_priority = "idle";
  std::string worker_path;
  bool compile_only = false;
  int64_t device_memory_mib = 0;
  std::string log_level = "info";
  JobRunnerOptions jobs;            // timeouts, compile batch, quarantine
  bool fault_test_family = false;   // serve the test-only fault_test family
  bool allow_user_kernels = false;  // take kernel specs (RegisterFamily)
  bool no_sandbox = false;          // workers unconfined (server/worker/sandbox.h)
  int64_t compile_memory_mib = 4096;  // a compile's heap in the workers (CompileLimits); 0: none
  double compile_cpu_seconds = 60;    // a compile's CPU time in the workers; 0: none
  /// The prior (prior/README.md): on by default (off with --compile-only
  /// unless asked for), the shipped one unless prior_path names a file.
  bool use_prior = true;
  std::string prior_path;
};

/// Parses argv, the environment and the config file into `out`. Returns -1
/// to go on, else the exit code (0 after --help or --print-config, 1 or more
/// after an error, with the message printed). Refuses --listen without TLS
/// material and a token file, saying what to pass.
int ParseDaemonOptions(int argc, char** argv, DaemonOptions* out);

}  // namespace tuned
