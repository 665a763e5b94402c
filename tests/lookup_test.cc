// GetBest while the daemon works, through a real channel (Unix socket) with
// the real worker in compile-only mode: a new best is served as soon as the
// write that records it returns, and look-ups are answered while a write of
// the store waits behind another writer's transaction.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "db/store.h"
#include "tests/service_fixture.h"
#include "tuned/client.h"

namespace tuned {
namespace {

class LookupTest : public ServiceFixture {
 protected:
  /// A job of `problem` with one OK measurement of SGEMM's last valid config
  /// named `name` at `ms`; returns the job's id.
  int64_t Tuned(const v1::Problem& problem, const std::string& name, double ms) {
    auto job = store_->CreateJob(DeviceId(), problem, 1, 0);
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(Measured(*job, name, ms));
    return job.value_or(0);
  }
  bool Measured(int64_t job, const std::string& name, double ms) {
    v1::Measurement m = SgemmMeasurement(worker_->device());
    m.mutable_config()->set_name(name);
    m.set_median_ms(ms);
    return store_->AddMeasurement(job, m, &kBinary).ok();
  }
  int64_t DeviceId() { return *store_->UpsertDevice(worker_->device()); }
  /// The served config's name, or the status's text.
  std::string Served(const v1::Problem& problem) {
    auto best = client_->GetBest(problem);
    return best.ok() ? best->measurement().config().name() : best.status().ToString();
  }
};

TEST_F(LookupTest, ANewBestIsServedAsSoonAsItIsRecorded) {
  const v1::Problem p = SgemmProblem(1024, 1024, 1024);
  const int64_t job = Tuned(p, "slow", 0.08);
  EXPECT_EQ(Served(p), "slow");
  EXPECT_EQ(Served(p), "slow");  // held

  // Each write that changes the best shows in the next look-up.
  ASSERT_TRUE(Measured(job, "fast", 0.05));
  EXPECT_EQ(Served(p), "fast");
  ASSERT_TRUE(store_->SetJobBaseline(job, 0.04, 0, "cuBLAS").ok());
  auto best = client_->GetBest(p);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_DOUBLE_EQ(best->baseline_ms(), 0.04);
  EXPECT_TRUE(best->use_baseline());
  const StoredSpeedup judged{.speedup = 1.3, .ci_low = 1.2, .ci_high = 1.4, .pairs = 40, .note = ""};
  ASSERT_TRUE(store_->SetJudged(job, "slow", {0.03, 0, "", 0.04}, judged).ok());
  best = client_->GetBest(p);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->measurement().config().name(), "slow");  // judged, and faster now
  EXPECT_EQ(best->speedup_pairs(), 40);
  EXPECT_FALSE(best->use_baseline()) << best->serving_reason();

  // Another problem's new best leaves this answer as it was, and a nearest
  // shape's answer follows the tuned shapes.
  const v1::Problem near = SgemmProblem(1000, 1000, 1000);
  best = client_->GetBest(near);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->tuned_shape(0), 1024);
  Tuned(SgemmProblem(999, 999, 999), "closer", 0.07);
  best = client_->GetBest(near);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->tuned_shape(0), 999);
  EXPECT_EQ(best->measurement().config().name(), "closer");
  EXPECT_EQ(Served(p), "slow");

  // An imported kernel that beats the best (judged as it was) is served at once.
  v1::BestKernel imported = *client_->GetBest(p);
  imported.mutable_measurement()->set_median_ms(0.01);
  ASSERT_TRUE(client_->ImportKernel(imported).ok());
  best = client_->GetBest(p);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_DOUBLE_EQ(best->measurement().median_ms(), 0.01);
}

// The store's writer held up: another connection holds SQLite's write lock
// (for 3 s at most) and a write of the daemon's store waits behind it. A
// best held in memory, one read for the first time and a nearest shape's
// are answered meanwhile, each within 0.5 s.
TEST_F(LookupTest, GetBestAnswersWhileTheStoresWriterWaits) {
  const v1::Problem held = SgemmProblem(1024, 1024, 1024);
  const v1::Problem unread = SgemmProblem(2048, 2048, 2048);
  const v1::Problem near = SgemmProblem(1000, 1000, 1000);
  Tuned(held, "held", 0.05);
  Tuned(unread, "unread", 0.4);
  EXPECT_EQ(Served(held), "held");
  Tuned(SgemmProblem(64, 64, 64), "other", 0.01);  // another problem's best moves on
  const int64_t job = *store_->CreateJob(DeviceId(), SgemmProblem(32, 32, 32), 1, 0);

  sqlite3* blocker = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "t.db").c_str(), &blocker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(blocker);
  std::promise<void> looked_up;
  std::thread release([&, done = looked_up.get_future()] {
    done.wait_for(std::chrono::seconds(3));
    sqlite3_exec(blocker, "ROLLBACK", nullptr, nullptr, nullptr);
  });
  std::atomic<bool> written{false};
  std::thread writer([&] {
    EXPECT_TRUE(Measured(job, "written", 0.01));
    written = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the write waits by now

  std::vector<std::pair<std::string, double>> answers;  // config, ms
  for (const v1::Problem& p : {held, unread, near, held}) {
    const auto start = std::chrono::steady_clock::now();
    std::string served = Served(p);
    answers.emplace_back(std::move(served), std::chrono::duration<double, std::milli>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  }
  const bool write_waited = !written;
  looked_up.set_value();
  release.join();
  writer.join();
  sqlite3_close(blocker);

  EXPECT_TRUE(write_waited);
  const std::vector<std::string> want = {"held", "unread", "held", "held"};
  for (size_t i = 0; i < answers.size(); ++i) {
    EXPECT_EQ(answers[i].first, want[i]);
    EXPECT_LT(answers[i].second, 500) << "look-up " << i << " took " << answers[i].second << " ms";
  }
  EXPECT_EQ(Served(SgemmProblem(32, 32, 32)), "written");  // the write went on after
}

}  // namespace
}  // namespace tuned
