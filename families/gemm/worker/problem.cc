// The GEMM on the device, every dtype of the sgemm family: row-major
// C(MxN) = op(A) op(B), random A and B in [-1, 1) stored in the problem's
// layout (A M x K or K x M, B K x N or N x K: the same sizes), C of the
// output type (tuned/dtype.h InputDType, OutputDType). Inputs are fp32
// (DTYPE_F32) or 16-bit (DTYPE_BF16, DTYPE_F16, and DTYPE_BF16_F32,
// DTYPE_F16_F32 with an fp32 C), FillRandom's fp32 values rounded to the
// input type.
//
// The baseline is cuBLAS in the problem's layout: SGEMM in the math mode
// (CreateCublas: pedantic fp32, pure fp32 or TF32) for fp32 inputs,
// cublasGemmEx in the same types with fp32 compute for 16-bit ones. The
// check is a relative Frobenius error, computed on the GPU so that checking
// a candidate of a large shape costs no device-to-host copy:
//  - fp32 in MATH_IEEE_FP32: against the baseline's own output (cuBLAS,
//    CUBLAS_PEDANTIC_MATH), at most 1e-4;
//  - otherwise (MATH_FP32_ACCURATE, MATH_TF32, every 16-bit dtype): against
//    an fp64 reference (cuBLAS DGEMM on the same inputs widened to double),
//    at most kErrorBoundFactor x the baseline's own error against it. 16-bit
//    outputs are rounded once by both, so the bound leaves room for another
//    summation order, not for a lost bit. A 16-bit problem's fp32 C is never
//    rounded and its error is the fp32 sums' alone: there the bound is at
//    least sqrt(K) u (kFp32Unit), since cuBLAS splits K on skinny shapes and
//    stays under what one fp32 chain of K terms reaches.
//
// A 16-bit problem's epilogue (tuner.proto Epilogue) adds a random bias of
// N elements of C's type, passed after C: the reference applies it in fp64
// (Fp64ApplyEpilogue), and the baseline is cuBLASLt with the same epilogue
// (LtGemm, planned once; EPILOGUE_BIAS_GELU_ERF: its bias epilogue, then
// GeluErfInPlace), so that fused is timed against fused.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/worker/fp64_check.h"
#include "server/worker/buffers.h"
#include "server/worker/problem.h"
#include "tuned/half.h"

namespace tuned {
namespace {

/// A kernel passes outside fp32's MATH_IEEE_FP32 if its error against the
/// fp64 reference is at most this many times the baseline's: the math
/// mode's own cuBLAS call sets the accuracy a user accepts.
constexpr double kErrorBoundFactor = 2.0;

/// fp32's MATH_IEEE_FP32 bound: fp32 SGEMM of random [-1,1) data:
/// summation-order differences stay near sqrt(K) * 2^-24 (about 5e-6 at
/// K = 8192); 1e-4 flags real bugs.
constexpr double kIeeeTolerance = 1e-4;

/// u = 2^-24, fp32's unit roundoff. sqrt(K) u is the probabilistic bound of
/// an fp32 sum of K terms (N. J. Higham and T. Mary, "A New Approach to
/// Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5),
/// 2019, Theorem 3.1, lambda = 1): the floor of the bound for a 16-bit
/// problem's fp32 C. On an H100, cuBLAS's error at 16x515x1000 (bf16 inputs,
/// fp32 C) was 1.0e-7, every kind's 2.1e-7 to 8.4e-7, and sqrt(1000) u is
/// 1.9e-6 (bench/RESULTS.md gemm16-f32-output).
constexpr double kFp32Unit = 0x1p-24;


class GemmProblem final : public DeviceProblem {
 public:
  ~GemmProblem() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
    lt_plan_.reset();  // before its handle
    if (lt_ != nullptr) cublasLtDestroy(lt_);
  }

  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const Shape& shape, uint64_t seed,
                                                               v1::Math math, v1::Layout layout,
                                                               v1::DType dtype,
                                                               v1::Epilogue epilogue) {
    auto p = std::unique_ptr<GemmProblem>(new GemmProblem());
    p->math_ = math;
    p->layout_ = layout;
    p->dtype_ = dtype;
    p->epilogue_ = epilogue;
    p->m_ = static_cast<int>(shape[0]);
    p->n_ = static_cast<int>(shape[1]);
    p->k_ = static_cast<int>(shape[2]);
    const size_t mk = size_t(p->m_) * p->k_, kn = size_t(p->k_) * p->n_, mn = size_t(p->m_) * p->n_;
    const size_t in_bytes = ElementBytes(InputDType(dtype));
    const size_t out_bytes = ElementBytes(OutputDType(dtype));
    // Against cuBLAS's fp32 output: the reference in fp32; else the fp64
    // reference and one double for the check's sum.
    const bool vs_baseline = p->ChecksAgainstBaseline();
    for (auto [buf, bytes] : {std::pair{&p->a_, mk * in_bytes}, {&p->b_, kn * in_bytes},
                              {&p->c_, mn * out_bytes},
                              {&p->ref_, mn * (vs_baseline ? sizeof(float) : sizeof(double))},
                              {&p->sum_, vs_baseline ? size_t{0} : sizeof(double)},
                              {&p->bias_, p->Fused() ? size_t(p->n_) * out_bytes : size_t{0}},
                              {&p->workspace_, p->Fused() ? kLtWorkspaceBytes : size_t{0}}}) {
      if (bytes == 0) continue;
      auto b = DeviceBuffer::Alloc(bytes);
      if (!b.ok()) return b.status();
      *buf = *std::move(b);
    }
    // 16-bit: CUBLAS_DEFAULT_MATH (fp32 compute); fp32: the mode's math.
    auto handle = CreateCublas(Is16BitGemm(dtype) ? v1::MATH_FP32_ACCURATE : math);
    if (!handle.ok()) return handle.status();
    p->handle_ = *handle;
    p->a_ptr_ = p->a_.get();
    p->b_ptr_ = p->b_.get();
    p->c_ptr_ = p->c_.get();
    p->args_ = {&p->m_, &p->n_, &p->k_, &p->alpha_, &p->a_ptr_, &p->b_ptr_, &p->beta_, &p->c_ptr_};
    if (p->Fused()) {
      TUNED_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&p->lt_), "cublasLtCreate"));
      p->bias_ptr_ = p->bias_.get();
      p->args_.push_back(&p->bias_ptr_);  // the fused entries' bias, after C
      // The baseline's plan, made once: a timed run pays no heuristic.
      auto plan = LtGemm::Plan(p->lt_, p->m_, p->n_, p->k_, layout, dtype, epilogue, p->bias_.get(),
                               p->workspace_.bytes(), 1);
      if (!plan.ok()) return plan.status();
      p->lt_plan_ = *std::move(plan);
    }
    if (vs_baseline) {
      TUNED_RETURN_IF_ERROR(FillRandom(p->a_, mk, seed));
      TUNED_RETURN_IF_ERROR(FillRandom(p->b_, kn, seed + 1));
      // Reference: cuBLAS into ref_ (RunBaseline), its norm in double on the host.
      TUNED_CUDA(cudaMemset(p->ref_.get(), 0xff, mn * sizeof(float)));
      TUNED_RETURN_IF_ERROR(p->RunBaseline(nullptr));
      TUNED_CUDA(cudaDeviceSynchronize());
      auto host = CopyToHost(p->ref_, mn);
      if (!host.ok()) return host.status();
      double norm2 = 0;
      for (float r : *host) norm2 += double(r) * r;
      p->ref_norm_ = std::sqrt(norm2);
    } else {
      TUNED_RETURN_IF_ERROR(p->FillAndReference(mk, kn, seed));
    }
    if (!(p->ref_norm_ > 0) || !std::isfinite(p->ref_norm_)) {
      return absl::InternalError("the reference is zero or not finite");
    }
    if (!vs_baseline) {
      // The baseline's own error against the fp64 reference sets the bound.
      TUNED_RETURN_IF_ERROR(p->RunBaseline(nullptr));
      auto err = p->CheckOutput(nullptr);
      if (!err.ok()) return err.status();
      if (!std::isfinite(*err)) return absl::InternalError("the baseline's output is not finite");
      p->baseline_error_ = *err;
    }
    return std::unique_ptr<DeviceProblem>(std::move(p));
  }

  std::vector<void*>& KernelArgs() override { return args_; }

  absl::Status PoisonOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaMemsetAsync(c_.get(), 0xff, c_.bytes(), stream));  // NaN in fp32, BF16 and FP16
    return absl::OkStatus();
  }

  // ||C - R||_F / ||R||_F; +inf on NaN or infinity.
  // Against cuBLAS's fp32 output: C -= R (cublasSaxpy; C is overwritten,
  // every use poisons or rewrites it first), then the sum of squares with
  // cublasSdot (fp32 with cuBLAS's tree reduction: a few ulps relative,
  // ample for a 1e-4 threshold; NaN and infinity propagate).
  // Against the fp64 reference: the sum of squares of the differences in
  // double (fp64_err2 of C's type). ||R|| was computed in double.
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    const int64_t count = int64_t{m_} * n_;  // < 2^31 (ValidateShape)
    double diff2 = 0;
    if (ChecksAgainstBaseline()) {
      const float minus_one = -1.0f;
      float diff2f = 0;
      const int n = static_cast<int>(count);
      TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle_, stream), "cublasSetStream"));
      TUNED_RETURN_IF_ERROR(CublasStatus(
          cublasSaxpy(handle_, n, &minus_one, ref_.f32(), 1, c_.f32(), 1), "cublasSaxpy"));
      TUNED_RETURN_IF_ERROR(
          CublasStatus(cublasSdot(handle_, n, c_.f32(), 1, c_.f32(), 1, &diff2f), "cublasSdot"));
      TUNED_CUDA(cudaStreamSynchronize(stream));
      diff2 = diff2f;
    } else {
      auto err2 = Fp64Err2(c_.get(), static_cast<const double*>(ref_.get()), count,
                           static_cast<double*>(sum_.get()), OutputDType(dtype_), stream);
      if (!err2.ok()) return err2.status();
      diff2 = *err2;
    }
    const double err = std::sqrt(diff2) / ref_norm_;
    return std::isfinite(err) ? err : std::numeric_limits<double>::infinity();
  }

  // fp32's split-K and stream-K kernels add into C: set it to beta * C
  // (zero: beta_ is 0). The 16-bit kernels reduce split-K in a cluster.
  absl::Status BeforeLaunch(const v1::LaunchGeometry& geometry, cudaStream_t stream) override {
    if (!geometry.prescale_output() || dtype_ != v1::DTYPE_F32) return absl::OkStatus();
    return PrescaleOutput(handle_, beta_, c_.f32(), int64_t{m_} * n_, stream);
  }

  /// fp32 MATH_IEEE_FP32: 1e-4 against cuBLAS's output; else
  /// kErrorBoundFactor x the baseline's error against the fp64 reference,
  /// for a 16-bit problem's fp32 C at least sqrt(K) x kFp32Unit.
  double Tolerance() const override {
    if (ChecksAgainstBaseline()) return kIeeeTolerance;
    const double bound = kErrorBoundFactor * baseline_error_;
    if (!Is16BitGemm(dtype_) || OutputDType(dtype_) != v1::DTYPE_F32) return bound;
    return std::max(bound, std::sqrt(static_cast<double>(k_)) * kFp32Unit);
  }
  double BaselineError() const override { return baseline_error_; }

  /// A and B in the input type, C and the bias (an epilogue's) in the output type.
  int64_t OperandBytes() const override {
    return static_cast<int64_t>(a_.bytes() + b_.bytes() + c_.bytes() + bias_.bytes());
  }

  /// cuBLAS into the reference (fp32 MATH_IEEE_FP32) or into C (the others:
  /// C is poisoned before each check): SGEMM in the mode's math, or
  /// cublasGemmEx in the problem's types.
  absl::Status RunBaseline(cudaStream_t stream) override {
    if (Fused()) {
      TUNED_RETURN_IF_ERROR(lt_plan_->Run(0, 1.0f, a_.get(), b_.get(), 0.0f, c_.get(), bias_.get(),
                                          workspace_.get(), stream));
      if (epilogue_ != v1::EPILOGUE_BIAS_GELU_ERF) return absl::OkStatus();
      return GeluErfInPlace(c_.get(), int64_t{m_} * n_, OutputDType(dtype_), stream);
    }
    if (dtype_ != v1::DTYPE_F32) {
      return RowMajorGemmEx(handle_, m_, n_, k_, 1.0f, a_.get(), b_.get(), 0.0f, c_.get(), stream,
                            layout_, dtype_);
    }
    float* out = ChecksAgainstBaseline() ? ref_.f32() : c_.f32();
    return RowMajorSgemm(handle_, m_, n_, k_, 1.0f, a_.f32(), b_.f32(), 0.0f, out, stream, layout_);
  }

  /// fp32: "cuBLAS" (MATH_IEEE_FP32, as stored before the modes), "cuBLAS
  /// fp32" or "cuBLAS TF32"; 16-bit: "cuBLAS bf16", "cuBLAS f16", "cuBLAS
  /// bf16_f32" or "cuBLAS f16_f32".
  std::string BaselineName() const override {
    if (Fused()) {
      return absl::StrCat("cuBLASLt ", DTypeText(dtype_), " ",
                          absl::AsciiStrToLower(absl::StripPrefix(EnumName(epilogue_), "EPILOGUE_")),
                          epilogue_ == v1::EPILOGUE_BIAS_GELU_ERF ? " (bias, then GELU)" : "");
    }
    if (dtype_ != v1::DTYPE_F32) return absl::StrCat("cuBLAS ", DTypeText(dtype_));
    switch (math_) {
      case v1::MATH_FP32_ACCURATE: return "cuBLAS fp32";
      case v1::MATH_TF32: return "cuBLAS TF32";
      default: return "cuBLAS";
    }
  }

 private:
  GemmProblem() = default;

  /// Whether the problem has an epilogue (a bias, and the fused entries).
  bool Fused() const { return epilogue_ != v1::EPILOGUE_NONE; }

  /// Whether the check compares with cuBLAS's own fp32 output (fp32 in
  /// MATH_IEEE_FP32) rather than with the fp64 reference.
  bool ChecksAgainstBaseline() const {
    return dtype_ == v1::DTYPE_F32 && math_ == v1::MATH_IEEE_FP32;
  }

  /// A and B: FillRandom's fp32 values of `seed` and `seed` + 1, rounded to
  /// the input type where it has 16 bits; ref_ = op(A) op(B) in fp64
  /// (Fp64Reference: cuBLAS DGEMM on the inputs widened to double on the
  /// host, row-major as RowMajorGemm), ref_norm_ its Frobenius norm
  /// (cublasDnrm2); with an epilogue, the bias of `seed` + 2 in C's type,
  /// applied to ref_ in fp64 (Fp64ApplyEpilogue). The host copies are freed after.
  absl::Status FillAndReference(size_t mk, size_t kn, uint64_t seed) {
    std::vector<double> a, b;
    TUNED_RETURN_IF_ERROR(Fill(a_, mk, seed, dtype_ == v1::DTYPE_F32, &a));
    TUNED_RETURN_IF_ERROR(Fill(b_, kn, seed + 1, dtype_ == v1::DTYPE_F32, &b));
    TUNED_RETURN_IF_ERROR(Fp64Reference(handle_, m_, n_, k_, layout_, a, b,
                                        static_cast<double*>(ref_.get()), &ref_norm_));
    if (!Fused()) return absl::OkStatus();
    std::vector<double> bias;
    TUNED_RETURN_IF_ERROR(Fill(bias_, n_, seed + 2, OutputDType(dtype_) == v1::DTYPE_F32, &bias));
    return Fp64ApplyEpilogue(static_cast<double*>(ref_.get()), m_, n_, bias, epilogue_, &ref_norm_);
  }

  /// `count` of FillRandom's fp32 values of `seed` into `dst`: as they are
  /// where `fp32`, else rounded to the problem's 16-bit type; `wide` gets
  /// the values stored, in double.
  absl::Status Fill(DeviceBuffer& dst, size_t count, uint64_t seed, bool fp32,
                    std::vector<double>* wide) {
    if (fp32) {
      TUNED_RETURN_IF_ERROR(FillRandom(dst, count, seed));
      auto copied = CopyToHost(dst, count);
      if (!copied.ok()) return copied.status();
      wide->assign(copied->begin(), copied->end());
      return absl::OkStatus();
    }
    std::vector<float> host;
    {
      auto f32 = DeviceBuffer::Alloc(count * sizeof(float));
      if (!f32.ok()) return f32.status();
      TUNED_RETURN_IF_ERROR(FillRandom(*f32, count, seed));
      auto copied = CopyToHost(*f32, count);
      if (!copied.ok()) return copied.status();
      host = *std::move(copied);
    }
    std::vector<uint16_t> bits(count);
    wide->resize(count);
    for (size_t i = 0; i < count; ++i) {
      bits[i] = Narrow16(host[i], dtype_);
      (*wide)[i] = Widen16(bits[i], dtype_);
    }
    TUNED_CUDA(cudaMemcpy(dst.get(), bits.data(), count * 2, cudaMemcpyHostToDevice));
    return absl::OkStatus();
  }

  v1::Math math_ = v1::MATH_IEEE_FP32;
  v1::Layout layout_ = v1::LAYOUT_NN;
  v1::DType dtype_ = v1::DTYPE_F32;
  v1::Epilogue epilogue_ = v1::EPILOGUE_NONE;
  int m_ = 0, n_ = 0, k_ = 0;
  float alpha_ = 1.0f, beta_ = 0.0f;
  DeviceBuffer a_, b_, c_, ref_, sum_, bias_, workspace_;
  const void* a_ptr_ = nullptr;
  const void* b_ptr_ = nullptr;
  void* c_ptr_ = nullptr;
  const void* bias_ptr_ = nullptr;
  std::vector<void*> args_;
  cublasHandle_t handle_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  std::unique_ptr<LtGemm> lt_plan_;  // the baseline of an epilogue
  double ref_norm_ = 0;
  double baseline_error_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeGemmProblem(const v1::worker::Prepare& request,
                                                               const v1::Device& device) {
  const v1::Problem& problem = request.problem();
  const Shape shape(problem.shape().begin(), problem.shape().end());
  const uint64_t seed = request.seed();
  const v1::Math math = problem.math();
  const v1::Layout layout = problem.layout();
  const v1::DType dtype = problem.dtype();
  if (GemmFamily().ForDType(dtype) == nullptr || (dtype != v1::DTYPE_F32 && !Is16BitGemm(dtype))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype ", EnumName(dtype), " is not a dtype of sgemm (f32, bf16, f16, bf16_f32, f16_f32)"));
  }
  const Family* family = InForm(&GemmFamily(), problem);
  TUNED_RETURN_IF_ERROR(family->ValidateMath(math));
  TUNED_RETURN_IF_ERROR(family->ValidateLayout(layout));
  TUNED_RETURN_IF_ERROR(family->ValidateEpilogue(problem.epilogue()));
  TUNED_RETURN_IF_ERROR(family->ValidateProblem(shape, device, math));
  return GemmProblem::Create(shape, seed, math, layout, dtype, problem.epilogue());
}

}  // namespace tuned
