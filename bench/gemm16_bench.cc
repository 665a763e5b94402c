// gemm16bench: the 16-bit GEMM (sgemm's BF16 and F16 forms) against cuBLAS
// in a client's process. Every shape of a shapes file is tuned through a
// running daemon (or its tuned result read), then this process loads the
// fastest kernel through the client library (tuned::TunedKernel::Gemm16,
// as an application runs it, the generated kernel even where cuBLAS won) and
// times it beside cuBLAS's cublasGemmEx (16-bit in and out, fp32 compute,
// CUBLAS_DEFAULT_MATH: tensor cores, as torch.matmul) and cuBLASLt's best of
// the top 8 algorithms of its heuristic (each timed first; the fastest joins
// the rounds), interleaved round by round, each run after a 256 MiB write
// that flushes the L2, medians of CUDA events over at least 30 rounds, on
// random inputs in [-1, 1) rounded to the type.
//
// One row per shape: the kernel's config, TFLOPS of the kernel, cuBLAS and
// cuBLASLt (2 M N K / median time), the kernel's ratio to cuBLAS (cuBLAS ms
// / kernel ms, with its 95% bootstrap interval) and to cuBLASLt, the served
// choice (the kernel, or cuBLAS where the daemon serves it) and its ratio
// (1.0 where cuBLAS is served), and the kernel's relative Frobenius error
// against cuBLAS's output. The last line is
//   SUMMARY dtype=<bf16|f16|bf16_f32|f16_f32> kernel_geomean_vs_cublas=<x> kernel_min=<x>
//     large_vs_cublas=<geomean over 2048^3, 4096^3, 8192^3, 4096x11008x4096>
//     served_slower_than_cublas=<shapes whose served ratio is under 1>
//     tflops_4096=<the kernel's TFLOPS at 4096^3> vs_cublaslt_top8=<geomean>
//     shapes=<n>
// With --suite llm (the linear layers of ../shared/bench/llm_shapes.txt, run
// in layout nt), a second line:
//   SUMMARY llm dtype=<..> layout=<..> decode_geomean_vs_cublas=<x over M <= 64>
//     decode_bw_fraction=<geomean over decode shapes of the kernel's bytes
//     (A, B and C once) / time / the copy bandwidth>
//     prefill_geomean_vs_cublas=<x over M > 64> kernel_min=<x>
//     served_slower_than_cublas=<n> shapes=<n> gpu=<h100|h200|...>
// The copy bandwidth is measured in the same run (CopyBandwidthGBps: a
// device-to-device cudaMemcpyAsync of 1 GiB, read plus write).
// With --suite epilogue, each shape in each of the fused epilogues that
// cuBLASLt has (bias, bias_relu, bias_gelu_tanh: tuner.proto Epilogue) is
// its own problem, tuned and timed as above against the same GEMM with the
// same epilogue and a random bias: cuBLASLt as a client calls it where it
// is served (LtGemm's first algorithm, planned once; the cuBLAS column) and
// cuBLASLt's best of 8;
// its last line:
//   SUMMARY epilogue dtype=<..> layout=<..> kinds=3
//     geomean_vs_cublaslt=<kernel vs the cuBLAS column, over every line>
//     min_vs_cublaslt=<x> served_slower=<n> shapes=<lines> gpu=<..>
// Usage: gemm16bench --shapes ../shared/bench/shapes.txt --dtype bf16 [--layout nn]
//        [--server ADDR] [--retune] [--suite llm|epilogue]
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/side_by_side.h"
#include "core/serving.h"
#include "families/family.h"
#include "tuned/client.h"
#include "tuned/dtype.h"
#include "tuned/half.h"
#include "tuned/kernel.h"
#include "tuned/launch.h"

namespace {

constexpr size_t kScratchBytes = size_t{256} << 20;  // more than an H100's 50 MiB L2
using tuned::kLtWorkspaceBytes;

/// Device memory freed at scope exit.
struct Buffers {
  std::vector<void*> ptrs;
  ~Buffers() {
    for (void* p : ptrs) cudaFree(p);
  }
  absl::StatusOr<void*> Alloc(size_t bytes) {
    void* p = nullptr;
    TUNED_CUDA(cudaMalloc(&p, bytes));
    ptrs.push_back(p);
    return p;
  }
};

/// The device's copy bandwidth in GB/s: 2 x 1 GiB (read plus write) over
/// the median time of 10 device-to-device cudaMemcpyAsync of 1 GiB (CUDA
/// events, after one unmeasured copy), as the decode_bw_fraction
/// defines it. Errors of the CUDA calls.
absl::StatusOr<double> CopyBandwidthGBps() {
  constexpr size_t kBytes = size_t{1} << 30;
  Buffers buffers;
  auto src = buffers.Alloc(kBytes);
  if (!src.ok()) return src.status();
  auto dst = buffers.Alloc(kBytes);
  if (!dst.ok()) return dst.status();
  TUNED_CUDA(cudaMemset(*src, 0x5a, kBytes));
  cudaEvent_t start = nullptr, stop = nullptr;
  TUNED_CUDA(cudaEventCreate(&start));
  absl::Status s = tuned::CudaStatus(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int i = 0; s.ok() && i < 11; ++i) {
    s = tuned::CudaStatus(cudaEventRecord(start), "cudaEventRecord");
    if (s.ok()) s = tuned::CudaStatus(cudaMemcpyAsync(*dst, *src, kBytes, cudaMemcpyDeviceToDevice),
                                       "cudaMemcpyAsync");
    if (s.ok()) s = tuned::CudaStatus(cudaEventRecord(stop), "cudaEventRecord");
    if (s.ok()) s = tuned::CudaStatus(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    if (s.ok()) s = tuned::CudaStatus(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (s.ok() && i > 0) ms.push_back(t);
  }
  if (stop != nullptr) cudaEventDestroy(stop);
  cudaEventDestroy(start);
  TUNED_RETURN_IF_ERROR(s);
  return 2.0 * kBytes / (tuned::Median(ms) * 1e6);
}

struct Row {
  double kernel_ms = 0, cublas_ms = 0, lt_ms = 0, error = 0;
  tuned::SpeedupInterval ratio;  // cuBLAS ms / kernel ms
};

/// The tuned kernel of `best` (loaded as a client loads it), cuBLAS and
/// cuBLASLt's fastest of its top 8, timed side by side (file comment).
absl::StatusOr<Row> TimeSideBySide(tuned::v1::BestKernel best) {
  best.set_use_baseline(false);
  auto kernel = tuned::TunedKernel::Load(best);
  if (!kernel.ok()) return kernel.status();
  const tuned::v1::Problem& p = best.problem();
  const int m = static_cast<int>(p.shape(0)), n = static_cast<int>(p.shape(1)),
            k = static_cast<int>(p.shape(2));
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  const bool c32 = tuned::OutputDType(p.dtype()) == tuned::v1::DTYPE_F32;  // an fp32 C
  const size_t cbytes = mn * (c32 ? 4 : 2);
  const tuned::v1::Epilogue epilogue = p.epilogue();
  Buffers mem;
  void *a, *b, *c, *ref, *lt_out, *scratch, *workspace, *bias;
  for (auto [ptr, bytes] : {std::pair{&a, mk * 2}, {&b, kn * 2}, {&c, cbytes}, {&ref, cbytes},
                            {&lt_out, cbytes}, {&scratch, kScratchBytes},
                            {&workspace, kLtWorkspaceBytes}, {&bias, size_t(n) * (c32 ? 4 : 2)}}) {
    auto buf = mem.Alloc(bytes);
    if (!buf.ok()) return buf.status();
    *ptr = *buf;
  }
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto [ptr, count] : {std::pair{a, mk}, {b, kn}}) {
    std::vector<uint16_t> host(count);
    for (auto& h : host) h = tuned::Narrow16(dist(gen), p.dtype());
    TUNED_CUDA(cudaMemcpy(ptr, host.data(), count * 2, cudaMemcpyHostToDevice));
  }
  if (c32) {  // the bias in C's type
    std::vector<float> host(n);
    for (auto& h : host) h = dist(gen);
    TUNED_CUDA(cudaMemcpy(bias, host.data(), size_t(n) * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<uint16_t> host(n);
    for (auto& h : host) h = tuned::Narrow16(dist(gen), p.dtype());
    TUNED_CUDA(cudaMemcpy(bias, host.data(), size_t(n) * 2, cudaMemcpyHostToDevice));
  }
  cublasLtHandle_t lt_handle = nullptr;
  TUNED_RETURN_IF_ERROR(tuned::CublasStatus(cublasLtCreate(&lt_handle), "cublasLtCreate"));
  struct DestroyLt {
    cublasLtHandle_t h;
    ~DestroyLt() { cublasLtDestroy(h); }
  } destroy_lt{lt_handle};
  auto handle = tuned::CreateCublas(tuned::v1::MATH_FP32_ACCURATE);  // CUBLAS_DEFAULT_MATH
  if (!handle.ok()) return handle.status();
  struct Destroy {
    cublasHandle_t h;
    ~Destroy() { cublasDestroy(h); }
  } destroy{*handle};
  // cuBLASLt's top 8 algorithms, with the problem's epilogue.
  auto lt = tuned::LtGemm::Plan(lt_handle, m, n, k, p.layout(), p.dtype(), epilogue,
                                epilogue == tuned::v1::EPILOGUE_NONE ? nullptr : bias,
                                kLtWorkspaceBytes, 8);
  if (!lt.ok()) return lt.status();
  // The served baseline's call with an epilogue, planned once as a client plans it.
  std::unique_ptr<tuned::LtGemm> served;
  if (epilogue != tuned::v1::EPILOGUE_NONE) {
    auto plan = tuned::LtGemm::Plan(lt_handle, m, n, k, p.layout(), p.dtype(), epilogue, bias,
                                    kLtWorkspaceBytes, 1);
    if (!plan.ok()) return plan.status();
    served = *std::move(plan);
  }

  auto kernel_run = [&] {
    if (epilogue != tuned::v1::EPILOGUE_NONE) {
      return kernel->FusedGemm16(m, n, k, 1.0f, a, b, 0.0f, c, bias, nullptr);
    }
    return kernel->Gemm16(m, n, k, 1.0f, a, b, 0.0f, c, nullptr);
  };
  auto cublas_run = [&] {
    if (served != nullptr) return served->Run(0, 1.0f, a, b, 0.0f, ref, bias, workspace, nullptr);
    return tuned::RowMajorGemmEx(*handle, m, n, k, 1.0f, a, b, 0.0f, ref, nullptr, p.layout(), p.dtype());
  };
  // cuBLASLt's top algorithms, 5 flushed rounds each; the fastest is its entry.
  int lt_best = 0;
  {
    std::vector<std::function<absl::Status()>> algos;
    for (int i = 0; i < (*lt)->algorithms(); ++i) {
      algos.push_back([&, i] { return (*lt)->Run(i, 1.0f, a, b, 0.0f, lt_out, bias, workspace, nullptr); });
    }
    auto t = tuned::bench::Interleaved(algos, scratch, kScratchBytes, 5);
    if (!t.ok()) return t.status();
    for (int i = 1; i < (*lt)->algorithms(); ++i) {
      if (tuned::Median((*t)[i]) < tuned::Median((*t)[lt_best])) lt_best = i;
    }
  }
  auto lt_run = [&] { return (*lt)->Run(lt_best, 1.0f, a, b, 0.0f, lt_out, bias, workspace, nullptr); };

  // Correctness: C poisoned (NaN) first; the kernel against cuBLAS's output.
  TUNED_CUDA(cudaMemset(c, 0xff, cbytes));
  TUNED_RETURN_IF_ERROR(kernel_run());
  TUNED_RETURN_IF_ERROR(cublas_run());
  TUNED_CUDA(cudaDeviceSynchronize());
  // Both outputs widened to double: C's 16-bit values, or its floats.
  auto download = [&](const void* src) -> absl::StatusOr<std::vector<double>> {
    std::vector<double> out(mn);
    if (c32) {
      std::vector<float> h(mn);
      TUNED_CUDA(cudaMemcpy(h.data(), src, cbytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < mn; ++i) out[i] = h[i];
    } else {
      std::vector<uint16_t> h(mn);
      TUNED_CUDA(cudaMemcpy(h.data(), src, cbytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < mn; ++i) out[i] = tuned::Widen16(h[i], p.dtype());
    }
    return out;
  };
  auto hc = download(c);
  if (!hc.ok()) return hc.status();
  auto hr = download(ref);
  if (!hr.ok()) return hr.status();
  double diff2 = 0, norm2 = 0;
  for (size_t i = 0; i < mn; ++i) {
    const double x = (*hc)[i], r = (*hr)[i];
    diff2 += (x - r) * (x - r);
    norm2 += r * r;
  }
  Row row;
  row.error = std::sqrt(diff2 / norm2);
  if (!std::isfinite(row.error)) row.error = INFINITY;

  const std::vector<std::function<absl::Status()>> runs = {kernel_run, cublas_run, lt_run};
  auto t = tuned::bench::TimedRounds(runs, scratch, kScratchBytes);
  if (!t.ok()) return t.status();
  row.kernel_ms = tuned::Median((*t)[0]);
  row.cublas_ms = tuned::Median((*t)[1]);
  row.lt_ms = tuned::Median((*t)[2]);
  auto ratio = tuned::BootstrapSpeedup((*t)[0], (*t)[1]);
  if (!ratio.ok()) return ratio.status();
  row.ratio = *ratio;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gemm16bench: 16-bit GEMM kernels against cuBLAS and cuBLASLt, one row per shape"};
  std::string shapes_path, server, dtype_name = "bf16", layout_name = "nn";
  bool retune = false;
  app.add_option("--shapes", shapes_path, "file of shapes, M N K a line, # comments")->required();
  app.add_option("--dtype", dtype_name, "bf16, f16, bf16_f32 or f16_f32");
  app.add_option("--layout", layout_name, "nn (default), nt, tn or tt");
  app.add_option("--server", server, "daemon address (default: the local daemon)");
  app.add_flag("--retune", retune, "sweep every shape even if already tuned");
  std::string suite;
  app.add_option("--suite", suite,
                 "llm: also the LLM suite's SUMMARY llm line (decode: M <= 64); epilogue: each "
                 "shape with each of cuBLASLt's fused epilogues, and the SUMMARY epilogue line")
      ->check(CLI::IsMember({"llm", "epilogue"}));
  CLI11_PARSE(app, argc, argv);
  double copy_gbps = 0;
  if (suite == "llm") {
    auto bw = CopyBandwidthGBps();
    if (!bw.ok()) {
      std::cerr << "--suite llm: measuring the copy bandwidth: " << bw.status() << "\n";
      return 1;
    }
    copy_gbps = *bw;
    std::cout << absl::StrFormat("copy bandwidth: %.0f GB/s (1 GiB device to device, read + write)\n",
                                 copy_gbps);
  }
  auto dtype = tuned::ParseDType(dtype_name);
  auto layout = tuned::ParseLayout(layout_name);
  if (!dtype.ok() || !tuned::Is16BitGemm(*dtype) || !layout.ok()) {
    std::cerr << "--dtype bf16, f16, bf16_f32 or f16_f32, --layout nn, nt, tn or tt\n";
    return 2;
  }
  std::ifstream in(shapes_path);
  if (!in) {
    std::cerr << "cannot read " << shapes_path << "\n";
    return 2;
  }
  tuned::Client client(server.empty() ? tuned::DefaultServerAddress() : server);
  std::cout << absl::StrFormat("%-32s %-56s %9s %9s %9s %s  %9s  %-6s %7s %9s\n", "shape", "kernel",
                               "kernel TF", "cuBLAS TF", "Lt8 TF", "vs cuBLAS (95% CI, pairs)", "vs Lt8",
                               "served", "served", "error");
  double log_sum = 0, log_large = 0, log_lt = 0, min_ratio = 1e30, tflops_4096 = 0;
  int n = 0, large = 0, failed = 0, served_slower = 0;
  double log_decode = 0, log_prefill = 0;
  int decode = 0, prefill = 0;
  double log_bw = 0;  // the decode shapes' fractions of the copy bandwidth
  const int in_bytes = tuned::ElementBytes(tuned::InputDType(*dtype));
  const int out_bytes = tuned::ElementBytes(tuned::OutputDType(*dtype));
  // The epilogues each shape is run in: none, or --suite epilogue's three.
  const std::vector<tuned::v1::Epilogue> epilogues =
      suite == "epilogue"
          ? std::vector<tuned::v1::Epilogue>{tuned::v1::EPILOGUE_BIAS, tuned::v1::EPILOGUE_BIAS_RELU,
                                             tuned::v1::EPILOGUE_BIAS_GELU_TANH}
          : std::vector<tuned::v1::Epilogue>{tuned::v1::EPILOGUE_NONE};
  std::string line;
  std::vector<std::tuple<int64_t, int64_t, int64_t, tuned::v1::Epilogue>> problems;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int64_t m = 0, nn = 0, k = 0;
    if (!(fields >> m >> nn >> k)) continue;
    for (tuned::v1::Epilogue e : epilogues) problems.emplace_back(m, nn, k, e);
  }
  for (const auto& [m, nn, k, epilogue] : problems) {
    tuned::v1::Problem problem =
        tuned::SgemmProblem(m, nn, k, tuned::v1::MATH_IEEE_FP32, *layout, *dtype);
    problem.set_epilogue(epilogue);
    const std::string shape =
        absl::StrCat(m, "x", nn, "x", k,
                     epilogue == tuned::v1::EPILOGUE_NONE ? "" : " +" + tuned::EpilogueName(epilogue));
    auto best = tuned::bench::TunedBest(client, problem, retune);
    if (!best.ok() || !best->has_measurement()) {
      std::cout << absl::StrFormat("%-18s no kernel: %s\n", shape,
                                   best.ok() ? best->serving_reason() : std::string(best.status().message()));
      ++failed;
      continue;
    }
    auto row = TimeSideBySide(*best);
    if (!row.ok()) {
      std::cout << absl::StrFormat("%-18s side-by-side failed: %s\n", shape,
                                   std::string(row.status().message()));
      ++failed;
      continue;
    }
    const double flop = 2.0 * m * nn * k;
    auto tf = [&](double ms) { return flop / (ms * 1e9); };
    const double ratio = row->ratio.speedup, vs_lt = row->lt_ms / row->kernel_ms;
    const double served = best->use_baseline() ? 1.0 : ratio;
    served_slower += served < 1.0;
    log_sum += std::log(ratio);
    log_lt += std::log(vs_lt);
    min_ratio = std::min(min_ratio, ratio);
    ++n;
    const bool is_large = (m == nn && nn == k && (m == 2048 || m == 4096 || m == 8192)) ||
                          (m == 4096 && nn == 11008 && k == 4096);
    if (is_large) {
      log_large += std::log(ratio);
      ++large;
    }
    if (m == 4096 && nn == 4096 && k == 4096) tflops_4096 = tf(row->kernel_ms);
    if (m <= 64) {
      log_decode += std::log(ratio);
      ++decode;
      const double bytes = double(in_bytes) * (m * k + nn * k) + double(out_bytes) * m * nn;
      if (copy_gbps > 0) log_bw += std::log(bytes / (row->kernel_ms * 1e6) / copy_gbps);
    } else {
      log_prefill += std::log(ratio);
      ++prefill;
    }
    std::cout << absl::StrFormat("%-32s %-56s %9.1f %9.1f %9.1f %s  %8.3fx  %-6s %6.3fx %9.1e\n", shape,
                                 best->measurement().config().name(), tf(row->kernel_ms),
                                 tf(row->cublas_ms), tf(row->lt_ms), tuned::FormatSpeedup(row->ratio),
                                 vs_lt, best->use_baseline() ? "cuBLAS" : "kernel", served, row->error)
              << std::flush;
  }
  std::cout << absl::StrFormat(
      "SUMMARY dtype=%s kernel_geomean_vs_cublas=%.3f kernel_min=%.3f large_vs_cublas=%.3f "
      "served_slower_than_cublas=%d tflops_4096=%.1f vs_cublaslt_top8=%.3f shapes=%d\n",
      dtype_name, n > 0 ? std::exp(log_sum / n) : 0.0, n > 0 ? min_ratio : 0.0,
      large > 0 ? std::exp(log_large / large) : 0.0, served_slower, tflops_4096,
      n > 0 ? std::exp(log_lt / n) : 0.0, n);
  cudaDeviceProp prop{};
  std::string gpu = "unknown";
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    const std::string name = prop.name;
    gpu = absl::StrContains(name, "H200") ? "h200" : absl::StrContains(name, "H100") ? "h100" : name;
  }
  if (suite == "epilogue") {
    // The cuBLAS column is cuBLASLt with the same epilogue: the ratios are fused against fused.
    std::cout << absl::StrFormat(
        "SUMMARY epilogue dtype=%s layout=%s kinds=%d geomean_vs_cublaslt=%.3f "
        "min_vs_cublaslt=%.3f served_slower=%d shapes=%d gpu=%s\n",
        dtype_name, layout_name, static_cast<int>(epilogues.size()),
        n > 0 ? std::exp(log_sum / n) : 0.0, n > 0 ? min_ratio : 0.0, served_slower, n, gpu);
  }
  if (suite == "llm") {
    std::cout << absl::StrFormat(
        "SUMMARY llm dtype=%s layout=%s decode_geomean_vs_cublas=%.3f decode_bw_fraction=%.3f "
        "prefill_geomean_vs_cublas=%.3f kernel_min=%.3f served_slower_than_cublas=%d shapes=%d "
        "gpu=%s\n",
        dtype_name, layout_name, decode > 0 ? std::exp(log_decode / decode) : 0.0,
        decode > 0 ? std::exp(log_bw / decode) : 0.0,
        prefill > 0 ? std::exp(log_prefill / prefill) : 0.0, n > 0 ? min_ratio : 0.0, served_slower,
        n, gpu);
  }
  return failed == 0 ? 0 : 1;
}
