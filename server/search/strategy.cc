#include "server/search/strategy.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "server/common/idle.h"

namespace tuned::search {

std::vector<std::string> StrategyNames() { return {std::string(kExhaustive), std::string(kModel)}; }

absl::Status CheckStrategy(std::string_view name) {
  for (const auto& n : StrategyNames()) {
    if (n == name) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown strategy '", std::string(name),
                                                 "' (known: ", absl::StrJoin(StrategyNames(), ", "),
                                                 ")"));
}

std::string Budget::ToString() const {
  std::vector<std::string> parts;
  if (seconds > 0) parts.push_back(absl::StrFormat("%gs", seconds));
  if (configs > 0) parts.push_back(absl::StrCat(configs));
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<Budget> ParseBudget(std::string_view text) {
  Budget b;
  const std::string t =
      absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(std::string(text))));
  if (t.empty()) return b;
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad budget '", std::string(text), "': ", std::string(why),
        " (seconds as '10s' or '2m', or a number of configs as '64')"));
  };
  double unit = 0;  // 0: configs
  std::string number = t;
  if (t.back() == 's') {
    unit = 1;
    number = t.substr(0, t.size() - 1);
  } else if (t.back() == 'm') {
    unit = 60;
    number = t.substr(0, t.size() - 1);
  }
  if (unit == 0) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(number, &n)) return bad("not a whole number of configs, nor seconds");
    if (n <= 0) return bad("must be above 0");
    b.configs = n;
    return b;
  }
  double v = 0;
  if (!absl::SimpleAtod(number, &v) || !std::isfinite(v)) return bad("not a number of seconds");
  if (v <= 0) return bad("must be above 0");
  b.seconds = v * unit;
  return b;
}

int SearchRepetitions(std::string_view strategy) {
  return strategy == kModel ? ModelOptions{}.search_repetitions : kMaxRepetitions;
}

double MeasureSeconds(double ms, double best_ms, int max_reps) {
  // Worker::Time's policy (server/common/timing.h).
  double gpu_ms = ms;  // the verification run (no flush)
  if (!(best_ms > 0 && ms > kLoserRatio * best_ms)) {
    gpu_ms += ms + kRunOverheadMs;  // the first timed run
    gpu_ms += TimedRepetitions(ms, best_ms, max_reps) * (ms + kRunOverheadMs);
  }
  return kConfigOverheadS + gpu_ms / 1000;
}

double RetimeSeconds(const std::vector<double>& ms) {
  if (ms.size() < 2) return 0;
  const double best = *std::min_element(ms.begin(), ms.end());
  const double n = static_cast<double>(ms.size());
  const double rounds = std::clamp(200.0 * n / (best * (n + 1)), 10.0, 100.0);
  double round_ms = best;  // the baseline, about the best's time
  for (double m : ms) round_ms += m + kRunOverheadMs;
  // the worker's segments (RetimeSegments), sized by the baseline as it sizes them
  const int segments = RetimeSegments(best * (n + 1) * rounds);
  return 2 * (segments * rounds * round_ms / 1000 + kConfigOverheadS * n);
}

// ---- the cost model ----

std::vector<float> Features(const Family& family, const v1::Device& device, const Config& config,
                            const Shape& shape) {
  std::vector<float> f;
  for (int64_t d : shape) f.push_back(static_cast<float>(std::log2(static_cast<double>(d))));
  for (int64_t d : shape) f.push_back(static_cast<float>(d % 4 == 0));  // AlignmentClass's
  for (const Param& p : family.params()) {
    auto it = config.find(p.name);
    f.push_back(static_cast<float>(it != config.end() ? it->second : p.if_absent.value_or(-1)));
  }
  const v1::LaunchGeometry g = family.Geometry(config, shape, device);
  double blocks = 1, threads = 1;
  for (uint32_t x : g.grid()) blocks *= std::max<uint32_t>(x, 1);
  for (uint32_t x : g.block()) threads *= std::max<uint32_t>(x, 1);
  const double smem = g.dynamic_shared_bytes();
  const double sms = device.sm_count() > 0 ? device.sm_count() : 132;
  const double max_threads = device.max_threads_per_sm() > 0 ? device.max_threads_per_sm() : 2048;
  const double smem_sm = 228.0 * 1024;
  double per_sm = std::min(32.0, std::floor(max_threads / threads));
  if (smem > 0) per_sm = std::min(per_sm, std::floor(smem_sm / smem));
  per_sm = std::max(per_sm, 1.0);
  const double waves = blocks / (sms * per_sm);
  f.push_back(static_cast<float>(std::log2(blocks)));
  f.push_back(static_cast<float>(threads));
  f.push_back(static_cast<float>(smem / 1024));
  f.push_back(static_cast<float>(per_sm));
  f.push_back(static_cast<float>(std::log2(waves)));
  f.push_back(static_cast<float>(waves / std::ceil(waves)));  // the last wave's fill
  f.push_back(static_cast<float>(blocks / sms));              // blocks per SM
  for (float x : family.ModelFeatures(config, shape, device)) f.push_back(x);
  return f;
}

std::vector<bool> AlignmentClass(const Shape& shape) {
  std::vector<bool> c;
  for (int64_t d : shape) c.push_back(d % 4 == 0);
  return c;
}

std::set<std::string> KernelKinds(const Family& family, const std::vector<Config>& configs) {
  std::set<std::string> kinds;
  for (const Config& c : configs) {
    const std::string name = family.ConfigName(c);
    std::vector<absl::string_view> words;  // the name's words before the first with a digit
    for (absl::string_view w : absl::StrSplit(name, '_')) {
      if (absl::c_any_of(w, [](char ch) { return absl::ascii_isdigit(ch); })) break;
      words.push_back(w);
    }
    kinds.insert(absl::StrJoin(words, "_"));
  }
  return kinds;
}

namespace {
/// The fastest ms of each shape among the records.
std::map<Shape, double> ShapeBests(const std::vector<Record>& records) {
  std::map<Shape, double> best;
  for (const Record& r : records) {
    if (r.ms <= 0) continue;
    auto [it, fresh] = best.emplace(r.shape, r.ms);
    if (!fresh) it->second = std::min(it->second, r.ms);
  }
  return best;
}

/// How much slower than its shape's best a config may be and still teach
/// the model: beyond it only "slow" matters, not how slow.
constexpr double kMaxLogSlowdown = 1.4;  // ~4x
constexpr int kTreeRounds = 150;
// Below these the model strategy sweeps exhaustively: a cost model fitted on
// one or two shapes (an imported kernel, a first sweep) ranks configs by
// little more than chance. 3 shapes of 100 OK measurements is the least the
// leave-one-out fixture of strategy_test (3 other shapes of 120) exceeds.
constexpr size_t kMinShapes = 3;
constexpr size_t kMinRecords = 100;

absl::Status XgbError(std::string_view what) {
  return absl::InternalError(absl::StrCat("xgboost: ", std::string(what), ": ", XGBGetLastError()));
}
}  // namespace

absl::StatusOr<std::unique_ptr<CostModel>> CostModel::Fit(const Family& family,
                                                          const v1::Device& device,
                                                          const std::vector<Record>& records) {
  const auto bests = ShapeBests(records);
  if (bests.empty()) return absl::InvalidArgumentError("no measurements to fit a cost model on");
  std::vector<float> x, y;
  size_t cols = 0;
  for (const Record& r : records) {
    if (r.ms <= 0) continue;
    std::vector<float> f = Features(family, device, r.config, r.shape);
    cols = f.size();
    x.insert(x.end(), f.begin(), f.end());
    y.push_back(static_cast<float>(std::min(std::log(r.ms / bests.at(r.shape)), kMaxLogSlowdown)));
  }
  auto model = std::unique_ptr<CostModel>(new CostModel());
  model->family_ = &family;
  model->device_ = device;
  DMatrixHandle train = nullptr;
  if (XGDMatrixCreateFromMat(x.data(), y.size(), cols, std::nanf(""), &train) != 0) {
    return XgbError("matrix");
  }
  absl::Status s;
  BoosterHandle booster = nullptr;
  if (XGDMatrixSetFloatInfo(train, "label", y.data(), y.size()) != 0) {
    s = XgbError("labels");
  } else if (XGBoosterCreate(&train, 1, &booster) != 0) {
    s = XgbError("booster");
  } else {
    model->booster_ = booster;
    // One thread: deterministic, and the daemon's cores are the compiler's.
    for (auto [k, v] : {std::pair<const char*, const char*>{"objective", "reg:squarederror"},
                        {"max_depth", "8"}, {"eta", "0.1"}, {"min_child_weight", "2"},
                        {"subsample", "1"}, {"tree_method", "hist"}, {"nthread", "1"},
                        {"seed", "0"}, {"verbosity", "0"}}) {
      if (XGBoosterSetParam(booster, k, v) != 0) {
        s = XgbError(k);
        break;
      }
    }
    for (int i = 0; s.ok() && i < kTreeRounds; ++i) {
      if (XGBoosterUpdateOneIter(booster, i, train) != 0) s = XgbError("training");
    }
  }
  XGDMatrixFree(train);
  if (!s.ok()) return s;
  return model;
}

CostModel::~CostModel() {
  if (booster_ != nullptr) XGBoosterFree(booster_);
}

std::vector<double> CostModel::Predict(const std::vector<Config>& configs, const Shape& shape) const {
  std::vector<double> out(configs.size(), 0);
  if (configs.empty()) return out;
  std::vector<float> x;
  size_t cols = 0;
  for (const Config& c : configs) {
    std::vector<float> f = Features(*family_, device_, c, shape);
    cols = f.size();
    x.insert(x.end(), f.begin(), f.end());
  }
  DMatrixHandle m = nullptr;
  if (XGDMatrixCreateFromMat(x.data(), configs.size(), cols, std::nanf(""), &m) != 0) return out;
  bst_ulong n = 0;
  const float* p = nullptr;
  if (XGBoosterPredict(booster_, m, 0, 0, 0, &n, &p) == 0 && n == configs.size()) {
    for (size_t i = 0; i < configs.size(); ++i) out[i] = p[i];
  }
  XGDMatrixFree(m);
  return out;
}

// ---- strategies ----

std::vector<Config> WithinBudget(std::vector<Config> configs, const std::vector<double>& predicted_ms,
                                 const RoundInput& in, int max_reps) {
  std::vector<Config> out;
  int64_t configs_left = std::numeric_limits<int64_t>::max();
  if (in.budget.configs > 0) {
    configs_left = in.budget.configs - static_cast<int64_t>(in.measured.size());
  }
  double seconds_left = std::numeric_limits<double>::infinity();
  if (in.budget.seconds > 0) seconds_left = in.budget.seconds - in.spent_seconds;
  if (configs_left <= 0 || seconds_left <= 0) return out;
  double best = in.best_ms.empty() ? 0 : in.best_ms.front();
  double cost = 0;
  std::set<std::string> names;
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string name = in.family->ConfigName(configs[i]);
    if (in.measured.count(name) != 0 || !names.insert(name).second) continue;
    const double ms = i < predicted_ms.size() ? predicted_ms[i] : 0;
    cost += ms > 0 ? MeasureSeconds(ms, best, max_reps) : kConfigOverheadS;
    if (ms > 0) best = best > 0 ? std::min(best, ms) : ms;
    if (!out.empty() && cost > seconds_left) break;
    out.push_back(std::move(configs[i]));
    if (static_cast<int64_t>(out.size()) >= configs_left) break;
  }
  return out;
}

namespace {

constexpr int kRefinePasses = 3;  // rounds of refinement at most: a job's reach (ByName(3))

class Exhaustive : public Strategy {
 public:
  Exhaustive(int refine_top) : refine_top_(refine_top) {}
  std::string_view name() const override { return kExhaustive; }
  std::string Describe() const override {
    return absl::StrCat("exhaustive: the pruned space, then up to ", kRefinePasses,
                        " rounds of neighbours of the best ", refine_top_);
  }
  std::vector<Config> NextRound(const RoundInput& in) override {
    if (in.round == 0) return WithinBudget(in.valid, {}, in);
    if (refine_top_ <= 0 || in.round > kRefinePasses) return {};
    std::vector<Config> best(in.best.begin(),
                             in.best.begin() + std::min<size_t>(in.best.size(), refine_top_));
    std::set<std::string> refined;
    return WithinBudget(
        Refinements(*in.family, in.device, best, in.measured, &refined, in.math, in.shape, in.layout),
                        std::vector<double>(), in);
  }

 private:
  int refine_top_;
};

class Model : public Strategy {
 public:
  Model(const Family& family, const v1::Device& device, std::vector<Record> records,
        int refine_top, ModelOptions options)
      : records_(std::move(records)), exhaustive_(refine_top), options_(options) {
    bests_ = ShapeBests(records_);
    for (const Record& r : records_) seen_.insert(family.ConfigName(r.config));
    if (bests_.size() < kMinShapes || records_.size() < kMinRecords) {
      why_ = absl::StrCat("too little known: ", records_.size(), " measurements of ",
                          bests_.size(), " other shapes on this device kind (it needs ",
                          kMinRecords, " of ", kMinShapes, ")");
    } else {
      // At idle priority: a fit takes a core for a while, and serving comes first.
      auto model = AtIdlePriority([&] { return CostModel::Fit(family, device, records_); });
      if (model.ok()) {
        model_ = *std::move(model);
      } else {
        why_ = std::string(model.status().message());
      }
    }
  }
  std::string_view name() const override { return kModel; }
  std::string Describe() const override {
    if (model_ == nullptr) return absl::StrCat("model: ", why_, ": exhaustive instead");
    return absl::StrCat("model: fitted on ", records_.size(), " measurements of ", bests_.size(),
                        " shapes; first round the ", options_.first_round,
                        " configs predicted fastest (more while within ", options_.first_seconds,
                        " s of measuring) and the winners of ",
                        options_.near_shapes, " nearest shapes, then ",
                        options_.refine_rounds, " round(s) of neighbours of the best ",
                        options_.refine_top,
                        options_.refine_max > 0 ? absl::StrCat(" (", options_.refine_max, " at most)")
                                                : std::string());
  }

  std::vector<Config> NextRound(const RoundInput& in) override {
    if (in.round == 0 && model_ != nullptr && !KnowsClassOf(in)) {
      why_ = absl::StrCat("no other shape of ", Family::ShapeString(in.shape),
                          "'s alignment class (which dimensions are multiples of 4) and kernel "
                          "kinds (KernelKinds of its space) is tuned");
      model_.reset();
    }
    if (model_ == nullptr) return exhaustive_.NextRound(in);
    if (in.round == 0) return First(in);
    if (in.round > options_.refine_rounds || in.best.empty()) return {};
    std::vector<Config> best(in.best.begin(),
                             in.best.begin() + std::min<size_t>(in.best.size(), options_.refine_top));
    std::set<std::string> refined;
    std::vector<Config> next =
        Refinements(*in.family, in.device, best, in.measured, &refined, in.math, in.shape, in.layout);
    const double best_ms = in.best_ms.empty() ? 0 : in.best_ms.front();
    if (options_.refine_compiled &&
        MeasureSeconds(best_ms, best_ms, options_.search_repetitions) < options_.compile_hidden_seconds) {
      // Compiled: in the compile cache where the runner says (a config the
      // prior measured is not compiled here), else measured on another shape.
      std::erase_if(next, [&](const Config& c) {
        return in.compiled ? !in.compiled(c) : seen_.count(in.family->ConfigName(c)) == 0;
      });
    }
    // The most promising neighbours first, costed at the best's time.
    const std::vector<double> pred = model_->Predict(next, in.shape);
    std::vector<size_t> order(next.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a] < pred[b]; });
    std::vector<Config> sorted;
    for (size_t i : order) {
      if (options_.refine_max > 0 && static_cast<int>(sorted.size()) >= options_.refine_max) break;
      sorted.push_back(next[i]);
    }
    return WithinBudget(std::move(sorted), std::vector<double>(sorted.size(), best_ms), in,
                        options_.search_repetitions);
  }

 private:
  /// Whether a tuned shape shares the job's shape's AlignmentClass and the
  /// KernelKinds of its space.
  bool KnowsClassOf(const RoundInput& in) const {
    const std::vector<bool> c = AlignmentClass(in.shape);
    auto kinds_of = [&](const Shape& shape) {
      return KernelKinds(*in.family, in.family->ValidSpace(in.device, shape, nullptr, in.math, in.layout));
    };
    const std::set<std::string> kinds = kinds_of(in.shape);
    for (const auto& [s, ms] : bests_) {
      if (AlignmentClass(s) == c && kinds_of(s) == kinds) return true;
    }
    return false;
  }

  std::vector<Config> First(const RoundInput& in) {
    const Family& family = *in.family;
    const std::vector<double> pred = model_->Predict(in.valid, in.shape);
    std::map<std::string, size_t> index;  // name -> position in valid
    for (size_t i = 0; i < in.valid.size(); ++i) index[family.ConfigName(in.valid[i])] = i;
    // The nearest tuned shapes' winners (those in this space).
    std::vector<std::pair<double, Shape>> near;
    for (const auto& [shape, ms] : bests_) near.emplace_back(ShapeDistance(shape, in.shape), shape);
    std::sort(near.begin(), near.end());
    std::set<size_t> taken;  // positions in valid measured whatever the prediction
    std::set<size_t> firsts;  // of those, each nearest shape's own winner
    for (int s = 0; s < options_.near_shapes && s < static_cast<int>(near.size()); ++s) {
      std::vector<const Record*> of;
      for (const Record& r : records_) {
        if (r.shape == near[s].second && r.ms > 0) of.push_back(&r);
      }
      std::sort(of.begin(), of.end(), [](const Record* a, const Record* b) { return a->ms < b->ms; });
      int n = 0;
      for (const Record* r : of) {
        if (n == options_.near_winners) break;
        auto it = index.find(family.ConfigName(r->config));
        if (it == index.end()) continue;
        if (n == 0) firsts.insert(it->second);
        ++n;
        taken.insert(it->second);
      }
    }
    std::vector<size_t> order(in.valid.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a] < pred[b]; });
    // Each nearest shape's winner first, then by the prediction: a config
    // budget cut keeps them. The model's fit extrapolates worst to a shape
    // larger than those it learnt from: under a budget of 24 on the H100 it
    // put 24 SIMT configs first for 8192^3 fp32_accurate, where 4096^3's
    // 3xTF32 winner runs 1.7x cuBLAS, and cuBLAS was served
    // (bench/RESULTS.md small-calls, job 26).
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return firsts.count(i) != 0; });
    // The shape's best time, scaled from the nearest shape's by the work
    // (for the budget's cost of each config).
    double best_ms = 0;
    if (!near.empty()) {
      const Shape& s = near.front().second;
      best_ms = bests_.at(s) * family.Work(in.shape) / family.Work(s);
    }
    const double min_pred = pred.empty() ? 0 : *std::min_element(pred.begin(), pred.end());
    // Only configs measured OK on another shape: the model has seen them (a
    // config no shape ran is an extrapolation; neighbours still reach it).
    // Most promising first (the worker screens the rest against it): the
    // nearest shapes' winners all, and the options_.first_round others the
    // model predicts fastest.
    // Beyond first_round, and past first_uncompiled configs to compile, only
    // configs compiled already, or measured long enough to hide a compile
    // (compile_hidden_seconds): on a fresh install (a prior, nothing
    // compiled) the round waits on NVRTC for each (~2.4 s of a core).
    // in.compiled asks the compile cache (a store query): once per config.
    std::vector<signed char> is_compiled(in.valid.size(), -1);
    auto compiled = [&](size_t i) {
      if (is_compiled[i] < 0) is_compiled[i] = !in.compiled || in.compiled(in.valid[i]);
      return is_compiled[i] == 1;
    };
    // The round waits on no compile where at least half of the first_round
    // known configs the model ranks first are compiled. Those decide, not
    // any compiled configs: a daemon that held ieee_fp32's SIMT kernels
    // compiled, and none of fp32_accurate's 3xTF32 ones, took SIMT configs
    // only into each fp32_accurate first round, and served cuBLAS at
    // 1024-4096^3 where 3xTF32 runs 1.6-1.8x
    // (bench/RESULTS.md drop-in).
    int top = 0, top_compiled = 0;
    for (size_t i : order) {
      if (top == options_.first_round) break;
      if (seen_.count(family.ConfigName(in.valid[i])) == 0) continue;
      ++top;
      top_compiled += compiled(i);
    }
    const int may_compile = top > 0 && 2 * top_compiled >= top ? 0 : options_.first_uncompiled;
    std::vector<Config> configs;
    std::vector<double> ms;
    int others = 0, uncompiled = 0;
    double cost = 0;  // predicted seconds of measuring the round
    double fastest = 0;
    for (size_t i : order) {
      const double predicted = best_ms * std::exp(pred[i] - min_pred);
      const double seconds =
          predicted > 0 ? MeasureSeconds(predicted, fastest, options_.search_repetitions) : kConfigOverheadS;
      auto ready = [&] { return seconds >= options_.compile_hidden_seconds || compiled(i); };
      if (taken.count(i) == 0) {
        if (seen_.count(family.ConfigName(in.valid[i])) == 0) continue;
        const bool now = ready();
        if (others >= options_.first_round && (!now || cost + seconds > options_.first_seconds)) continue;
        if (!now && uncompiled >= may_compile) continue;
        uncompiled += now ? 0 : 1;
        ++others;
      } else if (may_compile == 0 && !ready()) {
        continue;
      }
      cost += seconds;
      if (predicted > 0) fastest = fastest > 0 ? std::min(fastest, predicted) : predicted;
      configs.push_back(in.valid[i]);
      ms.push_back(predicted);
    }
    return WithinBudget(std::move(configs), ms, in, options_.search_repetitions);
  }

  std::vector<Record> records_;
  std::map<Shape, double> bests_;
  std::set<std::string> seen_;  // names of the configs measured on another shape
  std::unique_ptr<CostModel> model_;
  std::string why_;
  Exhaustive exhaustive_;
  ModelOptions options_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name,
                                                       const Family& family,
                                                       const v1::Device& device,
                                                       std::vector<Record> records,
                                                       int refine_top, ModelOptions model) {
  TUNED_RETURN_IF_ERROR(CheckStrategy(name));
  if (name == kExhaustive) return std::unique_ptr<Strategy>(new Exhaustive(refine_top));
  return std::unique_ptr<Strategy>(new Model(family, device, std::move(records), refine_top, model));
}

}  // namespace tuned::search
