#include "tuned/launch.h"

#include <cudaTypedefs.h>

#include <algorithm>
#include <map>
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
      registers_(o.registers_),
      local_bytes_(o.local_bytes_) {}

LoadedKernel& LoadedKernel::operator=(LoadedKernel&& o) noexcept {
  if (this != &o) {
    if (library_ != nullptr) cudaLibraryUnload(library_);
    library_ = std::exchange(o.library_, nullptr);
    kernel_ = std::exchange(o.kernel_, nullptr);
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
  k.local_bytes_ = static_cast<int>(attr.localSizeBytes);
  return k;
}

bool TmaTakes(const v1::TensorMap& m, const void* base) {
  bool tma = reinterpret_cast<uintptr_t>(base) % 16 == 0;
  for (uint64_t s : m.strides_bytes()) tma = tma && s % 16 == 0;
  return tma;
}

bool Stages(const v1::TensorMap& m, const void* base) { return m.stage() && !TmaTakes(m, base); }

namespace {

/// The staging pool of the current device (StageOperand), created once per
/// device and kept for the process: its memory stays with it between
/// launches (release threshold unbounded), so a staged launch allocates in
/// stream order without a cudaMalloc.
absl::StatusOr<cudaMemPool_t> StagingPool() {
  int device = 0;
  TUNED_CUDA(cudaGetDevice(&device));
  static std::mutex mu;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = pools.find(device); it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  TUNED_CUDA(cudaMemPoolCreate(&pool, &props));
  uint64_t keep = UINT64_MAX;
  TUNED_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  pools.emplace(device, pool);
  return pool;
}

}  // namespace

absl::StatusOr<StagedOperand> StageOperand(const v1::TensorMap& m, const void* base,
                                           cudaStream_t stream) {
  if (m.dims_size() != 2 || m.strides_bytes_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map: a staged map has rank 2, not ", m.dims_size()));
  }
  const uint64_t row = m.dims(0) * ElementBytes(m.dtype());
  StagedOperand copy;
  copy.pitch_bytes = (row + 15) / 16 * 16;
  absl::StatusOr<cudaMemPool_t> pool = StagingPool();
  if (!pool.ok()) return pool.status();
  TUNED_CUDA(cudaMallocFromPoolAsync(&copy.base, copy.pitch_bytes * m.dims(1), *pool, stream));
  if (absl::Status s = CudaStatus(
          cudaMemcpy2DAsync(copy.base, copy.pitch_bytes, base, m.strides_bytes(0), row, m.dims(1),
                            cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpy2DAsync (staging)");
      !s.ok()) {
    // The copy's error is the one reported (Update keeps the first).
    s.Update(CudaStatus(cudaFreeAsync(copy.base, stream), "cudaFreeAsync (staging)"));
    return s;
  }
  // The rows' padding zeroed: a kernel that copies 16-byte units past the
  // row's end (cp.async) reads zeros there.
  if (copy.pitch_bytes > row) {
    if (absl::Status s = CudaStatus(
            cudaMemset2DAsync(static_cast<char*>(copy.base) + row, copy.pitch_bytes, 0,
                              copy.pitch_bytes - row, m.dims(1), stream),
            "cudaMemset2DAsync (staging)");
        !s.ok()) {
      s.Update(CudaStatus(cudaFreeAsync(copy.base, stream), "cudaFreeAsync (staging)"));
      return s;
    }
  }
  return copy;
}

absl::StatusOr<TensorMapBytes> EncodeTensorMap(const v1::TensorMap& m, const void* base) {
  const int rank = m.dims_size();
  if (rank < 1 || rank > 5 || m.box_size() != rank || m.strides_bytes_size() != rank - 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor map: ", rank, " dims, ", m.box_size(), " box sizes and ", m.strides_bytes_size(),
        " strides; it needs 1 to 5 dims, as many box sizes and one stride fewer"));
  }
  CUtensorMapSwizzle swizzle;
  switch (m.swizzle_bytes()) {
    case 0: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
    case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
    case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
    case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("tensor map: swizzle of ", m.swizzle_bytes(), " bytes (0, 32, 64 or 128)"));
  }
  CUtensorMapL2promotion promotion;
  switch (m.l2_promotion_bytes()) {
    case 0:
    case 256: promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B; break;
    case 128: promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B; break;
    case 64: promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_64B; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor map: L2 promotion of ", m.l2_promotion_bytes(), " bytes (0, 64, 128 or 256)"));
  }
  TensorMapBytes out;
  if (!TmaTakes(m, base)) return out;  // zeros: the kernel copies without TMA
  // The driver's function, looked up once (thread-safe static initialization).
  static const absl::StatusOr<PFN_cuTensorMapEncodeTiled_v12000> encode =
      []() -> absl::StatusOr<PFN_cuTensorMapEncodeTiled_v12000> {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TUNED_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      return absl::InternalError("cuTensorMapEncodeTiled: not found in the driver");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (!encode.ok()) return encode.status();
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], unit[5];
  for (int i = 0; i < rank; ++i) {
    dims[i] = m.dims(i);
    box[i] = m.box(i);
    unit[i] = 1;
    if (i + 1 < rank) strides[i] = m.strides_bytes(i);
  }
  const CUtensorMapDataType type = m.dtype() == v1::DTYPE_BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : m.dtype() == v1::DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = (*encode)(reinterpret_cast<CUtensorMap*>(&out), type,
                            static_cast<cuuint32_t>(rank), const_cast<void*>(base), dims, strides,
                            box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return absl::InternalError(absl::StrCat("cuTensorMapEncodeTiled: CUresult ", static_cast<int>(r)));
  }
  return out;
}

absl::StatusOr<PreparedLaunch> LoadedKernel::Prepare(const v1::LaunchGeometry& g) const {
  if (g.grid_size() != 3 || g.block_size() != 3) {
    return absl::InvalidArgumentError("launch geometry needs 3 grid and 3 block dimensions");
  }
  PreparedLaunch p;
  p.grid = dim3(g.grid(0), g.grid(1), g.grid(2));
  p.block = dim3(g.block(0), g.block(1), g.block(2));
  p.dynamic_shared_bytes = g.dynamic_shared_bytes();
  p.prescale_output = g.prescale_output();
  if (g.tensor_maps_size() > 0) {
    p.first_map_param = g.tensor_maps(0).param();
    for (int i = 0; i < g.tensor_maps_size(); ++i) {
      const v1::TensorMap& m = g.tensor_maps(i);
      if (m.param() != p.first_map_param + i || m.pointer_arg() >= p.first_map_param) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor map ", i, ": parameter ", m.param(), " over pointer parameter ",
            m.pointer_arg(), "; maps follow the other parameters in order, over one of them"));
      }
      if (m.stage() && (m.dims_size() != 2 || m.strides_bytes_size() != 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor map ", i, ": a staged map has rank 2, not ", m.dims_size()));
      }
      p.tensor_maps.push_back(m);
    }
  }
  if (p.dynamic_shared_bytes > 48 * 1024) {
    TUNED_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(p.dynamic_shared_bytes)));
  }
  return p;
}

absl::Status LoadedKernel::LaunchWithMaps(const PreparedLaunch& p, void** args,
                                          cudaStream_t stream) const {
  const cudaError_t launched = cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), p.grid,
                                                p.block, args, p.dynamic_shared_bytes, stream);
  // A refused launch (e.g. too many threads) also stays in the runtime's
  // last-error slot: take it out, or the next good launch would report it.
  const cudaError_t last = cudaGetLastError();
  return CudaStatus(launched != cudaSuccess ? launched : last, "kernel launch");
}

absl::Status LoadedKernel::Launch(const PreparedLaunch& p, void** args, cudaStream_t stream) const {
  if (p.tensor_maps.empty()) return LaunchWithMaps(p, args, stream);
  // Tensor maps: the parameters from the first map's on, in order, each
  // over its operand or the operand's staged copy (freed after the kernel,
  // in stream order, whether or not it ran).
  std::vector<TensorMapBytes> maps;
  maps.reserve(p.tensor_maps.size());
  // The copies' addresses, each passed in its operand's place (a slot per
  // map, so that the pointers they hold stay put).
  std::vector<void*> copies(p.tensor_maps.size(), nullptr);
  absl::Status launched = [&]() -> absl::Status {
    std::vector<void*> with_maps(args, args + p.first_map_param);
    for (size_t i = 0; i < p.tensor_maps.size(); ++i) {
      const v1::TensorMap& m = p.tensor_maps[i];
      const void* base = *static_cast<void* const*>(args[m.pointer_arg()]);
      absl::StatusOr<TensorMapBytes> bytes;
      if (Stages(m, base)) {
        absl::StatusOr<StagedOperand> copy = StageOperand(m, base, stream);
        if (!copy.ok()) return copy.status();
        copies[i] = copy->base;
        with_maps[m.pointer_arg()] = &copies[i];
        v1::TensorMap over_copy = m;
        over_copy.set_strides_bytes(0, copy->pitch_bytes);
        bytes = EncodeTensorMap(over_copy, copy->base);
      } else {
        bytes = EncodeTensorMap(m, base);
      }
      if (!bytes.ok()) return bytes.status();
      maps.push_back(*bytes);
    }
    for (TensorMapBytes& m : maps) with_maps.push_back(&m);
    return LaunchWithMaps(p, with_maps.data(), stream);
  }();
  for (void* copy : copies) {
    if (copy == nullptr) continue;
    absl::Status freed = CudaStatus(cudaFreeAsync(copy, stream), "cudaFreeAsync (staging)");
    if (launched.ok()) launched = freed;
  }
  return launched;
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
