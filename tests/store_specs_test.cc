// The store's kernel specs on both backends (db/store_specs.cc), and a
// spec problem's jobs, measurements, bests, tuned shapes and crashes, kept
// per version by their key (core/problem_key.h: "name@hash").
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/database.h"
#include "families/spec/spec.h"
#include "tests/schema_v7.h"
#include "tests/store_test.h"

namespace tuned {
namespace {

v1::KernelSpec Spec(const std::string& name, const std::string& body) {
  v1::KernelSpec s;
  s.set_name(name);
  s.set_description("a test spec");
  s.set_source(absl::StrCat("extern \"C\" __global__ void k(float* a) { ", body, " }"));
  s.set_kernel("k");
  s.add_dims("m");
  s.add_dims("n");
  s.add_dims("k");
  return s;
}

/// A problem of the spec version `hash` of "matmul" (dtype unset).
v1::Problem SpecProblem(const std::string& hash, int64_t m, int64_t n, int64_t k) {
  v1::Problem p;
  p.set_family_name("matmul");
  p.set_spec_hash(hash);
  p.add_shape(m);
  p.add_shape(n);
  p.add_shape(k);
  return p;
}

TEST(FamilyTextTest, BuiltInFamiliesByNameAndSpecsByNameAtHash) {
  EXPECT_EQ(FormatFamily(KeyOf(Sgemm(8, 8, 8))), "sgemm");
  EXPECT_EQ(FormatFamily(BuiltinKey(v1::FAMILY_TRANSPOSE, v1::DTYPE_F32)), "transpose");
  const std::string hash = spec::SpecHash(Spec("matmul", "a[0] = 1;"));
  ASSERT_EQ(hash.size(), 64u);
  EXPECT_EQ(FormatFamily(KeyOf(SpecProblem(hash, 8, 8, 8))), "matmul@" + hash);
  EXPECT_EQ(FormatKey(KeyOf(SpecProblem(hash, 8, 8, 8))), "matmul@" + hash);
}

TEST_P(StoreTest, AddSpecStoresEachVersionOnce) {
  const v1::KernelSpec a = Spec("matmul", "a[0] = 1;");
  const v1::KernelSpec b = Spec("matmul", "a[0] = 2;");
  const std::string ha = spec::SpecHash(a), hb = spec::SpecHash(b);
  ASSERT_NE(ha, hb);

  auto added = store_->AddSpec(a, ha, "alice", 100);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_TRUE(*added);
  // Again (another daemon of the fleet, another client): nothing changes.
  auto again = store_->AddSpec(a, ha, "bob", 200);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);
  auto got = store_->GetSpec("matmul", ha);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->client, "alice");
  EXPECT_EQ(got->created_unix, 100);
  EXPECT_EQ(got->versions, 1);
  EXPECT_EQ(got->hash, ha);
  EXPECT_EQ(got->spec.DebugString(), a.DebugString());

  auto second = store_->AddSpec(b, hb, "bob", 200);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(*second);
  EXPECT_EQ(store_->GetSpec("matmul", ha)->versions, 2);
  EXPECT_EQ(store_->GetSpec("matmul", hb)->client, "bob");

  EXPECT_EQ(store_->AddSpec(v1::KernelSpec(), ha, "alice", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const std::string& bad : {std::string("abc"), std::string(64, 'A'), std::string(64, 'g'),
                                 std::string(63, '0'), std::string()}) {
    auto refused = store_->AddSpec(a, bad, "alice", 1);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(store_->ListSpecs()->size(), 1u);
  EXPECT_EQ(store_->GetSpec("matmul", ha)->versions, 2);
}

// Daemons of a fleet (a store each, on one database) registering the same
// versions at once: each version is stored once, by one of them, and none fails.
TEST_P(StoreTest, DaemonsRegisteringTheSameSpecAtOnceStoreItOnce) {
  TempDir dir;
  std::string url = url_;
  if (GetParam() == "sqlite") {
    fs::create_directories(dir.path());
    url = (dir.path() / "fleet.db").string();
  }
  constexpr int kDaemons = 4, kVersions = 8;
  std::unique_ptr<Store> stores[kDaemons];
  for (auto& store : stores) {
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << s.status();
    store = *std::move(s);
  }
  std::vector<v1::KernelSpec> specs;
  for (int v = 0; v < kVersions; ++v) {
    specs.push_back(Spec("matmul", absl::StrCat("a[0] = ", v, ";")));
  }
  std::atomic<int> ready{0}, added{0}, failed{0};
  std::vector<std::thread> threads;
  for (int d = 0; d < kDaemons; ++d) {
    threads.emplace_back([&, d] {
      for (++ready; ready < kDaemons;) std::this_thread::yield();  // start together
      for (const v1::KernelSpec& spec : specs) {
        auto r = stores[d]->AddSpec(spec, spec::SpecHash(spec), absl::StrCat("daemon", d), 100);
        if (!r.ok()) {
          ++failed;
          ADD_FAILURE() << r.status();
        } else if (*r) {
          ++added;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(added, kVersions);
  auto newest = stores[0]->GetSpec("matmul");
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->versions, kVersions);
}

TEST_P(StoreTest, GetSpecNewestByTimeThenOrderByHashAndNotFound) {
  const v1::KernelSpec v1s = Spec("matmul", "a[0] = 1;");
  const v1::KernelSpec v2s = Spec("matmul", "a[0] = 2;");
  const v1::KernelSpec v3s = Spec("matmul", "a[0] = 3;");
  const v1::KernelSpec old = Spec("matmul", "a[0] = 4;");
  const std::string h1 = spec::SpecHash(v1s), h2 = spec::SpecHash(v2s), h3 = spec::SpecHash(v3s),
                    h4 = spec::SpecHash(old);
  ASSERT_TRUE(store_->AddSpec(v1s, h1, "c", 100).ok());
  ASSERT_TRUE(store_->AddSpec(v2s, h2, "c", 200).ok());
  auto newest = store_->GetSpec("matmul", "");
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->hash, h2);
  EXPECT_EQ(newest->spec.source(), v2s.source());
  EXPECT_EQ(newest->versions, 2);
  // The same second: the one registered last is the newest.
  ASSERT_TRUE(store_->AddSpec(v3s, h3, "c", 200).ok());
  EXPECT_EQ(store_->GetSpec("matmul")->hash, h3);
  // Registered last but created earlier (a clock behind): not the newest.
  ASSERT_TRUE(store_->AddSpec(old, h4, "c", 50).ok());
  EXPECT_EQ(store_->GetSpec("matmul")->hash, h3);
  EXPECT_EQ(store_->GetSpec("matmul")->versions, 4);

  auto first = store_->GetSpec("matmul", h1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->spec.source(), v1s.source());
  EXPECT_EQ(first->created_unix, 100);

  auto unknown = store_->GetSpec("softmax", "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "no kernel spec named 'softmax' is registered");
  auto unknown_name = store_->GetSpec("softmax", h1);
  EXPECT_EQ(unknown_name.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown_name.status().message(),
            absl::StrCat("no kernel spec named 'softmax' is registered (version '", h1, "' asked)"));
  const std::string h0(64, '0');
  auto unknown_version = store_->GetSpec("matmul", h0);
  EXPECT_EQ(unknown_version.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown_version.status().message(),
            absl::StrCat("kernel spec 'matmul' has no version '", h0, "' (4 versions registered)"));

  // A prefix of the hash, as tunectl prints it (12 digits) or longer, names
  // the one version it starts; a short, non-hex or shared prefix is refused.
  auto by_prefix = store_->GetSpec("matmul", h1.substr(0, 12));
  ASSERT_TRUE(by_prefix.ok()) << by_prefix.status();
  EXPECT_EQ(by_prefix->hash, h1);
  EXPECT_EQ(store_->GetSpec("matmul", h2.substr(0, 40))->hash, h2);
  EXPECT_EQ(store_->GetSpec("matmul", h1.substr(0, 7)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetSpec("matmul", "XYZ0123456789").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetSpec("matmul", std::string(12, '0')).status().code(), absl::StatusCode::kNotFound);
  const std::string shared = "abcdef01" + std::string(55, '0');
  ASSERT_TRUE(store_->AddSpec(Spec("twins", "a[0] = 5;"), shared + "1", "c", 300).ok());
  ASSERT_TRUE(store_->AddSpec(Spec("twins", "a[0] = 6;"), shared + "2", "c", 300).ok());
  auto ambiguous = store_->GetSpec("twins", "abcdef01");
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("several versions"), std::string::npos) << ambiguous.status();
  EXPECT_EQ(store_->GetSpec("twins", shared + "2")->spec.source(), Spec("twins", "a[0] = 6;").source());
}

TEST_P(StoreTest, ListSpecsGivesEachNamesNewestVersionByName) {
  auto empty = store_->ListSpecs();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
  const v1::KernelSpec s1 = Spec("softmax", "a[0] = 1;");
  const v1::KernelSpec m1 = Spec("matmul", "a[0] = 1;");
  const v1::KernelSpec m2 = Spec("matmul", "a[0] = 2;");
  ASSERT_TRUE(store_->AddSpec(s1, spec::SpecHash(s1), "alice", 300).ok());
  ASSERT_TRUE(store_->AddSpec(m1, spec::SpecHash(m1), "alice", 100).ok());
  ASSERT_TRUE(store_->AddSpec(m2, spec::SpecHash(m2), "bob", 200).ok());
  auto list = store_->ListSpecs();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].spec.name(), "matmul");
  EXPECT_EQ((*list)[0].hash, spec::SpecHash(m2));
  EXPECT_EQ((*list)[0].client, "bob");
  EXPECT_EQ((*list)[0].created_unix, 200);
  EXPECT_EQ((*list)[0].versions, 2);
  EXPECT_EQ((*list)[0].spec.source(), m2.source());
  EXPECT_EQ((*list)[1].spec.name(), "softmax");
  EXPECT_EQ((*list)[1].hash, spec::SpecHash(s1));
  EXPECT_EQ((*list)[1].versions, 1);
}

TEST_P(StoreTest, StoredSpecBytesThatDoNotParseAreDataLoss) {
  // A database file (SQLite) or this test's database (PostgreSQL), written
  // to directly.
  TempDir dir;
  std::string url = url_;
  std::unique_ptr<Store> store;
  if (GetParam() == "sqlite") {
    fs::create_directories(dir.path());
    url = (dir.path() / "specs.db").string();
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << s.status();
    store = *std::move(s);
  }
  Store* st = store != nullptr ? store.get() : store_.get();
  const v1::KernelSpec a = Spec("matmul", "a[0] = 1;");
  const std::string ha = spec::SpecHash(a);
  ASSERT_TRUE(st->AddSpec(a, ha, "alice", 100).ok());
  auto db = Database::Open(url);
  ASSERT_TRUE(db.ok()) << db.status();
  const std::string garbage = "\x0a\x05" "ab";  // a name of 5 bytes, cut after 2
  auto update = (*db)->Query("UPDATE kernel_specs SET spec = ?1", {Blob{garbage}});
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_EQ(update->affected(), 1);
  auto got = st->GetSpec("matmul", ha);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(),
            absl::StrCat("stored kernel spec 'matmul' version ", ha, " does not parse"));
  EXPECT_EQ(st->GetSpec("matmul").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(st->ListSpecs().status().code(), absl::StatusCode::kDataLoss);
}

// A database of schema 5 (no kernel_specs, no layout columns, sources
// inline) with a job and its measurement: migrations/6.sql adds the table,
// 7.sql the columns, 8.sql the sources, 11.sql the problems; the rows keep
// their problem and are LAYOUT_NN.
TEST_P(StoreTest, SchemaFiveIsMigratedToTheNewestKeepingItsRows) {
  TempDir dir;
  auto old = UnopenedDatabase(GetParam(), dir);
  ASSERT_TRUE(old.ok()) << old.status();
  const std::string url = *old;
  std::string sql =
      "INSERT INTO devices (name, cc_major, cc_minor, driver_version, nvrtc_version, sm_count) "
      "VALUES ('NVIDIA H100 80GB HBM3', 9, 0, 13000, '13.0', 132);"
      "INSERT INTO jobs (device_id, family, dtype, shape, state, total, created_unix) "
      "VALUES (1, 'FAMILY_SGEMM', 'DTYPE_F32', '64x64x64', 'JOB_QUEUED', 1, 1);"
      "INSERT INTO measurements (job_id, device_id, family, dtype, shape, config, params, status, "
      "median_ms, created_unix) VALUES (1, 1, 'FAMILY_SGEMM', 'DTYPE_F32', '64x64x64', 'a', "
      "'BK=8,BM=128,BN=64', 'MEASUREMENT_OK', 0.5, 1);"
      "DROP TABLE kernel_specs;";
  for (const std::string& step : SchemaSevenBinaryTables(GetParam())) absl::StrAppend(&sql, step, ";");
  // Schema 7's layout columns, schema 9's daemon columns and schema 10's
  // epilogue columns, which migrations/7.sql, 9.sql and 10.sql add back.
  for (const char* drop : {"ALTER TABLE jobs DROP COLUMN layout", "ALTER TABLE measurements DROP COLUMN layout",
                           "ALTER TABLE jobs DROP COLUMN epilogue",
                           "ALTER TABLE measurements DROP COLUMN epilogue",
                           "ALTER TABLE daemons DROP COLUMN user_kernels",
                           "ALTER TABLE daemons DROP COLUMN sandbox"}) {
    absl::StrAppend(&sql, drop, ";");
  }
  absl::StrAppend(&sql, GetParam() == "sqlite" ? "PRAGMA user_version = 5;"
                                               : "UPDATE schema_version SET version = 5;");
  ASSERT_EQ(MakeSchemaTen(GetParam(), url, sql), absl::OkStatus());
  auto s = Store::Open(url);
  ASSERT_TRUE(s.ok()) << s.status();
  auto version = Database::Open(url);
  ASSERT_TRUE(version.ok()) << version.status();
  auto v = (*version)->Query(GetParam() == "sqlite" ? "PRAGMA user_version"
                                                    : "SELECT max(version) FROM schema_version",
                             {});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->Int(0, 0), Store::kSchemaVersion);
  auto dev = (*s)->UpsertDevice(Gpu());
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto best = (*s)->Best(*dev, Sgemm(64, 64, 64));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->measurement.config().name(), "a");
  EXPECT_EQ(*(*s)->TunedShapes(*dev, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32)),
            (std::vector<std::vector<int64_t>>{{64, 64, 64}}));
  const v1::KernelSpec a = Spec("matmul", "a[0] = 1;");
  auto added = (*s)->AddSpec(a, spec::SpecHash(a), "alice", 100);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_TRUE(*added);
  EXPECT_EQ((*s)->ListSpecs()->size(), 1u);
}

// Two versions of a spec and a built-in family, on the same shapes: each
// keeps its own jobs, measurements, best and tuned shapes.
TEST_P(StoreTest, SpecVersionsKeepTheirOwnJobsMeasurementsBestAndShapes) {
  const std::string ha = spec::SpecHash(Spec("matmul", "a[0] = 1;"));
  const std::string hb = spec::SpecHash(Spec("matmul", "a[0] = 2;"));
  const v1::Problem a64 = SpecProblem(ha, 64, 64, 64), a128 = SpecProblem(ha, 128, 64, 32);
  const v1::Problem b64 = SpecProblem(hb, 64, 64, 64), b32 = SpecProblem(hb, 32, 32, 32);
  const int64_t ja64 = NewJob(a64), ja128 = NewJob(a128), jb64 = NewJob(b64), jb32 = NewJob(b32);
  const int64_t js = NewJob(Sgemm(64, 64, 64));
  ASSERT_TRUE(store_->AddMeasurement(ja64, Meas("TILE_16", v1::MEASUREMENT_OK, 0.5), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(ja64, Meas("TILE_32", v1::MEASUREMENT_OK, 0.25), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(ja128, Meas("TILE_16", v1::MEASUREMENT_OK, 0.75), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(jb64, Meas("TILE_8", v1::MEASUREMENT_OK, 0.125), nullptr).ok());
  ASSERT_TRUE(
      store_->AddMeasurement(jb64, Meas("TILE_64", v1::MEASUREMENT_WRONG_ANSWER, 0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(jb32, Meas("TILE_8", v1::MEASUREMENT_OK, 0.0625), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(js, Meas("simt", v1::MEASUREMENT_OK, 0.03125), nullptr).ok());

  // The job's problem reads back as stored: name and version, no enum.
  auto job = store_->GetJob(ja64);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->problem().family(), v1::FAMILY_UNSPECIFIED);
  EXPECT_EQ(job->problem().family_name(), "matmul");
  EXPECT_EQ(job->problem().spec_hash(), ha);
  EXPECT_EQ(job->problem().dtype(), v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(std::vector<int64_t>(job->problem().shape().begin(), job->problem().shape().end()),
            (std::vector<int64_t>{64, 64, 64}));
  EXPECT_EQ(job->done(), 2);
  EXPECT_EQ(job->best().config().name(), "TILE_32");
  EXPECT_EQ(store_->GetJob(jb64)->problem().spec_hash(), hb);
  EXPECT_EQ(store_->GetJob(js)->problem().family(), v1::FAMILY_SGEMM);
  EXPECT_TRUE(store_->GetJob(js)->problem().family_name().empty());
  auto jobs = store_->ListJobs(0);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 5u);
  int spec_jobs = 0;
  for (const v1::Job& j : *jobs) {
    spec_jobs += j.problem().family_name() == "matmul" &&
                 (j.problem().spec_hash() == ha || j.problem().spec_hash() == hb);
  }
  EXPECT_EQ(spec_jobs, 4);

  auto names = [&](const v1::Problem& p) {
    std::vector<std::string> out;
    auto ms = store_->ListMeasurements(dev_, p, 0);
    EXPECT_TRUE(ms.ok()) << ms.status();
    if (ms.ok()) {
      for (const auto& m : *ms) out.push_back(m.config().name());
    }
    return out;
  };
  EXPECT_EQ(names(a64), (std::vector<std::string>{"TILE_32", "TILE_16"}));
  EXPECT_EQ(names(b64), (std::vector<std::string>{"TILE_8", "TILE_64"}));
  EXPECT_EQ(names(Sgemm(64, 64, 64)), (std::vector<std::string>{"simt"}));

  auto best_a = store_->Best(dev_, a64);
  ASSERT_TRUE(best_a.ok()) << best_a.status();
  EXPECT_EQ((*best_a)->measurement.config().name(), "TILE_32");
  EXPECT_DOUBLE_EQ((*best_a)->measurement.median_ms(), 0.25);
  auto best_b = store_->Best(dev_, b64);
  ASSERT_TRUE(best_b.ok()) << best_b.status();
  EXPECT_EQ((*best_b)->measurement.config().name(), "TILE_8");
  EXPECT_DOUBLE_EQ((*best_b)->measurement.median_ms(), 0.125);
  // A version with no measurement of the shape has no best (nor the cache's).
  auto none = store_->Best(dev_, SpecProblem(hb, 128, 64, 32));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(),
            absl::StrCat("no tuned kernel for matmul@", hb, " 128x64x32 on this device"));

  using Shapes = std::vector<std::vector<int64_t>>;
  auto shapes_a = store_->TunedShapes(dev_, KeyOf(a64));
  ASSERT_TRUE(shapes_a.ok()) << shapes_a.status();
  EXPECT_EQ(*shapes_a, (Shapes{{128, 64, 32}, {64, 64, 64}}));  // by text
  auto shapes_b = store_->TunedShapes(dev_, KeyOf(b64));
  ASSERT_TRUE(shapes_b.ok()) << shapes_b.status();
  EXPECT_EQ(*shapes_b, (Shapes{{32, 32, 32}, {64, 64, 64}}));
  EXPECT_EQ(*store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32)),
            (Shapes{{64, 64, 64}}));
  EXPECT_TRUE(store_->TunedShapes(dev_, ProblemKey{.family = "matmul", .spec_hash = std::string(64, '0')})
                  ->empty());

  // A spec problem names its version: without one, no job (its key would name none).
  auto unresolved = store_->CreateJob(dev_, SpecProblem("", 64, 64, 64), 1, 0);
  EXPECT_EQ(unresolved.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unresolved.status().message(),
            "a job's problem of kernel spec 'matmul' needs its spec_hash");
  EXPECT_EQ(store_->ListJobs(0)->size(), 5u);
}

TEST_P(StoreTest, CrashCountsAreKeptPerSpecVersion) {
  const std::string ha = spec::SpecHash(Spec("matmul", "a[0] = 1;"));
  const std::string hb = spec::SpecHash(Spec("matmul", "a[0] = 2;"));
  const ProblemKey ka = KeyOf(SpecProblem(ha, 8, 8, 8));
  const ProblemKey kb = KeyOf(SpecProblem(hb, 8, 8, 8));
  EXPECT_EQ(*store_->AddCrash(dev_, ka, "TILE_64", "MEASUREMENT_DEVICE_FAULT: x"), 1);
  EXPECT_EQ(*store_->AddCrash(dev_, ka, "TILE_64", "MEASUREMENT_RUN_TIMEOUT: y"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, ka, "TILE_64"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, kb, "TILE_64"), 0);
  EXPECT_EQ(*store_->AddCrash(dev_, kb, "TILE_64", "MEASUREMENT_DEVICE_FAULT: z"), 1);
  EXPECT_EQ(*store_->CrashCount(dev_, ka, "TILE_64"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, kb, "TILE_64"), 1);
  EXPECT_EQ(*store_->CrashCount(dev_, BuiltinKey(v1::FAMILY_SGEMM), "TILE_64"), 0);
}

}  // namespace
}  // namespace tuned
