// strategy_sim: a search strategy (server/search/) run against recorded
// measurements instead of a GPU, leave-one-out: for each recorded shape, the
// strategy knows the other shapes' records (as the daemon knows the other
// tuned shapes of its database) and measures this one through an oracle of
// its recorded times (a config absent from the record is unmeasurable: it
// costs its overhead and fails). No GPU.
//
//   strategy_sim --results DUMPS --strategy model   (DUMPS: `tunectl results` dumps of exhaustive sweeps)
//
// Simulated time (labelled so): every config measured costs
// search::MeasureSeconds(recorded ms, best so far) — the worker's timing
// policy (verification run, one timed run, screening at 3 runs over 1.3x the
// best, else clamp(200 ms / ms, 5, 100) runs, an L2 flush per run) plus a
// per-config overhead calibrated on the recorded suite — and the end-of-job
// re-timing of the best 3 costs search::RetimeSeconds. Compiles cost nothing
// (a warm compile cache). The winner is the measured config of least recorded
// time; regret = its time / the record's best time - 1.
#include <algorithm>
#include <cstdio>
#include <set>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/search/simulate.h"

namespace search = tuned::search;
using tuned::Config;

int main(int argc, char** argv) {
  CLI::App app{"strategy_sim: a search strategy against recorded measurements, leave-one-out"};
  std::string results, strategy_name = "model", budget_text;
  search::ModelOptions model;
  app.add_option("--results", results, "a directory of `tunectl results` dumps, results_sgemm_MxNxK.txt")
      ->required();
  app.add_option("--strategy", strategy_name, "exhaustive or model");
  app.add_option("--budget", budget_text, "10s or 64 (configs)");
  app.add_option("--first-round", model.first_round, "model: configs the model predicts fastest in the first round");
  app.add_option("--first-seconds", model.first_seconds,
                 "model: more of them while the round's predicted measuring stays within this (s)");
  app.add_option("--near-shapes", model.near_shapes, "model: nearest shapes whose winners go first");
  app.add_option("--near-winners", model.near_winners, "model: winners of each nearest shape");
  app.add_option("--refine-rounds", model.refine_rounds, "model: rounds of neighbours of the best");
  app.add_option("--refine-top", model.refine_top, "model: neighbours of this many best");
  app.add_option("--refine-max", model.refine_max, "model: configs of a refinement round at most (0: all)");
  app.add_option("--refine-compiled", model.refine_compiled,
                 "model: refine only to compiled configs (1, the default: here those any shape "
                 "measured, as the exhaustive phase leaves the compile cache), or to any (0)");
  CLI11_PARSE(app, argc, argv);
  auto budget = search::ParseBudget(budget_text);
  if (!budget.ok()) {
    std::fprintf(stderr, "%s\n", std::string(budget.status().message()).c_str());
    return 2;
  }

  const tuned::Family& family = tuned::GemmFamily();
  tuned::v1::Device device = tuned::Sm90ReferenceDevice();
  device.set_name("NVIDIA H100 80GB HBM3");
  std::vector<tuned::Pruned> pruned;
  const std::vector<Config> valid = family.ValidSpace(device, &pruned);
  int unknown = 0;
  auto loaded = search::LoadResultsDir(results, family, &unknown);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return 2;
  }
  const std::vector<search::ShapeRecord>& shapes = *loaded;
  if (shapes.size() < 2) {
    std::fprintf(stderr, "need results of 2 shapes or more in %s\n", results.c_str());
    return 2;
  }
  std::printf("# strategy_sim --results %s --strategy %s%s%s: %zu shapes, leave-one-out; %zu "
              "configs in the space (sm_90 limits), %d recorded names not in it\n",
              results.c_str(), strategy_name.c_str(), budget->unlimited() ? "" : " --budget ",
              budget->ToString().c_str(), shapes.size(), valid.size(), unknown);
  std::printf("# SIMULATED times (warm compile cache; search::MeasureSeconds per config, "
              "search::RetimeSeconds for the final re-timing)\n");
  std::printf("%-18s %9s %9s %9s %9s %10s %10s %9s  %s\n", "shape", "measured", "unmeas.",
              "sim s", "exh. s", "winner ms", "best ms", "regret", "winner");
  // The compile cache as bench/regret.sh's strategy phase finds it: every
  // config that the exhaustive phase measured on any shape.
  std::set<std::string> cached;
  for (const auto& s : shapes) {
    for (const auto& [name, ms] : s.ms) cached.insert(name);
  }
  auto compiled = [&](const Config& c) { return cached.count(family.ConfigName(c)) != 0; };
  std::vector<double> times;
  double max_regret = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<search::Record> knowledge;
    for (size_t j = 0; j < shapes.size(); ++j) {
      if (j != i) knowledge.insert(knowledge.end(), shapes[j].records.begin(), shapes[j].records.end());
    }
    auto strategy = search::MakeStrategy(strategy_name, family, device, std::move(knowledge), 2, model);
    if (!strategy.ok()) {
      std::fprintf(stderr, "%s\n", std::string(strategy.status().message()).c_str());
      return 2;
    }
    auto exhaustive = search::MakeStrategy(search::kExhaustive, family, device, {});
    const search::Outcome o =
        search::Simulate(**strategy, family, device, valid, shapes[i], *budget, compiled);
    const search::Outcome e = search::Simulate(**exhaustive, family, device, valid, shapes[i], {});
    double best = 0;
    for (const auto& [name, ms] : shapes[i].ms) best = best > 0 ? std::min(best, ms) : ms;
    const double regret = o.winner_ms > 0 && best > 0 ? o.winner_ms / best - 1 : 1e9;
    max_regret = std::max(max_regret, regret);
    times.push_back(o.seconds);
    std::printf("%-18s %9d %9d %9.2f %9.2f %10.4f %10.4f %9.4f  %s\n",
                tuned::Family::ShapeString(shapes[i].shape).c_str(), o.measured, o.unmeasurable,
                o.seconds, e.seconds, o.winner_ms, best, regret, o.winner.c_str());
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  // Not a SUMMARY line: a simulation on recorded times is no measurement
  // (bench/regret.sh on a GPU prints the SUMMARY strategy=... line).
  std::printf("SIMULATED strategy=%s median_tune_s=%.2f max_tune_s=%.2f max_regret=%.4f "
              "shapes=%zu\n",
              strategy_name.c_str(), median, times.back(), max_regret, n);
  return 0;
}
