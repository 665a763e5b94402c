// The sweep report of `tunectl report`: one self-contained SVG picture of a
// problem's stored measurements. Built from the API's messages alone, so it
// needs no daemon (tests/report_test.cc). The SVG is written by hand (a few
// element kinds), as Debian has no C++ SVG or plotting library to build on.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// What the report draws; tunectl fills it from ListMeasurements, GetBest and
/// ListJobs.
struct SweepReportData {
  v1::Problem problem;
  std::vector<v1::Measurement> measurements;  // every status, any order, any job
  std::string baseline_name;                  // "cuBLAS" (sgemm), "copy" (transpose)
  double baseline_metric = 0;                 // in the family's unit; <= 0: none measured
  bool use_baseline = false;                  // GetBest: the baseline is served, not the winner
  std::string device;                         // the GPU's name, for the title; may be empty
  /// A kernel spec's problem (Problem.family_name): its family as GetFamily
  /// returns it (name, params, metric_unit); unused for a built-in family.
  v1::FamilyInfo family;
};

/// An SVG document (1000 px wide) of the sweep: (a) the metric (GFLOPS or
/// GB/s) of every verified (OK) config, fastest first, with the winner, the
/// baseline (a horizontal line) and the served choice marked; (b) one panel
/// per parameter of the family: the metric of the OK configs at each value;
/// (c) the configs counted by status, failures by class. A config measured
/// by several jobs counts once: its fastest OK row, else its latest row.
/// INVALID_ARGUMENT for a built-in family this build does not know, or a
/// kernel spec's problem without its `family`; NOT_FOUND if there are no
/// measurements. A spec without work (metric_unit "") is drawn in ms^-1
/// (launches per millisecond) from the measured times.
absl::StatusOr<std::string> SweepReportSvg(const SweepReportData& data);

/// "ok", "compile_error", ...: the status's API name without MEASUREMENT_, in
/// lower case; its number for a status this build does not know.
std::string StatusName(v1::MeasurementStatus status);

}  // namespace tuned
