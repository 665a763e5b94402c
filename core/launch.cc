#include "tuned/launch.h"

#include <algorithm>
#include <mutex>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "tuned/dtype.h"

namespace tuned {

absl::Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  const std::string msg =
      absl::StrCat(std::string(what), ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err));
  if (err == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
      err == cudaErrorInvalidDevice) {
    return absl::FailedPreconditionError(msg);
  }
  return absl::InternalError(msg);
}

LoadedKernel::~LoadedKernel() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

LoadedKernel::LoadedKernel(LoadedKernel&& o) noexcept
    : library_(std::exchange(o.library_, nullptr)),
      kernel_(std::exchange(o.kernel_, nullptr)),
      context_(o.context_),
      registers_(o.registers_),
      local_bytes_(o.local_bytes_) {}

LoadedKernel& LoadedKernel::operator=(LoadedKernel&& o) noexcept {
  if (this != &o) {
    if (library_ != nullptr) cudaLibraryUnload(library_);
    library_ = std::exchange(o.library_, nullptr);
    kernel_ = std::exchange(o.kernel_, nullptr);
    context_ = o.context_;
    registers_ = o.registers_;
    local_bytes_ = o.local_bytes_;
  }
  return *this;
}

absl::StatusOr<LoadedKernel> LoadedKernel::Load(const std::string& image, const std::string& entry) {
  LoadedKernel k;
  TUNED_CUDA(cudaLibraryLoadData(&k.library_, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  TUNED_CUDA(cudaLibraryGetKernel(&k.kernel_, k.library_, entry.c_str()));
  cudaFuncAttributes attr{};
  TUNED_CUDA(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(k.kernel_)));
  k.registers_ = attr.numRegs;
  // cudaFuncGetAttributes made the device's primary context current.
  if (const TunedDriver* d = tuned_driver_open(); d != nullptr) d->ctx_get_current(&k.context_);
  k.local_bytes_ = static_cast<int>(attr.localSizeBytes);
  return k;
}

absl::Status LaunchStatus(int result, const char* what) {
  if (result == 0) return absl::OkStatus();
  char buf[32];
  const std::string msg =
      absl::StrCat(what ? what : "launch", ": ",
                   tuned_launch_error_name(tuned_driver_open(), result, buf, sizeof buf));
  switch (result) {
    case 2: return absl::ResourceExhaustedError(msg);  // CUDA_ERROR_OUT_OF_MEMORY
    case TUNED_LAUNCH_BAD_PLAN: return absl::InvalidArgumentError(msg);
    case TUNED_LAUNCH_NO_DRIVER: return absl::FailedPreconditionError(msg);
    default: return absl::InternalError(msg);
  }
}

namespace {

/// The CUDA driver (tuned_driver_open), or FAILED_PRECONDITION.
absl::StatusOr<const TunedDriver*> Driver() {
  const TunedDriver* d = tuned_driver_open();
  if (d == nullptr) return absl::FailedPreconditionError("no CUDA driver (libcuda.so.1)");
  return d;
}

/// A map's rank and strides alone, for the rules that read only them.
TunedMapPlan Strides(const v1::TensorMap& m) {
  TunedMapPlan p{};
  p.rank = static_cast<uint32_t>(std::min(m.strides_bytes_size() + 1, TUNED_LAUNCH_MAX_RANK));
  for (uint32_t i = 0; i + 1 < p.rank; ++i) p.strides_bytes[i] = m.strides_bytes(i);
  p.stage = m.stage();
  return p;
}

}  // namespace

absl::StatusOr<TunedMapPlan> MapPlan(const v1::TensorMap& m) {
  TunedMapPlan p{};
  const char* what = nullptr;
  const int r = tuned_map_make(&p, m.param(), m.pointer_arg(), m.dtype(), m.dims_size(),
                               m.dims().data(), m.strides_bytes_size(), m.strides_bytes().data(),
                               m.box_size(), m.box().data(), m.swizzle_bytes(),
                               m.l2_promotion_bytes(), m.stage(), &what);
  if (r != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " (", m.dims_size(), " dims, ",
                                                   m.box_size(), " box sizes, ",
                                                   m.strides_bytes_size(), " strides, swizzle ",
                                                   m.swizzle_bytes(), ", L2 promotion ",
                                                   m.l2_promotion_bytes(), ")"));
  }
  return p;
}

absl::StatusOr<TunedLaunchPlan> LaunchPlan(const v1::LaunchGeometry& g) {
  if (g.grid_size() != 3 || g.block_size() != 3) {
    return absl::InvalidArgumentError("launch geometry needs 3 grid and 3 block dimensions");
  }
  if (g.tensor_maps_size() > TUNED_LAUNCH_MAX_MAPS) {
    return absl::InvalidArgumentError(absl::StrCat("launch geometry: ", g.tensor_maps_size(),
                                                   " tensor maps, at most ", TUNED_LAUNCH_MAX_MAPS));
  }
  TunedLaunchPlan p{};
  for (int i = 0; i < 3; ++i) {
    p.grid[i] = g.grid(i);
    p.block[i] = g.block(i);
  }
  p.dynamic_shared_bytes = g.dynamic_shared_bytes();
  p.prescale_output = g.prescale_output();
  p.map_count = g.tensor_maps_size();
  p.param_count = p.map_count > 0 ? g.tensor_maps(0).param() : 0;
  for (int i = 0; i < g.tensor_maps_size(); ++i) {
    absl::StatusOr<TunedMapPlan> m = MapPlan(g.tensor_maps(i));
    if (!m.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor map ", i, ": ", m.status().message()));
    }
    p.maps[i] = *m;
  }
  const char* what = nullptr;
  if (tuned_plan_check(&p, &what) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("launch geometry: ", what));
  }
  return p;
}

bool TmaTakes(const v1::TensorMap& m, const void* base) {
  const TunedMapPlan p = Strides(m);
  return tuned_tma_takes(&p, reinterpret_cast<uintptr_t>(base), nullptr) != 0;
}

bool Stages(const v1::TensorMap& m, const void* base) {
  const TunedMapPlan p = Strides(m);
  return tuned_stages(&p, reinterpret_cast<uintptr_t>(base)) != 0;
}

absl::StatusOr<StagedOperand> StageOperand(const v1::TensorMap& m, const void* base,
                                           cudaStream_t stream) {
  if (m.dims_size() != 2 || m.strides_bytes_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map: a staged map has rank 2, not ", m.dims_size()));
  }
  absl::StatusOr<TunedMapPlan> plan = MapPlan(m);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<const TunedDriver*> d = Driver();
  if (!d.ok()) return d.status();
  void* pool = nullptr;
  const char* what = nullptr;
  TUNED_RETURN_IF_ERROR(LaunchStatus(tuned_staging_pool(*d, &pool, &what), what));
  uint64_t copy = 0, pitch = 0;
  TUNED_RETURN_IF_ERROR(LaunchStatus(tuned_stage_operand(*d, &*plan, reinterpret_cast<uintptr_t>(base),
                                                         pool, stream, &copy, &pitch, &what),
                                     what));
  return StagedOperand{reinterpret_cast<void*>(copy), pitch};
}

absl::StatusOr<TensorMapBytes> EncodeTensorMap(const v1::TensorMap& m, const void* base) {
  absl::StatusOr<TunedMapPlan> plan = MapPlan(m);
  if (!plan.ok()) return plan.status();
  TensorMapBytes out;
  if (!TmaTakes(m, base)) return out;  // zeros: the kernel copies without TMA
  absl::StatusOr<const TunedDriver*> d = Driver();
  if (!d.ok()) return d.status();
  const char* what = nullptr;
  TUNED_RETURN_IF_ERROR(LaunchStatus(
      tuned_encode_map(*d, &*plan, reinterpret_cast<uintptr_t>(base), nullptr, &out, &what), what));
  return out;
}

absl::StatusOr<PreparedLaunch> LoadedKernel::Prepare(const v1::LaunchGeometry& g) const {
  PreparedLaunch p;
  absl::StatusOr<TunedLaunchPlan> plan = LaunchPlan(g);
  if (!plan.ok()) return plan.status();
  p.plan = *plan;
  if (p.plan.dynamic_shared_bytes > 48 * 1024) {
    TUNED_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(p.plan.dynamic_shared_bytes)));
  }
  return p;
}

absl::Status LoadedKernel::Launch(const PreparedLaunch& p, void** args, cudaStream_t stream,
                                  const void* const* maps) const {
  absl::StatusOr<const TunedDriver*> d = Driver();
  if (!d.ok()) return d.status();
  // The context of Load where the thread has none current (a CUkernel
  // launches in the current context); else the current one.
  void* current = nullptr;
  void* ctx = (*d)->ctx_get_current(&current) == 0 && current != nullptr ? nullptr : context_;
  const char* what = nullptr;
  return LaunchStatus(tuned_launch(*d, kernel_, ctx, &p.plan, args, maps, stream, 0, 0, &what),
                      what);
}

absl::Status LoadedKernel::Launch(const v1::LaunchGeometry& g, void** args,
                                  cudaStream_t stream) const {
  absl::StatusOr<PreparedLaunch> p = Prepare(g);
  if (!p.ok()) return p.status();
  return Launch(*p, args, stream);
}

absl::Status CublasStatus(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(std::string(what), ": ", cublasGetStatusString(status)));
}

absl::StatusOr<cublasHandle_t> CreatePureFp32Cublas() { return CreateCublas(v1::MATH_IEEE_FP32); }

absl::StatusOr<cublasHandle_t> CreateCublas(v1::Math math) {
  cublasMath_t mode;
  switch (math) {
    case v1::MATH_IEEE_FP32: mode = CUBLAS_PEDANTIC_MATH; break;
    case v1::MATH_FP32_ACCURATE: mode = CUBLAS_DEFAULT_MATH; break;
    case v1::MATH_TF32: mode = CUBLAS_TF32_TENSOR_OP_MATH; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown math mode ", static_cast<int>(math)));
  }
  cublasHandle_t handle = nullptr;
  TUNED_RETURN_IF_ERROR(CublasStatus(cublasCreate(&handle), "cublasCreate"));
  if (auto s = CublasStatus(cublasSetMathMode(handle, mode), "cublasSetMathMode"); !s.ok()) {
    cublasDestroy(handle);
    return s;
  }
  return handle;
}

RowMajorGemmArgs RowMajorGemm(int m, int n, int k, v1::Layout layout) {
  // A row-major X (r x c) is column-major X^T (c x r, ld c): cuBLAS reads a
  // transposed operand's storage as op(X) itself and takes OP_T.
  const bool ta = layout == v1::LAYOUT_TN || layout == v1::LAYOUT_TT;
  const bool tb = layout == v1::LAYOUT_NT || layout == v1::LAYOUT_TT;
  return {tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? k : n, ta ? m : k};
}

absl::Status RowMajorSgemm(cublasHandle_t handle, int m, int n, int k, float alpha, const float* a,
                           const float* b, float beta, float* c, cudaStream_t stream,
                           v1::Layout layout) {
  TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle, stream), "cublasSetStream"));
  const RowMajorGemmArgs g = RowMajorGemm(m, n, k, layout);
  return CublasStatus(cublasSgemm(handle, g.op_first, g.op_second, n, m, k, &alpha, b, g.ldb, a,
                                  g.lda, &beta, c, n),
                      "cublasSgemm");
}

absl::Status RowMajorGemmEx(cublasHandle_t handle, int m, int n, int k, float alpha, const void* a,
                            const void* b, float beta, void* c, cudaStream_t stream,
                            v1::Layout layout, v1::DType dtype) {
  if (!Is16BitGemm(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RowMajorGemmEx: dtype ", static_cast<int>(dtype), " is not BF16, F16, BF16_F32 or F16_F32"));
  }
  const cudaDataType_t type = InputDType(dtype) == v1::DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType_t ctype = OutputDType(dtype) == v1::DTYPE_F32 ? CUDA_R_32F : type;
  TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle, stream), "cublasSetStream"));
  const RowMajorGemmArgs g = RowMajorGemm(m, n, k, layout);
  return CublasStatus(cublasGemmEx(handle, g.op_first, g.op_second, n, m, k, &alpha, b, type, g.ldb,
                                   a, type, g.lda, &beta, c, ctype, n, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx");
}

cublasLtEpilogue_t LtEpilogue(v1::Epilogue epilogue) {
  switch (epilogue) {
    case v1::EPILOGUE_BIAS:
    case v1::EPILOGUE_BIAS_GELU_ERF: return CUBLASLT_EPILOGUE_BIAS;
    case v1::EPILOGUE_BIAS_RELU: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case v1::EPILOGUE_BIAS_GELU_TANH: return CUBLASLT_EPILOGUE_GELU_BIAS;
    default: return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

LtGemm::~LtGemm() {
  if (pref_ != nullptr) cublasLtMatmulPreferenceDestroy(pref_);
  for (cublasLtMatrixLayout_t l : {a_, b_, c_}) {
    if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
  if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
}

absl::StatusOr<std::unique_ptr<LtGemm>> LtGemm::Plan(cublasLtHandle_t lt, int m, int n, int k,
                                                     v1::Layout layout, v1::DType dtype,
                                                     v1::Epilogue epilogue, const void* bias,
                                                     size_t workspace_bytes, int count) {
  if (!Is16BitGemm(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LtGemm: dtype ", static_cast<int>(dtype), " is not BF16, F16, BF16_F32 or F16_F32"));
  }
  if (epilogue != v1::EPILOGUE_NONE && bias == nullptr) {
    return absl::InvalidArgumentError("LtGemm: the epilogue needs a bias");
  }
  auto plan = std::unique_ptr<LtGemm>(new LtGemm());
  plan->fused_ = epilogue != v1::EPILOGUE_NONE;
  plan->lt_ = lt;
  plan->workspace_bytes_ = workspace_bytes;
  const cudaDataType_t type = InputDType(dtype) == v1::DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType_t ctype = OutputDType(dtype) == v1::DTYPE_F32 ? CUDA_R_32F : type;
  // Column-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m), as RowMajorGemm.
  const RowMajorGemmArgs g = RowMajorGemm(m, n, k, layout);
  TUNED_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulDescCreate(&plan->op_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                                     "cublasLtMatmulDescCreate"));
  const cublasLtEpilogue_t epi = LtEpilogue(epilogue);
  for (auto [attr, value, size] :
       {std::tuple{CUBLASLT_MATMUL_DESC_TRANSA, static_cast<const void*>(&g.op_first), sizeof(g.op_first)},
        {CUBLASLT_MATMUL_DESC_TRANSB, &g.op_second, sizeof(g.op_second)},
        {CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)}}) {
    TUNED_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulDescSetAttribute(plan->op_, attr, value, size),
                                       "cublasLtMatmulDescSetAttribute"));
  }
  if (epilogue != v1::EPILOGUE_NONE) {
    TUNED_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulDescSetAttribute(
                                           plan->op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
                                       "cublasLtMatmulDescSetAttribute (bias)"));
    TUNED_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulDescSetAttribute(
                                           plan->op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &ctype, sizeof(ctype)),
                                       "cublasLtMatmulDescSetAttribute (bias type)"));
  }
  // cuBLASLt's A is B's storage (n x k, or k x n transposed), its B is A's.
  const bool tb = g.op_first == CUBLAS_OP_T, ta = g.op_second == CUBLAS_OP_T;
  TUNED_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatrixLayoutCreate(&plan->a_, type, tb ? k : n, tb ? n : k, g.ldb), "cublasLtMatrixLayoutCreate"));
  TUNED_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatrixLayoutCreate(&plan->b_, type, ta ? m : k, ta ? k : m, g.lda), "cublasLtMatrixLayoutCreate"));
  TUNED_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->c_, ctype, n, m, n), "cublasLtMatrixLayoutCreate"));
  TUNED_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&plan->pref_), "cublasLtMatmulPreferenceCreate"));
  TUNED_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulPreferenceSetAttribute(plan->pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes)),
      "cublasLtMatmulPreferenceSetAttribute"));
  plan->algos_.resize(std::max(count, 1));
  int found = 0;
  TUNED_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulAlgoGetHeuristic(lt, plan->op_, plan->a_, plan->b_, plan->c_, plan->c_, plan->pref_,
                                     static_cast<int>(plan->algos_.size()), plan->algos_.data(), &found),
      "cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0) {
    return absl::NotFoundError(absl::StrCat("cuBLASLt has no algorithm for ", m, "x", n, "x", k,
                                            " with epilogue ", static_cast<int>(epi)));
  }
  plan->algos_.resize(found);
  return plan;
}

absl::Status LtGemm::Run(int algorithm, float alpha, const void* a, const void* b, float beta,
                         void* c, const void* bias, void* workspace, cudaStream_t stream) const {
  if (algorithm < 0 || algorithm >= algorithms()) {
    return absl::InvalidArgumentError(absl::StrCat("LtGemm: no algorithm ", algorithm));
  }
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (fused_) {
    if (bias == nullptr) return absl::InvalidArgumentError("LtGemm: the epilogue needs a bias");
    lock.lock();
    TUNED_RETURN_IF_ERROR(CublasStatus(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
        "cublasLtMatmulDescSetAttribute (bias)"));
  }
  return CublasStatus(cublasLtMatmul(lt_, op_, &alpha, b, a_, a, b_, &beta, c, c_, c, c_,
                                     &algos_[algorithm].algo, workspace, workspace_bytes_, stream),
                      "cublasLtMatmul");
}

absl::Status RowMajorGemmLt(cublasLtHandle_t lt, int m, int n, int k, float alpha, const void* a,
                            const void* b, float beta, void* c, const void* bias,
                            cudaStream_t stream, v1::Layout layout, v1::DType dtype,
                            v1::Epilogue epilogue, void* workspace, size_t workspace_bytes) {
  auto plan = LtGemm::Plan(lt, m, n, k, layout, dtype, epilogue, bias, workspace_bytes, 1);
  if (!plan.ok()) return plan.status();
  return (*plan)->Run(0, alpha, a, b, beta, c, bias, workspace, stream);
}

absl::Status PrescaleOutput(cublasHandle_t handle, float beta, float* c, int64_t count,
                            cudaStream_t stream) {
  if (beta == 0.0f) {
    return CudaStatus(cudaMemsetAsync(c, 0, static_cast<size_t>(count) * sizeof(float), stream),
                      "cudaMemsetAsync (prescale C)");
  }
  if (beta == 1.0f) return absl::OkStatus();
  if (handle == nullptr) return absl::InvalidArgumentError("PrescaleOutput: beta != 0 needs cuBLAS");
  if (count > INT32_MAX) return absl::InvalidArgumentError("PrescaleOutput: C too large");
  TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle, stream), "cublasSetStream"));
  return CublasStatus(cublasSscal(handle, static_cast<int>(count), &beta, c, 1), "cublasSscal");
}

}  // namespace tuned
