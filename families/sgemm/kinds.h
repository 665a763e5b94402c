// The sgemm family's parts (families/sgemm/): what the kinds share
// (the KIND values, fixed values, limits, helpers) and what each kind's file
// defines for the family (sgemm.cc), which dispatches to the kinds:
//   simt.cc   KIND 0-3: naive, coalesced, tiled, warp-tiled (sgemm.cuh, warp.cuh)
//   gemv.cc   KIND 4: matrix-vector shapes (gemv.cuh)
//   mma.cc    KIND 5: mma.sync TF32 tensor cores (mma_tf32.cuh)
//   wgmma.cc  KIND 6: Hopper's wgmma tensor cores (wgmma_*.cuh)
// Internal to tuned_families: the family's interface is family.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "families/family.h"

namespace tuned::sgemm {

/// KIND values.
enum Kind : int64_t {
  kNaive = 0,      // sgemm_naive<BM,BN>
  kCoalesced = 1,  // sgemm_coalesced<BM,BN>
  kTiled = 2,      // sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>
  kWarpTiled = 3,  // sgemm_warp<BM,...,MINB,SLICEK,STREAMB,STREAMK>
  kGemv = 4,       // sgemm_gemv_rows / sgemm_gemv_cols<GW,GR,GU,GC,SPLITK,MINB>
  kMma = 5,        // sgemm_mma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB>
  kWgmma = 6,      // sgemm_wgmma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB,LA>
};

/// The tensor-core kinds (mma.sync, wgmma): candidates of MATH_TF32 and
/// (3xTF32) MATH_FP32_ACCURATE only.
constexpr bool TensorCore(int64_t kind) { return kind == kMma || kind == kWgmma; }

/// GSIDE values of the gemv kind.
enum GemvSide : int64_t {
  kGemvRows = 0,  // small N: warps along the rows of A (contiguous in K)
  kGemvCols = 1,  // small M: threads along the columns of B (N)
};

constexpr const char* KindName(int64_t kind) {
  switch (kind) {
    case kNaive: return "naive";
    case kCoalesced: return "coalesced";
    case kTiled: return "tiled";
    case kWarpTiled: return "warp";
    case kGemv: return "gemv";
    case kMma: return "mma";
    case kWgmma: return "wgmma";
  }
  return "unknown";
}

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

/// The values a kind takes for the parameters it does not use (so that each
/// distinct kernel appears once): the naive kinds use only BM and BN, the
/// tiled kind none of the warp kind's LN..MINB, the warp kind has fixed
/// A padding 4, float4 loads, the outer-product loop and strided lanes; the
/// gemv kind uses only GSIDE..GC (kGemvOnly, which the others lack) and
/// SPLITK.
const Config& FixedFor(int64_t kind);

/// The tensor-core kinds' (5 and 6) own parameters, which every other kind
/// lacks (their if_absent value, 0): so that the other kinds' configs, as
/// stored, keep their names and keys.
constexpr std::array<const char*, 3> kMmaOnly = {"WM", "WN", "PASSES"};
/// KIND 4's own parameters, likewise.
constexpr std::array<const char*, 5> kGemvOnly = {"GSIDE", "GW", "GR", "GU", "GC"};
/// KIND 6's own parameters: the space names each only where it is not its
/// if_absent value 1 (so that the other configs, as stored, keep their names).
constexpr std::array<const char*, 2> kWgmmaOnly = {"LA", "PROMOTE"};

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

/// A config of `kind` with FixedFor(kind)'s values (and the naive kinds'
/// for the parameters FixedFor(kind) leaves out); its own parameters unset.
Config Base(int64_t kind);
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

/// What the family's forms share (sgemm.cc's fp32 form, gemm16.cc's 16-bit
/// ones): one family, "sgemm" (alias "gemm"), of M x N x K problems measured
/// in GFLOPS against cuBLAS, each form with its own parameters.
class GemmForm : public Family {
 public:
  explicit GemmForm(std::vector<Param> params) : params_(std::move(params)) {}
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

 private:
  std::vector<Param> params_;
};

/// The family's 16-bit forms (gemm16.cc): `dtype` DTYPE_BF16, DTYPE_F16,
/// DTYPE_BF16_F32 or DTYPE_F16_F32 (any other value gives the F16 form), in
/// the variant that applies `epilogue` (an unknown value gives EPILOGUE_NONE's).
const Family& Gemm16Family(v1::DType dtype, v1::Epilogue epilogue = v1::EPILOGUE_NONE);

// ---- the 16-bit forms' kinds (gemm16.cc: the form and KIND 0; gemm16_tc.cc: 1 and 2;
// decode16.cc: 3) ----
namespace gemm16 {
/// "" for a config without EPILOGUE, else "_bias", "_bias_relu",
/// "_bias_gelu" (the tanh form) or "_bias_gelu_erf": what its name ends in.
std::string EpilogueSuffix(const Config& config);
/// A kind's instantiation `expression` ("gemm16_mma<2,...>") for `config`:
/// unchanged without EPILOGUE, else the kind's fused entry with the
/// epilogue first ("gemm16_mma_fused<1,2,...>"), which takes the bias after C.
std::string FusedEntry(std::string expression, const Config& config);
/// KIND values of the 16-bit forms.
enum Kind : int64_t {
  kSimt = 0,   // gemm16_simt<DTYPE,BM,BN,BK,TM,TN>                            gemm16_simt.cuh
  kMma = 1,    // gemm16_mma<DTYPE,BM,BN,BK,WM,WN,STAGES,SPLITK,GROUP,LAYOUT,MINB>   mma16.cuh
  kWgmma = 2,  // gemm16_wgmma<DTYPE,BM,BN,BK,STAGES,GROUP,LAYOUT,SPLITK,PERSIST,CONSUMERS
               //              [,STAGED]>                                      wgmma16.cuh
  kDecode = 3,  // gemm16_decode<DTYPE,BM,BN,WN,KWARPS,KBLOCKS,SPLITK,LAYOUT>  decode16.cuh
};
/// The config's value of `key`; 0 where it lacks it (LAYOUT: NN; the
/// parameters of the other kinds).
int64_t Get(const Config& c, const std::string& key);
/// The config's value of a parameter whose absence means 1 (SPLITK, GROUP, MINB).
int64_t At1(const Config& c, const std::string& key);
/// The tensor-core kinds' configs of Space(): wgmma's (STAGED 0, then the
/// STAGED ones), then mma's.
void AddTensorCoreSpace(std::vector<Config>& space);
/// OK unless SPLITK > 1 on a device below compute capability 9.0: the
/// 16-bit kinds reduce split-K within a thread-block cluster
/// (FAILED_PRECONDITION naming both).
absl::Status CheckClusterSplitK(int64_t splitk, const v1::Device& device);
/// Check's rules of KIND 1 and 2 (after the form's common rules).
absl::Status CheckTensorCore(const Config& config, const v1::Device& device);
/// OK unless the config is STAGED (> 0) and both of the shape's pitches
/// (in the config's LAYOUT: A's K or M, B's N or K) are multiples of 8
/// elements, where TMA copies both operands and STAGED only costs stages
/// (FAILED_PRECONDITION: Family::SuitsShape).
absl::Status StagedSuitsShape(const Config& config, const Shape& shape);
/// "gemm_<dtype>_mma_<BM>x<BN>x<BK>_w<WM>x<WN>_s<STAGES>_g<GROUP>_b<MINB>" or
/// "gemm_<dtype>_wgmma_<BM>x<BN>x<BK>_s<STAGES>_g<GROUP>_c<CONSUMERS>", then
/// "_sk<SPLITK>" where above 1, "_p" where PERSIST=1 and "_r<STAGED>" where
/// STAGED > 0 (wgmma), LayoutSuffix().
std::string TensorCoreName(const Config& config, v1::DType dtype);
/// mma16.cuh, "gemm16_mma<DTYPE,BM,BN,BK,WM,WN,STAGES,SPLITK,GROUP,LAYOUT,
/// MINB>"; or wgmma16.cuh, "gemm16_wgmma<DTYPE,BM,BN,BK,STAGES,GROUP,
/// LAYOUT,SPLITK,PERSIST,CONSUMERS[,STAGED]>" (STAGED where > 0) and
/// kWgmmaArchOption.
KernelSource TensorCoreSource(const Config& config, v1::DType dtype);
/// mma: grid = {ceil(M / BM) * ceil(N / BN), 1, SPLITK} (a split-K cluster
/// along z), block = {(BM/WM) * (BN/WN) * 32, 1, 1}, the pipeline's dynamic
/// shared memory. wgmma: grid = {tiles, 1, SPLITK}, or with PERSIST=1
/// {min(tiles, SMs), 1, 1}; block = {128 * (CONSUMERS + 1), 1, 1}; dynamic
/// shared memory STAGES * (BM + BN) * 128 + 1024 + 16 * STAGES; A's and B's
/// tensor maps of `dtype` (128-byte swizzle; a K-major operand one box of
/// 64 k x BM or BN rows, an M- or N-major one boxes of 64 x 64), passed
/// after C. No kind prescales C: nothing adds into it.
v1::LaunchGeometry TensorCoreGeometry(const Config& config, const Shape& shape,
                                      const v1::Device& device, v1::DType dtype);

// decode16.cc: KIND 3, a few tokens (M up to 64) against a streamed B.
/// The decode configs of Space() (kDecodeConfigs: each BM with its blocks).
void AddDecodeSpace(std::vector<Config>& space);
/// Check's rules of KIND 3 (after the form's common rules).
absl::Status CheckDecode(const Config& config, const v1::Device& device);
/// "gemm_<dtype>_decode_<BM>x<BN>_w<WN>_kw<KWARPS>_kb<KBLOCKS>", then
/// "_sk<SPLITK>" where above 1 and LayoutSuffix(), e.g.
/// "gemm_bf16_decode_8x64_w16_kw2_kb2_sk4_nt".
std::string DecodeName(const Config& config, v1::DType dtype);
/// decode16.cuh after sgemm.cuh, half16.cuh and mma16.cuh,
/// "gemm16_decode<DTYPE,BM,BN,WN,KWARPS,KBLOCKS,SPLITK,LAYOUT>".
KernelSource DecodeSource(const Config& config, v1::DType dtype);
/// grid = {ceil(N / BN), ceil(M / BM), SPLITK} (a split-K cluster along z),
/// block = {32 * (BN / WN) * KWARPS, 1, 1}, static shared memory only, no
/// prescaling of C.
v1::LaunchGeometry DecodeGeometry(const Config& config, const Shape& shape);
/// OK for a decode config where M is at most 64 tokens and BM is its chunk
/// (M <= BM, and BM = 8 or BM < 2M), and B's rows are K-contiguous (layouts
/// NT and TT; the kernel gathers them element by element otherwise);
/// FAILED_PRECONDITION naming the rule otherwise. OK for another kind.
absl::Status DecodeSuitsShape(const Config& config, const Shape& shape);
}  // namespace gemm16

// ---- each kind's part of the family (Space in sgemm.cc's order) ----

// simt.cc: KIND 0-3.
/// The warp kind's groups of Space() (large tiles, split-K, sliced-K, RUL 10).
void AddWarpSpace(std::vector<Config>& space);
/// The earlier designs' configs of Space(): naive, coalesced, tiled.
void AddEarlierSpace(std::vector<Config>& space);
/// Check's rules of KIND 0-3 (after the family's common rules).
absl::Status CheckSimt(const Config& config, const v1::Device& device);
std::string SimtName(const Config& config);
KernelSource SimtSource(const Config& config);
v1::LaunchGeometry SimtGeometry(const Config& config, const Shape& shape,
                                const v1::Device& device);

// gemv.cc: KIND 4.
void AddGemvSpace(std::vector<Config>& space);
absl::Status CheckGemv(const Config& config, const v1::Device& device);
std::string GemvName(const Config& config);
KernelSource GemvSource(const Config& config);
v1::LaunchGeometry GemvGeometry(const Config& config, const Shape& shape);
absl::Status GemvSuitsShape(const Config& config, const Shape& shape);

// mma.cc: KIND 5, and the tensor-core kinds' names.
void AddMmaSpace(std::vector<Config>& space);
absl::Status CheckMma(const Config& config, const v1::Device& device);
/// The name of a KIND 5 or 6 config (Family::ConfigName's format).
std::string TensorCoreName(const Config& config);
KernelSource MmaSource(const Config& config);
v1::LaunchGeometry MmaGeometry(const Config& config, const Shape& shape);

// wgmma.cc: KIND 6.
void AddWgmmaSpace(std::vector<Config>& space);
absl::Status CheckWgmma(const Config& config, const v1::Device& device);
KernelSource WgmmaSource(const Config& config);
v1::LaunchGeometry WgmmaGeometry(const Config& config, const Shape& shape,
                                 const v1::Device& device);

}  // namespace tuned::sgemm
