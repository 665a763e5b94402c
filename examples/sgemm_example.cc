// Gets the tuned SGEMM kernel for a shape from a running tuned daemon, runs it
// on random matrices and checks it against cuBLAS (pure fp32).
// Usage: sgemm_example [--server ADDR] M N K
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tuned/client.h"

#define CHECK_CUDA(x)                                                            \
  do {                                                                           \
    cudaError_t e = (x);                                                         \
    if (e != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));              \
      return 1;                                                                  \
    }                                                                            \
  } while (0)
#define CHECK_CUBLAS(x)                                                          \
  do {                                                                           \
    if ((x) != CUBLAS_STATUS_SUCCESS) {                                          \
      std::fprintf(stderr, "%s failed\n", #x);                                   \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main(int argc, char** argv) {
  std::string server = tuned::DefaultServerAddress();
  int arg = 1;
  if (argc > 2 && std::string(argv[1]) == "--server") {
    server = argv[2];
    arg = 3;
  }
  if (argc - arg != 3) {
    std::fprintf(stderr, "usage: %s [--server ADDR] M N K\n", argv[0]);
    return 2;
  }
  const int m = std::atoi(argv[arg]), n = std::atoi(argv[arg + 1]), k = std::atoi(argv[arg + 2]);

  tuned::Client client(server);
  auto kernel = client.Get(tuned::SgemmProblem(m, n, k));
  if (!kernel.ok()) {
    std::fprintf(stderr, "tuned: %s\n", kernel.status().ToString().c_str());
    return 1;
  }
  const auto& d = kernel->description();
  std::printf("%dx%dx%d: %s%s, %s%s\n", m, n, k,
              d.has_measurement() ? d.measurement().config().name().c_str()
                                  : "no kernel (none passed verification)",
              kernel->uses_cublas() ? (d.has_measurement() ? " (cuBLAS is faster here: calling cuBLAS)"
                                                           : " (calling cuBLAS)")
                                    : "",
              kernel->exact() ? "tuned for this shape" : "NOT tuned for this shape; nearest ",
              kernel->exact() ? "" : (std::to_string(d.tuned_shape(0)) + "x" +
                                      std::to_string(d.tuned_shape(1)) + "x" +
                                      std::to_string(d.tuned_shape(2))).c_str());

  std::vector<float> a(size_t(m) * k), b(size_t(k) * n);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& x : a) x = dist(gen);
  for (auto& x : b) x = dist(gen);
  float *da, *db, *dc, *dref;
  CHECK_CUDA(cudaMalloc(&da, a.size() * 4));
  CHECK_CUDA(cudaMalloc(&db, b.size() * 4));
  CHECK_CUDA(cudaMalloc(&dc, size_t(m) * n * 4));
  CHECK_CUDA(cudaMalloc(&dref, size_t(m) * n * 4));
  CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dc, 0xff, size_t(m) * n * 4));  // NaN: every element must be written

  if (auto s = kernel->Sgemm(m, n, k, 1.0f, da, db, 0.0f, dc); !s.ok()) {
    std::fprintf(stderr, "launch: %s\n", s.ToString().c_str());
    return 1;
  }
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));
  const float one = 1, zero = 0;  // row-major C = A*B is column-major C^T = B^T A^T
  CHECK_CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, db, n, da, k, &zero,
                           dref, n));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> c(size_t(m) * n), ref(size_t(m) * n);
  CHECK_CUDA(cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(ref.data(), dref, ref.size() * 4, cudaMemcpyDeviceToHost));
  double diff = 0, norm = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    diff += (double(c[i]) - ref[i]) * (double(c[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  const double err = std::sqrt(diff / norm);
  std::printf("relative Frobenius error vs cuBLAS: %.2e %s\n", err, err < 1e-5 ? "OK" : "FAIL");
  cublasDestroy(handle);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dref);
  return err < 1e-5 ? 0 : 1;
}
