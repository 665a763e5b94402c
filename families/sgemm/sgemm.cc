// The sgemm family: row-major fp32 C(MxN) = alpha * A(MxK) * B(KxN) + beta * C
// (lda = K, ldb = N, ldc = N), in seven kernel kinds (KIND), each in its own
// file of families/sgemm/ with its tables, register model, rules,
// name, source and geometry (kinds.h lists them):
//   KIND 0-3  naive, coalesced, tiled, warp-tiled   simt.cc   (sgemm.cuh, warp.cuh)
//   KIND 4    gemv, matrix-vector shapes            gemv.cc   (gemv.cuh)
//   KIND 5    mma.sync TF32 / 3xTF32 tensor cores   mma.cc    (mma_tf32.cuh)
//   KIND 6    wgmma TF32 / 3xTF32 (sm_90a)          wgmma.cc  (wgmma_*.cuh)
// This file: the parameters, the rules every kind shares, the helpers of
// kinds.h, and the Family, which dispatches to the kinds. One searchable
// space: the parameters a kind does not use take one fixed value
// (FixedFor() below), so each distinct kernel appears once.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "families/family.h"
#include "families/sgemm/kinds.h"
#include "core/status.h"
#include "tuned/dtype.h"

namespace tuned {
namespace sgemm {

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

Config Base(int64_t kind) {
  Config c = FixedFor(kNaive);
  for (const auto& [k, v] : FixedFor(kind)) c[k] = v;
  c["KIND"] = kind;
  return c;
}

Config WithLayout(Config config, v1::Layout layout) {
  if (layout == v1::LAYOUT_NN) {
    config.erase("LAYOUT");
  } else {
    config["LAYOUT"] = layout;
  }
  return config;
}

std::string LayoutSuffix(const Config& config) {
  static constexpr std::array<const char*, 4> kSuffix = {"", "_nt", "_tn", "_tt"};
  const int64_t layout = At(config, "LAYOUT");
  return layout >= 0 && layout < 4 ? kSuffix[layout] : "_l?";
}

std::string WithLayoutArgument(std::string expression, const Config& config) {
  const int64_t layout = At(config, "LAYOUT");
  if (layout != 0 && !expression.empty() && expression.back() == '>') {
    expression.insert(expression.size() - 1, absl::StrCat(",", layout));
  }
  return expression;
}

void AddOnce(std::vector<Config>& space, const Config& c) {
  if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
}

std::vector<std::string> Arguments() {
  return {"int M", "int N", "int K", "float alpha", "const float* A", "const float* B",
          "float beta", "float* C"};
}

absl::Status CheckThreads(int64_t threads, const std::string& how,
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

v1::LaunchGeometry TileGeometry(const Shape& shape, int64_t bm, int64_t bn, int64_t splitk,
                                int64_t threads, int64_t shared_bytes) {
  v1::LaunchGeometry g;
  for (int64_t d : {CeilDiv(shape[0], bm) * CeilDiv(shape[1], bn), std::max<int64_t>(splitk, 1),
                    int64_t{1}}) {
    g.add_grid(static_cast<uint32_t>(d));
  }
  for (int64_t d : {threads, int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(d));
  g.set_dynamic_shared_bytes(static_cast<uint32_t>(shared_bytes));
  g.set_prescale_output(splitk > 1);
  return g;
}

absl::Status CheckBlock(const BlockUse& b, const v1::Device& device) {
  TUNED_RETURN_IF_ERROR(CheckThreads(b.threads, b.threads_how, device));
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

namespace {

class SgemmFamilyImpl final : public GemmForm {
 public:
  SgemmFamilyImpl()
      : GemmForm({
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
            {"WS", {0, 1, 2, 3, 4},
             "wgmma TF32 with LA=0 and BN 128: 1 = warp-specialized, a producer warpgroup (40 "
             "registers) issues the copies and two consumer warpgroups (232) meet it through "
             "mbarriers, with no block barrier in the K loop; 2 = the same with both operands "
             "by TMA (B in 32 x 32 boxes) on a persistent grid (NN, SPLITK 1..8); 3 = 2 with B "
             "multicast to a cluster of two CTAs stacked along M; 4 = 2 with split-K (SPLITK 2..4) "
             "reduced in a cluster of SPLITK CTAs through distributed shared memory, one CTA a "
             "split, no atomics (other configs: 0)",
             IfAbsent("WS")},
            {"LAYOUT", {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT},
             "the problem's operand layouts (tuner.proto Layout: 0 = NN, 1 = NT, 2 = TN, "
             "3 = TT), set from the problem, not searched; a kind that does not handle a "
             "layout refuses it (every kind: 0)",
             IfAbsent("LAYOUT"), /*from_problem=*/true},
        }) {}

  std::vector<v1::Math> MathModes() const override {
    return {v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE, v1::MATH_TF32};
  }

  std::vector<v1::DType> DTypes() const override {
    return {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32};
  }
  /// This family for F32; the 16-bit forms (gemm16.cc) for BF16 and F16 and
  /// their fp32-output forms BF16_F32 and F16_F32.
  const Family* ForDType(v1::DType dtype) const override {
    if (dtype == v1::DTYPE_F32) return this;
    if (Is16BitGemm(dtype)) return &Gemm16Family(dtype);
    return nullptr;
  }

  std::vector<v1::Layout> Layouts() const override {
    return {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT};
  }
  /// LAYOUT set to `layout` (left out for LAYOUT_NN, as stored before).
  Config InLayout(Config config, v1::Layout layout) const override {
    return WithLayout(std::move(config), layout);
  }
  v1::Layout LayoutOf(const Config& config) const override {
    return static_cast<v1::Layout>(At(config, "LAYOUT"));
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


  /// Bytes of A (M*K), B (K*N), C (M*N) and the reference C (M*N), fp32.
  /// ieee_fp32: A, B, C and the baseline's C, 4 bytes each. The fp64 modes
  /// (families/sgemm/worker/problem.cc): A, B, C, the fp64 reference C, and
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
    // Hopper's warpgroup tensor cores (KIND 6) first, then KIND 5: the math
    // modes that admit them (Admits) find a fast kernel early; Check keeps
    // KIND 6 to compute capability 9.0, and MATH_IEEE_FP32 admits neither,
    // so its order is the fp32 kinds' own.
    AddWgmmaSpace(space);
    AddMmaSpace(space);
    AddWarpSpace(space);
    AddGemvSpace(space);
    AddEarlierSpace(space);
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
    TUNED_RETURN_IF_ERROR(CheckParams(config));
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
    if (kind == kGemv) return CheckGemv(config, device);
    return CheckSimt(config, device);
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
  /// "sgemm_wgmma_128x128x32_w128x64_s4_g1_b1_3xtf32_la0_p2". A layout
  /// other than NN follows as LayoutSuffix(), e.g. "..._3xtf32_nt".
  std::string ConfigName(const Config& config) const override {
    const int64_t kind = At(config, "KIND");
    const std::string name = kind == kGemv       ? GemvName(config)
                             : TensorCore(kind) ? TensorCoreName(config)
                                                : SimtName(config);
    return name + LayoutSuffix(config);
  }

  /// Every kind's parts start with sgemm/sgemm.cuh and sgemm/warp.cuh
  /// (the SIMT kinds' kernels and the helpers the others use): SimtSource,
  /// "sgemm_naive<BM,BN>", "sgemm_coalesced<BM,BN>",
  /// "sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>" or
  /// "sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>",
  /// options: "-Xptxas=--register-usage-level=<RUL>" where RUL is not 5.
  /// The gemv kind: gemv.cuh appended, and
  /// "sgemm_gemv_<rows|cols><GW,GR,GU,GC,SPLITK,MINB>" (GemvSource). The
  /// tensor-core kind: mma_tf32.cuh appended, and
  /// "sgemm_mma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB>" (MmaSource).
  /// The wgmma kind: mma_tf32.cuh (its Split) and the wgmma_*.cuh files,
  /// "sgemm_wgmma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB,LA>", and the
  /// option "--gpu-architecture=sm_90a" (WgmmaSource).
  /// A LAYOUT other than 0 is the template's last argument
  /// (WithLayoutArgument), e.g. "sgemm_tiled<128,128,8,8,8,4,4,0,1,0,1>".
  KernelSource Source(const Config& config) const override {
    const int64_t kind = At(config, "KIND");
    KernelSource source = kind == kGemv    ? GemvSource(config)
                          : kind == kMma   ? MmaSource(config)
                          : kind == kWgmma ? WgmmaSource(config)
                                           : SimtSource(config);
    source.name_expression = WithLayoutArgument(std::move(source.name_expression), config);
    return source;
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
    if (kind == kGemv) return GemvGeometry(config, shape);
    if (kind == kWgmma) return WgmmaGeometry(config, shape, device);
    if (kind == kMma) return MmaGeometry(config, shape);
    return SimtGeometry(config, shape, device);
  }

  /// The kernels' common signature, in order (WS=1 kernels take A's tensor
  /// map after it: LaunchGeometry.tensor_maps).
  std::vector<std::string> Arguments() const override { return sgemm::Arguments(); }

  /// The gemv kind only where its small dimension n (rows: N, cols: M) is at
  /// most 8 and its chunk fits it: n <= GC < 2n (GC 4 for n = 3 or 4; a
  /// smaller GC takes several passes over the big operand, a larger one more
  /// registers for nothing). FAILED_PRECONDITION naming the rule otherwise;
  /// every other config suits every shape.
  /// The tiles: how much of the padded tiles is the matrix, the tiles, K
  /// iterations per block, the flops, and tiles times split-K per SM.
  std::vector<float> ModelFeatures(const Config& config, const Shape& shape,
                                   const v1::Device& device) const override {
    auto get = [&](const char* key) {
      auto it = config.find(key);
      return it == config.end() ? 1.0 : static_cast<double>(it->second);
    };
    auto ceil_div = [](double a, double b) { return std::ceil(a / std::max(b, 1.0)); };
    const double sms = device.sm_count() > 0 ? device.sm_count() : 132;
    const double m = shape[0], n = shape[1], k = shape[2];
    const double bm = get("BM"), bn = get("BN"), bk = get("BK");
    const double split = get("SPLITK") * get("SLICEK");
    const double tm = ceil_div(m, bm), tn = ceil_div(n, bn);
    return {static_cast<float>(m * n / (tm * bm * tn * bn)), static_cast<float>(std::log2(tm * tn)),
            static_cast<float>(std::log2(ceil_div(k, split * bk))), static_cast<float>(std::log2(m * n * k)),
            static_cast<float>(std::log2(tm * tn * get("SPLITK") / sms))};
  }

  absl::Status SuitsShape(const Config& config, const Shape& shape) const override {
    return GemvSuitsShape(config, shape);
  }
};

}  // namespace
}  // namespace sgemm

const Family& SgemmFamily() {
  static const sgemm::SgemmFamilyImpl family;
  return family;
}

}  // namespace tuned
