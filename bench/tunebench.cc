// tunebench: tunes every shape of a shapes file through a running daemon (or
// reads the tuned result it already has) and prints, per shape, the winner
// against the baseline. For sgemm with --side-by-side (on the daemon's GPU
// machine), this process loads the fastest generated kernel through the
// client library (tuned::TunedKernel::Sgemm, with split-K's prescaling: what
// an application runs, except that it never falls back to cuBLAS) and times
// it and cuBLAS (pure fp32) itself, interleaved, L2 flushed before each run,
// medians of CUDA events; the error is the relative Frobenius error of the
// kernel's C against cuBLAS's. The column `served` says what the client
// library would run for the shape: the kernel, or cuBLAS where cuBLAS won
// the job. At least 30 interleaved rounds (pairs) are timed, and the
// kernel's side-by-side ratio (cuBLAS ms / kernel ms, medians) comes with
// its 95% bootstrap interval (core/serving.h), next to the job's own ratio
// (its stored judged speedup, else its baseline / median). Otherwise the
// numbers are the job's (the baseline timed in the same job on the same GPU:
// cuBLAS for sgemm, the copy kernel for transpose). The last line is
//   SUMMARY geomean_vs_<baseline>=<x.xx> min_vs_<baseline>=<x.xx> shapes=<n>
// and with --side-by-side, before it,
//   SUMMARY side_by_side served_slower_than_cublas=<n> max_disagreement=<x.xxx> shapes=<n>
// where a shape's served ratio is the kernel's side-by-side ratio where the
// kernel is served and 1.0 (both ways) where cuBLAS is: served_slower_than_cublas
// counts the shapes whose served choice runs slower than cuBLAS here, and
// max_disagreement is the largest |job ratio / side-by-side ratio - 1| over them.
// With --gemv (sgemm's matrix-vector shapes, bench/gemv_shapes.txt), the
// fastest kernel, cuBLAS and a device-to-device copy (cudaMemcpyAsync of
// half the bytes: the same bytes read and written) are timed side by side
// as above, in GB/s of 4 * (M*K + K*N + 2*M*N) bytes (A and B read, C read
// and written); each row shows the kernel's fraction of the copy's GB/s and
// its ratio to cuBLAS (cuBLAS ms / kernel ms, with its interval), and the
// last line is
//   SUMMARY gemv geomean_vs_cublas=<x.xx> min_vs_cublas=<x.xx> shapes=<n>
// With --math fp32_accurate or tf32 (sgemm's math modes, tuner.proto Math)
// every shape is tuned in that mode and the rows show, against the mode's
// baseline (cuBLAS pure fp32, cuBLAS TF32): the served choice (the kernel,
// or the baseline where the serving rule picks it), both in TFLOPS, the
// served ratio (baseline ms / served ms: the judged speedup, or with
// --side-by-side the ratio timed here; 1.0 where the baseline is served), and the kernel's and the baseline's relative
// Frobenius errors against the fp64 reference with their ratio (with
// --side-by-side also the job's ratio and the kernel's ratio timed here with
// its 95% interval, as in the default table, which max_disagreement
// compares); the last line is then
//   SUMMARY math=<mode> geomean_vs_baseline=<x> min_vs_baseline=<x> max_error_ratio=<x> shapes=<n>
// (max_error_ratio: the largest kernel error / baseline error over the
// shapes; the mode admits kernels up to 2), and with --side-by-side, before
// it, the kernel's own ratios wherever the baseline is served:
//   SUMMARY math=<mode> kernel_geomean_vs_baseline=<x> kernel_min=<x> shapes=<n>
// Usage: tunebench --family sgemm --shapes ../shared/bench/shapes.txt [--server ADDR] [--retune]
//        [--side-by-side] [--math ieee_fp32|fp32_accurate|tf32] [--gemv]
//        tunebench --family sgemm --list-space   (the space's config names, for bench/ablation.py)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/side_by_side.h"
#include "families/family.h"
#include "core/serving.h"
#include "core/status.h"
#include "tuned/client.h"
#include "tuned/kernel.h"
#include "tuned/launch.h"

namespace {

/// The winner and cuBLAS timed in this process on one shape: medians, and
/// the ratio's interval from every round's pair; with --gemv, the copy too.
struct SideBySide {
  double tuned_ms = 0, cublas_ms = 0, copy_ms = 0, error = 0;
  tuned::SpeedupInterval ratio;  // cuBLAS ms / kernel ms
};

using tuned::bench::Interleaved;

/// Bytes a matrix-vector product moves (--gemv): A and B read, C read and
/// written, 4 * (M*K + K*N + 2*M*N).
double GemvBytes(int64_t m, int64_t n, int64_t k) { return 4.0 * (m * k + k * n + 2 * m * n); }

/// Loads the tuned kernel of `problem` through the client library and times
/// it against cuBLAS on random inputs (see the file comment). `copy_bytes` >
/// 0: also times, in the same rounds, a device-to-device cudaMemcpyAsync of
/// copy_bytes / 2 (copy_bytes read and written), the copy a memory-bound
/// kernel is held to.
absl::StatusOr<SideBySide> TimeSideBySide(tuned::v1::BestKernel best, double copy_bytes = 0) {
  // cuBLAS in the problem's math mode: its baseline.
  best.set_use_baseline(false);  // the generated kernel, even where cuBLAS won
  auto kernel = tuned::TunedKernel::Load(best);
  if (!kernel.ok()) return kernel.status();
  const tuned::v1::Problem& problem = best.problem();
  const int m = static_cast<int>(problem.shape(0)), n = static_cast<int>(problem.shape(1)),
            k = static_cast<int>(problem.shape(2));
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  std::vector<float> host(std::max({mk, kn}));
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float *a = nullptr, *b = nullptr, *c = nullptr, *ref = nullptr;
  void* scratch = nullptr;
  const size_t scratch_bytes = tuned::bench::kScratchBytes;
  struct Free {
    std::vector<void*> ptrs;
    ~Free() {
      for (void* p : ptrs) cudaFree(p);
    }
  } to_free;
  for (auto [ptr, count] : {std::pair{&a, mk}, {&b, kn}, {&c, mn}, {&ref, mn}}) {
    TUNED_CUDA(cudaMalloc(ptr, count * sizeof(float)));
    to_free.ptrs.push_back(*ptr);
  }
  TUNED_CUDA(cudaMalloc(&scratch, scratch_bytes));
  to_free.ptrs.push_back(scratch);
  for (auto [ptr, count] : {std::pair{a, mk}, {b, kn}}) {
    for (size_t i = 0; i < count; ++i) host[i] = dist(gen);
    TUNED_CUDA(cudaMemcpy(ptr, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
  auto handle = tuned::CreateCublas(problem.math());
  if (!handle.ok()) return handle.status();
  struct Destroy {
    cublasHandle_t h;
    ~Destroy() { cublasDestroy(h); }
  } destroy{*handle};
  auto tuned_run = [&] { return kernel->Sgemm(m, n, k, 1.0f, a, b, 0.0f, c, nullptr); };
  auto cublas_run = [&] { return tuned::RowMajorSgemm(*handle, m, n, k, 1.0f, a, b, 0.0f, ref, nullptr); };
  std::vector<std::function<absl::Status()>> runs = {tuned_run, cublas_run};
  const size_t half = static_cast<size_t>(copy_bytes / 2) / 16 * 16;
  void *copy_from = nullptr, *copy_to = nullptr;
  if (half > 0) {
    for (void** p : {&copy_from, &copy_to}) {
      TUNED_CUDA(cudaMalloc(p, half));
      to_free.ptrs.push_back(*p);
    }
    TUNED_CUDA(cudaMemset(copy_from, 1, half));
    runs.push_back([&] {
      TUNED_CUDA(cudaMemcpyAsync(copy_to, copy_from, half, cudaMemcpyDeviceToDevice, nullptr));
      return absl::OkStatus();
    });
  }
  // Correctness: C poisoned with NaN first.
  TUNED_CUDA(cudaMemset(c, 0xff, mn * sizeof(float)));
  TUNED_RETURN_IF_ERROR(tuned_run());
  TUNED_RETURN_IF_ERROR(cublas_run());
  TUNED_CUDA(cudaDeviceSynchronize());
  std::vector<float> hc(mn), hr(mn);
  TUNED_CUDA(cudaMemcpy(hc.data(), c, mn * sizeof(float), cudaMemcpyDeviceToHost));
  TUNED_CUDA(cudaMemcpy(hr.data(), ref, mn * sizeof(float), cudaMemcpyDeviceToHost));
  double diff2 = 0, norm2 = 0;
  for (size_t i = 0; i < mn; ++i) {
    diff2 += (double(hc[i]) - hr[i]) * (double(hc[i]) - hr[i]);
    norm2 += double(hr[i]) * hr[i];
  }
  SideBySide out;
  out.error = std::sqrt(diff2 / norm2);
  if (!std::isfinite(out.error)) out.error = INFINITY;
  auto t = tuned::bench::TimedRounds(runs, scratch, scratch_bytes);
  if (!t.ok()) return t.status();
  out.tuned_ms = tuned::Median((*t)[0]);
  out.cublas_ms = tuned::Median((*t)[1]);
  if (half > 0) {
    out.copy_ms = tuned::Median((*t)[2]) * copy_bytes / (2.0 * half);  // per copy_bytes
  }
  auto ratio = tuned::BootstrapSpeedup((*t)[0], (*t)[1]);
  if (!ratio.ok()) return ratio.status();
  out.ratio = *ratio;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tunebench: tuned kernels vs the baseline, one row per shape"};
  std::string family_name = "sgemm", shapes_path, server, math_name = "ieee_fp32";
  bool retune = false, side_by_side = false, list_space = false, gemv = false;
  app.add_option("--family", family_name, "sgemm or transpose");
  app.add_option("--shapes", shapes_path, "file of shapes, one per line, # comments");
  app.add_flag("--list-space", list_space,
               "print the names of the family's space (before pruning and before the jobs' "
               "refinement) one per line, and exit; bench/ablation.py --space reads them");
  app.add_option("--server", server, "daemon address (default: the local daemon)");
  app.add_flag("--retune", retune, "sweep every shape even if already tuned");
  app.add_option("--math", math_name,
                 "sgemm math mode: ieee_fp32 (default), fp32_accurate or tf32 (see the file comment)");
  app.add_flag("--side-by-side", side_by_side,
               "sgemm: time the winner (client library) and cuBLAS here, interleaved");
  app.add_flag("--gemv", gemv,
               "sgemm matrix-vector shapes: time the winner, cuBLAS and a device-to-device "
               "copy here, interleaved; GB/s, the fraction of the copy's and the ratio to cuBLAS");
  CLI11_PARSE(app, argc, argv);
  const tuned::Family* family = tuned::FindFamily(family_name);
  if (family == nullptr) {
    std::cerr << "unknown family " << family_name << "\n";
    return 2;
  }
  auto math = tuned::ParseMath(math_name);
  if (!math.ok()) {
    std::cerr << math.status().message() << "\n";
    return 2;
  }
  if (*math != tuned::v1::MATH_IEEE_FP32 && family->id() != tuned::v1::FAMILY_SGEMM) {
    std::cerr << "--math is for sgemm\n";
    return 2;
  }
  const bool mode = *math != tuned::v1::MATH_IEEE_FP32;  // the math mode's rows and SUMMARY
  if (list_space) {
    for (const auto& c : family->Space()) std::cout << family->ConfigName(c) << "\n";
    return 0;
  }
  if (gemv && (side_by_side || mode || family->id() != tuned::v1::FAMILY_SGEMM)) {
    std::cerr << "--gemv takes --family sgemm in ieee_fp32, without --side-by-side\n";
    return 2;
  }
  if (shapes_path.empty()) {
    std::cerr << "--shapes is required\n";
    return 2;
  }
  std::ifstream in(shapes_path);
  if (!in) {
    std::cerr << "cannot read " << shapes_path << "\n";
    return 2;
  }
  tuned::Client client(server.empty() ? tuned::DefaultServerAddress() : server);

  const std::string unit(family->metric_unit());
  const std::string base = family->id() == tuned::v1::FAMILY_SGEMM ? "cublas" : "copy";
  if (gemv) {
    std::cout << absl::StrFormat("%-18s %-44s %11s %11s %11s %7s %9s %8s  %s\n", "shape", "config",
                                 "tuned GB/s", "cublas GB/s", "copy GB/s", "of copy", "error",
                                 "tune s", "vs cuBLAS (95% CI, pairs)  served");
  } else if (mode) {
    std::cout << absl::StrFormat("%-18s %-44s %-14s %8s %8s %7s %9s %9s %7s %8s%s\n", "shape",
                                 "kernel", "served", "kernel TF", "base TF", "served",
                                 "err kern", "err base", "err x", "tune s",
                                 side_by_side ? "  job ratio  kernel ratio (95% CI, pairs)" : "");
  } else {
    std::cout << absl::StrFormat("%-18s %-44s %12s %12s %7s %9s %8s%s\n", "shape", "config",
                                 "tuned " + unit, base + " " + unit, "ratio", "error", "tune s",
                                 side_by_side ? "  job ratio  served  served ratio (95% CI, pairs)" : "");
  }
  double log_sum = 0, min_ratio = 1e30;
  int n = 0, failed = 0;
  int served_slower = 0;  // shapes whose served choice is slower than cuBLAS side by side
  double max_disagreement = 0;
  double max_error_ratio = 0;  // kernel error / baseline error vs fp64 (math modes)
  // The kernel's own side-by-side ratios (math modes): what it runs at
  // against the mode's baseline, wherever the serving rule picks.
  double kernel_log_sum = 0, kernel_min = 1e30;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    tuned::v1::Problem problem;
    problem.set_family(family->id());
    problem.set_dtype(tuned::v1::DTYPE_F32);
    problem.set_math(*math);
    for (int64_t d; fields >> d;) problem.add_shape(d);
    const std::string shape = absl::StrJoin(problem.shape(), "x");
    const auto t0 = std::chrono::steady_clock::now();
    auto best = tuned::bench::TunedBest(client, problem, retune);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!best.ok()) {
      std::cout << absl::StrFormat("%-18s %s\n", shape, std::string(best.status().message()));
      ++failed;
      continue;
    }
    if (!best->has_measurement()) {  // no kernel passed verification: the baseline is served, 1.00x
      min_ratio = std::min(min_ratio, 1.0);
      ++n;
      std::cout << absl::StrFormat("%-18s %-44s %s\n", shape, "- (no kernel)", best->serving_reason())
                << std::flush;
      continue;
    }
    const auto& m = best->measurement();
    double ratio = best->baseline_ms() / m.median_ms();
    // The job's own ratio: its judged speedup where it has one.
    double job_ratio = best->speedup_pairs() > 0 ? best->speedup() : ratio;
    std::string served_column;
    double tuned_metric = m.metric(), base_metric = best->baseline_metric(), error = m.error();
    if (gemv) {
      const double bytes = GemvBytes(problem.shape(0), problem.shape(1), problem.shape(2));
      auto sbs = TimeSideBySide(*best, bytes);
      if (!sbs.ok()) {
        std::cout << absl::StrFormat("%-18s side-by-side failed: %s\n", shape,
                                     std::string(sbs.status().message()));
        ++failed;
        continue;
      }
      auto gbs = [bytes](double ms) { return bytes / (ms * 1e6); };
      ratio = sbs->cublas_ms / sbs->tuned_ms;
      log_sum += std::log(ratio);
      min_ratio = std::min(min_ratio, ratio);
      ++n;
      std::cout << absl::StrFormat("%-18s %-44s %11.1f %11.1f %11.1f %6.1f%% %9.1e %8.1f  %s  %s\n",
                                   shape, m.config().name(), gbs(sbs->tuned_ms),
                                   gbs(sbs->cublas_ms), gbs(sbs->copy_ms),
                                   100.0 * sbs->copy_ms / sbs->tuned_ms, sbs->error, seconds,
                                   tuned::FormatSpeedup(sbs->ratio),
                                   best->use_baseline() ? "cuBLAS" : "kernel")
                << std::flush;
      continue;
    }
    if (side_by_side && family->id() == tuned::v1::FAMILY_SGEMM) {
      auto sbs = TimeSideBySide(*best);
      if (!sbs.ok()) {
        std::cout << absl::StrFormat("%-18s side-by-side failed: %s\n", shape,
                                     std::string(sbs.status().message()));
        ++failed;
        continue;
      }
      const std::vector<int64_t> dims(problem.shape().begin(), problem.shape().end());
      const double work = family->Work(dims);
      tuned_metric = work / (sbs->tuned_ms * 1e6);
      base_metric = work / (sbs->cublas_ms * 1e6);
      ratio = sbs->cublas_ms / sbs->tuned_ms;
      if (!mode) error = sbs->error;  // vs cuBLAS's output; a math mode's stays vs fp64
      // What the client library runs: the kernel, or cuBLAS (ratio 1.0 both ways).
      kernel_log_sum += std::log(sbs->ratio.speedup);
      kernel_min = std::min(kernel_min, sbs->ratio.speedup);
      const double served_ratio = best->use_baseline() ? 1.0 : sbs->ratio.speedup;
      const double served_job_ratio = best->use_baseline() ? 1.0 : job_ratio;
      if (served_ratio < 1.0) ++served_slower;
      max_disagreement = std::max(max_disagreement, std::abs(served_job_ratio / served_ratio - 1));
      served_column = best->use_baseline()
                          ? absl::StrFormat("  %5.2fx (cuBLAS served; kernel %s)", 1.0,
                                            tuned::FormatSpeedup(sbs->ratio))
                          : "  " + tuned::FormatSpeedup(sbs->ratio);
    }
    if (mode) {
      // The served choice against the mode's baseline: the judged speedup
      // where the kernel is served, 1.0 where the baseline is.
      const double served = best->use_baseline() ? 1.0 : side_by_side ? ratio : job_ratio;
      const double error_ratio =
          best->baseline_error() > 0 ? error / best->baseline_error() : INFINITY;
      max_error_ratio = std::max(max_error_ratio, error_ratio);
      log_sum += std::log(served);
      min_ratio = std::min(min_ratio, served);
      ++n;
      std::cout << absl::StrFormat("%-18s %-44s %-14s %8.1f %8.1f %6.2fx %9.2e %9.2e %7.2f %8.1f",
                                   shape, m.config().name(),
                                   best->use_baseline() ? best->baseline_name() : "kernel",
                                   tuned_metric / 1e3, base_metric / 1e3, served, error,
                                   best->baseline_error(), error_ratio, seconds)
                << (side_by_side ? absl::StrFormat("  %8.2fx%s", job_ratio, served_column) : "")
                << "\n"
                << std::flush;
      continue;
    }
    log_sum += std::log(ratio);
    min_ratio = std::min(min_ratio, ratio);
    ++n;
    std::cout << absl::StrFormat("%-18s %-44s %12.1f %12.1f %6.2fx %9.1e %8.1f", shape,
                                 m.config().name(), tuned_metric, base_metric, ratio, error,
                                 seconds)
              << (side_by_side ? absl::StrFormat("  %8.2fx  %-6s%s", job_ratio,
                                                 best->use_baseline() ? "cuBLAS" : "kernel", served_column)
                               : "")
              << "\n"
              << std::flush;
  }
  if (side_by_side) {
    std::cout << absl::StrFormat(
        "SUMMARY side_by_side served_slower_than_cublas=%d max_disagreement=%.3f shapes=%d\n",
        served_slower, max_disagreement, n);
  }
  if (gemv) {
    std::cout << absl::StrFormat(
        "SUMMARY gemv geomean_vs_cublas=%.2f min_vs_cublas=%.2f shapes=%d\n",
        n > 0 ? std::exp(log_sum / n) : 0.0, n > 0 ? min_ratio : 0.0, n);
    return failed == 0 ? 0 : 1;
  }
  if (mode && side_by_side) {
    std::cout << absl::StrFormat("SUMMARY math=%s kernel_geomean_vs_baseline=%.3f kernel_min=%.3f shapes=%d\n",
                                 math_name, n > 0 ? std::exp(kernel_log_sum / n) : 0.0,
                                 n > 0 ? kernel_min : 0.0, n);
  }
  if (mode) {
    std::cout << absl::StrFormat(
        "SUMMARY math=%s geomean_vs_baseline=%.2f min_vs_baseline=%.2f max_error_ratio=%.2f "
        "shapes=%d\n",
        math_name, n > 0 ? std::exp(log_sum / n) : 0.0, n > 0 ? min_ratio : 0.0, max_error_ratio, n);
    return failed == 0 ? 0 : 1;
  }
  std::cout << absl::StrFormat("SUMMARY geomean_vs_%s=%.2f min_vs_%s=%.2f shapes=%d\n", base,
                               n > 0 ? std::exp(log_sum / n) : 0.0, base, n > 0 ? min_ratio : 0.0,
                               n);
  return failed == 0 ? 0 : 1;
}
