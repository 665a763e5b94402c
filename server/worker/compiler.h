// NVRTC compilation of one kernel config. Needs no GPU: CI compiles every
// config of every family with it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "families/family.h"

namespace tuned {

/// The result of compiling one template instantiation.
struct CompiledKernel {
  std::string cubin;  // machine code for `arch`
  std::string ptx;
  std::string entry;  // lowered (mangled) name of the instantiation
  std::string log;    // NVRTC + ptxas (-v) log
  int registers = -1;        // per thread, from its own entry in the ptxas log
  int spill_bytes = 0;       // spill stores, from the ptxas log
  int static_smem_bytes = -1;
  double compile_ms = 0;
};

/// Compiles of one kernel at most while ptxas spills (Compile): ptxas's
/// allocation is not the same from run to run for every kernel. On a
/// loaded 2-core machine, sgemm_warp 128x128x16 8x8 ln4 s4 MINB 2 stream-K
/// at --register-usage-level=10 spilled 76 bytes in 1 of 8 compiles of the
/// same source and options, and none in the others (2026-11-25, NVRTC 13.0).
inline constexpr int kCompileAttemptsWhileSpilling = 3;

/// Compiles `source`, instantiating `name_expression`, for `arch` (e.g.
/// "sm_90") with `options` added; a result that spills registers is
/// compiled again, kCompileAttemptsWhileSpilling times at most, and the
/// first that does not is returned (the log names the attempts before it;
/// compile_ms counts them all). An option "--gpu-architecture=<arch>a"
/// (e.g. sm_90a: wgmma, sgemm's KIND 6) compiles for the arch-specific
/// variant of `arch` instead. Errors: FAILED_PRECONDITION with the log when
/// NVRTC rejects the source, or when an option names another architecture
/// than `arch` or its "a" variant; INTERNAL when an NVRTC call itself fails.
absl::StatusOr<CompiledKernel> Compile(std::string_view source, std::string_view name_expression,
                                       const std::vector<std::string>& options,
                                       std::string_view arch);

/// Compiles `source` once, instantiating every one of `name_expressions`:
/// the front end parses the source once for all of them. Result i is
/// name_expressions[i]'s: its lowered entry, and its registers, spills and
/// static shared memory from its own part of the ptxas log; the cubin, PTX
/// and log hold every instantiation. One NVRTC run, with no second attempt
/// where an entry spills (Compile makes those). Errors as Compile's, for all
/// of them at once.
absl::StatusOr<std::vector<CompiledKernel>> CompileTogether(
    std::string_view source, const std::vector<std::string>& name_expressions,
    const std::vector<std::string>& options, std::string_view arch);

/// One kernel's NVRTC input: its source text (a family's SourceText), the
/// instantiation to lower and the extra options; `name` (the config's, e.g.
/// "softmax_rows_THREADS256_VEC4") names it where a compile limit stops it.
struct CompileInput {
  std::string source;
  std::string name_expression;
  std::vector<std::string> options;
  std::string name;
};

/// What one compile may spend (SetCompileLimits). A compile of a kernel
/// spec's config is its author's code run by NVRTC: a preprocessor or
/// template bomb held a compiler at 8.7 GB until the 120 s timeout.
struct CompileLimits {
  int64_t memory_bytes = 0;  // heap in use, per compile running at the time; 0: no limit
  double cpu_seconds = 0;    // CPU time of the compile's thread; 0: no limit
  /// Called once, from the limits' watchdog thread, when a compile passes a
  /// limit: `index` is its index in CompileEach's sources (-1 for a Compile
  /// of its own) and `message` says "compile of NAME exceeded 4 GiB" (or
  /// "60 s of CPU time"). NVRTC cannot be stopped inside a call, so the
  /// process exits (status 4) when it returns.
  std::function<void(int index, const std::string& message)> exceeded;
};

/// Sets this process's compile limits and starts their watchdog, which looks
/// at the compiles running every 20 ms: each thread's CPU time, and the heap
/// in use (glibc's mallinfo2: it needs no /proc, which the sandbox closes)
/// against memory_bytes times the compiles running. Call once, before any
/// compile.
void SetCompileLimits(CompileLimits limits);

/// Compiles every source (NVRTC is thread-safe), `threads` at a time;
/// results in the order of `sources`.
std::vector<absl::StatusOr<CompiledKernel>> CompileMany(const std::vector<CompileInput>& sources,
                                                        std::string_view arch, int threads);

/// Receives one kernel's result of CompileEach: its index in the sources and
/// what Compile returned.
using CompileDone = std::function<void(size_t index, absl::StatusOr<CompiledKernel> result)>;

/// Compiles every source, `threads` at a time, each thread taking the next
/// source in their order as soon as it is free (source 0 starts first), and
/// hands each result to `done` as soon as it is compiled: from the compiling
/// threads, one call at a time, each index once. Returns when every call
/// has returned.
void CompileEach(const std::vector<CompileInput>& sources, std::string_view arch, int threads,
                 const CompileDone& done);

/// `log` (an NVRTC log, or a message that holds one) with only the
/// diagnostics about the compiled source itself (NVRTC's "kernel.cu"): one
/// about another file (a header, or any file an #include reached) is cut,
/// its quoted lines with it, and a line at the end counts the cuts; a
/// "cannot open source file" keeps its words and the path only, whatever
/// the reason. The neutral lines (ptxas's, the error count) stay. Compile
/// and CompileTogether return their logs and errors through it, so that no
/// other file's content reaches a client or the store.
std::string OwnDiagnostics(std::string_view log);

/// OK unless ptxas spilled registers to local memory (k.spill_bytes > 0):
/// then FAILED_PRECONDITION naming the bytes. The tuner rejects a config that
/// spills rather than timing it: a spilling kernel is slow wherever it runs.
absl::Status CheckNoSpills(const CompiledKernel& k);

/// NVRTC's version, "major.minor".
std::string NvrtcVersion();

/// The CUDA toolkit's header folders that every compile searches (NVRTC's
/// --include-path), so that a kernel spec may include <cuda_fp16.h>,
/// <cuda_bf16.h> or <cuda/...> by name: the include folder beside the
/// loaded NVRTC library (lib/../include or targets/<arch>/lib/../include),
/// else $CUDA_HOME/include, $CUDA_PATH/include or /usr/local/cuda/include,
/// the first with cuda_fp16.h, and its cccl/ folder where it has one.
/// Empty where no toolkit headers are installed.
std::vector<std::string> ToolkitIncludePaths();

}  // namespace tuned
