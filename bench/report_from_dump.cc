// report_from_dump: the sweep report of `tunectl report` (client/report.h)
// drawn from a recorded `tunectl results` dump (the README's picture: bench/RESULTS.md sweep-picture),
// for sweeps recorded before the report existed. The dump names each config;
// its parameters come from the family: every config of its space and of up to
// three rounds of neighbours (what a job's refinement can reach) by name.
//
//   report_from_dump --family sgemm --shape 1024 1024 1024 --results FILE
//       --baseline-metric 33520.9 --device "NVIDIA H100 80GB HBM3" --out FILE.svg
// (one command line)
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "client/report.h"
#include "families/family.h"

int main(int argc, char** argv) {
  CLI::App app{"report_from_dump: the sweep report of a recorded `tunectl results` dump"};
  std::string family_name = "sgemm", results, device, out;
  std::vector<int64_t> shape;
  double baseline_metric = 0;
  app.add_option("--family", family_name, "kernel family");
  app.add_option("--shape", shape, "the problem's shape")->required();
  app.add_option("--results", results, "`tunectl results --top 0` output")->required();
  app.add_option("--baseline-metric", baseline_metric, "the baseline's GFLOPS or GB/s");
  app.add_option("--device", device, "the GPU's name, for the title");
  app.add_option("--out", out, "SVG file to write")->required();
  CLI11_PARSE(app, argc, argv);

  const tuned::Family* family = tuned::FindFamily(family_name);
  if (family == nullptr) {
    std::cerr << "report_from_dump: unknown family " << family_name << "\n";
    return 2;
  }

  tuned::SweepReportData data;
  data.problem.set_family(family->id());
  data.problem.set_dtype(tuned::v1::DTYPE_F32);
  for (int64_t d : shape) data.problem.add_shape(d);
  data.baseline_name = std::string(family->baseline_name());
  data.baseline_metric = baseline_metric;
  data.device = device;
  // The dump's rows: index, name, status, ms, metric.
  std::vector<std::string> lines;
  std::set<std::string> names;
  {
    std::ifstream in(results);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::string index, name;
      std::istringstream(line) >> index >> name;
      names.insert(name);
      lines.push_back(std::move(line));
    }
  }
  // The dump's configs among the space and three rounds of neighbours.
  const std::map<std::string, tuned::Config> by_name = family->ByName(3, names);
  int unknown = 0;
  for (const std::string& line : lines) {
    std::istringstream row(line);
    std::string index, name, status;
    double ms = 0, metric = 0;
    row >> index >> name >> status >> ms >> metric;
    tuned::v1::MeasurementStatus s;
    if (!row || !tuned::v1::MeasurementStatus_Parse("MEASUREMENT_" + absl::AsciiStrToUpper(status), &s)) {
      continue;  // a failure's row has no time: not drawn as a speed anyway
    }
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      ++unknown;
      continue;
    }
    tuned::v1::Measurement& m = data.measurements.emplace_back();
    m.mutable_config()->set_name(name);
    for (const auto& [k, v] : it->second) (*m.mutable_config()->mutable_params())[k] = v;
    m.set_status(s);
    m.set_median_ms(ms);
    m.set_metric(metric);
    m.set_metric_unit(std::string(family->metric_unit()));
  }
  data.use_baseline = !data.measurements.empty() && baseline_metric > 0 &&
                      std::max_element(data.measurements.begin(), data.measurements.end(),
                                       [](const auto& a, const auto& b) {
                                         return a.metric() < b.metric();
                                       })->metric() < baseline_metric;
  auto svg = tuned::SweepReportSvg(data);
  if (!svg.ok()) {
    std::cerr << "report_from_dump: " << svg.status() << "\n";
    return 1;
  }
  std::ofstream(out) << *svg;
  std::cerr << data.measurements.size() << " configs drawn, " << unknown
            << " names not in the family's reach\n";
  return unknown == 0 ? 0 : 1;
}
