// The store's record of a finalist's judging on both backends
// (db/store_judging.cc): a judged time with its interval, the SM clock.
#include <string>

#include "tests/store_test.h"

namespace tuned {
namespace {

TEST_P(StoreTest, SetJudgedReplacesAnOkTimeAndTheBestWithItsInterval) {
  const int64_t id = NewJob(Sgemm(128, 128, 128));
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("a", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("b", v1::MEASUREMENT_OK, 1.1), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("bad", v1::MEASUREMENT_WRONG_ANSWER, 0), nullptr).ok());
  EXPECT_EQ((*store_->Best(dev_, Sgemm(128, 128, 128)))->measurement.config().name(), "a");
  const StoredSpeedup judged{.speedup = 0.9, .ci_low = 0.88, .ci_high = 0.92, .pairs = 40, .note = ""};
  ASSERT_TRUE(store_->SetJudged(id, "a", {1.2, 3.5, "first time 1.0000 ms"}, judged).ok());
  ASSERT_TRUE(store_->SetJudged(id, "b", {1.1, 3.6, ""}, judged).ok());
  auto best = store_->Best(dev_, Sgemm(128, 128, 128));
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*best)->measurement.config().name(), "b");  // a is now slower
  EXPECT_EQ((*best)->speedup.pairs, 40);  // stored with the time, in one transaction
  EXPECT_DOUBLE_EQ((*best)->speedup.ci_low, 0.88);
  auto all = store_->ListMeasurements(dev_, Sgemm(128, 128, 128), 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[1].config().name(), "a");
  EXPECT_DOUBLE_EQ((*all)[1].median_ms(), 1.2);
  EXPECT_EQ((*all)[1].message(), "first time 1.0000 ms");
  EXPECT_TRUE(absl::IsNotFound(store_->SetJudged(id, "bad", {1, 1, ""}, judged)));
  EXPECT_TRUE(absl::IsNotFound(store_->SetJudged(id, "none", {1, 1, ""}, judged)));
}

// A judged time and a search time are not compared: a config the judging
// left unjudged (its search time 1-2% optimistic) is not the best over the
// judged ones, however fast its search time, in Best and the job's best.
TEST_P(StoreTest, TheJudgedConfigsComeBeforeUnjudgedOnesAsTheBest) {
  const v1::Problem p = Sgemm(160, 160, 160);
  const int64_t id = NewJob(p);
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("judged", v1::MEASUREMENT_OK, 1.00), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("unjudged", v1::MEASUREMENT_OK, 1.01), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("slower", v1::MEASUREMENT_OK, 1.05), nullptr).ok());
  const StoredSpeedup interval{.speedup = 1.07, .ci_low = 1.06, .ci_high = 1.08, .pairs = 400, .note = ""};
  ASSERT_TRUE(store_->SetJudged(id, "judged", {1.02, 3.5, "judged"}, interval).ok());
  ASSERT_TRUE(store_->SetJudged(id, "slower", {1.04, 3.4, "judged"}, interval).ok());
  auto best = store_->Best(dev_, p);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*best)->measurement.config().name(), "judged");
  EXPECT_DOUBLE_EQ((*best)->measurement.median_ms(), 1.02);
  EXPECT_EQ((*best)->speedup.pairs, 400);
  auto job = store_->GetJob(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->best().config().name(), "judged");
  // With none judged, the fastest.
  const v1::Problem q = Sgemm(176, 176, 176);
  const int64_t other = NewJob(q);
  ASSERT_TRUE(store_->AddMeasurement(other, Meas("x", v1::MEASUREMENT_OK, 1.2), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(other, Meas("y", v1::MEASUREMENT_OK, 1.1), nullptr).ok());
  EXPECT_EQ((*store_->Best(dev_, q))->measurement.config().name(), "y");
  EXPECT_EQ(store_->GetJob(other)->best().config().name(), "y");
}

// Schema 4: a measurement's SM clock and low-clock mark, and a finalist's
// judging (speedup, interval, pairs, note) reach Best and ListMeasurements.
TEST_P(StoreTest, ClockAndSpeedupRoundTrip) {
  const int64_t id = NewJob(Sgemm(192, 192, 192));
  v1::Measurement slow = Meas("slow", v1::MEASUREMENT_OK, 2.0);
  slow.set_sm_clock_mhz(1155);
  slow.set_clock_low(true);
  ASSERT_TRUE(store_->AddMeasurement(id, slow, nullptr).ok());
  v1::Measurement fast = Meas("fast", v1::MEASUREMENT_OK, 1.0);
  fast.set_sm_clock_mhz(1980);
  const KernelBinary binary{"src", "_Z4fast", std::string("\x7f" "ELF\0", 5), "ptx", "log"};
  ASSERT_TRUE(store_->AddMeasurement(id, fast, &binary).ok());
  auto all = store_->ListMeasurements(dev_, Sgemm(192, 192, 192), 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].sm_clock_mhz(), 1980);
  EXPECT_FALSE((*all)[0].clock_low());
  EXPECT_EQ((*all)[1].sm_clock_mhz(), 1155);
  EXPECT_TRUE((*all)[1].clock_low());

  auto before = store_->Best(dev_, Sgemm(192, 192, 192));
  ASSERT_TRUE(before.ok());
  EXPECT_EQ((*before)->speedup.pairs, 0);  // never judged
  EXPECT_EQ((*before)->speedup.note, "");
  ASSERT_TRUE(store_->SetSpeedup(id, "fast",
                                 StoredSpeedup{.speedup = 1.07, .ci_low = 1.05, .ci_high = 1.09,
                                               .pairs = 30, .note = "", .sm_clock_mhz = 1965,
                                               .clock_low = false})
                  .ok());
  auto judged = store_->Best(dev_, Sgemm(192, 192, 192));  // the cache follows the write
  ASSERT_TRUE(judged.ok());
  EXPECT_DOUBLE_EQ((*judged)->speedup.speedup, 1.07);
  EXPECT_DOUBLE_EQ((*judged)->speedup.ci_low, 1.05);
  EXPECT_DOUBLE_EQ((*judged)->speedup.ci_high, 1.09);
  EXPECT_EQ((*judged)->speedup.pairs, 30);
  EXPECT_EQ((*judged)->measurement.sm_clock_mhz(), 1965);
  auto bin = store_->MeasurementBinary(id, "fast");
  ASSERT_TRUE(bin.ok()) << bin.status();
  EXPECT_EQ(bin->cubin, binary.cubin);
  EXPECT_EQ(bin->entry, "_Z4fast");
  EXPECT_TRUE(absl::IsNotFound(store_->MeasurementBinary(id, "slow").status()));  // stored none

  // A judging that computed no speedup keeps its reason; the interval goes.
  ASSERT_TRUE(store_->SetSpeedup(id, "fast",
                                 StoredSpeedup{.speedup = 0, .ci_low = 0, .ci_high = 0, .pairs = 0,
                                               .note = "cuBLAS timed at 1155 MHz", .sm_clock_mhz = 1155,
                                               .clock_low = true})
                  .ok());
  auto low = store_->Best(dev_, Sgemm(192, 192, 192));
  ASSERT_TRUE(low.ok());
  EXPECT_EQ((*low)->speedup.pairs, 0);
  EXPECT_DOUBLE_EQ((*low)->speedup.speedup, 0);
  EXPECT_EQ((*low)->speedup.note, "cuBLAS timed at 1155 MHz");
  EXPECT_TRUE((*low)->measurement.clock_low());
  EXPECT_TRUE(absl::IsNotFound(store_->SetSpeedup(id, "none", StoredSpeedup{})));
}

}  // namespace
}  // namespace tuned
