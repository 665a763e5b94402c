// A workload: the problems a model runs, how often and for how long, as
// `tuned.record(path)` writes it (client/python/tuned/record.py) and
// `tunectl workload sweep|report FILE` reads it. A JSON file:
//
//   {"format": "tuned-workload-1",
//    "problems": [
//      {"family": "sgemm", "dtype": "bf16", "layout": "nt", "math": "ieee_fp32",
//       "shape": [77, 4096, 4096], "calls": 1200, "gpu_ms": 345.6},
//      ...]}
//
// family, dtype, layout and math default to sgemm, f32, nn and ieee_fp32
// (tunectl's names); shape is the family's (sgemm: M, N, K); calls (at least
// 1) and gpu_ms (the GPU time of all those calls, ms, at least 0) are what
// the recording measured. A problem listed twice is one problem, its calls
// and time added.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// One recorded problem: how often it ran and its GPU time (ms, all calls).
struct WorkloadProblem {
  v1::Problem problem;
  int64_t calls = 0;
  double gpu_ms = 0;
};

/// A workload's problems in the file's order, and their total GPU time (ms).
struct Workload {
  std::vector<WorkloadProblem> problems;
  double total_ms = 0;
};

/// Reads a workload from its JSON text. INVALID_ARGUMENT naming the entry
/// and field ("problems[3].shape: ...") for a bad file: not JSON, another
/// format, an unknown family name, dtype, layout or math mode, a shape that
/// is not a list of positive integers, calls < 1, gpu_ms < 0.
absl::StatusOr<Workload> ParseWorkload(std::string_view json);

/// Reads the workload file `path` (a regular UTF-8 file of at most 16 MiB).
/// Errors as ParseWorkload's, with the path; NOT_FOUND if it is missing.
absl::StatusOr<Workload> LoadWorkload(const std::string& path);

/// Prompt lengths: a GEMM group (one family, dtype, layout, math mode, N and
/// K) with more distinct M than this is tuned at power-of-two M buckets,
/// not at each M.
inline constexpr int kExactShapesPerGroup = 4;

/// A sweep that a workload needs: the problem to tune, the recorded
/// problems it serves (indexes into Workload::problems) and their GPU time.
struct WorkloadSweep {
  v1::Problem problem;
  std::vector<size_t> serves;
  double gpu_ms = 0;
  bool bucket = false;  // a power-of-two M that serves other Ms
};

/// The sweeps, largest GPU time first: each problem's own shape, except in
/// a GEMM group of more than kExactShapesPerGroup distinct M, which is tuned
/// at the powers of two that serve its Ms. A recorded M is served by the
/// bucket nearest it by the daemon's own rule (NearestShape, families/
/// family.h: log2 distance), so the plan says which bucket serves which M.
std::vector<WorkloadSweep> PlanSweeps(const Workload& workload);

}  // namespace tuned
