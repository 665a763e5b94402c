// The GEMM op (families/gemm/): row-major C(MxN) = alpha * op(A) op(B) +
// beta * C in two forms, fp32 operands (op.cc) and 16-bit ones (op16.cc,
// per dtype and epilogue), each the family's variants, dimensions, work,
// buffers and parameters; its kernels are kinds (kind.h), one folder each:
//   fp32   simt/        KIND 0-2  naive, coalesced, tiled   (sgemm.cuh)
//          warp/        KIND 3    warp tiling, split-K, stream-K (sgemm.cuh)
//          gemv/        KIND 4    matrix-vector shapes      (gemv.cuh)
//          mma_tf32/    KIND 5    mma.sync TF32 / 3xTF32     (mma_tf32.cuh)
//          wgmma_tf32/  KIND 6    wgmma TF32 / 3xTF32, sm_90a (wgmma_*.cuh)
//   16-bit simt16/      KIND 0    CUDA cores                 (gemm16_simt.cuh)
//          mma16/       KIND 1    mma.sync m16n8k16          (mma16.cuh)
//          wgmma16/     KIND 2    wgmma, TMA, sm_90a         (wgmma16.cuh)
//          decode16/    KIND 3    a few tokens, B streamed   (decode16.cuh)
// The reference and the baseline (cuBLAS) run in the worker
// (families/gemm/worker/problem.cc). This header: what the kinds share
// (limits, helpers) and the op's base. Internal to tuned_code_families: the
// family's interface is family.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "families/family.h"
#include "families/gemm/kind.h"

namespace tuned::gemm {


constexpr int64_t kBytesPerElement = 4;  // fp32
/// The indices of A and C among the kernels' parameters (Arguments()).
constexpr uint32_t kSgemmArgA = 4;
constexpr uint32_t kSgemmArgC = 7;
constexpr int64_t kWarp = 32;
/// Largest gridDim.y (and z) of a launch; more row blocks spill over to grid.z.
constexpr int64_t kMaxGridY = 65535;
/// Registers a thread may use (sm_50 and later).
constexpr int64_t kMaxRegistersPerThread = 255;
/// An SM's registers, threads and resident blocks (sm_80 to sm_90).
constexpr int64_t kRegistersPerSm = 65536;
constexpr int64_t kMaxThreadsPerSm = 2048;
constexpr int64_t kMaxBlocksPerSm = 32;
/// Shared memory the driver reserves per block (sm_80+), counted against
/// the SM's capacity (CUDA C Programming Guide, compute capabilities).
constexpr int64_t kReservedSharedPerBlock = 1024;

/// ptxas's default --register-usage-level.
constexpr int64_t kDefaultRegisterUsageLevel = 5;

/// Parameters added after configs were first stored, and the value a stored
/// config that lacks one has (Param::if_absent): SLICEK (1), STREAMB (0),
/// STREAMK (0) and RUL (ptxas's default, 5), the warp kernel without
/// them; KIND 5's WM, WN and PASSES and KIND 4's GSIDE, GW, GR, GU and GC
/// (0), which no other kind has; KIND 6's LA and PROMOTE (1, the kernel
/// without them; only the configs of another value name them). So a config
/// stored without a parameter keeps its name, key and kernel.
int64_t IfAbsent(std::string_view key);

/// The config's value of `key`, IfAbsent(key) where the config lacks it.
int64_t At(const Config& c, const std::string& key);

/// The LAYOUT parameter's values: tuner.proto Layout (NN 0, NT 1, TN 2, TT
/// 3). A kernel template takes it as its last argument, `int LAYOUT = 0`
/// (op(B) = B^T where LAYOUT & 1: B stored N x K, ldb = K; op(A) = A^T where
/// LAYOUT & 2: A stored K x M, lda = M); LAYOUT_NN configs leave it out, so
/// their names, keys and kernels are those stored before layouts.
constexpr bool TransposedA(int64_t layout) { return (layout & 2) != 0; }
constexpr bool TransposedB(int64_t layout) { return (layout & 1) != 0; }
/// `config` with LAYOUT set to `layout`, left out for LAYOUT_NN (as stored
/// before layouts): Family::InLayout of sgemm's forms.
Config WithLayout(Config config, v1::Layout layout);
/// "", "_nt", "_tn" or "_tt": the config name's layout suffix.
std::string LayoutSuffix(const Config& config);
/// `expression` ("sgemm_tiled<...>") with the config's LAYOUT appended to
/// its template arguments where it is not 0.
std::string WithLayoutArgument(std::string expression, const Config& config);

inline int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

/// A config of fp32 kind `code` whose parameters it does not use take
/// `fixed`'s values, else those of the naive kinds (Fp32Unused()); its
/// own parameters unset.
Config Base(int64_t code, const Config& fixed);
/// The values of the fp32 form's first parameters (BK..RUL) that a kind
/// which does not use them takes: those of the naive kinds, which use only
/// BM and BN.
const Config& Fp32Unused();
/// The parameters the fp32 tensor-core kinds (mma_tf32, wgmma_tf32) fix:
/// the SIMT kinds' TM, TN, PAD, VEC, LOOP, MAP, DB, LN, SLICEK, STREAMB,
/// STREAMK and RUL.
const Config& Tf32Fixed();
/// Appends `c` to `space` unless it is there already (each config once).
void AddOnce(std::vector<Config>& space, const Config& c);
/// The tensor-core kinds' (5 and 6) launch: grid = {ceil(M / bm) * ceil(N /
/// bn), max(splitk, 1), 1}, block = {threads, 1, 1}, `shared_bytes` of
/// dynamic shared memory, prescale_output when splitk > 1 (the split-K
/// slices add into C = beta * C).
v1::LaunchGeometry TileGeometry(const Shape& shape, int64_t bm, int64_t bn, int64_t splitk,
                                int64_t threads, int64_t shared_bytes);

/// The kernels' common signature, in order (Family::Arguments()).
std::vector<std::string> Arguments();

/// Threads per block within the device limit and a whole number of warps.
absl::Status CheckThreads(int64_t threads, const std::string& how, const v1::Device& device);

/// What a block of the tensor-core kinds uses, for CheckBlock; each *_how
/// names the formula in its message.
struct BlockUse {
  int64_t threads;
  std::string threads_how;
  int64_t minb;
  int64_t smem;  // bytes of dynamic shared memory
  std::string smem_how;
  int64_t regs;  // estimated registers per thread
  std::string regs_how;
  /// The consumers' registers where setmaxnreg sets them (WS: 232), else 0:
  /// the cap that __launch_bounds__(threads, minb) sets.
  int64_t reg_cap = 0;
};
/// The threads within the device's limits (CheckThreads) and MINB blocks
/// of them within the SM's; the shared memory within the opt-in limit and
/// MINB blocks of it within an SM; the registers within the cap that
/// __launch_bounds__(threads, minb) sets. FAILED_PRECONDITION naming the
/// first limit exceeded.
absl::Status CheckBlock(const BlockUse& b, const v1::Device& device);

/// NVRTC's target for the wgmma kinds (fp32's KIND 6, the 16-bit forms'
/// KIND 2): wgmma and setmaxnreg are features of sm_90a, not of sm_90
/// (server/worker/compiler.cc compiles for it in place of the device's sm_90).
inline constexpr std::string_view kWgmmaArchOption = "--gpu-architecture=sm_90a";

/// The op's forms' base: one family, "sgemm" (alias "gemm"), of M x N x K
/// problems measured in GFLOPS against cuBLAS, each form with its own
/// parameters and kinds. Space, Check, SuitsShape, RunsAt and
/// ModelFeatures go to the kinds of the form (KindOf: the config's KIND);
/// each form adds its names' and sources' suffixes.
class GemmOp : public Family {
 public:
  GemmOp(Form form, std::vector<Param> params) : form_(form), params_(std::move(params)) {}
  v1::Family id() const final { return v1::FAMILY_SGEMM; }
  std::string_view name() const final { return "sgemm"; }
  std::string_view alias() const final { return "gemm"; }
  std::vector<std::string> dims() const final { return {"M", "N", "K"}; }
  std::string_view metric_unit() const final { return "GFLOPS"; }
  std::string_view baseline_name() const final { return "cuBLAS"; }
  bool baseline_is_candidate() const final { return true; }
  const std::vector<Param>& params() const final { return params_; }
  /// 2 * M * N * K: a multiply and an add per term.
  double Work(const Shape& shape) const final {
    return 2.0 * static_cast<double>(shape[0]) * static_cast<double>(shape[1]) *
           static_cast<double>(shape[2]);
  }
  /// max(M*K, K*N, M*N): the largest of A, B and C, in elements.
  int64_t MaxBufferElements(const Shape& shape) const final;

  /// Each kind's configs (Kind::space), the kinds in their order.
  std::vector<Config> Space() const final;
  /// CheckParams; FAILED_PRECONDITION for a KIND no kind of the form has,
  /// for a parameter the kind does not use (Kind::params) that is not
  /// Kind::fixed's value (else its if_absent value), e.g. "TM=4 is unused
  /// by KIND=1, which takes TM=0" (fp32: "... KIND=3 (warp), ..."); then
  /// the kind's rules (Kind::check).
  absl::Status Check(const Config& config, const v1::Device& device) const final;
  absl::Status SuitsShape(const Config& config, const Shape& shape) const final;
  absl::Status RunsAt(const Config& config, const Shape& shape) const final;
  std::vector<float> ModelFeatures(const Config& config, const Shape& shape,
                                   const v1::Device& device) const final;

 protected:
  /// The kind of the config's KIND (0 where it lacks it), or nullptr.
  const Kind* KindFor(const Config& config) const;

 private:
  Form form_;
  std::vector<Param> params_;
};

/// The fp32 form's model features, which every fp32 kind registers: how
/// much of the padded tiles is the matrix, the tiles, K iterations per
/// block, the flops, and tiles times split-K per SM.
std::vector<float> TileFeatures(const Config& config, const Shape& shape,
                                const v1::Device& device);

/// The family's 16-bit forms (op16.cc): `dtype` DTYPE_BF16, DTYPE_F16,
/// DTYPE_BF16_F32 or DTYPE_F16_F32 (any other value gives the F16 form), in
/// the variant that applies `epilogue` (an unknown value gives EPILOGUE_NONE's).
const Family& Gemm16Family(v1::DType dtype, v1::Epilogue epilogue = v1::EPILOGUE_NONE);

/// The fp32 form's tensor-core kinds' config name (mma_tf32 and
/// wgmma_tf32): "sgemm_<word>_<BM>x<BN>x<BK>_w<WM>x<WN>_s<STAGES>_g<GROUP>
/// _b<MINB>" with "_sk<SPLITK>" where above 1, then "_tf32" or "_3xtf32",
/// "_la<LA>" where LA is not 1, "_p<PROMOTE>" where PROMOTE is not 1 and
/// WS's suffix, e.g. "sgemm_wgmma_128x128x32_w64x128_s3_g8_b1_3xtf32".
std::string Tf32Name(const Config& config, const char* word);
/// Admits of the fp32 tensor-core kinds: PASSES 3 (3xTF32) in
/// MATH_FP32_ACCURATE and MATH_TF32, PASSES 1 in MATH_TF32.
bool AdmitsTf32(const Config& config, v1::Math math);
/// Admits of the fp32 CUDA-core kinds: MATH_IEEE_FP32 and MATH_FP32_ACCURATE.
bool AdmitsFp32(const Config& config, v1::Math math);
/// Admits of the 16-bit kinds: MATH_IEEE_FP32, the one mode (the op adds
/// the epilogue's rule).
bool Admits16(const Config& config, v1::Math math);

// ---- what the 16-bit kinds share (op16.cc) ----
/// "" for a config without EPILOGUE, else "_bias", "_bias_relu",
/// "_bias_gelu" (the tanh form) or "_bias_gelu_erf": what its name ends in.
std::string EpilogueSuffix(const Config& config);
/// A kind's instantiation `expression` ("gemm16_mma<2,...>") for `config`:
/// unchanged without EPILOGUE, else the kind's fused entry with the
/// epilogue first ("gemm16_mma_fused<1,2,...>"), which takes the bias after C.
std::string FusedEntry(std::string expression, const Config& config);
/// The config's value of `key`; 0 where it lacks it (LAYOUT: NN; the
/// parameters of the other kinds).
int64_t Get(const Config& c, const std::string& key);
/// The config's value of a parameter whose absence means 1 (SPLITK, GROUP, MINB).
int64_t At1(const Config& c, const std::string& key);
/// OK unless SPLITK > 1 on a device below compute capability 9.0: the
/// 16-bit kinds reduce split-K within a thread-block cluster
/// (FAILED_PRECONDITION naming both).
absl::Status CheckClusterSplitK(int64_t splitk, const v1::Device& device);

}  // namespace tuned::gemm
