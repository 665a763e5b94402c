// The GPU tests' fixture (ctest label `gpu`: gpu_test.cc, gpu_layout_test.cc, gpu_gemm16_test.cc):
// one worker process shared by the tests, which skip with "SKIPPED: no GPU"
// where there is no GPU; where the driver reports one (GpuPresent), a worker
// that cannot start fails them instead. Helpers to prepare a problem in the
// worker, compile a family's configs, verify them, and launch sgemm configs
// as the client library does against cuBLAS.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "families/kernel_text.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"
#include "core/serving.h"
#include "core/status.h"
#include "server/worker/clock.h"
#include "server/worker/compiler.h"
#include "db/store.h"
#include "server/jobs/jobs.h"
#include "server/search/strategy.h"
#include "server/worker/measure.h"
#include "server/worker/problem.h"
#include "server/worker_client.h"
#include "tuned/kernel.h"

namespace tuned {

/// Whether the NVIDIA driver reports a GPU on this host: a device under
/// /proc/driver/nvidia/gpus (one folder per GPU, written by the kernel module)
/// or /dev/nvidia0. Independent of the CUDA runtime, so that a broken worker
/// on a GPU host fails the tests instead of reading as "no GPU".
inline bool GpuPresent() {
  std::error_code ec;
  const std::filesystem::path gpus = "/proc/driver/nvidia/gpus";
  if (std::filesystem::is_directory(gpus, ec) &&
      std::filesystem::directory_iterator(gpus, ec) != std::filesystem::directory_iterator()) {
    return true;
  }
  return std::filesystem::exists("/dev/nvidia0", ec);
}

/// ||got - want||_F / ||want||_F, in double.
inline double RelativeFrobenius(const std::vector<float>& got, const std::vector<float>& want) {
  double diff2 = 0, norm2 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff2 += std::pow(double(got[i]) - want[i], 2);
    norm2 += std::pow(double(want[i]), 2);
  }
  return std::sqrt(diff2 / norm2);
}

/// The worker the GPU tests share (one process for every test of a binary).
inline std::unique_ptr<Worker>& SharedWorker() {
  static std::unique_ptr<Worker> worker;
  return worker;
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!SharedWorker()) {
      auto w = Worker::Create(0, false);
      if (!w.ok()) {
        if (GpuPresent()) FAIL() << "the driver reports a GPU, but the worker failed: " << w.status();
        GTEST_SKIP() << "SKIPPED: no GPU: " << w.status();
      }
      SharedWorker() = *std::move(w);
    }
    worker_ = SharedWorker().get();
  }

  absl::Status Prepare(const Family& f, const Shape& shape,
                       v1::Math math = v1::MATH_IEEE_FP32,
                       v1::Layout layout = v1::LAYOUT_NN) {
    auto r = PrepareResult(f, shape, math, layout);
    return r.ok() ? absl::OkStatus() : r.status();
  }

  // Prepare, returning the baseline's time, error and the bound.
  absl::StatusOr<worker::PrepareResult> PrepareResult(const Family& f, const Shape& shape,
                                                      v1::Math math,
                                                      v1::Layout layout = v1::LAYOUT_NN) {
    worker::Prepare p;
    p.mutable_problem()->set_family(f.id());
    if (f.id() == v1::FAMILY_UNSPECIFIED) p.mutable_problem()->set_family_name(std::string(f.name()));
    p.mutable_problem()->set_dtype(f.id() == v1::FAMILY_UNSPECIFIED ? v1::DTYPE_UNSPECIFIED : f.dtype());
    if (auto spec = SpecWithSource(f)) *p.mutable_spec() = *std::move(spec);
    p.mutable_problem()->set_math(math);
    p.mutable_problem()->set_layout(layout);
    p.mutable_problem()->set_epilogue(f.epilogue());
    for (int64_t d : shape) p.mutable_problem()->add_shape(d);
    p.set_seed(7);
    // A spec's reference and default config come compiled, as the daemon's
    // compiler sends them.
    if (p.has_spec()) TUNED_RETURN_IF_ERROR(CompileSpecKernels(shape, worker_->device(), &p));
    auto r = worker_->Prepare(p);
    if (!r.ok()) return r.status();
    EXPECT_GT(r->baseline_ms(), 0);
    return r;
  }

  // Compiles every valid config of the family in math mode `math` and
  // layout `layout` (those `which` picks, where given), in parallel on the CPU.
  static std::vector<std::pair<Config, CompiledKernel>> CompileAll(
      const Family& f, const v1::Device& d, v1::Math math = v1::MATH_IEEE_FP32,
      const std::function<bool(const Config&)>& which = nullptr,
      v1::Layout layout = v1::LAYOUT_NN) {
    std::vector<Config> configs;
    for (Config& c : f.ValidSpace(d, nullptr, math, layout)) {
      if (!which || which(c)) configs.push_back(std::move(c));
    }
    const std::string arch = "sm_" + std::to_string(d.cc_major()) + std::to_string(d.cc_minor());
    const size_t chunk = std::max(2u, std::thread::hardware_concurrency());
    std::vector<std::pair<Config, CompiledKernel>> out;
    for (size_t begin = 0; begin < configs.size(); begin += chunk) {
      std::vector<std::future<absl::StatusOr<CompiledKernel>>> futures;
      for (size_t i = begin; i < std::min(configs.size(), begin + chunk); ++i) {
        futures.push_back(std::async(std::launch::async, [&f, &c = configs[i], &arch] {
          const KernelSource src = f.Source(c);
          return Compile(SourceText(src), src.name_expression, src.options, arch);
        }));
      }
      for (size_t i = 0; i < futures.size(); ++i) {
        auto k = futures[i].get();
        EXPECT_TRUE(k.ok()) << f.ConfigName(configs[begin + i]) << ": " << k.status();
        if (k.ok()) out.emplace_back(configs[begin + i], *std::move(k));
      }
    }
    return out;
  }

  // Every config (that `which` picks, where given) verifies on every shape,
  // in layout `layout`.
  void VerifyAll(const Family& f, const std::vector<Shape>& shapes,
                 const std::function<bool(const Config&)>& which = nullptr,
                 v1::Layout layout = v1::LAYOUT_NN) {
    const auto kernels = CompileAll(f, worker_->device(), v1::MATH_IEEE_FP32, which, layout);
    ASSERT_FALSE(kernels.empty());
    for (const auto& shape : shapes) {
      ASSERT_TRUE(Prepare(f, shape, v1::MATH_IEEE_FP32, layout).ok()) << Family::ShapeString(shape);
      int ok = 0;
      for (const auto& [config, kernel] : kernels) {
        auto r = worker_->MeasureCompiled(kernel, f.Geometry(config, shape, worker_->device()), 0,
                                          /*time=*/false);
        EXPECT_EQ(r.status(), v1::MEASUREMENT_OK)
            << f.ConfigName(config) << " on " << Family::ShapeString(shape) << ": " << r.message();
        ok += r.status() == v1::MEASUREMENT_OK;
        ASSERT_FALSE(worker_->broken()) << f.ConfigName(config);
      }
      std::cout << f.name() << " " << EnumName(layout) << " " << Family::ShapeString(shape) << ": " << ok << "/"
                << kernels.size() << " configs correct\n";
    }
  }

  // Each config, launched as the client library's TunedKernel::Sgemm
  // launches it (C set to beta * C first where the kernel adds into C:
  // prescale_output), against cuBLAS's alpha * A * B + beta * C on the same
  // random inputs, by the relative Frobenius error. `offset`: A, B and C
  // start that many floats into their buffers (1: not 16-byte aligned).
  // `tolerance`: 1e-5 for fp32-accurate kernels; TF32 ones take more.
  // `layout`: the operands' (tuner.proto Layout; the configs' LAYOUT), the
  // same buffer sizes in every layout. `stage` false: the geometry's
  // TensorMap.stage cleared (a launcher that stages nothing: the kernels'
  // copies without TMA).
  void ExpectMatchesCublasWithBeta(const std::vector<Config>& configs, int m, int n, int k,
                                   float alpha, float beta, size_t offset = 0,
                                   double tolerance = 1e-5,
                                   v1::Layout layout = v1::LAYOUT_NN, bool stage = true) {
    const Family& f = GemmFamily();
    // The inputs and cuBLAS's C, once; each config starts from the same C.
    const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
    auto a = DeviceBuffer::Alloc((mk + offset) * 4), b = DeviceBuffer::Alloc((kn + offset) * 4),
         c = DeviceBuffer::Alloc((mn + offset) * 4), ref = DeviceBuffer::Alloc(mn * 4);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok() && ref.ok());
    ASSERT_TRUE(FillRandom(*a, mk + offset, 1).ok());
    ASSERT_TRUE(FillRandom(*b, kn + offset, 2).ok());
    ASSERT_TRUE(FillRandom(*ref, mn, 3).ok());
    auto handle = CreatePureFp32Cublas();
    ASSERT_TRUE(handle.ok()) << handle.status();
    const float* ap = a->f32() + offset;
    const float* bp = b->f32() + offset;
    float* cp = c->f32() + offset;
    ASSERT_TRUE(
        RowMajorSgemm(*handle, m, n, k, alpha, ap, bp, beta, ref->f32(), nullptr, layout).ok());
    auto want = CopyToHost(*ref, mn);
    ASSERT_TRUE(want.ok());
    for (const Config& config : configs) {
      ASSERT_FALSE(config.empty());
      ASSERT_EQ(f.LayoutOf(config), layout) << f.ConfigName(config);
      const KernelSource src = f.Source(config);
      auto compiled = Compile(SourceText(src), src.name_expression, src.options, "sm_90");
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      auto kernel = LoadedKernel::Load(compiled->cubin, compiled->entry);
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      // The C cuBLAS started from (FillRandom fills from the buffer's start).
      ASSERT_TRUE(FillRandom(*ref, mn, 3).ok());
      ASSERT_EQ(cudaMemcpy(cp, ref->f32(), mn * 4, cudaMemcpyDeviceToDevice), cudaSuccess);
      v1::LaunchGeometry g = f.Geometry(config, {m, n, k}, worker_->device());
      for (v1::TensorMap& map : *g.mutable_tensor_maps()) map.set_stage(map.stage() && stage);
      if (g.prescale_output()) {
        ASSERT_TRUE(PrescaleOutput(*handle, beta, cp, int64_t{m} * n, nullptr).ok());
      }
      int mm = m, nn = n, kk = k;
      float al = alpha, be = beta;
      void* args[] = {&mm, &nn, &kk, &al, &ap, &bp, &be, &cp};
      ASSERT_TRUE(kernel->Launch(g, args, nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> got(mn);
      ASSERT_EQ(cudaMemcpy(got.data(), cp, mn * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      const double error = RelativeFrobenius(got, *want);
      EXPECT_LT(error, tolerance)
          << f.ConfigName(config) << " on " << m << "x" << n << "x" << k << " offset " << offset;
      std::printf("%s on %dx%dx%d, offset %zu, beta %g (grid %u): error %.1e\n",
                  f.ConfigName(config).c_str(), m, n, k, offset, beta, g.grid(0), error);
    }
    cublasDestroy(*handle);
  }

  Worker* worker_ = nullptr;
};

}  // namespace tuned
