// The store's measurements and bests on both backends
// (db/store_measurements.cc): idempotent adds, counts, ordering, math
// modes, tuned shapes, binaries, the baseline-only best, the bests held in
// memory and the reads that never wait behind a write.
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/store_test.h"

namespace tuned {
namespace {

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

// JobBest: the job's own OK measurements, fastest first, at most `top`;
// another job of the same problem and the failures are not among them.
TEST_P(StoreTest, JobBestIsTheJobsOwnOkMeasurementsFastestFirst) {
  const int64_t id = NewJob(Sgemm(512, 512, 512), 5, 0);
  const int64_t other = NewJob(Sgemm(512, 512, 512), 1, 0);
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("a", v1::MEASUREMENT_OK, 3.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("b", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("c", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("d", v1::MEASUREMENT_WRONG_ANSWER, 0.5), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("e", v1::MEASUREMENT_COMPILED, 0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(other, Meas("f", v1::MEASUREMENT_OK, 0.1), nullptr).ok());
  auto names = [](const std::vector<v1::Measurement>& ms) {
    std::vector<std::string> out;
    for (const auto& m : ms) out.push_back(m.config().name());
    return out;
  };
  auto all = store_->JobBest(id, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(names(*all), (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ((*all)[0].job_id(), id);
  EXPECT_DOUBLE_EQ((*all)[0].median_ms(), 1.0);
  auto two = store_->JobBest(id, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(names(*two), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(names(*store_->JobBest(other, 5)), std::vector<std::string>{"f"});
  EXPECT_TRUE(store_->JobBest(999, 5)->empty());
}

TEST_P(StoreTest, TunedShapesListsOnlyShapesWithAnOkMeasurement) {
  int64_t a = NewJob(Sgemm(1024, 1024, 1024), 2, 0);
  int64_t b = NewJob(Sgemm(1000, 17, 4097), 2, 0);
  int64_t c = NewJob(Sgemm(64, 64, 64), 2, 0);
  ASSERT_TRUE(store_->AddMeasurement(a, Meas("x", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(a, Meas("y", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(b, Meas("x", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(c, Meas("x", v1::MEASUREMENT_WRONG_ANSWER, 1.0), nullptr).ok());
  auto shapes = store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32));
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(*shapes, (std::vector<std::vector<int64_t>>{{1000, 17, 4097}, {1024, 1024, 1024}}));
  auto none = store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_TRANSPOSE, v1::DTYPE_F32));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

v1::Problem WithMath(v1::Problem p, v1::Math math) {
  p.set_math(math);
  return p;
}

// Each math mode of a problem has its own jobs' measurements, best and tuned
// shapes; MATH_IEEE_FP32's keys carry no mode (its label has no suffix), so
// stored fp32 measurements keep theirs.
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
            "no tuned kernel for sgemm:a=f32,b=f32,c=f32,compute=f32,math=tf32 8x8x8 on this device");

  // A mode with no OK measurement of a shape has no tuned shape there.
  const int64_t j_only_wrong = NewJob(WithMath(Sgemm(32, 32, 32), v1::MATH_FP32_ACCURATE));
  ASSERT_TRUE(store_->AddMeasurement(j_only_wrong, Meas("tc3", v1::MEASUREMENT_WRONG_ANSWER, 0),
                                     nullptr)
                  .ok());
  for (v1::Math math : {v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE, v1::MATH_TF32}) {
    auto shapes = store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32, math));
    ASSERT_TRUE(shapes.ok()) << shapes.status();
    EXPECT_EQ(*shapes, (std::vector<std::vector<int64_t>>{{64, 64, 64}})) << v1::Math_Name(math);
  }
}

// Each operand layout of a problem has its own jobs, measurements, best and
// tuned shapes, as a math mode has; LAYOUT_NN's keys are those stored
// before layouts (its label has no suffix).
TEST_P(StoreTest, LayoutsKeepTheirOwnMeasurementsBestAndShapes) {
  const v1::Problem nn = Sgemm(64, 64, 64);
  v1::Problem nt = nn, tt_tf32 = WithMath(nn, v1::MATH_TF32);
  nt.set_layout(v1::LAYOUT_NT);
  tt_tf32.set_layout(v1::LAYOUT_TT);
  const int64_t j_nn = NewJob(nn), j_nt = NewJob(nt), j_tt = NewJob(tt_tf32);
  ASSERT_TRUE(store_->AddMeasurement(j_nn, Meas("k", v1::MEASUREMENT_OK, 0.5), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_nt, Meas("k_nt", v1::MEASUREMENT_OK, 0.7), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_nt, Meas("k2_nt", v1::MEASUREMENT_OK, 0.6), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_tt, Meas("tc_tt", v1::MEASUREMENT_OK, 0.1), nullptr).ok());
  EXPECT_EQ(store_->GetJob(j_nt)->problem().layout(), v1::LAYOUT_NT);
  EXPECT_EQ(store_->GetJob(j_tt)->problem().layout(), v1::LAYOUT_TT);
  EXPECT_EQ(store_->GetJob(j_tt)->problem().math(), v1::MATH_TF32);
  EXPECT_EQ(store_->GetJob(j_nn)->problem().layout(), v1::LAYOUT_NN);
  for (auto [problem, names] : {std::pair{nn, std::vector<std::string>{"k"}},
                                {nt, std::vector<std::string>{"k2_nt", "k_nt"}},
                                {tt_tf32, std::vector<std::string>{"tc_tt"}}}) {
    auto ms = store_->ListMeasurements(dev_, problem, 0);
    ASSERT_TRUE(ms.ok()) << ms.status();
    std::vector<std::string> got;
    for (const auto& m : *ms) got.push_back(m.config().name());
    EXPECT_EQ(got, names) << v1::Layout_Name(problem.layout());
    auto best = store_->Best(dev_, problem);
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_EQ((*best)->measurement.config().name(), names.front());
  }
  v1::Problem tn = nn;
  tn.set_layout(v1::LAYOUT_TN);
  EXPECT_EQ(store_->Best(dev_, tn).status().message(),
            "no tuned kernel for sgemm:a=f32,b=f32,c=f32,compute=f32,layout=tn 64x64x64 on this device");
  for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT}) {
    auto shapes = store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32,
                                      v1::MATH_IEEE_FP32, layout));
    ASSERT_TRUE(shapes.ok()) << shapes.status();
    EXPECT_EQ(*shapes, (std::vector<std::vector<int64_t>>{{64, 64, 64}}));
  }
  EXPECT_TRUE(store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32,
                                  v1::MATH_IEEE_FP32, v1::LAYOUT_TN))
                  ->empty());
  EXPECT_TRUE(store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32,
                                  v1::MATH_IEEE_FP32, v1::LAYOUT_TT))
                  ->empty());
}

// Each epilogue of a problem has its own jobs, measurements, best (and the
// baseline a job timed when no kernel passed) and tuned shapes, as a
// layout has; EPILOGUE_NONE's keys are those stored before epilogues.
TEST_P(StoreTest, EpiloguesKeepTheirOwnMeasurementsBestAndShapes) {
  v1::Problem plain = Sgemm(16, 4096, 4096);
  plain.set_dtype(v1::DTYPE_BF16);
  plain.set_layout(v1::LAYOUT_NT);
  v1::Problem bias = plain, gelu = plain, relu = plain;
  bias.set_epilogue(v1::EPILOGUE_BIAS);
  gelu.set_epilogue(v1::EPILOGUE_BIAS_GELU_TANH);
  relu.set_epilogue(v1::EPILOGUE_BIAS_RELU);
  const int64_t j_plain = NewJob(plain), j_bias = NewJob(bias), j_gelu = NewJob(gelu);
  ASSERT_TRUE(store_->AddMeasurement(j_plain, Meas("k", v1::MEASUREMENT_OK, 0.5), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_bias, Meas("k_bias", v1::MEASUREMENT_OK, 0.7), nullptr).ok());
  ASSERT_TRUE(store_->AddMeasurement(j_gelu, Meas("k_gelu", v1::MEASUREMENT_OK, 0.9), nullptr).ok());
  EXPECT_EQ(store_->GetJob(j_gelu)->problem().epilogue(), v1::EPILOGUE_BIAS_GELU_TANH);
  EXPECT_EQ(store_->GetJob(j_plain)->problem().epilogue(), v1::EPILOGUE_NONE);
  for (auto [problem, name] : {std::pair{plain, "k"}, {bias, "k_bias"}, {gelu, "k_gelu"}}) {
    auto ms = store_->ListMeasurements(dev_, problem, 0);
    ASSERT_TRUE(ms.ok()) << ms.status();
    ASSERT_EQ(ms->size(), 1u) << v1::Epilogue_Name(problem.epilogue());
    EXPECT_EQ(ms->front().config().name(), name);
    auto best = store_->Best(dev_, problem);
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_EQ((*best)->measurement.config().name(), name);
    auto shapes = store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_BF16,
                                      v1::MATH_IEEE_FP32, v1::LAYOUT_NT, problem.epilogue()));
    ASSERT_TRUE(shapes.ok()) << shapes.status();
    EXPECT_EQ(*shapes, (std::vector<std::vector<int64_t>>{{16, 4096, 4096}}));
  }
  EXPECT_EQ(store_->Best(dev_, relu).status().message(),
            "no tuned kernel for sgemm:a=bf16,b=bf16,c=bf16,compute=f32,layout=nt,epilogue=bias_relu "
            "16x4096x4096 on this device");
  EXPECT_TRUE(store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_BF16,
                                  v1::MATH_IEEE_FP32, v1::LAYOUT_NT, v1::EPILOGUE_BIAS_RELU))
                  ->empty());
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
  EXPECT_EQ(none.status().message(), "no tuned kernel for sgemm:a=f32,b=f32,c=f32,compute=f32 1024x1024x1024 on this device");

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
            "no tuned kernel for transpose:a=f32,b=f32,c=f32,compute=f32 4096x8192 on this device");
}

// A problem none of whose configs passed verification: its newest DONE job
// that timed the baseline is a baseline-only best (server/jobs/jobs.cc Finish
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
  EXPECT_TRUE(
      store_->TunedShapes(dev_, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32, v1::MATH_TF32))->empty());

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

// A held best is replaced, before the write returns, by each write to its own
// problem, and by no other; another daemon's write is read at Refresh.
TEST_P(StoreTest, AHeldBestIsReplacedByTheWritesToItsProblemAlone) {
  TempDir dir;  // SQLite: a file, which a second daemon can open
  const std::string url = GetParam() == "sqlite" ? (dir.path() / "held.db").string() : url_;
  auto opened = Store::Open(url);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Store> store = *std::move(opened);
  ASSERT_TRUE(store->Refresh().ok());
  const int64_t dev = *store->UpsertDevice(Gpu());
  const v1::Problem p = Sgemm(256, 256, 256);
  const int64_t a = *store->CreateJob(dev, p, 10, 0);
  const int64_t b = *store->CreateJob(dev, Sgemm(512, 512, 512), 10, 0);
  ASSERT_TRUE(store->AddMeasurement(a, Meas("slow", v1::MEASUREMENT_OK, 2.0), nullptr).ok());
  std::shared_ptr<const BestRow> held = *store->Best(dev, p);
  EXPECT_TRUE(held->current());

  const uint64_t generation = store->BestGeneration();
  ASSERT_TRUE(store->AddMeasurement(b, Meas("other", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  ASSERT_TRUE(store->SetJobBaseline(b, 0.5, 1, "cuBLAS").ok());
  EXPECT_GT(store->BestGeneration(), generation);  // some best changed
  EXPECT_TRUE(held->current());                     // not this one
  EXPECT_EQ(*store->Best(dev, p), held);

  ASSERT_TRUE(store->AddMeasurement(a, Meas("fast", v1::MEASUREMENT_OK, 1.0), nullptr).ok());
  EXPECT_FALSE(held->current());
  held = *store->Best(dev, p);
  EXPECT_TRUE(held->current());
  EXPECT_EQ(held->measurement.config().name(), "fast");
  ASSERT_TRUE(store->SetJobBaseline(a, 0.7, 1, "cuBLAS").ok());
  EXPECT_FALSE(held->current());
  held = *store->Best(dev, p);
  EXPECT_DOUBLE_EQ(held->baseline_ms, 0.7);
  const StoredSpeedup judged{.speedup = 0.8, .ci_low = 0.7, .ci_high = 0.9, .pairs = 40, .note = ""};
  ASSERT_TRUE(store->SetJudged(a, "slow", {1.9, 1, ""}, judged).ok());
  EXPECT_FALSE(held->current());
  held = *store->Best(dev, p);
  EXPECT_EQ(held->measurement.config().name(), "slow");  // judged before unjudged
  EXPECT_EQ(held->speedup.pairs, 40);
  // A failure changes no best; this store's own writes are no other's.
  ASSERT_TRUE(store->AddMeasurement(a, Meas("bad", v1::MEASUREMENT_WRONG_ANSWER, 0.1), nullptr).ok());
  ASSERT_TRUE(store->Refresh().ok());
  EXPECT_TRUE(held->current());
  EXPECT_EQ(*store->Best(dev, p), held);

  // Another daemon's judging: read at this one's next Refresh.
  auto other = Store::Open(url);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->SetJudged(a, "fast", {0.9, 1, ""}, judged).ok());
  EXPECT_TRUE(held->current());
  ASSERT_TRUE(store->Refresh().ok());
  EXPECT_FALSE(held->current());
  held = *store->Best(dev, p);
  EXPECT_EQ(held->measurement.config().name(), "fast");
  EXPECT_DOUBLE_EQ(held->measurement.median_ms(), 0.9);
}

// The reads of a look-up (a best not held, the tuned shapes, the
// measurements) go on while a write of the store waits behind another
// connection's write transaction: SQLite's write lock, a PostgreSQL lock
// that lets readers through. Bounded: the other transaction ends after 3 s.
TEST_P(StoreTest, LookUpsDoNotWaitBehindAWriteTransaction) {
  TempDir dir;
  const std::string url = GetParam() == "sqlite" ? (dir.path() / "busy.db").string() : url_;
  auto opened = Store::Open(url);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Store> store = *std::move(opened);
  const int64_t dev = *store->UpsertDevice(Gpu());
  const v1::Problem p = Sgemm(256, 256, 256);
  const int64_t a = *store->CreateJob(dev, p, 10, 0);
  ASSERT_TRUE(store->AddMeasurement(a, Meas("a", v1::MEASUREMENT_OK, 1.0), nullptr).ok());

  auto blocker = Database::Open(url);
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  ASSERT_TRUE((*blocker)->Begin().ok());  // SQLite: BEGIN IMMEDIATE, the write lock
  if (GetParam() == "postgresql") {
    ASSERT_TRUE((*blocker)->Query("LOCK TABLE measurements IN EXCLUSIVE MODE", {}).ok());
  }
  std::promise<void> reads_done;
  std::thread release([&, done = reads_done.get_future()] {
    done.wait_for(std::chrono::seconds(3));
    (*blocker)->Rollback();
  });
  std::atomic<bool> written{false};
  absl::Status write;
  std::thread writer([&] {
    write = store->AddMeasurement(a, Meas("b", v1::MEASUREMENT_OK, 2.0), nullptr).status();
    written = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the write waits by now

  const auto start = std::chrono::steady_clock::now();
  auto best = store->Best(dev, p);
  auto shapes = store->TunedShapes(dev, BuiltinKey(v1::FAMILY_SGEMM, v1::DTYPE_F32));
  auto all = store->ListMeasurements(dev, p, 0);
  const auto took = std::chrono::steady_clock::now() - start;
  const bool write_waited = !written;
  reads_done.set_value();
  release.join();
  writer.join();

  EXPECT_TRUE(write_waited);
  EXPECT_LT(took, std::chrono::milliseconds(1000));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ((*best)->measurement.config().name(), "a");
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(shapes->size(), 1u);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 1u);
  EXPECT_TRUE(write.ok()) << write;  // once the other transaction ended
}

}  // namespace
}  // namespace tuned
