// What a launch through the client library costs the CPU: TunedKernel::Sgemm
// against a bare cudaLaunchKernel of the same kernel (its own library load
// of the same image, the daemon's geometry and, for a TMA kernel, its tensor
// map encoded beforehand), and a launch whose geometry is worked out at the
// call (TunedKernel::GeometryFor, then LoadedKernel::Launch with the
// geometry: what Sgemm does for a shape other than the one it prepared).
//
//   call_bench --shape 64 64 64 --shape 4096 1 4096 --shape 3000 2000 1500 [--math ieee_fp32]
//
// Per shape, from the daemon at $TUNED_SERVER or the local socket of GPU 0
// (tunectl sweep the shapes first): the served kernel (where the daemon
// serves cuBLAS and the description holds the kernel, the kernel itself:
// the launch is what is measured). CPU: the time inside the calls, over
// --calls calls in batches of --batch (each batch ends with a
// cudaStreamSynchronize outside the timing, so the launch queue never
// fills), the three ways interleaved batch by batch; the median batch, so
// that a batch the machine preempted does not count. GPU: CUDA events
// around a stream of --stream back-to-back calls. One line a shape:
//   cpp M N K config=<name> served=<kernel|cublas> sgemm_cpu_us=... bare_cpu_us=...
//       unprepared_cpu_us=... sgemm_gpu_us=... bare_gpu_us=...
// then `SUMMARY call_bench overhead_us=<max of sgemm_cpu_us - bare_cpu_us> shapes=N`.
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "tuned/client.h"
#include "tuned/kernel.h"
#include "tuned/launch.h"

namespace {

#define CHECK_CUDA(expr)                                                                  \
  do {                                                                                    \
    if (cudaError_t _e = (expr); _e != cudaSuccess) {                                     \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(_e));                    \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

using Clock = std::chrono::steady_clock;

struct Timing {
  double cpu_us = 0;  // per call
  double gpu_us = 0;  // per call, in a stream
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU cost of TunedKernel::Sgemm against a bare cudaLaunchKernel"};
  std::vector<int64_t> dims;
  std::string math_name = "ieee_fp32", server;
  int calls = 2000, batch = 100, stream_calls = 200;
  app.add_option("--shape", dims, "M N K (repeat the option for more shapes)")->take_all();
  app.add_option("--math", math_name, "ieee_fp32, fp32_accurate or tf32");
  app.add_option("--server", server, "daemon address (default: $TUNED_SERVER or GPU 0's socket)");
  app.add_option("--calls", calls, "calls timed for the CPU cost");
  app.add_option("--batch", batch, "calls between synchronizations");
  app.add_option("--stream", stream_calls, "back-to-back calls timed with CUDA events");
  CLI11_PARSE(app, argc, argv);
  if (dims.size() % 3 != 0 || batch < 1 || calls < batch) {
    std::fprintf(stderr, "--shape takes M N K; --calls at least --batch, both positive\n");
    return 2;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < dims.size(); i += 3) shapes.push_back({dims[i], dims[i + 1], dims[i + 2]});
  if (shapes.empty()) shapes = {{64, 64, 64}, {4096, 1, 4096}, {3000, 2000, 1500}};
  tuned::v1::Math math;
  if (!tuned::v1::Math_Parse("MATH_" + [&] {
        std::string up = math_name;
        for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        return up;
      }(), &math)) {
    std::fprintf(stderr, "unknown math mode %s\n", math_name.c_str());
    return 2;
  }
  tuned::Client client(server.empty() ? tuned::DefaultServerAddress() : server);
  cudaStream_t stream;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double max_overhead = 0;
  int measured = 0;
  for (const auto& shape : shapes) {
    int m = static_cast<int>(shape[0]), n = static_cast<int>(shape[1]), k = static_cast<int>(shape[2]);
    auto best = client.GetBest(tuned::SgemmProblem(m, n, k, math));
    if (!best.ok()) {
      std::printf("cpp %d %d %d error=\"%s\"\n", m, n, k, best.status().ToString().c_str());
      continue;
    }
    const bool served_cublas = best->use_baseline();
    if (best->cubin().empty() && best->ptx().empty()) {
      std::printf("cpp %d %d %d served=cublas no_kernel=1 (nothing to launch)\n", m, n, k);
      continue;
    }
    best->set_use_baseline(false);  // the kernel itself: its launch is what is measured
    auto kernel = tuned::TunedKernel::Load(*best);
    if (!kernel.ok()) {
      std::printf("cpp %d %d %d error=\"%s\"\n", m, n, k, kernel.status().ToString().c_str());
      continue;
    }
    // The bare launch: the same image loaded on its own, the daemon's
    // geometry for this shape, arguments and tensor maps built beforehand.
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    const bool same_arch =
        best->device().cc_major() == prop.major && best->device().cc_minor() == prop.minor;
    const std::string& image = same_arch && !best->cubin().empty() ? best->cubin() : best->ptx();
    cudaLibrary_t library;
    cudaKernel_t bare;
    CHECK_CUDA(cudaLibraryLoadData(&library, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK_CUDA(cudaLibraryGetKernel(&bare, library, best->entry().c_str()));
    auto unprepared = tuned::LoadedKernel::Load(image, best->entry());
    if (!unprepared.ok()) {
      std::printf("cpp %d %d %d error=\"%s\"\n", m, n, k, unprepared.status().ToString().c_str());
      continue;
    }
    const tuned::v1::LaunchGeometry& g = best->geometry();
    if (g.dynamic_shared_bytes() > 48 * 1024) {
      CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(bare),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(g.dynamic_shared_bytes())));
    }
    float *a, *b, *c;
    CHECK_CUDA(cudaMalloc(&a, size_t(m) * k * 4));
    CHECK_CUDA(cudaMalloc(&b, size_t(k) * n * 4));
    CHECK_CUDA(cudaMalloc(&c, size_t(m) * n * 4));
    CHECK_CUDA(cudaMemset(a, 0, size_t(m) * k * 4));
    CHECK_CUDA(cudaMemset(b, 0, size_t(k) * n * 4));
    float alpha = 1.0f, beta = 0.0f;
    std::vector<tuned::TensorMapBytes> maps;
    for (const auto& map : g.tensor_maps()) {
      auto bytes = tuned::EncodeTensorMap(map, a);  // sgemm's maps are over A
      if (!bytes.ok()) {
        std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
        return 1;
      }
      maps.push_back(*bytes);
    }
    int mm = m, nn = n, kk = k;
    const float *pa = a, *pb = b;
    float* pc = c;
    std::vector<void*> bare_args = {&mm, &nn, &kk, &alpha, &pa, &pb, &beta, &pc};
    for (auto& map : maps) bare_args.push_back(&map);
    const dim3 grid(g.grid(0), g.grid(1), g.grid(2)), block(g.block(0), g.block(1), g.block(2));
    const bool prescale = g.prescale_output();
    std::function<void()> ways[3] = {
        [&] {
          if (auto s = kernel->Sgemm(m, n, k, 1.0f, a, b, 0.0f, c, stream); !s.ok()) {
            std::fprintf(stderr, "Sgemm: %s\n", s.ToString().c_str());
            std::exit(1);
          }
        },
        [&] {
          if (prescale) CHECK_CUDA(cudaMemsetAsync(c, 0, size_t(m) * n * 4, stream));
          CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(bare), grid, block,
                                      bare_args.data(), g.dynamic_shared_bytes(), stream));
        },
        [&] {  // the geometry worked out at the call
          auto geometry = tuned::TunedKernel::GeometryFor(*best, {m, n, k});
          if (!geometry.ok()) std::exit(1);
          if (geometry->prescale_output()) {
            CHECK_CUDA(cudaMemsetAsync(c, 0, size_t(m) * n * 4, stream));
          }
          void* args[] = {&mm, &nn, &kk, &alpha, &pa, &pb, &beta, &pc};
          if (!unprepared->Launch(*geometry, args, stream).ok()) std::exit(1);
        }};
    Timing t[3];
    for (auto& way : ways) {
      for (int i = 0; i < 20; ++i) way();
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<double> batch_ns[3];  // per batch; the median batch is reported
    for (int done = 0; done < calls; done += batch) {
      for (int w = 0; w < 3; ++w) {
        const int way = (w + done / batch) % 3;  // rotated: no way always first
        const auto start = Clock::now();
        for (int i = 0; i < batch; ++i) ways[way]();
        batch_ns[way].push_back(
            std::chrono::duration<double, std::nano>(Clock::now() - start).count());
        CHECK_CUDA(cudaStreamSynchronize(stream));
      }
    }
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    for (int w = 0; w < 3; ++w) {
      auto& ns = batch_ns[w];
      std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
      t[w].cpu_us = ns[ns.size() / 2] / batch / 1e3;
    }
    for (int w = 0; w < 2; ++w) {
      CHECK_CUDA(cudaEventRecord(e0, stream));
      for (int i = 0; i < stream_calls; ++i) ways[w]();
      CHECK_CUDA(cudaEventRecord(e1, stream));
      CHECK_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      t[w].gpu_us = ms * 1e3 / stream_calls;
    }
    std::printf("cpp %d %d %d config=%s served=%s maps=%d sgemm_cpu_us=%.3f bare_cpu_us=%.3f "
                "unprepared_cpu_us=%.3f sgemm_gpu_us=%.3f bare_gpu_us=%.3f\n",
                m, n, k, best->measurement().config().name().c_str(),
                served_cublas ? "cublas" : "kernel", g.tensor_maps_size(), t[0].cpu_us,
                t[1].cpu_us, t[2].cpu_us, t[0].gpu_us, t[1].gpu_us);
    std::fflush(stdout);
    max_overhead = std::max(max_overhead, t[0].cpu_us - t[1].cpu_us);
    ++measured;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaLibraryUnload(library);
  }
  std::printf("SUMMARY call_bench overhead_us=%.3f shapes=%d\n", max_overhead, measured);
  return measured == static_cast<int>(shapes.size()) ? 0 : 1;
}
