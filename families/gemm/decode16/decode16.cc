// The decode16 kind, KIND 3 of the 16-bit forms: gemm16_decode<DTYPE,BM,BN,WN,KWARPS,KBLOCKS,
// SPLITK,LAYOUT> (kernels_src/gemm/decode16.cuh): a few tokens (M up
// to 64: a language model's decode step) against B streamed once (the
// weight, N x K in layout NT), on mma.sync with B's rows as the m16 side.
// Its space, rules, name, source, geometry and the shapes it suits.
//
// Decode reads B once, so its time is B's bytes over the memory bandwidth
// when enough loads are in flight: every SM needs a few tens of KB
// outstanding (latency x bandwidth per SM), which the blocks get from
// KBLOCKS blocks of 32 k loaded ahead by each warp, KWARPS warps along K in
// a block, and SPLITK blocks along K in a cluster where N alone gives too
// few blocks (N = 4096 in tiles of 64 rows is 64 blocks for 132 SMs).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "tuned/dtype.h"

namespace tuned::gemm {
namespace {

/// KIND of the decode16 kind's configs.
constexpr int64_t kCode = 3;

/// Tokens a warp's mma covers at least (the n8 side).
constexpr int64_t kDecodeMinTokens = 8;
/// The largest M the kind is measured on (Family::SuitsShape).
constexpr int64_t kDecodeMaxM = 64;
/// K elements of one block of a warp's loads: 4 lanes x 8 per row.
constexpr int64_t kDecodeBK = 32;
/// Registers of the kernel besides accumulators, loads and row pointers.
constexpr int64_t kDecodeRegisterOverhead = 24;

/// The decode configs {BN, WN, KWARPS, KBLOCKS, SPLITK} of one to 16 tokens
/// (BM 8, 16): 8 warps a block, 2 to 4 KB of B in flight a warp, split-K
/// for the shapes whose N gives fewer blocks than a few per SM.
constexpr std::array<std::array<int64_t, 5>, 8> kFewTokens = {{
    {64, 16, 2, 2, 1},
    {64, 16, 2, 2, 2},
    {64, 16, 2, 2, 4},
    {64, 16, 2, 4, 8},
    {32, 16, 4, 2, 4},
    {128, 16, 1, 4, 1},
    {128, 32, 2, 2, 1},
    {128, 16, 1, 2, 2},
}};
/// The decode configs of 17 to 64 tokens (BM 32, 64): the accumulators and
/// A's loads take the registers, so fewer blocks ahead and 32 rows of B a
/// warp (each load of A serves two m16 tiles).
constexpr std::array<std::array<int64_t, 5>, 7> kManyTokens = {{
    {64, 32, 2, 2, 1},
    {64, 32, 2, 2, 2},
    {64, 32, 2, 2, 4},
    {32, 16, 4, 2, 4},
    {128, 32, 1, 2, 1},
    {64, 16, 2, 1, 2},
    {32, 16, 4, 1, 8},
}};

/// The decode kernel's derived sizes (decode16.cuh).
struct Decode {
  int64_t bm, bn, wn, kwarps, kblocks, splitk;

  int64_t Threads() const { return kWarp * (bn / wn) * kwarps; }
  int64_t SharedBytes() const { return kwarps * bm * bn * 4; }
  /// Accumulators (WN/16 m16 tiles x BM/8 n8 tiles x 4), B's loads
  /// (KBLOCKS x 2 rows x WN/16 x 4 words), A's loads (KBLOCKS x BM/8 x 4
  /// words), two registers per row pointer and kDecodeRegisterOverhead.
  int64_t RegisterEstimate() const {
    const int64_t wr = wn / 16, mt = bm / 8;
    return 4 * wr * mt + 8 * kblocks * wr + 4 * kblocks * mt + 2 * (2 * wr + mt) +
           kDecodeRegisterOverhead;
  }
};

Decode GetDecode(const Config& c) {
  return {Get(c, "BM"), Get(c, "BN"), Get(c, "WN"), Get(c, "KWARPS"), Get(c, "KBLOCKS"),
          At1(c, "SPLITK")};
}

/// The decode configs: BM 8 and 16 with kFewTokens' blocks, BM 32 and 64
/// with kManyTokens'.
void DecodeSpace(std::vector<Config>& space) {
  auto add = [&space](int64_t bm, const std::array<int64_t, 5>& b) {
    const auto& [bn, wn, kwarps, kblocks, splitk] = b;
    Config c = {{"KIND", kCode},     {"BM", bm},         {"BN", bn},          {"BK", kDecodeBK},
                {"WN", wn},        {"KWARPS", kwarps}, {"KBLOCKS", kblocks}};
    if (splitk > 1) c["SPLITK"] = splitk;
    AddOnce(space, c);
  };
  for (int64_t bm : {8, 16}) {
    for (const auto& b : kFewTokens) add(bm, b);
  }
  for (int64_t bm : {32, 64}) {
    for (auto b : kManyTokens) {
      // 64 tokens with one k-warp: its 64 accumulators, and an fp32 C's
      // second level of the sum (decode16.cuh), leave registers for one
      // block of 32 k ahead, not two (ptxas spilled with two).
      if (bm == kDecodeMaxM && b[2] == 1) b[3] = 1;
      add(bm, b);
    }
  }
}

/// BM a multiple of 8 from 8 to 64; BK 32; WN a multiple of 16 dividing
/// BN; KWARPS and KBLOCKS at least 1; split-K (a cluster) on compute
/// capability 9.0 and up; the block within CheckBlock's limits with its
/// static shared memory (KWARPS * BM * BN * 4 bytes) within the per-block
/// static limit.
absl::Status CheckDecode(const Config& config, const v1::Device& device) {
  const Decode d = GetDecode(config);
  if (d.bm < kDecodeMinTokens || d.bm > kDecodeMaxM || d.bm % kDecodeMinTokens != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("KIND=3 takes BM 8, 16, ..., 64 tokens a block, not ", d.bm));
  }
  if (Get(config, "BK") != kDecodeBK) {
    return absl::FailedPreconditionError(
        absl::StrCat("KIND=3 loads K in blocks of BK=", kDecodeBK, ", not ", Get(config, "BK")));
  }
  if (d.wn < 16 || d.wn % 16 != 0 || d.bn % d.wn != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=3 needs WN a multiple of 16 dividing BN; got BN=", d.bn, " WN=", d.wn));
  }
  if (d.kwarps < 1 || d.kblocks < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=3 needs KWARPS and KBLOCKS of 1 or more, not ", d.kwarps, " and ", d.kblocks));
  }
  TUNED_RETURN_IF_ERROR(CheckClusterSplitK(d.splitk, device));
  if (d.SharedBytes() > device.shared_memory_per_block()) {
    return absl::FailedPreconditionError(absl::StrCat(
        d.SharedBytes(), " bytes of static shared memory (KWARPS*BM*BN*4) exceed the device's ",
        device.shared_memory_per_block()));
  }
  return CheckBlock({d.Threads(), "32*(BN/WN)*KWARPS", 1, 0, "none", d.RegisterEstimate(),
                     "accumulators, loads of A and B, row pointers"},
                    device);
}

/// "gemm_<dtype>_decode_<BM>x<BN>_w<WN>_kw<KWARPS>_kb<KBLOCKS>", then
/// "_sk<SPLITK>" where above 1 and LayoutSuffix(), e.g.
/// "gemm_bf16_decode_8x64_w16_kw2_kb2_sk4_nt".
std::string DecodeName(const Config& config, v1::DType dtype) {
  const Decode d = GetDecode(config);
  std::string name = absl::StrCat("gemm_", DTypeText(dtype), "_decode_", d.bm, "x", d.bn, "_w",
                                  d.wn, "_kw", d.kwarps, "_kb", d.kblocks);
  if (d.splitk > 1) absl::StrAppend(&name, "_sk", d.splitk);
  return name + LayoutSuffix(config);
}

/// decode16.cuh after sgemm.cuh, half16.cuh and mma16.cuh,
/// "gemm16_decode<DTYPE,BM,BN,WN,KWARPS,KBLOCKS,SPLITK,LAYOUT>".
KernelSource DecodeSource(const Config& config, v1::DType dtype) {
  const Decode d = GetDecode(config);
  KernelSource s;
  // sgemm.cuh: CeilDiv and EnableIf; half16.cuh: the 16-bit conversions;
  // mma16.cuh: the mma, cluster and alignment helpers.
  s.parts = {"gemm/sgemm.cuh", "gemm/half16.cuh", "gemm/mma16.cuh", "gemm/decode16.cuh"};
  s.name_expression = absl::StrCat("gemm16_decode<", static_cast<int>(dtype), ",", d.bm, ",", d.bn,
                                   ",", d.wn, ",", d.kwarps, ",", d.kblocks, ",", d.splitk, ",",
                                   Get(config, "LAYOUT"), ">");
  return s;
}

/// grid = {ceil(N / BN), ceil(M / BM), SPLITK} (a split-K cluster along z),
/// block = {32 * (BN / WN) * KWARPS, 1, 1}, static shared memory only, no
/// prescaling of C.
v1::LaunchGeometry DecodeGeometry(const Config& config, const Shape& shape,
                                  const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const Decode d = GetDecode(config);
  v1::LaunchGeometry g;
  for (int64_t x : {CeilDiv(shape[1], d.bn), CeilDiv(shape[0], d.bm), d.splitk}) {
    g.add_grid(static_cast<uint32_t>(x));
  }
  for (int64_t x : {d.Threads(), int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(x));
  g.set_dynamic_shared_bytes(0);
  return g;
}

/// OK where M is at most 64 tokens and BM is its chunk (M <= BM, and BM =
/// 8 or BM < 2M), and B's rows are K-contiguous (layouts NT and TT; the
/// kernel gathers them element by element otherwise); FAILED_PRECONDITION
/// naming the rule otherwise.
absl::Status DecodeSuitsShape(const Config& config, const Shape& shape) {
  const int64_t m = shape[0], bm = Get(config, "BM");
  if (m > kDecodeMaxM) {
    return absl::FailedPreconditionError(
        absl::StrCat("decode is for M <= ", kDecodeMaxM, " tokens, not ", m));
  }
  if (bm < m || (bm > kDecodeMinTokens && bm >= 2 * m)) {
    return absl::FailedPreconditionError(
        absl::StrCat("decode BM=", bm, " is not the chunk for M = ", m));
  }
  if (!TransposedB(Get(config, "LAYOUT"))) {
    return absl::FailedPreconditionError(
        "decode streams B's rows along K: layouts NT and TT (B stored N x K)");
  }
  return absl::OkStatus();
}

/// OK but past 65535 blocks of BM tokens (its grid's y, DecodeGeometry),
/// where a best is not served.
absl::Status DecodeRunsAt(const Config& config, const Shape& shape) {
  if (Get(config, "BM") < 1) return absl::OkStatus();
  if (CeilDiv(shape[0], Get(config, "BM")) > kMaxGridY) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a decode config runs up to ", kMaxGridY, " blocks of BM=", Get(config, "BM"),
        " tokens, not M = ", shape[0]));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(decode16, {.name = "decode16", .label = "decode", .form = Form::k16, .code = kCode, .order = 3, .params = {"BM", "BN", "BK", "WN", "KWARPS", "KBLOCKS", "SPLITK"}, .admits = Admits16, .space = DecodeSpace, .check = CheckDecode, .config_name = DecodeName, .source = DecodeSource, .geometry = DecodeGeometry, .suits_shape = DecodeSuitsShape, .runs_at = DecodeRunsAt});
