#include "server/search/simulate.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tuned::search {

Outcome Simulate(Strategy& strategy, const Family& family,
                 const v1::Device& device, const std::vector<Config>& valid,
                 const ShapeRecord& oracle, const Budget& budget,
                 std::function<bool(const Config&)> compiled) {
  Outcome out;
  RoundInput in;
  in.compiled = std::move(compiled);
  in.family = &family;
  in.device = device;
  in.shape = oracle.shape;
  for (const Config& c : valid) {  // what the job on the shape searches (JobRunner)
    if (family.SuitsShape(c, oracle.shape).ok()) in.valid.push_back(c);
  }
  in.budget = budget;
  std::vector<std::pair<double, Config>> ok;  // measured OK, by time
  double best = 0;
  for (;; ++in.round) {
    const std::vector<Config> round = strategy.NextRound(in);
    if (round.empty()) break;
    ++out.rounds;
    for (const Config& c : round) {
      const std::string name = family.ConfigName(c);
      in.measured.insert(name);
      auto it = oracle.ms.find(name);
      if (it == oracle.ms.end()) {
        ++out.unmeasurable;
        out.seconds += kConfigOverheadS;
        continue;
      }
      ++out.measured;
      out.seconds += MeasureSeconds(it->second, best, SearchRepetitions(strategy.name()));
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
  out.search_seconds = out.seconds;
  out.seconds += RetimeSeconds(in.best_ms);
  if (!ok.empty()) {
    out.winner_ms = ok.front().first;
    out.winner = family.ConfigName(ok.front().second);
  }
  return out;
}

absl::StatusOr<std::vector<ShapeRecord>> LoadResultsDir(const std::string& dir, const Family& family,
                                                        int* unknown) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) files.push_back(e.path());
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": ", ec.message()));
  std::sort(files.begin(), files.end());
  std::vector<ShapeRecord> shapes;
  std::vector<std::vector<std::pair<std::string, double>>> rows;  // each shape's OK (name, ms)
  std::set<std::string> names;
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
    std::vector<std::pair<std::string, double>> ok;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string rank, name, status;
      double ms = 0;
      if (!(fields >> rank >> name >> status >> ms) || status != "ok" || ms <= 0) continue;
      names.insert(name);
      ok.emplace_back(std::move(name), ms);
    }
    shapes.push_back(std::move(s));
    rows.push_back(std::move(ok));
  }
  // The configs of the names, as far as 3 rounds of refinement reach from the space.
  const auto index = family.ByName(3, names);
  for (size_t i = 0; i < shapes.size(); ++i) {
    ShapeRecord& s = shapes[i];
    for (const auto& [name, ms] : rows[i]) {
      auto it = index.find(name);
      if (it == index.end()) {
        if (unknown != nullptr) ++*unknown;
        continue;
      }
      s.ms[name] = ms;
      s.records.push_back({s.shape, it->second, ms});
    }
  }
  return shapes;
}

}  // namespace tuned::search
