#include "client/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "families/family.h"

namespace tuned {

std::string StatusName(v1::MeasurementStatus status) {
  return absl::AsciiStrToLower(absl::StripPrefix(EnumName(status), "MEASUREMENT_"));
}

namespace {

// Colours: Tableau 10, distinct in print and for the common colour blindness.
constexpr char kBlue[] = "#4c78a8";    // verified configs
constexpr char kOrange[] = "#f58518";  // the winner
constexpr char kRed[] = "#e45756";     // the baseline; failures
constexpr char kGreen[] = "#54a24b";   // ok
constexpr char kGrey[] = "#9d9d9d";    // compiled (not run), no data

constexpr double kWidth = 1000;
constexpr double kLeft = 70;  // room for the y axis labels

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A minimal SVG writer: elements as text, coordinates in px, `attrs` raw
// attributes (class, fill, ...), text escaped.
class Svg {
 public:
  void Rect(double x, double y, double w, double h, const std::string& attrs) {
    absl::StrAppendFormat(&body_, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" %s/>\n", x, y,
                          w, h, attrs);
  }
  void Line(double x1, double y1, double x2, double y2, const std::string& attrs) {
    absl::StrAppendFormat(&body_, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", x1, y1, x2,
                          y2, attrs);
  }
  void Circle(double x, double y, double r, const std::string& attrs) {
    absl::StrAppendFormat(&body_, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" %s/>\n", x, y, r, attrs);
  }
  void Text(double x, double y, const std::string& text, const std::string& attrs = "") {
    absl::StrAppendFormat(&body_, "<text x=\"%.1f\" y=\"%.1f\" %s>%s</text>\n", x, y, attrs, Escape(text));
  }
  void Open(const std::string& group_attrs) { absl::StrAppend(&body_, "<g ", group_attrs, ">\n"); }
  void Close() { body_ += "</g>\n"; }

  std::string Document(double height, const std::string& title) const {
    return absl::StrCat(
        absl::StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                        "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                        "sans-serif\">\n",
                        kWidth, height, kWidth, height),
        "<title>", Escape(title), "</title>\n",
        "<style>text{font-size:12px;fill:#222}.h1{font-size:20px;font-weight:bold}"
        ".h2{font-size:14px;font-weight:bold}.sub{font-size:13px}.small{font-size:10px;fill:#555}"
        ".bold{font-weight:bold}.end{text-anchor:end}.mid{text-anchor:middle}"
        ".halo{paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}"
        ".grid{stroke:#e6e6e6}.axis{stroke:#444}</style>\n",
        absl::StrFormat("<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", kWidth, height), body_,
        "</svg>\n");
  }

 private:
  std::string body_;
};

// 27012 -> "27012", 512.4 -> "512", 12.34 -> "12.3", 1.234 -> "1.23".
// (Each format a literal: clang checks absl::StrFormat's formats at compile time.)
std::string Num(double v) {
  return v >= 100 ? absl::StrFormat("%.0f", v) : v >= 10 ? absl::StrFormat("%.1f", v) : absl::StrFormat("%.2f", v);
}

// "1 config", "2 configs".
std::string Count(size_t n, const std::string& noun) { return absl::StrCat(n, " ", noun, n == 1 ? "" : "s"); }

// A step of 1, 2 or 5 times a power of ten giving about `ticks` ticks up to `max`.
double NiceStep(double max, int ticks) {
  const double raw = max / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// A vertical value scale from 0 at `bottom` to `top` px.
struct Scale {
  double max, step, top, bottom;
  double Y(double v) const { return bottom - (bottom - top) * v / max; }
};

// Horizontal grid lines at the scale's ticks from x0 to x1, labelled at x0 (in
// `label_class`) if `labels`.
void Grid(Svg& svg, const Scale& s, double x0, double x1, bool labels, const std::string& label_class) {
  for (double t = 0; t <= s.max + s.step / 2; t += s.step) {
    svg.Line(x0, s.Y(t), x1, s.Y(t), "class=\"grid\"");
    if (labels) {
      svg.Text(x0 - 5, s.Y(t) + 4, s.step >= 1 ? absl::StrFormat("%.0f", t) : absl::StrFormat("%g", t),
               absl::StrCat("class=\"", label_class, "\""));
    }
  }
}

// The row that stands for each config: its fastest OK row, else its latest.
std::vector<const v1::Measurement*> OnePerConfig(const std::vector<v1::Measurement>& all) {
  std::map<std::string, const v1::Measurement*> by_name;
  for (const auto& m : all) {
    auto [it, fresh] = by_name.emplace(m.config().name(), &m);
    const v1::Measurement& old = *it->second;
    const bool ok = m.status() == v1::MEASUREMENT_OK, old_ok = old.status() == v1::MEASUREMENT_OK;
    if (!fresh && (ok != old_ok ? ok
                   : ok         ? m.metric() > old.metric()
                                : m.created_unix() > old.created_unix())) {
      it->second = &m;
    }
  }
  std::vector<const v1::Measurement*> out;
  for (const auto& [name, m] : by_name) out.push_back(m);
  return out;
}

// The config's value of `p`, or nullopt if it has none.
std::optional<int64_t> ValueOf(const v1::Measurement& m, const Param& p) {
  const auto& params = m.config().params();
  if (auto it = params.find(p.name); it != params.end()) return it->second;
  return p.if_absent;
}

constexpr double kTopA = 120, kBottomA = 390, kRightA = 700;  // panel (a)

// What the panels share: the sweep, one row per config, and the value scale.
struct Sweep {
  const SweepReportData& data;
  std::vector<Param> params;
  std::string problem{}, unit{}, baseline{};      // "sgemm f32 1024x1024x1024", "GFLOPS", "cuBLAS"
  std::vector<const v1::Measurement*> ok{};       // the verified configs, fastest first
  std::map<v1::MeasurementStatus, int> counts{};  // configs by status
  Scale scale{1, 1, kTopA, kBottomA};             // of panel (a); (b) shares max and step
  const v1::Measurement* winner() const { return ok.empty() ? nullptr : ok.front(); }
  bool has_baseline() const { return data.baseline_metric > 0; }
};

// The problem, the winner against the baseline, what is served.
void DrawTitle(Svg& svg, const Sweep& w) {
  svg.Text(kLeft, 32, absl::StrCat(w.problem, w.data.device.empty() ? "" : " on " + w.data.device),
           "class=\"h1\"");
  const v1::Measurement* winner = w.winner();
  if (winner == nullptr) {
    svg.Text(kLeft, 56, "no verified config: none was timed (a compile-only daemon) or every one failed",
             "class=\"sub\"");
    return;
  }
  std::string line = absl::StrCat("winner: ", winner->config().name(), " \u00b7 ",
                                  absl::StrFormat("%.4f", winner->median_ms()), " ms \u00b7 ",
                                  Num(winner->metric()), " ", w.unit);
  if (w.has_baseline()) {
    absl::StrAppend(&line, absl::StrFormat(" \u00b7 %.2fx ", winner->metric() / w.data.baseline_metric),
                    w.baseline, " (", Num(w.data.baseline_metric), " ", w.unit, ")");
  }
  svg.Text(kLeft, 56, line, "class=\"sub\"");
  svg.Text(kLeft, 76,
           w.data.use_baseline
               ? absl::StrCat("served: ", w.baseline,
                              ": faster than every generated kernel, so clients call it instead")
               : absl::StrCat("served: ", winner->config().name(), " (the winner)"),
           "class=\"sub bold\"");
}

// (a) A bar per verified config, fastest first; the baseline as a line;
// "winner" and "served" over what they name.
void DrawRanked(Svg& svg, const Sweep& w) {
  svg.Text(kLeft, kTopA - 18, absl::StrCat(w.unit, " of each verified config, fastest first"),
           "class=\"h2\"");
  Grid(svg, w.scale, kLeft, kRightA, true, "end");
  svg.Line(kLeft, kBottomA, kRightA, kBottomA, "class=\"axis\"");
  const size_t n = w.ok.size();
  const double bar = std::min(24.0, (kRightA - kLeft) / static_cast<double>(std::max<size_t>(n, 1)));
  for (size_t i = 0; i < n; ++i) {
    const double y = w.scale.Y(w.ok[i]->metric());
    // Thin bars touch, with crisp edges: no moire of anti-aliased gaps.
    svg.Rect(kLeft + i * bar, y, bar > 4 ? bar - 1 : bar, kBottomA - y,
             absl::StrCat("fill=\"", i == 0 ? kOrange : kBlue, "\" shape-rendering=\"crispEdges\""));
  }
  if (n == 0) {
    svg.Text((kLeft + kRightA) / 2, (kTopA + kBottomA) / 2, "no verified configs", "class=\"mid halo\"");
  } else {
    svg.Text(kLeft, kBottomA + 16, "1", "class=\"small\"");
    if (n > 1) svg.Text(kLeft + bar * n, kBottomA + 16, absl::StrCat(n), "class=\"small end\"");
    svg.Text((kLeft + kRightA) / 2, kBottomA + 16, Count(n, "verified config") + ", ranked",
             "class=\"small mid\"");
  }
  constexpr double kServedGap = 16;  // "served" stands over the label of what is served
  if (const v1::Measurement* winner = w.winner()) {
    const double y = w.scale.Y(winner->metric());
    svg.Circle(kLeft + bar / 2, y, 4, absl::StrCat("fill=\"", kOrange, "\""));
    svg.Text(kLeft + 2, y - 9, absl::StrCat("winner ", Num(winner->metric()), " ", w.unit),
             absl::StrCat("id=\"winner\" class=\"bold halo\" fill=\"", kOrange, "\""));
    if (!w.data.use_baseline) {
      svg.Text(kLeft + 2, y - 9 - kServedGap, "served", "id=\"served\" class=\"bold halo\"");
    }
  }
  if (w.has_baseline()) {
    const double y = w.scale.Y(w.data.baseline_metric);
    svg.Line(
        kLeft, y, kRightA, y,
        absl::StrCat("id=\"baseline\" stroke=\"", kRed, "\" stroke-width=\"2\" stroke-dasharray=\"7 4\""));
    svg.Text(kRightA - 2, y - 7, absl::StrCat(w.baseline, " ", Num(w.data.baseline_metric), " ", w.unit),
             absl::StrCat("id=\"baseline-label\" class=\"end bold halo\" fill=\"", kRed, "\""));
    if (w.data.use_baseline) {
      svg.Text(kRightA - 2, y - 7 - kServedGap, "served", "id=\"served\" class=\"end bold halo\"");
    }
  }
}

// (c) The configs by status: ok, compiled, then the failures by class, most first.
void DrawOutcomes(Svg& svg, const Sweep& w) {
  constexpr double kLeftC = 750;
  int total = 0, failed = 0, most = 1;
  std::vector<std::tuple<int, int, v1::MeasurementStatus>> rows;  // (group, -count, status)
  for (const auto& [status, n] : w.counts) {
    const int group = status == v1::MEASUREMENT_OK ? 0 : status == v1::MEASUREMENT_COMPILED ? 1 : 2;
    rows.emplace_back(group, -n, status);
    total += n;
    if (group == 2) failed += n;
    most = std::max(most, n);
  }
  std::sort(rows.begin(), rows.end());
  svg.Text(kLeftC, kTopA - 18, absl::StrCat(Count(total, "config"), ", ", failed, " failed"), "class=\"h2\"");
  double y = kTopA + 14;
  for (const auto& [group, minus_n, status] : rows) {
    const std::string name = StatusName(status);
    const char* colour = group == 0 ? kGreen : group == 1 ? kGrey : kRed;
    svg.Text(kLeftC, y, name);
    svg.Rect(kLeftC + 120, y - 11, std::max(3.0, 80.0 * -minus_n / most), 14,
             absl::StrCat("fill=\"", colour, "\""));
    svg.Text(kWidth - 20, y, absl::StrCat(-minus_n),
             absl::StrCat("id=\"count-", name, "\" class=\"end bold\""));
    y += 24;
  }
  if (failed == 0) svg.Text(kLeftC, y + 4, "no failures", "class=\"small\"");
}

// (b) A panel per parameter from `top` down: its values across, a dot per
// verified config at its value, the median, the winner. Returns the bottom.
double DrawParams(Svg& svg, const Sweep& w, double top) {
  svg.Text(kLeft, top, absl::StrCat("Effect of each parameter on ", w.unit), "class=\"h2\"");
  svg.Text(kLeft, top + 18,
           "a dot per verified config at its value of the parameter; black bar: the median; "
           "orange: the winner",
           "class=\"small\"");
  constexpr int kCols = 5;
  constexpr double kPanelW = (kWidth - kLeft - 10) / kCols, kPanelH = 150;
  const auto& params = w.params;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    const double gx = kLeft + static_cast<double>(i % kCols) * kPanelW;
    const double gy = top + 30 + static_cast<double>(i / kCols) * kPanelH;
    const double x0 = gx + 4, x1 = gx + kPanelW - 14;
    const Scale s{w.scale.max, w.scale.step, gy + 22, gy + kPanelH - 28};
    svg.Open(absl::StrCat("class=\"param\" id=\"param-", Escape(p.name), "\""));
    svg.Text(x0, gy + 12, p.name, "class=\"bold\"");
    Grid(svg, s, x0, x1, i % kCols == 0, "end small");
    svg.Line(x0, s.bottom, x1, s.bottom, "class=\"axis\"");
    // The listed values, and any other value a stored config has.
    std::set<int64_t> values(p.values.begin(), p.values.end());
    std::map<int64_t, std::vector<double>> at;
    for (const v1::Measurement* m : w.ok) {
      if (auto v = ValueOf(*m, p)) {
        at[*v].push_back(m->metric());
        values.insert(*v);
      }
    }
    const double cell = (x1 - x0) / static_cast<double>(values.size());
    int j = 0, dot = 0;
    for (int64_t v : values) {
      const double cx = x0 + (j++ + 0.5) * cell;
      std::vector<double>& ys = at[v];
      svg.Text(cx, s.bottom + 13, absl::StrCat(v),
               absl::StrCat("class=\"small mid\"", ys.empty() ? " fill-opacity=\"0.5\"" : ""));
      for (double metric : ys) {  // spread across the cell by the golden ratio
        const double jitter = std::fmod(++dot * 0.618034, 1.0) - 0.5;
        svg.Circle(cx + jitter * cell * 0.6, s.Y(metric), 1.8,
                   absl::StrCat("fill=\"", kBlue, "\" fill-opacity=\"0.4\""));
      }
      if (!ys.empty()) {
        std::sort(ys.begin(), ys.end());
        const double median = ys[ys.size() / 2];
        svg.Line(cx - cell * 0.35, s.Y(median), cx + cell * 0.35, s.Y(median),
                 "stroke=\"#222\" stroke-width=\"2\"");
      }
      if (ValueOf(*w.winner(), p) == v) {
        svg.Circle(cx, s.Y(w.winner()->metric()), 3.5,
                   absl::StrCat("fill=\"", kOrange, "\" stroke=\"#fff\""));
      }
    }
    svg.Close();
  }
  return top + 30 + std::ceil(static_cast<double>(params.size()) / kCols) * kPanelH + 10;
}

}  // namespace

absl::StatusOr<std::string> SweepReportSvg(const SweepReportData& input) {
  const bool is_spec =
      input.problem.family() == v1::FAMILY_UNSPECIFIED && !input.problem.family_name().empty();
  SweepReportData spec_data;  // a spec without work: its metric is launches per ms
  const SweepReportData* in = &input;
  std::vector<Param> params;
  std::string problem, unit;
  if (is_spec) {
    if (input.family.name() != input.problem.family_name()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the report of a kernel spec's problem needs its family (GetFamily ",
          input.problem.family_name(), ")"));
    }
    for (const v1::SpecParam& p : input.family.params()) {
      params.push_back({p.name(), {p.values().begin(), p.values().end()}, p.doc()});
    }
    problem = absl::StrCat(input.problem.family_name(), " ", absl::StrJoin(input.problem.shape(), "x"));
    unit = input.family.metric_unit();
    if (unit.empty()) {
      spec_data = input;
      spec_data.baseline_metric = 0;  // only its time is known, not kept here
      for (v1::Measurement& m : spec_data.measurements) {
        m.set_metric(m.median_ms() > 0 ? 1.0 / m.median_ms() : 0);
      }
      in = &spec_data;
      unit = "launches/ms";
    }
  } else {
    const Family* family = FindFamily(input.problem);
    if (family == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown kernel family ", EnumName(input.problem.family())));
    }
    params = family->params();
    problem = absl::StrCat(std::string(family->name()), " ", DTypeText(family->dtype()), " ",
                           absl::StrJoin(input.problem.shape(), "x"));
    unit = family->metric_unit();
  }
  const SweepReportData& data = *in;
  Sweep w{data, std::move(params)};
  w.problem = problem;
  if (data.measurements.empty()) {
    return absl::NotFoundError(absl::StrCat("no measurements of ", w.problem, " to report"));
  }
  w.unit = unit;
  w.baseline = data.baseline_name.empty() ? "baseline" : data.baseline_name;
  for (const v1::Measurement* m : OnePerConfig(data.measurements)) {
    ++w.counts[m->status()];
    if (m->status() == v1::MEASUREMENT_OK) w.ok.push_back(m);
  }
  std::sort(w.ok.begin(), w.ok.end(), [](const v1::Measurement* a, const v1::Measurement* b) {
    return a->metric() != b->metric() ? a->metric() > b->metric() : a->config().name() < b->config().name();
  });
  // From 0 to a round number 15% over the fastest (room for the labels).
  const double max =
      std::max(w.has_baseline() ? data.baseline_metric : 0, w.ok.empty() ? 0 : w.ok.front()->metric());
  if (max > 0) {
    w.scale.step = NiceStep(max * 1.15, 5);
    w.scale.max = std::ceil(max * 1.15 / w.scale.step) * w.scale.step;
  }

  Svg svg;
  DrawTitle(svg, w);
  DrawRanked(svg, w);
  DrawOutcomes(svg, w);
  const double height = w.ok.empty() ? kBottomA + 40 : DrawParams(svg, w, kBottomA + 62);
  return svg.Document(height, "Sweep report: " + w.problem);
}

}  // namespace tuned
