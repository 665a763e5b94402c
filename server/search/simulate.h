// Running a strategy against recorded measurements instead of a GPU (the
// simulator bench/strategy_sim and tests/strategy_test): an oracle of
// recorded times per config, and the GPU time their measuring would take
// (search::MeasureSeconds, search::RetimeSeconds). CPU-only.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/search/strategy.h"

namespace tuned::search {

/// One shape's recorded measurements.
struct ShapeRecord {
  Shape shape;
  std::map<std::string, double> ms;  // config name -> recorded ms (OK only)
  std::vector<Record> records;
};

/// Reads every results_sgemm_MxNxK.txt (`tunectl results` dumps: rank,
/// config, status, ms, ...) of `dir`, shapes in name order; configs whose
/// names the family cannot produce are counted in `*unknown`.
absl::StatusOr<std::vector<ShapeRecord>> LoadResultsDir(const std::string& dir, const Family& family,
                                                        int* unknown);

/// What a simulated sweep did.
struct Outcome {
  int measured = 0, unmeasurable = 0, rounds = 0;
  double seconds = 0;  // simulated GPU time, with the final re-timing
  double search_seconds = 0;  // without it
  double winner_ms = 0;
  std::string winner;
};

/// Runs `strategy` on `oracle`'s shape as the job runner would (on the
/// configs of `valid` that suit the shape: Family::SuitsShape), measuring
/// through the oracle: a config it lacks costs kConfigOverheadS and fails.
/// `compiled`: what the compile cache holds (RoundInput::compiled; empty:
/// nothing known).
Outcome Simulate(Strategy& strategy, const Family& family, const v1::Device& device,
                 const std::vector<Config>& valid, const ShapeRecord& oracle, const Budget& budget,
                 std::function<bool(const Config&)> compiled = {});

}  // namespace tuned::search
