// The serving rule (core/serving.h): the bootstrap interval of the speedup
// on synthetic paired samples, the decision, which problems are judged warm
// and which of the flushed and warm speedups decides, and the clock rule
// (core/clock_rule.h). Pure functions: no GPU, no daemon.
#include "core/serving.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/clock_rule.h"
#include "server/worker/clock.h"  // GpuClock without NVML

namespace tuned {
namespace {

// `n` rounds: the kernel takes kernel_ms and the baseline baseline_ms, each
// with independent Gaussian noise of relative size `noise`, plus a per-round
// drift common to both (what pairing cancels).
std::pair<std::vector<double>, std::vector<double>> Rounds(int n, double kernel_ms, double baseline_ms,
                                                           double noise, uint64_t seed = 1) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> k, b;
  for (int i = 0; i < n; ++i) {
    const double drift = 1 + 0.05 * std::sin(i);
    k.push_back(kernel_ms * drift * (1 + noise * z(gen)));
    b.push_back(baseline_ms * drift * (1 + noise * z(gen)));
  }
  return {k, b};
}

TEST(Serving, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({}), 0);
}

TEST(Serving, AClearlyFasterKernelIsServed) {
  auto [k, b] = Rounds(30, 1.0, 1.10, 0.01);  // 10% faster, 1% noise
  auto s = BootstrapSpeedup(k, b);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->pairs, 30);
  EXPECT_NEAR(s->speedup, 1.10, 0.02);
  EXPECT_GT(s->low, 1.0);
  EXPECT_LE(s->low, s->speedup);
  EXPECT_GE(s->high, s->speedup);
  EXPECT_TRUE(SurelyFaster(*s));
  const ServingDecision d = DecideServing({.baseline_is_candidate = true, .kernel_ms = 1.0,
                                           .baseline_ms = 1.1, .baseline_name = "cuBLAS",
                                           .interval = *s, .judging_note = ""});
  EXPECT_FALSE(d.use_baseline) << d.reason;
  EXPECT_NE(d.reason.find("surely faster than cuBLAS"), std::string::npos) << d.reason;
}

TEST(Serving, AnIntervalContainingOneServesTheBaseline) {
  auto [k, b] = Rounds(60, 1.0, 1.003, 0.03);  // 0.3% faster under 3% noise
  auto s = BootstrapSpeedup(k, b);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_LT(s->low, 1.0);
  EXPECT_GT(s->high, 1.0);
  EXPECT_FALSE(SurelyFaster(*s));
  const ServingDecision d =
      DecideServing({.baseline_is_candidate = true, .kernel_ms = 1.0, .baseline_ms = 1.003,
                     .baseline_name = "cuBLAS", .interval = *s, .judging_note = ""});
  EXPECT_TRUE(d.use_baseline);
  EXPECT_NE(d.reason.find("not surely faster"), std::string::npos) << d.reason;
}

TEST(Serving, FewerThan30PairsServeTheBaselineHoweverFast) {
  auto [k, b] = Rounds(29, 1.0, 2.0, 0.001);
  auto s = BootstrapSpeedup(k, b);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->low, 1.5);
  EXPECT_FALSE(SurelyFaster(*s));
  const ServingDecision d = DecideServing({.baseline_is_candidate = true, .kernel_ms = 1.0,
                                           .baseline_ms = 2.0, .baseline_name = "cuBLAS", .interval = *s, .judging_note = ""});
  EXPECT_TRUE(d.use_baseline);
  EXPECT_NE(d.reason.find("only 29 pairs"), std::string::npos) << d.reason;
}

TEST(Serving, AKernelUnder20UsNeedsA5PercentLowEnd) {
  // 3% faster with little noise: surely faster, but under the margin asked
  // of kernels shorter than kShortKernelMs.
  auto [k, b] = Rounds(60, 0.010, 0.0103, 0.002);
  auto s = BootstrapSpeedup(k, b);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(SurelyFaster(*s));
  ASSERT_LT(s->low, kShortKernelMargin);
  ServingInput in{.baseline_is_candidate = true, .kernel_ms = 0.010, .baseline_ms = 0.0103,
                  .baseline_name = "cuBLAS", .interval = *s, .judging_note = ""};
  const ServingDecision short_kernel = DecideServing(in);
  EXPECT_TRUE(short_kernel.use_baseline);
  EXPECT_NE(short_kernel.reason.find("runs 10.0 us, under the 20 us"), std::string::npos)
      << short_kernel.reason;
  // The same speedup at 20 us or longer: served.
  in.kernel_ms = kShortKernelMs;
  EXPECT_FALSE(DecideServing(in).use_baseline) << DecideServing(in).reason;
  // 10% faster at 10 us: its low end passes the margin.
  auto [k2, b2] = Rounds(60, 0.010, 0.0110, 0.002);
  auto fast = BootstrapSpeedup(k2, b2);
  ASSERT_TRUE(fast.ok()) << fast.status();
  in.kernel_ms = 0.010;
  in.interval = *fast;
  EXPECT_FALSE(DecideServing(in).use_baseline) << DecideServing(in).reason;
}

TEST(Serving, ATieIsServedAsTheBaseline) {
  // 0.5% faster, surely (low noise), at 1 ms: under kServingMargin.
  auto [k, b] = Rounds(200, 1.0, 1.005, 0.0005);
  auto s = BootstrapSpeedup(k, b);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(SurelyFaster(*s));
  ASSERT_LT(s->low, kServingMargin);
  const ServingDecision d = DecideServing({.baseline_is_candidate = true, .kernel_ms = 1.0,
                                           .baseline_ms = 1.005, .baseline_name = "cuBLAS",
                                           .interval = *s, .judging_note = ""});
  EXPECT_TRUE(d.use_baseline);
  EXPECT_NE(d.reason.find("a tie"), std::string::npos) << d.reason;
}

TEST(Serving, TheIntervalIsReproducibleWithItsSeedAndContainsThePointEstimate) {
  auto [k, b] = Rounds(40, 1.0, 1.02, 0.02, 7);
  auto first = BootstrapSpeedup(k, b);
  auto second = BootstrapSpeedup(k, b);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->low, second->low);
  EXPECT_EQ(first->high, second->high);
  EXPECT_LE(first->low, first->speedup);
  EXPECT_GE(first->high, first->speedup);
  auto other_seed = BootstrapSpeedup(k, b, kBootstrapResamples, kBootstrapSeed + 1);
  ASSERT_TRUE(other_seed.ok());
  EXPECT_EQ(other_seed->speedup, first->speedup);  // the point estimate needs no randomness
  EXPECT_NEAR(other_seed->low, first->low, 0.01);
  // Recorded samples (ms): the same inputs give these bounds on every platform.
  const std::vector<double> kr = {0.201, 0.199, 0.203, 0.200, 0.198, 0.202, 0.204, 0.197, 0.200, 0.201,
                                  0.199, 0.202, 0.200, 0.198, 0.203, 0.201, 0.200, 0.199, 0.202, 0.200,
                                  0.201, 0.199, 0.203, 0.200, 0.198, 0.202, 0.204, 0.197, 0.200, 0.201};
  std::vector<double> br;
  for (size_t i = 0; i < kr.size(); ++i) br.push_back(kr[(i * 7) % kr.size()] * 1.05);
  auto rec = BootstrapSpeedup(kr, br);
  ASSERT_TRUE(rec.ok());
  EXPECT_NEAR(rec->speedup, 1.05, 1e-9);
  EXPECT_GT(rec->low, 1.0);
  EXPECT_LE(rec->low, rec->speedup);
  EXPECT_GE(rec->high, rec->speedup);
}

TEST(Serving, BadSamplesAreInvalidArgument) {
  EXPECT_EQ(BootstrapSpeedup({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BootstrapSpeedup({1, 2}, {1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BootstrapSpeedup({1, 0}, {1, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BootstrapSpeedup({1, NAN}, {1, 1}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Serving, RowsWithoutAnIntervalKeepTheConservativeRule) {
  ServingInput in{.baseline_is_candidate = true, .kernel_ms = 1.0, .baseline_ms = 1.10,
                  .baseline_name = "cuBLAS", .interval = std::nullopt, .judging_note = ""};
  EXPECT_TRUE(DecideServing(in).use_baseline);  // 1.10x < kLegacyMargin
  in.baseline_ms = 1.2;
  EXPECT_FALSE(DecideServing(in).use_baseline);
  in.judging_note = "cuBLAS timed at 1100 MHz, under 90% of the SM's 1980 MHz";
  const ServingDecision low = DecideServing(in);
  EXPECT_TRUE(low.use_baseline);
  EXPECT_NE(low.reason.find("1100 MHz"), std::string::npos) << low.reason;
  in.judging_note.clear();
  in.baseline_ms = 0;  // nothing to compare with
  EXPECT_FALSE(DecideServing(in).use_baseline);
  in.baseline_is_candidate = false;  // transpose: the copy kernel is never served
  in.baseline_ms = 5;
  EXPECT_FALSE(DecideServing(in).use_baseline);
}

TEST(Serving, NoKernelServesTheBaselineSayingNoneVerified) {
  const ServingDecision d = DecideServing({.baseline_is_candidate = true, .kernel_ms = 0,
                                           .baseline_ms = 0.004, .baseline_name = "cuBLAS TF32",
                                           .interval = std::nullopt, .judging_note = "",
                                           .no_kernel = true});
  EXPECT_TRUE(d.use_baseline);
  EXPECT_EQ(d.reason, "cuBLAS TF32: no kernel passed verification");
}

TEST(Serving, FormatSpeedup) {
  EXPECT_EQ(FormatSpeedup({.speedup = 1.0712, .low = 1.049, .high = 1.093, .pairs = 30}),
            "1.07x (95% CI 1.05\u20131.09, 30 pairs)");
}

// Operands and result within half the L2: judged warm too (the H100's 50 MB
// L2: 1024^3 SGEMM's 12 MB yes, 2048^3's 48 MB no).
TEST(Serving, JudgedWarmOnlyWithinHalfTheL2) {
  const int64_t l2 = 50 * 1024 * 1024;
  const auto sgemm = [](int64_t m, int64_t n, int64_t k) { return 4 * (m * k + k * n + m * n); };
  EXPECT_TRUE(JudgesWarm(sgemm(1000, 1000, 1000), l2));
  EXPECT_TRUE(JudgesWarm(sgemm(1024, 1024, 1024), l2));
  EXPECT_FALSE(JudgesWarm(sgemm(2048, 2048, 2048), l2));
  EXPECT_TRUE(JudgesWarm(l2 / 2, l2));  // exactly half
  EXPECT_FALSE(JudgesWarm(l2 / 2 + 1, l2));
  EXPECT_FALSE(JudgesWarm(0, l2));       // not given: flushed only
  EXPECT_FALSE(JudgesWarm(1024, 0));     // L2 unknown
  EXPECT_FALSE(JudgesWarm(-1, l2));
}

// The judging re-times again only where an unjudged finalist could be
// served over the best judged one: by its search time corrected by the
// judging's bias, or, once the judging ran on a down-clocked GPU, by its
// raw search time (what `best` ranks by).
TEST(Serving, JudgeAgainWhereAnUnjudgedFinalistCouldBeServed) {
  EXPECT_TRUE(JudgeAgain({1.0, 1.1}, {false, false}, 1.0, false));  // none judged yet
  EXPECT_FALSE(JudgeAgain({}, {}, 1.0, false));
  EXPECT_FALSE(JudgeAgain({1.0, 1.1}, {true, true}, 1.0, false));   // all judged
  // The judging times 2% slower than the search: 1.0 judged; 0.99 unjudged
  // (1.0098 corrected) cannot win, 0.97 (0.9894) can.
  EXPECT_FALSE(JudgeAgain({1.0, 0.99}, {true, false}, 1.02, false));
  EXPECT_TRUE(JudgeAgain({1.0, 0.97}, {true, false}, 1.02, false));
  // A down-clocked judging (the factor 1.13): the unjudged 1.5183 ms is the
  // best stored time against the judged 1.6182 ms; corrected it would not be.
  EXPECT_TRUE(JudgeAgain({1.6182, 1.6545, 1.5183}, {true, true, false}, 1.13, true));
  EXPECT_FALSE(JudgeAgain({1.6182, 1.6545, 1.5183}, {true, true, false}, 1.13, false));
  EXPECT_FALSE(JudgeAgain({1.6182, 1.6545, 1.6300}, {true, true, false}, 1.13, true));
  // A judging faster than the search (factor 0.95): the corrected time decides.
  EXPECT_TRUE(JudgeAgain({1.0, 1.04}, {true, false}, 0.95, true));
  EXPECT_FALSE(JudgeAgain({1.0, 1.06}, {true, false}, 0.95, false));
}

// A judging pass on a down-clocked GPU stores no config's time: a config
// judged at full clock keeps that judging, any other its search time.
TEST(Serving, ADownClockedJudgingPassStoresNoTime) {
  EXPECT_EQ(OnJudgingPass(false, false), JudgingPassOutcome::kStore);
  EXPECT_EQ(OnJudgingPass(false, true), JudgingPassOutcome::kStore);  // a full-clock re-judging
  EXPECT_EQ(OnJudgingPass(true, true), JudgingPassOutcome::kKeepJudging);
  EXPECT_EQ(OnJudgingPass(true, false), JudgingPassOutcome::kNoteOnly);
}

// The smaller speedup of the flushed and warm judgings is stored, so that a
// kernel level with cuBLAS flushed and slower warm is not served.
TEST(Serving, TheSlowerOfFlushedAndWarmDecides) {
  const SpeedupInterval flushed{.speedup = 1.10, .low = 1.05, .high = 1.15, .pairs = 400};
  const SpeedupInterval warm_slower{.speedup = 0.85, .low = 0.82, .high = 0.88, .pairs = 400};
  const SpeedupInterval warm_faster{.speedup = 1.20, .low = 1.15, .high = 1.25, .pairs = 400};
  // Not timed warm: the flushed one.
  DecidingSpeedup d = SlowerSpeedup(flushed, std::nullopt);
  EXPECT_FALSE(d.warm);
  EXPECT_DOUBLE_EQ(d.interval.speedup, 1.10);
  d = SlowerSpeedup(flushed, warm_slower);
  EXPECT_TRUE(d.warm);
  EXPECT_DOUBLE_EQ(d.interval.speedup, 0.85);
  EXPECT_FALSE(SurelyFaster(d.interval));
  d = SlowerSpeedup(flushed, warm_faster);
  EXPECT_FALSE(d.warm);
  EXPECT_DOUBLE_EQ(d.interval.low, 1.05);
  EXPECT_TRUE(SurelyFaster(d.interval));
  // Both slower: the slower of the two (warm here); a tie: flushed.
  d = SlowerSpeedup({.speedup = 0.99, .low = 0.97, .high = 1.01, .pairs = 400}, warm_slower);
  EXPECT_TRUE(d.warm);
  d = SlowerSpeedup(flushed, flushed);
  EXPECT_FALSE(d.warm);
  // One interval surely faster and the other not (a wider one, reaching 1):
  // the one that is not decides, whatever the speedups, and serves cuBLAS.
  const SpeedupInterval warm_wide{.speedup = 1.12, .low = 0.98, .high = 1.30, .pairs = 400};
  d = SlowerSpeedup(flushed, warm_wide);
  EXPECT_TRUE(d.warm);
  EXPECT_FALSE(SurelyFaster(d.interval));
  const SpeedupInterval flushed_wide{.speedup = 1.25, .low = 0.99, .high = 1.50, .pairs = 400};
  d = SlowerSpeedup(flushed_wide, warm_faster);
  EXPECT_FALSE(d.warm);
  EXPECT_FALSE(SurelyFaster(d.interval));
  // From paired rounds: level flushed (1.01x), 17% slower warm.
  auto [kf, bf] = Rounds(100, 0.0640, 0.0646, 0.005, 2);
  auto [kw, bw] = Rounds(100, 0.0607, 0.0505, 0.005, 3);
  auto f = BootstrapSpeedup(kf, bf), w = BootstrapSpeedup(kw, bw);
  ASSERT_TRUE(f.ok() && w.ok());
  d = SlowerSpeedup(*f, *w);
  EXPECT_TRUE(d.warm);
  EXPECT_NEAR(d.interval.speedup, 0.0505 / 0.0607, 0.02);
  const ServingDecision served = DecideServing({.baseline_is_candidate = true, .kernel_ms = 0.0640,
                                                .baseline_ms = 0.0646, .baseline_name = "cuBLAS",
                                                .interval = d.interval, .judging_note = ""});
  EXPECT_TRUE(served.use_baseline) << served.reason;
}

// Samples at `mhz` with NVML's clocks event reasons `reasons`.
std::vector<ClockSample> Samples(std::initializer_list<unsigned> mhz,
                                 unsigned long long reasons = kReasonsUnknown) {
  std::vector<ClockSample> out;
  for (unsigned m : mhz) out.push_back({m, reasons});
  return out;
}

TEST(Clock, LowWhenTheMedianSampleSitsUnder90PercentOfTheMax) {
  EXPECT_FALSE(ClockLow(Samples({1980, 1980, 1965}), 1980));
  EXPECT_FALSE(ClockLow(Samples({1800, 1790, 1785}), 1980));  // 90.1%
  EXPECT_TRUE(ClockLow(Samples({1200, 1755, 1200}), 1980));
  EXPECT_FALSE(ClockLow(Samples({345, 1980, 1980}), 1980));  // one idle sample at the start
  EXPECT_FALSE(ClockLow(Samples({345, 345, 1980, 1980}), 1980));  // half: the upper median is high
  EXPECT_TRUE(ClockLow(Samples({345, 345, 345, 1980}), 1980));
  EXPECT_FALSE(ClockLow({}, 1980));                          // unknown: no NVML
  EXPECT_FALSE(ClockLow(Samples({1000}), 0));
  EXPECT_EQ(ClockMhz(Samples({1200, 1980, 1500})), 1500u);
  EXPECT_EQ(ClockMhz({}), 0u);
}

// The H100 at its 700 W under 3xTF32 at 8192^3: 1755-1875 MHz of 1980 with
// the software power cap as NVML's only reason is the GPU's own speed there
// (bench/RESULTS.md wgmma-sass-clock, section 2); other
// reasons, no reason, unknown reasons or a clock under 80% of the maximum
// stay low.
TEST(Clock, ThePowerCapAloneDownTo80PercentIsNotASlowGpu) {
  EXPECT_FALSE(ClockLow(Samples({1755, 1770, 1830}, kReasonSwPowerCap), 1980));
  EXPECT_FALSE(SlowSample({1600, kReasonSwPowerCap}, 1980));  // 80.8%
  EXPECT_TRUE(SlowSample({1560, kReasonSwPowerCap}, 1980));   // 78.8%
  EXPECT_TRUE(SlowSample({1755, kReasonSwPowerCap | 0x40}, 1980));  // and HW thermal slowdown
  EXPECT_TRUE(SlowSample({1755, 0x20}, 1980));                // SW thermal slowdown alone
  EXPECT_TRUE(SlowSample({1755, 0}, 1980));
  EXPECT_TRUE(SlowSample({1755, kReasonsUnknown}, 1980));
  EXPECT_FALSE(SlowSample({1790, 0}, 1980));  // over 90%: never slow
  std::vector<ClockSample> mixed = Samples({1755, 1770}, kReasonSwPowerCap);
  mixed.push_back({1200, 0x8});  // HW slowdown
  mixed.push_back({1200, 0x8});
  EXPECT_FALSE(ClockLow(mixed, 1980));  // 2 slow of 4
  mixed.push_back({1200, 0x8});
  EXPECT_TRUE(ClockLow(mixed, 1980));  // 3 slow of 5
}

TEST(Clock, WithoutNvmlTheClockIsUnknownAndNothingIsSampled) {
  auto clock = GpuClock::Open("GPU-00000000-0000-0000-0000-000000000000");
  if (clock.ok()) GTEST_SKIP() << "NVML is present here (a GPU machine): gpu_tests cover it";
  EXPECT_EQ(clock.status().code(), absl::StatusCode::kFailedPrecondition) << clock.status();
  EXPECT_NE(clock.status().message().find("NVML"), std::string::npos);
  ClockSampler sampler(nullptr);
  sampler.Start();
  EXPECT_TRUE(sampler.Stop().empty());
}

}  // namespace
}  // namespace tuned
