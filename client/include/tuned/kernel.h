// A tuned kernel, loaded and ready to launch on the caller's buffers and stream.
//
//   tuned::Client client(tuned::DefaultServerAddress());
//   auto k = client.Get(tuned::SgemmProblem(1024, 1024, 1024));  // StatusOr<TunedKernel>
//   k->Sgemm(M, N, K, 1.0f, dA, dB, 0.0f, dC, stream);           // row-major, device pointers
//
// A kernel spec's kernel (a registered family, tuner.proto KernelSpec) takes
// the caller's buffers in the order of its buffer arguments; the daemon
// evaluated its scalars and geometry for the requested shape:
//
//   auto k = client.Get(tuned::FamilyProblem("matmul_tiled", {1024, 1024, 1024}));
//   k->Launch({dA, dB, dC}, stream);   // scalars m, n, k from best.kernel_arguments
//
// Loading uses the CUDA runtime's library API (cudaLibraryLoadData) on the
// current device: the cubin when it was built for this device's architecture,
// otherwise the PTX (JIT-compiled by the driver).
//
// Its calls may come from several threads at once, on different streams:
// where cuBLAS serves, its calls are made one at a time (a handle's stream is
// set per call), and each stream gets a cuBLASLt workspace of its own.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tuned/launch.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// A kernel spec's arguments packed for cudaLaunchKernel: one 8-byte,
/// 8-aligned slot per argument of BestKernel.kernel_arguments, in order,
/// holding a buffer's device pointer or a scalar's value in its C type
/// (f32 float, f64 double, i32 int32_t, i64 int64_t) at the slot's start.
struct PackedArguments {
  std::vector<uint64_t> slots;
  /// A pointer to each slot, as cudaLaunchKernel's `args` takes them; valid
  /// while `slots` is neither resized nor moved.
  std::vector<void*> Pointers();
};

/// Packs `best.kernel_arguments()` with `buffers` (device pointers, in the
/// order of the buffer arguments). INVALID_ARGUMENT for a wrong number of
/// buffers (naming the buffer arguments), a null pointer (naming its
/// argument) or a scalar of another type than f32, f64, i32 or i64;
/// FAILED_PRECONDITION if `best` has no kernel_arguments (a built-in family's
/// kernel, or a daemon that predates kernel specs).
absl::StatusOr<PackedArguments> PackKernelArguments(const v1::BestKernel& best,
                                                    const std::vector<void*>& buffers);

class TunedKernel {
 public:
  /// Loads the kernel of `best` (from Client::GetBest or a description written
  /// by `tunectl export`). Where cuBLAS serves an sgemm problem
  /// (best.use_baseline(): the daemon found it faster, or no config passed
  /// verification and `best` holds no kernel, tuner.proto "No kernel"), no
  /// kernel is loaded and Sgemm calls cuBLAS. FAILED_PRECONDITION without a
  /// GPU, INVALID_ARGUMENT if `best` holds neither a cubin nor PTX otherwise.
  static absl::StatusOr<TunedKernel> Load(const v1::BestKernel& best);
  ~TunedKernel();
  TunedKernel(TunedKernel&& o) noexcept;
  TunedKernel& operator=(TunedKernel&& o) noexcept;

  /// Launch geometry for `shape` (the family's rule, families/) on the
  /// device the kernel was tuned on (best.device(): a stream-K grid is sized
  /// by its SMs; correct on any device).
  /// INVALID_ARGUMENT for a bad shape.
  static absl::StatusOr<v1::LaunchGeometry> GeometryFor(const v1::BestKernel& best,
                                                        const std::vector<int64_t>& shape);

  /// Row-major C(MxN) = alpha * op(A) * op(B) + beta * C on `stream`, device
  /// pointers, A and B stored in the problem's layout (best.problem().layout():
  /// A M x K or, op(A) = A^T, K x M; B K x N or, op(B) = B^T, N x K). Any M,
  /// N, K >= 1 (every config is correct for every shape).
  /// The shape the kernel was asked for (best.problem().shape()) launches as
  /// prepared at Load: its geometry and dynamic shared memory worked out
  /// once, the tensor maps of a TMA kernel encoded once per pointers (a few
  /// are kept), so that a call costs little more than cudaLaunchKernel;
  /// another shape works its geometry out at each call.
  /// Calls cuBLAS instead where the daemon found it faster
  /// (BestKernel.use_baseline), in the problem's math mode (CreateCublas:
  /// pure fp32, or TF32 for MATH_TF32).
  /// FAILED_PRECONDITION if this is not an fp32 sgemm kernel; INTERNAL on a CUDA error.
  absl::Status Sgemm(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                     float* c, cudaStream_t stream = nullptr) const;
  /// Sgemm's GEMM for a 16-bit problem (best.problem().dtype() DTYPE_BF16 or
  /// DTYPE_F16): A, B and C device pointers to that type (__nv_bfloat16 or
  /// __half), alpha and beta fp32, C rounded once; for DTYPE_BF16_F32 and
  /// DTYPE_F16_F32, A and B of the 16-bit type and C a float pointer, never
  /// rounded. cuBLAS (cublasGemmEx, fp32 compute) where it serves.
  /// FAILED_PRECONDITION for any other problem (one with an epilogue:
  /// FusedGemm16); INTERNAL on a CUDA error.
  absl::Status Gemm16(int m, int n, int k, float alpha, const void* a, const void* b, float beta,
                      void* c, cudaStream_t stream = nullptr) const;
  /// Gemm16 with the problem's epilogue (best.problem().epilogue(), tuner.proto
  /// Epilogue): C = epilogue(alpha * op(A) op(B) + beta * C + bias), `bias` a
  /// device pointer to N elements of C's type, one per column of C (as
  /// F.linear's). cuBLASLt with the same epilogue where cuBLAS serves
  /// (LtGemm, planned at the first call of the shape asked for); there EPILOGUE_BIAS_GELU_ERF, which cuBLASLt lacks,
  /// is UNIMPLEMENTED (the Python client applies torch's GELU after the bias).
  /// FAILED_PRECONDITION for a problem without an epilogue, or a served
  /// kernel without the bias argument (a daemon older than epilogues);
  /// INTERNAL on a CUDA error.
  absl::Status FusedGemm16(int m, int n, int k, float alpha, const void* a, const void* b,
                           float beta, void* c, const void* bias,
                           cudaStream_t stream = nullptr) const;
  /// Row-major out(COLS x ROWS) = in(ROWS x COLS)^T on `stream`.
  absl::Status Transpose(int rows, int cols, const float* in, float* out,
                         cudaStream_t stream = nullptr) const;
  /// Runs a kernel spec's kernel on `stream` for the shape it was asked
  /// for (best.problem().shape(): its geometry and scalars are that shape's,
  /// so another shape needs its own GetBest). `buffers`: the caller's device
  /// pointers in the order of the buffer arguments of
  /// best.kernel_arguments(), each holding at least that argument's
  /// `elements` elements of its type (not checked: device memory has no
  /// size). Scalars are packed from kernel_arguments (PackKernelArguments);
  /// geometry from best.geometry() (missing y, z are 1). Errors as
  /// PackKernelArguments; INVALID_ARGUMENT for a best without geometry;
  /// INTERNAL on a CUDA error.
  absl::Status Launch(const std::vector<void*>& buffers, cudaStream_t stream = nullptr) const;

  const v1::BestKernel& description() const { return best_; }
  /// True if the kernel was tuned for exactly the shape it was asked for.
  bool exact() const { return best_.match() == v1::MATCH_EXACT; }
  /// True if launches go to cuBLAS rather than the generated kernel.
  bool uses_cublas() const { return best_.use_baseline() && blas_ != nullptr; }

 private:
  TunedKernel() = default;
  absl::Status LaunchShape(const std::vector<int64_t>& shape, void** args, cudaStream_t stream) const;
  /// The launch of `shape`: prepared_ where it is the prepared shape
  /// (*prepared = true), else worked out now into *other.
  absl::StatusOr<const PreparedLaunch*> LaunchFor(const int64_t* shape, int rank,
                                                  PreparedLaunch* other, bool* prepared) const;
  /// A GEMM's launch at m x n x k with `args` (its parameters but the
  /// tensor maps): LaunchFor, then C = beta * C first where the kernel adds
  /// into C (prescale_output; `c` the fp32 C, null for a 16-bit GEMM, whose
  /// kinds never ask: INTERNAL), then LaunchPrepared.
  absl::Status LaunchGemm(int m, int n, int k, float beta, float* c, void** args,
                          cudaStream_t stream) const;
  /// Launches `p` with `args` (the parameters but the tensor maps), the
  /// tensor maps taken from maps_ when `prepared`, else encoded now.
  absl::Status LaunchPrepared(const PreparedLaunch& p, bool prepared, void** args,
                              cudaStream_t stream) const;

  v1::BestKernel best_;
  LoadedKernel kernel_;
  /// cuBLAS, where it serves (use_baseline) or prescales C for a kernel
  /// that accumulates; null otherwise (kernel.cc).
  struct Blas;
  std::unique_ptr<Blas> blas_;
  /// The launch of best_.problem().shape() (a kernel spec's: of best_.geometry()),
  /// prepared at Load; empty where that failed (each launch then says why).
  std::optional<PreparedLaunch> prepared_;
  std::vector<int64_t> prepared_shape_;
  /// prepared_'s tensor maps, encoded per base pointers (TMA kernels only).
  struct MapCache;
  std::unique_ptr<MapCache> maps_;
};

}  // namespace tuned
