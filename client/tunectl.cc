// tunectl: command-line client of the tuned daemon.
#include "client/tunectl.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "client/report.h"
#include "client/tunectl_print.h"
#include "families/family.h"
#include "families/spec/spec.h"
#include "core/serving.h"
#include "tuned/client.h"

namespace {

using tuned::v1::Job;
using namespace tuned::tunectl;  // NOLINT: the printers of client/tunectl_print.h

int Fail(const absl::Status& s) {
  std::cerr << "tunectl: " << s.message() << "\n";
  return 1;
}

// Fail, for a request about a problem: where the daemon refused a kernel
// spec's problem (INVALID_ARGUMENT, NOT_FOUND) without naming its family,
// says which name was sent and where the known ones are listed.
int FailFor(const tuned::v1::Problem& p, const absl::Status& s) {
  const std::string& name = p.family_name();
  if (name.empty() || p.family() != tuned::v1::FAMILY_UNSPECIFIED ||
      !(absl::IsInvalidArgument(s) || absl::IsNotFound(s)) ||
      absl::StrContains(s.message(), "'" + name + "'")) {
    return Fail(s);
  }
  return Fail(absl::Status(s.code(), absl::StrCat(s.message(), " (family '", name,
                                                  "': 'tunectl families' lists the known ones)")));
}

// A usage error (clig.dev): one line on stderr pointing to the command's
// --help, exit 2. Nothing was sent to the daemon.
int Usage(std::string message, const CLI::App& app) {
  message = absl::StrReplaceAll(message, {{"\n", " "}});
  while (!message.empty() && message.back() == ' ') message.pop_back();
  std::string command = "tunectl";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  std::cerr << "tunectl: " << message << " (see '" << command << " --help')\n";
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

}  // namespace

namespace tuned {

int RunTunectl(int argc, char** argv, const std::string& server_override) {
  CLI::App app{"tunectl: client of the tuned autotuning daemon"};
  app.footer("Exit status: 0 done; 1 the daemon refused or failed the request (message on stderr), "
             "or for best, the shape is not tuned; 2 a usage error.");
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  std::string server, family_name = "sgemm", math_name = "ieee_fp32", layout_name = "nn",
              dtype_name = "f32";
  int gpu = 0;
  bool json = false;
  app.add_option("--server", server, "daemon address: unix:/path or host:port (default: $TUNED_SERVER "
                                     "or the local daemon's socket)");
  app.add_option("--gpu", gpu, "which local daemon (by GPU) when --server is not given")
      ->check(AtLeast(0));
  app.add_flag("--json", json, "print JSON instead of tables");
  // TCP: TLS and a token (docs/operating.md, "Operating tuned"); each flag also reads its TUNED_* variable.
  tuned::ClientOptions remote;
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

  std::vector<int64_t> dims;
  std::string spec_hash;
  bool wait = false, tune_if_missing = false;
  int top = 10, limit = 20;
  int64_t id = 0;
  auto add_problem = [&](CLI::App* cmd) {
    cmd->add_option("--family", family_name,
                    "kernel family: sgemm (M N K), transpose (ROWS COLS), or a registered kernel "
                    "spec's name (its dims in order; 'tunectl families' lists them)");
    cmd->add_option("--version", spec_hash,
                    "a kernel spec's version (its hash, as 'tunectl family show NAME' prints it); "
                    "default: the newest");
    cmd->add_option("dims", dims, "shape, e.g. M N K")->required()->check(kInteger);
    cmd->add_option("--math", math_name,
                    "sgemm math mode: ieee_fp32 (default; fp32 kernels, cuBLAS pedantic), "
                    "fp32_accurate (also 3xTF32 tensor cores; error <= 2x cuBLAS fp32's vs fp64) "
                    "or tf32 (TF32 tensor cores; error <= 2x cuBLAS TF32's vs fp64)");
    cmd->add_option("--layout", layout_name,
                    "sgemm operand layout, op(A) then op(B), as cuBLAS's: nn (default; A M x K, "
                    "B K x N, row-major), nt (B stored N x K, as torch's F.linear weight), tn "
                    "(A stored K x M) or tt");
    cmd->add_option("--dtype", dtype_name,
                    "sgemm element type: f32 (default), bf16 or f16 (16-bit A, B and C, fp32 "
                    "accumulation; error <= 2x cuBLAS's vs fp64; math mode ieee_fp32 only), "
                    "bf16_f32 or f16_f32 (16-bit A and B, fp32 C)");
  };
  auto* sweep = app.add_subcommand("sweep", "queue a sweep job for a problem");
  add_problem(sweep);
  sweep->add_flag("--wait", wait, "show progress until the job ends, then print the winner");
  std::string strategy, budget;
  sweep->add_option("--strategy", strategy,
                    "exhaustive (the pruned space, then neighbours of the best) or model (a cost "
                    "model fitted on the other tuned shapes picks the configs); default: the "
                    "daemon's (tuned --strategy, model unless set)");
  sweep->add_option("--budget", budget,
                    "stop at this many GPU seconds of measuring ('10s', '2m') or configs ('64'); "
                    "default: the daemon's (tuned --budget)");
  auto* best = app.add_subcommand(
      "best", "print the tuned kernel of a problem; exit 1 if the shape itself is not tuned (for a "
              "shape near a tuned one, that one's kernel is printed, marked NOT TUNED)");
  add_problem(best);
  best->add_flag("--tune-if-missing", tune_if_missing,
                 "if the shape is untuned, also queue a sweep for it");
  auto* results = app.add_subcommand("results", "print the measurements of a problem");
  add_problem(results);
  results->add_option("--top", top, "show the N best (0: all)")->check(AtLeast(0));
  std::string out_file;
  auto* report = app.add_subcommand(
      "report", "write an SVG picture of a problem's sweep: every verified config's speed with the "
                "winner, the baseline and the served kernel marked, each parameter's effect, and "
                "the failures by class");
  add_problem(report);
  report->add_option("--out", out_file, "SVG file to write")->required();
  auto* jobs = app.add_subcommand("jobs", "list jobs, newest first");
  jobs->add_option("--limit", limit, "at most N jobs")->check(AtLeast(1));
  auto* job = app.add_subcommand("job", "show one job");
  job->add_option("id", id, "job id")->required()->check(kInteger);
  auto* watch = app.add_subcommand("watch", "follow a job until it ends");
  watch->add_option("id", id, "job id")->required()->check(kInteger);
  auto* cancel = app.add_subcommand("cancel", "cancel a queued or running job");
  cancel->add_option("id", id, "job id")->required()->check(kInteger);
  auto* device = app.add_subcommand("device", "describe the daemon's GPU");
  auto* prior = app.add_subcommand(
      "prior", "show the prior the daemon loaded (measurements of another GPU of its "
               "architecture that choose what to compile and measure first) and where it uses it");
  bool all_daemons = false;
  auto* daemons = app.add_subcommand(
      "daemons", "list the daemons sharing the database (the fleet): host, GPU, kind, heartbeat, job");
  daemons->add_flag("--all", all_daemons, "also the stopped and silent ones");
  std::string health_service;
  auto* health = app.add_subcommand(
      "health", "standard gRPC health check: prints SERVING (exit 0) or NOT_SERVING (exit 1)");
  health->add_option("--service", health_service, "service to ask about (default: the daemon)");
  std::string out_dir;
  auto* export_cmd = app.add_subcommand(
      "export", "write the tuned kernel (kernel.cu, .cubin, .ptx, .json) to a directory");
  add_problem(export_cmd);
  export_cmd->add_option("--out", out_dir, "directory to write")->required();
  auto* dump = app.add_subcommand("dump", "export every tuned kernel of the daemon's device, one "
                                          "directory per problem");
  dump->add_option("--out", out_dir, "directory to write")->required();
  // Kernel specs: a user's own kernel as a family (tuner.proto KernelSpec).
  std::string spec_file, show_name;
  auto* family_cmd = app.add_subcommand(
      "family", "register a kernel spec as a family, or show one (see 'tunectl families')");
  family_cmd->require_subcommand(1);
  family_cmd->fallthrough();
  auto* family_add = family_cmd->add_subcommand(
      "add", "register a kernel spec file (.toml or .json; its source_file is read relative to it) "
             "with the daemon (needs tuned --allow-user-kernels)");
  family_add->add_option("spec_file", spec_file, "the spec file")->required();
  auto* family_show = family_cmd->add_subcommand(
      "show", "print a family's spec, each field readable (--json: the spec as protobuf JSON)");
  family_show->add_option("name", show_name, "the family's name")->required();
  family_add->fallthrough();
  family_show->fallthrough();
  family_show->add_option("--version", spec_hash, "the version (hash); default: the newest");
  auto* families = app.add_subcommand(
      "families", "list the families: built-in ones and the newest version of each kernel spec");
  std::string in_dir;
  auto* import_cmd = app.add_subcommand(
      "import", "store kernels written by dump or export (same device kind) in the daemon");
  import_cmd->add_option("dir", in_dir, "a dump directory, or one export directory")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string message = e.what();
    if (message == "A subcommand is required") {
      message = app.remaining().empty() ? "a command is required"
                                        : "unknown command '" + app.remaining().front() + "'";
    }
    return Usage(message, app);
  }
  // The client knows every family's name; a daemon serves fault_test only
  // when started with --enable-fault-test-family (and says so otherwise).
  tuned::EnableFaultTestFamily();

  if (remote.token.empty() && !token_file.empty()) {
    auto t = tuned::ReadTokenFile(token_file);
    if (!t.ok()) return Fail(t.status());
    remote.token = *t;
  }
  tuned::Client client(!server_override.empty() ? server_override
                       : server.empty()           ? tuned::DefaultServerAddress(gpu)
                                                  : server,
                       remote);
  tuned::v1::Problem problem;
  if (!dims.empty()) {
    // A built-in family's name maps to its enum, and its rank is checked
    // here; any other name goes to the daemon, which knows the kernel specs.
    if (const tuned::Family* family = tuned::FindFamily(family_name);
        family != nullptr && dims.size() != family->dims().size()) {
      return Usage(absl::StrCat(std::string(family->name()), " takes ", family->dims().size(),
                                " dimensions (", absl::StrJoin(family->dims(), ", "), "), got ",
                                dims.size()),
                   app);
    }
    if (tuned::IsBuiltinFamily(family_name) && !spec_hash.empty()) {
      return Usage(absl::StrCat("--version names a kernel spec's version; ", family_name,
                                " is a built-in family"),
                   app);
    }
    problem = tuned::FamilyProblem(family_name, dims, spec_hash);
    auto math = tuned::ParseMath(math_name);
    if (!math.ok()) return Usage(std::string(math.status().message()), app);
    problem.set_math(*math);
    auto layout = tuned::ParseLayout(layout_name);
    if (!layout.ok()) return Usage(std::string(layout.status().message()), app);
    problem.set_layout(*layout);
    if (tuned::IsBuiltinFamily(family_name)) {
      auto dtype = tuned::ParseDType(dtype_name);
      if (!dtype.ok()) return Usage(std::string(dtype.status().message()), app);
      problem.set_dtype(*dtype);
    } else if (dtype_name != "f32") {
      return Usage("--dtype is for built-in families; a kernel spec's arguments have their types", app);
    }
  }

  auto print_best = [&]() -> int {
    auto b = client.GetBest(problem, tune_if_missing);
    if (!b.ok()) return FailFor(problem, b.status());
    if (b->match() == tuned::v1::MATCH_NEAREST && !json) {
      std::cout << "NOT TUNED for " << absl::StrJoin(b->problem().shape(), "x")
                << ": nearest tuned shape " << absl::StrJoin(b->tuned_shape(), "x")
                << " (times below are for that shape)"
                << (b->queued_job_id() > 0 ? absl::StrCat("; queued sweep job ", b->queued_job_id())
                                           : std::string())
                << "\n";
    }
    // Scripts ask "is this shape tuned?" by the exit status.
    const int status = b->match() == tuned::v1::MATCH_NEAREST ? 1 : 0;
    if (json) {
      PrintJson(*b);
      return status;
    }
    if (!b->has_measurement()) {  // no kernel passed verification: the baseline is the answer
      PrintTable({
          {"problem", ProblemString(b->problem())},
          {"device", b->device().name()},
          {"kernel", "none: no config passed verification"},
          {"error", b->baseline_error() > 0
                        ? absl::StrFormat("%.2e (%s's, against fp64)", b->baseline_error(),
                                          b->baseline_name())
                        : "-"},
          {"served", b->serving_reason()},
      });
      std::cout << "the client library calls " << b->baseline_name() << " for this shape\n\n";
      PrintTable({
          {"", "time (ms)", MetricUnit(b->problem())},
          {b->baseline_name().empty() ? "baseline" : b->baseline_name(), Ms(b->baseline_ms()),
           Metric(b->baseline_metric())},
      });
      return status;
    }
    const auto& m = b->measurement();
    const auto& g = b->geometry();
    PrintTable({
        {"problem", ProblemString(b->problem())},
        {"device", b->device().name()},
        {"kernel", m.config().name()},
        {"measured on", m.host().empty() ? "- (imported)" : absl::StrCat(m.host(), " gpu ", m.gpu())},
        {"entry", b->entry()},
        {"geometry", absl::StrFormat("grid %s  block %s  dynamic smem %d B", absl::StrJoin(g.grid(), "x"),
                                     absl::StrJoin(g.block(), "x"), g.dynamic_shared_bytes())},
        {"error", absl::StrFormat("%.2e (%s)", m.error(),
                                  ErrorAgainst(b->problem().math(), b->baseline_name(),
                                               b->baseline_error()))},
        {"sm clock", Clock(m)},
        {"speedup", Speedup(*b)},
        {"served", b->serving_reason().empty()
                       ? (b->use_baseline() ? b->baseline_name() : std::string("the kernel"))
                       : b->serving_reason()},
    });
    if (b->use_baseline()) {
      std::cout << "the client library calls " << b->baseline_name()
                << " for this shape, not the kernel above\n";
    }
    std::cout << "\n";
    std::vector<std::vector<std::string>> rows = {
        {"", "time (ms)", m.metric_unit(), "vs " + b->baseline_name()},
        {"tuned", Ms(m.median_ms()), Metric(m.metric()),
         b->baseline_ms() > 0 && m.median_ms() > 0
             ? absl::StrFormat("%.2fx", b->baseline_ms() / m.median_ms())
             : "-"},
        {b->baseline_name().empty() ? "baseline" : b->baseline_name(), Ms(b->baseline_ms()),
         Metric(b->baseline_metric()), "1.00x"},
    };
    PrintTable(rows);
    return status;
  };

  if (*sweep) {
    auto j = client.SubmitSweep(problem, strategy, budget);
    if (!j.ok()) return FailFor(problem, j.status());
    if (!wait) {
      if (json) PrintJson(*j);
      else std::cout << absl::StrFormat("job %d queued: %s, %d configs (%d pruned), %s\n", j->id(),
                                        ProblemString(j->problem()), j->total(), j->pruned(),
                                        SearchString(*j));
      return 0;
    }
    const bool tty = !json && isatty(STDOUT_FILENO);
    auto end = client.WatchJob(j->id(), [&](const Job& u) {
      if (!json) PrintProgress(u, tty);
    });
    if (tty) std::cout << "\n";
    if (!end.ok()) return Fail(end.status());
    if (end->state() != tuned::v1::JOB_DONE) {
      if (json) PrintJson(*end);
      else PrintJob(*end);
      return 1;
    }
    // A kernel, or the baseline where no config passed verification.
    if (end->has_best() || end->baseline_ms() > 0) return print_best();
    if (json) PrintJson(*end);
    else PrintJob(*end);
    return 0;
  }
  if (*best) return print_best();
  if (*report) {
    auto ms = client.ListMeasurements(problem);
    if (!ms.ok()) return FailFor(problem, ms.status());
    tuned::SweepReportData data;
    data.problem = problem;
    data.measurements = *std::move(ms);
    if (!problem.family_name().empty() && problem.family() == tuned::v1::FAMILY_UNSPECIFIED) {
      auto f = client.GetFamily(problem.family_name(), problem.spec_hash());
      if (!f.ok()) return FailFor(problem, f.status());
      data.family = *std::move(f);
    }
    auto b = client.GetBest(problem);
    if (!b.ok() && !absl::IsNotFound(b.status())) return Fail(b.status());
    if (b.ok() && b->match() == tuned::v1::MATCH_EXACT) {
      data.baseline_name = b->baseline_name();
      data.baseline_metric = b->baseline_metric();
      data.use_baseline = b->use_baseline();
      data.device = b->device().name();
    } else {  // not tuned: the baseline of the newest job of the problem that timed one
      auto js = client.ListJobs(500);
      if (!js.ok()) return Fail(js.status());
      for (const Job& j : *js) {
        if (j.problem().SerializeAsString() == problem.SerializeAsString() && j.baseline_metric() > 0) {
          data.baseline_name = j.baseline_name();
          data.baseline_metric = j.baseline_metric();
          break;
        }
      }
      auto d = client.DescribeDevice();
      if (!d.ok()) return Fail(d.status());
      data.device = d->name();
    }
    auto svg = tuned::SweepReportSvg(data);
    if (!svg.ok()) return Fail(svg.status());
    std::ofstream out(out_file, std::ios::binary | std::ios::trunc);
    out << *svg;
    out.close();
    if (!out) return Fail(absl::PermissionDeniedError("cannot write " + out_file));
    const size_t n = data.measurements.size();
    std::cout << "wrote " << out_file << ": " << ProblemString(problem) << ", " << n
              << (n == 1 ? " measurement\n" : " measurements\n");
    return 0;
  }
  if (*dump) {
    auto problems = client.ListTuned();
    if (!problems.ok()) return Fail(problems.status());
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) return Fail(absl::InternalError("cannot create " + out_dir + ": " + ec.message()));
    for (const auto& p : *problems) {
      auto b = client.GetBest(p);
      if (!b.ok()) return Fail(b.status());
      const std::string dir = out_dir + "/" + ProblemString(p);
      std::string name = dir;
      std::replace(name.begin() + static_cast<long>(out_dir.size()) + 1, name.end(), ' ', '_');
      if (auto s = tuned::SaveKernel(*b, name); !s.ok()) return Fail(s);
      std::cout << "wrote " << name << "\n";
    }
    std::cout << problems->size() << " tuned kernels dumped\n";
    return 0;
  }
  if (*import_cmd) {
    std::vector<std::string> dirs;
    if (std::filesystem::exists(in_dir + "/kernel.json")) {
      dirs.push_back(in_dir);
    } else {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(in_dir, ec)) {
        if (std::filesystem::exists(e.path() / "kernel.json")) dirs.push_back(e.path().string());
      }
      if (ec) return Fail(absl::NotFoundError(in_dir + ": " + ec.message()));
      std::sort(dirs.begin(), dirs.end());
    }
    if (dirs.empty()) return Fail(absl::NotFoundError("no kernel.json under " + in_dir));
    for (const auto& d : dirs) {
      auto k = tuned::LoadKernelDescription(d);
      if (!k.ok()) return Fail(k.status());
      auto j = client.ImportKernel(*k);
      if (!j.ok()) return Fail(j.status());
      std::cout << "imported " << ProblemString(j->problem()) << " ("
                << k->measurement().config().name() << ") as job " << j->id() << "\n";
    }
    return 0;
  }
  if (*export_cmd) {
    auto b = client.GetBest(problem);
    if (!b.ok()) return FailFor(problem, b.status());
    if (!b->has_measurement()) {
      return Fail(absl::FailedPreconditionError(
          absl::StrCat("no kernel to export for ", ProblemString(problem), ": ", b->serving_reason())));
    }
    if (auto s = tuned::SaveKernel(*b, out_dir); !s.ok()) return Fail(s);
    std::cout << "wrote " << out_dir << "/kernel.{cu,cubin,ptx,json}: " << b->measurement().config().name()
              << (b->match() == tuned::v1::MATCH_NEAREST
                      ? " (NOT TUNED for this shape: nearest tuned " + absl::StrJoin(b->tuned_shape(), "x") + ")"
                      : "")
              << "\n";
    return 0;
  }
  if (*results) {
    auto ms = client.ListMeasurements(problem, top);
    if (!ms.ok()) return FailFor(problem, ms.status());
    if (json) {
      tuned::v1::ListMeasurementsResponse r;
      for (auto& m : *ms) *r.add_measurements() = m;
      PrintJson(r);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {
        {"#", "config", "status", "ms", "metric",
         problem.math() == tuned::v1::MATH_IEEE_FP32 ? "error" : "error vs fp64", "regs",
         "sm clock"}};
    int rank = 0;
    for (const auto& m : *ms) {
      rows.push_back({absl::StrCat(++rank), m.config().name(), StatusName(m.status()), Ms(m.median_ms()),
                      m.metric() > 0 ? Metric(m.metric()) + " " + m.metric_unit() : "-",
                      absl::StrFormat("%.1e", m.error()), absl::StrCat(m.registers()), Clock(m)});
    }
    PrintTable(rows);
    return 0;
  }
  if (*jobs) {
    auto js = client.ListJobs(limit);
    if (!js.ok()) return Fail(js.status());
    if (json) {
      tuned::v1::ListJobsResponse r;
      for (auto& j : *js) *r.add_jobs() = j;
      PrintJson(r);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {
        {"id", "problem", "state", "strategy", "done", "failed", "total", "best ms", "client",
         "measured by"}};
    for (const auto& j : *js) {
      rows.push_back({absl::StrCat(j.id()), ProblemString(j.problem()), StateName(j.state()),
                      SearchString(j), absl::StrCat(j.done()), absl::StrCat(j.failed()), absl::StrCat(j.total()),
                      j.has_best() ? Ms(j.best().median_ms()) : "-", j.client().empty() ? "-" : j.client(),
                      MeasuredBy(j)});
    }
    PrintTable(rows);
    return 0;
  }
  if (*job || *cancel) {
    auto j = *job ? client.GetJob(id) : client.CancelJob(id);
    if (!j.ok()) return Fail(j.status());
    if (json) PrintJson(*j);
    else PrintJob(*j);
    return 0;
  }
  if (*watch) {
    const bool tty = !json && isatty(STDOUT_FILENO);
    auto end = client.WatchJob(id, [&](const Job& u) {
      if (json) PrintJson(u);
      else PrintProgress(u, tty);
    });
    if (tty) std::cout << "\n";
    if (!end.ok()) return Fail(end.status());
    return end->state() == tuned::v1::JOB_DONE ? 0 : 1;
  }
  if (*daemons) {
    auto ds = client.ListDaemons(all_daemons);
    if (!ds.ok()) return Fail(ds.status());
    if (json) {
      tuned::v1::ListDaemonsResponse r;
      for (auto& d : *ds) *r.add_daemons() = d;
      PrintJson(r);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {
        {"host", "gpu", "kind", "heartbeat", "job", "claimed", "state"}};
    for (const auto& d : *ds) {
      rows.push_back({d.host(), absl::StrCat(d.gpu()),
                      absl::StrFormat("%s sm_%d%d %d SMs", d.kind().name(), d.kind().cc_major(),
                                      d.kind().cc_minor(), d.kind().sm_count()),
                      absl::StrFormat("%.1f s ago", d.heartbeat_age_seconds()),
                      d.job_id() > 0 ? absl::StrCat(d.job_id()) : "-", absl::StrCat(d.claimed()),
                      d.live() ? "live" : "gone"});
    }
    PrintTable(rows);
    return 0;
  }
  if (*family_add) {
    auto spec = tuned::spec::LoadSpecFile(spec_file);
    if (!spec.ok()) return Fail(spec.status());
    auto info = client.RegisterFamily(*spec);
    if (!info.ok()) return Fail(info.status());
    if (json) {
      info->clear_spec();
      PrintJson(*info);
      return 0;
    }
    std::cout << absl::StrFormat("%s version %s: %d configs, %s\n", info->name(),
                                 ShortHash(info->spec_hash()), info->space_size(),
                                 info->created() ? "registered" : "already registered");
    return 0;
  }
  if (*family_show) {
    auto info = client.GetFamily(show_name, spec_hash);
    if (!info.ok()) return Fail(info.status());
    if (json) {
      if (info->builtin()) {
        PrintJson(*info);
      } else {
        PrintJson(info->spec());
      }
      return 0;
    }
    PrintFamily(*info);
    return 0;
  }
  if (*families) {
    auto fs = client.ListFamilies();
    if (!fs.ok()) return Fail(fs.status());
    if (json) {
      tuned::v1::ListFamiliesResponse r;
      for (auto& f : *fs) {
        *r.add_families() = f;
        r.mutable_families()->rbegin()->clear_spec();
      }
      PrintJson(r);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {
        {"name", "kind", "version", "dims", "params", "space", "metric"}};
    for (const auto& f : *fs) {
      rows.push_back({f.name(), f.builtin() ? "built-in" : "spec",
                      f.builtin() || f.spec_hash().empty() ? "-" : ShortHash(f.spec_hash()),
                      f.dims().empty() ? "-" : absl::StrJoin(f.dims(), ","),
                      absl::StrCat(f.params_size()), absl::StrCat(f.space_size()),
                      f.metric_unit().empty() ? "time" : f.metric_unit()});
    }
    PrintTable(rows);
    return 0;
  }
  if (*health) {
    auto serving = client.Serving(health_service);
    if (!serving.ok()) return Fail(serving.status());
    std::cout << (*serving ? "SERVING" : "NOT_SERVING") << "\n";
    return *serving ? 0 : 1;
  }
  if (*prior) {
    auto p = client.DescribePrior();
    if (!p.ok()) return Fail(p.status());
    if (json) {
      PrintJson(*p);
      return 0;
    }
    if (!p->loaded()) {
      std::cout << "no prior: off (tuned --no-prior, or --compile-only without --prior)\n";
      return 0;
    }
    const auto& d = p->device();
    PrintTable({{"prior", p->origin()},
                {"format", absl::StrCat("version ", p->version())},
                {"measured on", absl::StrFormat("%s (sm_%d%d, %d SMs, driver %d, NVRTC %s)", d.name(),
                                                d.cc_major(), d.cc_minor(), d.sm_count(),
                                                d.driver_version(), d.nvrtc_version())},
                {"source", p->source().empty() ? "-" : p->source()},
                {"this GPU", p->match()}});
    std::vector<std::vector<std::string>> rows = {
        {"family", "dtype", "math", "shapes", "measurements", "tuned here", "in use"}};
    for (const auto& pr : p->problems()) {
      rows.push_back({pr.family(), absl::AsciiStrToLower(tuned::v1::DType_Name(pr.dtype()).substr(6)),
                      tuned::MathName(pr.math()), absl::StrCat(pr.shapes()),
                      absl::StrCat(pr.measurements()),
                      absl::StrCat(pr.own_shapes(), " of ", p->own_shapes_enough()),
                      pr.in_use() ? "yes" : "no"});
    }
    std::cout << "\n";
    PrintTable(rows);
    return 0;
  }
  if (*device) {
    auto d = client.DescribeDevice();
    if (!d.ok()) return Fail(d.status());
    if (json) {
      PrintJson(*d);
      return 0;
    }
    PrintTable({{"name", d->name()},
                {"compute capability", absl::StrCat(d->cc_major(), ".", d->cc_minor())},
                {"SMs", absl::StrCat(d->sm_count())},
                {"memory", absl::StrCat(d->total_memory_bytes() >> 20, " MiB")},
                {"driver", absl::StrCat(d->driver_version())},
                {"NVRTC", d->nvrtc_version()},
                {"mode", d->compile_only() ? "compile-only (no GPU)" : "measure"},
                {"compiled ahead", d->compile_ahead_total() > 0
                                       ? absl::StrFormat("%d of %d kernels", d->compiled_ahead(),
                                                         d->compile_ahead_total())
                                       : "-"}});
    return 0;
  }
  return 0;
}

}  // namespace tuned
