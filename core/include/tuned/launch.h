// Loading and launching a compiled kernel with the CUDA runtime's library API
// (cudaLibraryLoadData): shared by the GPU worker and the client library.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tuned/launch_c.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// Returns from the enclosing function with CudaStatus(expr) unless it is cudaSuccess.
#define TUNED_CUDA(expr)                                                          \
  do {                                                                            \
    if (absl::Status _s = ::tuned::CudaStatus((expr), #expr); !_s.ok()) return _s; \
  } while (0)

/// OK for cudaSuccess, else INTERNAL "<what>: <cudaGetErrorName>: <string>".
absl::Status CudaStatus(cudaError_t err, std::string_view what);

/// OK for 0, else the launcher's status (tuned/launch_c.h) as absl::Status
/// "<what>: <name>": RESOURCE_EXHAUSTED for CUDA_ERROR_OUT_OF_MEMORY,
/// INVALID_ARGUMENT for TUNED_LAUNCH_BAD_PLAN, FAILED_PRECONDITION for
/// TUNED_LAUNCH_NO_DRIVER, else INTERNAL.
absl::Status LaunchStatus(int result, const char* what);

/// The C launcher's template of tensor map `m` (tuned_map_make).
/// INVALID_ARGUMENT for a malformed map (rank, box, swizzle, promotion, dtype).
absl::StatusOr<TunedMapPlan> MapPlan(const v1::TensorMap& m);

/// The C launcher's plan of `geometry` (3 grid and 3 block dimensions; its
/// tensor maps after the other parameters, in order, each over an earlier
/// one, a staged one of rank 2: tuned_plan_check). INVALID_ARGUMENT for a
/// malformed geometry.
absl::StatusOr<TunedLaunchPlan> LaunchPlan(const v1::LaunchGeometry& geometry);

/// A launch geometry checked and converted once (LoadedKernel::Prepare):
/// what a launch would otherwise work out from the proto each time.
struct PreparedLaunch {
  /// The C launcher's plan: geometry, prescale_output, the tensor maps.
  TunedLaunchPlan plan{};
  bool prescale_output() const { return plan.prescale_output != 0; }
};

/// A compiled kernel loaded into the current context (cudaLibrary API).
class LoadedKernel {
 public:
  LoadedKernel() = default;
  ~LoadedKernel();
  LoadedKernel(LoadedKernel&& o) noexcept;
  LoadedKernel& operator=(LoadedKernel&& o) noexcept;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  /// Loads `image` (a cubin, or NUL-terminated PTX for the driver to JIT) and
  /// finds `entry` (the lowered name).
  static absl::StatusOr<LoadedKernel> Load(const std::string& image, const std::string& entry);
  /// Launches with the geometry (dynamic shared memory opted in as needed);
  /// `args` are pointers to the arguments in the kernel's order, less the
  /// tensor maps of geometry.tensor_maps, which it encodes (EncodeTensorMap)
  /// and passes as the parameters they name. INVALID_ARGUMENT for a
  /// malformed geometry, INTERNAL for a failed encode or launch.
  absl::Status Launch(const v1::LaunchGeometry& geometry, void** args, cudaStream_t stream) const;
  /// Checks `geometry` (3 grid and 3 block dimensions; tensor maps after the
  /// other parameters, in order, each over an earlier one, a staged one of
  /// rank 2) and opts the
  /// kernel into its dynamic shared memory, once, for launches with it.
  /// INVALID_ARGUMENT for a malformed geometry, INTERNAL for a CUDA error.
  absl::StatusOr<PreparedLaunch> Prepare(const v1::LaunchGeometry& geometry) const;
  /// Launches a prepared geometry with the C launcher (tuned_launch): `args`
  /// as above; the tensor maps, if any, are `maps` (the caller's encodings,
  /// one per map: a cache) or encoded here over the pointers they name, or
  /// over the staged copies of the operands TensorMap.stage asks to stage,
  /// whose addresses the kernel gets in the operands' places. Where no
  /// context is current on the thread, the one of Load is pushed.
  absl::Status Launch(const PreparedLaunch& prepared, void** args, cudaStream_t stream,
                      const void* const* maps = nullptr) const;
  /// Registers per thread and local (spill) bytes of the loaded function.
  int registers() const { return registers_; }
  int local_bytes() const { return local_bytes_; }

 private:
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  void* context_ = nullptr;  // the context current at Load (a CUcontext)
  int registers_ = 0;
  int local_bytes_ = 0;
};

/// A CUtensorMap's 128 bytes, 64-byte aligned as cuTensorMapEncodeTiled needs.
struct alignas(64) TensorMapBytes {
  uint64_t opaque[16] = {};
};

/// Whether TMA takes map `m` over `base`: `base` 16-byte aligned and every
/// stride a multiple of 16 bytes (cuTensorMapEncodeTiled's rules, tuned_tma_takes).
bool TmaTakes(const v1::TensorMap& m, const void* base);

/// Whether a launch over `base` stages map `m`'s operand: m.stage() and TMA
/// does not take `base` (TensorMap.stage, tuned_stages).
bool Stages(const v1::TensorMap& m, const void* base);

/// A staged operand (TensorMap.stage): the copy's base, 16-byte aligned,
/// and its row pitch in bytes (the map's row bytes rounded up to 16).
struct StagedOperand {
  void* base = nullptr;
  uint64_t pitch_bytes = 0;
};

/// Copies the rank-2 operand of map `m` at `base` (dims[1] rows of dims[0]
/// elements, pitch strides_bytes[0]) into a workspace with 16-byte rows, on
/// `stream` (tuned_stage_operand: cuMemcpy2DAsync; the rows' padding zeroed).
/// The workspace comes from a stream-ordered
/// pool of the current device that keeps its memory (tuned_staging_pool,
/// release threshold unbounded); the caller frees it with cudaFreeAsync on
/// `stream` after the kernel. INVALID_ARGUMENT for a map not of rank 2;
/// RESOURCE_EXHAUSTED when the device memory runs out; INTERNAL for another
/// CUDA error.
absl::StatusOr<StagedOperand> StageOperand(const v1::TensorMap& m, const void* base,
                                           cudaStream_t stream);

/// The tiled tensor map `m` describes over `base` (tuned_encode_map:
/// cuTensorMapEncodeTiled; interleave none, zero fill, L2
/// promotion as m.l2_promotion_bytes), or 128 zero bytes where TMA cannot take it: `base`
/// not 16-byte aligned or a stride not a multiple of 16 bytes (the kernel
/// tests the same and copies without TMA). INVALID_ARGUMENT for a
/// malformed map (rank, box, swizzle, promotion), INTERNAL when the driver refuses it.
absl::StatusOr<TensorMapBytes> EncodeTensorMap(const v1::TensorMap& m, const void* base);

/// OK for CUBLAS_STATUS_SUCCESS, else INTERNAL "<what>: <cublasGetStatusString>".
absl::Status CublasStatus(cublasStatus_t status, std::string_view what);

/// A cuBLAS handle in pure fp32 (CUBLAS_PEDANTIC_MATH: no TF32), the
/// reference and baseline of MATH_IEEE_FP32: CreateCublas(MATH_IEEE_FP32).
absl::StatusOr<cublasHandle_t> CreatePureFp32Cublas();

/// A cuBLAS handle whose SGEMM is math mode `math`'s baseline (tuner.proto
/// Math): CUBLAS_PEDANTIC_MATH for MATH_IEEE_FP32, CUBLAS_DEFAULT_MATH (pure
/// fp32 unless NVIDIA_TF32_OVERRIDE=1 is set) for MATH_FP32_ACCURATE,
/// CUBLAS_TF32_TENSOR_OP_MATH (cublasSgemm computes as
/// CUBLAS_COMPUTE_32F_FAST_TF32) for MATH_TF32. INVALID_ARGUMENT for another
/// value; INTERNAL for a cuBLAS error.
absl::StatusOr<cublasHandle_t> CreateCublas(v1::Math math);

/// Row-major C(MxN) = alpha * op(A) * op(B) + beta * C on `stream` with
/// cuBLAS (column-major C^T = op(B)^T * op(A)^T, so A and B swap places), in
/// `layout` (tuner.proto Layout: A stored M x K, lda = K, or for op(A) = A^T
/// K x M, lda = M; B stored K x N, ldb = N, or for op(B) = B^T N x K, ldb = K).
absl::Status RowMajorSgemm(cublasHandle_t handle, int m, int n, int k, float alpha, const float* a,
                           const float* b, float beta, float* c, cudaStream_t stream,
                           v1::Layout layout = v1::LAYOUT_NN);

/// RowMajorSgemm's GEMM in 16 bits: A, B and C of `dtype` (DTYPE_BF16 or
/// DTYPE_F16), or A and B 16-bit and C fp32 (DTYPE_BF16_F32, DTYPE_F16_F32:
/// tuned/dtype.h InputDType, OutputDType), alpha, beta and the accumulation
/// fp32 (cublasGemmEx,
/// CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT; the handle's math mode
/// CUBLAS_DEFAULT_MATH lets it use the tensor cores, as torch.matmul does).
/// INVALID_ARGUMENT for another dtype; INTERNAL for a cuBLAS error.
absl::Status RowMajorGemmEx(cublasHandle_t handle, int m, int n, int k, float alpha, const void* a,
                            const void* b, float beta, void* c, cudaStream_t stream,
                            v1::Layout layout, v1::DType dtype);

/// cuBLASLt's epilogue for `epilogue` (tuner.proto Epilogue):
/// CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _RELU_BIAS, _GELU_BIAS (the tanh form);
/// for EPILOGUE_BIAS_GELU_ERF, which cuBLASLt does not have, _BIAS (the
/// caller applies the GELU after).
cublasLtEpilogue_t LtEpilogue(v1::Epilogue epilogue);

/// cuBLASLt's workspace for LtGemm: 32 MiB, what cuBLAS itself takes on
/// Hopper (cuBLAS documentation, cublasSetWorkspace).
inline constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

/// RowMajorGemmEx's GEMM planned on cuBLASLt with the problem's epilogue
/// (LtEpilogue): C = epilogue(alpha * op(A) op(B) + beta * C + bias), the
/// bias N elements of C's type, one per column of C (C^T's rows, as
/// cuBLASLt broadcasts it). Its descriptors and the first algorithms of
/// cuBLASLt's heuristic, planned once and run as often as needed (the
/// heuristic costs host time that a timed or served call must not pay):
/// the baseline of a fused epilogue, and what a client calls where it is
/// served. Runs may come from several threads.
class LtGemm {
 public:
  /// The plan in `layout` and `dtype` (the 16-bit ones) with up to `count`
  /// algorithms that fit `workspace_bytes`, for a bias like `bias` (a device
  /// pointer; null for EPILOGUE_NONE). INVALID_ARGUMENT for another dtype or
  /// a missing bias; NOT_FOUND where cuBLASLt offers no algorithm; INTERNAL
  /// for a cuBLASLt error.
  static absl::StatusOr<std::unique_ptr<LtGemm>> Plan(cublasLtHandle_t lt, int m, int n, int k,
                                                      v1::Layout layout, v1::DType dtype,
                                                      v1::Epilogue epilogue, const void* bias,
                                                      size_t workspace_bytes, int count);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  /// How many algorithms the heuristic gave (at least 1).
  int algorithms() const { return static_cast<int>(algos_.size()); }
  /// Runs algorithm `algorithm` (0: the heuristic's first) on `stream` with
  /// `bias` (ignored for EPILOGUE_NONE) and `workspace` (of the planned
  /// size). INVALID_ARGUMENT for an algorithm out of range or a missing
  /// bias; INTERNAL for a cuBLASLt error.
  absl::Status Run(int algorithm, float alpha, const void* a, const void* b, float beta, void* c,
                   const void* bias, void* workspace, cudaStream_t stream) const;

 private:
  LtGemm() = default;
  bool fused_ = false;
  mutable std::mutex mu_;  // the descriptor's bias pointer, set by each run
  cublasLtHandle_t lt_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos_;
  size_t workspace_bytes_ = 0;
};

/// LtGemm planned and run once (a GEMM called once; a repeated call plans
/// once with LtGemm). Errors as LtGemm's.
absl::Status RowMajorGemmLt(cublasLtHandle_t lt, int m, int n, int k, float alpha, const void* a,
                            const void* b, float beta, void* c, const void* bias,
                            cudaStream_t stream, v1::Layout layout, v1::DType dtype,
                            v1::Epilogue epilogue, void* workspace, size_t workspace_bytes);

/// cuBLAS's arguments for a row-major GEMM in `layout` (RowMajorSgemm):
/// cublasSgemm/Dgemm(handle, op_first, op_second, n, m, k, alpha, B, ldb, A,
/// lda, beta, C, n).
struct RowMajorGemmArgs {
  cublasOperation_t op_first, op_second;  // B's, then A's
  int ldb, lda;
};
RowMajorGemmArgs RowMajorGemm(int m, int n, int k, v1::Layout layout);

/// Sets the `count` floats at `c` to beta * c on `stream`: a memset to zero
/// when beta == 0 (BLAS semantics: C is not read, so NaN in C is cleared),
/// else cublasSscal. For kernels that add into C with atomics
/// (LaunchGeometry.prescale_output). `handle` may be null when beta == 0.
absl::Status PrescaleOutput(cublasHandle_t handle, float beta, float* c, int64_t count,
                            cudaStream_t stream);

}  // namespace tuned
