// The sweep report (client/report.h) from synthetic measurements: its marks,
// and that rsvg-convert renders it (skipped where librsvg2-bin is missing).
#include "client/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "families/family.h"

namespace tuned {
namespace {

// The text of the element with id `id`, or "" if there is none.
std::string TextOf(const std::string& svg, const std::string& id) {
  const size_t at = svg.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t start = svg.find('>', at) + 1;
  return svg.substr(start, svg.find('<', start) - start);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// An H100-like sweep of 1024^3: every valid sgemm config of sm_90, its GFLOPS
// a made-up function of its parameters (the warp-tiled kind fastest), below
// 30000 except the winner's 31234; cuBLAS at 28000. Failures: 3 compile
// errors, 2 wrong answers, 1 run timeout. The winner was measured twice (the
// last row).
SweepReportData Sweep() {
  SweepReportData d;
  d.problem = v1::Problem();
  d.problem.set_family(v1::FAMILY_SGEMM);
  d.problem.set_dtype(v1::DTYPE_F32);
  for (int64_t n : {1024, 1024, 1024}) d.problem.add_shape(n);
  d.baseline_name = "cuBLAS";
  d.baseline_metric = 28000;
  d.device = "NVIDIA H100 80GB HBM3";
  const Family& f = GemmFamily();
  const double work = f.Work({1024, 1024, 1024});
  int i = 0;
  for (const Config& c : f.ValidSpace(Sm90ReferenceDevice(), nullptr)) {
    v1::Measurement m;
    m.mutable_config()->set_name(f.ConfigName(c));
    for (const auto& [k, v] : c) (*m.mutable_config()->mutable_params())[k] = v;
    m.set_job_id(1);
    m.set_metric_unit("GFLOPS");
    const double kind = c.at("KIND") == 3 ? 20000 : c.at("KIND") == 2 ? 9000 : 1500;
    const double tile = 1 + 0.08 * std::log2(static_cast<double>(c.at("BM") * c.at("BN")) / 4096);
    const double noise =
        0.75 + 0.5 * static_cast<double>(std::hash<std::string>()(m.config().name()) % 1000) / 1000;
    const double gflops = std::min(29900.0, kind * tile * noise);
    m.set_status(v1::MEASUREMENT_OK);
    ++i;
    if (i <= 3)
      m.set_status(v1::MEASUREMENT_COMPILE_ERROR);
    else if (i <= 5)
      m.set_status(v1::MEASUREMENT_WRONG_ANSWER);
    else if (i == 6)
      m.set_status(v1::MEASUREMENT_RUN_TIMEOUT);
    if (m.status() == v1::MEASUREMENT_OK) {
      m.set_median_ms(work / (gflops * 1e6));
      m.set_metric(gflops);
    }
    d.measurements.push_back(m);
  }
  auto fastest_warp = std::max_element(
      d.measurements.begin(), d.measurements.end(), [](const v1::Measurement& a, const v1::Measurement& b) {
        return a.config().params().at("KIND") != 3 ||
               (b.config().params().at("KIND") == 3 && a.metric() < b.metric());
      });
  v1::Measurement& win = *fastest_warp;
  win.set_metric(31234);
  win.set_median_ms(work / (31234 * 1e6));
  v1::Measurement again = win;  // a second job measured it slower: the first counts
  again.set_job_id(2);
  again.set_metric(25000);
  d.measurements.push_back(again);
  return d;
}

TEST(SweepReport, MarksTheWinnerTheBaselineAndTheServedKernel) {
  const SweepReportData d = Sweep();
  auto svg = SweepReportSvg(d);
  ASSERT_TRUE(svg.ok()) << svg.status();
  const std::string winner = d.measurements.back().config().name();  // its second row
  EXPECT_EQ(TextOf(*svg, "winner"), "winner 31234 GFLOPS");
  EXPECT_NE(svg->find("id=\"baseline\" stroke="), std::string::npos);  // the horizontal line
  EXPECT_EQ(TextOf(*svg, "baseline-label"), "cuBLAS 28000 GFLOPS");
  EXPECT_EQ(TextOf(*svg, "served"), "served");
  EXPECT_EQ(Count(*svg, "id=\"served\""), 1);
  EXPECT_NE(svg->find("served: " + winner + " (the winner)"), std::string::npos);
  EXPECT_NE(svg->find("1.12x cuBLAS (28000 GFLOPS)"), std::string::npos);
  EXPECT_NE(svg->find("sgemm f32 1024x1024x1024 on NVIDIA H100 80GB HBM3"), std::string::npos);
}

TEST(SweepReport, HasOnePanelPerParameter) {
  auto svg = SweepReportSvg(Sweep());
  ASSERT_TRUE(svg.ok()) << svg.status();
  const auto& params = GemmFamily().params();
  EXPECT_EQ(Count(*svg, "class=\"param\""), static_cast<int>(params.size()));
  for (const Param& p : params) {
    EXPECT_EQ(Count(*svg, "id=\"param-" + p.name + "\""), 1) << p.name;
  }
}

TEST(SweepReport, CountsTheConfigsByStatus) {
  const SweepReportData d = Sweep();
  auto svg = SweepReportSvg(d);
  ASSERT_TRUE(svg.ok()) << svg.status();
  const int configs = static_cast<int>(d.measurements.size()) - 1;  // the winner twice
  EXPECT_EQ(TextOf(*svg, "count-compile_error"), "3");
  EXPECT_EQ(TextOf(*svg, "count-wrong_answer"), "2");
  EXPECT_EQ(TextOf(*svg, "count-run_timeout"), "1");
  EXPECT_EQ(TextOf(*svg, "count-ok"), std::to_string(configs - 6));
  EXPECT_NE(svg->find(std::to_string(configs) + " configs, 6 failed"), std::string::npos);
  // One bar per verified config.
  EXPECT_EQ(Count(*svg, "<rect"), 1 + (configs - 6) + 4);  // background + bars + status bars
}

TEST(SweepReport, ServedBaselineIsMarkedOnItsLine) {
  SweepReportData d = Sweep();
  d.baseline_metric = 32000;
  d.use_baseline = true;
  auto svg = SweepReportSvg(d);
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_EQ(Count(*svg, "id=\"served\""), 1);
  EXPECT_NE(svg->find("id=\"served\" class=\"end"), std::string::npos);  // at the line's label
  EXPECT_NE(svg->find("served: cuBLAS: faster than every generated kernel"), std::string::npos);
  EXPECT_NE(svg->find("0.98x cuBLAS"), std::string::npos);
}

TEST(SweepReport, CompileOnlySweepsAndBadInput) {
  SweepReportData d = Sweep();
  for (auto& m : d.measurements) m.set_status(v1::MEASUREMENT_COMPILED);
  d.baseline_metric = 0;
  auto svg = SweepReportSvg(d);
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_NE(svg->find("no verified configs"), std::string::npos);
  EXPECT_EQ(TextOf(*svg, "winner"), "");
  EXPECT_EQ(svg->find("id=\"baseline\""), std::string::npos);
  EXPECT_EQ(TextOf(*svg, "count-compiled"), std::to_string(d.measurements.size() - 1));
  EXPECT_NE(svg->find("no failures"), std::string::npos);

  d.measurements.clear();
  EXPECT_EQ(SweepReportSvg(d).status().code(), absl::StatusCode::kNotFound);
  d.problem.set_family(static_cast<v1::Family>(77));
  auto bad = SweepReportSvg(d);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown kernel family 77");
  EXPECT_EQ(StatusName(v1::MEASUREMENT_COMPILE_TIMEOUT), "compile_timeout");
  EXPECT_EQ(StatusName(static_cast<v1::MeasurementStatus>(42)), "42");
}

// rsvg-convert (librsvg2-bin) renders each report to a PNG: the SVG is valid.
// TUNED_REPORT_TEST_OUT=DIR keeps the SVGs and PNGs there to look at.
TEST(SweepReport, RendersWithRsvgConvert) {
  if (std::system("command -v rsvg-convert > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "rsvg-convert not installed (Debian: librsvg2-bin; scripts/deps.sh)";
  }
  const char* keep = std::getenv("TUNED_REPORT_TEST_OUT");
  const std::filesystem::path dir =
      keep != nullptr ? std::filesystem::path(keep)
                      : std::filesystem::temp_directory_path() / ("report_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  SweepReportData served_baseline = Sweep();
  served_baseline.baseline_metric = 32000;
  served_baseline.use_baseline = true;
  SweepReportData compile_only = Sweep();
  for (auto& m : compile_only.measurements) m.set_status(v1::MEASUREMENT_COMPILED);
  const std::vector<std::pair<std::string, SweepReportData>> cases = {
      {"sweep", Sweep()}, {"served_baseline", served_baseline}, {"compile_only", compile_only}};
  for (const auto& [name, data] : cases) {
    auto svg = SweepReportSvg(data);
    ASSERT_TRUE(svg.ok()) << svg.status();
    const auto in = dir / (name + ".svg"), out = dir / (name + ".png");
    std::ofstream(in) << *svg;
    const std::string cmd = "rsvg-convert -o '" + out.string() + "' '" + in.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream png(out, std::ios::binary);
    std::string magic(8, '\0');
    png.read(magic.data(), 8);
    EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n") << out;
    EXPECT_GT(std::filesystem::file_size(out), 10000u) << out;  // a picture, not a blank page
  }
  if (keep == nullptr) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tuned
