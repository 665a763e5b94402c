// `tunectl workload sweep|report FILE`: a recorded workload (client/workload.h)
// queued for the fleet, and what its tuned kernels save.
#include <algorithm>
#include <iostream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/tunectl_commands.h"
#include "client/tunectl_print.h"
#include "client/workload.h"
#include "nlohmann/json.hpp"

namespace tuned::tunectl {
namespace {

using Json = nlohmann::json;

std::string Percent(double part, double total) {
  return total > 0 ? absl::StrFormat("%.1f%%", 100 * part / total) : "-";
}

/// "M=77,90,130" for the Ms a bucket serves; "-" for a problem's own shape.
std::string Serves(const Workload& w, const WorkloadSweep& s) {
  if (!s.bucket) return "-";
  std::vector<int64_t> ms;
  for (size_t i : s.serves) ms.push_back(w.problems[i].problem.shape(0));
  std::sort(ms.begin(), ms.end());
  return absl::StrCat("M=", absl::StrJoin(ms, ","));
}

}  // namespace

int SweepWorkload(Context& ctx, const std::string& file, bool wait) {
  auto w = LoadWorkload(file);
  if (!w.ok()) return Fail(w.status());
  const std::vector<WorkloadSweep> plan = PlanSweeps(*w);
  std::vector<std::vector<std::string>> rows = {{"share", "problem", "serves", "job"}};
  Json out = Json::array();
  std::vector<int64_t> jobs;
  int failed = 0;
  for (const WorkloadSweep& s : plan) {
    auto job = ctx.client.SubmitSweep(s.problem);
    const std::string share = Percent(s.gpu_ms, w->total_ms);
    if (!job.ok()) {
      ++failed;
      std::cerr << "tunectl: " << ProblemString(s.problem) << ": " << job.status().message() << "\n";
    } else {
      jobs.push_back(job->id());
    }
    rows.push_back({share, ProblemString(s.problem), Serves(*w, s),
                    job.ok() ? absl::StrCat(job->id()) : "refused"});
    out.push_back({{"problem", ProblemString(s.problem)},
                   {"share", w->total_ms > 0 ? s.gpu_ms / w->total_ms : 0},
                   {"serves", Serves(*w, s)},
                   {"job", job.ok() ? job->id() : 0}});
  }
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    PrintTable(rows);
    std::cout << absl::StrFormat("%d sweeps queued for %d recorded problems, largest share first\n",
                                 jobs.size(), w->problems.size());
  }
  if (!wait) return failed > 0 ? 1 : 0;
  int not_done = 0;
  for (int64_t id : jobs) {
    auto end = ctx.client.WatchJob(id, [](const v1::Job&) {});
    if (!end.ok() || end->state() != v1::JOB_DONE) ++not_done;
  }
  if (!ctx.json) std::cout << absl::StrFormat("%d of %d sweeps done\n", jobs.size() - not_done, jobs.size());
  return failed > 0 || not_done > 0 ? 1 : 0;
}

int ReportWorkload(Context& ctx, const std::string& file) {
  auto w = LoadWorkload(file);
  if (!w.ok()) return Fail(w.status());
  std::vector<size_t> order(w->problems.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return w->problems[a].gpu_ms > w->problems[b].gpu_ms; });
  std::vector<std::vector<std::string>> rows = {
      {"problem", "calls", "recorded ms", "share", "served", "speedup", "after ms", "saves ms"}};
  Json out = Json::array();
  double after_total = 0;
  for (size_t i : order) {
    const WorkloadProblem& p = w->problems[i];
    // What the recorded calls would take with the served kernel: their time
    // divided by its speedup over cuBLAS, measured at the shape that serves
    // this one (its own, or the nearest tuned). Only a GEMM's recorded calls
    // ran what the baseline is (torch calls cuBLAS); another family's
    // baseline (transpose's copy kernel) is a floor, not what ran: no estimate.
    std::string served;
    double speedup = 1;
    auto best = ctx.client.GetBest(p.problem);
    if (!best.ok()) {
      served = absl::IsNotFound(best.status()) ? "not tuned" : std::string(best.status().message());
    } else if (best->use_baseline()) {
      served = best->baseline_name().empty() ? "the baseline" : best->baseline_name();
    } else if (p.problem.family() != v1::FAMILY_SGEMM) {
      served = "kernel (no estimate: its baseline is not what ran)";
    } else {
      if (best->speedup() > 0) {
        speedup = best->speedup();
      } else if (best->baseline_ms() > 0 && best->measurement().median_ms() > 0) {
        speedup = best->baseline_ms() / best->measurement().median_ms();
      }
      served = best->match() == v1::MATCH_NEAREST
                   ? absl::StrCat("kernel of ", absl::StrJoin(best->tuned_shape(), "x"))
                   : "kernel";
    }
    const double after = p.gpu_ms / speedup;
    after_total += after;
    rows.push_back({ProblemString(p.problem), absl::StrCat(p.calls), absl::StrFormat("%.3f", p.gpu_ms),
                    Percent(p.gpu_ms, w->total_ms), served, absl::StrFormat("%.2fx", speedup),
                    absl::StrFormat("%.3f", after), absl::StrFormat("%.3f", p.gpu_ms - after)});
    out.push_back({{"problem", ProblemString(p.problem)}, {"calls", p.calls}, {"recorded_ms", p.gpu_ms},
                   {"served", served}, {"speedup", speedup}, {"after_ms", after},
                   {"saves_ms", p.gpu_ms - after}});
  }
  if (ctx.json) {
    std::cout << Json{{"problems", out}, {"recorded_ms", w->total_ms}, {"after_ms", after_total},
                      {"saves_ms", w->total_ms - after_total}}
                     .dump(2)
              << "\n";
    return 0;
  }
  PrintTable(rows);
  std::cout << absl::StrFormat(
      "workload: %.3f ms recorded, %.3f ms with the served kernels: saves %.3f ms (%s)\n",
      w->total_ms, after_total, w->total_ms - after_total, Percent(w->total_ms - after_total, w->total_ms));
  return 0;
}

}  // namespace tuned::tunectl
