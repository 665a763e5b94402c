// The worker side of a family: device buffers with random inputs, the
// reference output, the check of a candidate's output, and the baseline timed
// in the same job. One implementation per family (<family>_problem.cc; the
// sgemm family's in gemm_problem.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "families/family.h"
#include "tuned/v1/worker.pb.h"

namespace tuned {

class DeviceProblem {
 public:
  virtual ~DeviceProblem() = default;
  /// Pointers to the kernel's arguments, in the order of Family::Arguments().
  /// Valid until the problem is destroyed.
  virtual std::vector<void*>& KernelArgs() = 0;
  /// Fills the output with NaN so that any element a kernel skips fails the check.
  virtual absl::Status PoisonOutput(cudaStream_t stream) = 0;
  /// Error of the output against the reference; passes if <= Tolerance().
  /// sgemm: relative Frobenius error vs cuBLAS (MATH_IEEE_FP32) or vs the
  /// fp64 reference (the other math modes); transpose: mismatched elements.
  virtual absl::StatusOr<double> CheckOutput(cudaStream_t stream) = 0;
  virtual double Tolerance() const = 0;
  /// The baseline's own error against the reference where the bound derives
  /// from it (sgemm outside MATH_IEEE_FP32); 0 otherwise.
  virtual double BaselineError() const { return 0; }
  /// Runs before every launch of a candidate with `geometry`, and is timed
  /// with it: sgemm sets C to beta * C where the geometry asks for it
  /// (prescale_output: split-K kernels add into C). Nothing by default.
  virtual absl::Status BeforeLaunch(const v1::LaunchGeometry& geometry, cudaStream_t stream) {
    (void)geometry;
    (void)stream;
    return absl::OkStatus();
  }
  /// Bytes of what a run reads and writes: the operands and the result
  /// (sgemm: A + B + C). 0 where not given: the judging then times with the
  /// L2 flushed only (core/serving.h JudgesWarm, Worker::RetimeTogether).
  virtual int64_t OperandBytes() const { return 0; }
  /// Runs the baseline once (cuBLAS SGEMM, copy kernel) on `stream`.
  virtual absl::Status RunBaseline(cudaStream_t stream) = 0;
  virtual std::string BaselineName() const = 0;
};

/// The sgemm family's problem of any dtype (server/worker/gemm_problem.cc):
/// A and B of `dtype`'s input type (fp32, or 16-bit: DTYPE_BF16, DTYPE_F16,
/// DTYPE_BF16_F32, DTYPE_F16_F32) in `layout`, C of its output type; random
/// inputs from `seed`; the reference of math mode `math` (cuBLAS's fp32
/// output, or fp64 with the baseline's error against it). INVALID_ARGUMENT
/// for another dtype or a math mode or layout the dtype's form does not
/// tune; RESOURCE_EXHAUSTED if it cannot fit.
absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeGemmProblem(
    const Shape& shape, uint64_t seed, const v1::Device& device,
    v1::Math math = v1::MATH_IEEE_FP32, v1::Layout layout = v1::LAYOUT_NN,
    v1::DType dtype = v1::DTYPE_F32);
/// A kernel spec's problem (server/worker/spec_problem.cc): `spec` with its
/// source text, `shape` in the order of its dims. INVALID_ARGUMENT for a bad
/// spec or shape; the compile error where its reference or default config
/// does not compile; RESOURCE_EXHAUSTED if it cannot fit.
absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeSpecProblem(const v1::KernelSpec& spec,
                                                               const Shape& shape, uint64_t seed,
                                                               const v1::Device& device);
absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeFaultTestProblem(const Shape& shape,
                                                                    uint64_t seed,
                                                                    const v1::Device& device);
/// Compile-only mode (no GPU): what running a fault_test kernel does, done by
/// this process: sleeps (ok), answers wrongly, hangs forever, refuses the
/// launch, or reports a device fault and sets `exit_after` so the worker
/// exits as after a real sticky error.
v1::worker::MeasureResult SimulateFaultTest(const v1::worker::Kernel& kernel, const Shape& shape,
                                            bool* exit_after);
/// The problem of a Prepare request: a kernel spec's where it carries one
/// (transpose's too), else by the family; INVALID_ARGUMENT for a math mode
/// the family does not tune.
absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeProblem(const v1::worker::Prepare& request,
                                                           const v1::Device& device);

}  // namespace tuned
