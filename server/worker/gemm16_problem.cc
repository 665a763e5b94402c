// The 16-bit GEMM on the device (the sgemm family's BF16 and F16 forms and
// their fp32-output forms BF16_F32 and F16_F32, families/sgemm/gemm16.cc):
// random A and B in [-1, 1) rounded to the input type, stored in the
// problem's layout as sgemm_problem.cc's; C of the output type
// (tuned/dtype.h InputDType, OutputDType). The baseline is cuBLAS's
// cublasGemmEx in the same types with fp32
// compute (RowMajorGemmEx). The check is a relative Frobenius error against
// an fp64 reference of the same 16-bit inputs (cuBLAS DGEMM on them widened
// to double), at most kErrorBoundFactor x the baseline's own error against
// it: both round C to 16 bits once, so the bound leaves room for another
// summation order, not for a lost bit. An fp32 C is never rounded, and its
// error is the fp32 sums' alone; there the bound is at least sqrt(K) u
// (kFp32Unit): cuBLAS splits K on skinny shapes and stays under what one
// fp32 chain of K terms reaches.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/worker/fp64_check.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"
#include "tuned/half.h"

namespace tuned {
namespace {

/// A kernel passes if its error against the fp64 reference is at most this
/// many times cuBLAS's (the rule of sgemm's fp64 modes).
constexpr double kErrorBoundFactor = 2.0;

/// u = 2^-24, fp32's unit roundoff. sqrt(K) u is the probabilistic bound of
/// an fp32 sum of K terms (N. J. Higham and T. Mary, "A New Approach to
/// Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5),
/// 2019, Theorem 3.1, lambda = 1): the floor of the bound for an fp32 C. On
/// an H100, cuBLAS's error at 16x515x1000 (bf16 inputs, fp32 C) was 1.0e-7,
/// every kind's 2.1e-7 to 8.4e-7, and sqrt(1000) u is 1.9e-6
/// (bench/RESULTS.md gemm16-f32-output).
constexpr double kFp32Unit = 0x1p-24;

class Gemm16Problem final : public DeviceProblem {
 public:
  ~Gemm16Problem() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }

  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const Shape& shape, uint64_t seed,
                                                               v1::Layout layout, v1::DType dtype) {
    auto p = std::unique_ptr<Gemm16Problem>(new Gemm16Problem());
    p->layout_ = layout;
    p->dtype_ = dtype;
    p->m_ = static_cast<int>(shape[0]);
    p->n_ = static_cast<int>(shape[1]);
    p->k_ = static_cast<int>(shape[2]);
    const size_t mk = size_t(p->m_) * p->k_, kn = size_t(p->k_) * p->n_, mn = size_t(p->m_) * p->n_;
    const size_t c_bytes = mn * ElementBytes(OutputDType(dtype));
    for (auto [buf, bytes] : {std::pair{&p->a_, mk * 2}, {&p->b_, kn * 2}, {&p->c_, c_bytes},
                              {&p->ref_, mn * sizeof(double)}, {&p->sum_, sizeof(double)}}) {
      auto b = DeviceBuffer::Alloc(bytes);
      if (!b.ok()) return b.status();
      *buf = *std::move(b);
    }
    auto handle = CreateCublas(v1::MATH_FP32_ACCURATE);  // CUBLAS_DEFAULT_MATH
    if (!handle.ok()) return handle.status();
    p->handle_ = *handle;
    TUNED_RETURN_IF_ERROR(p->FillAndReference(mk, kn, seed));
    if (!(p->ref_norm_ > 0) || !std::isfinite(p->ref_norm_)) {
      return absl::InternalError("the reference is zero or not finite");
    }
    p->a_ptr_ = p->a_.get();
    p->b_ptr_ = p->b_.get();
    p->c_ptr_ = p->c_.get();
    p->args_ = {&p->m_, &p->n_, &p->k_, &p->alpha_, &p->a_ptr_, &p->b_ptr_, &p->beta_, &p->c_ptr_};
    // The baseline's own error against the fp64 reference sets the bound.
    TUNED_RETURN_IF_ERROR(p->RunBaseline(nullptr));
    auto err = p->CheckOutput(nullptr);
    if (!err.ok()) return err.status();
    if (!std::isfinite(*err)) return absl::InternalError("the baseline's output is not finite");
    p->baseline_error_ = *err;
    return std::unique_ptr<DeviceProblem>(std::move(p));
  }

  std::vector<void*>& KernelArgs() override { return args_; }

  absl::Status PoisonOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaMemsetAsync(c_.get(), 0xff, c_.bytes(), stream));  // NaN in BF16, FP16 and fp32
    return absl::OkStatus();
  }

  /// ||C - R||_F / ||R||_F against the fp64 reference (fp64_err2 of C's
  /// type); +inf on NaN or infinity.
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    auto err2 = Fp64Err2(c_.get(), static_cast<const double*>(ref_.get()),
                         static_cast<long long>(m_) * n_, static_cast<double*>(sum_.get()),
                         OutputDType(dtype_), stream);
    if (!err2.ok()) return err2.status();
    const double err = std::sqrt(*err2) / ref_norm_;
    return std::isfinite(err) ? err : std::numeric_limits<double>::infinity();
  }

  /// kErrorBoundFactor x the baseline's error; for an fp32 C at least
  /// sqrt(K) x kFp32Unit.
  double Tolerance() const override {
    const double bound = kErrorBoundFactor * baseline_error_;
    if (OutputDType(dtype_) != v1::DTYPE_F32) return bound;
    return std::max(bound, std::sqrt(static_cast<double>(k_)) * kFp32Unit);
  }
  double BaselineError() const override { return baseline_error_; }

  /// A and B in the input type, C in the output type.
  int64_t OperandBytes() const override {
    return static_cast<int64_t>(a_.bytes() + b_.bytes() + c_.bytes());
  }

  /// cublasGemmEx in the problem's types into C (C is poisoned before each check).
  absl::Status RunBaseline(cudaStream_t stream) override {
    return RowMajorGemmEx(handle_, m_, n_, k_, 1.0f, a_.get(), b_.get(), 0.0f, c_.get(), stream,
                          layout_, dtype_);
  }

  /// "cuBLAS bf16", "cuBLAS f16", "cuBLAS bf16_f32" or "cuBLAS f16_f32".
  std::string BaselineName() const override { return absl::StrCat("cuBLAS ", DTypeText(dtype_)); }

 private:
  Gemm16Problem() = default;

  /// A and B: FillRandom's fp32 values of `seed` and `seed` + 1 rounded to
  /// the input type; ref_ = op(A) op(B) in fp64 (Fp64Reference: DGEMM on the 16-bit
  /// values widened to double, row-major as RowMajorGemm), ref_norm_ its
  /// Frobenius norm (cublasDnrm2). The fp32 and fp64 copies are freed after.
  absl::Status FillAndReference(size_t mk, size_t kn, uint64_t seed) {
    std::vector<double> wide[2];
    for (auto [dst, wide_dst, count, s] :
         {std::tuple{&a_, &wide[0], mk, seed}, {&b_, &wide[1], kn, seed + 1}}) {
      std::vector<float> host;
      {
        auto f32 = DeviceBuffer::Alloc(count * sizeof(float));
        if (!f32.ok()) return f32.status();
        TUNED_RETURN_IF_ERROR(FillRandom(*f32, count, s));
        auto copied = CopyToHost(*f32, count);
        if (!copied.ok()) return copied.status();
        host = *std::move(copied);
      }
      std::vector<uint16_t> bits(count);
      wide_dst->resize(count);
      for (size_t i = 0; i < count; ++i) {
        bits[i] = Narrow16(host[i], dtype_);
        (*wide_dst)[i] = Widen16(bits[i], dtype_);
      }
      TUNED_CUDA(cudaMemcpy(dst->get(), bits.data(), count * 2, cudaMemcpyHostToDevice));
    }
    return Fp64Reference(handle_, m_, n_, k_, layout_, wide[0], wide[1],
                         static_cast<double*>(ref_.get()), &ref_norm_);
  }

  v1::Layout layout_ = v1::LAYOUT_NN;
  v1::DType dtype_ = v1::DTYPE_BF16;
  int m_ = 0, n_ = 0, k_ = 0;
  float alpha_ = 1.0f, beta_ = 0.0f;
  DeviceBuffer a_, b_, c_, ref_, sum_;
  const void* a_ptr_ = nullptr;
  const void* b_ptr_ = nullptr;
  void* c_ptr_ = nullptr;
  std::vector<void*> args_;
  cublasHandle_t handle_ = nullptr;
  double ref_norm_ = 0;
  double baseline_error_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeGemm16Problem(const Shape& shape, uint64_t seed,
                                                                 const v1::Device& device,
                                                                 v1::Layout layout,
                                                                 v1::DType dtype) {
  const Family* family = SgemmFamily().ForDType(dtype);
  if (family == nullptr || !Is16BitGemm(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype ", EnumName(dtype), " is not a 16-bit dtype of sgemm (bf16, f16, bf16_f32, f16_f32)"));
  }
  TUNED_RETURN_IF_ERROR(family->ValidateLayout(layout));
  TUNED_RETURN_IF_ERROR(family->ValidateProblem(shape, device));
  return Gemm16Problem::Create(shape, seed, layout, dtype);
}

}  // namespace tuned
