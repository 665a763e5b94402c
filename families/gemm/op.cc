// The GEMM op's fp32 form, and what the kinds share (op.h): the limits'
// helpers, the op's dispatch to the kinds (GemmOp) and the kinds' registry.
// The fp32 form, row-major C(MxN) = alpha * op(A) op(B) + beta * C in
// fp32, has one searchable space over seven kinds (KIND 0-6, op.h lists
// them): the parameters a kind does not use take one fixed value
// (Kind::fixed, Fp32Unused()), so each distinct kernel appears once.
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
#include "families/gemm/op.h"
#include "core/status.h"
#include "tuned/dtype.h"

namespace tuned {
namespace gemm {

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

const Config& Fp32Unused() {
  static const Config unused = {{"BK", 8},    {"TM", 1},    {"TN", 1},     {"PAD", 0},
                                {"VEC", 1},   {"LOOP", 0},  {"MAP", 0},    {"DB", 0},
                                {"LN", 0},    {"STAGES", 0}, {"SPLITK", 1}, {"GROUP", 1},
                                {"MINB", 1},  {"SLICEK", 1},  {"STREAMB", 0}, {"STREAMK", 0},
                                {"RUL", kDefaultRegisterUsageLevel}};
  return unused;
}

const Config& Tf32Fixed() {
  static const Config fixed = {{"TM", 1},     {"TN", 1},      {"PAD", 0},     {"VEC", 1},
                               {"LOOP", 0},   {"MAP", 0},     {"DB", 0},      {"LN", 0},
                               {"SLICEK", 1}, {"STREAMB", 0}, {"STREAMK", 0},
                               {"RUL", kDefaultRegisterUsageLevel}};
  return fixed;
}

Config Base(int64_t code, const Config& fixed) {
  Config c = Fp32Unused();
  for (const auto& [k, v] : fixed) c[k] = v;
  c["KIND"] = code;
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

class F32Op final : public GemmOp {
 public:
  F32Op()
      : GemmOp(Form::kF32, {
            {"KIND", KindCodes(Form::kF32),
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
            {"GSIDE", {0, 1},
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
  /// This family for F32; the 16-bit forms (op16.cc) for BF16 and F16 and
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

  /// MATH_IEEE_FP32: the CUDA-core kinds (0..4); MATH_FP32_ACCURATE: those
  /// and 3xTF32 (KIND 5 and 6, PASSES 3); MATH_TF32: KIND 5 and 6, TF32
  /// and 3xTF32 (the latter more accurate, for shapes where cuBLAS's TF32
  /// baseline is more accurate than one TF32 pass): Kind::admits.
  bool Admits(const Config& config, v1::Math math) const override {
    const Kind* kind = KindFor(config);
    return kind != nullptr && kind->admits(config, math);
  }

  /// Bytes of A (M*K), B (K*N), C (M*N) and the reference C (M*N), fp32.
  /// ieee_fp32: A, B, C and the baseline's C, 4 bytes each. The fp64 modes
  /// (families/gemm/worker/problem.cc): A, B, C, the fp64 reference C, and
  /// while the reference is computed A and B in fp64: 12 * (MK + KN + MN).
  int64_t BufferBytes(const Shape& shape, v1::Math math) const override {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    if (math != v1::MATH_IEEE_FP32) return 3 * kBytesPerElement * (m * k + k * n + m * n);
    return kBytesPerElement * (m * k + k * n + 2 * m * n);
  }

  /// The kind's name (Kind::config_name, e.g.
  /// "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1_db"), then LayoutSuffix() for a
  /// layout other than NN, e.g. "sgemm_wgmma_128x128x32_w64x128_s3_g8_b1_3xtf32_nt".
  std::string ConfigName(const Config& config) const override {
    const Kind* kind = KindFor(config);
    const std::string name = kind != nullptr ? kind->config_name(config, v1::DTYPE_F32)
                                             : absl::StrCat("sgemm_kind", At(config, "KIND"));
    return name + LayoutSuffix(config);
  }

  /// The kind's source (every kind's parts start with gemm/sgemm.cuh and
  /// gemm/warp.cuh, the SIMT kernels and the helpers the others use); a
  /// LAYOUT other than 0 is the template's last argument
  /// (WithLayoutArgument), e.g. "sgemm_tiled<128,128,8,8,8,4,4,0,1,0,1>".
  KernelSource Source(const Config& config) const override {
    const Kind* kind = KindFor(config);
    if (kind == nullptr) return {};
    KernelSource source = kind->source(config, v1::DTYPE_F32);
    source.name_expression = WithLayoutArgument(std::move(source.name_expression), config);
    return source;
  }

  /// The kind's geometry (Kind::geometry); none (no grid, which a launch
  /// refuses) for a KIND no kind has.
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                              const v1::Device& device) const override {
    const Kind* kind = KindFor(config);
    return kind != nullptr ? kind->geometry(config, shape, device, v1::DTYPE_F32)
                           : v1::LaunchGeometry{};
  }

  /// The kernels' common signature, in order (WS=1 kernels take A's tensor
  /// map after it: LaunchGeometry.tensor_maps).
  std::vector<std::string> Arguments() const override { return gemm::Arguments(); }
};

}  // namespace

int64_t GemmOp::MaxBufferElements(const Shape& shape) const {
  const int64_t m = shape[0], n = shape[1], k = shape[2];
  return std::max({m * k, k * n, m * n});
}

const Kind* GemmOp::KindFor(const Config& config) const {
  auto it = config.find("KIND");
  return KindOf(form_, it == config.end() ? 0 : it->second);
}

std::vector<Config> GemmOp::Space() const {
  std::vector<Config> space;
  for (const Kind* kind : KindsOf(form_)) kind->space(space);
  return space;
}

absl::Status GemmOp::Check(const Config& config, const v1::Device& device) const {
  TUNED_RETURN_IF_ERROR(CheckParams(config));
  const Kind* kind = KindFor(config);
  if (kind == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("KIND=", config.at("KIND"), " is no kind of this form"));
  }
  const std::string label =
      form_ == Form::kF32 ? absl::StrCat(" (", std::string(kind->label), ")") : std::string();
  for (const Param& p : params()) {
    if (p.name == "KIND" || p.from_problem ||
        std::find(kind->params.begin(), kind->params.end(), p.name) != kind->params.end()) {
      continue;
    }
    auto fixed = kind->fixed.find(p.name);
    if (fixed == kind->fixed.end() && !p.if_absent.has_value()) continue;
    const int64_t want = fixed != kind->fixed.end() ? fixed->second : *p.if_absent;
    auto it = config.find(p.name);
    const int64_t value = it != config.end() ? it->second : p.if_absent.value_or(want);
    if (value != want) {
      return absl::FailedPreconditionError(absl::StrCat(p.name, "=", value, " is unused by KIND=",
                                                        kind->code, label, ", which takes ",
                                                        p.name, "=", want));
    }
  }
  return kind->check(config, device);
}

absl::Status GemmOp::SuitsShape(const Config& config, const Shape& shape) const {
  const Kind* kind = KindFor(config);
  if (kind == nullptr || kind->suits_shape == nullptr || shape.size() != 3) {
    return absl::OkStatus();
  }
  return kind->suits_shape(config, shape);
}

absl::Status GemmOp::RunsAt(const Config& config, const Shape& shape) const {
  const Kind* kind = KindFor(config);
  if (kind == nullptr || kind->runs_at == nullptr || shape.size() != 3) return absl::OkStatus();
  return kind->runs_at(config, shape);
}

std::vector<float> GemmOp::ModelFeatures(const Config& config, const Shape& shape,
                                         const v1::Device& device) const {
  const Kind* kind = KindFor(config);
  if (kind == nullptr || kind->model_features == nullptr) return {};
  return kind->model_features(config, shape, device);
}

std::vector<float> TileFeatures(const Config& config, const Shape& shape,
                                const v1::Device& device) {
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

bool AdmitsFp32(const Config& /*config*/, v1::Math math) {
  return math == v1::MATH_IEEE_FP32 || math == v1::MATH_FP32_ACCURATE;
}

bool AdmitsTf32(const Config& config, v1::Math math) {
  if (At(config, "PASSES") == 3) return math == v1::MATH_FP32_ACCURATE || math == v1::MATH_TF32;
  return math == v1::MATH_TF32;
}

bool Admits16(const Config& /*config*/, v1::Math math) { return math == v1::MATH_IEEE_FP32; }

std::string Tf32Name(const Config& config, const char* word) {
  std::string name = absl::StrCat(
      "sgemm_", word, "_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_w",
      At(config, "WM"), "x", At(config, "WN"), "_s", At(config, "STAGES"), "_g",
      At(config, "GROUP"), "_b", At(config, "MINB"));
  if (At(config, "SPLITK") > 1) absl::StrAppend(&name, "_sk", At(config, "SPLITK"));
  absl::StrAppend(&name, At(config, "PASSES") == 3 ? "_3xtf32" : "_tf32");
  if (At(config, "LA") != 1) absl::StrAppend(&name, "_la", At(config, "LA"));
  if (At(config, "PROMOTE") != 1) absl::StrAppend(&name, "_p", At(config, "PROMOTE"));
  const int64_t ws = At(config, "WS");
  if (ws != 0) {
    absl::StrAppend(&name, ws == 1 ? "_ws" : ws == 2 ? "_tma" : ws == 3 ? "_tma_m2" : "_tma_kc");
  }
  return name;
}

const Kind* KindOf(Form form, int64_t code) {
  for (const Kind* kind : Kinds()) {
    if (kind->form == form && kind->code == code) return kind;
  }
  return nullptr;
}

std::vector<int64_t> KindCodes(Form form) {
  std::vector<int64_t> codes;
  for (const Kind* kind : Kinds()) {
    if (kind->form == form) codes.push_back(kind->code);
  }
  std::sort(codes.begin(), codes.end());
  return codes;
}

std::vector<const Kind*> KindsOf(Form form) {
  std::vector<const Kind*> kinds;
  for (const Kind* kind : Kinds()) {
    if (kind->form == form) kinds.push_back(kind);
  }
  std::stable_sort(kinds.begin(), kinds.end(),
                   [](const Kind* a, const Kind* b) { return a->order < b->order; });
  return kinds;
}

}  // namespace gemm

const Family& GemmFamily() {
  static const gemm::F32Op family;
  return family;
}

}  // namespace tuned
