// SGEMM on the device: random A, B, stored in the problem's layout (A M x K
// or K x M, B K x N or N x K: the same sizes); the baseline is cuBLAS in the
// problem's layout and math mode (CreateCublas: pedantic fp32, pure fp32 or TF32). The check is a
// relative Frobenius error, computed on the GPU so that checking a candidate
// of a large shape costs no device-to-host copy:
//  - MATH_IEEE_FP32 (today's rule, unchanged): against the baseline's own
//    output (cuBLAS, CUBLAS_PEDANTIC_MATH), at most 1e-4;
//  - MATH_FP32_ACCURATE and MATH_TF32: against an fp64 reference (cuBLAS
//    DGEMM on the same fp32 inputs widened to double), at most
//    kErrorBoundFactor x the baseline's own error against that reference.
#include <cublas_v2.h>

#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/worker/fp64_check.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"

namespace tuned {
namespace {

/// A kernel passes in MATH_FP32_ACCURATE and MATH_TF32 if its error against
/// the fp64 reference is at most this many times the baseline's (issue 18).
constexpr double kErrorBoundFactor = 2.0;

/// MATH_IEEE_FP32's bound: fp32 SGEMM of random [-1,1) data: summation-order
/// differences stay near sqrt(K) * 2^-24 (about 5e-6 at K = 8192); 1e-4
/// flags real bugs.
constexpr double kIeeeTolerance = 1e-4;

class SgemmProblem final : public DeviceProblem {
 public:
  ~SgemmProblem() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }

  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const Shape& shape, uint64_t seed,
                                                               v1::Math math, v1::Layout layout) {
    auto p = std::unique_ptr<SgemmProblem>(new SgemmProblem());
    p->math_ = math;
    p->layout_ = layout;
    p->m_ = static_cast<int>(shape[0]);
    p->n_ = static_cast<int>(shape[1]);
    p->k_ = static_cast<int>(shape[2]);
    const size_t mk = size_t(p->m_) * p->k_, kn = size_t(p->k_) * p->n_, mn = size_t(p->m_) * p->n_;
    const bool ieee = math == v1::MATH_IEEE_FP32;
    for (auto [buf, count] : {std::pair{&p->a_, mk}, {&p->b_, kn}, {&p->c_, mn}}) {
      auto b = DeviceBuffer::Alloc(count * sizeof(float));
      if (!b.ok()) return b.status();
      *buf = *std::move(b);
    }
    // ieee: the baseline's output in fp32; else the fp64 reference and one
    // double for the check's sum.
    auto ref = DeviceBuffer::Alloc(ieee ? mn * sizeof(float) : mn * sizeof(double));
    if (!ref.ok()) return ref.status();
    p->ref_ = *std::move(ref);
    if (!ieee) {
      auto sum = DeviceBuffer::Alloc(sizeof(double));
      if (!sum.ok()) return sum.status();
      p->sum_ = *std::move(sum);
    }
    TUNED_RETURN_IF_ERROR(FillRandom(p->a_, mk, seed));
    TUNED_RETURN_IF_ERROR(FillRandom(p->b_, kn, seed + 1));
    auto handle = CreateCublas(math);
    if (!handle.ok()) return handle.status();
    p->handle_ = *handle;
    p->a_ptr_ = p->a_.f32();
    p->b_ptr_ = p->b_.f32();
    p->c_ptr_ = p->c_.f32();
    p->args_ = {&p->m_, &p->n_, &p->k_, &p->alpha_, &p->a_ptr_, &p->b_ptr_, &p->beta_, &p->c_ptr_};
    if (ieee) {
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
      TUNED_RETURN_IF_ERROR(p->ComputeFp64Reference(mk, kn));
    }
    if (!(p->ref_norm_ > 0) || !std::isfinite(p->ref_norm_)) {
      return absl::InternalError("the reference is zero or not finite");
    }
    if (!ieee) {
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
    TUNED_CUDA(cudaMemsetAsync(c_.get(), 0xff, c_.bytes(), stream));  // NaN
    return absl::OkStatus();
  }

  // ||C - R||_F / ||R||_F; +inf on NaN or infinity.
  // MATH_IEEE_FP32 (R: cuBLAS's fp32 output): C -= R (cublasSaxpy; C is
  // overwritten, every use poisons or rewrites it first), then the sum of
  // squares with cublasSdot (fp32 with cuBLAS's tree reduction: a few ulps
  // relative, ample for a 1e-4 threshold; NaN and infinity propagate).
  // Other modes (R: the fp64 reference): the sum of squares of the
  // differences in double (fp64_err2). ||R|| was computed in double.
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    const int count = m_ * n_;  // < 2^31 (ValidateShape)
    double diff2 = 0;
    if (math_ == v1::MATH_IEEE_FP32) {
      const float minus_one = -1.0f;
      float diff2f = 0;
      TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle_, stream), "cublasSetStream"));
      TUNED_RETURN_IF_ERROR(CublasStatus(
          cublasSaxpy(handle_, count, &minus_one, ref_.f32(), 1, c_.f32(), 1), "cublasSaxpy"));
      TUNED_RETURN_IF_ERROR(CublasStatus(
          cublasSdot(handle_, count, c_.f32(), 1, c_.f32(), 1, &diff2f), "cublasSdot"));
      TUNED_CUDA(cudaStreamSynchronize(stream));
      diff2 = diff2f;
    } else {
      auto err2 = Fp64Err2(c_.get(), static_cast<const double*>(ref_.get()), count,
                           static_cast<double*>(sum_.get()), v1::DTYPE_F32, stream);
      if (!err2.ok()) return err2.status();
      diff2 = *err2;
    }
    const double err = std::sqrt(diff2) / ref_norm_;
    return std::isfinite(err) ? err : std::numeric_limits<double>::infinity();
  }

  // Split-K and stream-K kernels add into C: set it to beta * C (zero: beta_ is 0).
  absl::Status BeforeLaunch(const v1::LaunchGeometry& geometry, cudaStream_t stream) override {
    if (!geometry.prescale_output()) return absl::OkStatus();
    return PrescaleOutput(handle_, beta_, c_.f32(), int64_t{m_} * n_, stream);
  }

  /// MATH_IEEE_FP32: 1e-4 against cuBLAS's output; else kErrorBoundFactor x
  /// the baseline's error against the fp64 reference.
  double Tolerance() const override {
    return math_ == v1::MATH_IEEE_FP32 ? kIeeeTolerance : kErrorBoundFactor * baseline_error_;
  }
  double BaselineError() const override { return baseline_error_; }

  /// A + B + C in fp32 (the baseline writes the reference, of C's size, in
  /// MATH_IEEE_FP32).
  int64_t OperandBytes() const override {
    return static_cast<int64_t>(a_.bytes() + b_.bytes() + c_.bytes());
  }

  /// cuBLAS SGEMM in the mode's math, into the reference (MATH_IEEE_FP32, as
  /// before the modes) or into C (the others: C is poisoned before each check).
  absl::Status RunBaseline(cudaStream_t stream) override {
    float* out = math_ == v1::MATH_IEEE_FP32 ? ref_.f32() : c_.f32();
    return RowMajorSgemm(handle_, m_, n_, k_, 1.0f, a_.f32(), b_.f32(), 0.0f, out, stream, layout_);
  }

  /// "cuBLAS" (MATH_IEEE_FP32, as stored before the modes), "cuBLAS fp32"
  /// or "cuBLAS TF32".
  std::string BaselineName() const override {
    switch (math_) {
      case v1::MATH_FP32_ACCURATE: return "cuBLAS fp32";
      case v1::MATH_TF32: return "cuBLAS TF32";
      default: return "cuBLAS";
    }
  }

 private:
  SgemmProblem() = default;

  /// ref_ = op(A) * op(B) in fp64 (Fp64Reference: cuBLAS DGEMM) on the
  /// fp32 inputs widened to double on the host; ref_norm_ = ||ref_||_F
  /// (cublasDnrm2). The widened copies are freed after.
  absl::Status ComputeFp64Reference(size_t mk, size_t kn) {
    std::vector<double> wide[2];
    for (auto [src, dst, count] : {std::tuple{&a_, &wide[0], mk}, {&b_, &wide[1], kn}}) {
      auto host = CopyToHost(*src, count);
      if (!host.ok()) return host.status();
      dst->assign(host->begin(), host->end());
    }
    return Fp64Reference(handle_, m_, n_, k_, layout_, wide[0], wide[1],
                         static_cast<double*>(ref_.get()), &ref_norm_);
  }

  v1::Math math_ = v1::MATH_IEEE_FP32;
  v1::Layout layout_ = v1::LAYOUT_NN;
  int m_ = 0, n_ = 0, k_ = 0;
  float alpha_ = 1.0f, beta_ = 0.0f;
  DeviceBuffer a_, b_, c_, ref_, sum_;
  const float* a_ptr_ = nullptr;
  const float* b_ptr_ = nullptr;
  float* c_ptr_ = nullptr;
  std::vector<void*> args_;
  cublasHandle_t handle_ = nullptr;
  double ref_norm_ = 0;
  double baseline_error_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeSgemmProblem(const Shape& shape, uint64_t seed,
                                                                const v1::Device& device,
                                                                v1::Math math,
                                                                v1::Layout layout) {
  TUNED_RETURN_IF_ERROR(SgemmFamily().ValidateMath(math));
  TUNED_RETURN_IF_ERROR(SgemmFamily().ValidateLayout(layout));
  TUNED_RETURN_IF_ERROR(SgemmFamily().ValidateProblem(shape, device, math));
  return SgemmProblem::Create(shape, seed, math, layout);
}

}  // namespace tuned
