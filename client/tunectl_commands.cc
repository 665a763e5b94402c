// tunectl's commands (client/tunectl_commands.h), one function each.
#include "client/tunectl_commands.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/report.h"
#include "core/text.h"
#include "client/tunectl_print.h"
#include "families/spec/spec.h"
#include "nlohmann/json.hpp"

namespace tuned::tunectl {
namespace {

using v1::Job;

// Fail, for a request about a problem: where the daemon knows no family of
// the name sent (its "unknown kernel family", or no kernel spec of that name:
// NOT_FOUND naming no measurement or job), says which name was sent and
// where the known ones are listed.
int FailFor(const v1::Problem& p, const absl::Status& s) {
  const std::string& name = p.family_name();
  const bool unknown = absl::StrContains(s.message(), "unknown kernel family") ||
                       (absl::IsNotFound(s) && absl::StrContains(s.message(), "kernel spec"));
  if (name.empty() || p.family() != v1::FAMILY_UNSPECIFIED || !unknown ||
      absl::StrContains(s.message(), Quote(name))) {
    return Fail(s);
  }
  return Fail(absl::Status(s.code(), absl::StrCat(s.message(), " (family ", Quote(name),
                                                  ": 'tunectl families' lists the known ones)")));
}

}  // namespace

int Fail(const absl::Status& s) {
  std::cerr << "tunectl: " << BoundMessage(s.message()) << "\n";
  return 1;
}

int Best(Context& ctx, const v1::Problem& problem, bool tune_if_missing) {
  auto b = ctx.client.GetBest(problem, tune_if_missing);
  if (!b.ok()) return FailFor(problem, b.status());
  if (b->match() == v1::MATCH_NEAREST && !ctx.json) {
    std::cout << "NOT TUNED for " << absl::StrJoin(b->problem().shape(), "x")
              << ": nearest tuned shape " << absl::StrJoin(b->tuned_shape(), "x")
              << " (times below are for that shape)"
              << (b->queued_job_id() > 0 ? absl::StrCat("; queued sweep job ", b->queued_job_id())
                                         : std::string())
              << "\n";
  }
  // Scripts ask "is this shape tuned?" by the exit status.
  const int status = b->match() == v1::MATCH_NEAREST ? 1 : 0;
  if (ctx.json) {
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
}

int Sweep(Context& ctx, const v1::Problem& problem, bool wait, const std::string& strategy,
          const std::string& budget) {
  auto j = ctx.client.SubmitSweep(problem, strategy, budget);
  if (!j.ok()) return FailFor(problem, j.status());
  if (!wait) {
    if (ctx.json) PrintJson(*j);
    else std::cout << absl::StrFormat("job %d queued: %s, %d configs (%d pruned), %s\n", j->id(),
                                      ProblemString(j->problem()), j->total(), j->pruned(),
                                      SearchString(*j));
    return 0;
  }
  const bool tty = !ctx.json && isatty(STDOUT_FILENO);
  auto end = ctx.client.WatchJob(j->id(), [&](const Job& u) {
    if (!ctx.json) PrintProgress(u, tty);
  });
  if (tty) std::cout << "\n";
  if (!end.ok()) return Fail(end.status());
  // A kernel, or the baseline where no config passed verification; the job
  // where it did not end or has neither.
  int status = 0;
  const bool served = end->state() == v1::JOB_DONE && (end->has_best() || end->baseline_ms() > 0);
  if (served) {
    status = Best(ctx, problem, false);
  } else {
    if (ctx.json) PrintJson(*end);
    else PrintJob(*end);
    status = end->state() == v1::JOB_DONE ? 0 : 1;
  }
  if (end->failed() == 0) return status;
  // The job's failed configs, each with the line that says why.
  if (!ctx.json) {
    auto ms = ctx.client.ListMeasurements(end->problem());
    if (!ms.ok()) return Fail(ms.status());
    std::cout << absl::StrFormat("\n%d of %d configs failed%s:\n", end->failed(),
                                 end->done() + end->failed(),
                                 end->done() == 0 ? ", none succeeded" : "");
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : *ms) {
      if (m.job_id() == end->id() && !WhyFailed(m).empty()) {
        rows.push_back({"  " + m.config().name(), StatusName(m.status()), WhyFailed(m)});
      }
    }
    PrintTable(rows);
  }
  // None succeeded and nothing is served (a kernel spec whose every config
  // failed): exit 1. Where the baseline is served, `best` said so above.
  return end->done() == 0 && !served ? 1 : status;
}

int Results(Context& ctx, const v1::Problem& problem, int top) {
  // Every measurement (the daemon sorts failures last), then the `top` best
  // that passed and every failure: --top never hides why configs failed.
  auto ms = ctx.client.ListMeasurements(problem, 0);
  if (!ms.ok()) return FailFor(problem, ms.status());
  size_t passed_shown = 0, hidden = 0;
  std::vector<v1::Measurement> shown;
  for (auto& m : *ms) {
    const bool passed = m.status() == v1::MEASUREMENT_OK || m.status() == v1::MEASUREMENT_COMPILED;
    if (passed && top > 0 && passed_shown == static_cast<size_t>(top)) {
      ++hidden;
      continue;
    }
    passed_shown += passed ? 1 : 0;
    shown.push_back(std::move(m));
  }
  *ms = std::move(shown);
  if (ctx.json) {
    v1::ListMeasurementsResponse r;
    for (auto& m : *ms) *r.add_measurements() = m;
    PrintJson(r);
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"#", "config", "status", "ms", "metric",
       problem.math() == v1::MATH_IEEE_FP32 ? "error" : "error vs fp64", "regs",
       "sm clock", "why"}};
  int rank = 0;
  for (const auto& m : *ms) {
    rows.push_back({absl::StrCat(++rank), m.config().name(), StatusName(m.status()), Ms(m.median_ms()),
                    m.metric() > 0 ? Metric(m.metric()) + " " + m.metric_unit() : "-",
                    Verified(m) ? absl::StrFormat("%.1e", m.error()) : "not verified",
                    absl::StrCat(m.registers()), Clock(m), WhyFailed(m)});
  }
  PrintTable(rows);
  if (hidden > 0) std::cout << hidden << " more that passed (--top 0 shows all)\n";
  return 0;
}

int Report(Context& ctx, const v1::Problem& problem, const std::string& out_file) {
  auto ms = ctx.client.ListMeasurements(problem);
  if (!ms.ok()) return FailFor(problem, ms.status());
  SweepReportData data;
  data.problem = problem;
  data.measurements = *std::move(ms);
  if (!problem.family_name().empty() && problem.family() == v1::FAMILY_UNSPECIFIED) {
    auto f = ctx.client.GetFamily(problem.family_name(), problem.spec_hash());
    if (!f.ok()) return FailFor(problem, f.status());
    data.family = *std::move(f);
  }
  auto b = ctx.client.GetBest(problem);
  if (!b.ok() && !absl::IsNotFound(b.status())) return Fail(b.status());
  if (b.ok() && b->match() == v1::MATCH_EXACT) {
    data.baseline_name = b->baseline_name();
    data.baseline_metric = b->baseline_metric();
    data.use_baseline = b->use_baseline();
    data.device = b->device().name();
  } else {  // not tuned: the baseline of the newest job of the problem that timed one
    auto js = ctx.client.ListJobs(500);
    if (!js.ok()) return Fail(js.status());
    for (const Job& j : *js) {
      if (j.problem().SerializeAsString() == problem.SerializeAsString() && j.baseline_metric() > 0) {
        data.baseline_name = j.baseline_name();
        data.baseline_metric = j.baseline_metric();
        break;
      }
    }
    auto d = ctx.client.DescribeDevice();
    if (!d.ok()) return Fail(d.status());
    data.device = d->name();
  }
  auto svg = SweepReportSvg(data);
  if (!svg.ok()) return Fail(svg.status());
  std::ofstream out(out_file, std::ios::binary | std::ios::trunc);
  out << *svg;
  out.close();
  if (!out) return Fail(absl::PermissionDeniedError("cannot write " + out_file));
  const size_t n = data.measurements.size();
  if (ctx.json) {
    std::cout << nlohmann::json{{"wrote", out_file}, {"problem", ProblemString(problem)}, {"measurements", n}}.dump(2)
              << "\n";
    return 0;
  }
  std::cout << "wrote " << out_file << ": " << ProblemString(problem) << ", " << n
            << (n == 1 ? " measurement\n" : " measurements\n");
  return 0;
}

int Export(Context& ctx, const v1::Problem& problem, const std::string& out_dir) {
  auto b = ctx.client.GetBest(problem);
  if (!b.ok()) return FailFor(problem, b.status());
  if (!b->has_measurement()) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("no kernel to export for ", ProblemString(problem), ": ", b->serving_reason())));
  }
  if (auto s = SaveKernel(*b, out_dir); !s.ok()) return Fail(s);
  if (ctx.json) {
    std::cout << nlohmann::json{{"wrote", out_dir},
                                {"files", {"kernel.cu", "kernel.cubin", "kernel.ptx", "kernel.json"}},
                                {"config", b->measurement().config().name()},
                                {"match", v1::Match_Name(b->match())}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "wrote " << out_dir << "/kernel.{cu,cubin,ptx,json}: " << b->measurement().config().name()
            << (b->match() == v1::MATCH_NEAREST
                    ? " (NOT TUNED for this shape: nearest tuned " + absl::StrJoin(b->tuned_shape(), "x") + ")"
                    : "")
            << "\n";
  return 0;
}

int Dump(Context& ctx, const std::string& out_dir) {
  auto problems = ctx.client.ListTuned();
  if (!problems.ok()) return Fail(problems.status());
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Fail(absl::InternalError("cannot create " + out_dir + ": " + ec.message()));
  nlohmann::json wrote = nlohmann::json::array();
  for (const auto& p : *problems) {
    auto b = ctx.client.GetBest(p);
    if (!b.ok()) return Fail(b.status());
    const std::string dir = out_dir + "/" + ProblemString(p);
    std::string name = dir;
    std::replace(name.begin() + static_cast<long>(out_dir.size()) + 1, name.end(), ' ', '_');
    if (auto s = SaveKernel(*b, name); !s.ok()) return Fail(s);
    if (ctx.json) wrote.push_back(name);
    else std::cout << "wrote " << name << "\n";
  }
  if (ctx.json) std::cout << nlohmann::json{{"wrote", wrote}}.dump(2) << "\n";
  else std::cout << problems->size() << " tuned kernels dumped\n";
  return 0;
}

int Import(Context& ctx, const std::string& in_dir) {
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
  nlohmann::json imported = nlohmann::json::array();
  for (const auto& d : dirs) {
    auto k = LoadKernelDescription(d);
    if (!k.ok()) return Fail(k.status());
    auto j = ctx.client.ImportKernel(*k);
    if (!j.ok()) return Fail(j.status());
    if (ctx.json) {
      imported.push_back({{"problem", ProblemString(j->problem())},
                          {"config", k->measurement().config().name()}, {"job", j->id()}});
    } else {
      std::cout << "imported " << ProblemString(j->problem()) << " ("
                << k->measurement().config().name() << ") as job " << j->id() << "\n";
    }
  }
  if (ctx.json) std::cout << nlohmann::json{{"imported", imported}}.dump(2) << "\n";
  return 0;
}

int Jobs(Context& ctx, int limit) {
  auto js = ctx.client.ListJobs(limit);
  if (!js.ok()) return Fail(js.status());
  if (ctx.json) {
    v1::ListJobsResponse r;
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

int ShowJob(Context& ctx, int64_t id, bool cancel) {
  auto j = cancel ? ctx.client.CancelJob(id) : ctx.client.GetJob(id);
  if (!j.ok()) return Fail(j.status());
  if (ctx.json) PrintJson(*j);
  else PrintJob(*j);
  return 0;
}

int Watch(Context& ctx, int64_t id) {
  const bool tty = !ctx.json && isatty(STDOUT_FILENO);
  auto end = ctx.client.WatchJob(id, [&](const Job& u) {
    if (ctx.json) {
      PrintJson(u);
      std::cout << std::flush;
    } else {
      PrintProgress(u, tty);
    }
  });
  if (tty) std::cout << "\n";
  if (!end.ok()) return Fail(end.status());
  return end->state() == v1::JOB_DONE ? 0 : 1;
}

int Daemons(Context& ctx, bool all) {
  auto ds = ctx.client.ListDaemons(all);
  if (!ds.ok()) return Fail(ds.status());
  if (ctx.json) {
    v1::ListDaemonsResponse r;
    for (auto& d : *ds) *r.add_daemons() = d;
    PrintJson(r);
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"host", "gpu", "kind", "heartbeat", "job", "claimed", "state", "user kernels", "sandbox"}};
  for (const auto& d : *ds) {
    rows.push_back({d.host(), absl::StrCat(d.gpu()),
                    absl::StrFormat("%s sm_%d%d %d SMs", d.kind().name(), d.kind().cc_major(),
                                    d.kind().cc_minor(), d.kind().sm_count()),
                    absl::StrFormat("%.1f s ago", d.heartbeat_age_seconds()),
                    d.job_id() > 0 ? absl::StrCat(d.job_id()) : "-", absl::StrCat(d.claimed()),
                    d.live() ? "live" : "gone", d.user_kernels() ? "yes" : "no",
                    d.sandbox().empty() ? "-" : d.sandbox()});
  }
  PrintTable(rows);
  return 0;
}

int FamilyAdd(Context& ctx, const std::string& spec_file) {
  auto spec = spec::LoadSpecFile(spec_file);
  if (!spec.ok()) return Fail(spec.status());
  auto info = ctx.client.RegisterFamily(*spec);
  if (!info.ok()) return Fail(info.status());
  if (ctx.json) {
    info->clear_spec();
    PrintJson(*info);
    return 0;
  }
  // A version stored before keeps its place (docs/kernel-specs.md,
  // "Versions"): say where the newest is when it is another.
  std::string newer;
  if (!info->created()) {
    auto newest = ctx.client.GetFamily(info->name(), "");
    if (newest.ok() && newest->spec_hash() != info->spec_hash()) {
      newer = absl::StrFormat("; the newest is version %s (--version %s names this one)",
                              ShortHash(newest->spec_hash()), ShortHash(info->spec_hash()));
    }
  }
  std::cout << absl::StrFormat("%s version %s: %d configs, %s%s\n", info->name(),
                               ShortHash(info->spec_hash()), info->space_size(),
                               info->created() ? "registered" : "already registered", newer);
  return 0;
}

int FamilyShow(Context& ctx, const std::string& name, const std::string& version) {
  auto info = ctx.client.GetFamily(name, version);
  if (!info.ok()) return Fail(info.status());
  if (ctx.json) {
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

int Families(Context& ctx) {
  auto fs = ctx.client.ListFamilies();
  if (!fs.ok()) return Fail(fs.status());
  if (ctx.json) {
    v1::ListFamiliesResponse r;
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

int Health(Context& ctx, const std::string& service) {
  auto serving = ctx.client.Serving(service);
  if (!serving.ok()) return Fail(serving.status());
  const char* state = *serving ? "SERVING" : "NOT_SERVING";
  if (ctx.json) std::cout << "{\"status\": \"" << state << "\"}\n";
  else std::cout << state << "\n";
  return *serving ? 0 : 1;
}

int Prior(Context& ctx) {
  auto p = ctx.client.DescribePrior();
  if (!p.ok()) return Fail(p.status());
  if (ctx.json) {
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
    rows.push_back({pr.family(), absl::AsciiStrToLower(v1::DType_Name(pr.dtype()).substr(6)),
                    MathName(pr.math()), absl::StrCat(pr.shapes()),
                    absl::StrCat(pr.measurements()),
                    absl::StrCat(pr.own_shapes(), " of ", p->own_shapes_enough()),
                    pr.in_use() ? "yes" : "no"});
  }
  std::cout << "\n";
  PrintTable(rows);
  return 0;
}

int Device(Context& ctx) {
  auto d = ctx.client.DescribeDevice();
  if (!d.ok()) return Fail(d.status());
  if (ctx.json) {
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

}  // namespace tuned::tunectl
