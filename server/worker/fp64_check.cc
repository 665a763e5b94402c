#include "server/worker/fp64_check.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/worker/compiler.h"
#include "server/worker/gpu.h"

namespace tuned {

namespace {

/// The check kernel of `dtype`, compiled for the current GPU on first use
/// (every problem of the worker shares it).
absl::StatusOr<const LoadedKernel*> Fp64CheckKernel(v1::DType dtype) {
  static absl::Mutex mu;
  static auto* kernels = new std::map<v1::DType, std::unique_ptr<LoadedKernel>>();
  absl::MutexLock lock(&mu);
  if (auto it = kernels->find(dtype); it != kernels->end()) return it->second.get();
  int device = 0, major = 0, minor = 0;
  TUNED_CUDA(cudaGetDevice(&device));
  TUNED_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TUNED_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  auto compiled = Compile(kFp64CheckSource, Fp64CheckName(dtype), {}, absl::StrCat("sm_", major, minor));
  if (!compiled.ok()) {
    return absl::InternalError(absl::StrCat("fp64 check kernel: ", compiled.status().message()));
  }
  auto loaded = LoadedKernel::Load(compiled->cubin, compiled->entry);
  if (!loaded.ok()) return loaded.status();
  auto [it, added] = kernels->emplace(dtype, std::make_unique<LoadedKernel>(*std::move(loaded)));
  return it->second.get();
}

}  // namespace

absl::StatusOr<double> Fp64Err2(const void* c, const double* r, long long n, double* sum,
                                v1::DType dtype, cudaStream_t stream) {
  auto kernel = Fp64CheckKernel(dtype);
  if (!kernel.ok()) return kernel.status();
  TUNED_CUDA(cudaMemsetAsync(sum, 0, sizeof(double), stream));
  void* args[] = {&c, &r, &n, &sum};
  v1::LaunchGeometry g;
  const int64_t blocks = std::min<int64_t>((n + kFp64CheckThreads - 1) / kFp64CheckThreads, 1024);
  for (uint32_t d : {static_cast<uint32_t>(blocks), 1u, 1u}) g.add_grid(d);
  for (uint32_t d : {static_cast<uint32_t>(kFp64CheckThreads), 1u, 1u}) g.add_block(d);
  TUNED_RETURN_IF_ERROR((*kernel)->Launch(g, args, stream));
  double diff2 = 0;
  TUNED_CUDA(cudaMemcpyAsync(&diff2, sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA(cudaStreamSynchronize(stream));
  return diff2;
}

absl::Status Fp64Reference(cublasHandle_t handle, int m, int n, int k, v1::Layout layout,
                           const std::vector<double>& a, const std::vector<double>& b, double* ref,
                           double* norm) {
  DeviceBuffer a64, b64;
  for (auto [src, dst] : {std::pair{&a, &a64}, {&b, &b64}}) {
    auto buf = DeviceBuffer::Alloc(src->size() * sizeof(double));
    if (!buf.ok()) return buf.status();
    *dst = *std::move(buf);
    TUNED_CUDA(cudaMemcpy(dst->get(), src->data(), src->size() * sizeof(double), cudaMemcpyHostToDevice));
  }
  const double one = 1.0, zero = 0.0;
  TUNED_RETURN_IF_ERROR(CublasStatus(cublasSetStream(handle, nullptr), "cublasSetStream"));
  const RowMajorGemmArgs g = RowMajorGemm(m, n, k, layout);
  TUNED_RETURN_IF_ERROR(CublasStatus(
      cublasDgemm(handle, g.op_first, g.op_second, n, m, k, &one,
                  static_cast<const double*>(b64.get()), g.ldb,
                  static_cast<const double*>(a64.get()), g.lda, &zero, ref, n),
      "cublasDgemm"));
  TUNED_RETURN_IF_ERROR(
      CublasStatus(cublasDnrm2(handle, m * n, ref, 1, norm), "cublasDnrm2"));
  TUNED_CUDA(cudaDeviceSynchronize());
  return absl::OkStatus();
}

}  // namespace tuned
