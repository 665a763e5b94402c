// The store tests' fixture and helpers (tests/store*_test.cc, one binary:
// store_test). StoreTest runs each test on both backends: "sqlite", in
// memory or a temporary file, and "postgresql", a fresh database on a real
// server (tests/pg_server.h).
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/pg_server.h"
#include "tests/schema_v10.h"

namespace tuned {

namespace fs = std::filesystem;

inline int64_t Now() {
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
inline int64_t QueryInt(const fs::path& db_path, const char* sql) {
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

inline v1::Device Gpu(std::string nvrtc = "13.0") {
  v1::Device d;
  d.set_name("NVIDIA H100 80GB HBM3");
  d.set_cc_major(9);
  d.set_cc_minor(0);
  d.set_driver_version(13000);
  d.set_nvrtc_version(nvrtc);
  d.set_sm_count(132);
  return d;
}

inline v1::Problem Sgemm(int64_t m, int64_t n, int64_t k) {
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_F32);
  p.add_shape(m);
  p.add_shape(n);
  p.add_shape(k);
  return p;
}

/// The key of a built-in family's problems (core/problem_key.h KeyOf).
inline ProblemKey BuiltinKey(v1::Family family, v1::DType dtype = v1::DTYPE_UNSPECIFIED,
                             v1::Math math = v1::MATH_IEEE_FP32, v1::Layout layout = v1::LAYOUT_NN,
                             v1::Epilogue epilogue = v1::EPILOGUE_NONE) {
  v1::Problem p;
  p.set_family(family);
  p.set_dtype(dtype);
  p.set_math(math);
  p.set_layout(layout);
  p.set_epilogue(epilogue);
  return KeyOf(p);
}

inline v1::Measurement Meas(const std::string& name, v1::MeasurementStatus status, double ms) {
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

/// A database of `backend` that no store has opened: a file in `dir` for
/// SQLite, a new database on the process's server for PostgreSQL.
inline absl::StatusOr<std::string> UnopenedDatabase(const std::string& backend, const TempDir& dir) {
  if (backend == "postgresql") return (*SharedPgServer())->NewDatabase();
  fs::create_directories(dir.path());
  return (dir.path() / "old.db").string();
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

}  // namespace tuned
