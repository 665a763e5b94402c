// The sgemm family: row-major fp32 C(MxN) = alpha * A(MxK) * B(KxN) + beta * C
// (lda = K, ldb = N, ldc = N). Kernels in kernels_src/sgemm/sgemm.cuh:
//   KIND 0  sgemm_naive<BM,BN>       one thread per output, threadIdx.x along rows
//   KIND 1  sgemm_coalesced<BM,BN>   one thread per output, threadIdx.x along columns
//   KIND 2  sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>
//           shared-memory block tiling with a TM x TN register micro-tile per thread
//   KIND 3  sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>
//           warp tiling, cp.async multi-stage pipeline, sliced-K, split-K,
//           stream-K, rasterization, L2 evict-first for a streamed B
// and in kernels_src/sgemm/gemv.cuh (compiled appended to sgemm.cuh):
//   KIND 4  sgemm_gemv_rows<GW,GR,GU,GC,SPLITK> (GSIDE 0, small N) and
//           sgemm_gemv_cols<GW,GR,GU,GC,SPLITK> (GSIDE 1, small M): matrix-
//           vector shapes, searched only where M or N is at most 8 (SuitsShape)
//   KIND 5  sgemm_mma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB>
//           (kernels_src/sgemm/mma_tf32.cuh) tensor cores, mma.sync m16n8k8
//           TF32 (PASSES 1) or 3xTF32 (PASSES 3), cp.async pipeline, warp
//           tiles, split-K, rasterization; a candidate of the math modes
//           MATH_TF32 and (PASSES 3) MATH_FP32_ACCURATE only (Admits())
//   KIND 6  sgemm_wgmma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB,LA>
//           (kernels_src/sgemm/wgmma_tf32.cuh, appended to sgemm.cuh and
//           mma_tf32.cuh) Hopper warpgroup tensor cores, wgmma.mma_async
//           m64nNk8 TF32 from swizzled shared memory, register-staged
//           pipeline (LA K tiles loaded ahead into registers), split-K,
//           rasterization; compiled for sm_90a, compute capability 9.0
//           only; math modes as KIND 5's. LA=0: the register-A form
//           (C^T = B^T A^T, A by cp.async, B^T's fragments in registers)
// One searchable space: the parameters a kind does not use take one fixed
// value (FixedFor() below), so each distinct kernel appears once.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/families/family.h"

namespace tuned {
namespace {

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
/// The index of A among the kernels' parameters (Arguments()).
constexpr uint32_t kSgemmArgA = 4;
constexpr int64_t kWarp = 32;
/// Largest gridDim.y (and z) of a launch; more row blocks spill over to grid.z.
constexpr int64_t kMaxGridY = 65535;
/// Registers a thread may use (sm_50 and later).
constexpr int64_t kMaxRegistersPerThread = 255;
/// Registers of the tiled kernel besides its arrays and staging: block
/// coordinates and pointers, M/N/K/alpha/beta, loop counters, the float4 flags.
constexpr int64_t kRegisterOverhead = 24;
/// Registers per float of a K slice staged by a thread: the value and, on the
/// scalar-load path, its 64-bit address and bounds predicate kept live across
/// the K loop.
constexpr int64_t kRegistersPerStagedFloat = 5;
/// Registers of the warp kernel besides accumulators and operands.
constexpr int64_t kWarpRegisterOverhead = 40;
/// An SM's registers, threads and resident blocks (sm_80 to sm_90).
constexpr int64_t kRegistersPerSm = 65536;
constexpr int64_t kMaxThreadsPerSm = 2048;
constexpr int64_t kMaxBlocksPerSm = 32;
/// Registers of the gemv kernels besides accumulators and loaded operands.
constexpr int64_t kGemvRegisterOverhead = 24;
/// Columns of C per warp-wide float4 group of the gemv kind's cols side.
constexpr int64_t kGemvColsPerGroup = 4 * kWarp;
/// The gemv kind is searched where M (cols side) or N (rows side) is at most this.
constexpr int64_t kGemvMaxSmall = 8;
/// Shared memory the driver reserves per block (sm_80+), counted against
/// the SM's capacity (CUDA C Programming Guide, compute capabilities).
constexpr int64_t kReservedSharedPerBlock = 1024;

/// ptxas's default --register-usage-level.
constexpr int64_t kDefaultRegisterUsageLevel = 5;

/// NVRTC's target for KIND 6: wgmma is a feature of sm_90a, not of sm_90
/// (server/worker/compiler.cc compiles for it in place of the device's sm_90).
constexpr std::string_view kWgmmaArchOption = "--gpu-architecture=sm_90a";

/// Parameters added after configs were first stored, and the value a stored
/// config that lacks one has (Param::if_absent): SLICEK (1), STREAMB (0),
/// STREAMK (0) and RUL (ptxas's default, 5), the warp kernel as it was
/// before them; KIND 5's WM, WN and PASSES and KIND 4's GSIDE, GW, GR, GU
/// and GC (0), which no other kind has; KIND 6's LA and PROMOTE (1, the
/// kernel as it was before them; only the configs of another value name
/// them).
int64_t IfAbsent(std::string_view key) {
  return key == "SLICEK" || key == "LA" || key == "PROMOTE" ? 1
         : key == "RUL"                                      ? kDefaultRegisterUsageLevel
                                                             : 0;
}

/// The config's value of `key`, IfAbsent(key) where the config lacks it.
int64_t At(const Config& c, const std::string& key) {
  auto it = c.find(key);
  return it == c.end() ? IfAbsent(key) : it->second;
}

/// The values a kind takes for the parameters it does not use (so that each
/// distinct kernel appears once): the naive kinds use only BM and BN, the
/// tiled kind none of the warp kind's LN..MINB, the warp kind has fixed
/// A padding 4, float4 loads, the outer-product loop and strided lanes; the
/// gemv kind uses only GSIDE..GC (kGemvOnly, which the others lack) and
/// SPLITK.
const Config& FixedFor(int64_t kind) {
  static const Config naive = {{"BK", 8},    {"TM", 1},    {"TN", 1},     {"PAD", 0},
                               {"VEC", 1},   {"LOOP", 0},  {"MAP", 0},    {"DB", 0},
                               {"LN", 0},    {"STAGES", 0}, {"SPLITK", 1}, {"GROUP", 1},
                               {"MINB", 1},  {"SLICEK", 1},  {"STREAMB", 0}, {"STREAMK", 0},
                               {"RUL", kDefaultRegisterUsageLevel}};
  static const Config tiled = {{"LN", 0},    {"STAGES", 0}, {"SPLITK", 1},  {"GROUP", 1},
                               {"MINB", 1},  {"SLICEK", 1}, {"STREAMB", 0}, {"STREAMK", 0},
                               {"RUL", kDefaultRegisterUsageLevel}};
  static const Config warp = {{"PAD", 4}, {"VEC", 4}, {"LOOP", 0}, {"MAP", 1}, {"DB", 0}};
  static const Config mma = {{"TM", 1},     {"TN", 1},      {"PAD", 0},     {"VEC", 1},
                             {"LOOP", 0},   {"MAP", 0},     {"DB", 0},      {"LN", 0},
                             {"SLICEK", 1}, {"STREAMB", 0}, {"STREAMK", 0},
                             {"RUL", kDefaultRegisterUsageLevel}};
  static const Config gemv = {{"BM", 8},    {"BN", 8},     {"BK", 8},     {"TM", 1},
                              {"TN", 1},    {"PAD", 0},    {"VEC", 1},    {"LOOP", 0},
                              {"MAP", 0},   {"DB", 0},     {"LN", 0},     {"STAGES", 0},
                              {"GROUP", 1}, {"MINB", 1},   {"SLICEK", 1}, {"STREAMB", 0},
                              {"STREAMK", 0}, {"RUL", kDefaultRegisterUsageLevel}};
  if (TensorCore(kind)) return mma;  // KIND 6 uses KIND 5's parameters
  if (kind == kGemv) return gemv;
  return kind == kTiled ? tiled : kind == kWarpTiled ? warp : naive;
}

/// The tensor-core kinds' (5 and 6) own parameters, which every other kind
/// lacks (their if_absent value, 0): so that the configs and names of the
/// other kinds are those of before KIND 5.
constexpr std::array<const char*, 3> kMmaOnly = {"WM", "WN", "PASSES"};
/// KIND 4's own parameters, likewise.
constexpr std::array<const char*, 5> kGemvOnly = {"GSIDE", "GW", "GR", "GU", "GC"};
/// KIND 6's own parameters: the space names each only where it is not its
/// if_absent value 1 (so that the other configs are those of before it).
constexpr std::array<const char*, 2> kWgmmaOnly = {"LA", "PROMOTE"};

/// Registers of the tensor-core kernel besides its accumulators: fragments
/// (A and B, big and small parts), addresses, bounds and loop state.
/// Calibrated with ptxas -v (NVRTC 13.0, sm_90) on sgemm_mma: 64x64 warp
/// tiles (128 accumulators) used 237-240 registers, 64x32 and 32x64 162-166,
/// 32x32 116, 16x32 110.
constexpr int64_t kMmaRegisterOverhead = 110;

/// The tensor-core kernel's derived sizes (see sgemm_mma in mma_tf32.cuh).
struct MmaTile {
  int64_t bm, bn, bk, wm, wn, stages, splitk, passes, minb;

  /// One warp per WM x WN warp tile of the BM x BN block tile.
  int64_t Threads() const { return wm > 0 && wn > 0 ? (bm / wm) * (bn / wn) * kWarp : 0; }
  /// Dynamic shared memory: STAGES x (As[BM][BK+4] + Bs[BK][BN+8]) floats.
  int64_t SharedBytes() const {
    return stages * (bm * (bk + 4) + bk * (bn + 8)) * kBytesPerElement;
  }
  /// WM*WN/32 accumulators per thread plus kMmaRegisterOverhead.
  int64_t RegisterEstimate() const { return wm * wn / kWarp + kMmaRegisterOverhead; }
};

MmaTile GetMma(const Config& c) {
  return {At(c, "BM"),     At(c, "BN"),     At(c, "BK"),     At(c, "WM"),  At(c, "WN"),
          At(c, "STAGES"), At(c, "SPLITK"), At(c, "PASSES"), At(c, "MINB")};
}

/// Registers of the wgmma kernel besides its accumulators and twice its
/// staged floats (the loaded float4s, and their addresses and converted
/// copies). Calibrated with ptxas -v (NVRTC/nvcc 13.0, sm_90a) on
/// sgemm_wgmma: under the cap of __launch_bounds__ it spilled where
/// accumulators + 2 x staged + 32 exceeded it (128x256x32 with 64x256
/// warpgroup tiles: 128 + 96 + 32 = 256, 24 bytes at 255; 3xTF32 64x128x32
/// with one warpgroup: 128 + 96 + 32, 20 bytes; 4 warpgroups at BK 32:
/// 64 + 48 + 32 = 144 over 128, 8-40 bytes) and never where it did not
/// (3xTF32 128x128x32: 224, used 254; 4 warpgroups at BK 16: 120, used
/// 124-128; 128x128x32: 192, used 188).
constexpr int64_t kWgmmaRegisterOverhead = 32;
/// With LA=2 (two register sets of staged floats) the estimate is
/// accumulators + 4 x staged + 16, calibrated likewise (13.0, sm_90a): it
/// spilled where that exceeded the cap (64x128x32 with one warpgroup: 64 +
/// 192 + 16 = 272, 20 bytes at 255) or met it (128x256x16 with four 64x128
/// warpgroups: 128 at 128, 4 bytes), and did not elsewhere (256x128x16 with
/// four: 128, used 124-128; 128x128x32: 208, used 205-214; 64x256 and
/// 128x128 warpgroup tiles at BK 16: 240, used 234-248; 3xTF32 128x128x16
/// and 64x128x16: 208 and 240, used 243-254). 3xTF32 128x128x32 (272) used
/// all 255 registers.
constexpr int64_t kWgmmaLa2RegisterOverhead = 16;
/// With LA=0 (the register-A form) the estimate is accumulators + two sets
/// of BK/8 x 4 fragment registers (twice for 3xTF32: big and small) + 48,
/// calibrated likewise (NVRTC 13.0, sm_90a, session 16): 3xTF32 128x128
/// with two warpgroups used 255 registers (estimate 240) and TF32 128x128
/// 168 (144), neither spilling; TF32 128x256 with four warpgroups (144,
/// refused) spilled 48 bytes at its cap of 128.
constexpr int64_t kWgmmaRsRegisterOverhead = 48;
/// WS (the warp-specialized LA=0): the consumer warpgroups' registers, which
/// setmaxnreg raises to 232 after the producer's are cut to 40 (128 x 40 +
/// 256 x 232 = 64512 of the SM's 65536; wgmma_tf32.cuh RsGemm).
constexpr int64_t kWsConsumerRegisters = 232;

/// The wgmma kernel's derived sizes (see sgemm_wgmma in wgmma_tf32.cuh).
struct WgmmaTile {
  int64_t bm, bn, bk, wm, wn, stages, splitk, passes, minb, la, ws;

  /// One warpgroup (128 threads) per WM x WN warpgroup tile, and with WS
  /// the producer warpgroup.
  int64_t Threads() const { return wm > 0 && wn > 0 ? (bm / wm) * (bn / wn) * 128 + ws * 128 : 0; }
  /// The warpgroups that compute (WS: the consumers).
  int64_t ComputeThreads() const { return Threads() - ws * 128; }
  /// Dynamic shared memory: STAGES x (1 or, 3xTF32, 2 copies) x (BM + BN)
  /// rows of BK floats, and 1024 bytes to align the stages to the swizzle's
  /// 1024-byte period. LA=0: STAGES x ((1 or 2) x BM rows of BK floats + BK
  /// rows of BN + 8 floats, rounded up to 1024 bytes) + 1024 (RsTile).
  int64_t SharedBytes() const {
    if (la == 0) {
      const int64_t stage = ((passes == 3 ? 2 : 1) * bm * bk + bk * (bn + 8)) * kBytesPerElement;
      // WS: the stages' full and empty mbarriers, 8 bytes each.
      return stages * ((stage + 1023) / 1024 * 1024) + 1024 + ws * 16 * stages;
    }
    return stages * (passes == 3 ? 2 : 1) * (bm + bn) * bk * kBytesPerElement + 1024;
  }
  /// Accumulators per thread: WM*WN/128, twice for 3xTF32 (the fresh set).
  int64_t Accumulators() const { return (passes == 3 ? 2 : 1) * wm * wn / 128; }
  /// LA=0: registers of the two B^T fragment sets (the K tile's and the
  /// next's), BK/8 x 4 each, twice for 3xTF32 (big and small).
  int64_t RsFragments() const { return 2 * (passes == 3 ? 2 : 1) * bk / 2; }
  /// Floats of one K tile a thread stages in registers.
  int64_t Staged() const { return Threads() > 0 ? (bm + bn) * bk / ComputeThreads() : 0; }
  int64_t RegisterEstimate() const {
    if (la == 0) return Accumulators() + RsFragments() + kWgmmaRsRegisterOverhead;
    return la == 2 ? Accumulators() + 4 * Staged() + kWgmmaLa2RegisterOverhead
                   : Accumulators() + 2 * Staged() + kWgmmaRegisterOverhead;
  }
};

WgmmaTile GetWgmma(const Config& c) {
  return {At(c, "BM"),     At(c, "BN"),     At(c, "BK"),     At(c, "WM"),
          At(c, "WN"),     At(c, "STAGES"), At(c, "SPLITK"), At(c, "PASSES"),
          At(c, "MINB"),   At(c, "LA"),     At(c, "WS")};
}

/// wgmma configs {BM, BN, BK, WM, WN, STAGES, SPLITK, GROUP, MINB} of one
/// TF32 pass: 128x128 with two 64x128 warpgroup tiles, 128x256 and 256x128
/// with two (64x256, 128x128) or four (64x128, BK 16: 128 registers) warpgroups,
/// one-warpgroup 64x128 and 128x64; split-K for few output tiles.
constexpr std::array<std::array<int64_t, 9>, 25> kWgmmaTf32 = {{
    {128, 128, 32, 64, 128, 4, 1, 8, 1},
    {128, 128, 32, 64, 128, 3, 1, 8, 1},
    {128, 128, 32, 64, 128, 4, 1, 1, 1},
    {128, 128, 16, 64, 128, 4, 1, 8, 1},
    {128, 128, 16, 64, 128, 6, 1, 8, 1},
    {128, 256, 16, 64, 256, 4, 1, 8, 1},
    {128, 256, 16, 64, 256, 6, 1, 8, 1},
    {256, 128, 16, 128, 128, 4, 1, 8, 1},
    {256, 128, 16, 128, 128, 6, 1, 8, 1},
    {256, 128, 16, 64, 128, 4, 1, 8, 1},
    {128, 256, 16, 64, 128, 4, 1, 8, 1},
    {256, 128, 16, 64, 128, 6, 1, 8, 1},
    {64, 128, 32, 64, 128, 4, 1, 8, 1},
    {128, 64, 32, 64, 64, 4, 1, 8, 1},
    {128, 128, 32, 64, 128, 4, 2, 8, 1},
    {128, 128, 32, 64, 128, 4, 4, 8, 1},
    {64, 128, 32, 64, 128, 4, 2, 1, 1},
    {64, 128, 32, 64, 128, 4, 4, 1, 1},
    {64, 128, 32, 64, 128, 4, 8, 1, 1},
    {128, 64, 32, 64, 64, 4, 2, 1, 1},
    {128, 64, 32, 64, 64, 4, 4, 1, 1},
    {128, 64, 32, 64, 64, 4, 8, 1, 1},
    {64, 64, 32, 64, 64, 4, 4, 1, 1},
    {64, 64, 32, 64, 64, 4, 8, 1, 1},
    {64, 64, 32, 64, 64, 4, 16, 1, 1},
}};

/// wgmma 3xTF32 configs, likewise: the fresh accumulators double a
/// warpgroup tile's registers, so at most 64x128 (two 128x128 at BK 16 or
/// 32, or one); the big and small copies double the shared memory (3
/// stages of 128x128x32 take 192 KiB).
constexpr std::array<std::array<int64_t, 9>, 20> kWgmma3xTf32 = {{
    {128, 128, 32, 64, 128, 3, 1, 8, 1},
    {128, 128, 16, 64, 128, 3, 1, 8, 1},
    {128, 128, 16, 64, 128, 4, 1, 8, 1},
    {128, 128, 16, 64, 128, 6, 1, 8, 1},
    {128, 128, 16, 64, 128, 4, 1, 1, 1},
    {128, 64, 32, 64, 64, 3, 1, 8, 1},
    {128, 64, 32, 64, 64, 4, 1, 8, 1},
    {64, 128, 16, 64, 128, 4, 1, 8, 1},
    {64, 128, 16, 64, 128, 6, 1, 8, 1},
    {64, 64, 32, 64, 64, 4, 1, 8, 1},
    {128, 128, 16, 64, 128, 4, 2, 8, 1},
    {128, 128, 16, 64, 128, 4, 4, 8, 1},
    {128, 64, 32, 64, 64, 3, 2, 1, 1},
    {128, 64, 32, 64, 64, 3, 4, 1, 1},
    {128, 64, 32, 64, 64, 3, 8, 1, 1},
    {64, 128, 16, 64, 128, 4, 2, 1, 1},
    {64, 128, 16, 64, 128, 4, 4, 1, 1},
    {64, 64, 32, 64, 64, 4, 4, 1, 1},
    {64, 64, 32, 64, 64, 4, 8, 1, 1},
    {64, 64, 32, 64, 64, 4, 16, 1, 1},
}};

/// wgmma LA=0 configs (the register-A form), likewise, {BM, BN, BK, WM,
/// WN, ...} with BK 32, WM = BM, WN 64, 4 stages or more: 3xTF32 128x128
/// (the fresh accumulators leave no registers for more), with split-K for
/// few output tiles; TF32 256x128 and 128x128 (two warpgroups; four, at
/// 128x256, spill). On an H100 (bench/wgmma_rs_probe.cu, session 15) 3xTF32
/// 128x128 s4 ran 12-14% faster than LA 1's best at 4096^3 and 8192^3.
constexpr std::array<std::array<int64_t, 9>, 3> kWgmmaRs3xTf32 = {{
    {128, 128, 32, 128, 64, 4, 1, 1, 1},
    {128, 128, 32, 128, 64, 4, 2, 1, 1},
    {128, 128, 32, 128, 64, 4, 4, 1, 1},
}};
constexpr std::array<std::array<int64_t, 9>, 4> kWgmmaRsTf32 = {{
    {256, 128, 32, 256, 64, 4, 1, 1, 1},
    {128, 128, 32, 128, 64, 4, 1, 1, 1},
    {128, 128, 32, 128, 64, 6, 1, 1, 1},
    {256, 128, 32, 256, 64, 4, 2, 1, 1},
}};

/// The configs of kWgmma3xTf32 and kWgmmaTf32 that also get LA=2 (two K
/// tiles loaded ahead into registers): those of SPLITK 1 and GROUP 8, where
/// CheckWgmma's register estimate admits them (it refuses e.g. 3xTF32
/// 128x128x32, 272 registers estimated), less this one: four 64x128
/// warpgroups of 128x256x16 meet their cap of 128 registers and spill 4
/// bytes, which the estimate (128) does not tell from 256x128x16's (124
/// registers, no spill).
constexpr std::array<int64_t, 9> kWgmmaLa2Spills = {128, 256, 16, 64, 128, 4, 1, 8, 1};
constexpr bool WgmmaLa2(const std::array<int64_t, 9>& p) {
  return p[6] == 1 && p[7] == 8 && p != kWgmmaLa2Spills;  // SPLITK, GROUP
}

/// Tensor-core tiles {BM, BN, WM, WN} for large problems: 4 or 8 warps of
/// 64x64, 64x32 or 32x64 warp tiles.
constexpr std::array<std::array<int64_t, 4>, 5> kMmaTiles = {{
    {128, 128, 64, 64},  // 128 threads
    {128, 128, 64, 32},  // 256 threads
    {128, 128, 32, 64},  // 256 threads
    {256, 128, 64, 64},  // 256 threads
    {128, 256, 64, 64},  // 256 threads
}};

/// Tensor-core tiles {BM, BN, WM, WN} with split-K: medium and small tiles
/// (few output tiles, M = 16 or 32) of 2 to 4 warps.
constexpr std::array<std::array<int64_t, 4>, 6> kMmaSplitTiles = {{
    {128, 64, 64, 32},  // 128 threads
    {64, 128, 32, 64},  // 128 threads
    {64, 64, 32, 32},   // 128 threads
    {32, 128, 32, 32},  // 128 threads
    {16, 128, 16, 32},  // 128 threads
    {32, 64, 32, 32},   // 64 threads
}};

/// Block tiles {BM, BN, TM, TN} of the 2-D tiled group of Space(): 64 to 512
/// threads of 4x4 to 16x8 outputs, from 16x64 (small M, e.g. M = 16) and
/// 32x32 (small problems) to 256x128 (large ones).
constexpr std::array<std::array<int64_t, 4>, 26> k2DTiles = {{
    {128, 128, 8, 8},  {128, 64, 8, 8},   {64, 128, 8, 8},  {64, 64, 4, 4},   {64, 64, 8, 8},
    {128, 128, 8, 4},  {128, 128, 4, 8},  {128, 64, 8, 4},  {64, 128, 4, 8},  {64, 64, 8, 4},
    {64, 64, 4, 8},    {128, 128, 16, 8}, {128, 128, 8, 16}, {256, 128, 16, 8}, {128, 256, 8, 16},
    {256, 128, 8, 16}, {128, 256, 16, 8}, {256, 64, 8, 8},  {64, 256, 8, 8},   {32, 128, 4, 4},
    {32, 128, 4, 8},   {32, 64, 4, 4},    {128, 32, 4, 4},  {32, 32, 4, 4},    {16, 64, 4, 4},
    {16, 128, 4, 4},
}};

/// The first kCore2DTiles of k2DTiles, the classic fast tiles, are the 2-D
/// tiled kernels of Space().
constexpr size_t kCore2DTiles = 5;

/// Warp-kernel tiles {BM, BN, TM, TN, LN} for large problems: 128 or 256
/// threads of 8x8 to 16x8 outputs, warp tiles 32x64, 64x32 and 32x128.
constexpr std::array<std::array<int64_t, 5>, 7> kWarpTiles = {{
    {128, 128, 8, 8, 8},   // 256 threads, warp tile 32x64
    {128, 128, 8, 8, 4},   // 256 threads, warp tile 64x32
    {128, 256, 8, 16, 8},  // 256 threads, warp tile 32x128
    {256, 128, 16, 8, 4},  // 256 threads, warp tile 128x32
    {128, 64, 8, 8, 4},    // 128 threads, warp tile 64x32
    {64, 128, 8, 8, 8},    // 128 threads, warp tile 32x64
    {128, 128, 8, 4, 8},   // 512 threads, warp tile 32x32
}};

/// Warp-kernel tiles {BM, BN, TM, TN, LN} with split-K: down to 16 rows for
/// M = 16, 64 to 256 threads.
constexpr std::array<std::array<int64_t, 5>, 8> kSplitTiles = {{
    {16, 128, 4, 4, 8},   // 128 threads, warp tile 16x32
    {16, 64, 4, 4, 8},    // 64 threads
    {32, 128, 4, 4, 8},   // 256 threads
    {32, 64, 4, 4, 8},    // 128 threads
    {64, 64, 8, 4, 8},    // 128 threads, warp tile 32x32
    {64, 128, 8, 8, 8},   // 128 threads, warp tile 32x64
    {128, 64, 8, 8, 4},   // 128 threads, warp tile 64x32
    {128, 128, 8, 8, 8},  // 256 threads, warp tile 32x64
}};

/// Warp-kernel tiles {BM, BN, TM, TN, LN} with sliced-K: kSplitTiles' small
/// and medium tiles, 32x32 and 32x64 with 8x4 per thread, and 64x64 with 8x8
/// (64 threads a group: a small problem has few 8x8 thread tiles, and
/// sliced-K multiplies its warps).
constexpr std::array<std::array<int64_t, 5>, 9> kSliceTiles = {{
    {16, 128, 4, 4, 8},
    {16, 64, 4, 4, 8},
    {32, 128, 4, 4, 8},
    {32, 64, 4, 4, 8},
    {32, 32, 4, 4, 8},
    {64, 64, 8, 4, 8},
    {64, 128, 8, 8, 8},
    {32, 64, 8, 4, 8},
    {64, 64, 8, 8, 8},
}};

/// Warp-kernel configs {BM, BN, BK, TM, TN, LN, STAGES, SPLITK, GROUP, MINB,
/// SLICEK, STREAMB} that also get RUL 10: the winners of the suite's small,
/// skinny and split-K shapes on an H100
/// (bench/results/2026-11-22_h100_sgemm_suite_streamk.txt).
constexpr std::array<std::array<int64_t, 12>, 10> kRul10Twins = {{
    {64, 128, 16, 8, 8, 8, 4, 2, 8, 1, 1, 0},    // 1024^3, 1000^3
    {64, 128, 16, 8, 8, 8, 4, 4, 8, 1, 1, 0},    // 128x4096^2
    {64, 128, 16, 8, 8, 8, 4, 8, 8, 1, 1, 0},
    {16, 128, 32, 4, 4, 8, 3, 4, 1, 1, 1, 1},    // 16x4096^2
    {16, 64, 16, 4, 4, 8, 4, 4, 1, 1, 1, 1},
    {256, 128, 16, 16, 8, 4, 4, 4, 8, 1, 1, 0},  // 8192x128x8192
    {128, 256, 32, 8, 16, 8, 4, 4, 8, 1, 1, 0},  // 8192^3
    {64, 128, 16, 8, 8, 8, 2, 1, 8, 4, 1, 0},    // 4096^2x64
    {64, 128, 16, 8, 8, 8, 3, 1, 8, 4, 1, 0},
    {32, 64, 64, 8, 4, 8, 2, 1, 1, 1, 4, 0},     // 512^3
}};

/// Gemv rows-side configs {GW, GR, GU, SPLITK} (small N): one to four rows
/// a block (4 rows share B's loads: N = 4 reads 4 floats of B per float of
/// A), 64 to 512 bytes of A in flight per thread, split-K for few rows.
constexpr std::array<std::array<int64_t, 4>, 7> kGemvRowsSet = {{
    {4, 1, 4, 1},
    {8, 1, 2, 1},
    {4, 2, 2, 1},
    {2, 4, 2, 1},
    {4, 4, 1, 1},
    {8, 2, 4, 1},
    {4, 1, 4, 8},  // M of a few hundred rows or less: K over 8 blocks
}};

/// Gemv cols-side configs {GW, GR, GU, SPLITK} (small M): N = 8192 has
/// only 2048 float4 columns, so K is split over 4 to 16 warps and 2 to 16
/// blocks for 2000 to 8000 warps; 2 to 8 k-quads of B rows in flight.
constexpr std::array<std::array<int64_t, 4>, 7> kGemvColsSet = {{
    {8, 1, 2, 4},
    {4, 1, 4, 8},
    {8, 1, 4, 2},
    {4, 2, 2, 4},
    {16, 1, 2, 2},
    {8, 1, 2, 16},
    {8, 1, 2, 1},  // large N
}};

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

/// MINB of a warp tile's stream-K configs: the blocks per SM it runs at,
/// which size the stream-K grid. 4 for up to 128 threads (2 for 128x64,
/// which spills at 4), 2 for 256 threads of up to 8x8, else 1.
int64_t StreamKMinBlocks(int64_t bm, int64_t bn, int64_t tm, int64_t tn) {
  const int64_t threads = (bm / tm) * (bn / tn);
  if (threads <= 128) return bm == 128 && bn == 64 ? 2 : 4;
  return threads == 256 && tm * tn <= 64 ? 2 : 1;
}

/// The tiled kernel's derived sizes (see sgemm_tiled in sgemm.cuh).
struct Tiled {
  int64_t bm, bn, bk, tm, tn, pad, vec, loop, map, db;

  /// Threads per block: one per TM x TN micro-tile of the BM x BN block tile.
  int64_t Threads() const { return (bm / tm) * (bn / tn); }
  /// Static shared memory in bytes: (DB ? 2 : 1) buffers of As[BK][BM+PAD]
  /// and Bs[BK][BN+PAD] floats.
  int64_t SharedBytes() const {
    return (db ? 2 : 1) * bk * ((bm + pad) + (bn + pad)) * kBytesPerElement;
  }
  /// Floats of one K slice of A and B that each thread stages in registers.
  int64_t Staged() const { return (bm + bn) * bk / Threads(); }
  /// Estimated registers per thread: TM*TN accumulators, TM + TN operands of
  /// one k step, kRegistersPerStagedFloat per staged float and
  /// kRegisterOverhead. Calibrated with ptxas -v (NVRTC 13.0, sm_90) on every
  /// tiled config of Space() whose estimate is at most 255: it is an upper
  /// bound of the registers ptxas allocates (which ranged 32..255), so no
  /// config that passes Check() spills; loose for LOOP = 1 and small tiles.
  int64_t RegisterEstimate() const {
    return tm * tn + tm + tn + kRegistersPerStagedFloat * Staged() + kRegisterOverhead;
  }
};

/// The warp kernel's derived sizes (see sgemm_warp in sgemm.cuh).
struct Warp {
  int64_t bm, bn, bk, tm, tn, ln, stages, splitk, group, minb, slicek, streamk;

  /// SLICEK groups of (BM/TM) * (BN/TN) threads.
  int64_t Threads() const { return slicek * (bm / tm) * (bn / tn); }
  int64_t Lm() const { return ln > 0 ? kWarp / ln : 0; }
  /// Warp tile: (32/LN * TM) x (LN * TN).
  int64_t Wm() const { return Lm() * tm; }
  int64_t Wn() const { return ln * tn; }
  /// Dynamic shared memory: STAGES x (As[BK][BM+4] + Bs[BK][BN]) floats,
  /// then (SLICEK-1) x BM*BN floats for the sliced-K reduction.
  int64_t SharedBytes() const {
    return (stages * bk * ((bm + 4) + bn) + (slicek - 1) * bm * bn) * kBytesPerElement;
  }
  /// Estimated registers per thread: TM*TN accumulators, TM + TN operands,
  /// kWarpRegisterOverhead (addresses, bounds, loop state). Calibrated with
  /// ptxas -v (NVRTC 13.0, sm_90) on the configs of Space().
  int64_t RegisterEstimate() const { return tm * tn + tm + tn + kWarpRegisterOverhead; }
  /// The registers a thread may use under __launch_bounds__(THREADS, MINB):
  /// the SM's 65536 split over MINB blocks, in the allocation unit of 8.
  int64_t RegisterCap(int64_t regs_per_sm) const {
    return std::min<int64_t>(kMaxRegistersPerThread, regs_per_sm / (minb * Threads()) / 8 * 8);
  }
};

/// The gemv kernels' derived sizes (see gemv.cuh).
struct Gemv {
  int64_t side, gw, gr, gu, gc, splitk;

  int64_t Threads() const { return kWarp * gw; }
  /// Floats loaded per thread per step of GU k-quads (4 k each): rows: GR
  /// float4 of A and 4 x GC floats of B per quad; cols: GC float4 of A and
  /// 4 x GR float4 of B per quad.
  int64_t LoadedFloats() const {
    return side == kGemvRows ? gu * (4 * gr + 4 * gc) : gu * (4 * gc + 16 * gr);
  }
  /// Accumulators per thread: GR rows x GC columns (rows), GC rows x 4*GR
  /// columns (cols).
  int64_t Accumulators() const { return side == kGemvRows ? gr * gc : gc * 4 * gr; }
  /// 64-bit pointers to the rows of A a thread reads: GR (rows), GC (cols).
  int64_t RowPointers() const { return side == kGemvRows ? gr : gc; }
  /// Estimated registers per thread: accumulators, the loaded floats, two
  /// per row pointer and kGemvRegisterOverhead. Calibrated with ptxas -v
  /// (NVRTC 13.0, sm_90) on the gemv configs of Space(): under the cap
  /// that MinBlocks() gives, none spills.
  int64_t RegisterEstimate() const {
    return Accumulators() + LoadedFloats() + 2 * RowPointers() + kGemvRegisterOverhead;
  }
  /// The kernel's __launch_bounds__ minimum blocks per SM: as many blocks
  /// as the SM's 65536 registers hold at RegisterEstimate() (so that ptxas
  /// may use the estimate and trades no spills for occupancy), within the
  /// SM's 2048 threads and 32 blocks, at least 1.
  int64_t MinBlocks() const {
    const int64_t regs = std::max<int64_t>(RegisterEstimate(), 1);
    const int64_t threads = std::max<int64_t>(Threads(), kWarp);
    return std::clamp<int64_t>(kRegistersPerSm / (threads * regs), 1,
                               std::max<int64_t>(1, std::min<int64_t>(kMaxBlocksPerSm,
                                                                      kMaxThreadsPerSm / threads)));
  }
  /// Static shared memory of the reduction across warps: GW x GR*GC floats
  /// (rows) or GW x 128*GR floats (cols).
  int64_t SharedBytes() const {
    return gw * (side == kGemvRows ? gr * gc : kGemvColsPerGroup * gr) * kBytesPerElement;
  }
  /// Grid: (ceil(M / GR), SPLITK) for rows, (ceil(N / (128*GR)), SPLITK) for cols.
  int64_t GridX(const Shape& shape) const {
    return side == kGemvRows ? CeilDiv(shape[0], gr) : CeilDiv(shape[1], kGemvColsPerGroup * gr);
  }
};

Gemv GetGemv(const Config& c) {
  return {At(c, "GSIDE"), At(c, "GW"), At(c, "GR"), At(c, "GU"), At(c, "GC"), At(c, "SPLITK")};
}

Warp GetWarp(const Config& c) {
  return {At(c, "BM"),     At(c, "BN"),     At(c, "BK"),    At(c, "TM"),
          At(c, "TN"),     At(c, "LN"),     At(c, "STAGES"), At(c, "SPLITK"),
          At(c, "GROUP"),  At(c, "MINB"),   At(c, "SLICEK"), At(c, "STREAMK")};
}

Tiled GetTiled(const Config& c) {
  return {c.at("BM"), c.at("BN"),  c.at("BK"),   c.at("TM"),  c.at("TN"),
          c.at("PAD"), c.at("VEC"), c.at("LOOP"), c.at("MAP"), c.at("DB")};
}

/// Whether MAP=1 gives the same thread-to-element mapping as MAP=0: true when
/// each of TM and TN is either 1 or 4 (a single chunk of rows / columns).
bool MapIsIrrelevant(int64_t tm, int64_t tn) {
  auto single_chunk = [](int64_t t) { return t == 1 || t == 4; };
  return single_chunk(tm) && single_chunk(tn);
}

class SgemmFamilyImpl final : public Family {
 public:
  SgemmFamilyImpl()
      : params_{
            {"KIND", {kNaive, kCoalesced, kTiled, kWarpTiled, kGemv, kMma, kWgmma},
             "0 = naive (one thread per output, threadIdx.x along rows: uncoalesced), "
             "1 = coalesced (one thread per output, threadIdx.x along columns), "
             "2 = tiled (shared-memory block tiling, TM x TN outputs per thread), "
             "3 = warp (warp tiling, cp.async pipeline, split-K, rasterization; sm_80+), "
             "4 = gemv (matrix-vector shapes, M or N of 1 to 8: a warp or several per row "
             "or column group, float4 loads, K split over warps and blocks), "
             "5 = mma (tensor cores, mma.sync m16n8k8 TF32, cp.async pipeline, split-K; sm_80+; "
             "math modes tf32 and, 3xTF32, fp32_accurate), "
             "6 = wgmma (Hopper warpgroup tensor cores, wgmma.mma_async m64nNk8 TF32 from "
             "swizzled shared memory, register-staged pipeline, split-K; compiled for sm_90a, "
             "compute capability 9.0 only; math modes as 5's)"},
            {"BM", {8, 16, 32, 64, 128, 256},
             "rows of C per block; naive kinds: block dimension along M"},
            {"BN", {8, 16, 32, 64, 128, 256},
             "columns of C per block; naive kinds: block dimension along N"},
            {"BK", {8, 16, 32, 64},
             "tiled: depth of the K slice staged in shared memory per step (naive kinds: 8)"},
            {"TM", {1, 4, 8, 16}, "tiled: rows of C per thread (naive kinds: 1)"},
            {"TN", {1, 4, 8, 16}, "tiled: columns of C per thread (naive kinds: 1)"},
            {"PAD", {0, 4},
             "tiled: floats of padding per shared-memory tile row (As[BK][BM+PAD], "
             "Bs[BK][BN+PAD]); 4 removes bank conflicts of the transposed A store"},
            {"VEC", {1, 4},
             "tiled: 4 = float4 global loads/stores where the row length % 4 == 0 and "
             "the pointer is 16-byte aligned (checked at run time), 1 = scalar"},
            {"LOOP", {0, 1},
             "tiled: 0 = k outermost, TM + TN operands in registers, outer product; "
             "1 = for each output, loop over k reading shared memory"},
            {"MAP", {0, 1},
             "tiled: 0 = a thread owns TM consecutive rows x TN consecutive columns; "
             "1 = strided by BM/TM and BN/TN (in chunks of 4 when TM/TN % 4 == 0) "
             "for conflict-free shared reads and coalesced stores"},
            {"DB", {0, 1},
             "tiled: 1 = double buffering (two shared buffers, next K slice loaded into "
             "registers while computing the current one, one barrier per slice)"},
            {"LN", {0, 4, 8, 16},
             "warp: lanes of a warp along N (32/LN along M); the warp tile is "
             "(32/LN*TM) x (LN*TN) (other kinds: 0)"},
            {"STAGES", {0, 2, 3, 4, 6, 8},
             "warp: shared-memory stages of the cp.async pipeline, STAGES-1 K tiles in "
             "flight (other kinds: 0)"},
            {"SPLITK", {1, 2, 4, 8, 16},
             "warp, gemv: K split over this many blocks per output tile, partial sums added "
             "into C with atomics after C is set to beta*C (other kinds: 1)"},
            {"GROUP", {1, 8},
             "warp: block rasterization, output tiles visited GROUP tile-rows at a time "
             "for L2 reuse (other kinds: 1)"},
            {"MINB", {1, 2, 4},
             "warp: __launch_bounds__ minimum blocks per SM (caps registers at "
             "65536/(MINB*threads)) (other kinds: 1)"},
            {"SLICEK", {1, 2, 4, 8},
             "warp: sliced-K, this many thread groups per block share each K tile, "
             "partial sums reduced through shared memory (other kinds: 1)",
             IfAbsent("SLICEK")},
            {"STREAMB", {0, 1},
             "warp: 1 = B is streamed: its copies carry an L2 evict-first policy, for B "
             "read once (M <= BM, e.g. M = 16), so that it does not evict what else the L2 "
             "holds (other kinds: 0)",
             IfAbsent("STREAMB")},
            {"STREAMK", {0, 1},
             "warp: 1 = stream-K, the whole waves of output tiles run data-parallel and "
             "MINB blocks per SM share the (output tile, K tile) iterations of the partial "
             "wave evenly, every tile added into C with atomics after C is set to beta*C; "
             "no SM idles in a last partial wave (other kinds: 0)",
             IfAbsent("STREAMK")},
            {"RUL", {0, kDefaultRegisterUsageLevel, 10},
             "warp: ptxas --register-usage-level (0..10, default 5; a beta ptxas option): 10 "
             "trades registers for more aggressive optimization; the schedule ptxas picks "
             "moves a kernel's time by several percent. ptxas 13.0 emits one code for "
             "levels 0-3, one for 4-5 and one for 6-10 (sgemm_warp 128x256 and 64x128, "
             "compared section by section), so 0, 5 and 10 stand for all (other kinds: 5)",
             IfAbsent("RUL")},
            {"WM", {0, 16, 32, 64, 128, 256},
             "mma: rows of a warp tile, (WM/16) m16 tiles; wgmma: rows of a warpgroup tile, "
             "(WM/64) m64 wgmmas per k8 step, or with LA=0 the N of its wgmmas (WM = BM: "
             "128 or 256) (other kinds: 0)",
             IfAbsent("WM")},
            {"WN", {0, 32, 64, 128, 256},
             "mma: columns of a warp tile, (WN/8) n8 tiles; wgmma: columns of a warpgroup "
             "tile, the N of its m64nNk8 wgmmas (other kinds: 0)",
             IfAbsent("WN")},
            {"PASSES", {0, 1, 3},
             "mma: 1 = TF32 (operands rounded to TF32, one mma per tile; math mode tf32), "
             "3 = 3xTF32 (operands split into big = tf32(x) and small = tf32(x - big) in the "
             "kernel, small*big + big*small + big*big; fp32_accurate and tf32; wgmma: into a "
             "fresh accumulator per K tile, added into the result in fp32) (other kinds: 0)",
             IfAbsent("PASSES")},
            {"GSIDE", {kGemvRows, kGemvCols},
             "gemv: 0 = rows (small N: warps along the rows of A, contiguous in K), "
             "1 = cols (small M: lanes along the columns of B) (other kinds: 0)",
             IfAbsent("GSIDE")},
            {"GW", {0, 1, 2, 4, 8, 16},
             "gemv: warps per block, which split the block's K range among them; sums "
             "reduced by shuffles and shared memory (other kinds: 0)",
             IfAbsent("GW")},
            {"GR", {0, 1, 2, 4},
             "gemv: rows: rows of C per block (B's loads shared by GR rows); cols: float4 "
             "column groups per lane, 128*GR columns per block (other kinds: 0)",
             IfAbsent("GR")},
            {"GU", {0, 1, 2, 4, 8},
             "gemv: k-quads (4 k) per thread whose loads are issued together (loads in "
             "flight) (other kinds: 0)",
             IfAbsent("GU")},
            {"GC", {0, 1, 2, 4, 8},
             "gemv: the small dimension (rows: N, cols: M) is done GC at a time, one pass "
             "over the big operand per GC; each size 1..GC is its own unrolled code "
             "(registers grow with GC) (other kinds: 0)",
             IfAbsent("GC")},
            {"LA", {0, 1, 2},
             "wgmma: K tiles loaded ahead into registers by the register-staged copy: 1 = "
             "the tile stored into shared memory next, loaded one iteration before; 2 = two "
             "register sets, each load has two iterations (two K tiles' wgmmas) to land "
             "(16-byte path only: the 4-byte one keeps 1); 0 = none: the register-A form, "
             "C^T = B^T A^T, A copied with cp.async and rounded in shared memory, B^T's "
             "fragments read from B's own layout and rounded in registers (BK 32, WM = BM, "
             "WN 64) (other kinds: 1)",
             IfAbsent("LA")},
            {"PROMOTE", {1, 2},
             "wgmma 3xTF32 with LA=0: K tiles whose products accumulate in the tensor cores' "
             "partial sums before they are added into the fp32 accumulators (the tensor "
             "cores' accumulation truncates: 2 doubles the bias and halves the waits; the "
             "error rule decides per problem) (other configs: 1)",
             IfAbsent("PROMOTE")},
            {"WS", {0, 1},
             "wgmma TF32 with LA=0 and BN 128: 1 = warp-specialized, a producer warpgroup (40 "
             "registers) issues the copies and two consumer warpgroups (232) meet it through "
             "mbarriers, with no block barrier in the K loop (other configs: 0)",
             IfAbsent("WS")},
        } {}

  v1::Family id() const override { return v1::FAMILY_SGEMM; }
  std::string_view name() const override { return "sgemm"; }
  std::vector<std::string> dims() const override { return {"M", "N", "K"}; }
  std::string_view metric_unit() const override { return "GFLOPS"; }
  std::string_view baseline_name() const override { return "cuBLAS"; }
  bool baseline_is_candidate() const override { return true; }
  const std::vector<Param>& params() const override { return params_; }

  std::vector<v1::Math> MathModes() const override {
    return {v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE, v1::MATH_TF32};
  }

  /// MATH_IEEE_FP32: the fp32 kinds (0..4), today's space; MATH_FP32_ACCURATE:
  /// those and 3xTF32 (KIND 5 and 6, PASSES 3); MATH_TF32: KIND 5 and 6, TF32
  /// and 3xTF32 (the latter more accurate, for shapes where cuBLAS's TF32
  /// baseline is more accurate than one TF32 pass).
  bool Admits(const Config& config, v1::Math math) const override {
    if (!TensorCore(At(config, "KIND"))) {
      return math == v1::MATH_IEEE_FP32 || math == v1::MATH_FP32_ACCURATE;
    }
    if (At(config, "PASSES") == 3) return math == v1::MATH_FP32_ACCURATE || math == v1::MATH_TF32;
    return math == v1::MATH_TF32;
  }

  /// Flops of one GEMM: 2 * M * N * K (one multiply and one add per term;
  /// the alpha/beta epilogue is not counted, as in cuBLAS benchmarks).
  double Work(const Shape& shape) const override {
    return 2.0 * static_cast<double>(shape[0]) * static_cast<double>(shape[1]) *
           static_cast<double>(shape[2]);
  }

  /// Bytes of A (M*K), B (K*N), C (M*N) and the reference C (M*N), fp32.
  /// ieee_fp32: A, B, C and the baseline's C, 4 bytes each. The fp64 modes
  /// (server/worker/sgemm_problem.cc): A, B, C, the fp64 reference C, and
  /// while the reference is computed A and B in fp64: 12 * (MK + KN + MN).
  int64_t BufferBytes(const Shape& shape, v1::Math math) const override {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    if (math != v1::MATH_IEEE_FP32) return 3 * kBytesPerElement * (m * k + k * n + m * n);
    return kBytesPerElement * (m * k + k * n + 2 * m * n);
  }

  /// max(M*K, K*N, M*N): the largest of A, B and C, in elements.
  int64_t MaxBufferElements(const Shape& shape) const override {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    return std::max({m * k, k * n, m * n});
  }

  /// The space, built from groups (each config once; unused parameters take
  /// the values of FixedFor(); LOOP = MAP = 0 where TM = TN = 1, MAP = 0
  /// where MAP cannot change the mapping). The warp kind comes first, so
  /// that a job finds a fast kernel early and clear losers after it are cut
  /// short (server/worker/measure.cc):
  ///  - warp tiling, large tiles (kWarpTiles): BK 8, 16, STAGES 2..4,
  ///    GROUP 8, MINB 1 and (256 threads or more) 2 or (128 threads) 4;
  ///    for the first four tiles also BK 32, for the first GROUP 1; and
  ///    SPLITK 2..8 with BK 16, STAGES 4 (MINB 1, and 4 for 64x128; the
  ///    first four tiles also with BK 32, STAGES 3, the 16x8-per-thread ones
  ///    also with BK 32, STAGES 4; the 128-row tiles also with STREAMB 1);
  ///    and STREAMK 1 with BK 16, STAGES 4 (the first four tiles also BK 32,
  ///    STAGES 3), MINB StreamKMinBlocks(); for the first
  ///    four tiles also RUL 10 with BK 16, STAGES 4 (plain, MINB 2, stream-K)
  ///    and, for 16x8 per thread, BK 32 with SPLITK 2; RUL 10 twins of
  ///    kRul10Twins;
  ///  - warp tiling, small tiles and split-K (kSplitTiles): (BK, STAGES)
  ///    (16, 4) and (32, 3), SPLITK 1..16 (skinny shapes, small M*N with
  ///    large K, small problems; tiles of up to 32 rows also with STREAMB 1
  ///    and SPLITK 4..16), STREAMK 1 with MINB StreamKMinBlocks() (tiles of
  ///    up to 32 rows also with STREAMB 1), and (16, 8) with SPLITK 1..4;
  ///  - sliced-K (kSliceTiles): SLICEK 2..8 with BK 32, STAGES 3 (SPLITK
  ///    1..4) and 6, and SLICEK 4, 8 with BK 64, STAGES 2 (small problems);
  ///  - gemv (kGemvRowsSet, kGemvColsSet), each with GC 1, 2, 4 and 8 (a job
  ///    on a shape measures those of its small dimension: SuitsShape);
  ///  - the earlier designs, one representative each plus ablations of the
  ///    128x128 2-D tiled kernel: naive, coalesced, classic shared-memory
  ///    tiling, 1-D and 2-D block tiling (BK, MAP, DB, PAD, VEC, LOOP).
  std::vector<Config> Space() const override {
    std::vector<Config> space;
    auto add = [&](const Config& c) {
      if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
    };
    auto base = [](int64_t kind) {
      Config c = FixedFor(kNaive);
      for (const auto& [k, v] : FixedFor(kind)) c[k] = v;
      c["KIND"] = kind;
      return c;
    };
    auto warp = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t ln,
                    int64_t stages, int64_t splitk, int64_t group, int64_t minb,
                    int64_t slicek = 1, int64_t streamb = 0, int64_t streamk = 0,
                    int64_t rul = kDefaultRegisterUsageLevel) {
      Config c = base(kWarpTiled);
      for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                          {"TM", tm}, {"TN", tn}, {"LN", ln}, {"STAGES", stages},
                          {"SPLITK", splitk}, {"GROUP", group}, {"MINB", minb},
                          {"SLICEK", slicek}, {"STREAMB", streamb}, {"STREAMK", streamk},
                          {"RUL", rul}}) {
        c[k] = v;
      }
      add(c);
    };
    auto tiled = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t pad,
                     int64_t vec, int64_t loop, int64_t map, int64_t db) {
      if (tm == 1 && tn == 1) loop = 0;
      if (MapIsIrrelevant(tm, tn)) map = 0;
      Config c = base(kTiled);
      for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                          {"TM", tm}, {"TN", tn}, {"PAD", pad}, {"VEC", vec}, {"LOOP", loop},
                          {"MAP", map}, {"DB", db}}) {
        c[k] = v;
      }
      add(c);
    };
    // Tensor cores (KIND 5), first: the math modes that admit them (Admits)
    // find a fast kernel early; MATH_IEEE_FP32 admits none, so its order is
    // as before.
    auto mma = [&](int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn, int64_t stages,
                   int64_t splitk, int64_t passes, int64_t group, int64_t minb) {
      Config c = base(kMma);
      for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                          {"WM", wm}, {"WN", wn}, {"STAGES", stages}, {"SPLITK", splitk},
                          {"PASSES", passes}, {"GROUP", group}, {"MINB", minb}}) {
        c[k] = v;
      }
      add(c);
    };
    // Hopper's warpgroup tensor cores (KIND 6) before them: Check keeps
    // them to compute capability 9.0. LA and PROMOTE are named only where
    // they are not 1.
    auto wgmma = [&](const std::array<int64_t, 9>& p, int64_t passes, int64_t la,
                     int64_t promote = 1, int64_t ws = 0) {
      Config c = base(kWgmma);
      const auto& [bm, bn, bk, wm, wn, stages, splitk, group, minb] = p;
      for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                          {"WM", wm}, {"WN", wn}, {"STAGES", stages}, {"SPLITK", splitk},
                          {"PASSES", passes}, {"GROUP", group}, {"MINB", minb}}) {
        c[k] = v;
      }
      if (la != 1) c["LA"] = la;
      if (promote != 1) c["PROMOTE"] = promote;
      if (ws != 0) c["WS"] = ws;
      add(c);
    };
    for (const auto& p : kWgmmaRs3xTf32) {
      for (int64_t promote : {1, 2}) wgmma(p, 3, 0, promote);
    }
    for (const auto& p : kWgmma3xTf32) wgmma(p, 3, 1);
    for (const auto& p : kWgmma3xTf32) {
      if (WgmmaLa2(p)) wgmma(p, 3, 2);
    }
    for (const auto& p : kWgmmaRsTf32) {
      for (int64_t ws : {0, 1}) wgmma(p, 1, 0, 1, ws);  // all BN 128: each has a WS twin
    }
    for (const auto& p : kWgmmaTf32) wgmma(p, 1, 1);
    for (const auto& p : kWgmmaTf32) {
      if (WgmmaLa2(p)) wgmma(p, 1, 2);
    }
    for (int64_t passes : {3, 1}) {
      for (const auto& [bm, bn, wm, wn] : kMmaTiles) {
        // BK 16 with 3 or 4 stages, BK 32 with 3. No 64x64 3xTF32 warp
        // tiles: with a fresh accumulator per k8 step (mma_tf32.cuh) they
        // spill at 255 registers (28-48 bytes of stack at BK 16).
        for (auto [bk, stages] : {std::pair<int64_t, int64_t>{16, 3}, {16, 4}, {32, 3}}) {
          if (passes == 3 && wm * wn == 64 * 64) continue;
          mma(bm, bn, bk, wm, wn, stages, 1, passes, 8, 1);
        }
      }
      for (const auto& [bm, bn, wm, wn] : kMmaSplitTiles) {
        const bool small = bm <= 32;
        for (auto [bk, stages] : {std::pair<int64_t, int64_t>{16, 4}, {32, 3}}) {
          mma(bm, bn, bk, wm, wn, stages, 1, passes, small ? 1 : 8, 1);
        }
        for (int64_t splitk : {2, 4, 8}) mma(bm, bn, 32, wm, wn, 3, splitk, passes, 1, 1);
        if (small) mma(bm, bn, 32, wm, wn, 3, 16, passes, 1, 1);
      }
    }
    // Warp tiling, large tiles. MINB = 2 only where it caps the registers
    // (256 threads or more), MINB = 4 for 128 threads (128 registers, 16
    // warps per SM); BK = 32 for the first four tiles, GROUP = 1 for the
    // first only.
    for (size_t i = 0; i < kWarpTiles.size(); ++i) {
      const auto& [bm, bn, tm, tn, ln] = kWarpTiles[i];
      const int64_t threads = (bm / tm) * (bn / tn);
      for (int64_t bk : {8, 16, 32}) {
        if (bk == 32 && i > 3) continue;  // BK 32: the 128x128 to 256x128 tiles (half the barriers)
        for (int64_t stages : {2, 3, 4}) {
          for (int64_t minb : {1, 2, 4}) {
            if (minb == 2 && threads < 256) continue;
            if (minb == 4 && threads != 128) continue;
            warp(bm, bn, bk, tm, tn, ln, stages, 1, 8, minb);
            if (i == 0) warp(bm, bn, bk, tm, tn, ln, stages, 1, 1, minb);
          }
        }
      }
      // Split-K for few output tiles with a large K (M or N of 128).
      for (int64_t splitk : {2, 4, 8}) {
        warp(bm, bn, 16, tm, tn, ln, 4, splitk, 8, 1);
        if (threads == 128 && bm == 64) warp(bm, bn, 16, tm, tn, ln, 4, splitk, 8, 4);  // 128x64 spills
        if (i <= 3) warp(bm, bn, 32, tm, tn, ln, 3, splitk, 8, 1);
        if (i == 2 || i == 3) warp(bm, bn, 32, tm, tn, ln, 4, splitk, 8, 1);  // 16x8 tiles
        if (bm == 128 && i <= 2) warp(bm, bn, 16, tm, tn, ln, 4, splitk, 8, 1, 1, 1);  // M = 128
      }
      // Stream-K: for shapes whose tiles leave a last partial wave.
      const int64_t sk_minb = StreamKMinBlocks(bm, bn, tm, tn);
      warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, sk_minb, 1, 0, 1);
      if (i <= 3) warp(bm, bn, 32, tm, tn, ln, 3, 1, 8, sk_minb, 1, 0, 1);
      // ptxas's register usage level 10 for the large shapes' kernels: the
      // same kernel ran 2.85 ms (NVRTC) and 3.04 ms (nvcc) at 4096^3, so the
      // schedule ptxas picks is worth tuning too.
      if (i <= 3) {
        warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, 1, 1, 0, 0, 10);
        if (threads >= 256 && tm * tn == 64) warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, 2, 1, 0, 0, 10);
        warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, sk_minb, 1, 0, 1, 10);
        if (tm * tn == 128) warp(bm, bn, 32, tm, tn, ln, 4, 2, 8, 1, 1, 0, 0, 10);
      }
    }
    // Warp tiling, small tiles and split-K: (BK, STAGES) = (16, 4) or (32, 3).
    for (const auto& [bm, bn, tm, tn, ln] : kSplitTiles) {
      for (auto [bk, stages] : {std::pair<int64_t, int64_t>{16, 4}, {32, 3}}) {
        for (int64_t splitk : {1, 2, 4, 8, 16}) warp(bm, bn, bk, tm, tn, ln, stages, splitk, 1, 1);
        // Few rows (M = 16, 32): B is read once, streamed with evict-first.
        if (bm <= 32) {
          for (int64_t splitk : {4, 8, 16}) warp(bm, bn, bk, tm, tn, ln, stages, splitk, 1, 1, 1, 1);
        }
        // Stream-K.
        const int64_t sk_minb = StreamKMinBlocks(bm, bn, tm, tn);
        warp(bm, bn, bk, tm, tn, ln, stages, 1, 1, sk_minb, 1, 0, 1);
        if (bm <= 32) warp(bm, bn, bk, tm, tn, ln, stages, 1, 1, sk_minb, 1, 1, 1);
      }
      // A deep pipeline (7 K tiles in flight): few K tiles per block
      // wait on memory latency rather than on the SM.
      for (int64_t splitk : {1, 2, 4}) warp(bm, bn, 16, tm, tn, ln, 8, splitk, 1, 1);
    }
    // Sliced-K: 2 to 8 thread groups per tile, for problems with few tiles
    // (alone or with split-K); BK 32 so that a group has 4 to 16 k per tile,
    // and BK 64 for 4 and 8 groups.
    for (const auto& [bm, bn, tm, tn, ln] : kSliceTiles) {
      for (int64_t slicek : {2, 4, 8}) {
        if (slicek == 8 && tm * tn > 32) continue;  // 8 x 64 threads of 8x8: spills at 128
        for (int64_t splitk : {1, 2, 4}) warp(bm, bn, 32, tm, tn, ln, 3, splitk, 1, 1, slicek);
        warp(bm, bn, 32, tm, tn, ln, 6, 1, 1, 1, slicek);
        if (slicek >= 4) warp(bm, bn, 64, tm, tn, ln, 2, 1, 1, 1, slicek);
      }
    }
    for (const auto& [bm, bn, bk, tm, tn, ln, stages, splitk, group, minb, slicek, streamb] :
         kRul10Twins) {
      warp(bm, bn, bk, tm, tn, ln, stages, splitk, group, minb, slicek, streamb, 0, 10);
    }
    // Matrix-vector shapes.
    for (int64_t gc : {1, 2, 4, 8}) {
      for (int64_t side : {kGemvRows, kGemvCols}) {
        for (const auto& [gw, gr, gu, splitk] : side == kGemvRows ? kGemvRowsSet : kGemvColsSet) {
          Config c = base(kGemv);
          for (auto [k, v] : {std::pair<const char*, int64_t>{"GSIDE", side}, {"GW", gw},
                              {"GR", gr}, {"GU", gu}, {"GC", gc}, {"SPLITK", splitk}}) {
            c[k] = v;
          }
          add(c);
        }
      }
    }
    // The earlier designs.
    for (int64_t kind : {kNaive, kCoalesced}) {
      Config c = base(kind);
      c["BM"] = 16;
      c["BN"] = 16;
      add(c);
    }
    tiled(32, 32, 32, 1, 1, 4, 1, 0, 0, 1);     // classic shared-memory tiling
    tiled(64, 64, 8, 8, 1, 4, 1, 0, 1, 0);      // 1-D block tiling
    tiled(128, 64, 16, 8, 1, 4, 1, 0, 1, 0);
    for (size_t i = 0; i < kCore2DTiles; ++i) {  // 2-D block tiling
      const auto& [bm, bn, tm, tn] = k2DTiles[i];
      for (int64_t bk : {8, 16}) {
        for (int64_t db : {0, 1}) tiled(bm, bn, bk, tm, tn, 4, 4, 0, 1, db);
      }
    }
    // Ablations of the 128x128x8, 8x8 kernel: one design choice undone each.
    tiled(128, 128, 8, 8, 8, 0, 4, 0, 1, 0);  // no padding
    tiled(128, 128, 8, 8, 8, 4, 1, 0, 1, 0);  // scalar global loads
    tiled(128, 128, 8, 8, 8, 4, 4, 1, 1, 0);  // k-innermost loop
    tiled(128, 128, 8, 8, 8, 4, 4, 0, 0, 0);  // consecutive rows/columns per thread
    return space;
  }

  /// OK if the config runs on `device` for every shape. FAILED_PRECONDITION,
  /// naming the cause, for: an unknown or missing parameter or a value outside
  /// params(); a parameter the kind does not use with another value than
  /// FixedFor(kind); warp kind: see CheckWarp(); gemv kind: see CheckGemv();
  /// threads per block above the device limit, below or not a multiple of the
  /// warp (32); BM % TM or BN % TN != 0; BK % VEC != 0; A or B tile loads that
  /// do not divide evenly (BM*BK and BN*BK multiples of THREADS*VEC); static
  /// shared memory above shared_memory_per_block; RegisterEstimate() above 255
  /// or, times the threads, above registers_per_block.
  absl::Status Check(const Config& config, const v1::Device& device) const override {
    if (auto s = CheckParams(config); !s.ok()) return s;
    const int64_t kind = config.at("KIND");
    for (const auto& [key, value] : FixedFor(kind)) {
      if (At(config, key) != value) {
        return absl::FailedPreconditionError(
            absl::StrCat(key, "=", At(config, key), " is unused by KIND=", kind, " (",
                         KindName(kind), "), which takes ", key, "=", value));
      }
    }
    if (kind != kGemv) {
      for (const char* key : kGemvOnly) {
        if (At(config, key) != 0) {
          return absl::FailedPreconditionError(absl::StrCat(
              key, "=", At(config, key), " is unused by KIND=", kind, " (", KindName(kind),
              "), which takes ", key, "=0"));
        }
      }
    }
    for (const char* key : kWgmmaOnly) {
      if (kind != kWgmma && At(config, key) != 1) {
        return absl::FailedPreconditionError(
            absl::StrCat(key, "=", At(config, key), " is unused by KIND=", kind, " (",
                         KindName(kind), "), which takes ", key, "=1"));
      }
    }
    if (kind != kWgmma && At(config, "WS") != 0) {
      return absl::FailedPreconditionError(absl::StrCat("WS=", At(config, "WS"), " is unused by KIND=",
                                                        kind, " (", KindName(kind), "), which takes WS=0"));
    }
    if (kind == kMma) return CheckMma(config, device);
    if (kind == kWgmma) return CheckWgmma(config, device);
    for (const char* key : kMmaOnly) {
      if (At(config, key) != 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            key, "=", At(config, key), " is unused by KIND=", kind, " (", KindName(kind),
            "), which takes ", key, "=0"));
      }
    }
    if (kind == kWarpTiled) return CheckWarp(config, device);
    if (kind == kGemv) return CheckGemv(config, device);
    if (kind != kTiled) {
      return CheckThreads(config.at("BM") * config.at("BN"),
                          absl::StrCat(config.at("BM"), "x", config.at("BN")), device);
    }

    const Tiled t = GetTiled(config);
    if (t.bm % t.tm != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("BM=", t.bm, " is not a multiple of TM=", t.tm));
    }
    if (t.bn % t.tn != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("BN=", t.bn, " is not a multiple of TN=", t.tn));
    }
    const int64_t threads = t.Threads();
    if (auto s = CheckThreads(threads,
                              absl::StrCat("(BM/TM)*(BN/TN) = ", t.bm / t.tm, "*", t.bn / t.tn),
                              device);
        !s.ok()) {
      return s;
    }
    if (t.bk % t.vec != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("BK=", t.bk, " is not a multiple of VEC=", t.vec));
    }
    for (auto [tile, what] : {std::pair{t.bm * t.bk, "A"}, std::pair{t.bn * t.bk, "B"}}) {
      if (tile % (threads * t.vec) != 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the ", what, " tile (", tile, " floats) does not divide evenly into loads of VEC=",
            t.vec, " floats by ", threads, " threads"));
      }
    }
    const int64_t smem = t.SharedBytes();
    if (smem > device.shared_memory_per_block()) {
      return absl::FailedPreconditionError(
          absl::StrCat(smem, " bytes of shared memory (", t.db ? 2 : 1,
                       " x BK*(BM+PAD + BN+PAD) floats) exceed the device's per-block limit of ",
                       device.shared_memory_per_block()));
    }
    const int64_t regs = t.RegisterEstimate();
    if (regs > kMaxRegistersPerThread) {
      return absl::FailedPreconditionError(
          absl::StrCat("an estimated ", regs, " registers per thread (", t.tm * t.tn,
                       " accumulators + ", t.tm + t.tn, " operands + ", kRegistersPerStagedFloat,
                       " x ", t.Staged(), " staged floats + ", kRegisterOverhead,
                       ") exceed the limit of ", kMaxRegistersPerThread));
    }
    if (regs * threads > device.registers_per_block()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "an estimated ", regs, " registers per thread x ", threads, " threads = ", regs * threads,
          " registers exceed the device's per-block limit of ", device.registers_per_block()));
    }
    return absl::OkStatus();
  }

  /// "sgemm_warp_<BM>x<BN>x<BK>_<TM>x<TN>_ln<LN>_s<STAGES>_g<GROUP>_b<MINB>"
  /// with "_sl<SLICEK>" and "_sk<SPLITK>" appended where above 1, "_sb"
  /// where STREAMB=1, "_st" where STREAMK=1 and "_r<RUL>" where RUL is not 5,
  /// "sgemm_naive_<BM>x<BN>", "sgemm_coalesced_<BM>x<BN>", or
  /// "sgemm_tiled_<BM>x<BN>x<BK>_<TM>x<TN>_p<PAD>_v<VEC>_l<LOOP>_m<MAP>" with
  /// "_db" appended when DB=1, e.g. "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1_db",
  /// or "sgemm_gemv_<rows|cols>_w<GW>_r<GR>_u<GU>_c<GC>" with "_sk<SPLITK>"
  /// where above 1, e.g. "sgemm_gemv_cols_w8_r1_u2_c1_sk4", or, the
  /// tensor-core kinds, "sgemm_<mma|wgmma>_<BM>x<BN>x<BK>_w<WM>x<WN>_s<STAGES>
  /// _g<GROUP>_b<MINB>" with "_sk<SPLITK>" where above 1, then "_tf32" or
  /// "_3xtf32", e.g. "sgemm_wgmma_128x128x32_w64x128_s3_g8_b1_3xtf32", and
  /// "_la<LA>" where LA is not 1, e.g.
  /// "sgemm_wgmma_256x128x16_w64x128_s4_g8_b1_tf32_la2", and "_p<PROMOTE>"
  /// where PROMOTE is not 1, e.g.
  /// "sgemm_wgmma_128x128x32_w128x64_s4_g1_b1_3xtf32_la0_p2".
  std::string ConfigName(const Config& config) const override {
    const int64_t kind = At(config, "KIND");
    if (kind == kGemv) {
      std::string name = absl::StrCat("sgemm_gemv_", GemvKernel(config), "_w", At(config, "GW"),
                                      "_r", At(config, "GR"), "_u", At(config, "GU"), "_c",
                                      At(config, "GC"));
      if (At(config, "SPLITK") > 1) absl::StrAppend(&name, "_sk", At(config, "SPLITK"));
      return name;
    }
    if (TensorCore(kind)) {
      std::string name = absl::StrCat(
          "sgemm_", KindName(kind), "_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_w",
          At(config, "WM"), "x", At(config, "WN"), "_s", At(config, "STAGES"), "_g",
          At(config, "GROUP"), "_b", At(config, "MINB"));
      if (At(config, "SPLITK") > 1) absl::StrAppend(&name, "_sk", At(config, "SPLITK"));
      absl::StrAppend(&name, At(config, "PASSES") == 3 ? "_3xtf32" : "_tf32");
      if (At(config, "LA") != 1) absl::StrAppend(&name, "_la", At(config, "LA"));
      if (At(config, "PROMOTE") != 1) absl::StrAppend(&name, "_p", At(config, "PROMOTE"));
      if (At(config, "WS") != 0) absl::StrAppend(&name, "_ws");
      return name;
    }
    if (kind == kWarpTiled) {
      std::string name = absl::StrCat(
          "sgemm_warp_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_",
          At(config, "TM"), "x", At(config, "TN"), "_ln", At(config, "LN"), "_s",
          At(config, "STAGES"), "_g", At(config, "GROUP"), "_b", At(config, "MINB"));
      if (At(config, "SLICEK") > 1) absl::StrAppend(&name, "_sl", At(config, "SLICEK"));
      if (At(config, "SPLITK") > 1) absl::StrAppend(&name, "_sk", At(config, "SPLITK"));
      if (At(config, "STREAMB") != 0) absl::StrAppend(&name, "_sb");
      if (At(config, "STREAMK") != 0) absl::StrAppend(&name, "_st");
      if (At(config, "RUL") != kDefaultRegisterUsageLevel) {
        absl::StrAppend(&name, "_r", At(config, "RUL"));
      }
      return name;
    }
    if (kind != kTiled) {
      return absl::StrCat("sgemm_", KindName(kind), "_", At(config, "BM"), "x", At(config, "BN"));
    }
    std::string name = absl::StrCat(
        "sgemm_tiled_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_",
        At(config, "TM"), "x", At(config, "TN"), "_p", At(config, "PAD"), "_v",
        At(config, "VEC"), "_l", At(config, "LOOP"), "_m", At(config, "MAP"));
    if (At(config, "DB") != 0) absl::StrAppend(&name, "_db");
    return name;
  }

  /// The whole of sgemm.cuh and "sgemm_naive<BM,BN>", "sgemm_coalesced<BM,BN>",
  /// "sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>" or
  /// "sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>";
  /// options: "-Xptxas=--register-usage-level=<RUL>" where RUL is not 5.
  /// The gemv kind: sgemm.cuh with gemv.cuh appended, and
  /// "sgemm_gemv_<rows|cols><GW,GR,GU,GC,SPLITK,MINB>" (MINB:
  /// Gemv::MinBlocks()). The tensor-core kind: sgemm.cuh with mma_tf32.cuh
  /// appended, and "sgemm_mma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB>".
  /// The wgmma kind: sgemm.cuh, mma_tf32.cuh (its Split) and wgmma_tf32.cuh,
  /// "sgemm_wgmma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB,LA>", and the
  /// option "--gpu-architecture=sm_90a" (kWgmmaArchOption).
  KernelSource Source(const Config& config) const override {
    const int64_t kind = At(config, "KIND");
    std::string expr;
    std::vector<std::string> options;
    if (kind == kGemv) {
      std::vector<int64_t> args;
      for (const char* p : {"GW", "GR", "GU", "GC", "SPLITK"}) args.push_back(At(config, p));
      args.push_back(GetGemv(config).MinBlocks());
      return {{"sgemm/sgemm.cuh", "sgemm/warp.cuh", "sgemm/gemv.cuh"},
              absl::StrCat("sgemm_gemv_", GemvKernel(config), "<", absl::StrJoin(args, ","), ">"),
              {}};
    }
    if (kind == kMma) {
      std::vector<int64_t> args;
      for (const char* p :
           {"BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK", "PASSES", "GROUP", "MINB"}) {
        args.push_back(At(config, p));
      }
      return {{"sgemm/sgemm.cuh", "sgemm/warp.cuh", "sgemm/mma_tf32.cuh"},
              absl::StrCat("sgemm_mma<", absl::StrJoin(args, ","), ">"), {}};
    }
    if (kind == kWgmma) {
      std::vector<int64_t> args;
      std::string entry = "sgemm_wgmma";
      if (At(config, "WS") != 0) {  // its own kernel, which takes A's tensor map after C
        entry = "sgemm_wgmma_ws";
        for (const char* p : {"BM", "STAGES", "SPLITK", "GROUP"}) args.push_back(At(config, p));
      } else {
        for (const char* p :
             {"BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK", "PASSES", "GROUP", "MINB", "LA"}) {
          args.push_back(At(config, p));
        }
        // PROMOTE: the template's default 1 unnamed (the expression of before it).
        if (At(config, "PROMOTE") != 1) args.push_back(At(config, "PROMOTE"));
      }
      return {{"sgemm/sgemm.cuh", "sgemm/warp.cuh", "sgemm/mma_tf32.cuh", "sgemm/wgmma_tf32.cuh",
               "sgemm/wgmma_tile.cuh", "sgemm/wgmma_rs.cuh", "sgemm/wgmma_kernels.cuh"},
              absl::StrCat(entry, "<", absl::StrJoin(args, ","), ">"),
              {std::string(kWgmmaArchOption)}};
    }
    if (kind == kWarpTiled) {
      std::vector<int64_t> args;
      for (const char* p :
           {"BM", "BN", "BK", "TM", "TN", "LN", "STAGES", "SPLITK", "GROUP", "MINB", "SLICEK",
            "STREAMB", "STREAMK"}) {
        args.push_back(At(config, p));
      }
      expr = absl::StrCat("sgemm_warp<", absl::StrJoin(args, ","), ">");
      if (At(config, "RUL") != kDefaultRegisterUsageLevel) {
        options.push_back(absl::StrCat("-Xptxas=--register-usage-level=", At(config, "RUL")));
      }
    } else if (kind != kTiled) {
      expr = absl::StrCat("sgemm_", KindName(kind), "<", At(config, "BM"), ",", At(config, "BN"),
                          ">");
    } else {
      std::vector<int64_t> args;
      for (const char* p : {"BM", "BN", "BK", "TM", "TN", "PAD", "VEC", "LOOP", "MAP", "DB"}) {
        args.push_back(At(config, p));
      }
      expr = absl::StrCat("sgemm_tiled<", absl::StrJoin(args, ","), ">");
    }
    return {{"sgemm/sgemm.cuh", "sgemm/warp.cuh"}, std::move(expr), std::move(options)};
  }

  /// grid = {ceil(N / BN), ceil(M / BM), 1}. Where ceil(M / BM) exceeds 65535
  /// (M > 65535 * BM), grid = {ceil(N / BN), 65535, ceil(ceil(M / BM) / 65535)}:
  /// the kernels take blockIdx.z * gridDim.y + blockIdx.y as the row block and
  /// return past the last one. block = {BM, BN, 1} for naive (x along rows),
  /// {BN, BM, 1} for coalesced (x along columns), {(BM/TM)*(BN/TN), 1, 1} for
  /// tiled; static shared memory only (0 dynamic).
  /// Warp kind: grid = {ceil(M / BM) * ceil(N / BN), SPLITK, 1}, block =
  /// {SLICEK*(BM/TM)*(BN/TN), 1, 1}, dynamic shared memory
  /// Warp::SharedBytes(), and prescale_output when SPLITK > 1 (the blocks add
  /// into C with atomics). STREAMK=1: grid = {G, ceil(tiles / G), 1} for
  /// G = min(MINB * SMs, tiles * ceil(K / BK)), the block slots
  /// __launch_bounds__ lets the SMs hold (rows of whole data-parallel
  /// waves, then G blocks sharing the last wave; G = tiles where the
  /// device's SM count is unknown), and prescale_output.
  /// Gemv kind: grid = {ceil(M / GR), SPLITK, 1} (rows) or {ceil(N /
  /// (128*GR)), SPLITK, 1} (cols), block = {32*GW, 1, 1}, static shared memory
  /// only, prescale_output when SPLITK > 1. Tensor-core kinds: grid =
  /// {ceil(M / BM) * ceil(N / BN), SPLITK, 1}, block = {(BM/WM)*(BN/WN)*32,
  /// 1, 1} (mma: warps) or {(BM/WM)*(BN/WN)*128, 1, 1} (wgmma: warpgroups),
  /// dynamic shared memory MmaTile/WgmmaTile::SharedBytes(), prescale_output
  /// when SPLITK > 1.
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                              const v1::Device& device) const override {
    const int64_t kind = At(config, "KIND");
    const int64_t bm = At(config, "BM"), bn = At(config, "BN");
    if (kind == kGemv) {
      const Gemv gv = GetGemv(config);
      v1::LaunchGeometry g;
      g.add_grid(static_cast<uint32_t>(gv.GridX(shape)));
      g.add_grid(static_cast<uint32_t>(gv.splitk));
      g.add_grid(1);
      g.add_block(static_cast<uint32_t>(gv.Threads()));
      g.add_block(1);
      g.add_block(1);
      g.set_dynamic_shared_bytes(0);
      g.set_prescale_output(gv.splitk > 1);
      return g;
    }
    if (kind == kWgmma) {
      const WgmmaTile t = GetWgmma(config);
      v1::LaunchGeometry g;
      for (int64_t d : {CeilDiv(shape[0], bm) * CeilDiv(shape[1], bn),
                        std::max<int64_t>(t.splitk, 1), int64_t{1}}) {
        g.add_grid(static_cast<uint32_t>(d));
      }
      for (int64_t d : {t.Threads(), int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(d));
      g.set_dynamic_shared_bytes(static_cast<uint32_t>(t.SharedBytes()));
      g.set_prescale_output(t.splitk > 1);
      if (t.ws != 0) {  // A (M x K, row-major) by TMA: BM rows of 32 floats a copy
        v1::TensorMap* a = g.add_tensor_maps();
        a->set_pointer_arg(kSgemmArgA);
        a->add_dims(static_cast<uint64_t>(shape[2]));
        a->add_dims(static_cast<uint64_t>(shape[0]));
        a->add_strides_bytes(static_cast<uint64_t>(shape[2]) * kBytesPerElement);
        a->add_box(static_cast<uint32_t>(t.bk));
        a->add_box(static_cast<uint32_t>(t.bm));
        a->set_swizzle_bytes(128);
        a->set_param(static_cast<uint32_t>(Arguments().size()));  // after C
      }
      return g;
    }
    if (kind == kMma) {
      const MmaTile t = GetMma(config);
      v1::LaunchGeometry g;
      for (int64_t d : {CeilDiv(shape[0], bm) * CeilDiv(shape[1], bn),
                        std::max<int64_t>(t.splitk, 1), int64_t{1}}) {
        g.add_grid(static_cast<uint32_t>(d));
      }
      for (int64_t d : {t.Threads(), int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(d));
      g.set_dynamic_shared_bytes(static_cast<uint32_t>(t.SharedBytes()));
      g.set_prescale_output(t.splitk > 1);
      return g;
    }
    if (kind == kWarpTiled) {
      const Warp w = GetWarp(config);
      const int64_t tiles = CeilDiv(shape[0], bm) * CeilDiv(shape[1], bn);
      int64_t blocks = tiles, rows = std::max<int64_t>(w.splitk, 1);
      if (w.streamk != 0 && device.sm_count() > 0) {
        blocks = std::min(w.minb * device.sm_count(), tiles * CeilDiv(shape[2], w.bk));
        rows = CeilDiv(tiles, blocks);
      }
      v1::LaunchGeometry g;
      g.add_grid(static_cast<uint32_t>(blocks));
      g.add_grid(static_cast<uint32_t>(rows));
      g.add_grid(1);
      g.add_block(static_cast<uint32_t>(w.tm > 0 && w.tn > 0 ? w.Threads() : 0));
      g.add_block(1);
      g.add_block(1);
      g.set_dynamic_shared_bytes(static_cast<uint32_t>(w.SharedBytes()));
      g.set_prescale_output(w.splitk > 1 || w.streamk != 0);
      return g;
    }
    const int64_t row_blocks = CeilDiv(shape[0], bm);
    const int64_t grid_y = std::min(row_blocks, kMaxGridY);
    v1::LaunchGeometry g;
    g.add_grid(static_cast<uint32_t>(CeilDiv(shape[1], bn)));
    g.add_grid(static_cast<uint32_t>(grid_y));
    g.add_grid(static_cast<uint32_t>(CeilDiv(row_blocks, grid_y)));
    switch (kind) {
      case kNaive:
        g.add_block(static_cast<uint32_t>(bm));
        g.add_block(static_cast<uint32_t>(bn));
        break;
      case kCoalesced:
        g.add_block(static_cast<uint32_t>(bn));
        g.add_block(static_cast<uint32_t>(bm));
        break;
      default: {
        const int64_t tm = At(config, "TM"), tn = At(config, "TN");
        g.add_block(static_cast<uint32_t>(tm > 0 && tn > 0 ? (bm / tm) * (bn / tn) : 0));
        g.add_block(1);
      }
    }
    g.add_block(1);
    g.set_dynamic_shared_bytes(0);
    return g;
  }

  /// The kernels' common signature, in order (WS=1 kernels take A's tensor
  /// map after it: LaunchGeometry.tensor_maps).
  std::vector<std::string> Arguments() const override {
    return {"int M", "int N", "int K", "float alpha", "const float* A", "const float* B",
            "float beta", "float* C"};
  }

  /// The gemv kind only where its small dimension n (rows: N, cols: M) is at
  /// most 8 and its chunk fits it: n <= GC < 2n (GC 4 for n = 3 or 4; a
  /// smaller GC takes several passes over the big operand, a larger one more
  /// registers for nothing). FAILED_PRECONDITION naming the rule otherwise;
  /// every other config suits every shape.
  absl::Status SuitsShape(const Config& config, const Shape& shape) const override {
    if (At(config, "KIND") != kGemv || shape.size() != 3) return absl::OkStatus();
    const Gemv gv = GetGemv(config);
    const bool rows = gv.side == kGemvRows;
    const int64_t n = rows ? shape[1] : shape[0];
    if (n > kGemvMaxSmall) {
      return absl::FailedPreconditionError(
          absl::StrCat("gemv ", GemvKernel(config), " is for ", rows ? "N" : "M", " <= ",
                       kGemvMaxSmall, ", not ", n));
    }
    if (gv.gc < n || gv.gc >= 2 * n) {
      return absl::FailedPreconditionError(absl::StrCat(
          "gemv GC=", gv.gc, " is not the chunk for ", rows ? "N" : "M", " = ", n));
    }
    return absl::OkStatus();
  }

 private:
  /// "rows" (GSIDE 0) or "cols" (GSIDE 1).
  static const char* GemvKernel(const Config& config) {
    return At(config, "GSIDE") == kGemvCols ? "cols" : "rows";
  }

  /// The gemv kind's rules: GW, GR, GU and GC at least 1 (0 is the other
  /// kinds' value); GR at most 2 on the cols side (its accumulators are
  /// 4*GR per row of C); the threads (32*GW) within the device limit; the
  /// static shared memory within the per-block limit; the register estimate
  /// (Gemv::RegisterEstimate) within 255 and, times the threads, the
  /// device's per-block registers.
  static absl::Status CheckGemv(const Config& config, const v1::Device& device) {
    const Gemv g = GetGemv(config);
    if (g.gw < 1 || g.gr < 1 || g.gu < 1 || g.gc < 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KIND=4 needs GW, GR, GU and GC of 1 or more, not ", g.gw, ", ", g.gr, ", ", g.gu,
          ", ", g.gc));
    }
    if (g.side == kGemvCols && g.gr > 2) {
      return absl::FailedPreconditionError(
          absl::StrCat("GR=", g.gr, " on the cols side (GSIDE=1) exceeds 2"));
    }
    if (auto s = CheckThreads(g.Threads(), absl::StrCat("32*GW = 32*", g.gw), device); !s.ok()) {
      return s;
    }
    if (g.SharedBytes() > device.shared_memory_per_block()) {
      return absl::FailedPreconditionError(
          absl::StrCat(g.SharedBytes(), " bytes of shared memory exceed the device's per-block ",
                       "limit of ", device.shared_memory_per_block()));
    }
    const int64_t regs = g.RegisterEstimate();
    if (regs > kMaxRegistersPerThread || regs * g.Threads() > device.registers_per_block()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "an estimated ", regs, " registers per thread (", g.Accumulators(), " accumulators + ",
          g.LoadedFloats(), " loaded floats + 2 x ", g.RowPointers(), " row pointers + ",
          kGemvRegisterOverhead, ") x ", g.Threads(),
          " threads exceed the limit of ", kMaxRegistersPerThread, " a thread or ",
          device.registers_per_block(), " a block"));
    }
    return absl::OkStatus();
  }

  /// The warp kind's rules: compute capability 8.0+ (cp.async); TM and TN
  /// multiples of 4; LN > 0; BM % (32/LN*TM) == 0 and BN % (LN*TN) == 0 (warp
  /// tiles tile the block); the threads, and MINB blocks of them within the
  /// SM's thread limit; BK % 8 == 0; BK % SLICEK == 0; STREAMK=1 only with
  /// SPLITK = SLICEK = 1; BM*BK a multiple of THREADS and BN*BK of 4*THREADS
  /// (even copies); dynamic shared memory up to the opt-in limit, and MINB
  /// blocks of it (plus the 1 KiB reserved per block) within an SM (taken as
  /// the opt-in limit + 1 KiB); the register estimate within the cap that
  /// __launch_bounds__(THREADS, MINB) sets. So MINB blocks fit in an SM, as
  /// stream-K's one-wave grid needs.
  static absl::Status CheckWarp(const Config& config, const v1::Device& device) {
    const Warp w = GetWarp(config);
    if (device.cc_major() < 8) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KIND=3 needs cp.async (compute capability 8.0+), the device is ", device.cc_major(),
          ".", device.cc_minor()));
    }
    if (w.tm % 4 != 0 || w.tn % 4 != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("TM=", w.tm, " and TN=", w.tn, " must be multiples of 4 (float4 reads)"));
    }
    if (w.ln == 0 || w.stages == 0) {
      return absl::FailedPreconditionError("KIND=3 needs LN > 0 and STAGES > 0");
    }
    if (w.bm % w.Wm() != 0 || w.bn % w.Wn() != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("the warp tile ", w.Wm(), "x", w.Wn(), " (32/LN*TM x LN*TN) does not tile ",
                       w.bm, "x", w.bn));
    }
    const int64_t threads = w.Threads();
    if (auto s = CheckThreads(threads, absl::StrCat("SLICEK*(BM/TM)*(BN/TN) = ", w.slicek, "*",
                                                    w.bm / w.tm, "*", w.bn / w.tn),
                              device);
        !s.ok()) {
      return s;
    }
    if (device.max_threads_per_sm() > 0 && w.minb * threads > device.max_threads_per_sm()) {
      return absl::FailedPreconditionError(
          absl::StrCat("MINB=", w.minb, " blocks of ", threads, " threads exceed the SM's ",
                       device.max_threads_per_sm(), " threads"));
    }
    if (w.bk % 8 != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("BK=", w.bk, " is not a multiple of 8 (A is copied 8 k at a time)"));
    }
    if (w.bk % w.slicek != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("SLICEK=", w.slicek, " does not divide BK=", w.bk));
    }
    if (w.streamk != 0 && (w.splitk != 1 || w.slicek != 1)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "STREAMK=1 takes SPLITK=1 and SLICEK=1 (stream-K splits K itself), not SPLITK=",
          w.splitk, " and SLICEK=", w.slicek));
    }
    if ((w.bm * w.bk) % threads != 0 || (w.bn * w.bk) % (4 * threads) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the A tile (", w.bm * w.bk, " floats, 4-byte copies) or the B tile (", w.bn * w.bk,
          " floats, 16-byte copies) does not divide evenly among ", threads, " threads"));
    }
    const int64_t smem = w.SharedBytes();
    if (smem > device.shared_memory_per_block_optin()) {
      return absl::FailedPreconditionError(absl::StrCat(
          smem, " bytes of shared memory (STAGES x BK*(BM+4 + BN) + (SLICEK-1) x BM*BN "
                "floats) exceed the device's opt-in per-block limit of ",
          device.shared_memory_per_block_optin()));
    }
    if (w.minb * (smem + kReservedSharedPerBlock) >
        device.shared_memory_per_block_optin() + kReservedSharedPerBlock) {
      return absl::FailedPreconditionError(
          absl::StrCat("MINB=", w.minb, " blocks of ", smem,
                       " bytes of shared memory do not fit in one SM"));
    }
    const int64_t regs = w.RegisterEstimate();
    const int64_t cap = w.RegisterCap(device.registers_per_sm() > 0 ? device.registers_per_sm()
                                                                    : 65536);
    if (regs > cap) {
      return absl::FailedPreconditionError(absl::StrCat(
          "an estimated ", regs, " registers per thread (", w.tm * w.tn, " accumulators + ",
          w.tm + w.tn, " operands + ", kWarpRegisterOverhead, ") exceed the cap of ", cap,
          " that MINB=", w.minb, " blocks of ", threads, " threads per SM set (spills)"));
    }
    return absl::OkStatus();
  }

  /// The tensor-core kind's rules: compute capability 8.0+ (cp.async,
  /// mma.sync TF32); PASSES 1 or 3; WM, WN > 0 with WM % 16 == 0, WN % 8 ==
  /// 0, BM % WM == 0 and BN % WN == 0 (warp tiles tile the block); BN % 32
  /// == 0 (conflict-free B fragments); BK 16 or 32; STAGES >= 2; the
  /// threads within the device's limits, MINB blocks of them within the SM's;
  /// BM*BK/4 and BK*BN/4 multiples of the threads (even 16-byte copies);
  /// dynamic shared memory within the opt-in limit and MINB blocks of it
  /// within an SM; the register estimate within the cap that
  /// __launch_bounds__(THREADS, MINB) sets.
  static absl::Status CheckMma(const Config& config, const v1::Device& device) {
    const MmaTile t = GetMma(config);
    if (device.cc_major() < 8) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KIND=5 needs mma.sync TF32 and cp.async (compute capability 8.0+), the device is ",
          device.cc_major(), ".", device.cc_minor()));
    }
    if (t.passes != 1 && t.passes != 3) {
      return absl::FailedPreconditionError(absl::StrCat("KIND=5 takes PASSES 1 or 3, not ", t.passes));
    }
    if (t.wm <= 0 || t.wn <= 0 || t.wm % 16 != 0 || t.wn % 8 != 0 || t.bm % t.wm != 0 ||
        t.bn % t.wn != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the warp tile ", t.wm, "x", t.wn, " (multiples of 16x8) does not tile ", t.bm, "x", t.bn));
    }
    if (t.bn % 32 != 0 || (t.bk != 16 && t.bk != 32) || t.stages < 2) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KIND=5 takes BN a multiple of 32, BK 16 or 32 and STAGES >= 2, not BN=", t.bn,
          ", BK=", t.bk, ", STAGES=", t.stages));
    }
    const int64_t threads = t.Threads();
    if ((t.bm * t.bk / 4) % threads != 0 || (t.bk * t.bn / 4) % threads != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the A tile (", t.bm * t.bk, " floats) or the B tile (", t.bk * t.bn,
          " floats) does not divide into 16-byte copies evenly among ", threads, " threads"));
    }
    return CheckBlock({threads, absl::StrCat("(BM/WM)*(BN/WN)*32 = ", t.bm / t.wm, "*", t.bn / t.wn, "*32"),
                       t.minb, t.SharedBytes(), "STAGES x (BM*(BK+4) + BK*(BN+8)) floats",
                       t.RegisterEstimate(),
                       absl::StrCat(t.wm * t.wn / kWarp, " accumulators + ", kMmaRegisterOverhead)},
                      device);
  }

  /// The wgmma kind's rules: compute capability 9.0 exactly (wgmma is an
  /// sm_90a feature: the cubin runs on no other GPU); PASSES 1 or 3; WM 64
  /// or 128, WN 64, 128 or 256 (the wgmma N the kernel instantiates), BM %
  /// WM == 0, BN % WN == 0; BK 16 or 32 (64- or 128-byte swizzled rows);
  /// STAGES >= 3; the threads within the device's limits, MINB blocks of
  /// them within the SM's; BM*BK/4 and BK*BN/4 multiples of the threads
  /// (even float4 copies); dynamic shared memory within the opt-in limit
  /// and MINB blocks of it within an SM; the register estimate within the
  /// cap that __launch_bounds__(THREADS, MINB) sets (the estimate counts
  /// LA's register sets; LA 0, 1 or 2 is CheckParams'). LA=0: BK 32, WM =
  /// BM (128 or 256), WN 64, STAGES >= 4 (RsTile's K loop copies STAGES - 2
  /// tiles ahead on its 4-byte path), and 3xTF32 only at 128x128. PROMOTE
  /// other than 1: 3xTF32 with LA=0 only.
  static absl::Status CheckWgmma(const Config& config, const v1::Device& device) {
    const WgmmaTile t = GetWgmma(config);
    if (device.cc_major() != 9 || device.cc_minor() != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KIND=6 needs wgmma (sm_90a: compute capability 9.0), the device is ",
          device.cc_major(), ".", device.cc_minor()));
    }
    if (t.passes != 1 && t.passes != 3) {
      return absl::FailedPreconditionError(absl::StrCat("KIND=6 takes PASSES 1 or 3, not ", t.passes));
    }
    if (t.ws != 0 && (t.ws != 1 || t.la != 0 || t.passes != 1 || t.bn != 128 || t.minb != 1)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "WS=", t.ws, " (warp-specialized) is TF32's with LA=0, BN 128 (two consumer "
          "warpgroups) and MINB 1; this config has PASSES=", t.passes, ", LA=", t.la, ", BN=", t.bn,
          ", MINB=", t.minb, ", which take WS=0"));
    }
    if (At(config, "PROMOTE") != 1 && (t.la != 0 || t.passes != 3)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "PROMOTE=", At(config, "PROMOTE"), " is 3xTF32's with LA=0 (PASSES 3); this config has "
          "PASSES=", t.passes, ", LA=", t.la, ", which take PROMOTE=1"));
    }
    if (t.la == 0 && (t.bk != 32 || t.wm != t.bm || t.wn != 64 || (t.bm != 128 && t.bm != 256) ||
                      (t.passes == 3 && (t.bm != 128 || t.bn != 128)))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "LA=0 (the register-A form) takes BK 32, WM = BM (128 or 256) and WN 64 (3xTF32: BM = "
          "BN = 128), not "
          "BK=", t.bk, ", ", t.wm, "x", t.wn, " warpgroup tiles of ", t.bm, "x", t.bn));
    }
    if ((t.wm != 64 && t.wm != 128 && (t.la != 0 || t.wm != 256)) ||
        (t.wn != 64 && t.wn != 128 && t.wn != 256) ||
        t.bm % t.wm != 0 || t.bn % t.wn != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the warpgroup tile ", t.wm, "x", t.wn, " (WM 64 or 128, WN 64, 128 or 256) does not tile ",
          t.bm, "x", t.bn));
    }
    if ((t.bk != 16 && t.bk != 32) || t.stages < (t.la == 0 ? 4 : 3)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KIND=6 takes BK 16 or 32 and STAGES >= 3 (LA=0: 4), not BK=", t.bk, ", STAGES=",
          t.stages, ", LA=", t.la));
    }
    const int64_t threads = t.Threads();
    const int64_t copiers = t.ws != 0 ? 128 : threads;  // WS: the producer warpgroup copies
    if ((t.bm * t.bk / 4) % copiers != 0 || (t.bk * t.bn / 4) % copiers != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the A tile (", t.bm * t.bk, " floats) or the B tile (", t.bk * t.bn,
          " floats) does not divide into float4 copies evenly among ", copiers, " threads"));
    }
    return CheckBlock(
        {threads,
         absl::StrCat("(BM/WM)*(BN/WN)*128 = ", t.bm / t.wm, "*", t.bn / t.wn, "*128",
                      t.ws != 0 ? " + 128 (WS's producer)" : ""),
         t.minb, t.SharedBytes(),
         t.la == 0 ? "STAGES x ((1 or 2) x BM x BK + BK x (BN + 8) floats, to 1024 bytes) + 1024"
                   : "STAGES x (1 or 2) x (BM + BN) x BK floats + 1024",
         t.RegisterEstimate(),
         t.la == 0 ? absl::StrCat(t.Accumulators(), " accumulators + ", t.RsFragments(),
                                  " fragment registers (LA=0) + ", kWgmmaRsRegisterOverhead)
         : t.la == 2 ? absl::StrCat(t.Accumulators(), " accumulators + 4 x ", t.Staged(),
                                  " staged floats (LA=2) + ", kWgmmaLa2RegisterOverhead)
                   : absl::StrCat(t.Accumulators(), " accumulators + 2 x ", t.Staged(),
                                  " staged floats + ", kWgmmaRegisterOverhead),
         t.ws != 0 ? kWsConsumerRegisters : 0},
        device);
  }

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
  static absl::Status CheckBlock(const BlockUse& b, const v1::Device& device) {
    if (auto s = CheckThreads(b.threads, b.threads_how, device); !s.ok()) return s;
    if (device.max_threads_per_sm() > 0 && b.minb * b.threads > device.max_threads_per_sm()) {
      return absl::FailedPreconditionError(
          absl::StrCat("MINB=", b.minb, " blocks of ", b.threads, " threads exceed the SM's ",
                       device.max_threads_per_sm(), " threads"));
    }
    if (b.smem > device.shared_memory_per_block_optin() ||
        b.minb * (b.smem + kReservedSharedPerBlock) >
            device.shared_memory_per_block_optin() + kReservedSharedPerBlock) {
      return absl::FailedPreconditionError(absl::StrCat(
          "MINB=", b.minb, " blocks of ", b.smem, " bytes of shared memory (", b.smem_how,
          ") do not fit the device's opt-in per-block limit of ",
          device.shared_memory_per_block_optin()));
    }
    const int64_t regs_per_sm = device.registers_per_sm() > 0 ? device.registers_per_sm() : 65536;
    const int64_t cap =
        b.reg_cap > 0 ? b.reg_cap
                      : std::min<int64_t>(kMaxRegistersPerThread, regs_per_sm / (b.minb * b.threads) / 8 * 8);
    if (b.regs > cap) {
      return absl::FailedPreconditionError(absl::StrCat(
          "an estimated ", b.regs, " registers per thread (", b.regs_how, ") exceed the cap of ",
          cap, " that MINB=", b.minb, " blocks of ", b.threads, " threads per SM set (spills)"));
    }
    return absl::OkStatus();
  }

  /// Threads per block within the device limit and a whole number of warps.
  static absl::Status CheckThreads(int64_t threads, const std::string& how,
                                   const v1::Device& device) {
    if (threads > device.max_threads_per_block()) {
      return absl::FailedPreconditionError(absl::StrCat(threads, " threads per block (", how,
                                                        ") exceed the device's limit of ",
                                                        device.max_threads_per_block()));
    }
    if (threads < kWarp || threads % kWarp != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(threads, " threads per block (", how,
                       ") is not a positive multiple of the warp size 32"));
    }
    return absl::OkStatus();
  }

  std::vector<Param> params_;
};

}  // namespace

const Family& SgemmFamily() {
  static const SgemmFamilyImpl family;
  return family;
}

}  // namespace tuned
