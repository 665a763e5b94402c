// SGEMM on the device: random A, B; cuBLAS (pure fp32, CUBLAS_PEDANTIC_MATH,
// no TF32) as reference and baseline; relative Frobenius error as the check,
// computed on the GPU (cuBLAS axpy + dot) so that checking a candidate of a
// large shape costs no device-to-host copy.
#include <cublas_v2.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"

namespace tuned {
namespace {

class SgemmProblem final : public DeviceProblem {
 public:
  ~SgemmProblem() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }

  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const Shape& shape, uint64_t seed) {
    auto p = std::unique_ptr<SgemmProblem>(new SgemmProblem());
    p->m_ = static_cast<int>(shape[0]);
    p->n_ = static_cast<int>(shape[1]);
    p->k_ = static_cast<int>(shape[2]);
    const size_t mk = size_t(p->m_) * p->k_, kn = size_t(p->k_) * p->n_, mn = size_t(p->m_) * p->n_;
    for (auto [buf, count] : {std::pair{&p->a_, mk}, {&p->b_, kn}, {&p->c_, mn}, {&p->ref_, mn}}) {
      auto b = DeviceBuffer::Alloc(count * sizeof(float));
      if (!b.ok()) return b.status();
      *buf = *std::move(b);
    }
    TUNED_RETURN_IF_ERROR(FillRandom(p->a_, mk, seed));
    TUNED_RETURN_IF_ERROR(FillRandom(p->b_, kn, seed + 1));
    auto handle = CreatePureFp32Cublas();
    if (!handle.ok()) return handle.status();
    p->handle_ = *handle;
    p->a_ptr_ = p->a_.f32();
    p->b_ptr_ = p->b_.f32();
    p->c_ptr_ = p->c_.f32();
    p->args_ = {&p->m_, &p->n_, &p->k_, &p->alpha_, &p->a_ptr_, &p->b_ptr_, &p->beta_, &p->c_ptr_};
    // Reference: cuBLAS into ref_, kept on the host in double for the check.
    TUNED_CUDA(cudaMemset(p->ref_.get(), 0xff, mn * sizeof(float)));
    TUNED_RETURN_IF_ERROR(p->RunBaseline(nullptr));
    TUNED_CUDA(cudaDeviceSynchronize());
    auto ref = CopyToHost(p->ref_, mn);
    if (!ref.ok()) return ref.status();
    double norm2 = 0;
    for (float r : *ref) norm2 += double(r) * r;
    p->ref_norm_ = std::sqrt(norm2);
    if (!(p->ref_norm_ > 0) || !std::isfinite(p->ref_norm_)) {
      return absl::InternalError("cuBLAS reference is zero or not finite");
    }
    return std::unique_ptr<DeviceProblem>(std::move(p));
  }

  std::vector<void*>& KernelArgs() override { return args_; }

  absl::Status PoisonOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaMemsetAsync(c_.get(), 0xff, c_.bytes(), stream));  // NaN
    return absl::OkStatus();
  }

  // ||C - C_ref||_F / ||C_ref||_F; +inf on NaN or infinity. On the GPU: C -=
  // C_ref (cublasSaxpy; C is overwritten, every use poisons or rewrites it
  // first), then the sum of squares with cublasSdot (fp32 with cuBLAS's
  // tree reduction: a few ulps relative, ample for a 1e-4 threshold; NaN
  // and infinity propagate). ||C_ref|| was computed in double on the host.
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    const int count = m_ * n_;  // < 2^31 (ValidateShape)
    const float minus_one = -1.0f;
    float diff2 = 0;
    TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle_, stream), "cublasSetStream"));
    TUNED_RETURN_IF_ERROR(CublasStatus(
        cublasSaxpy(handle_, count, &minus_one, ref_.f32(), 1, c_.f32(), 1), "cublasSaxpy"));
    TUNED_RETURN_IF_ERROR(
        CublasStatus(cublasSdot(handle_, count, c_.f32(), 1, c_.f32(), 1, &diff2), "cublasSdot"));
    TUNED_CUDA(cudaStreamSynchronize(stream));
    const double err = std::sqrt(static_cast<double>(diff2)) / ref_norm_;
    return std::isfinite(err) ? err : std::numeric_limits<double>::infinity();
  }

  // Split-K and stream-K kernels add into C: set it to beta * C (zero: beta_ is 0).
  absl::Status BeforeLaunch(const v1::LaunchGeometry& geometry, cudaStream_t stream) override {
    if (!geometry.prescale_output()) return absl::OkStatus();
    return PrescaleOutput(handle_, beta_, c_.f32(), int64_t{m_} * n_, stream);
  }

  /// fp32 SGEMM of random [-1,1) data: summation-order differences stay
  /// near sqrt(K) * 2^-24 (about 5e-6 at K = 8192); 1e-4 flags real bugs.
  double Tolerance() const override { return 1e-4; }

  absl::Status RunBaseline(cudaStream_t stream) override {
    return RowMajorSgemm(handle_, m_, n_, k_, 1.0f, a_.f32(), b_.f32(), 0.0f, ref_.f32(), stream);
  }

  std::string BaselineName() const override { return "cuBLAS"; }

 private:
  SgemmProblem() = default;
  int m_ = 0, n_ = 0, k_ = 0;
  float alpha_ = 1.0f, beta_ = 0.0f;
  DeviceBuffer a_, b_, c_, ref_;
  const float* a_ptr_ = nullptr;
  const float* b_ptr_ = nullptr;
  float* c_ptr_ = nullptr;
  std::vector<void*> args_;
  cublasHandle_t handle_ = nullptr;
  double ref_norm_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeSgemmProblem(const Shape& shape, uint64_t seed,
                                                                const v1::Device& device) {
  if (auto s = SgemmFamily().ValidateProblem(shape, device); !s.ok()) return s;
  return SgemmProblem::Create(shape, seed);
}

}  // namespace tuned
