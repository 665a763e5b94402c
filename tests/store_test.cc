// Store on both backends, the same tests (TEST_P over "sqlite", in memory or
// a temporary file, and "postgresql", a fresh database on a real server:
// tests/pg_server.h): jobs, work items and claims, measurements, best
// kernels, binaries, the compile cache, crash counts, job time. SQLite
// files alone: creation, schema versioning and migration.
#include "absl/strings/str_cat.h"
#include "db/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/pg_server.h"

#ifndef TUNED_SCHEMA_V1
#error "TUNED_SCHEMA_V1 (tests/data/schema_v1.sql) must be defined"
#endif
#include <fstream>
#include <sstream>

namespace tuned {
namespace {

namespace fs = std::filesystem;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A fresh directory under the test temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::path(testing::TempDir()) /
            ("tuned_store_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// Runs one query on a database file directly and returns the first column
/// of its first row.
int64_t QueryInt(const fs::path& db_path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return v;
}

v1::Device Gpu(std::string nvrtc = "13.0") {
  v1::Device d;
  d.set_name("NVIDIA H100 80GB HBM3");
  d.set_cc_major(9);
  d.set_cc_minor(0);
  d.set_driver_version(13000);
  d.set_nvrtc_version(nvrtc);
  d.set_sm_count(132);
  return d;
}

v1::Problem Sgemm(int64_t m, int64_t n, int64_t k) {
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_F32);
  p.add_shape(m);
  p.add_shape(n);
  p.add_shape(k);
  return p;
}

v1::Measurement Meas(const std::string& name, v1::MeasurementStatus status, double ms) {
  v1::Measurement m;
  m.mutable_config()->set_name(name);
  (*m.mutable_config()->mutable_params())["BM"] = 128;
  (*m.mutable_config()->mutable_params())["BN"] = 64;
  (*m.mutable_config()->mutable_params())["BK"] = 8;
  m.set_status(status);
  m.set_median_ms(ms);
  m.set_metric(ms > 0 ? 2.0 * 1024 * 1024 * 1024 / (ms * 1e6) : 0);
  m.set_metric_unit("GFLOPS");
  m.set_error(1e-6);
  m.set_repetitions(20);
  m.set_registers(96);
  return m;
}

/// A fresh database of the test's backend (GetParam()): SQLite in memory,
/// or a new database on the process's PostgreSQL server.
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    url_ = ":memory:";
    if (GetParam() == "postgresql") {
      TUNED_REQUIRE_POSTGRES();
      auto url = (*SharedPgServer())->NewDatabase();
      ASSERT_TRUE(url.ok()) << url.status();
      url_ = *url;
    }
    auto s = Store::Open(url_);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
    auto dev = store_->UpsertDevice(Gpu());
    ASSERT_TRUE(dev.ok()) << dev.status();
    dev_ = *dev;
  }
  int64_t NewJob(const v1::Problem& p, int total = 10, int pruned = 2) {
    auto id = store_->CreateJob(dev_, p, total, pruned);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(-1);
  }
  std::string url_;
  std::unique_ptr<Store> store_;
  int64_t dev_ = 0;
};

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

TEST_P(StoreTest, JobLifecycleAndTimestamps) {
  const int64_t before = Now();
  int64_t id = NewJob(Sgemm(1024, 512, 256), 120, 30);
  auto job = store_->GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->id(), id);
  EXPECT_EQ(job->state(), v1::JOB_QUEUED);
  EXPECT_EQ(job->problem().family(), v1::FAMILY_SGEMM);
  EXPECT_EQ(job->problem().dtype(), v1::DTYPE_F32);
  ASSERT_EQ(job->problem().shape_size(), 3);
  EXPECT_EQ(job->problem().shape(0), 1024);
  EXPECT_EQ(job->problem().shape(1), 512);
  EXPECT_EQ(job->problem().shape(2), 256);
  EXPECT_EQ(job->total(), 120);
  EXPECT_EQ(job->pruned(), 30);
  EXPECT_EQ(job->done(), 0);
  EXPECT_EQ(job->failed(), 0);
  EXPECT_FALSE(job->has_best());
  EXPECT_GE(job->created_unix(), before);
  EXPECT_LE(job->created_unix(), Now());
  EXPECT_EQ(job->started_unix(), 0);
  EXPECT_EQ(job->finished_unix(), 0);

  // A job runs from its first claim on.
  auto daemon = store_->RegisterDaemon(dev_, {.host = "h", .gpu = 0, .gpu_uuid = "GPU-0"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  v1::KernelConfig item;
  item.set_name("c0");
  ASSERT_TRUE(*store_->AddRound(id, 0, {item}));
  ASSERT_TRUE(store_->ClaimWork(*daemon, dev_, 0, 1)->has_value());
  job = store_->GetJob(id);
  EXPECT_EQ(job->state(), v1::JOB_RUNNING);
  EXPECT_GE(job->started_unix(), before);
  EXPECT_EQ(job->finished_unix(), 0);

  ASSERT_TRUE(store_->SetJobBaseline(id, 0.25, 1234.5, "cublasSgemm").ok());
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_FAILED, "worker crashed twice"));
  job = store_->GetJob(id);
  EXPECT_EQ(job->state(), v1::JOB_FAILED);
  EXPECT_EQ(job->error(), "worker crashed twice");
  EXPECT_GE(job->finished_unix(), job->started_unix());
  EXPECT_LE(job->finished_unix(), Now());
  EXPECT_DOUBLE_EQ(job->baseline_ms(), 0.25);
  EXPECT_DOUBLE_EQ(job->baseline_metric(), 1234.5);
  EXPECT_EQ(job->baseline_name(), "cublasSgemm");

  auto missing = store_->GetJob(42);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "job 42 not found");
  EXPECT_FALSE(*store_->FinishJob(42, v1::JOB_DONE));  // no such job: nothing changes
  EXPECT_EQ(store_->SetJobBaseline(42, 1, 1, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->FinishJob(id, v1::JOB_STATE_UNSPECIFIED).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ListJobsNewestFirstWithLimit) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(NewJob(Sgemm(64 * (i + 1), 64, 64)));
  auto all = store_->ListJobs(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*all)[i].id(), ids[4 - i]);
  auto two = store_->ListJobs(2);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id(), ids[4]);
  EXPECT_EQ((*two)[0].problem().shape(0), 320);
  EXPECT_EQ((*two)[1].id(), ids[3]);
}

TEST_P(StoreTest, AddMeasurementIsIdempotent) {
  int64_t id = NewJob(Sgemm(1024, 1024, 1024));
  v1::Measurement m = Meas("sgemm_tiled_128x64x8", v1::MEASUREMENT_OK, 1.5);
  ASSERT_TRUE(store_->AddMeasurement(id, m, nullptr).ok());
  m.set_median_ms(0.1);  // a repeat, even with other numbers, changes nothing
  ASSERT_TRUE(store_->AddMeasurement(id, m, nullptr).ok());

  auto list = store_->ListMeasurements(dev_, Sgemm(1024, 1024, 1024), 0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_DOUBLE_EQ((*list)[0].median_ms(), 1.5);
  auto job = store_->GetJob(id);
  EXPECT_EQ(job->done(), 1);
  EXPECT_EQ(job->failed(), 0);
  auto names = store_->MeasuredConfigs(id);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::set<std::string>{"sgemm_tiled_128x64x8"});

  EXPECT_EQ(store_->AddMeasurement(999, m, nullptr).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->AddMeasurement(id, v1::Measurement(), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, CountsAndBestIgnoreFailures) {
  int64_t id = NewJob(Sgemm(1024, 1024, 1024), 6, 0);
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("a", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("b", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(id, Meas("c", v1::MEASUREMENT_WRONG_ANSWER, 0.5), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(id, Meas("d", v1::MEASUREMENT_COMPILE_ERROR, 0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("e", v1::MEASUREMENT_WORKER_DIED, 0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("f", v1::MEASUREMENT_COMPILED, 0), nullptr).ok());

  auto job = store_->GetJob(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->done(), 3);  // a, b and the compiled f
  EXPECT_EQ(job->failed(), 3);
  ASSERT_TRUE(job->has_best());
  EXPECT_EQ(job->best().config().name(), "b");
  EXPECT_DOUBLE_EQ(job->best().median_ms(), 1.0);
  EXPECT_EQ(job->best().job_id(), id);

  auto best = store_->Best(dev_, Sgemm(1024, 1024, 1024));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->measurement.config().name(), "b");
  EXPECT_EQ((*best)->measurement.status(), v1::MEASUREMENT_OK);
}

TEST_P(StoreTest, TunedShapesListsOnlyShapesWithAnOkMeasurement) {
  int64_t a = NewJob(Sgemm(1024, 1024, 1024), 2, 0);
  int64_t b = NewJob(Sgemm(1000, 17, 4097), 2, 0);
  int64_t c = NewJob(Sgemm(64, 64, 64), 2, 0);
  ASSERT_TRUE(store_->AddMeasurement(a, Meas("x", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(a, Meas("y", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(b, Meas("x", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(c, Meas("x", v1::MEASUREMENT_WRONG_ANSWER, 1.0), nullptr).ok());
  auto shapes = store_->TunedShapes(dev_, v1::FAMILY_SGEMM, v1::DTYPE_F32);
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(*shapes, (std::vector<std::vector<int64_t>>{{1000, 17, 4097}, {1024, 1024, 1024}}));
  auto none = store_->TunedShapes(dev_, v1::FAMILY_TRANSPOSE, v1::DTYPE_F32);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

v1::Problem WithMath(v1::Problem p, v1::Math math) {
  p.set_math(math);
  return p;
}

// Each math mode of a problem has its own jobs' measurements, best and tuned
// shapes; MATH_IEEE_FP32 keeps the keys of before the modes (its label has
// no suffix).
TEST_P(StoreTest, MathModesKeepTheirOwnMeasurementsBestAndShapes) {
  const v1::Problem ieee = Sgemm(64, 64, 64);
  const v1::Problem tf32 = WithMath(ieee, v1::MATH_TF32);
  const v1::Problem accurate = WithMath(ieee, v1::MATH_FP32_ACCURATE);
  const int64_t j_ieee = NewJob(ieee), j_tf32 = NewJob(tf32), j_acc = NewJob(accurate);
  ASSERT_TRUE(store_->AddMeasurement(j_ieee, Meas("simt", v1::MEASUREMENT_OK, 0.5), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_tf32, Meas("tc1", v1::MEASUREMENT_OK, 0.1), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(j_tf32, Meas("tc3", v1::MEASUREMENT_WRONG_ANSWER, 0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_acc, Meas("tc3", v1::MEASUREMENT_OK, 0.2), nullptr).ok());
  ASSERT_TRUE(store_->SetJobErrorBound(j_tf32, 3e-4, 6e-4).ok());
  EXPECT_EQ(store_->SetJobErrorBound(9999, 1, 2).code(), absl::StatusCode::kNotFound);

  auto job = store_->GetJob(j_tf32);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->problem().math(), v1::MATH_TF32);
  EXPECT_DOUBLE_EQ(job->baseline_error(), 3e-4);
  EXPECT_DOUBLE_EQ(job->error_bound(), 6e-4);
  EXPECT_EQ(store_->GetJob(j_ieee)->problem().math(), v1::MATH_IEEE_FP32);
  EXPECT_EQ(store_->GetJob(j_ieee)->baseline_error(), 0);

  for (auto [problem, names] :
       {std::pair{ieee, std::vector<std::string>{"simt"}},
        {tf32, std::vector<std::string>{"tc1", "tc3"}}, {accurate, std::vector<std::string>{"tc3"}}}) {
    auto ms = store_->ListMeasurements(dev_, problem, 0);
    ASSERT_TRUE(ms.ok()) << ms.status();
    std::vector<std::string> got;
    for (const auto& m : *ms) got.push_back(m.config().name());
    EXPECT_EQ(got, names) << v1::Math_Name(problem.math());
    auto best = store_->Best(dev_, problem);
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_EQ((*best)->measurement.config().name(), names.front());
  }
  EXPECT_DOUBLE_EQ((*store_->Best(dev_, tf32))->baseline_error, 3e-4);
  EXPECT_EQ(store_->Best(dev_, WithMath(Sgemm(8, 8, 8), v1::MATH_TF32)).status().message(),
            "no tuned kernel for sgemm f32 8x8x8 tf32 on this device");

  // A mode with no OK measurement of a shape has no tuned shape there.
  const int64_t j_only_wrong = NewJob(WithMath(Sgemm(32, 32, 32), v1::MATH_FP32_ACCURATE));
  ASSERT_TRUE(store_->AddMeasurement(j_only_wrong, Meas("tc3", v1::MEASUREMENT_WRONG_ANSWER, 0),
                                     nullptr)
                  .ok());
  for (v1::Math math : {v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE, v1::MATH_TF32}) {
    auto shapes = store_->TunedShapes(dev_, v1::FAMILY_SGEMM, v1::DTYPE_F32, math);
    ASSERT_TRUE(shapes.ok()) << shapes.status();
    EXPECT_EQ(*shapes, (std::vector<std::vector<int64_t>>{{64, 64, 64}})) << v1::Math_Name(math);
  }
}

TEST_P(StoreTest, ListMeasurementsOrderTopAndRoundTrip) {
  const v1::Problem p = Sgemm(2048, 2048, 2048);
  int64_t j1 = NewJob(p);
  int64_t j2 = NewJob(p);
  int64_t other = NewJob(Sgemm(2048, 2048, 1024));
  ASSERT_TRUE(store_->AddMeasurement(j1, Meas("slow", v1::MEASUREMENT_OK, 3.0), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(j1, Meas("broken", v1::MEASUREMENT_LAUNCH_ERROR, 0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j2, Meas("fast", v1::MEASUREMENT_OK, 1.25), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j2, Meas("mid", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(other, Meas("elsewhere", v1::MEASUREMENT_OK, 0.1), nullptr).ok());

  auto all = store_->ListMeasurements(dev_, p, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].config().name(), "fast");
  EXPECT_EQ((*all)[1].config().name(), "mid");
  EXPECT_EQ((*all)[2].config().name(), "slow");
  EXPECT_EQ((*all)[3].config().name(), "broken");
  EXPECT_EQ((*all)[0].job_id(), j2);
  EXPECT_EQ((*all)[2].job_id(), j1);

  const v1::Measurement& m = (*all)[0];
  EXPECT_EQ(m.status(), v1::MEASUREMENT_OK);
  EXPECT_EQ(m.config().params_size(), 3);
  EXPECT_EQ(m.config().params().at("BM"), 128);
  EXPECT_EQ(m.config().params().at("BN"), 64);
  EXPECT_EQ(m.config().params().at("BK"), 8);
  EXPECT_DOUBLE_EQ(m.metric(), 2.0 * 1024 * 1024 * 1024 / (1.25 * 1e6));
  EXPECT_EQ(m.metric_unit(), "GFLOPS");
  EXPECT_DOUBLE_EQ(m.error(), 1e-6);
  EXPECT_EQ(m.repetitions(), 20);
  EXPECT_EQ(m.registers(), 96);
  EXPECT_GE(m.created_unix(), Now() - 60);

  auto top2 = store_->ListMeasurements(dev_, p, 2);
  ASSERT_EQ(top2->size(), 2u);
  EXPECT_EQ((*top2)[0].config().name(), "fast");
  EXPECT_EQ((*top2)[1].config().name(), "mid");

  auto other_dev = store_->UpsertDevice(Gpu("12.8"));
  EXPECT_TRUE(store_->ListMeasurements(*other_dev, p, 0)->empty());
}

TEST_P(StoreTest, BestNotFoundForUntunedProblemOrOtherDevice) {
  const v1::Problem p = Sgemm(1024, 1024, 1024);
  auto none = store_->Best(dev_, p);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "no tuned kernel for sgemm f32 1024x1024x1024 on this device");

  int64_t id = NewJob(p);
  ASSERT_TRUE(
      store_->AddMeasurement(id, Meas("only_wrong", v1::MEASUREMENT_WRONG_ANSWER, 0.2), nullptr)
          .ok());
  EXPECT_EQ(store_->Best(dev_, p).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("ok", v1::MEASUREMENT_OK, 0.9), nullptr).ok());
  EXPECT_TRUE(store_->Best(dev_, p).ok());

  auto other = store_->UpsertDevice(Gpu("12.8"));
  EXPECT_EQ(store_->Best(*other, p).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Best(dev_, Sgemm(1024, 1024, 512)).status().code(),
            absl::StatusCode::kNotFound);

  v1::Problem t;
  t.set_family(v1::FAMILY_TRANSPOSE);
  t.set_dtype(v1::DTYPE_F32);
  t.add_shape(4096);
  t.add_shape(8192);
  EXPECT_EQ(store_->Best(dev_, t).status().message(),
            "no tuned kernel for transpose f32 4096x8192 on this device");
}

// A problem none of whose configs passed verification: its newest DONE job
// that timed the baseline is a baseline-only best (server/jobs.cc Finish
// ends such a sweep DONE where the baseline is served); a running, failed
// or compile-only job (no baseline) is none, and a kernel found later wins.
TEST_P(StoreTest, BestIsTheBaselineOfADoneJobWhoseConfigsAllFailed) {
  v1::Problem p = Sgemm(67, 131, 1);
  p.set_math(v1::MATH_TF32);
  const int64_t failed = NewJob(p);
  ASSERT_TRUE(store_->SetJobBaseline(failed, 0.004, 4.4, "cuBLAS TF32").ok());
  ASSERT_TRUE(store_->AddMeasurement(failed, Meas("w", v1::MEASUREMENT_WRONG_ANSWER, 0.1), nullptr).ok());
  ASSERT_TRUE(*store_->FinishJob(failed, v1::JOB_FAILED, "no config passed verification"));
  const int64_t compile_only = NewJob(p);
  ASSERT_TRUE(*store_->FinishJob(compile_only, v1::JOB_DONE));
  EXPECT_TRUE(absl::IsNotFound(store_->Best(dev_, p).status())) << store_->Best(dev_, p).status();

  const int64_t id = NewJob(p);
  ASSERT_TRUE(store_->SetJobBaseline(id, 0.005, 3.5, "cuBLAS TF32").ok());
  ASSERT_TRUE(store_->SetJobErrorBound(id, 3e-7, 6e-7).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("w", v1::MEASUREMENT_WRONG_ANSWER, 0.1), nullptr).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->Best(dev_, p).status()));  // still running
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_DONE, "no config passed verification; ..."));
  auto only = store_->Best(dev_, p);
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_TRUE((*only)->baseline_only);
  EXPECT_EQ((*only)->baseline_job, id);
  EXPECT_DOUBLE_EQ((*only)->baseline_ms, 0.005);
  EXPECT_EQ((*only)->baseline_name, "cuBLAS TF32");
  EXPECT_DOUBLE_EQ((*only)->baseline_error, 3e-7);
  EXPECT_TRUE((*only)->measurement.config().name().empty());
  EXPECT_TRUE((*only)->binary.cubin.empty());
  // Its own math mode, shape and device kind only; never a tuned shape.
  EXPECT_TRUE(absl::IsNotFound(store_->Best(dev_, Sgemm(67, 131, 1)).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Best(*store_->UpsertDevice(Gpu("12.8")), p).status()));
  EXPECT_TRUE(store_->TunedShapes(dev_, v1::FAMILY_SGEMM, v1::DTYPE_F32, v1::MATH_TF32)->empty());

  // A later sweep that finds a kernel: the kernel's row.
  const int64_t later = NewJob(p);
  ASSERT_TRUE(store_->AddMeasurement(later, Meas("ok", v1::MEASUREMENT_OK, 0.003), nullptr).ok());
  auto kernel = store_->Best(dev_, p);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_FALSE((*kernel)->baseline_only);
  EXPECT_EQ((*kernel)->measurement.config().name(), "ok");
}

TEST_P(StoreTest, BinaryRoundTripWithBaseline) {
  const v1::Problem p = Sgemm(512, 512, 512);
  int64_t id = NewJob(p);
  ASSERT_TRUE(store_->SetJobBaseline(id, 0.04, 6710.9, "cublasSgemm").ok());
  KernelBinary bin;
  bin.source = "extern \"C\" __global__ void k() {}";
  bin.entry = "_Z6sgemmILi128EEvv";
  bin.cubin = std::string(
      "\x7f"
      "ELF\0\0\x01\x02\0\xff",
      10);
  bin.ptx = ".version 8.0\n.target sm_90\n";
  bin.log = "";
  ASSERT_EQ(bin.cubin.size(), 10u);
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("k", v1::MEASUREMENT_OK, 0.05), &bin).ok());

  auto best = store_->Best(dev_, p);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->binary.source, bin.source);
  EXPECT_EQ((*best)->binary.entry, bin.entry);
  EXPECT_EQ((*best)->binary.cubin, bin.cubin);
  EXPECT_EQ((*best)->binary.cubin.size(), 10u);
  EXPECT_EQ((*best)->binary.ptx, bin.ptx);
  EXPECT_EQ((*best)->binary.log, "");
  EXPECT_DOUBLE_EQ((*best)->baseline_ms, 0.04);
  EXPECT_EQ((*best)->baseline_name, "cublasSgemm");

  // A faster measurement without a binary wins and comes with an empty one.
  int64_t id2 = NewJob(p);
  ASSERT_TRUE(store_->AddMeasurement(id2, Meas("nobin", v1::MEASUREMENT_OK, 0.03), nullptr).ok());
  best = store_->Best(dev_, p);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*best)->measurement.config().name(), "nobin");
  EXPECT_TRUE((*best)->binary.source.empty());
  EXPECT_TRUE((*best)->binary.cubin.empty());
  EXPECT_DOUBLE_EQ((*best)->baseline_ms, 0);  // job 2 timed no baseline
  EXPECT_EQ((*best)->baseline_name, "");
}

/// Work items named "c0", "c1", ... with one parameter.
std::vector<v1::KernelConfig> Items(int n, const std::string& prefix = "c") {
  std::vector<v1::KernelConfig> items(n);
  for (int i = 0; i < n; ++i) {
    items[i].set_name(prefix + std::to_string(i));
    (*items[i].mutable_params())["X"] = i;
  }
  return items;
}

DaemonIdentity Daemon(int gpu, double lease = 30) {
  return {.host = "node-a", .gpu = gpu, .gpu_uuid = "GPU-" + std::to_string(gpu), .pid = 42,
          .lease_seconds = lease};
}

std::vector<std::string> Names(const Claim& c) {
  std::vector<std::string> out;
  for (const auto& item : c.items) out.push_back(item.retime ? "<retime>" : item.config.name());
  return out;
}

TEST_P(StoreTest, ClaimsTakeTheOldestJobsItemsInOrderAndPreferThePreparedJob) {
  const int64_t a = NewJob(Sgemm(128, 128, 128));
  const int64_t b = NewJob(Sgemm(256, 256, 256));
  auto me = store_->RegisterDaemon(dev_, Daemon(0));
  auto other = store_->RegisterDaemon(dev_, Daemon(1));
  ASSERT_TRUE(me.ok() && other.ok());
  // No items yet: nothing to claim; both jobs need their first round.
  EXPECT_FALSE(store_->ClaimWork(*me, dev_, 0, 4)->has_value());
  EXPECT_EQ(store_->IdleJobs(dev_)->size(), 2u);
  ASSERT_TRUE(*store_->AddRound(a, 0, Items(5)));
  ASSERT_TRUE(*store_->AddRound(b, 0, Items(3, "d")));
  EXPECT_EQ(store_->GetJob(a)->total(), 5);
  EXPECT_EQ(store_->GetJob(a)->round(), 1);
  EXPECT_TRUE(store_->IdleJobs(dev_)->empty());

  auto first = store_->ClaimWork(*me, dev_, 0, 2);
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  EXPECT_EQ((*first)->job_id, a);
  EXPECT_EQ(Names(**first), (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ((*first)->items[1].config.params().at("X"), 1);
  EXPECT_EQ(store_->GetJob(a)->state(), v1::JOB_RUNNING);
  EXPECT_EQ(store_->GetJob(b)->state(), v1::JOB_QUEUED);
  // Another daemon prepared for b gets b's items; then a's rest, never a claimed one.
  auto second = store_->ClaimWork(*other, dev_, b, 10);
  EXPECT_EQ((*second)->job_id, b);
  EXPECT_EQ(Names(**second), (std::vector<std::string>{"d0", "d1", "d2"}));
  auto third_daemon = store_->RegisterDaemon(dev_, Daemon(2));
  auto third = store_->ClaimWork(*third_daemon, dev_, b, 10);
  EXPECT_EQ((*third)->job_id, a);
  EXPECT_EQ(Names(**third), (std::vector<std::string>{"c2", "c3", "c4"}));
  EXPECT_EQ((*third)->taken_over, 0);
  // A daemon's own unfinished claims come back to it (after a database outage).
  auto again = store_->ClaimWork(*me, dev_, a, 10);
  EXPECT_EQ(Names(**again), (std::vector<std::string>{"c0", "c1"}));
  // Another kind sees none of it.
  auto kind = store_->UpsertDevice(Gpu("12.8"));
  auto stranger = store_->RegisterDaemon(*kind, Daemon(7));
  EXPECT_FALSE(store_->ClaimWork(*stranger, *kind, 0, 10)->has_value());
}

TEST_P(StoreTest, AMeasurementFinishesItsItemOnceAndTheRoundMovesOnOnce) {
  const int64_t id = NewJob(Sgemm(64, 64, 64));
  auto me = store_->RegisterDaemon(dev_, Daemon(0));
  auto other = store_->RegisterDaemon(dev_, Daemon(1));
  ASSERT_TRUE(*store_->AddRound(id, 0, Items(2)));
  EXPECT_FALSE(*store_->AddRound(id, 0, Items(2)));  // another daemon did it: nothing changes
  EXPECT_FALSE(*store_->AddRound(id, 1, Items(1, "n")));  // items still open
  auto claim = store_->ClaimWork(*me, dev_, id, 10);
  ASSERT_EQ((*claim)->items.size(), 2u);
  auto m = Meas("c0", v1::MEASUREMENT_OK, 1.0);
  auto first = store_->AddMeasurement(id, m, nullptr, *me, 0.9);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  // The same config measured again by another daemon keeps the first row.
  auto again = Meas("c0", v1::MEASUREMENT_OK, 0.5);
  auto twice = store_->AddMeasurement(id, again, nullptr, *other, 0.4);
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(*twice);  // measured twice: reported, not stored
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("c1", v1::MEASUREMENT_WRONG_ANSWER, 0), nullptr, *other).ok());
  auto all = store_->ListMeasurements(dev_, Sgemm(64, 64, 64), 0);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_DOUBLE_EQ((*all)[0].median_ms(), 1.0);
  EXPECT_EQ((*all)[0].host(), "node-a");
  EXPECT_EQ((*all)[0].gpu(), 0);
  EXPECT_EQ((*all)[1].gpu(), 1);
  // The best carries the baseline of the GPU that measured it.
  EXPECT_DOUBLE_EQ((*store_->Best(dev_, Sgemm(64, 64, 64)))->baseline_ms, 0.9);
  auto job = store_->GetJob(id);
  ASSERT_EQ(job->daemons_size(), 2);
  EXPECT_EQ(job->daemons(0).measured() + job->daemons(1).measured(), 2);

  // Round 1 is done: a refinement round adds its items (a measured one as
  // finished) and the total follows the items, however often it is asked.
  ASSERT_EQ(store_->IdleJobs(dev_)->size(), 1u);
  std::vector<v1::KernelConfig> next = Items(3, "n");
  next.push_back(Items(1).front());  // c0: measured already
  ASSERT_TRUE(*store_->AddRound(id, 1, next));
  EXPECT_FALSE(*store_->AddRound(id, 1, next));
  EXPECT_EQ(store_->GetJob(id)->total(), 5);
  EXPECT_EQ(store_->GetJob(id)->round(), 2);
  auto refine = store_->ClaimWork(*me, dev_, id, 10);
  EXPECT_EQ(Names(**refine), (std::vector<std::string>{"n0", "n1", "n2"}));
  for (const auto& item : (*refine)->items) {
    ASSERT_TRUE(store_->AddMeasurement(id, Meas(item.config.name(), v1::MEASUREMENT_OK, 2.0), nullptr, *me).ok());
  }
  // Then the re-timing item, which is no config: the total stays.
  ASSERT_TRUE(*store_->AddRound(id, 2, {}, /*retime=*/true));
  EXPECT_EQ(store_->GetJob(id)->total(), 5);
  auto retime = store_->ClaimWork(*other, dev_, 0, 10);
  EXPECT_EQ(Names(**retime), (std::vector<std::string>{"<retime>"}));
  EXPECT_TRUE(store_->IdleJobs(dev_)->empty());
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_DONE));
  EXPECT_FALSE(*store_->FinishJob(id, v1::JOB_CANCELLED));  // ended already: stays DONE
  EXPECT_EQ(store_->GetJob(id)->state(), v1::JOB_DONE);
  EXPECT_TRUE(store_->IdleJobs(dev_)->empty());
  EXPECT_EQ(store_->FinishJob(id, v1::JOB_RUNNING).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ExpiredLeasesAndReleasedClaimsGoBackToThePool) {
  const int64_t id = NewJob(Sgemm(64, 64, 64));
  auto dead = store_->RegisterDaemon(dev_, Daemon(0, /*lease=*/0.3));
  auto live = store_->RegisterDaemon(dev_, Daemon(1, /*lease=*/30));
  ASSERT_TRUE(*store_->AddRound(id, 0, Items(4)));
  ASSERT_EQ((*store_->ClaimWork(*dead, dev_, id, 2))->items.size(), 2u);
  ASSERT_EQ((*store_->ClaimWork(*live, dev_, id, 1))->items.size(), 1u);
  auto beat = store_->Heartbeat(*live, id);
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_EQ(beat->held, 1);
  EXPECT_TRUE(beat->job_active);
  // Before the lease ends only c3 is free; after it, the dead daemon's two.
  EXPECT_EQ(Names(**store_->ClaimWork(*live, dev_, id, 10)), (std::vector<std::string>{"c2", "c3"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto taken = store_->ClaimWork(*live, dev_, id, 10);
  EXPECT_EQ(Names(**taken), (std::vector<std::string>{"c0", "c1", "c2", "c3"}));
  EXPECT_EQ((*taken)->taken_over, 2);
  auto daemons = store_->ListDaemons();
  ASSERT_EQ(daemons->size(), 1u);  // the silent one is not live
  EXPECT_EQ((*daemons)[0].gpu(), 1);
  EXPECT_EQ((*daemons)[0].claimed(), 4);
  EXPECT_EQ((*daemons)[0].job_id(), id);
  EXPECT_EQ((*daemons)[0].kind().sm_count(), 132);
  EXPECT_EQ(store_->ListDaemons(/*all=*/true)->size(), 2u);
  // A stopping daemon hands its claims back at once and leaves the list.
  ASSERT_TRUE(store_->ReleaseClaims(*live, /*stopped=*/true).ok());
  EXPECT_TRUE(store_->ListDaemons()->empty());
  EXPECT_EQ((*store_->ClaimWork(*dead, dev_, id, 10))->items.size(), 4u);
  // Its restart finds its own row and hands back what its earlier run held.
  auto restarted = store_->RegisterDaemon(dev_, Daemon(0, 0.3));
  EXPECT_EQ(*restarted, *dead);
  EXPECT_EQ((*store_->ClaimWork(*live, dev_, id, 10))->items.size(), 4u);
  // A cancelled job: the heartbeat says so.
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_CANCELLED, "cancelled"));
  EXPECT_FALSE(store_->Heartbeat(*live, id)->job_active);
  EXPECT_FALSE(store_->ClaimWork(*live, dev_, id, 10)->has_value());
  EXPECT_TRUE(absl::IsNotFound(store_->Heartbeat(999, 0).status()));
}

// Two daemons, each with its own Store (connection) to one database, drain
// one job at once: every item is claimed by one of them, measured once.
TEST_P(StoreTest, TwoDaemonsDrainOneJobClaimingEachItemOnce) {
  TempDir dir;
  const std::string url = GetParam() == "sqlite" ? (dir.path() / "fleet.db").string() : url_;
  constexpr int kItems = 60;
  std::unique_ptr<Store> stores[2];
  for (auto& store : stores) {
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << s.status();
    store = *std::move(s);
  }
  const int64_t dev = *stores[0]->UpsertDevice(Gpu());
  const int64_t job = *stores[0]->CreateJob(dev, Sgemm(64, 64, 64), kItems, 0);
  ASSERT_TRUE(*stores[0]->AddRound(job, 0, Items(kItems)));
  absl::Mutex mu;
  std::map<std::string, int> claimed;  // config -> times claimed
  int measured[2] = {0, 0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int d = 0; d < 2; ++d) {
    threads.emplace_back([&, d] {
      Store& store = *stores[d];
      auto me = store.RegisterDaemon(dev, Daemon(d));
      for (++ready; ready < 2;) std::this_thread::yield();  // start together
      ASSERT_TRUE(me.ok()) << me.status();
      for (;;) {
        auto claim = store.ClaimWork(*me, dev, job, 3);
        ASSERT_TRUE(claim.ok()) << claim.status();
        if (!claim->has_value()) return;
        for (const auto& item : (*claim)->items) {
          {
            absl::MutexLock lock(&mu);
            ++claimed[item.config.name()];
            ++measured[d];
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));  // measuring
          auto m = Meas(item.config.name(), v1::MEASUREMENT_OK, 1.0);
          ASSERT_TRUE(store.AddMeasurement(job, m, nullptr, *me).ok());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(claimed.size(), static_cast<size_t>(kItems));
  for (const auto& [name, n] : claimed) EXPECT_EQ(n, 1) << name << " claimed " << n << " times";
  EXPECT_GT(measured[0], 0);
  EXPECT_GT(measured[1], 0);
  EXPECT_EQ(stores[1]->GetJob(job)->done(), kItems);
  EXPECT_EQ(stores[1]->ListMeasurements(dev, Sgemm(64, 64, 64), 0)->size(),
            static_cast<size_t>(kItems));
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

namespace tuned {
namespace {

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

CompileKey Key(std::string arch = "sm_90") {
  return {"template <int X> __global__ void k() {}", "k<1>", "-DX=1", std::move(arch), "13.0"};
}

TEST_P(StoreTest, CompileCacheHitsOnlyTheExactKey) {
  auto miss = store_->LookupCompiled(Key());
  ASSERT_TRUE(miss.ok()) << miss.status();
  EXPECT_FALSE(miss->has_value());
  EXPECT_FALSE(*store_->HasCompiled(Key()));

  CompiledRow row;
  row.ok = true;
  row.message = "ptxas info: Used 32 registers";
  row.binary = {Key().source, "_Z1kILi1EEvv", std::string("\x7f" "ELF\0bin", 8), ".ptx", row.message};
  row.registers = 32;
  row.local_bytes = 0;
  row.compile_ms = 120.5;
  ASSERT_TRUE(store_->AddCompiled(Key(), row).ok());
  ASSERT_TRUE(store_->AddCompiled(Key(), row).ok());  // idempotent

  auto hit = store_->LookupCompiled(Key());
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_TRUE(*store_->HasCompiled(Key()));
  EXPECT_TRUE((*hit)->ok);
  EXPECT_EQ((*hit)->binary.cubin, row.binary.cubin);  // bytes, NUL kept
  EXPECT_EQ((*hit)->binary.entry, "_Z1kILi1EEvv");
  EXPECT_EQ((*hit)->registers, 32);
  EXPECT_DOUBLE_EQ((*hit)->compile_ms, 120.5);

  // Any other architecture, NVRTC, option or instantiation is another kernel.
  EXPECT_FALSE(store_->LookupCompiled(Key("sm_80"))->has_value());
  EXPECT_FALSE(*store_->HasCompiled(Key("sm_80")));
  CompileKey other = Key();
  other.nvrtc_version = "13.1";
  EXPECT_FALSE(store_->LookupCompiled(other)->has_value());
  EXPECT_FALSE(*store_->HasCompiled(other));
  other = Key();
  other.options = "-DX=2";
  EXPECT_FALSE(store_->LookupCompiled(other)->has_value());
  EXPECT_FALSE(*store_->HasCompiled(other));
  other = Key();
  other.name_expression = "k<2>";
  EXPECT_FALSE(store_->LookupCompiled(other)->has_value());
  EXPECT_FALSE(*store_->HasCompiled(other));

  // A compile error is cached too, without a binary.
  CompiledRow error;
  error.ok = false;
  error.message = "error: nope";
  ASSERT_TRUE(store_->AddCompiled(Key("sm_80"), error).ok());
  auto bad = store_->LookupCompiled(Key("sm_80"));
  ASSERT_TRUE(bad.ok() && bad->has_value());
  EXPECT_TRUE(*store_->HasCompiled(Key("sm_80")));
  EXPECT_FALSE((*bad)->ok);
  EXPECT_EQ((*bad)->message, "error: nope");
  EXPECT_TRUE((*bad)->binary.cubin.empty());
}

TEST_P(StoreTest, CrashCountsPerDeviceFamilyAndConfig) {
  EXPECT_EQ(*store_->CrashCount(dev_, v1::FAMILY_SGEMM, "bad"), 0);
  EXPECT_EQ(*store_->AddCrash(dev_, v1::FAMILY_SGEMM, "bad", "MEASUREMENT_DEVICE_FAULT: x"), 1);
  EXPECT_EQ(*store_->AddCrash(dev_, v1::FAMILY_SGEMM, "bad", "MEASUREMENT_RUN_TIMEOUT: y"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, v1::FAMILY_SGEMM, "bad"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, v1::FAMILY_TRANSPOSE, "bad"), 0);
  EXPECT_EQ(*store_->CrashCount(dev_, v1::FAMILY_SGEMM, "good"), 0);
  auto other = store_->UpsertDevice(Gpu("13.1"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*store_->CrashCount(*other, v1::FAMILY_SGEMM, "bad"), 0);
}

TEST_P(StoreTest, JobTimeAccumulates) {
  const int64_t id = NewJob(Sgemm(64, 64, 64));
  ASSERT_TRUE(store_->AddJobTime(id, {1.0, 2.0, 0.25, 1, 3}).ok());
  ASSERT_TRUE(store_->AddJobTime(id, {0.5, 1.0, 0.25, 2, 4}).ok());
  auto job = store_->GetJob(id);
  ASSERT_TRUE(job.ok());
  EXPECT_DOUBLE_EQ(job->compile_seconds(), 1.5);
  EXPECT_DOUBLE_EQ(job->measure_seconds(), 3.0);
  EXPECT_DOUBLE_EQ(job->wait_seconds(), 0.5);
  EXPECT_EQ(job->worker_restarts(), 3);
  EXPECT_EQ(job->cached(), 7);
}

}  // namespace
}  // namespace tuned

namespace tuned {
namespace {

TEST_P(StoreTest, BestFromMemoryFollowsEveryWriteThatChangesIt) {
  const int64_t id = NewJob(Sgemm(256, 256, 256));
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("slow", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  EXPECT_EQ((*store_->Best(dev_, Sgemm(256, 256, 256)))->measurement.config().name(), "slow");
  EXPECT_EQ((*store_->Best(dev_, Sgemm(256, 256, 256)))->measurement.config().name(), "slow");  // cached
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("fast", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  EXPECT_EQ((*store_->Best(dev_, Sgemm(256, 256, 256)))->measurement.config().name(), "fast");
  ASSERT_TRUE(store_->SetJobBaseline(id, 0.5, 4000, "cuBLAS").ok());
  EXPECT_DOUBLE_EQ((*store_->Best(dev_, Sgemm(256, 256, 256)))->baseline_ms, 0.5);
  // A failure changes nothing; another problem is its own entry.
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("bad", v1::MEASUREMENT_WRONG_ANSWER, 0.1), nullptr).ok());
  EXPECT_EQ((*store_->Best(dev_, Sgemm(256, 256, 256)))->measurement.config().name(), "fast");
  EXPECT_TRUE(absl::IsNotFound(store_->Best(dev_, Sgemm(512, 256, 256)).status()));
}

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

// Quotas count a client's queued and running jobs and their configs not yet
// measured; finished jobs and other clients do not count.
TEST_P(StoreTest, CreateJobEnforcesTheClientsQuota) {
  const ClientQuota a{"alice", 2, 15};
  auto first = store_->CreateJob(dev_, Sgemm(64, 64, 64), 10, 0, a);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(store_->GetJob(*first)->client(), "alice");
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(store_->AddMeasurement(*first, Meas("c" + std::to_string(i), v1::MEASUREMENT_OK, 1), nullptr).ok());
  }
  // 6 left + 10 > 15; 6 + 9 fits.
  auto over = store_->CreateJob(dev_, Sgemm(128, 64, 64), 10, 0, a);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("'alice' has 6 configs queued; this job adds 10 and the limit is 15"),
            std::string::npos)
      << over.status();
  auto second = store_->CreateJob(dev_, Sgemm(128, 64, 64), 9, 0, a);
  ASSERT_TRUE(second.ok()) << second.status();
  auto third = store_->CreateJob(dev_, Sgemm(256, 64, 64), 1, 0, a);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("has 2 queued or running jobs; the limit is 2"), std::string::npos);
  EXPECT_TRUE(store_->CreateJob(dev_, Sgemm(256, 64, 64), 10, 0, {"bob", 2, 15}).ok());
  ASSERT_TRUE(*store_->FinishJob(*first, v1::JOB_DONE));
  EXPECT_TRUE(store_->CreateJob(dev_, Sgemm(256, 64, 64), 1, 0, a).ok());
  EXPECT_EQ(*store_->CountJobs(dev_, v1::JOB_QUEUED), 3);
  EXPECT_EQ(*store_->CountJobs(dev_, v1::JOB_DONE), 1);
}

}  // namespace
}  // namespace tuned
