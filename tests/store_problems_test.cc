// The problems table (schema 11) on both backends: a database made at
// schema 10 with jobs, measurements and crashes of every key field is
// migrated (migrations/11.sql and KeyMigratedProblems), and every row keeps
// its problem, its measurements, its best and its crash counts.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/store_test.h"


namespace tuned {
namespace {

const std::string kHash(64, 'a');  // a kernel spec's version

/// Rows as schema 10 stored them (ids from 1, in order: no id is given, so
/// that PostgreSQL's identities go on from them): jobs 1 and 6 share a
/// problem, 1 and 3 a shape (not a key).
std::string SchemaTenRows() {
  return absl::StrCat(
      "INSERT INTO devices (name, cc_major, cc_minor, driver_version, nvrtc_version, sm_count) "
      "VALUES ('NVIDIA H100 80GB HBM3', 9, 0, 13000, '13.0', 132);"
      "INSERT INTO jobs (device_id, family, dtype, shape, state, created_unix, baseline_ms, "
      "math, layout, epilogue) VALUES "
      "(1, 'FAMILY_SGEMM', 'DTYPE_F32', '64x64x64', 'JOB_DONE', 1, 0.9, "
      "'MATH_IEEE_FP32', 'LAYOUT_NN', 'EPILOGUE_NONE'),"
      "(1, 'FAMILY_SGEMM', 'DTYPE_BF16', '16x4096x4096', 'JOB_DONE', 2, 0.9, "
      "'MATH_IEEE_FP32', 'LAYOUT_NT', 'EPILOGUE_BIAS_RELU'),"
      "(1, 'FAMILY_SGEMM', 'DTYPE_F32', '64x64x64', 'JOB_DONE', 3, 0.9, "
      "'MATH_TF32', 'LAYOUT_NN', 'EPILOGUE_NONE'),"
      "(1, 'matmul@", kHash, "', 'DTYPE_UNSPECIFIED', '128x64x32', 'JOB_DONE', 4, 0.9, "
      "'MATH_IEEE_FP32', 'LAYOUT_NN', 'EPILOGUE_NONE'),"
      "(1, 'FAMILY_TRANSPOSE', 'DTYPE_F32', '4096x8192', 'JOB_RUNNING', 5, NULL, "
      "'MATH_IEEE_FP32', 'LAYOUT_NN', 'EPILOGUE_NONE'),"
      "(1, 'FAMILY_SGEMM', 'DTYPE_F32', '64x64x64', 'JOB_DONE', 6, 0.9, "
      "'MATH_IEEE_FP32', 'LAYOUT_NN', 'EPILOGUE_NONE'),"
      "(1, 'FAMILY_SGEMM', 'DTYPE_F16_F32', '64x64x64', 'JOB_DONE', 7, 0.9, "
      "'MATH_FP32_ACCURATE', 'LAYOUT_TT', 'EPILOGUE_BIAS_GELU_TANH');"
      // Each measurement copies its job's problem; job 6's is the problem's best.
      "INSERT INTO measurements (job_id, device_id, family, dtype, shape, config, params, status, "
      "median_ms, created_unix, math, layout, epilogue) "
      "SELECT id, device_id, family, dtype, shape, 'c' || id, 'BM=64', 'MEASUREMENT_OK', 1.0 / id, 1, "
      "math, layout, epilogue FROM jobs;"
      "INSERT INTO measurements (job_id, device_id, family, dtype, shape, config, params, status, "
      "median_ms, created_unix, math, layout, epilogue) "
      "SELECT id, device_id, family, dtype, shape, 'slow', 'BM=64', 'MEASUREMENT_OK', 5, 1, "
      "math, layout, epilogue FROM jobs WHERE id = 1;"
      "INSERT INTO crashes (device_id, family, config, count, last) VALUES "
      "(1, 'FAMILY_SGEMM', 'bad', 2, 'x'), (1, 'matmul@", kHash, "', 'TILE_8', 1, 'y');");
}

/// The problems of jobs 1..7 above.
std::vector<v1::Problem> SchemaTenProblems() {
  std::vector<v1::Problem> out;
  auto add = [&](v1::Family f, v1::DType d, std::vector<int64_t> shape) -> v1::Problem& {
    v1::Problem& p = out.emplace_back();
    p.set_family(f);
    p.set_dtype(d);
    for (int64_t n : shape) p.add_shape(n);
    return p;
  };
  add(v1::FAMILY_SGEMM, v1::DTYPE_F32, {64, 64, 64});
  v1::Problem& bias = add(v1::FAMILY_SGEMM, v1::DTYPE_BF16, {16, 4096, 4096});
  bias.set_layout(v1::LAYOUT_NT);
  bias.set_epilogue(v1::EPILOGUE_BIAS_RELU);
  add(v1::FAMILY_SGEMM, v1::DTYPE_F32, {64, 64, 64}).set_math(v1::MATH_TF32);
  v1::Problem& spec = add(v1::FAMILY_UNSPECIFIED, v1::DTYPE_UNSPECIFIED, {128, 64, 32});
  spec.set_family_name("matmul");
  spec.set_spec_hash(kHash);
  add(v1::FAMILY_TRANSPOSE, v1::DTYPE_F32, {4096, 8192});
  add(v1::FAMILY_SGEMM, v1::DTYPE_F32, {64, 64, 64});
  v1::Problem& f16 = add(v1::FAMILY_SGEMM, v1::DTYPE_F16_F32, {64, 64, 64});
  f16.set_math(v1::MATH_FP32_ACCURATE);
  f16.set_layout(v1::LAYOUT_TT);
  f16.set_epilogue(v1::EPILOGUE_BIAS_GELU_TANH);
  return out;
}

TEST_P(StoreTest, SchemaTenMigratesEveryRowToItsProblem) {
  TempDir dir;
  auto url = UnopenedDatabase(GetParam(), dir);
  ASSERT_TRUE(url.ok()) << url.status();
  ASSERT_EQ(MakeSchemaTen(GetParam(), *url, SchemaTenRows()), absl::OkStatus());
  auto opened = Store::Open(*url);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  auto db = Database::Open(*url);  // at 11 now: opened as is
  ASSERT_TRUE(db.ok()) << db.status();

  // One row per (key, shape), in canonical form; no old column is left.
  auto keys = (*db)->Query("SELECT key, shape FROM problems", {});
  ASSERT_TRUE(keys.ok()) << keys.status();
  std::vector<std::string> rows;
  for (size_t r = 0; r < keys->size(); ++r) rows.push_back(keys->Text(r, 0) + " " + keys->Text(r, 1));
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "matmul@" + kHash + " 128x64x32",
                      "sgemm:a=bf16,b=bf16,c=bf16,compute=f32,layout=nt,epilogue=bias_relu 16x4096x4096",
                      "sgemm:a=f16,b=f16,c=f32,compute=f32,layout=tt,math=fp32_accurate,"
                      "epilogue=bias_gelu_tanh 64x64x64",
                      "sgemm:a=f32,b=f32,c=f32,compute=f32 64x64x64",
                      "sgemm:a=f32,b=f32,c=f32,compute=f32,math=tf32 64x64x64",
                      "transpose:a=f32,b=f32,c=f32,compute=f32 4096x8192",
                  }));
  for (const char* column : {"family", "dtype", "shape", "math", "layout", "epilogue"}) {
    for (const char* table : {"jobs", "measurements"}) {
      EXPECT_FALSE((*db)->Query(absl::StrCat("SELECT ", column, " FROM ", table), {}).ok())
          << table << "." << column;
    }
  }

  // Each job reads back its problem; its measurements and best are found by it.
  const std::vector<v1::Problem> problems = SchemaTenProblems();
  for (size_t i = 0; i < problems.size(); ++i) {
    const int64_t id = static_cast<int64_t>(i) + 1;
    auto job = store.GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->problem().DebugString(), problems[i].DebugString()) << "job " << id;
    EXPECT_EQ(job->done(), id == 1 ? 2 : 1) << "job " << id;
  }
  EXPECT_EQ(store.ListMeasurements(1, problems[0], 0)->size(), 3u);  // jobs 1 and 6
  EXPECT_EQ(store.ListMeasurements(1, problems[2], 0)->size(), 1u);
  auto best = store.Best(1, problems[0]);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->measurement.config().name(), "c6");
  for (size_t i : {1, 2, 3, 4, 6}) {
    auto b = store.Best(1, problems[i]);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)->measurement.config().name(), absl::StrCat("c", i + 1));
  }
  EXPECT_EQ(*store.TunedShapes(1, KeyOf(problems[1])), (std::vector<std::vector<int64_t>>{{16, 4096, 4096}}));
  EXPECT_EQ(*store.CrashCount(1, BuiltinKey(v1::FAMILY_SGEMM), "bad"), 2);
  EXPECT_EQ(*store.CrashCount(1, KeyOf(problems[3]), "TILE_8"), 1);

  // A new job of a migrated problem shares its row; a new problem adds one.
  auto again = store.CreateJob(1, problems[2], 1, 0);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 8);
  EXPECT_EQ((*db)->Query("SELECT COUNT(*) FROM problems", {})->Int(0, 0), 6);
  ASSERT_TRUE(store.CreateJob(1, Sgemm(64, 64, 32), 1, 0).ok());
  auto added = (*db)->Query("SELECT key, shape FROM problems WHERE shape = '64x64x32'", {});
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_EQ(added->size(), 1u);
  EXPECT_EQ(added->Text(0, 0), "sgemm:a=f32,b=f32,c=f32,compute=f32");
  opened->reset();
  EXPECT_TRUE(Store::Open(*url).ok());  // a migrated database opens as is
}

}  // namespace
}  // namespace tuned
