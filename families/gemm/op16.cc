// The GEMM op's 16-bit forms (Family::ForDType): row-major C(MxN) =
// alpha * op(A) op(B) + beta * C with A and B BF16 or FP16, fp32
// accumulation, and C of the inputs' type (the problem's dtype DTYPE_BF16,
// DTYPE_F16) or fp32 (DTYPE_BF16_F32, DTYPE_F16_F32). Same name,
// dimensions, layouts and arguments' order as the fp32 form (op.cc);
// its own kinds (op.h lists them), space and kernels:
//   KIND 0  simt16: CUDA-core tiling, any shape and pitch   (gemm16_simt.cuh)
//   KIND 1  mma16: mma.sync m16n8k16, cp.async stages, split-K in a cluster
//           (mma16.cuh)
//   KIND 2  wgmma16: Hopper's warpgroup MMA, A and B by TMA, warp-specialized,
//           persistent or split-K in a cluster (wgmma16.cuh)
//   KIND 3  decode16: M up to 64 tokens against B streamed once, mma.sync with
//           B's rows as the m16 side, split-K in a cluster (decode16.cuh)
// The baseline is cuBLAS's cublasGemmEx in the same types (C's included) with fp32
// compute (families/gemm/worker/problem.cc). One math mode: MATH_IEEE_FP32
// (the products and sums in fp32).
//
// Each form has a variant per epilogue (tuner.proto Epilogue, Family::ForEpilogue):
// the same space with EPILOGUE set from the problem, whose kernels are the
// kinds' "_fused" entries (half16::Fuse on each element before its store)
// and take the bias after C. Its baseline is cuBLASLt with the same epilogue.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "families/family.h"
#include "tuned/dtype.h"
#include "families/gemm/op.h"

namespace tuned {
namespace gemm {
namespace {

class Op16 final : public GemmOp {
 public:
  Op16(v1::DType dtype, v1::Epilogue epilogue)
      : GemmOp(Form::k16, {
            {"KIND", KindCodes(Form::k16),
             "0 = simt (CUDA cores: 2-D block tiling, the operands staged in shared memory as "
             "fp32, bounds-checked element loads: any shape, pitch and alignment), "
             "1 = mma (tensor cores, mma.sync m16n8k16 with fp32 accumulators, ldmatrix from "
             "each operand's own layout, a cp.async pipeline where pitches and pointers are "
             "16-byte aligned and bounds-checked loads otherwise; split-K within a cluster), "
             "2 = wgmma (Hopper's warpgroup tensor cores, sm_90a: A and B copied by TMA in "
             "128-byte swizzled stages by a producer warpgroup, CONSUMERS warpgroups of "
             "wgmma.mma_async m64nNk16, each operand read in its own layout; where a pitch or "
             "pointer is not 16-byte aligned the producer copies that operand itself), "
             "3 = decode (M up to 64 tokens: mma.sync with B's rows as the m16 side and the "
             "tokens as the n8 side, each lane loading 16 bytes of a row of B and of a token "
             "per step; B streamed once past L1; split-K within a cluster)"},
            {"BM", {8, 16, 32, 64, 128, 256}, "rows of C per block (decode: tokens)"},
            {"BN", {16, 32, 64, 128, 256}, "columns of C per block"},
            {"BK", {16, 32, 64}, "depth of the K tile staged in shared memory per step (wgmma: 64)"},
            {"TM", {0, 1, 2, 4, 8}, "simt: rows of C per thread, strided by BM / TM", 0},
            {"TN", {0, 1, 2, 4, 8}, "simt: columns of C per thread, strided by BN / TN", 0},
            {"WM", {0, 16, 32, 64}, "mma: rows of a warp tile, WM / 16 m16 tiles", 0},
            {"WN", {0, 16, 32, 64},
             "mma: columns of a warp tile, WN / 8 n8 tiles; decode: rows of B (columns of C) a "
             "warp, WN / 16 m16 tiles",
             0},
            {"KWARPS", {0, 1, 2, 4},
             "decode: warps along K in a block, their partial sums added in shared memory", 0},
            {"KBLOCKS", {0, 1, 2, 4},
             "decode: blocks of 32 k a warp loads before its mmas (bytes of B in flight)", 0},
            {"STAGES", {0, 2, 3, 4, 6, 8},
             "mma, wgmma: shared-memory stages of the pipeline (cp.async; TMA with mbarriers)", 0},
            {"SPLITK", {1, 2, 4, 8},
             "mma, wgmma, decode: blocks along K per output tile, one cluster (__cluster_dims__, sm_90) whose "
             "fp32 partial sums are reduced through distributed shared memory into the block "
             "that writes C: no atomics, no workspace (1: no cluster)",
             1},
            {"GROUP", {1, 8},
             "mma, wgmma: output tiles visited GROUP tile-rows at a time (L2 reuse)", 1},
            {"MINB", {1, 2}, "mma: __launch_bounds__ minimum blocks per SM", 1},
            {"PERSIST", {0, 1},
             "wgmma: 1 = a persistent grid of min(tiles, SMs) blocks walking the output tiles, "
             "the next tile's loads overlapping the epilogue (SPLITK 1 only)",
             0},
            {"CONSUMERS", {0, 1, 2},
             "wgmma: consumer warpgroups (1 or 2; 2 takes registers from the producer by "
             "setmaxnreg), each BM / CONSUMERS rows",
             0},
            {"STAGED", {0, 2, 3},
             "wgmma: raw buffers for an operand TMA cannot copy (its pitch not a multiple of 8 "
             "elements or its pointer not 16-byte aligned): the producer copies each 64-element "
             "row's 16-byte-aligned span into one by cp.async, STAGED - 1 K tiles ahead, and the "
             "consumers shift it into the swizzled stage while the tensor cores run the K tile "
             "before (0: the producer copies such an operand into the stage itself); searched "
             "only where a pitch is such",
             0},
            {"MCAST", {1, 2},
             "wgmma: CTAs of a cluster (__cluster_dims__(MCAST * MCASTN, 1, 1)) whose output "
             "tiles are stacked along M; each copies its share of their common B tile into all "
             "of them by TMA multicast, dividing B's traffic from L2 by MCAST (SPLITK 1, STAGED "
             "0 only)",
             1},
            {"MCASTN", {1, 2, 4},
             "wgmma: CTAs of the cluster whose output tiles lie side by side along N, sharing "
             "their A tile as MCAST's share B; MCAST * MCASTN at most 4 (SPLITK 1, STAGED 0 "
             "only)",
             1},
            {"EPI", {0, 1, 2},
             "wgmma: the epilogue; 1 = where beta is 0 and C is 16-byte aligned with N a "
             "multiple of 8, the C tile goes through shared memory and TMA stores that drain "
             "while the next tile's mainloop runs; 2 = the same through two 64 x 64 buffers a "
             "consumer warpgroup, a box at a time (0, or otherwise: stores from registers; "
             "SPLITK 1 only)",
             0},
            {"ACCS", {1, 2},
             "wgmma: accumulator sets a consumer warpgroup; 2 = the odd K tiles' wgmmas into a "
             "second set, so that they do not wait on the accumulators of the K tile before "
             "(the two added before the epilogue; BM / CONSUMERS / 64 * BN at most 128)",
             1},
            {"LAYOUT", {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT},
             "the problem's operand layouts (tuner.proto Layout), set from the problem, not "
             "searched; a kind that does not handle a layout refuses it (every kind: 0)",
             v1::LAYOUT_NN, /*from_problem=*/true},
            {"EPILOGUE",
             {v1::EPILOGUE_NONE, v1::EPILOGUE_BIAS, v1::EPILOGUE_BIAS_RELU,
              v1::EPILOGUE_BIAS_GELU_TANH, v1::EPILOGUE_BIAS_GELU_ERF},
             "the problem's epilogue (tuner.proto Epilogue), set from the problem, not searched: "
             "the kind's _fused entry, which adds the bias and applies the activation to each "
             "element before its store (every kind: 0)",
             v1::EPILOGUE_NONE, /*from_problem=*/true},
        }),
        dtype_(dtype),
        epilogue_(epilogue) {}

  v1::DType dtype() const override { return dtype_; }
  std::vector<v1::DType> DTypes() const override { return GemmFamily().DTypes(); }
  const Family* ForDType(v1::DType dtype) const override { return GemmFamily().ForDType(dtype); }

  std::vector<v1::Layout> Layouts() const override {
    return {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT};
  }
  std::vector<v1::Epilogue> Epilogues() const override { return kEpilogues; }
  v1::Epilogue epilogue() const override { return epilogue_; }
  const Family* ForEpilogue(v1::Epilogue epilogue) const override {
    if (std::find(kEpilogues.begin(), kEpilogues.end(), epilogue) == kEpilogues.end()) return nullptr;
    return &Gemm16Family(dtype_, epilogue);
  }
  /// LAYOUT set to `layout` (left out for LAYOUT_NN), as sgemm's, and
  /// EPILOGUE to the form's (left out for EPILOGUE_NONE).
  Config InLayout(Config config, v1::Layout layout) const override {
    config = WithLayout(std::move(config), layout);
    if (epilogue_ != v1::EPILOGUE_NONE) {
      config["EPILOGUE"] = epilogue_;
    } else {
      config.erase("EPILOGUE");
    }
    return config;
  }
  /// MATH_IEEE_FP32 (the one mode, Kind::admits) for the configs of the
  /// form's epilogue.
  bool Admits(const Config& config, v1::Math math) const override {
    const Kind* kind = KindFor(config);
    return kind != nullptr && kind->admits(config, math) && Get(config, "EPILOGUE") == epilogue_;
  }
  v1::Layout LayoutOf(const Config& config) const override {
    return static_cast<v1::Layout>(Get(config, "LAYOUT"));
  }

  /// The worker's peak (families/gemm/worker/problem.cc): A and B in 16
  /// bits, C in its type (2 or 4 bytes), the fp64 reference C, and while it
  /// is computed A and B widened to fp64: 2 (MK + KN) + c MN + 8 MN + 8 (MK
  /// + KN) = 10 (MK + KN) + (8 + c) MN.
  int64_t BufferBytes(const Shape& shape, v1::Math /*math*/) const override {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    const int64_t c = ElementBytes(OutputDType(dtype_));
    return 10 * (m * k + k * n) + (8 + c) * m * n + (epilogue_ != v1::EPILOGUE_NONE ? c * n : 0);
  }

  /// The kind's name (Kind::config_name, which ends in LayoutSuffix()),
  /// e.g. "gemm_bf16_simt_64x64x16_4x4_nt" or
  /// "gemm_f16_mma_64x64x64_w32x32_s4_g8_b1_sk2"; a config with an
  /// epilogue ends in EpilogueSuffix, e.g.
  /// "gemm_bf16_decode_16x128_w32_kw2_kb2_nt_bias_gelu".
  std::string ConfigName(const Config& config) const override {
    const Kind* kind = KindFor(config);
    const std::string name = kind != nullptr ? kind->config_name(config, dtype_)
                                             : absl::StrCat("gemm_kind", Get(config, "KIND"));
    return name + EpilogueSuffix(config);
  }

  /// The kind's source (Kind::source), with an epilogue its fused entry
  /// (FusedEntry).
  KernelSource Source(const Config& config) const override {
    const Kind* kind = KindFor(config);
    if (kind == nullptr) return {};
    KernelSource s = kind->source(config, dtype_);
    s.name_expression = FusedEntry(std::move(s.name_expression), config);
    return s;
  }

  /// The kind's geometry (Kind::geometry); none (no grid, which a launch
  /// refuses) for a config without the form's parameters, e.g. a stored
  /// row's that lost them.
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                              const v1::Device& device) const override {
    const Kind* kind = KindFor(config);
    if (kind == nullptr || !CheckParams(config).ok()) return {};
    return kind->geometry(config, shape, device, dtype_);
  }

  /// sgemm's order with 16-bit pointers, e.g. "const __nv_bfloat16* A";
  /// C "float* C" where the output is fp32 (DTYPE_BF16_F32, DTYPE_F16_F32);
  /// with an epilogue, then the bias of C's type, e.g. "const __nv_bfloat16* bias"
  /// (N elements, one per column of C).
  std::vector<std::string> Arguments() const override {
    const std::string t = InputDType(dtype_) == v1::DTYPE_BF16 ? "__nv_bfloat16" : "__half";
    const std::string c = OutputDType(dtype_) == v1::DTYPE_F32 ? "float" : t;
    std::vector<std::string> args = {"int M",       "int N",
                                     "int K",       "float alpha",
                                     absl::StrCat("const ", t, "* A"),
                                     absl::StrCat("const ", t, "* B"),
                                     "float beta",  absl::StrCat(c, "* C")};
    if (epilogue_ != v1::EPILOGUE_NONE) args.push_back(absl::StrCat("const ", c, "* bias"));
    return args;
  }

 private:
  static inline const std::vector<v1::Epilogue> kEpilogues = {
      v1::EPILOGUE_NONE, v1::EPILOGUE_BIAS, v1::EPILOGUE_BIAS_RELU, v1::EPILOGUE_BIAS_GELU_TANH,
      v1::EPILOGUE_BIAS_GELU_ERF};

  v1::DType dtype_;
  v1::Epilogue epilogue_;
};

}  // namespace

std::string EpilogueSuffix(const Config& config) {
  switch (Get(config, "EPILOGUE")) {
    case v1::EPILOGUE_NONE: return "";
    case v1::EPILOGUE_BIAS: return "_bias";
    case v1::EPILOGUE_BIAS_RELU: return "_bias_relu";
    case v1::EPILOGUE_BIAS_GELU_TANH: return "_bias_gelu";
    case v1::EPILOGUE_BIAS_GELU_ERF: return "_bias_gelu_erf";
  }
  return absl::StrCat("_epilogue", Get(config, "EPILOGUE"));
}

std::string FusedEntry(std::string expression, const Config& config) {
  const int64_t epilogue = Get(config, "EPILOGUE");
  const size_t open = expression.find('<');
  if (epilogue == 0 || open == std::string::npos) return expression;
  expression.replace(open, 1, absl::StrCat("_fused<", epilogue, ","));
  return expression;
}

int64_t Get(const Config& c, const std::string& key) {
  auto it = c.find(key);
  return it == c.end() ? 0 : it->second;
}

int64_t At1(const Config& c, const std::string& key) {
  auto it = c.find(key);
  return it == c.end() ? 1 : it->second;
}

absl::Status CheckClusterSplitK(int64_t splitk, const v1::Device& device) {
  if (splitk > 1 && device.cc_major() < 9) {
    return absl::FailedPreconditionError(
        absl::StrCat("SPLITK=", splitk, " reduces within a thread-block cluster (compute "
                     "capability 9.0), the device is ", device.cc_major(), ".", device.cc_minor()));
  }
  return absl::OkStatus();
}

const Family& Gemm16Family(v1::DType dtype, v1::Epilogue epilogue) {
  // One form per 16-bit dtype (2..5) and epilogue (0..4), made on first use.
  static const auto* forms = [] {
    auto* f = new std::vector<std::unique_ptr<Op16>>();
    for (v1::DType d : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32}) {
      for (int e = v1::EPILOGUE_NONE; e <= v1::EPILOGUE_BIAS_GELU_ERF; ++e) {
        f->push_back(std::make_unique<Op16>(d, static_cast<v1::Epilogue>(e)));
      }
    }
    return f;
  }();
  const int d = dtype == v1::DTYPE_BF16       ? 0
                : dtype == v1::DTYPE_F16      ? 1
                : dtype == v1::DTYPE_BF16_F32 ? 2
                : dtype == v1::DTYPE_F16_F32  ? 3
                                              : 1;
  const int e = epilogue >= v1::EPILOGUE_NONE && epilogue <= v1::EPILOGUE_BIAS_GELU_ERF ? epilogue : 0;
  return *(*forms)[d * 5 + e];
}

}  // namespace gemm
}  // namespace tuned
