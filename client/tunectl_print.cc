// tunectl's output (client/tunectl_print.h).
#include "client/tunectl_print.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/report.h"
#include "google/protobuf/util/json_util.h"
#include "families/family.h"
#include "core/serving.h"
#include "tuned/client.h"

namespace tuned::tunectl {

using tuned::v1::Job;

// Prints rows as columns padded to the widest cell.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += i + 1 < r.size() ? absl::StrFormat("%-*s  ", width[i], r[i]) : r[i];
    }
    absl::StripTrailingAsciiWhitespace(&line);  // an empty last cell pads nothing
    std::cout << line << "\n";
  }
}

void PrintJson(const google::protobuf::Message& msg) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, opts);
  std::cout << out;
}

// "queued", "done", ...; the number for a state this build does not know.
std::string StateName(tuned::v1::JobState s) {
  return absl::AsciiStrToLower(absl::StripPrefix(tuned::EnumName(s), "JOB_"));
}

using tuned::StatusName;

// A kernel spec's version as tunectl shows it: the first 12 hex digits of its hash.
std::string ShortHash(const std::string& hash) { return hash.substr(0, 12); }

// "sgemm f32 1024x1024x1024", with the math mode, the layout and the epilogue
// after it where they are not the defaults: "sgemm f32 1024x1024x1024 tf32 nt",
// "sgemm bf16 16x4096x4096 nt +bias_gelu_tanh"; a kernel spec's problem with
// its version: "matmul_tiled@3f2a9c1d04e7 1024x1024x1024".
std::string ProblemString(const tuned::v1::Problem& p) {
  if (!p.family_name().empty() && p.family() == tuned::v1::FAMILY_UNSPECIFIED) {
    return absl::StrCat(p.family_name(), p.spec_hash().empty() ? "" : "@" + ShortHash(p.spec_hash()),
                        " ", absl::StrJoin(p.shape(), "x"));
  }
  return absl::StrCat(tuned::ProblemFamilyName(p), " ", tuned::DTypeText(p.dtype()), " ",
                      absl::StrJoin(p.shape(), "x"),
                      p.math() == tuned::v1::MATH_IEEE_FP32 ? "" : " " + tuned::MathName(p.math()),
                      p.layout() == tuned::v1::LAYOUT_NN ? "" : " " + tuned::LayoutName(p.layout()),
                      p.epilogue() == tuned::v1::EPILOGUE_NONE
                          ? ""
                          : " +" + tuned::EpilogueName(p.epilogue()));
}

// What a kernel's error is measured against: "vs cuBLAS" (ieee_fp32), or
// "vs fp64; cuBLAS TF32 2.90e-04" (the baseline's own error against it).
std::string ErrorAgainst(tuned::v1::Math math, const std::string& baseline, double baseline_error) {
  if (math == tuned::v1::MATH_IEEE_FP32) return "vs " + baseline;
  return absl::StrFormat("vs fp64; %s %.2e", baseline, baseline_error);
}

std::string Ms(double ms) { return ms > 0 ? absl::StrFormat("%.4f", ms) : "-"; }

// "1980 MHz", "1155 MHz LOW" (under 90% of the maximum, twice), "-" unknown.
std::string Clock(const tuned::v1::Measurement& m) {
  if (m.sm_clock_mhz() <= 0) return "-";
  return absl::StrCat(m.sm_clock_mhz(), " MHz", m.clock_low() ? " LOW" : "");
}

// The judged speedup over the baseline: "1.07x (95% CI 1.05–1.09, 30 pairs)".
std::string Speedup(const tuned::v1::BestKernel& b) {
  if (b.speedup_pairs() <= 0) return "- (not judged)";
  return tuned::FormatSpeedup({b.speedup(), b.speedup_ci_low(), b.speedup_ci_high(), b.speedup_pairs()});
}
std::string Metric(double v) { return v > 0 ? absl::StrFormat("%.1f", v) : "-"; }
// "GFLOPS" or "GB/s": the unit of the problem's built-in family ("metric"
// for a kernel spec's, whose unit its spec names).
std::string MetricUnit(const tuned::v1::Problem& p) {
  const tuned::Family* f = tuned::FindFamily(p.family());
  return f != nullptr ? std::string(f->metric_unit()) : "metric";
}

// "node-a gpu 0: 310, node-b gpu 1: 290": the daemons that measured the job.
std::string MeasuredBy(const Job& j) {
  if (j.daemons().empty()) return "-";
  return absl::StrJoin(j.daemons(), ", ", [](std::string* out, const tuned::v1::JobDaemon& d) {
    absl::StrAppend(out, d.host(), " gpu ", d.gpu(), ": ", d.measured());
  });
}

// "model, budget 10s" / "exhaustive".
std::string SearchString(const Job& j) {
  std::string s = j.strategy().empty() ? "exhaustive" : j.strategy();
  std::vector<std::string> budget;
  if (j.budget_seconds() > 0) budget.push_back(absl::StrFormat("%gs", j.budget_seconds()));
  if (j.budget_configs() > 0) budget.push_back(absl::StrCat(j.budget_configs(), " configs"));
  if (!budget.empty()) absl::StrAppend(&s, ", budget ", absl::StrJoin(budget, ", "));
  return s;
}

bool Verified(const tuned::v1::Measurement& m) {
  return m.status() == tuned::v1::MEASUREMENT_OK || m.status() == tuned::v1::MEASUREMENT_WRONG_ANSWER;
}

std::string WhyFailed(const tuned::v1::Measurement& m) {
  if (m.status() == tuned::v1::MEASUREMENT_OK || m.status() == tuned::v1::MEASUREMENT_COMPILED) return "";
  std::string first;
  for (absl::string_view line : absl::StrSplit(m.message(), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (first.empty()) first = std::string(line);
    if (absl::StrContains(line, "error:")) {
      first = std::string(line);
      break;
    }
  }
  constexpr size_t kMax = 200;
  if (first.size() > kMax) first = first.substr(0, kMax - 3) + "...";
  return first;
}

void PrintJob(const Job& j) {
  const std::string unit = j.best().metric_unit().empty() ? "" : " " + j.best().metric_unit();
  PrintTable({
      {"job", absl::StrCat(j.id())},
      {"problem", ProblemString(j.problem())},
      {"state", StateName(j.state()) + (j.error().empty() ? "" : ": " + j.error())},
      {"client", j.client().empty() ? "-" : j.client()},
      {"strategy", SearchString(j)},
      {"configs", absl::StrFormat("%d: %d done, %d failed, %d left (%d pruned)", j.total(), j.done(),
                                  j.failed(), std::max(0, j.total() - j.done() - j.failed()),
                                  j.pruned())},
      {"best", j.has_best() ? absl::StrFormat("%s  %s ms  %s%s", j.best().config().name(),
                                              Ms(j.best().median_ms()), Metric(j.best().metric()), unit)
                            : "-"},
      {"baseline", j.baseline_ms() > 0 ? absl::StrFormat("%s  %s ms  %s%s", j.baseline_name(),
                                                         Ms(j.baseline_ms()),
                                                         Metric(j.baseline_metric()), unit)
                                       : "-"},
      {"error bound", j.error_bound() > 0
                          ? absl::StrFormat("%.2e (2x %s's %.2e vs fp64)", j.error_bound(),
                                            j.baseline_name(), j.baseline_error())
                          : "-"},
      {"time", absl::StrFormat("compile %.1f s (%d cached), measure %.1f s, wait %.1f s; "
                               "%d worker restarts",
                               j.compile_seconds(), j.cached(), j.measure_seconds(),
                               j.wait_seconds(), j.worker_restarts())},
      {"measured by", MeasuredBy(j)},
  });
}

// Estimated seconds left: wall time so far per finished config, times those left.
static std::string Eta(const Job& j) {
  const int finished = j.done() + j.failed();
  const int left = std::max(0, j.total() - finished);
  if (j.state() != tuned::v1::JOB_RUNNING || finished == 0 || j.started_unix() <= 0) return "ETA -";
  const double elapsed = static_cast<double>(absl::ToUnixSeconds(absl::Now()) - j.started_unix());
  const int eta = static_cast<int>(elapsed / finished * left + 0.5);
  return absl::StrFormat("ETA %dm%02ds", eta / 60, eta % 60);
}

// One progress line; on a terminal it redraws in place.
void PrintProgress(const Job& j, bool tty) {
  const int finished = j.done() + j.failed();
  const int pct = j.total() > 0 ? 100 * finished / j.total() : 0;
  std::string best = j.has_best() ? absl::StrFormat("best %s ms (%s %s)", Ms(j.best().median_ms()),
                                                    Metric(j.best().metric()), j.best().metric_unit())
                                  : "best -";
  if (tty) {
    constexpr int kBar = 30;
    const int fill = kBar * pct / 100;
    std::cout << absl::StrFormat("\r[%s%s] %3d%% %d done %d failed %d left  %s  %s  %s   ",
                                 std::string(fill, '#'), std::string(kBar - fill, '.'), pct,
                                 j.done(), j.failed(), std::max(0, j.total() - finished), best,
                                 Eta(j), StateName(j.state()))
              << std::flush;
  } else {  // plain lines: one per 10% of progress and one per state change
    static int last_decile = -1;
    static tuned::v1::JobState last_state = tuned::v1::JOB_STATE_UNSPECIFIED;
    if (pct / 10 == last_decile && j.state() == last_state) return;
    last_decile = pct / 10;
    last_state = j.state();
    std::cout << absl::StrFormat("job %d %s: %d/%d done, %d failed, %d left, %s, %s\n", j.id(),
                                 StateName(j.state()), j.done(), j.total(), j.failed(),
                                 std::max(0, j.total() - finished), best, Eta(j))
              << std::flush;  // a pipe or a file sees each line as it comes (clig.dev)
  }
}

// "2025-01-31 14:05 UTC", or "-" for 0.
static std::string Date(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::FromUnixSeconds(unix_seconds),
                          absl::UTCTimeZone());
}

static std::string TypeName(tuned::v1::SpecType t) {
  return absl::AsciiStrToLower(absl::StripPrefix(tuned::EnumName(t), "SPEC_TYPE_"));
}

// "(TILE, TILE)": a launch's block or grid expressions.
static std::string Dims3(const google::protobuf::RepeatedPtrField<std::string>& e) {
  return "(" + absl::StrJoin(e, ", ") + ")";
}

// "block (TILE, TILE)  grid (n / TILE, m / TILE)  shared 0 B".
static std::string LaunchString(const tuned::v1::SpecLaunchExpr& l) {
  return absl::StrCat("block ", Dims3(l.block()), "  grid ", Dims3(l.grid()), "  shared ",
                      l.shared_memory_bytes().empty() ? "0" : l.shared_memory_bytes(), " B");
}

// "TILE=16 PAD=0", by name.
static std::string ConfigString(const google::protobuf::Map<std::string, int64_t>& config) {
  std::map<std::string, int64_t> sorted(config.begin(), config.end());
  return sorted.empty() ? "-" : absl::StrJoin(sorted, " ", absl::PairFormatter("="));
}

// The spec of `f` as rows of a table: each field readable, one line per
// parameter, restriction and argument.
void PrintFamily(const tuned::v1::FamilyInfo& f) {
  std::vector<std::vector<std::string>> rows;
  auto add = [&](std::string key, std::string value) { rows.push_back({std::move(key), std::move(value)}); };
  // Several lines under one key: the key on the first.
  auto add_lines = [&](const std::string& key, const std::vector<std::string>& lines) {
    if (lines.empty()) add(key, "-");
    for (size_t i = 0; i < lines.size(); ++i) add(i == 0 ? key : "", lines[i]);
  };
  const tuned::v1::KernelSpec& s = f.spec();
  add("name", f.name());
  add("kind", f.builtin() ? "built-in" : "kernel spec");
  if (!f.builtin()) {
    add("version", f.spec_hash().empty() ? "-" : f.spec_hash());
    add("registered", absl::StrCat(Date(f.created_unix()), f.client().empty() ? "" : " by " + f.client(),
                                   "; ", f.versions(), f.versions() == 1 ? " version" : " versions"));
  }
  if (!s.description().empty()) add("description", s.description());
  if (!s.kernel().empty()) add("kernel", s.kernel());
  add("dims", f.dims().empty() ? "-" : absl::StrJoin(f.dims(), ", "));
  std::vector<std::string> lines;
  for (const auto& p : f.params()) {
    lines.push_back(absl::StrCat(p.name(), ": ", absl::StrJoin(p.values(), ", "),
                                 p.pass() == tuned::v1::SPEC_PASS_TEMPLATE ? " (template)" : "",
                                 p.doc().empty() ? "" : "  # " + p.doc()));
  }
  add_lines("params", lines);
  add("space", absl::StrCat(f.space_size(), " configs"));
  add("metric", f.metric_unit().empty() ? "time only" : f.metric_unit());
  if (!f.baseline_name().empty()) add("baseline", f.baseline_name());
  if (f.builtin()) {
    PrintTable(rows);
    return;
  }
  add_lines("restrictions", std::vector<std::string>(s.restrictions().begin(), s.restrictions().end()));
  lines.clear();
  for (const auto& a : s.arguments()) {
    if (a.has_buffer()) {
      const auto& b = a.buffer();
      std::string fill = absl::AsciiStrToLower(absl::StripPrefix(tuned::EnumName(b.fill()), "SPEC_FILL_"));
      if (b.fill() == tuned::v1::SPEC_FILL_CONSTANT) fill = absl::StrCat("constant ", b.fill_value());
      if (b.fill_parameters_size() > 0) absl::StrAppend(&fill, " [", absl::StrJoin(b.fill_parameters(), ", "), "]");
      lines.push_back(absl::StrCat(
          a.name(), ": ", TypeName(b.type()), "[", b.size(), "] ",
          absl::AsciiStrToLower(absl::StripPrefix(tuned::EnumName(b.role()), "SPEC_ROLE_")),
          b.fill() == tuned::v1::SPEC_FILL_UNSPECIFIED ? "" : ", fill " + fill,
          b.reset() == tuned::v1::SPEC_RESET_EVERY_RUN ? ", reset every run" : ""));
    } else {
      lines.push_back(absl::StrCat(a.name(), ": ", TypeName(a.scalar().type()), " = ", a.scalar().value()));
    }
  }
  add_lines("arguments", lines);
  add("launch", LaunchString(s.launch()));
  const auto& v = s.verification();
  add("verification",
      absl::StrCat(v.reference_kernel().empty()
                       ? "reference config " + ConfigString(v.reference_config())
                       : "reference kernel " + v.reference_kernel() + ", " +
                             LaunchString(v.reference_launch()),
                   absl::StrFormat(", rtol %g, atol %g", v.rtol(), v.atol())));
  add("work", s.has_work() ? s.work().expression() + " " + s.work().unit() : "-");
  add("default config", ConfigString(s.default_config()));
  lines.clear();
  for (const auto& d : s.sample_dims()) {
    std::vector<std::string> values;
    for (const std::string& name : s.dims()) {
      const auto it = d.dims().find(name);
      values.push_back(absl::StrCat(name, "=", it == d.dims().end() ? "?" : absl::StrCat(it->second)));
    }
    lines.push_back(absl::StrJoin(values, " "));
  }
  add_lines("sample dims", lines);
  const int64_t source_lines = std::count(s.source().begin(), s.source().end(), '\n');
  add("source", absl::StrCat(s.source().size(), " bytes, ", source_lines,
                             " lines (--json prints it)"));
  PrintTable(rows);
}

}  // namespace tuned::tunectl
