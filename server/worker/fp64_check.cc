#include "server/worker/fp64_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/worker/compiler.h"
#include "server/worker/gpu.h"

namespace tuned {

namespace {

/// The worker's kernel `name` of `source`, compiled for the current GPU on
/// first use (every problem of the worker shares it).
absl::StatusOr<const LoadedKernel*> WorkerKernel(std::string_view source, const std::string& name) {
  static absl::Mutex mu;
  static auto* kernels = new std::map<std::string, std::unique_ptr<LoadedKernel>>();
  absl::MutexLock lock(&mu);
  if (auto it = kernels->find(name); it != kernels->end()) return it->second.get();
  int device = 0, major = 0, minor = 0;
  TUNED_CUDA(cudaGetDevice(&device));
  TUNED_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TUNED_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  auto compiled = Compile(source, name, {}, absl::StrCat("sm_", major, minor));
  if (!compiled.ok()) {
    return absl::InternalError(absl::StrCat(name, ": ", compiled.status().message()));
  }
  auto loaded = LoadedKernel::Load(compiled->cubin, compiled->entry);
  if (!loaded.ok()) return loaded.status();
  auto [it, added] = kernels->emplace(name, std::make_unique<LoadedKernel>(*std::move(loaded)));
  return it->second.get();
}

/// A grid-stride launch of kFp64CheckThreads threads a block over n elements.
v1::LaunchGeometry GridStride(long long n) {
  v1::LaunchGeometry g;
  const int64_t blocks = std::max<int64_t>(
      std::min<int64_t>((n + kFp64CheckThreads - 1) / kFp64CheckThreads, 1024), 1);
  for (uint32_t d : {static_cast<uint32_t>(blocks), 1u, 1u}) g.add_grid(d);
  for (uint32_t d : {static_cast<uint32_t>(kFp64CheckThreads), 1u, 1u}) g.add_block(d);
  return g;
}

}  // namespace

absl::StatusOr<double> Fp64Err2(const void* c, const double* r, long long n, double* sum,
                                v1::DType dtype, cudaStream_t stream) {
  auto kernel = WorkerKernel(kFp64CheckSource, Fp64CheckName(dtype));
  if (!kernel.ok()) return kernel.status();
  TUNED_CUDA(cudaMemsetAsync(sum, 0, sizeof(double), stream));
  void* args[] = {&c, &r, &n, &sum};
  TUNED_RETURN_IF_ERROR((*kernel)->Launch(GridStride(n), args, stream));
  double diff2 = 0;
  TUNED_CUDA(cudaMemcpyAsync(&diff2, sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA(cudaStreamSynchronize(stream));
  return diff2;
}

absl::Status GeluErfInPlace(void* c, long long n, v1::DType dtype, cudaStream_t stream) {
  auto kernel = WorkerKernel(kGeluErfSource, GeluErfName(dtype));
  if (!kernel.ok()) return kernel.status();
  void* args[] = {&c, &n};
  return (*kernel)->Launch(GridStride(n), args, stream);
}

absl::Status Fp64ApplyEpilogue(double* ref, int m, int n, const std::vector<double>& bias,
                               v1::Epilogue epilogue, double* norm) {
  if (bias.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fp64ApplyEpilogue: ", bias.size(), " bias values for N = ", n));
  }
  const size_t count = size_t(m) * n;
  std::vector<double> host(count);
  TUNED_CUDA(cudaMemcpy(host.data(), ref, count * sizeof(double), cudaMemcpyDeviceToHost));
  double norm2 = 0;
  for (size_t i = 0; i < count; ++i) {
    double x = host[i] + bias[i % n];
    switch (epilogue) {
      case v1::EPILOGUE_BIAS_RELU: x = std::max(x, 0.0); break;
      case v1::EPILOGUE_BIAS_GELU_TANH:
        x = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
        break;
      case v1::EPILOGUE_BIAS_GELU_ERF: x = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); break;
      default: break;
    }
    host[i] = x;
    norm2 += x * x;
  }
  TUNED_CUDA(cudaMemcpy(ref, host.data(), count * sizeof(double), cudaMemcpyHostToDevice));
  *norm = std::sqrt(norm2);
  return absl::OkStatus();
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
