// The search strategies (server/search/): budgets, the exhaustive strategy's
// rounds, and the model strategy on recorded H100 measurements of a few
// shapes (tests/data/strategy/: the top 120 configs of each shape of the
// 2026-11-22 suite), through the simulator's oracle. Deterministic: costs
// are the simulated ones (search::MeasureSeconds), no clock.
#include <gtest/gtest.h>

#include <functional>

#include "absl/strings/str_join.h"

#include "server/search/simulate.h"
#include "server/search/strategy.h"
#include "core/serving.h"

namespace tuned::search {
namespace {

TEST(BudgetTest, ParsesSecondsAndConfigs) {
  EXPECT_EQ(ParseBudget("10s")->seconds, 10);
  EXPECT_EQ(ParseBudget("1.5s")->seconds, 1.5);
  EXPECT_EQ(ParseBudget("2m")->seconds, 120);
  EXPECT_EQ(ParseBudget("64")->configs, 64);
  EXPECT_TRUE(ParseBudget("")->unlimited());
  for (const char* bad : {"0", "-3", "0s", "-1s", "10x", "1.5", "s", "ten", "10 h", "nans"}) {
    auto b = ParseBudget(bad);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(CheckStrategy("model").ok());
  EXPECT_TRUE(CheckStrategy("exhaustive").ok());
  EXPECT_EQ(CheckStrategy("random").code(), absl::StatusCode::kInvalidArgument);
}

class StrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_.set_name("NVIDIA H100 80GB HBM3");
    std::vector<Pruned> pruned;
    valid_ = family_.ValidSpace(device_, &pruned);
    auto loaded = LoadResultsDir(TUNED_STRATEGY_DATA, family_, nullptr);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    shapes_ = *loaded;
    ASSERT_EQ(shapes_.size(), 4u);
  }
  /// The records of every fixture shape but `i`.
  std::vector<Record> Others(size_t i) const {
    std::vector<Record> r;
    for (size_t j = 0; j < shapes_.size(); ++j) {
      if (j != i) r.insert(r.end(), shapes_[j].records.begin(), shapes_[j].records.end());
    }
    return r;
  }
  /// The model strategy's first round for 4096^3 (fixture shape 3),
  /// learning from the other three, with `compiled` as the compile cache.
  std::vector<Config> FirstRound(ModelOptions options,
                                 std::function<bool(const Config&)> compiled) const {
    auto s = MakeStrategy("model", family_, device_, Others(3), 2, options);
    RoundInput in;
    in.family = &family_;
    in.device = device_;
    in.shape = shapes_[3].shape;
    in.valid = valid_;
    in.compiled = std::move(compiled);
    return (*s)->NextRound(in);
  }
  static double Best(const ShapeRecord& s) {
    double best = 1e30;
    for (const auto& [name, ms] : s.ms) best = std::min(best, ms);
    return best;
  }
  const Family& family_ = GemmFamily();
  v1::Device device_ = Sm90ReferenceDevice();
  std::vector<Config> valid_;
  std::vector<ShapeRecord> shapes_;
};

TEST_F(StrategyTest, ExhaustiveIsTheSpaceThenThreeRoundsOfNeighbours) {
  auto s = MakeStrategy("exhaustive", family_, device_, {});
  ASSERT_TRUE(s.ok());
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.shape = {1024, 1024, 1024};
  in.valid = valid_;
  const auto first = (*s)->NextRound(in);
  ASSERT_EQ(first.size(), valid_.size());
  EXPECT_TRUE(first == valid_);  // the pruned space, in its order
  for (const Config& c : first) in.measured.insert(family_.ConfigName(c));
  in.best = {valid_[5], valid_[7], valid_[9]};
  in.best_ms = {1, 2, 3};
  for (in.round = 1; in.round <= 3; ++in.round) {
    std::set<std::string> refined;
    const auto expected =
        Refinements(family_, device_, {valid_[5], valid_[7]}, in.measured, &refined);
    EXPECT_TRUE((*s)->NextRound(in) == expected) << "round " << in.round;
  }
  in.round = 4;
  EXPECT_TRUE((*s)->NextRound(in).empty());
}

TEST_F(StrategyTest, ModelRefinesTheMostPromisingNeighboursOfItsBest) {
  // Rounds 2-4: the neighbours of the best 3 (none measured yet), at most
  // ModelOptions::refine_max of them; none after refine_rounds. By default
  // (refine_compiled) only neighbours compiled already: those in the compile
  // cache where the runner tells (RoundInput::compiled; a config only the
  // prior measured is not), else those measured on another shape; without
  // it, any. A shape whose configs take compile_hidden_seconds or more to
  // measure takes any neighbour too: its compiles hide behind its measuring.
  std::set<std::string> seen;
  for (const Record& r : Others(1)) seen.insert(family_.ConfigName(r.config));
  enum Mode { kAny, kSeen, kCached, kSlow };
  for (Mode mode : {kAny, kSeen, kCached, kSlow}) {
    SCOPED_TRACE(mode == kAny    ? "any neighbour"
                 : mode == kSeen ? "seen"
                 : mode == kCached ? "cached"
                                   : "slow to measure");
    ModelOptions options;
    options.refine_compiled = mode != kAny;
    auto s = MakeStrategy("model", family_, device_, Others(1), 2, options);
    ASSERT_TRUE(s.ok());
    RoundInput in;
    in.family = &family_;
    in.device = device_;
    in.shape = shapes_[1].shape;
    in.valid = valid_;
    // The best 3 (measured): three of another shape's fastest, whose
    // neighbours other shapes measured in part.
    std::vector<Record> other = shapes_[0].records;
    std::sort(other.begin(), other.end(), [](const Record& a, const Record& b) { return a.ms < b.ms; });
    in.best = {other[0].config, other[1].config, other[2].config};
    for (const Config& c : in.best) in.measured.insert(family_.ConfigName(c));
    // 1 ms: 0.05 s a config to measure; 30 ms: 0.6 s.
    in.best_ms = mode == kSlow ? std::vector<double>{30, 31, 32} : std::vector<double>{1, 2, 3};
    ASSERT_EQ(MeasureSeconds(1, 1, options.search_repetitions) < options.compile_hidden_seconds, true);
    ASSERT_EQ(MeasureSeconds(30, 30, options.search_repetitions) >= options.compile_hidden_seconds, true);
    std::set<std::string> refined;
    ASSERT_EQ(options.refine_top, 3);
    const auto all = Refinements(family_, device_, {other[0].config, other[1].config, other[2].config},
                                 in.measured, &refined);
    // Compiled: kSeen the seen neighbours; kCached two seen and two unseen
    // ones that the compile cache holds (the other seen ones it lacks).
    std::set<std::string> neighbours, compiled;
    int cached_seen = 0, cached_unseen = 0, seen_neighbours = 0;
    for (const Config& c : all) {
      const std::string name = family_.ConfigName(c);
      neighbours.insert(name);
      seen_neighbours += seen.count(name) != 0;
      if (mode == kSeen && seen.count(name) != 0) compiled.insert(name);
      if (mode == kCached) {
        int& n = seen.count(name) != 0 ? cached_seen : cached_unseen;
        if (n < 2) {
          ++n;
          compiled.insert(name);
        }
      }
    }
    if (mode == kCached) {
      ASSERT_EQ(cached_seen, 2);
      ASSERT_EQ(cached_unseen, 2);
      ASSERT_GT(seen_neighbours, 2);
    }
    if (mode == kCached || mode == kSlow) {
      in.compiled = [&](const Config& c) { return compiled.count(family_.ConfigName(c)) != 0; };
    }
    // The fixture has neighbours of both sorts, so the option decides.
    ASSERT_GT(neighbours.size(), static_cast<size_t>(options.refine_max));
    if (mode == kSeen || mode == kCached) {
      ASSERT_GT(compiled.size(), 0u);
      ASSERT_LT(compiled.size(), static_cast<size_t>(options.refine_max));
    }
    in.round = 1;
    const auto next = (*s)->NextRound(in);
    if (mode == kAny || mode == kSlow) {
      EXPECT_EQ(next.size(), static_cast<size_t>(options.refine_max));
      for (const Config& c : next) EXPECT_EQ(neighbours.count(family_.ConfigName(c)), 1u);
    } else {
      EXPECT_EQ(next.size(), compiled.size());
      for (const Config& c : next) EXPECT_EQ(compiled.count(family_.ConfigName(c)), 1u);
    }
    in.round = options.refine_rounds + 1;
    EXPECT_TRUE((*s)->NextRound(in).empty());
  }
}

TEST_F(StrategyTest, ModelWithoutKnowledgeIsExhaustive) {
  auto s = MakeStrategy("model", family_, device_, {});
  ASSERT_TRUE(s.ok());
  EXPECT_NE((*s)->Describe().find("exhaustive instead"), std::string::npos);
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.shape = {1024, 1024, 1024};
  in.valid = valid_;
  EXPECT_TRUE((*s)->NextRound(in) == valid_);
}

TEST_F(StrategyTest, ModelOnTwoKnownShapesIsExhaustive) {
  // Two shapes (240 measurements) are under the 3 shapes the model needs;
  // three (360) are enough.
  std::vector<Record> two = shapes_[0].records;
  two.insert(two.end(), shapes_[1].records.begin(), shapes_[1].records.end());
  auto s = MakeStrategy("model", family_, device_, two);
  ASSERT_TRUE(s.ok());
  EXPECT_NE((*s)->Describe().find("too little known"), std::string::npos) << (*s)->Describe();
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.shape = shapes_[3].shape;
  in.valid = valid_;
  EXPECT_TRUE((*s)->NextRound(in) == valid_);
  auto three = MakeStrategy("model", family_, device_, Others(3));
  ASSERT_TRUE(three.ok());
  EXPECT_EQ((*three)->Describe().find("exhaustive instead"), std::string::npos)
      << (*three)->Describe();
  EXPECT_LT((*three)->NextRound(in).size(), valid_.size());
}

TEST_F(StrategyTest, ModelSweepsAShapeOfAnUntunedAlignmentClassExhaustively) {
  // The fixture's shapes are all multiples of 4: their kernels took the
  // 16-byte load paths, so for 4097^3 (4-byte paths) the model would
  // extrapolate; it sweeps the space instead, and stays the model for an
  // aligned shape.
  EXPECT_EQ(AlignmentClass({4097, 4096, 64}), (std::vector<bool>{false, true, true}));
  for (const auto& s : shapes_) {
    EXPECT_EQ(AlignmentClass(s.shape), std::vector<bool>(3, true)) << Family::ShapeString(s.shape);
  }
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.valid = valid_;
  in.shape = {4097, 4097, 4097};
  auto odd = MakeStrategy("model", family_, device_, Others(3));
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE((*odd)->NextRound(in) == valid_);
  EXPECT_NE((*odd)->Describe().find("alignment class"), std::string::npos) << (*odd)->Describe();
  in.shape = {4096, 4096, 4096};
  auto even = MakeStrategy("model", family_, device_, Others(3));
  ASSERT_TRUE(even.ok());
  EXPECT_LT((*even)->NextRound(in).size(), valid_.size() / 2);
  EXPECT_EQ((*even)->Describe().find("exhaustive instead"), std::string::npos);
}

TEST_F(StrategyTest, ModelSweepsAShapeWithOtherKernelKindsExhaustively) {
  // 8192x4x8192's space holds the gemv kind's rows kernels, which none of
  // the fixture's (larger) shapes has: the model would extrapolate to a
  // kind it never saw, so it sweeps the space instead.
  const Shape gemv = {8192, 4, 8192};
  const std::set<std::string> big =
      KernelKinds(family_, family_.ValidSpace(device_, Shape{4096, 4096, 4096}, nullptr));
  const std::set<std::string> small = KernelKinds(family_, family_.ValidSpace(device_, gemv, nullptr));
  EXPECT_TRUE(big.count("sgemm_warp")) << absl::StrJoin(big, " ");
  EXPECT_FALSE(big.count("sgemm_gemv_rows")) << absl::StrJoin(big, " ");
  EXPECT_TRUE(small.count("sgemm_gemv_rows")) << absl::StrJoin(small, " ");
  EXPECT_EQ(AlignmentClass(gemv), std::vector<bool>(3, true));
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.shape = gemv;
  in.valid = family_.ValidSpace(device_, gemv, nullptr);
  auto model = MakeStrategy("model", family_, device_, Others(3));
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE((*model)->NextRound(in) == in.valid);
  EXPECT_NE((*model)->Describe().find("kernel kinds"), std::string::npos) << (*model)->Describe();
}

TEST_F(StrategyTest, ModelFindsTheWinnerInLessTimeThanExhaustive) {
  // The search's bars on the fixture: within 2% of the record's best, in less
  // simulated GPU time than the exhaustive strategy, and a median under 10 s.
  std::vector<double> seconds;
  for (size_t i = 0; i < shapes_.size(); ++i) {
    auto s = MakeStrategy("model", family_, device_, Others(i));
    ASSERT_TRUE(s.ok());
    const Outcome o = Simulate(**s, family_, device_, valid_, shapes_[i], {});
    auto e = MakeStrategy("exhaustive", family_, device_, {});
    const Outcome x = Simulate(**e, family_, device_, valid_, shapes_[i], {});
    const double regret = o.winner_ms / Best(shapes_[i]) - 1;
    const std::string shape = Family::ShapeString(shapes_[i].shape);
    std::printf("%s: regret %.4f, %d configs, %.2f s simulated (exhaustive %.2f s)\n",
                shape.c_str(), regret, o.measured + o.unmeasurable, o.seconds, x.seconds);
    EXPECT_LE(regret, 0.02) << shape << ": " << o.winner;
    EXPECT_LT(o.seconds, x.seconds) << shape;
    seconds.push_back(o.seconds);
  }
  EXPECT_LT(tuned::Median(seconds), 10);
}

TEST_F(StrategyTest, ModelFirstRoundIsTheNearestWinnersAndTheBestPredicted) {
  // ModelOptions::first_round configs the model predicts fastest, besides
  // the winners of the nearest shapes (near_shapes x near_winners at most).
  auto first_round = [&](size_t i, ModelOptions options) {
    auto s = MakeStrategy("model", family_, device_, Others(i), 2, options);
    RoundInput in;
    in.family = &family_;
    in.device = device_;
    in.shape = shapes_[i].shape;
    in.valid = valid_;
    return (*s)->NextRound(in);
  };
  ModelOptions options;
  const size_t most = options.first_round + options.near_shapes * options.near_winners;
  // Sized by count alone (first_seconds 0), and by the predicted cost: more
  // for the cheap 1024^3, where 40 configs take well under first_seconds.
  ModelOptions by_count = options;
  by_count.first_seconds = 0;
  for (size_t i : {1, 3}) {  // 1024^3, 4096^3
    const auto round = first_round(i, by_count);
    EXPECT_GE(round.size(), static_cast<size_t>(options.first_round));
    EXPECT_LE(round.size(), most);
  }
  const auto cheap = first_round(1, options);
  EXPECT_GT(cheap.size(), most);
  EXPECT_LT(cheap.size(), valid_.size());
  options.first_round = 4;
  options.first_seconds = 0;
  const auto tiny = first_round(1, options);
  EXPECT_GE(tiny.size(), 4u);
  EXPECT_LE(tiny.size(), static_cast<size_t>(4 + options.near_shapes * options.near_winners));
  // The nearest shapes' winners are in it, whatever the model says.
  std::set<std::string> names;
  for (const Config& c : tiny) names.insert(family_.ConfigName(c));
  for (size_t j : {0, 2, 3}) {
    std::string winner;
    double ms = 1e30;
    for (const auto& [name, m] : shapes_[j].ms) {
      if (m < ms) ms = m, winner = name;
    }
    EXPECT_EQ(names.count(winner), 1u) << winner;
  }
}

TEST_F(StrategyTest, ModelFirstRoundUnderABudgetKeepsEachNearestShapesWinner) {
  // A config budget cuts the first round from its front: each nearest
  // shape's winner comes first, whatever the model predicts for it.
  const size_t i = 1;  // 1024^3 learns from the fixture's other shapes
  auto s = MakeStrategy("model", family_, device_, Others(i));
  ASSERT_TRUE(s.ok());
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.shape = shapes_[i].shape;
  in.valid = valid_;
  const size_t others = shapes_.size() - 1;
  in.budget.configs = static_cast<int64_t>(others);
  const std::vector<Config> round = (*s)->NextRound(in);
  std::set<std::string> names;
  for (const Config& c : round) names.insert(family_.ConfigName(c));
  std::set<std::string> winners;
  for (size_t j = 0; j < shapes_.size(); ++j) {
    if (j == i) continue;
    std::string winner;
    double ms = 1e30;
    for (const auto& [name, m] : shapes_[j].ms) {
      if (m < ms) ms = m, winner = name;
    }
    winners.insert(winner);
  }
  ASSERT_LE(winners.size(), others);
  EXPECT_EQ(round.size(), others);
  for (const std::string& w : winners) EXPECT_EQ(names.count(w), 1u) << w;
}

TEST_F(StrategyTest, ModelFirstRoundWaitsOnOneWaveOfCompilesAtMostAndNoneOnceEnoughAreCompiled) {
  // Nothing compiled (a fresh install learning from a prior): besides the
  // nearest shapes' winners, a first round takes first_uncompiled configs at
  // most, unless its configs take compile_hidden_seconds or more to measure
  // (4096^3's take ~0.06 s: hidden at 0.01 s, not at the default 0.15 s).
  // Once first_round configs the model knows are compiled, it waits on none.
  auto none = [](const Config&) { return false; };
  ModelOptions options;
  const size_t winners = options.near_shapes * options.near_winners;
  const size_t waiting = FirstRound(options, none).size();
  EXPECT_GE(waiting, static_cast<size_t>(options.first_uncompiled));
  EXPECT_LE(waiting, options.first_uncompiled + winners);
  // All compiled but the first 8 of that round (nearest winners among them).
  const std::vector<Config> all = FirstRound(options, [](const Config&) { return true; });
  ASSERT_GT(all.size(), 8u);
  std::set<std::string> missing;
  for (size_t i = 0; i < 8; ++i) missing.insert(family_.ConfigName(all[i]));
  auto most = [&](const Config& c) { return missing.count(family_.ConfigName(c)) == 0; };
  const std::vector<Config> ready = FirstRound(options, most);
  EXPECT_GE(ready.size(), static_cast<size_t>(options.first_round));
  for (const Config& c : ready) EXPECT_EQ(missing.count(family_.ConfigName(c)), 0u);
  options.compile_hidden_seconds = 0.01;
  const size_t hidden = FirstRound(options, none).size();
  EXPECT_GE(hidden, static_cast<size_t>(options.first_round));
  EXPECT_LE(hidden, options.first_round + winners);
  size_t taken = 0;
  for (const Config& c : FirstRound(options, most)) taken += missing.count(family_.ConfigName(c));
  EXPECT_EQ(taken, missing.size());
}

TEST_F(StrategyTest, ModelFirstRoundCompilesWhereWhatItRanksFirstIsNotCompiled) {
  // Compiled: every config but those the model ranks first (a daemon that
  // holds another math mode's kernels). The round must not fall back on the
  // compiled configs alone: it compiles first_uncompiled of its best.
  const ModelOptions options;
  const std::vector<Config> ranked = FirstRound(options, [](const Config&) { return true; });
  ASSERT_GE(ranked.size(), static_cast<size_t>(options.first_round));
  std::set<std::string> best;
  for (const Config& c : ranked) best.insert(family_.ConfigName(c));
  auto others = [&](const Config& c) { return best.count(family_.ConfigName(c)) == 0; };
  size_t of_best = 0;
  for (const Config& c : FirstRound(options, others)) of_best += best.count(family_.ConfigName(c));
  EXPECT_GE(of_best, static_cast<size_t>(options.first_uncompiled));
}

TEST_F(StrategyTest, ConfigBudgetIsRespected) {
  for (const char* name : {"model", "exhaustive"}) {
    for (int64_t n : {1, 5, 16}) {
      auto s = MakeStrategy(name, family_, device_, Others(1));
      const Outcome o = Simulate(**s, family_, device_, valid_, shapes_[1], {0, n});
      EXPECT_EQ(o.measured + o.unmeasurable, n) << name << " " << n;
    }
  }
}

TEST_F(StrategyTest, SecondsBudgetStopsTheRounds) {
  // 4096^3: a config costs ~0.05-0.6 s simulated, the model's search ~8 s.
  for (double seconds : {0.5, 2.0, 4.0}) {
    auto s = MakeStrategy("model", family_, device_, Others(3));
    const Outcome o = Simulate(**s, family_, device_, valid_, shapes_[3], {seconds, 0});
    EXPECT_GT(o.measured, 0);
    // Rounds are sized by predicted cost, so a round may overrun by what the
    // prediction missed; never by more than a round's last configs.
    EXPECT_LE(o.search_seconds, seconds * 1.5 + 0.7) << seconds;
  }
  // Spent: no round at all.
  auto s = MakeStrategy("model", family_, device_, Others(3));
  RoundInput in;
  in.family = &family_;
  in.device = device_;
  in.shape = shapes_[3].shape;
  in.valid = valid_;
  in.budget.seconds = 2;
  in.spent_seconds = 2;
  EXPECT_TRUE((*s)->NextRound(in).empty());
  in.spent_seconds = 1.9;
  EXPECT_FALSE((*s)->NextRound(in).empty());
}

TEST(WithinBudgetTest, CutsByPredictedCost) {
  const Family& family = GemmFamily();
  std::vector<Pruned> pruned;
  RoundInput in;
  in.family = &family;
  in.device = Sm90ReferenceDevice();
  in.valid = family.ValidSpace(in.device, &pruned);
  in.budget.seconds = 1;
  // Kernels of 10 ms, none timed yet: the first costs ~0.23 s (full timing,
  // 20 runs), each one after at the same time the same: 4 fit in 1 s.
  const std::vector<Config> some(in.valid.begin(), in.valid.begin() + 10);
  const auto cut = WithinBudget(some, std::vector<double>(10, 10.0), in);
  EXPECT_EQ(cut.size(), 4u);
  double cost = 0, best = 0;
  for (size_t i = 0; i < cut.size(); ++i) {
    cost += MeasureSeconds(10.0, best);
    best = 10;
  }
  EXPECT_LE(cost, 1.0);
  // The model's short timings (20 runs at most) buy more in the same budget:
  // kernels of 1 ms cost 200 runs' worth... 100 at most in full, 20 short.
  EXPECT_EQ(SearchRepetitions(kExhaustive), kMaxRepetitions);
  // The judging's segments: as many as fit in 400 ms of GPU time, 1 to 4.
  EXPECT_EQ(RetimeSegments(5.6), 4);     // 512^3: 103 rounds of 3 runs of ~18 us
  EXPECT_EQ(RetimeSegments(100.0), 4);
  EXPECT_EQ(RetimeSegments(133.0), 3);
  EXPECT_EQ(RetimeSegments(200.0), 2);
  EXPECT_EQ(RetimeSegments(201.0), 1);
  EXPECT_EQ(RetimeSegments(4000.0), 1);  // 8192^3
  EXPECT_EQ(RetimeSegments(0.0), 4);
  EXPECT_EQ(SearchRepetitions(kModel), 20);
  EXPECT_NEAR(MeasureSeconds(1.0, 1.0), kConfigOverheadS + (1 + 101 * 1.077) / 1000, 1e-9);
  EXPECT_NEAR(MeasureSeconds(1.0, 1.0, 20), kConfigOverheadS + (1 + 21 * 1.077) / 1000, 1e-9);
  const auto full = WithinBudget(some, std::vector<double>(10, 1.0), in).size();
  EXPECT_EQ(WithinBudget(some, std::vector<double>(10, 1.0), in, 20).size(), 10u);
  EXPECT_LT(full, 10u);
  // A screened config (over 1.3x the best) keeps its 3 runs either way.
  EXPECT_EQ(MeasureSeconds(2.0, 1.0, 20), MeasureSeconds(2.0, 1.0));
  // At least one while anything is left, however dear.
  EXPECT_EQ(WithinBudget(some, std::vector<double>(10, 1000.0), in).size(), 1u);
  in.measured.insert(family.ConfigName(some[0]));
  EXPECT_EQ(WithinBudget(some, std::vector<double>(10, 1000.0), in).front(), some[1]);
}

}  // namespace
}  // namespace tuned::search
