// The store's kernel sources on both backends (db/store_sources.cc): kernels
// that share a source store its text once, every reader gets the text back,
// a text whose digest another holds, and migration 8 from a schema 7
// database with rows.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "db/database.h"
#include "db/store_internal.h"
#include "tests/schema_v7.h"
#include "tests/store_test.h"

namespace tuned {
namespace {

using store_internal::Digest;
using store_internal::SourceDigest;

/// `bytes` of text that neither backend compresses much (PostgreSQL's
/// TOAST would), in lines, a different one for each `seed`.
std::string RandomSource(int seed, size_t bytes) {
  static constexpr char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-*/<>(){};, ";
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(seed + 1);
  std::string text = absl::StrCat("// source ", seed, "\n");
  while (text.size() < bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    text += (text.size() % 80 == 79) ? '\n' : kChars[(x >> 33) % (sizeof(kChars) - 1)];
  }
  return text;
}

KernelBinary Binary(const std::string& source, int i, std::string log = "") {
  return {source, absl::StrCat("_Z1kILi", i, "EEvv"),
          absl::StrCat(std::string("\x7f" "ELF\0", 5), "cubin ", i), absl::StrCat(".ptx ", i),
          std::move(log)};
}

CompileKey Key(const std::string& source, int i) {
  return {source, absl::StrCat("k<", i, ">"), "-default-device", "sm_90", "13.0"};
}

/// The first column of the first row of `sql` in the database at `url`,
/// through a connection of its own.
int64_t QueryOne(const std::string& url, const std::string& sql) {
  auto db = Database::Open(url);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return -1;
  auto rows = (*db)->Query(sql, {});
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status();
  return rows.ok() && !rows->empty() ? rows->Int(0, 0) : -1;
}

/// Bytes the database's tables take: the SQLite file's pages, or the
/// PostgreSQL tables of the kernels (with their TOAST and indexes).
int64_t DatabaseBytes(const std::string& url, const std::string& backend) {
  return QueryOne(url, backend == "sqlite"
                           ? "SELECT page_count * page_size FROM pragma_page_count(), "
                             "pragma_page_size()"
                           : "SELECT pg_total_relation_size('sources') + "
                             "pg_total_relation_size('binaries') + "
                             "pg_total_relation_size('compiled')");
}

/// A database that another connection can open: a file for SQLite (the
/// fixture's is in memory), the fixture's for PostgreSQL.
class SourcesTest : public StoreTest {
 protected:
  std::string Url() {
    if (GetParam() != "sqlite") return url_;
    fs::create_directories(dir_.path());
    return (dir_.path() / "tuned.db").string();
  }
  TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Backends, SourcesTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

TEST_P(SourcesTest, KernelsThatShareASourceStoreItOnce) {
  constexpr int kKernels = 32;
  const std::string source = RandomSource(1, 100 << 10);
  const std::string url = Url();
  auto s = Store::Open(url);
  ASSERT_TRUE(s.ok()) << s.status();
  Store& st = **s;
  const int64_t dev = *st.UpsertDevice(Gpu());
  const v1::Problem p = Sgemm(256, 256, 256);
  const int64_t job = *st.CreateJob(dev, p, kKernels, 0);
  // Each kernel as a sweep stores it: its compile-cache row (the binary with
  // NVRTC's log), then its measurement's binary, the same with the same log
  // (server/jobs/measure.cc): one binary row for both. The last kernel's
  // measurement comes without the log (as from an older daemon): a row of
  // its own.
  int64_t first_bytes = 0;
  for (int i = 0; i < kKernels; ++i) {
    CompiledRow row;
    row.ok = true;
    row.message = absl::StrCat("ptxas info: Used ", 32 + i, " registers");
    row.binary = Binary(source, i, row.message);
    ASSERT_TRUE(st.AddCompiled(Key(source, i), row).ok());
    const KernelBinary bin = Binary(source, i, i + 1 < kKernels ? row.message : "");
    ASSERT_TRUE(
        st.AddMeasurement(job, Meas(absl::StrCat("c", i), v1::MEASUREMENT_OK, 1.0 + i), &bin).ok());
    if (i == 0) first_bytes = DatabaseBytes(url, GetParam());
  }
  CompiledRow error;
  error.message = "error: nope";
  ASSERT_TRUE(st.AddCompiled(Key(source, kKernels), error).ok());

  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources"), 1);
  EXPECT_EQ(QueryOne(url, "SELECT SUM(LENGTH(text)) FROM sources"),
            static_cast<int64_t>(source.size()));
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM binaries"), kKernels + 1);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM compiled"), kKernels + 1);
  // 31 more kernels of the source: a few pages, not 62 more copies of it.
  const int64_t grown = DatabaseBytes(url, GetParam()) - first_bytes;
  EXPECT_GT(first_bytes, static_cast<int64_t>(source.size()));
  EXPECT_LT(grown, static_cast<int64_t>(source.size())) << "first kernel: " << first_bytes;

  // Every reader gets the text back as it was given.
  auto best = st.Best(dev, p);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->measurement.config().name(), "c0");
  EXPECT_EQ((*best)->binary.source, source);
  EXPECT_EQ((*best)->binary.cubin, Binary(source, 0).cubin);
  auto bin = st.MeasurementBinary(job, "c7");
  ASSERT_TRUE(bin.ok()) << bin.status();
  EXPECT_EQ(bin->source, source);
  EXPECT_EQ(bin->entry, Binary(source, 7).entry);
  EXPECT_EQ(bin->log, "ptxas info: Used 39 registers");  // the compile cache's row
  auto hit = st.LookupCompiled(Key(source, 5));
  ASSERT_TRUE(hit.ok() && hit->has_value()) << hit.status();
  EXPECT_EQ((*hit)->binary.source, source);
  EXPECT_EQ((*hit)->binary.log, "ptxas info: Used 37 registers");
  auto miss = st.LookupCompiled(Key(source, kKernels));
  ASSERT_TRUE(miss.ok() && miss->has_value()) << miss.status();
  EXPECT_FALSE((*miss)->ok);
  EXPECT_TRUE((*miss)->binary.source.empty());  // a compile error has no binary

  // Another text is another row; a key differing only in its source misses.
  const std::string other = RandomSource(2, 4 << 10);
  EXPECT_FALSE(st.LookupCompiled(Key(other, 5))->has_value());
  EXPECT_FALSE(*st.HasCompiled(Key(other, 5)));
  CompiledRow row;
  row.ok = true;
  row.binary = Binary(other, 5);
  ASSERT_TRUE(st.AddCompiled(Key(other, 5), row).ok());
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources"), 2);
  EXPECT_EQ((*st.LookupCompiled(Key(other, 5)))->binary.source, other);
  EXPECT_EQ((*st.LookupCompiled(Key(source, 5)))->binary.source, source);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources WHERE digest IS NULL"), 0);
}

// A digest is only a way to find a text: one that another text holds
// already (FNV-1a is easily collided on purpose) leaves the newcomer without
// it, found by its text, stored once all the same.
TEST_P(SourcesTest, ATextWhoseDigestAnotherHoldsIsStoredWithoutIt) {
  const std::string url = Url();
  const std::string source = RandomSource(3, 8 << 10);
  auto s = Store::Open(url);
  ASSERT_TRUE(s.ok()) << s.status();
  {
    auto db = Database::Open(url);
    ASSERT_TRUE(db.ok()) << db.status();
    auto squat = (*db)->Query("INSERT INTO sources (digest, text) VALUES (?1, ?2)",
                              {SourceDigest(source), std::string_view("another text")});
    ASSERT_TRUE(squat.ok()) << squat.status();
  }
  Store& st = **s;
  CompiledRow row;
  row.ok = true;
  row.binary = Binary(source, 1);
  ASSERT_TRUE(st.AddCompiled(Key(source, 1), row).ok());
  row.binary = Binary(source, 2);
  ASSERT_TRUE(st.AddCompiled(Key(source, 2), row).ok());
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources"), 2);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources WHERE digest IS NULL"), 1);
  for (int i : {1, 2}) {
    auto hit = st.LookupCompiled(Key(source, i));
    ASSERT_TRUE(hit.ok() && hit->has_value()) << hit.status();
    EXPECT_EQ((*hit)->binary.source, source);
    EXPECT_EQ((*hit)->binary.entry, Binary(source, i).entry);
  }
  s->reset();
  auto again = Store::Open(url);  // fills in digests: this one stays without
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources WHERE digest IS NULL"), 1);
  EXPECT_TRUE(*(*again)->HasCompiled(Key(source, 2)));
}

// A schema 7 database whose binaries and compile cache hold their sources
// inline (two texts, one shared by three binaries and four cache rows):
// migrations/8.sql moves each text to `sources` once, Store::Open gives
// them their digests, and every row reads back as before.
TEST_P(SourcesTest, SchemaSevenIsMigratedKeepingEveryRowReadable) {
  auto old = UnopenedDatabase(GetParam(), dir_);
  ASSERT_TRUE(old.ok()) << old.status();
  const std::string url = *old;
  const std::string big = RandomSource(4, 64 << 10), small = RandomSource(5, 2 << 10);
  const std::vector<KernelBinary> bins = {Binary(big, 0), Binary(big, 1), Binary(big, 2, "log"),
                                          Binary(small, 3)};
  const std::vector<CompileKey> keys = {Key(big, 0), Key(big, 1), Key(big, 2), Key(small, 3),
                                        Key(big, 4)};  // the last: a compile error
  const v1::Problem p = Sgemm(128, 128, 128);
  const int64_t job = 1;
  {
    // Raw SQL (a Database would migrate it): the job and its measurements
    // as schema 10 stored them, then schema 7's tables.
    auto text = [](absl::string_view t) {
      EXPECT_EQ(t.find('\''), absl::string_view::npos);
      return absl::StrCat("'", t, "'");
    };
    auto bytes = [&](absl::string_view b) {
      const std::string hex = absl::BytesToHexString(b);
      return GetParam() == "sqlite" ? absl::StrCat("X'", hex, "'") : absl::StrCat("'\\x", hex, "'::bytea");
    };
    std::string sql =
        "INSERT INTO devices (name, cc_major, cc_minor, driver_version, nvrtc_version, sm_count) "
        "VALUES ('NVIDIA H100 80GB HBM3', 9, 0, 13000, '13.0', 132);"
        "INSERT INTO jobs (device_id, family, dtype, shape, state, total, created_unix) "
        "VALUES (1, 'FAMILY_SGEMM', 'DTYPE_F32', '128x128x128', 'JOB_QUEUED', 4, 1);";
    for (size_t i = 0; i < bins.size(); ++i) {
      absl::StrAppend(&sql, "INSERT INTO measurements (job_id, device_id, family, dtype, shape, config, "
                            "params, status, median_ms, created_unix) VALUES (1, 1, 'FAMILY_SGEMM', "
                            "'DTYPE_F32', '128x128x128', 'c", i, "', 'BK=8,BM=128,BN=64', 'MEASUREMENT_OK', ",
                      1.0 + i, ", 1);");
    }
    for (const std::string& step : SchemaSevenBinaryTables(GetParam())) absl::StrAppend(&sql, step, ";");
    // Schema 9's daemon columns and schema 10's epilogue columns, which
    // migrations/9.sql and 10.sql add back.
    absl::StrAppend(&sql, "ALTER TABLE daemons DROP COLUMN user_kernels;",
                    "ALTER TABLE daemons DROP COLUMN sandbox;", "ALTER TABLE jobs DROP COLUMN epilogue;",
                    "ALTER TABLE measurements DROP COLUMN epilogue;");
    for (size_t i = 0; i < bins.size(); ++i) {
      const KernelBinary& b = bins[i];
      absl::StrAppend(&sql, "INSERT INTO binaries (digest, source, entry, cubin, ptx, log) VALUES (",
                      Digest(b), ", ", text(b.source), ", ", text(b.entry), ", ", bytes(b.cubin), ", ",
                      text(b.ptx), ", ", text(b.log), ");");
      const std::string id = absl::StrCat("(SELECT id FROM binaries WHERE entry = ", text(b.entry), ")");
      absl::StrAppend(&sql, "UPDATE measurements SET binary_id = ", id, " WHERE config = 'c", i, "';");
      const CompileKey& k = keys[i];
      absl::StrAppend(&sql, "INSERT INTO compiled (digest, source, name_expression, options, arch, "
                            "nvrtc_version, ok, message, binary_id, created_unix) VALUES (",
                      Digest(k), ", ", text(k.source), ", ", text(k.name_expression), ", ", text(k.options), ", ",
                      text(k.arch), ", ", text(k.nvrtc_version), ", 1, ", text(b.log), ", ", id, ", 1);");
    }
    const CompileKey& bad = keys.back();
    absl::StrAppend(&sql, "INSERT INTO compiled (digest, source, name_expression, options, arch, "
                          "nvrtc_version, ok, message, created_unix) VALUES (",
                    Digest(bad), ", ", text(bad.source), ", ", text(bad.name_expression), ", ",
                    text(bad.options), ", ", text(bad.arch), ", ", text(bad.nvrtc_version),
                    ", 0, 'error: nope', 1);");
    absl::StrAppend(&sql, GetParam() == "sqlite" ? "PRAGMA user_version = 7;"
                                                 : "UPDATE schema_version SET version = 7;");
    ASSERT_EQ(MakeSchemaTen(GetParam(), url, sql), absl::OkStatus());
  }
  ASSERT_FALSE(HasFailure());

  auto s = Store::Open(url);
  ASSERT_TRUE(s.ok()) << s.status();
  Store& st = **s;
  EXPECT_EQ(QueryOne(url, GetParam() == "sqlite" ? "PRAGMA user_version"
                                                 : "SELECT max(version) FROM schema_version"),
            Store::kSchemaVersion);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources"), 2);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM binaries"), 4);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM compiled"), 5);
  // Store::Open gave the moved texts their digests.
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources WHERE digest IS NULL"), 0);
  EXPECT_EQ(QueryOne(url, absl::StrCat("SELECT COUNT(*) FROM sources WHERE digest = ",
                                       SourceDigest(big), " OR digest = ", SourceDigest(small))),
            2);
  {
    auto db = Database::Open(url);  // the old columns are gone
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_FALSE((*db)->Query("SELECT source FROM binaries", {}).ok());
    EXPECT_FALSE((*db)->Query("SELECT source FROM compiled", {}).ok());
  }

  const int64_t dev = *st.UpsertDevice(Gpu());
  auto best = st.Best(dev, p);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->measurement.config().name(), "c0");
  EXPECT_EQ((*best)->binary.source, big);
  EXPECT_EQ((*best)->binary.cubin, bins[0].cubin);
  for (size_t i = 0; i < bins.size(); ++i) {
    auto bin = st.MeasurementBinary(job, absl::StrCat("c", i));
    ASSERT_TRUE(bin.ok()) << bin.status();
    EXPECT_EQ(bin->source, bins[i].source) << i;
    EXPECT_EQ(bin->entry, bins[i].entry) << i;
    EXPECT_EQ(bin->cubin, bins[i].cubin) << i;
    EXPECT_EQ(bin->ptx, bins[i].ptx) << i;
    EXPECT_EQ(bin->log, bins[i].log) << i;
    auto hit = st.LookupCompiled(keys[i]);  // the stored digests still find them
    ASSERT_TRUE(hit.ok() && hit->has_value()) << i << " " << hit.status();
    EXPECT_TRUE((*hit)->ok);
    EXPECT_EQ((*hit)->binary.source, bins[i].source) << i;
    EXPECT_EQ((*hit)->binary.cubin, bins[i].cubin) << i;
  }
  auto bad = st.LookupCompiled(keys.back());
  ASSERT_TRUE(bad.ok() && bad->has_value()) << bad.status();
  EXPECT_FALSE((*bad)->ok);
  EXPECT_EQ((*bad)->message, "error: nope");

  // New kernels of a moved text share its row.
  CompiledRow row;
  row.ok = true;
  row.binary = Binary(big, 9);
  ASSERT_TRUE(st.AddCompiled(Key(big, 9), row).ok());
  ASSERT_TRUE(st.AddMeasurement(job, Meas("c9", v1::MEASUREMENT_OK, 9), &row.binary).ok());
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM sources"), 2);
  EXPECT_EQ(QueryOne(url, "SELECT COUNT(*) FROM binaries"), 5);
  if (GetParam() == "sqlite") {
    s->reset();
    EXPECT_EQ(QueryInt(url, "PRAGMA integrity_check"), 0);  // "ok" reads as 0
    EXPECT_EQ(QueryInt(url, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
  }
}

}  // namespace
}  // namespace tuned
