// tunectl's command line: the global options, each command's options, and
// the problem a command names; the commands are client/tunectl_commands.h's.
#include "client/tunectl.h"

#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "client/tunectl_commands.h"
#include "core/text.h"
#include "families/family.h"
#include "tuned/client.h"

namespace {

using tuned::tunectl::Fail;

// A usage error (clig.dev): one line on stderr pointing to the command's
// --help, exit 2. Nothing was sent to the daemon.
int Usage(std::string message, const CLI::App& app) {
  message = absl::StrReplaceAll(message, {{"\n", " "}});
  while (!message.empty() && message.back() == ' ') message.pop_back();
  std::string command = "tunectl";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  std::cerr << "tunectl: " << tuned::BoundMessage(message, 512) << " (see '" << command << " --help')\n";
  return 2;
}

// Whole numbers that fit 64 bits, with a message naming the bad argument.
const CLI::Validator kInteger(
    [](std::string& s) -> std::string {
      int64_t v;
      return absl::SimpleAtoi(s, &v) ? "" : "'" + s + "' is not a 64-bit whole number";
    },
    "");

CLI::Validator AtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        int64_t v;
        if (!absl::SimpleAtoi(s, &v)) return "'" + s + "' is not a whole number";
        return v >= min ? "" : absl::StrCat("must be at least ", min, ", got ", s);
      },
      "");
}

// A problem's options, as every command that names one takes them.
struct ProblemArgs {
  std::string family = "gemm", version, math = "ieee_fp32", layout = "nn", dtype = "f32",
              epilogue = "none";
  std::vector<int64_t> dims;
};

void AddProblemOptions(CLI::App* cmd, ProblemArgs& p) {
  cmd->add_option("--family", p.family,
                  "kernel family: gemm (M N K; sgemm names it too), transpose (ROWS COLS), or a registered kernel "
                  "spec's name (its dims in order; 'tunectl families' lists them)");
  cmd->add_option("--version", p.version,
                  "a kernel spec's version (its hash, as 'tunectl family show NAME' prints it); "
                  "default: the newest");
  cmd->add_option("dims", p.dims, "shape, e.g. M N K")->required()->check(kInteger);
  cmd->add_option("--math", p.math,
                  "gemm math mode: ieee_fp32 (default; fp32 kernels, cuBLAS pedantic), "
                  "fp32_accurate (also 3xTF32 tensor cores; error <= 2x cuBLAS fp32's vs fp64) "
                  "or tf32 (TF32 tensor cores; error <= 2x cuBLAS TF32's vs fp64)");
  cmd->add_option("--layout", p.layout,
                  "gemm operand layout, op(A) then op(B), as cuBLAS's: nn (default; A M x K, "
                  "B K x N, row-major), nt (B stored N x K, as torch's F.linear weight), tn "
                  "(A stored K x M) or tt");
  cmd->add_option("--dtype", p.dtype,
                  "gemm element type: f32 (default), bf16 or f16 (16-bit A, B and C, fp32 "
                  "accumulation; error <= 2x cuBLAS's vs fp64; math mode ieee_fp32 only), "
                  "bf16_f32 or f16_f32 (16-bit A and B, fp32 C)");
  cmd->add_option("--epilogue", p.epilogue,
                  "gemm 16-bit dtypes: what is applied to C after the product, as F.linear's "
                  "bias and an activation: none (default), bias (+ a bias of N elements), "
                  "bias_relu, bias_gelu_tanh (GELU's tanh form) or bias_gelu_erf (GELU)");
}

// The problem `p` names, or a usage error's message. A built-in family's
// name maps to its enum, and its rank is checked here; any other name goes
// to the daemon, which knows the kernel specs.
absl::StatusOr<tuned::v1::Problem> ParseProblem(const ProblemArgs& p) {
  if (const tuned::Family* family = tuned::FindFamily(p.family);
      family != nullptr && p.dims.size() != family->dims().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(family->name()), " takes ", family->dims().size(), " dimensions (",
                     absl::StrJoin(family->dims(), ", "), "), got ", p.dims.size()));
  }
  if (tuned::IsBuiltinFamily(p.family) && !p.version.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--version names a kernel spec's version; ", p.family, " is a built-in family"));
  }
  tuned::v1::Problem problem = tuned::FamilyProblem(p.family, p.dims, p.version);
  auto math = tuned::ParseMath(p.math);
  if (!math.ok()) return math.status();
  problem.set_math(*math);
  auto layout = tuned::ParseLayout(p.layout);
  if (!layout.ok()) return layout.status();
  problem.set_layout(*layout);
  auto epilogue = tuned::ParseEpilogue(p.epilogue);
  if (!epilogue.ok()) return epilogue.status();
  problem.set_epilogue(*epilogue);
  if (tuned::IsBuiltinFamily(p.family)) {
    auto dtype = tuned::ParseDType(p.dtype);
    if (!dtype.ok()) return dtype.status();
    problem.set_dtype(*dtype);
  } else if (p.dtype != "f32") {
    return absl::InvalidArgumentError(
        "--dtype is for built-in families; a kernel spec's arguments have their types");
  }
  return problem;
}

// A command: its subcommand, and what runs when it is the one given. Each
// command's options live in the closure its Add function makes.
struct Command {
  CLI::App* app;
  std::function<int(tuned::tunectl::Context&)> run;
};

// A command that names a problem: the problem is parsed before `run`.
Command ProblemCommand(CLI::App* app,
                       std::function<int(tuned::tunectl::Context&, const tuned::v1::Problem&)> run) {
  auto p = std::make_shared<ProblemArgs>();
  AddProblemOptions(app, *p);
  return {app, [app, p, run](tuned::tunectl::Context& ctx) {
            auto problem = ParseProblem(*p);
            if (!problem.ok()) return Usage(std::string(problem.status().message()), *app->get_parent());
            return run(ctx, *problem);
          }};
}

// Every command of tunectl, added to `app`.
std::vector<Command> AddCommands(CLI::App& app) {
  namespace cmd = tuned::tunectl;
  using Ctx = cmd::Context;
  using Problem = tuned::v1::Problem;
  std::vector<Command> commands;

  auto* sweep = app.add_subcommand("sweep", "queue a sweep job for a problem");
  struct SweepArgs {
    bool wait = false;
    std::string strategy, budget;
  };
  auto sweep_args = std::make_shared<SweepArgs>();
  sweep->add_flag("--wait", sweep_args->wait,
                  "show progress until the job ends, then print the winner");
  sweep->add_option("--strategy", sweep_args->strategy,
                    "exhaustive (the pruned space, then neighbours of the best) or model (a cost "
                    "model fitted on the other tuned shapes picks the configs); default: the "
                    "daemon's (tuned --strategy, model unless set)");
  sweep->add_option("--budget", sweep_args->budget,
                    "stop at this many GPU seconds of measuring ('10s', '2m') or configs ('64'); "
                    "default: the daemon's (tuned --budget)");
  commands.push_back(ProblemCommand(sweep, [sweep_args](Ctx& ctx, const Problem& p) {
    return cmd::Sweep(ctx, p, sweep_args->wait, sweep_args->strategy, sweep_args->budget);
  }));

  auto* best = app.add_subcommand(
      "best", "print the tuned kernel of a problem; exit 1 if the shape itself is not tuned (for a "
              "shape near a tuned one, that one's kernel is printed, marked NOT TUNED)");
  auto tune_if_missing = std::make_shared<bool>(false);
  best->add_flag("--tune-if-missing", *tune_if_missing,
                 "if the shape is untuned, also queue a sweep for it");
  commands.push_back(ProblemCommand(best, [tune_if_missing](Ctx& ctx, const Problem& p) {
    return cmd::Best(ctx, p, *tune_if_missing);
  }));

  auto* results = app.add_subcommand("results", "print the measurements of a problem");
  auto top = std::make_shared<int>(10);
  results->add_option("--top", *top, "show the N best (0: all)")->check(AtLeast(0));
  commands.push_back(ProblemCommand(
      results, [top](Ctx& ctx, const Problem& p) { return cmd::Results(ctx, p, *top); }));

  auto* report = app.add_subcommand(
      "report", "write an SVG picture of a problem's sweep: every verified config's speed with the "
                "winner, the baseline and the served kernel marked, each parameter's effect, and "
                "the failures by class");
  auto svg = std::make_shared<std::string>();
  report->add_option("--out", *svg, "SVG file to write")->required();
  commands.push_back(ProblemCommand(
      report, [svg](Ctx& ctx, const Problem& p) { return cmd::Report(ctx, p, *svg); }));

  auto* jobs = app.add_subcommand("jobs", "list jobs, newest first");
  auto limit = std::make_shared<int>(20);
  jobs->add_option("--limit", *limit, "at most N jobs")->check(AtLeast(1));
  commands.push_back({jobs, [limit](Ctx& ctx) { return cmd::Jobs(ctx, *limit); }});

  // The commands on one job, by its id.
  auto add_job_command = [&](const char* name, const char* help, std::function<int(Ctx&, int64_t)> run) {
    auto* sub = app.add_subcommand(name, help);
    auto id = std::make_shared<int64_t>(0);
    sub->add_option("id", *id, "job id")->required()->check(kInteger);
    commands.push_back({sub, [id, run](Ctx& ctx) { return run(ctx, *id); }});
  };
  add_job_command("job", "show one job", [](Ctx& ctx, int64_t id) { return cmd::ShowJob(ctx, id, false); });
  add_job_command("watch", "follow a job until it ends", cmd::Watch);
  add_job_command("cancel", "cancel a queued or running job",
                  [](Ctx& ctx, int64_t id) { return cmd::ShowJob(ctx, id, true); });

  commands.push_back({app.add_subcommand("device", "describe the daemon's GPU"), cmd::Device});
  commands.push_back(
      {app.add_subcommand(
           "prior", "show the prior the daemon loaded (measurements of another GPU of its "
                    "architecture that choose what to compile and measure first) and where it uses it"),
       cmd::Prior});

  auto* daemons = app.add_subcommand(
      "daemons", "list the daemons sharing the database (the fleet): host, GPU, kind, heartbeat, job");
  auto all = std::make_shared<bool>(false);
  daemons->add_flag("--all", *all, "also the stopped and silent ones");
  commands.push_back({daemons, [all](Ctx& ctx) { return cmd::Daemons(ctx, *all); }});

  auto* health = app.add_subcommand(
      "health", "standard gRPC health check: prints SERVING (exit 0) or NOT_SERVING (exit 1)");
  auto service = std::make_shared<std::string>();
  health->add_option("--service", *service, "service to ask about (default: the daemon)");
  commands.push_back({health, [service](Ctx& ctx) { return cmd::Health(ctx, *service); }});

  auto* export_cmd = app.add_subcommand(
      "export", "write the tuned kernel (kernel.cu, .cubin, .ptx, .json) to a directory");
  auto export_dir = std::make_shared<std::string>();
  export_cmd->add_option("--out", *export_dir, "directory to write")->required();
  commands.push_back(ProblemCommand(export_cmd, [export_dir](Ctx& ctx, const Problem& p) {
    return cmd::Export(ctx, p, *export_dir);
  }));

  auto* dump = app.add_subcommand("dump", "export every tuned kernel of the daemon's device, one "
                                          "directory per problem");
  auto dump_dir = std::make_shared<std::string>();
  dump->add_option("--out", *dump_dir, "directory to write")->required();
  commands.push_back({dump, [dump_dir](Ctx& ctx) { return cmd::Dump(ctx, *dump_dir); }});

  // Kernel specs: a user's own kernel as a family (tuner.proto KernelSpec).
  auto* family = app.add_subcommand(
      "family", "register a kernel spec as a family, or show one (see 'tunectl families')");
  family->require_subcommand(1);
  family->fallthrough();
  auto* family_add = family->add_subcommand(
      "add", "register a kernel spec file (.toml or .json; its source_file is read relative to it) "
             "with the daemon (needs tuned --allow-user-kernels)");
  auto spec_file = std::make_shared<std::string>();
  family_add->add_option("spec_file", *spec_file, "the spec file")->required();
  family_add->fallthrough();
  commands.push_back({family_add, [spec_file](Ctx& ctx) { return cmd::FamilyAdd(ctx, *spec_file); }});
  auto* family_show = family->add_subcommand(
      "show", "print a family's spec, each field readable (--json: the spec as protobuf JSON)");
  auto show = std::make_shared<std::pair<std::string, std::string>>();
  family_show->add_option("name", show->first, "the family's name")->required();
  family_show->add_option("--version", show->second, "the version (hash); default: the newest");
  family_show->fallthrough();
  commands.push_back(
      {family_show, [show](Ctx& ctx) { return cmd::FamilyShow(ctx, show->first, show->second); }});

  commands.push_back(
      {app.add_subcommand(
           "families", "list the families: built-in ones and the newest version of each kernel spec"),
       cmd::Families});

  // A recorded workload (tuned.record; client/workload.h).
  auto* workload = app.add_subcommand(
      "workload", "tune and judge a workload that tuned.record(path) wrote: a model's problems");
  workload->require_subcommand(1);
  workload->fallthrough();
  auto workload_file = std::make_shared<std::string>();
  auto workload_wait = std::make_shared<bool>(false);
  auto* workload_sweep = workload->add_subcommand(
      "sweep", "queue a sweep of each problem, largest share of GPU time first (a fleet drains "
               "them together); many prompt lengths of one layer are tuned at power-of-two M "
               "buckets, each listed with the Ms it serves");
  workload_sweep->add_option("file", *workload_file, "the workload file")->required();
  workload_sweep->add_flag("--wait", *workload_wait, "wait for every sweep to end");
  workload_sweep->fallthrough();
  commands.push_back({workload_sweep, [workload_file, workload_wait](Ctx& ctx) {
                        return cmd::SweepWorkload(ctx, *workload_file, *workload_wait);
                      }});
  auto* workload_report = workload->add_subcommand(
      "report", "what the served kernels save: each problem's recorded time divided by the "
                "speedup over cuBLAS measured where it is served (its shape, or the nearest "
                "tuned one), and the whole workload's");
  workload_report->add_option("file", *workload_file, "the workload file")->required();
  workload_report->fallthrough();
  commands.push_back({workload_report, [workload_file](Ctx& ctx) {
                        return cmd::ReportWorkload(ctx, *workload_file);
                      }});

  auto* import_cmd = app.add_subcommand(
      "import", "store kernels written by dump or export (same device kind) in the daemon");
  auto in_dir = std::make_shared<std::string>();
  import_cmd->add_option("dir", *in_dir, "a dump directory, or one export directory")->required();
  commands.push_back({import_cmd, [in_dir](Ctx& ctx) { return cmd::Import(ctx, *in_dir); }});
  return commands;
}

}  // namespace

namespace tuned {

int RunTunectl(int argc, char** argv, const std::string& server_override) {
  CLI::App app{"tunectl: client of the tuned autotuning daemon"};
  app.footer("Exit status: 0 done; 1 the daemon refused or failed the request (message on stderr), "
             "or for best, the shape is not tuned; 2 a usage error.");
  app.set_version_flag("--version", "tunectl " TUNED_VERSION, "print the version and exit");
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  std::string server;
  int gpu = 0;
  bool json = false;
  app.add_option("--server", server, "daemon address: unix:/path or host:port (default: $TUNED_SERVER "
                                     "or the local daemon's socket)");
  app.add_option("--gpu", gpu, "which local daemon (by GPU) when --server is not given")
      ->check(AtLeast(0));
  app.add_flag("--json", json, "print JSON instead of tables");
  // TCP: TLS and a token (docs/operating.md, "Operating tuned"); each flag also reads its TUNED_* variable.
  ClientOptions remote;
  std::string token_file;
  app.add_option("--tls-ca", remote.tls_ca, "PEM CA of the daemon's certificate (TCP; default: system roots)")
      ->envname("TUNED_TLS_CA");
  app.add_option("--tls-cert", remote.tls_cert, "PEM client certificate (daemon with --tls-client-ca)")
      ->envname("TUNED_TLS_CERT");
  app.add_option("--tls-key", remote.tls_key, "PEM private key of --tls-cert")->envname("TUNED_TLS_KEY");
  app.add_option("--tls-server-name", remote.tls_server_name,
                 "name in the daemon's certificate, if not the host of --server")
      ->envname("TUNED_TLS_SERVER_NAME");
  app.add_option("--token", remote.token, "bearer token (prefer TUNED_TOKEN or --token-file: "
                                          "arguments are visible to other users)")
      ->envname("TUNED_TOKEN");
  app.add_option("--token-file", token_file, "file whose first line is the bearer token")
      ->envname("TUNED_TOKEN_FILE");
  const std::vector<Command> commands = AddCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string message = e.what();
    if (message == "A subcommand is required") {
      message = app.remaining().empty() ? "a command is required"
                                        : "unknown command '" + app.remaining().front() + "'";
    }
    return Usage(message, app);
  }
  // The client knows every family's name; a daemon serves fault_test only
  // when started with --enable-fault-test-family (and says so otherwise).
  EnableFaultTestFamily();

  if (remote.token.empty() && !token_file.empty()) {
    auto t = ReadTokenFile(token_file);
    if (!t.ok()) return Fail(t.status());
    remote.token = *t;
  }
  Client client(!server_override.empty() ? server_override
                : server.empty()           ? DefaultServerAddress(gpu)
                                           : server,
                remote);
  tunectl::Context ctx{client, json};
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run(ctx);
  }
  return 0;
}

}  // namespace tuned
