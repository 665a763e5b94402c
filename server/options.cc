#include "server/options.h"

#include "server/search/strategy.h"

#include <filesystem>
#include <iostream>
#include <regex>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/text.h"
#include "server/common/cpus.h"
#include "server/common/log.h"
#include "core/paths.h"

namespace tuned {
namespace {

// A usage error (clig.dev; 2, as getopt-based tools and tunectl): the message,
// within 512 bytes, on stderr with a pointer to --help.
int Usage(const std::string& message) {
  std::cerr << "tuned: " << BoundMessage(message, 512) << "\n(see 'tuned --help')\n";
  return 2;
}

// Path of tuned-worker: next to this executable.
std::string DefaultWorkerPath() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : self.parent_path()) / "tuned-worker";
}

// The config file's settings for the options that neither a flag nor the
// environment set, so that the file comes last (CLI11's own --config handling
// lets the file win over the environment).
void ApplyConfigFile(CLI::App& app, const std::string& path) {
  for (const CLI::ConfigItem& item : CLI::ConfigTOML().from_file(path)) {
    if (!item.parents.empty()) throw CLI::ConfigError("section [" + item.parents.front() + "] in " + path);
    CLI::Option* opt = app.get_option_no_throw("--" + item.name);
    if (opt == nullptr || item.name == "config") {
      throw CLI::ConfigError("unknown setting '" + item.name + "' in " + path);
    }
    if (!opt->get_configurable()) {  // --print-config: a command, not a setting
      throw CLI::ConfigError("'" + item.name + "' is a flag of the command line, not a setting of " + path);
    }
    if (opt->count() > 0) continue;  // a flag or TUNED_* already set it
    if (opt->get_expected_min() == 0) {  // a flag: as CLI11 reads one from a config file
      opt->add_result(opt->get_flag_value(item.name, CLI::ConfigTOML().to_flag(item)));
    } else {
      opt->add_result(item.inputs);
    }
    opt->run_callback();
  }
}

// Whole numbers from 0 to INT_MAX, named in a short message (CLI11's
// NonNegativeNumber prints its bound as a 300-digit double).
const CLI::Validator kCount(
    [](std::string& s) -> std::string {
      int v;
      return absl::SimpleAtoi(s, &v) && v >= 0 ? "" : "must be a whole number >= 0, got " + Quote(s, 32);
    },
    "N");

// A number of seconds (or a multiple) above 0.
const CLI::Validator kPositive(
    [](std::string& s) -> std::string {
      double v;
      return absl::SimpleAtod(s, &v) && v > 0 ? "" : "must be a number > 0, got " + Quote(s, 32);
    },
    "X>0");

// Where the GetBest threads run: auto, all or a CPU list (server/common/cpus.h).
const CLI::Validator kServingCpus(
    [](std::string& s) -> std::string {
      return s == "auto" || s == "all" || CountCpus(s) > 0
                 ? ""
                 : "must be auto, all or a CPU list such as 12-15, got " + Quote(s, 32);
    },
    "CPUS");

// `settings` (the TOML that --print-config prints) with the password of
// every URL in it (user:PASSWORD@, or ?password=) as "***", as the logs
// show a database's URL.
std::string MaskPasswords(std::string settings) {
  static const std::regex kUserinfo(R"(://([^:/@\s"]*):[^@/\s"]*@)");
  static const std::regex kParam(R"(([?&]password=)[^&\s"]*)");
  settings = std::regex_replace(settings, kUserinfo, "://$1:***@");
  return std::regex_replace(settings, kParam, "$1***");
}

}  // namespace

int ParseDaemonOptions(int argc, char** argv, DaemonOptions* o) {
  CLI::App app{"tuned: autotuning daemon for CUDA kernels (one per GPU).\n"
               "Settings: flags, then TUNED_<FLAG> environment variables, then --config FILE."};
  app.set_version_flag("--version", "tuned " TUNED_VERSION, "print the version and exit")
      ->configurable(false);  // a command, as --print-config: no setting of a config file
  app.footer("Exit status: 0 stopped cleanly; 1 a failure (message on stderr); 2 a usage error "
             "(a bad flag or setting).");
  o->worker_path = DefaultWorkerPath();
  app.option_defaults()->always_capture_default();  // --print-config shows defaults too
  std::string config;
  bool print_config = false;
  // Every option also reads TUNED_<NAME> (upper case, '-' -> '_').
  auto env = [](CLI::Option* opt) {
    std::string var = "TUNED_";
    for (char c : opt->get_lnames().front()) var += c == '-' ? '_' : static_cast<char>(std::toupper(c));
    return opt->envname(var);
  };
  env(app.add_option("--config", config, "TOML file of settings (keys: the long flag names)"))
      ->configurable(false);
  app.add_flag("--print-config", print_config, "print the settings in force (TOML) and exit")
      ->configurable(false);
  env(app.add_option("--gpu", o->gpu, "CUDA device ordinal this daemon owns"))->check(kCount);
  env(app.add_option("--db", o->db,
                     "database: a SQLite file (a path or sqlite:///path; default: "
                     "$XDG_STATE_HOME/tuned/gpu<N>.db), or postgresql://user@host:port/dbname"
                     "?sslmode=... shared by a fleet of daemons"));
  env(app.add_option("--socket", o->socket,
                     "Unix socket, mode 0660 (default: $XDG_RUNTIME_DIR/tuned/gpu<N>.sock)"));
  env(app.add_option("--listen", o->listen,
                     "also serve TCP on HOST:PORT; needs --tls-cert, --tls-key and --token-file"));
  env(app.add_option("--tls-cert", o->tls_cert, "PEM certificate (chain) of the TCP port"));
  env(app.add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert"));
  env(app.add_option("--tls-client-ca", o->tls_client_ca,
                     "PEM CA: TCP clients must present a certificate it signed (mutual TLS)"));
  env(app.add_option("--token-file", o->token_file,
                     "clients of the TCP port, one NAME:TOKEN [SCOPE,...] per line"));
  env(app.add_flag("--allow-anonymous-reads", o->allow_anonymous_reads,
                   "TCP calls that change nothing may come without a token"));
  env(app.add_option("--max-jobs-per-client", o->max_jobs_per_client,
                     "queued + running jobs per client (0: no cap)"))
      ->check(kCount);
  env(app.add_option("--max-configs-per-client", o->max_configs_per_client,
                     "configs queued and not yet measured per client (0: no cap)"))
      ->check(kCount);
  env(app.add_option("--max-registrations-per-client", o->max_registrations_per_client,
                     "kernel specs a client may register in an hour (0: no cap)"))
      ->check(kCount);
  env(app.add_option("--metrics-listen", o->metrics_listen,
                     "serve Prometheus metrics at http://HOST:PORT/metrics (off by default)"));
  env(app.add_option("--health-listen", o->health_listen,
                     "serve only grpc.health.v1, plaintext, on HOST:PORT (Kubernetes gRPC probes)"));
  env(app.add_option("--drain-seconds", o->drain_seconds,
                     "after SIGTERM, report NOT_SERVING and take no new jobs this long, then stop"))
      ->check(kCount);
  env(app.add_option("--lookup-threads", o->lookup_threads,
                     "threads that serve GetBest, the clients' look-up, each polling a queue of its "
                     "own (default 0: a quarter of the cores)"))
      ->check(CLI::Range(0, 1024));
  env(app.add_option("--lookup-spin-us", o->lookup_spin_us,
                     "µs that a GetBest thread polls without sleeping after each call, so that a "
                     "client's next call finds it awake (0: sleep at once)"))
      ->check(CLI::Range(0, 100000));
  env(app.add_option("--serving-cpus", o->serving_cpus,
                     "CPUs of the GetBest threads, kept free of the daemon's other work (the job "
                     "runner, the GPU worker, the compilers): auto (whole cores, the last ones, "
                     "for --lookup-threads; nothing pinned below 8 CPUs), all (nothing pinned) "
                     "or a list such as 12-15"))
      ->check(kServingCpus);
  env(app.add_option("--work-priority", o->work_priority,
                     "CPU priority of the work beside serving (a job's compiles, the compile-ahead "
                     "and its compiles, a cost model's fit): idle (SCHED_IDLE, the default: it runs "
                     "only on cores that serving leaves) or normal (a host where other programs "
                     "would starve it, as tests running side by side do)"))
      ->check(CLI::IsMember({"idle", "normal"}));
  env(app.add_option("--worker", o->worker_path, "path of the tuned-worker executable"));
  bool compile_ahead = true;
  CLI::Option* ahead = env(app.add_flag(
      "--compile-ahead,!--no-compile-ahead", compile_ahead,
      "while idle, compile every family's space and its neighbours into the compile cache "
      "(default: on, off with --compile-only)"));
  env(app.add_flag("--compile-only", o->compile_only,
                   "no GPU: compile every candidate for sm_90 but run none (tests, CI)"));
  env(app.add_option("--device-memory-mib", o->device_memory_mib,
                     "with --compile-only: memory of the simulated device (tests)"));
  double run_timeout_floor_s = absl::ToDoubleSeconds(o->jobs.run_timeout_floor);
  double compile_timeout_s = absl::ToDoubleSeconds(o->jobs.compile_timeout);
  env(app.add_option("--run-timeout-floor", run_timeout_floor_s,
                     "seconds: a candidate's verify+time call is killed after max(this, "
                     "--run-timeout-multiple x best time so far)"))
      ->check(kPositive);
  env(app.add_option("--run-timeout-multiple", o->jobs.run_timeout_multiple,
                     "see --run-timeout-floor"))
      ->check(kPositive);
  env(app.add_option("--compile-timeout", compile_timeout_s,
                     "seconds: a compile is killed after this for each --compile-batch of its "
                     "kernels, then each kernel without a result alone after this"))
      ->check(kPositive);
  env(app.add_option("--compile-batch", o->jobs.compile_batch,
                     "kernels per compile batch of the compile-ahead; a job claims twice as many "
                     "configs at a time"))
      ->check(kPositive);
  env(app.add_option("--lease-seconds", o->jobs.lease_seconds,
                     "seconds a daemon's claim of work items lasts without its heartbeat (renewed "
                     "every third of it); a dead daemon's claims go back to the pool after it"))
      ->check(CLI::Range(0.3, 3600.0));
  env(app.add_option("--quarantine-after", o->jobs.quarantine_after,
                     "GPU worker crashes after which a config is never run again"))
      ->check(kPositive);
  std::string budget_text;
  // model by default: on the H100 over the 12 public shapes, leave-one-out, a
  // median 8.9 s a shape and its winners within 0.81% of exhaustive's
  // (the search's bar: 10 s a shape, within 2%; bench/RESULTS.md race-places).
  o->jobs.strategy = std::string(search::kModel);
  env(app.add_option("--strategy", o->jobs.strategy,
                     "how a sweep searches unless it asks: model (default: a cost model fitted "
                     "on the other tuned shapes of this GPU kind picks the configs to measure; "
                     "as exhaustive while fewer than 3 are tuned or none of the shape's "
                     "alignment class) or exhaustive (the pruned space, then neighbours of its "
                     "best)"));
  env(app.add_option("--budget", budget_text,
                     "a sweep's budget unless it asks: GPU seconds of measuring ('10s', '2m') or "
                     "configs ('64'); default none"));
  bool use_prior = true;
  CLI::Option* prior_flag = env(app.add_flag(
      "--prior,!--no-prior", use_prior,
      "learn what to compile and measure first from the shipped prior (the project's own "
      "measurements on an H100; used on GPUs of its architecture while this database has fewer "
      "than 12 tuned shapes of a problem kind; never served) (default: on, off with "
      "--compile-only)"));
  CLI::Option* prior_file = env(app.add_option(
      "--prior-file", o->prior_path,
      "read the prior from this file (format: prior/README.md) instead of the shipped one"));
  env(app.add_flag("--allow-user-kernels", o->allow_user_kernels,
                   "take kernel specs (RegisterFamily, tunectl family add): users' CUDA code, "
                   "compiled and run in the worker processes; over TCP a token needs the "
                   "'register' scope too"));
  env(app.add_flag("--no-sandbox", o->no_sandbox,
                   "run the worker processes unconfined (docs/operating.md, 'The sandbox'): only "
                   "for a host where the sandbox keeps the GPU from working"));
  env(app.add_option("--compile-memory-mib", o->compile_memory_mib,
                     "heap one compile may use in the worker processes, MiB (0: no limit); past "
                     "it the compile fails, 'compile of CONFIG exceeded 4 GiB of memory'"))
      ->check(kCount);
  env(app.add_option("--compile-cpu-seconds", o->compile_cpu_seconds,
                     "CPU time one compile may take in the worker processes (0: no limit)"))
      ->check(kCount);
  env(app.add_flag("--enable-fault-test-family", o->fault_test_family,
                   "serve the test-only fault_test family (tests of fault isolation)"));
  env(app.add_option("--log-level", o->log_level, "trace, debug, info, warn, error, critical, off"))
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kLogLevels), std::end(kLogLevels))));
  try {
    app.parse(argc, argv);
    if (!config.empty()) ApplyConfigFile(app, config);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return Usage(e.what());
  }
  o->jobs.compile_ahead = ahead->count() > 0 ? compile_ahead : !o->compile_only;
  o->jobs.user_kernels = o->allow_user_kernels;
  o->use_prior = prior_flag->count() > 0 ? use_prior : !o->compile_only || prior_file->count() > 0;
  if (auto s = search::CheckStrategy(o->jobs.strategy); !s.ok()) {
    return Usage(absl::StrCat("--strategy: ", s.message()));
  }
  if (auto budget = search::ParseBudget(budget_text); budget.ok()) {
    o->jobs.budget = *budget;
  } else {
    return Usage(absl::StrCat("--budget: ", budget.status().message()));
  }
  o->jobs.run_timeout_floor = absl::Seconds(run_timeout_floor_s);
  o->jobs.compile_timeout = absl::Seconds(compile_timeout_s);
  if (print_config) {
    std::cout << MaskPasswords(app.config_to_str(/*default_also=*/true, /*write_description=*/false));
    return 0;
  }
  if (!o->listen.empty() && (o->tls_cert.empty() || o->tls_key.empty() || o->token_file.empty())) {
    return Usage(absl::StrCat(
        "--listen ", Quote(o->listen), " serves TCP only with TLS and tokens: pass --tls-cert FILE "
        "--tls-key FILE --token-file FILE (optionally --tls-client-ca FILE for client "
        "certificates, --allow-anonymous-reads); docs/operating.md, 'Operating tuned', shows "
        "how to make them"));
  }
  if (o->db.empty()) o->db = DefaultDbPath(o->gpu);
  if (o->socket.empty()) o->socket = DefaultSocketPath(o->gpu);
  return -1;
}

}  // namespace tuned
