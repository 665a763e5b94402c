// The store on both backends (tests/store_test.h): opening, schema versions
// and migration (SQLite files alone), device kinds, data across a reopen,
// concurrent writers. Its other parts have their own files, one binary:
// store_fleet_test.cc, store_jobs_test.cc, store_measurements_test.cc,
// store_cache_test.cc, store_sources_test.cc, store_judging_test.cc,
// store_specs_test.cc.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/store_test.h"

#ifndef TUNED_SCHEMA_V1
#error "TUNED_SCHEMA_V1 (tests/data/schema_v1.sql) must be defined"
#endif

namespace tuned {
namespace {

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

TEST(StoreOpenTest, CreatesFileAndParentDirectories) {
  TempDir dir;
  fs::path db = dir.path() / "a" / "b" / "tuned.db";
  {
    auto s = Store::Open(db.string());
    ASSERT_TRUE(s.ok()) << s.status();
  }
  EXPECT_TRUE(fs::exists(db));
  EXPECT_EQ(QueryInt(db, "PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(QueryInt(db,
                     "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                     "('devices', 'jobs', 'measurements', 'binaries')"),
            4);
  // Opening again keeps the version (the schema is not reapplied destructively).
  auto again = Store::Open(db.string());
  ASSERT_TRUE(again.ok()) << again.status();
}

TEST(StoreOpenTest, RejectsNewerSchemaVersion) {
  TempDir dir;
  fs::create_directories(dir.path());
  fs::path db = dir.path() / "future.db";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);

  auto s = Store::Open(db.string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find(absl::StrCat("schema version 99 is newer than this build's ",
                                                   Store::kSchemaVersion)),
            std::string::npos)
      << s.status();
  EXPECT_EQ(QueryInt(db, "PRAGMA user_version"), 99);  // left alone
}

TEST(StoreOpenTest, RejectsFileThatIsNoDatabase) {
  TempDir dir;
  fs::create_directories(dir.path());
  fs::path db = dir.path() / "junk.db";
  {
    std::FILE* f = std::fopen(db.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not an sqlite database, just some text of some length......", f);
    std::fclose(f);
  }
  auto s = Store::Open(db.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("junk.db"), std::string::npos) << s.status();
}

TEST(StoreOpenTest, MigratesVersion1KeepingItsData) {
  TempDir dir;
  fs::create_directories(dir.path());
  const fs::path db = dir.path() / "v1.db";
  std::ifstream in(TUNED_SCHEMA_V1);
  std::stringstream v1;
  v1 << in.rdbuf();
  ASSERT_FALSE(v1.str().empty());
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, v1.str().c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "INSERT INTO devices VALUES (1, 'NVIDIA H100 80GB HBM3', 9, 0, 13000, '13.0');"
                         "INSERT INTO jobs (id, device_id, family, dtype, shape, state, total, "
                         "created_unix) VALUES (7, 1, 'FAMILY_SGEMM', 'DTYPE_F32', '64x64x64', "
                         "'JOB_DONE', 3, 1);"
                         "INSERT INTO measurements (job_id, device_id, family, dtype, shape, config, "
                         "params, status, median_ms, created_unix) VALUES (7, 1, 'FAMILY_SGEMM', "
                         "'DTYPE_F32', '64x64x64', 'a', 'BM=64', 'MEASUREMENT_OK', 0.5, 1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);
  ASSERT_EQ(QueryInt(db, "PRAGMA user_version"), 1);

  auto store = Store::Open(db.string());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(QueryInt(db, "PRAGMA user_version"), Store::kSchemaVersion);
  auto job = (*store)->GetJob(7);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_DONE);
  EXPECT_EQ(job->done(), 1);
  EXPECT_DOUBLE_EQ(job->best().median_ms(), 0.5);
  EXPECT_EQ(job->compile_seconds(), 0);  // the new columns' defaults
  EXPECT_EQ(job->problem().math(), v1::MATH_IEEE_FP32);  // schema 5: every older row
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_F32);
  for (int64_t d : {64, 64, 64}) p.add_shape(d);
  EXPECT_EQ((*store)->ListMeasurements(1, p, 0)->size(), 1u);  // its key unchanged
  ASSERT_TRUE((*store)->AddJobTime(7, {1.5, 2.5, 0.5, 1, 2}).ok());
  EXPECT_DOUBLE_EQ((*store)->GetJob(7)->measure_seconds(), 2.5);
  store->reset();
  auto again = Store::Open(db.string());  // a migrated database opens as is
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(QueryInt(db, "PRAGMA integrity_check = 1") , 0);  // "ok" reads as 0
}

TEST_P(StoreTest, UpsertDeviceIsIdempotent) {
  auto again = store_->UpsertDevice(Gpu());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, dev_);
  v1::Device smaller = Gpu();
  smaller.set_sm_count(114);  // part of the kind: its results are kept apart
  EXPECT_NE(*store_->UpsertDevice(smaller), dev_);
  v1::Device same = Gpu();
  same.set_uuid("GPU-another");  // one GPU of the kind: not part of it
  EXPECT_EQ(*store_->UpsertDevice(same), dev_);
  auto other = store_->UpsertDevice(Gpu("12.8"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, dev_);
  EXPECT_EQ(*store_->UpsertDevice(Gpu("12.8")), *other);
}

TEST_P(StoreTest, ConcurrentWritersAllLand) {
  int64_t id = NewJob(Sgemm(1024, 1024, 1024), 200, 0);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto m = Meas("c" + std::to_string(t) + "_" + std::to_string(i), v1::MEASUREMENT_OK,
                      1.0 + t + i * 0.01);
        if (!store_->AddMeasurement(id, m, nullptr).ok()) ++errors;
        if (!store_->GetJob(id).ok()) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  auto job = store_->GetJob(id);
  EXPECT_EQ(job->done(), 200);
  EXPECT_EQ(job->best().config().name(), "c0_0");
}

/// Rows of `table` in the database at `url`, through a connection of its own.
int64_t CountRows(const std::string& url, const std::string& table) {
  auto db = Database::Open(url);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return -1;
  auto rows = (*db)->Query("SELECT COUNT(*) FROM " + table, {});
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? rows->Int(0, 0) : -1;
}

TEST_P(StoreTest, DataSurvivesReopenAndBinariesAreShared) {
  TempDir dir;
  const std::string db = GetParam() == "sqlite" ? (dir.path() / "tuned.db").string() : url_;
  store_.reset();
  const v1::Problem p = Sgemm(1024, 1024, 1024);
  KernelBinary bin{
      .source = "src", .entry = "k", .cubin = std::string("\0\1\2", 3), .ptx = "ptx", .log = "log"};
  int64_t dev = 0, job = 0;
  {
    auto s = Store::Open(db);
    ASSERT_TRUE(s.ok()) << s.status();
    dev = *(*s)->UpsertDevice(Gpu());
    job = *(*s)->CreateJob(dev, p, 3, 1);
    ASSERT_TRUE(*(*s)->FinishJob(job, v1::JOB_DONE));
    ASSERT_TRUE((*s)->AddMeasurement(job, Meas("x", v1::MEASUREMENT_OK, 0.7), &bin).ok());
    ASSERT_TRUE((*s)->AddMeasurement(job, Meas("x", v1::MEASUREMENT_OK, 0.7), &bin).ok());
    ASSERT_TRUE((*s)->AddMeasurement(job, Meas("y", v1::MEASUREMENT_OK, 0.8), &bin).ok());
    KernelBinary other = bin;
    other.cubin[1] = '\7';
    ASSERT_TRUE((*s)->AddMeasurement(job, Meas("z", v1::MEASUREMENT_OK, 0.9), &other).ok());
  }
  EXPECT_EQ(CountRows(db, "measurements"), 3);
  EXPECT_EQ(CountRows(db, "binaries"), 2);  // x and y share one

  auto s = Store::Open(db);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*(*s)->UpsertDevice(Gpu()), dev);
  auto j = (*s)->GetJob(job);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->state(), v1::JOB_DONE);
  EXPECT_EQ(j->total(), 3);
  EXPECT_EQ(j->pruned(), 1);
  EXPECT_EQ(j->done(), 3);
  auto best = (*s)->Best(dev, p);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*best)->measurement.config().name(), "x");
  EXPECT_EQ((*best)->binary.cubin, std::string("\0\1\2", 3));
  EXPECT_EQ(*(*s)->MeasuredConfigs(job), (std::set<std::string>{"x", "y", "z"}));
}

}  // namespace
}  // namespace tuned
