// strategy_sim: a search strategy (server/search/) run against recorded
// measurements instead of a GPU, leave-one-out: for each recorded shape, the
// strategy knows the other shapes' records (as the daemon knows the other
// tuned shapes of its database) and measures this one through an oracle of
// its recorded times (a config absent from the record is unmeasurable: it
// costs its overhead and fails). No GPU.
//
//   strategy_sim --results bench/results/2026-11-22_h100_sgemm_results_final --strategy model
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
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/search/strategy.h"

namespace {

using tuned::Config;
using tuned::Shape;
namespace search = tuned::search;

struct ShapeRecord {
  Shape shape;
  std::map<std::string, double> ms;  // config name -> recorded ms (OK only)
  std::vector<search::Record> records;
};

/// Every config name the family can produce (its space and the neighbours of
/// its valid configs) -> the config.
std::map<std::string, Config> NameIndex(const tuned::Family& family, const tuned::v1::Device& device) {
  std::map<std::string, Config> index;
  std::vector<tuned::Pruned> pruned;
  for (const Config& c : family.Space()) index.emplace(family.ConfigName(c), c);
  for (const Config& c : family.ValidSpace(device, &pruned)) {
    for (const Config& n : family.Neighbours(c)) index.emplace(family.ConfigName(n), n);
  }
  return index;
}

struct Outcome {
  int measured = 0, unmeasurable = 0;
  double seconds = 0;
  double winner_ms = 0;
  std::string winner;
};

Outcome Simulate(search::Strategy& strategy, const tuned::Family& family,
                 const tuned::v1::Device& device, const std::vector<Config>& valid,
                 const ShapeRecord& oracle, const search::Budget& budget) {
  Outcome out;
  search::RoundInput in;
  in.family = &family;
  in.device = device;
  in.shape = oracle.shape;
  in.valid = valid;
  in.budget = budget;
  std::vector<std::pair<double, Config>> ok;  // measured OK, by time
  double best = 0;
  for (;; ++in.round) {
    const std::vector<Config> round = strategy.NextRound(in);
    if (round.empty()) break;
    for (const Config& c : round) {
      const std::string name = family.ConfigName(c);
      in.measured.insert(name);
      auto it = oracle.ms.find(name);
      if (it == oracle.ms.end()) {
        ++out.unmeasurable;
        out.seconds += search::kConfigOverheadS;
        continue;
      }
      ++out.measured;
      out.seconds += search::MeasureSeconds(it->second, best);
      best = best > 0 ? std::min(best, it->second) : it->second;
      ok.emplace_back(it->second, c);
    }
    std::stable_sort(ok.begin(), ok.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    in.best.clear();
    in.best_ms.clear();
    for (size_t i = 0; i < ok.size() && i < 3; ++i) {
      in.best.push_back(ok[i].second);
      in.best_ms.push_back(ok[i].first);
    }
    in.spent_seconds = out.seconds;
  }
  out.seconds += search::RetimeSeconds(in.best_ms);
  if (!ok.empty()) {
    out.winner_ms = ok.front().first;
    out.winner = family.ConfigName(ok.front().second);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strategy_sim: a search strategy against recorded measurements, leave-one-out"};
  std::string results, strategy_name = "model", budget_text;
  search::ModelOptions model;
  app.add_option("--results", results, "a directory of `tunectl results` dumps, results_sgemm_MxNxK.txt")
      ->required();
  app.add_option("--strategy", strategy_name, "exhaustive or model");
  app.add_option("--budget", budget_text, "10s or 64 (configs)");
  app.add_option("--first-round", model.first_round, "model: configs of the first round");
  app.add_option("--near-shapes", model.near_shapes, "model: nearest shapes whose winners go first");
  app.add_option("--near-winners", model.near_winners, "model: winners of each nearest shape");
  app.add_option("--refine-rounds", model.refine_rounds, "model: rounds of neighbours of the best");
  app.add_option("--refine-top", model.refine_top, "model: neighbours of this many best");
  CLI11_PARSE(app, argc, argv);
  auto budget = search::ParseBudget(budget_text);
  if (!budget.ok()) {
    std::fprintf(stderr, "%s\n", std::string(budget.status().message()).c_str());
    return 2;
  }

  const tuned::Family& family = tuned::SgemmFamily();
  tuned::v1::Device device = tuned::Sm90ReferenceDevice();
  device.set_name("NVIDIA H100 80GB HBM3");
  const auto index = NameIndex(family, device);
  std::vector<tuned::Pruned> pruned;
  const std::vector<Config> valid = family.ValidSpace(device, &pruned);

  std::vector<ShapeRecord> shapes;
  int unknown = 0;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(results)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string stem = path.stem().string();  // results_sgemm_MxNxK
    if (stem.rfind("results_sgemm_", 0) != 0) continue;
    ShapeRecord s;
    for (const std::string& d : std::vector<std::string>(absl::StrSplit(stem.substr(14), 'x'))) {
      int64_t v = 0;
      if (absl::SimpleAtoi(d, &v)) s.shape.push_back(v);
    }
    if (s.shape.size() != 3) continue;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string rank, name, status;
      double ms = 0;
      if (!(fields >> rank >> name >> status >> ms) || status != "ok" || ms <= 0) continue;
      auto it = index.find(name);
      if (it == index.end()) {
        ++unknown;
        continue;
      }
      s.ms[name] = ms;
      s.records.push_back({s.shape, it->second, ms});
    }
    shapes.push_back(std::move(s));
  }
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
    const Outcome o = Simulate(**strategy, family, device, valid, shapes[i], *budget);
    const Outcome e = Simulate(**exhaustive, family, device, valid, shapes[i], {});
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
  std::printf("SUMMARY strategy=%s median_tune_s=%.2f max_tune_s=%.2f max_regret=%.4f "
              "shapes=%zu (simulated)\n",
              strategy_name.c_str(), median, times.back(), max_regret, n);
  return 0;
}
