// GPU tests of the sgemm family's 16-bit forms (BF16 and F16, and their
// fp32-output forms BF16_F32 and F16_F32, families/gemm/op16.cc): every
// kind's configs verified by the worker
// against the fp64 reference (at most 2x cuBLAS's error) on odd shapes in
// every layout, and launched as the client library launches them with
// alpha, beta and misaligned operands against cublasGemmEx. The fixture:
// gpu_test.h.
#include <random>

#include "tests/gpu_test.h"
#include "tuned/half.h"

namespace tuned {
namespace {

// Every config of each 16-bit form, in every layout, on shapes no tile
// divides: 1x1x1, K below 8 and not a multiple of 8 (the bounds-checked
// loads), a K of 1 with M and N above a tile, M of 16 (the split-K
// clusters), pitches that are multiples of 8 (the cp.async path), and
// 2000x2304x520, whose last round of persistent tiles goes in halves
// (wgmma16.cuh; 144 tiles of 128x256 or 256x128, 288 of 128x128 on 132
// SMs).
TEST_F(GpuTest, Gemm16ConfigsAreCorrectInEveryDtypeAndLayout) {
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32}) {
    const Family& f = *GemmFamily().ForDType(dtype);
    for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
      VerifyAll(f,
                {{1, 1, 1}, {7, 5, 3}, {100, 200, 37}, {129, 64, 1}, {16, 515, 1000},
                 {1000, 1000, 1003}, {256, 384, 512}, {2000, 2304, 520}},
                nullptr, layout);
    }
  }
}

// The decode kind (KIND 3) on the shapes it is measured on and around them:
// one token against N and K that are not multiples of 8 (element loads of
// B and A), K over several blocks of 32 and split over a cluster's blocks
// and a block's k-warps, K below one block of 32, and M of 3, 16, 33 and 64
// (partial and whole blocks of tokens), in the layouts it streams (NT, TT)
// and one it gathers (NN).
TEST_F(GpuTest, Gemm16DecodeConfigsAreCorrectOnFewTokens) {
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32}) {
    const Family& f = *GemmFamily().ForDType(dtype);
    for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_TT, v1::LAYOUT_NN}) {
      VerifyAll(f,
                {{1, 1003, 517}, {1, 4096, 4096}, {3, 4099, 2049}, {16, 515, 1000}, {33, 130, 70},
                 {64, 257, 4100}, {1, 64, 5}},
                [](const Config& c) { return c.at("KIND") == 3; }, layout);
    }
  }
}

// Each epilogue (tuner.proto Epilogue) in each kind, verified by the worker
// against the fp64 reference with the epilogue applied (at most 2x the
// error of cuBLASLt with the same epilogue), on odd shapes: M = 1 and 33, N
// and K not multiples of 8, K below a tile, in bf16 and f16 (and bf16 with
// an fp32 C), layouts nt and nn. Every config of the tanh GELU form in bf16
// nt; one config a kind in the others.
TEST_F(GpuTest, Gemm16EpiloguesAreCorrectInEveryKind) {
  const std::vector<Shape> shapes = {{1, 1003, 517}, {33, 130, 70}, {100, 200, 37}, {256, 384, 512}};
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32}) {
    for (v1::Epilogue e : {v1::EPILOGUE_BIAS, v1::EPILOGUE_BIAS_RELU, v1::EPILOGUE_BIAS_GELU_TANH,
                           v1::EPILOGUE_BIAS_GELU_ERF}) {
      const Family& f = *GemmFamily().ForDType(dtype)->ForEpilogue(e);
      for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_NN}) {
        const bool every = dtype == v1::DTYPE_BF16 && e == v1::EPILOGUE_BIAS_GELU_TANH &&
                           layout == v1::LAYOUT_NT;
        std::set<int64_t> kinds;
        VerifyAll(f, shapes,
                  [&](const Config& c) { return every || kinds.insert(c.at("KIND")).second; },
                  layout);
      }
    }
  }
}

/// `count` random values in [-1, 1) rounded to `dtype`, as bits.
std::vector<uint16_t> Random16(size_t count, v1::DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> bits(count);
  for (auto& b : bits) b = Narrow16(dist(gen), dtype);
  return bits;
}

std::vector<float> Widened(const std::vector<uint16_t>& bits, v1::DType dtype) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = Widen16(bits[i], dtype);
  return out;
}

/// `count` elements of C's type of `dtype` (tuned/dtype.h OutputDType) from
/// device memory at `p`, widened to fp32.
std::vector<float> DownloadC(const void* p, size_t count, v1::DType dtype) {
  if (OutputDType(dtype) == v1::DTYPE_F32) {
    std::vector<float> out(count);
    EXPECT_EQ(cudaMemcpy(out.data(), p, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  std::vector<uint16_t> bits(count);
  EXPECT_EQ(cudaMemcpy(bits.data(), p, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return Widened(bits, dtype);
}

// Each config of each form, launched as TunedKernel::Gemm16 launches it
// (the family's geometry, LoadedKernel::Launch), with alpha 1.5 and beta
// 0.5 on a random C, A, B and C aligned and one element off (not 16-byte
// aligned: the bounds-checked loads), in every layout, against cublasGemmEx
// on the same inputs: both round the fp32 result once, so they differ by at
// most an ulp of the 16-bit type on a few elements (relative Frobenius error
// under 1e-2 for BF16's 8-bit significand, 2e-3 for F16's 11-bit one); with
// an fp32 C neither rounds, and they differ by the order of the fp32 sums
// (under 1e-5).
TEST_F(GpuTest, Gemm16ConfigsMatchCublasWithAlphaBetaAndOffsets) {
  const int m = 300, n = 200, k = 136;
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  auto handle = CreateCublas(v1::MATH_FP32_ACCURATE);
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32}) {
    const Family& f = *GemmFamily().ForDType(dtype);
    const bool c32 = OutputDType(dtype) == v1::DTYPE_F32;
    const double tolerance = c32 ? 1e-5 : dtype == v1::DTYPE_BF16 ? 1e-2 : 2e-3;
    const size_t cbytes = c32 ? 4 : 2;
    const auto ha = Random16(mk + 1, dtype, 1), hb = Random16(kn + 1, dtype, 2),
               hc16 = Random16(mn + 1, dtype, 3);
    // C's first values in its own type: the 16-bit bits, or their fp32 values.
    const std::vector<float> hc32 = Widened(hc16, dtype);
    const void* hc = c32 ? static_cast<const void*>(hc32.data()) : hc16.data();
    auto a = DeviceBuffer::Alloc(ha.size() * 2), b = DeviceBuffer::Alloc(hb.size() * 2),
         c = DeviceBuffer::Alloc((mn + 1) * cbytes), ref = DeviceBuffer::Alloc((mn + 1) * cbytes);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok() && ref.ok());
    ASSERT_EQ(cudaMemcpy(a->get(), ha.data(), ha.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b->get(), hb.data(), hb.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
      const auto kernels = CompileAll(f, worker_->device(), v1::MATH_IEEE_FP32, nullptr, layout);
      ASSERT_EQ(kernels.size(), f.Space().size());
      for (size_t offset : {size_t{0}, size_t{1}}) {
        const void* ap = static_cast<const uint16_t*>(a->get()) + offset;
        const void* bp = static_cast<const uint16_t*>(b->get()) + offset;
        void* cp = static_cast<char*>(c->get()) + offset * cbytes;
        void* rp = static_cast<char*>(ref->get()) + offset * cbytes;
        ASSERT_EQ(cudaMemcpy(ref->get(), hc, (mn + 1) * cbytes, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_TRUE(RowMajorGemmEx(*handle, m, n, k, 1.5f, ap, bp, 0.5f, rp, nullptr, layout, dtype).ok());
        const std::vector<float> want = DownloadC(rp, mn, dtype);
        for (const auto& [config, compiled] : kernels) {
          auto kernel = LoadedKernel::Load(compiled.cubin, compiled.entry);
          ASSERT_TRUE(kernel.ok()) << kernel.status();
          ASSERT_EQ(cudaMemcpy(c->get(), hc, (mn + 1) * cbytes, cudaMemcpyHostToDevice), cudaSuccess);
          int mm = m, nn = n, kk = k;
          float alpha = 1.5f, beta = 0.5f;
          void* args[] = {&mm, &nn, &kk, &alpha, &ap, &bp, &beta, &cp};
          const v1::LaunchGeometry g = f.Geometry(config, {m, n, k}, worker_->device());
          ASSERT_FALSE(g.prescale_output()) << f.ConfigName(config);
          ASSERT_TRUE(kernel->Launch(g, args, nullptr).ok()) << f.ConfigName(config);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << f.ConfigName(config);
          const double error = RelativeFrobenius(DownloadC(cp, mn, dtype), want);
          EXPECT_LT(error, tolerance) << f.ConfigName(config) << " offset " << offset;
          std::printf("%s, offset %zu: error %.1e vs cuBLAS\n", f.ConfigName(config).c_str(), offset,
                      error);
        }
      }
    }
  }
  cublasDestroy(*handle);
}

// The fused entries launched as TunedKernel::FusedGemm16 launches them (the
// bias after C; wgmma's tensor maps after it), with alpha 1.5 and beta 0.5 on
// a random C, against cuBLASLt with the same epilogue (RowMajorGemmLt) on the
// same inputs, one config a kind, in layouts nt and nn: as the plain GEMM's
// test, both round once and differ by an ulp on a few elements.
TEST_F(GpuTest, Gemm16FusedEntriesMatchCublasLtWithBetaAndBias) {
  const int m = 300, n = 200, k = 136;
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  cublasLtHandle_t lt = nullptr;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  auto workspace = DeviceBuffer::Alloc(kLtWorkspaceBytes);
  ASSERT_TRUE(workspace.ok());
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32}) {
    const bool c32 = OutputDType(dtype) == v1::DTYPE_F32;
    const size_t cbytes = c32 ? 4 : 2;
    const auto ha = Random16(mk, dtype, 1), hb = Random16(kn, dtype, 2), hc16 = Random16(mn, dtype, 3),
               hbias16 = Random16(n, dtype, 4);
    const std::vector<float> hc32 = Widened(hc16, dtype), hbias32 = Widened(hbias16, dtype);
    const void* hc = c32 ? static_cast<const void*>(hc32.data()) : hc16.data();
    const void* hbias = c32 ? static_cast<const void*>(hbias32.data()) : hbias16.data();
    auto a = DeviceBuffer::Alloc(mk * 2), b = DeviceBuffer::Alloc(kn * 2),
         c = DeviceBuffer::Alloc(mn * cbytes), ref = DeviceBuffer::Alloc(mn * cbytes),
         bias = DeviceBuffer::Alloc(n * cbytes);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok() && ref.ok() && bias.ok());
    ASSERT_EQ(cudaMemcpy(a->get(), ha.data(), mk * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b->get(), hb.data(), kn * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(bias->get(), hbias, n * cbytes, cudaMemcpyHostToDevice), cudaSuccess);
    for (v1::Epilogue e : {v1::EPILOGUE_BIAS, v1::EPILOGUE_BIAS_RELU, v1::EPILOGUE_BIAS_GELU_TANH}) {
      const Family& f = *GemmFamily().ForDType(dtype)->ForEpilogue(e);
      for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_NN}) {
        std::set<int64_t> kinds;
        const auto kernels =
            CompileAll(f, worker_->device(), v1::MATH_IEEE_FP32,
                       [&](const Config& cfg) { return kinds.insert(cfg.at("KIND")).second; }, layout);
        ASSERT_EQ(kernels.size(), 4u);
        ASSERT_EQ(cudaMemcpy(ref->get(), hc, mn * cbytes, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_TRUE(RowMajorGemmLt(lt, m, n, k, 1.5f, a->get(), b->get(), 0.5f, ref->get(),
                                   bias->get(), nullptr, layout, dtype, e, workspace->get(),
                                   kLtWorkspaceBytes)
                        .ok());
        const std::vector<float> want = DownloadC(ref->get(), mn, dtype);
        for (const auto& [config, compiled] : kernels) {
          auto kernel = LoadedKernel::Load(compiled.cubin, compiled.entry);
          ASSERT_TRUE(kernel.ok()) << kernel.status();
          ASSERT_EQ(cudaMemcpy(c->get(), hc, mn * cbytes, cudaMemcpyHostToDevice), cudaSuccess);
          int mm = m, nn = n, kk = k;
          float alpha = 1.5f, beta = 0.5f;
          const void* ap = a->get();
          const void* bp = b->get();
          void* cp = c->get();
          const void* biasp = bias->get();
          void* args[] = {&mm, &nn, &kk, &alpha, &ap, &bp, &beta, &cp, &biasp};
          ASSERT_TRUE(kernel->Launch(f.Geometry(config, {m, n, k}, worker_->device()), args, nullptr)
                          .ok())
              << f.ConfigName(config);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << f.ConfigName(config);
          // An fp32 C: the sums' order, and with the GELU cuBLASLt's own
          // tanh, which need not be erff's or tanhf's to the last bit.
          const double tolerance = c32 ? (e == v1::EPILOGUE_BIAS_GELU_TANH ? 1e-3 : 1e-5)
                                   : dtype == v1::DTYPE_BF16 ? 1e-2
                                                             : 2e-3;
          const double error = RelativeFrobenius(DownloadC(cp, mn, dtype), want);
          EXPECT_LT(error, tolerance) << f.ConfigName(config);
          std::printf("%s: error %.1e vs cuBLASLt\n", f.ConfigName(config).c_str(), error);
        }
      }
    }
  }
  cublasLtDestroy(lt);
}

// Where cuBLAS serves a 16-bit problem with an epilogue, one TunedKernel
// called from four threads at once, each on a stream of its own with its
// own alpha and C, gives each thread its own result, 20 calls in a row: the
// handle's stream is set under a lock, and each stream has a cuBLASLt
// workspace of its own (K = 8192 over a 64 x 64 C, which cuBLASLt may split
// through its workspace). Each result is the serial call's, to rounding.
TEST_F(GpuTest, ACublasServedKernelServesThreadsOnStreamsOfTheirOwn) {
  const int m = 64, n = 64, k = 8192, threads = 4;
  const v1::DType dtype = v1::DTYPE_BF16_F32;
  v1::BestKernel best;
  v1::Problem* problem = best.mutable_problem();
  problem->set_family(v1::FAMILY_SGEMM);
  problem->set_dtype(dtype);
  problem->set_layout(v1::LAYOUT_NT);
  problem->set_epilogue(v1::EPILOGUE_BIAS);
  for (int64_t d : {m, n, k}) problem->add_shape(d);
  best.set_match(v1::MATCH_EXACT);
  best.set_use_baseline(true);
  auto kernel = TunedKernel::Load(best);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_TRUE(kernel->uses_cublas());
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  const auto ha = Random16(mk, dtype, 11), hb = Random16(kn, dtype, 12);
  const std::vector<float> hbias = Widened(Random16(n, dtype, 13), dtype);
  auto a = DeviceBuffer::Alloc(mk * 2), b = DeviceBuffer::Alloc(kn * 2), bias = DeviceBuffer::Alloc(n * 4),
       workspace = DeviceBuffer::Alloc(kLtWorkspaceBytes);
  ASSERT_TRUE(a.ok() && b.ok() && bias.ok() && workspace.ok());
  ASSERT_EQ(cudaMemcpy(a->get(), ha.data(), mk * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b->get(), hb.data(), kn * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(bias->get(), hbias.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  cublasLtHandle_t lt = nullptr;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  std::vector<std::vector<float>> want(threads);
  std::vector<DeviceBuffer> c;
  for (int t = 0; t < threads; ++t) {
    auto ref = DeviceBuffer::Alloc(mn * 4), out = DeviceBuffer::Alloc(mn * 4);
    ASSERT_TRUE(ref.ok() && out.ok());
    ASSERT_TRUE(RowMajorGemmLt(lt, m, n, k, 1.0f + t, a->get(), b->get(), 0.0f, ref->get(),
                               bias->get(), nullptr, v1::LAYOUT_NT, dtype, v1::EPILOGUE_BIAS,
                               workspace->get(), kLtWorkspaceBytes)
                    .ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    want[t] = DownloadC(ref->get(), mn, dtype);
    c.push_back(*std::move(out));
  }
  cublasLtDestroy(lt);
  std::vector<std::future<absl::Status>> calls;
  for (int t = 0; t < threads; ++t) {
    calls.push_back(std::async(std::launch::async, [&, t]() -> absl::Status {
      cudaStream_t stream = nullptr;
      TUNED_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      absl::Status s;
      for (int call = 0; call < 20 && s.ok(); ++call) {
        s = kernel->FusedGemm16(m, n, k, 1.0f + t, a->get(), b->get(), 0.0f, c[t].get(),
                                bias->get(), stream);
      }
      if (s.ok()) s = CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      cudaStreamDestroy(stream);
      return s;
    }));
  }
  for (int t = 0; t < threads; ++t) {
    const absl::Status s = calls[t].get();
    ASSERT_TRUE(s.ok()) << "thread " << t << ": " << s;
    EXPECT_LT(RelativeFrobenius(DownloadC(c[t].get(), mn, dtype), want[t]), 1e-6) << "thread " << t;
  }
}

// StageOperand (TensorMap.stage): a BF16 operand of 5 rows of 37 elements
// (74 bytes a row), one element off a 16-byte boundary, copied into rows of
// 80 bytes at a 16-byte aligned base, each row's 74 bytes as they were and
// its last 6 zeros;
// Stages() where TMA cannot take the base or the pitch and stage is set,
// and a staged map of rank 3 refused.
TEST_F(GpuTest, StageOperandCopiesRowsToA16BytePitch) {
  v1::TensorMap m;
  m.set_pointer_arg(4);
  for (uint64_t d : {37, 5}) m.add_dims(d);
  m.add_strides_bytes(74);
  for (uint32_t b : {64, 64}) m.add_box(b);
  m.set_swizzle_bytes(128);
  m.set_param(8);
  m.set_dtype(v1::DTYPE_BF16);
  m.set_stage(true);
  std::vector<uint16_t> host(37 * 5 + 1);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint16_t>(i * 7 + 3);
  auto buf = DeviceBuffer::Alloc(host.size() * 2);
  ASSERT_TRUE(buf.ok());
  ASSERT_EQ(cudaMemcpy(buf->get(), host.data(), host.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const uint16_t* base = static_cast<const uint16_t*>(buf->get()) + 1;
  EXPECT_TRUE(Stages(m, base));
  EXPECT_TRUE(Stages(m, buf->get()));  // aligned, but a pitch of 74 bytes
  v1::TensorMap no_stage = m;
  no_stage.set_stage(false);
  EXPECT_FALSE(Stages(no_stage, base));
  v1::TensorMap pitch80 = m;
  pitch80.set_strides_bytes(0, 80);
  EXPECT_FALSE(Stages(pitch80, buf->get()));

  auto copy = StageOperand(m, base, nullptr);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->pitch_bytes, 80u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy->base) % 16, 0u);
  std::vector<uint16_t> back(40 * 5);
  ASSERT_EQ(cudaMemcpy(back.data(), copy->base, back.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int r = 0; r < 5; ++r) {
    for (int j = 0; j < 37; ++j) ASSERT_EQ(back[r * 40 + j], host[1 + r * 37 + j]) << r << ", " << j;
    for (int j = 37; j < 40; ++j) EXPECT_EQ(back[r * 40 + j], 0) << r << ", " << j;
  }
  ASSERT_EQ(cudaFreeAsync(copy->base, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  v1::TensorMap rank3 = m;
  rank3.add_dims(1);
  rank3.add_strides_bytes(370);
  rank3.add_box(1);
  EXPECT_EQ(StageOperand(rank3, base, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tuned
