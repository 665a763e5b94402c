// The wgmma_tf32 kind, KIND 6 of the fp32 form: sgemm_wgmma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB,LA>
// (kernels_src/gemm/wgmma_*.cuh, appended to sgemm.cuh, warp.cuh and
// mma_tf32.cuh): Hopper warpgroup tensor cores, wgmma.mma_async m64nNk8
// TF32 from swizzled shared memory, register-staged pipeline (LA K tiles
// loaded ahead into registers), split-K, rasterization; compiled for
// sm_90a, compute capability 9.0 only; math modes as KIND 5's. LA=0: the
// register-A form (C^T = B^T A^T, A by cp.async, B^T's fragments in
// registers), and with WS=1 its warp-specialized kernel sgemm_wgmma_ws;
// WS=2, 3 and 4 the TMA form sgemm_wgmma_tma (wgmma_tf32_tma.cuh: both
// operands by TMA, persistent, 3 with B multicast, 4 with split-K reduced
// in a cluster).
// Its tables, register model, rules, source and geometry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "core/status.h"

namespace tuned::gemm {
namespace {

/// KIND of the wgmma_tf32 kind's configs.
constexpr int64_t kCode = 6;

/// Registers of the wgmma kernel besides its accumulators and twice its
/// staged floats (the loaded float4s, and their addresses and converted
/// copies): the smallest overhead under which the estimate separates the
/// configs that spill under __launch_bounds__' cap from those that do not
/// (ptxas -v, NVRTC 13.0, sm_90a, on the configs of Space()).
constexpr int64_t kWgmmaRegisterOverhead = 32;
/// With LA=2 (two register sets of staged floats) the estimate is
/// accumulators + 4 x staged + 16, calibrated likewise; 128x256x16 with
/// four warpgroups meets its cap without telling its 4-byte spill apart
/// (kWgmmaLa2Spills).
constexpr int64_t kWgmmaLa2RegisterOverhead = 16;
/// With LA=0 (the register-A form) the estimate is accumulators + two sets
/// of BK/8 x 4 fragment registers (twice for 3xTF32: big and small) + 48,
/// calibrated likewise: it admits 3xTF32 and TF32 128x128 with two
/// warpgroups (no spills) and refuses TF32 128x256 with four (spills at 128).
constexpr int64_t kWgmmaRsRegisterOverhead = 48;
/// WS (the warp-specialized LA=0): the consumer warpgroups' registers, which
/// setmaxnreg raises to 232 after the producer's are cut to 40 (128 x 40 +
/// 256 x 232 = 64512 of the SM's 65536; wgmma_rs.cuh RsGemm).
constexpr int64_t kWsConsumerRegisters = 232;

/// The wgmma kernel's derived sizes (see sgemm_wgmma in wgmma_kernels.cuh).
struct WgmmaTile {
  int64_t bm, bn, bk, wm, wn, stages, splitk, passes, minb, la, ws, layout;

  /// One warpgroup (128 threads) per WM x WN warpgroup tile, and with WS
  /// the producer warpgroup.
  int64_t Threads() const {
    return wm > 0 && wn > 0 ? (bm / wm) * (bn / wn) * 128 + (ws != 0 ? 128 : 0) : 0;
  }
  /// The warpgroups that compute (WS: the consumers).
  int64_t ComputeThreads() const { return Threads() - (ws != 0 ? 128 : 0); }
  /// WS 2, 3 and 4 (sgemm_wgmma_tma): both tiles as TMA writes them; with 3
  /// B multicast to a cluster of two.
  bool Tma() const { return ws == 2 || ws == 3 || ws == 4; }
  int64_t Mcast() const { return ws == 3 ? 2 : 1; }
  /// WS 4: split-K reduced in a cluster of SPLITK CTAs (KRED 1).
  bool Kred() const { return ws == 4; }
  /// Dynamic shared memory: STAGES x (1 or, 3xTF32, 2 copies) x (BM + BN)
  /// rows of BK floats, and 1024 bytes to align the stages to the swizzle's
  /// 1024-byte period. LA=0: STAGES x ((1 or 2) x BM rows of BK floats + BK
  /// rows of BN + 8 floats, rounded up to 1024 bytes) + 1024 (RsTile); in
  /// NT, BN rows of BK + 4 floats (B^T's tile) in place of B's (TT computes
  /// C^T = B A with NN's tiles: RsSwapped).
  int64_t SharedBytes() const {
    if (Tma()) {  // STAGES x (BM rows of 32 floats + 32 k rows of BN floats), their mbarriers;
                  // WS 4: the receive buffer of SPLITK - 1 peers' BM x BN floats, its mbarrier
      return stages * (bm + bn) * bk * kBytesPerElement + 1024 + 16 * stages +
             (Kred() ? (splitk - 1) * bm * bn * kBytesPerElement + 8 : 0);
    }
    if (la == 0) {
      const int64_t b = layout == v1::LAYOUT_NT ? bn * (bk + 4) : bk * (bn + 8);
      const int64_t stage = ((passes == 3 ? 2 : 1) * bm * bk + b) * kBytesPerElement;
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
  /// LA=0 in TT: the kernel computes C^T = B A (N x M) as an NN problem,
  /// B in A's place (RsGemm's SWAP).
  bool RsSwapped() const { return la == 0 && layout == v1::LAYOUT_TT; }
  int64_t RegisterEstimate() const {
    if (la == 0) return Accumulators() + RsFragments() + kWgmmaRsRegisterOverhead;
    return la == 2 ? Accumulators() + 4 * Staged() + kWgmmaLa2RegisterOverhead
                   : Accumulators() + 2 * Staged() + kWgmmaRegisterOverhead;
  }
};

WgmmaTile GetWgmma(const Config& c) {
  return {At(c, "BM"),     At(c, "BN"),     At(c, "BK"),     At(c, "WM"),
          At(c, "WN"),     At(c, "STAGES"), At(c, "SPLITK"), At(c, "PASSES"),
          At(c, "MINB"),   At(c, "LA"),     At(c, "WS"),     At(c, "LAYOUT")};
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
/// 128x256, spill). On an H100 (bench/wgmma_rs_probe.cu) 3xTF32 128x128 s4
/// ran 12-14% faster than LA 1's best at 4096^3 and 8192^3.
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
/// The TMA form's (WS 2 and 3) configs of them: SPLITK 1, 256x128 in 4
/// stages and 128x128 in 6.
constexpr bool WgmmaTmaTwin(const std::array<int64_t, 9>& p) {
  return p[6] == 1 && (p[0] == 256 ? p[5] == 4 : p[5] == 6);
}
/// The TMA form's configs for shapes of fewer output tiles than SMs (WS 2
/// only): 64x128 in 8 stages (1024^3: 128 tiles, against 64 of 128x128),
/// and split-K (128x4096x4096: 32 tiles of 128x128).
constexpr std::array<std::array<int64_t, 9>, 7> kWgmmaTmaSmall = {{
    {64, 128, 32, 64, 64, 8, 1, 1, 1},
    {64, 128, 32, 64, 64, 8, 2, 1, 1},
    {64, 128, 32, 64, 64, 8, 4, 1, 1},
    {128, 128, 32, 128, 64, 6, 2, 1, 1},
    {128, 128, 32, 128, 64, 6, 4, 1, 1},
    {128, 128, 32, 128, 64, 6, 8, 1, 1},
    {256, 128, 32, 256, 64, 4, 2, 1, 1},
}};
/// WS 4's (split-K reduced in a cluster, no atomics and no prescale of C):
/// 64x128 with SPLITK 2 in 8 stages and 4 in 4 (512^3: 32 tiles, one
/// stage ring's K tiles a split), 128x128 with SPLITK 2 in 4.
constexpr std::array<std::array<int64_t, 9>, 3> kWgmmaTmaCluster = {{
    {64, 128, 32, 64, 64, 8, 2, 1, 1},
    {64, 128, 32, 64, 64, 4, 4, 1, 1},
    {128, 128, 32, 128, 64, 4, 2, 1, 1},
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

/// The wgmma configs of Space(), before every other kind's: 3xTF32 LA=0
/// (PROMOTE 1 and 2), LA=1 and LA=2 (WgmmaLa2), then TF32 LA=0 (each with
/// its WS twin, WgmmaTmaTwin's with WS 2 and 3, kWgmmaTmaSmall with WS 2,
/// kWgmmaTmaCluster with WS 4), LA=1 and LA=2. LA, PROMOTE and WS are named only where
/// they are not their if_absent values.
void WgmmaSpace(std::vector<Config>& space) {
  auto wgmma = [&](const std::array<int64_t, 9>& p, int64_t passes, int64_t la,
                   int64_t promote = 1, int64_t ws = 0) {
    Config c = Base(kCode, Tf32Fixed());
    const auto& [bm, bn, bk, wm, wn, stages, splitk, group, minb] = p;
    for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                        {"WM", wm}, {"WN", wn}, {"STAGES", stages}, {"SPLITK", splitk},
                        {"PASSES", passes}, {"GROUP", group}, {"MINB", minb}}) {
      c[k] = v;
    }
    if (la != 1) c["LA"] = la;
    if (promote != 1) c["PROMOTE"] = promote;
    if (ws != 0) c["WS"] = ws;
    AddOnce(space, c);
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
  for (const auto& p : kWgmmaRsTf32) {
    if (!WgmmaTmaTwin(p)) continue;
    for (int64_t ws : {2, 3}) wgmma(p, 1, 0, 1, ws);
  }
  for (const auto& p : kWgmmaTmaSmall) wgmma(p, 1, 0, 1, 2);
  for (const auto& p : kWgmmaTmaCluster) wgmma(p, 1, 0, 1, 4);
  for (const auto& p : kWgmmaTf32) wgmma(p, 1, 1);
  for (const auto& p : kWgmmaTf32) {
    if (WgmmaLa2(p)) wgmma(p, 1, 2);
  }
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
/// BM (128 or 256; WS 2 to 4 also 64), WN 64, STAGES >= 4 (RsTile's K loop copies STAGES - 2
/// tiles ahead on its 4-byte path), and 3xTF32 only at 128x128; LA=0 (WS
/// included) takes NN, NT and TT, not TN (wgmma's shared operand is A's
/// K-major rows, copied as stored; TT computes C^T = B A, whose shared
/// operand is B's rows; in TN neither is k-contiguous), and in NT TF32 only
/// (3xTF32 with B^T's fragments spills). PROMOTE other than 1: 3xTF32 with
/// LA=0 only.
absl::Status CheckWgmma(const Config& config, const v1::Device& device) {
  const WgmmaTile t = GetWgmma(config);
  if (device.cc_major() != 9 || device.cc_minor() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=6 needs wgmma (sm_90a: compute capability 9.0), the device is ",
        device.cc_major(), ".", device.cc_minor()));
  }
  if (t.passes != 1 && t.passes != 3) {
    return absl::FailedPreconditionError(absl::StrCat("KIND=6 takes PASSES 1 or 3, not ", t.passes));
  }
  if (t.ws != 0 && (t.la != 0 || t.passes != 1 || t.bn != 128 || t.minb != 1)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "WS=", t.ws, " (warp-specialized) is TF32's with LA=0, BN 128 (two consumer "
        "warpgroups) and MINB 1; this config has PASSES=", t.passes, ", LA=", t.la, ", BN=", t.bn,
        ", MINB=", t.minb, ", which take WS=0"));
  }
  if (t.Kred() && (t.splitk < 2 || t.splitk > 4)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "WS=4 (split-K reduced in a cluster of SPLITK CTAs) takes SPLITK 2..4, not ", t.splitk));
  }
  if (t.Tma() && (t.splitk > 8 || t.layout != v1::LAYOUT_NN)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "WS=", t.ws, " (both operands by TMA, sgemm_wgmma_tma) takes SPLITK 1..8 and layout NN "
        "(B's tile is N-major 32 x 32 boxes), not SPLITK=", t.splitk, " in ",
        EnumName(static_cast<v1::Layout>(t.layout))));
  }
  if (t.la == 0 && t.layout == v1::LAYOUT_TN) {
    return absl::FailedPreconditionError(absl::StrCat(
        "LA=0", t.ws != 0 ? " with WS=1" : "", " (the register-A form) does not take TN: "
        "wgmma's shared operand (A's rows, or in TT B's) must be K-major for .tf32, which ",
        t.ws != 0 ? "TMA and " : "", "cp.async copy as stored (no transposition; LA 1 and 2 "
        "transpose in registers), and in TN neither A^T's storage (K x M) nor B's (K x N) is "
        "k-contiguous"));
  }
  if (t.la == 0 && t.passes == 3 && t.layout == v1::LAYOUT_NT) {
    return absl::FailedPreconditionError(absl::StrCat(
        "LA=0 3xTF32 with op(B) = B^T (B^T's fragments by ldmatrix) spills under its 255 "
        "registers (4 to 8 bytes, NVRTC 13.0); layout ",
        EnumName(static_cast<v1::Layout>(t.layout)), " takes LA=0 for TF32 (PASSES 1) only"));
  }
  if (At(config, "PROMOTE") != 1 && (t.la != 0 || t.passes != 3)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "PROMOTE=", At(config, "PROMOTE"), " is 3xTF32's with LA=0 (PASSES 3); this config has "
        "PASSES=", t.passes, ", LA=", t.la, ", which take PROMOTE=1"));
  }
  if (t.la == 0 && (t.bk != 32 || t.wm != t.bm || t.wn != 64 ||
                    (t.bm != 128 && t.bm != 256 && (t.bm != 64 || !t.Tma())) ||
                    (t.passes == 3 && (t.bm != 128 || t.bn != 128)))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "LA=0 (the register-A form) takes BK 32, WM = BM (128 or 256; WS 2 to 4 also 64) and "
        "WN 64 (3xTF32: BM = BN = 128), not "
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
       t.la == 0 ? "STAGES x ((1 or 2) x BM x BK + B's tile floats, to 1024 bytes) + 1024"
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

/// sgemm.cuh, warp.cuh, mma_tf32.cuh (its Split), hopper.cuh and wgmma_tf32.cuh,
/// wgmma_tile.cuh, wgmma_rs.cuh and wgmma_kernels.cuh;
/// "sgemm_wgmma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB,LA>" (with
/// PROMOTE appended where it is not 1) or, WS=1,
/// "sgemm_wgmma_ws<BM,STAGES,SPLITK,GROUP>"; WS 2, 3 and 4: sgemm.cuh,
/// mma_tf32.cuh (Tf32), hopper.cuh, wgmma_tf32.cuh (WgmmaRs),
/// wgmma16_ops.cuh (the descriptor, cluster and TMA helpers) and
/// wgmma_tf32_tma.cuh, "sgemm_wgmma_tma<BM,STAGES,GROUP,1,MCAST,SPLITK,0>"
/// (WS 4: "sgemm_wgmma_tma<BM,STAGES,GROUP,0,1,SPLITK,1>"); and the
/// option "--gpu-architecture=sm_90a" (kWgmmaArchOption).
KernelSource WgmmaSource(const Config& config, v1::DType /*dtype*/) {
  const WgmmaTile t = GetWgmma(config);
  if (t.Tma()) {
    return {{"gemm/sgemm.cuh", "gemm/warp.cuh", "gemm/mma_tf32.cuh", "gemm/hopper.cuh",
             "gemm/wgmma_tf32.cuh", "gemm/wgmma16_ops.cuh", "gemm/wgmma_tf32_tma.cuh"},
            absl::StrCat("sgemm_wgmma_tma<", t.bm, ",", t.stages, ",", At(config, "GROUP"), ",",
                         t.Kred() ? 0 : 1, ",", t.Mcast(), ",", t.splitk, ",", t.Kred() ? 1 : 0,
                         ">"),
            {std::string(kWgmmaArchOption)}};
  }
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
    // PROMOTE: the template's default 1 unnamed (the expressions of the stored
    // configs), unless LAYOUT, the argument after it, follows (Source).
    if (At(config, "PROMOTE") != 1 || At(config, "LAYOUT") != 0) {
      args.push_back(At(config, "PROMOTE"));
    }
  }
  return {{"gemm/sgemm.cuh", "gemm/warp.cuh", "gemm/mma_tf32.cuh", "gemm/hopper.cuh",
           "gemm/wgmma_tf32.cuh", "gemm/wgmma_tile.cuh", "gemm/wgmma_rs.cuh",
           "gemm/wgmma_kernels.cuh"},
          absl::StrCat(entry, "<", absl::StrJoin(args, ","), ">"),
          {std::string(kWgmmaArchOption)}};
}

/// grid = {ceil(M / BM) * ceil(N / BN), SPLITK, 1}, block =
/// {(BM/WM)*(BN/WN)*128, 1, 1} (warpgroups; WS: 128 more, the producer),
/// dynamic shared memory WgmmaTile::SharedBytes(), prescale_output when
/// SPLITK > 1; WS: A's tensor map (dims K, M; box BK x BM; 128-byte
/// swizzle), passed after C, then B's (its rows as stored: NN K rows of N,
/// NT N rows of K; box 32 x 8, no swizzle; never read by TMA, it tells the
/// kernel that B comes 16-byte aligned at a pitch of a multiple of 4
/// floats), both staged where TMA's rules fail (TensorMap.stage). LA=0 in
/// TT (RsSwapped): the grid and the maps of the swapped problem, C^T = B A:
/// ceil(N / BM) * ceil(M / BN) tiles, A's map over B (dims K, N), B's over
/// A (K rows of M). WS 2 and 3: a persistent grid {min(T, SMs / MCAST) x
/// MCAST, 1, 1} of T = ceil(ceil(M / BM) / MCAST) * ceil(N / BN) * SPLITK
/// units, and B's map read by TMA (box 32 x 32, 128-byte swizzle); WS 4:
/// {ceil(M / BM) * ceil(N / BN), 1, SPLITK}, one CTA a split, no
/// prescale_output.
v1::LaunchGeometry WgmmaGeometry(const Config& config, const Shape& shape,
                                 const v1::Device& device, v1::DType /*dtype*/) {
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
  const WgmmaTile t = GetWgmma(config);
  const Shape problem = t.RsSwapped() ? Shape{shape[1], shape[0], shape[2]} : shape;
  v1::LaunchGeometry g = TileGeometry(problem, bm, bn, t.splitk, t.Threads(), t.SharedBytes());
  if (t.Kred()) {
    // One CTA a split of a tile; the SPLITK CTAs of a tile (a cluster
    // along z) reduce their partial sums themselves.
    g.set_grid(0, static_cast<uint32_t>(CeilDiv(problem[0], bm) * CeilDiv(problem[1], bn)));
    g.set_grid(1, 1);
    g.set_grid(2, static_cast<uint32_t>(t.splitk));
    g.set_prescale_output(false);
  } else if (t.Tma()) {
    // A persistent grid of cluster units (MCAST tiles along M, SPLITK units
    // a tile): as many clusters as the device runs at once, SMs / MCAST
    // (gemm16's rule). SPLITK > 1 keeps TileGeometry's prescale_output.
    const int64_t mcast = t.Mcast();
    const int64_t units =
        CeilDiv(CeilDiv(problem[0], bm), mcast) * CeilDiv(problem[1], bn) * t.splitk;
    const int64_t resident = device.sm_count() >= mcast ? device.sm_count() / mcast : units;
    g.set_grid(0, static_cast<uint32_t>(mcast * std::min(units, resident)));
    g.set_grid(1, 1);
    g.set_grid(2, 1);
  }
  if (t.ws != 0) {  // A (M x K, row-major; TT: B, N x K) by TMA: BM rows of 32 floats a copy
    v1::TensorMap* a = g.add_tensor_maps();
    a->set_pointer_arg(t.RsSwapped() ? kSgemmArgA + 1 : kSgemmArgA);
    a->add_dims(static_cast<uint64_t>(problem[2]));
    a->add_dims(static_cast<uint64_t>(problem[0]));
    a->add_strides_bytes(static_cast<uint64_t>(problem[2]) * kBytesPerElement);
    a->add_box(static_cast<uint32_t>(t.bk));
    a->add_box(static_cast<uint32_t>(t.bm));
    a->set_swizzle_bytes(128);
    a->set_param(static_cast<uint32_t>(Arguments().size()));  // after C
    a->set_stage(true);
    // B in the kernel's terms (TT: A, K x M): NT's stored N x K, else K x N.
    const bool tb = t.layout == v1::LAYOUT_NT;
    const int64_t inner = tb ? problem[2] : problem[1], outer = tb ? problem[1] : problem[2];
    v1::TensorMap* b = g.add_tensor_maps();
    b->set_pointer_arg(t.RsSwapped() ? kSgemmArgA : kSgemmArgA + 1);
    b->add_dims(static_cast<uint64_t>(inner));
    b->add_dims(static_cast<uint64_t>(outer));
    b->add_strides_bytes(static_cast<uint64_t>(inner) * kBytesPerElement);
    // WS 2, 3: read by TMA, 32 x 32 boxes in the 128-byte swizzle.
    b->add_box(32);
    b->add_box(t.Tma() ? 32 : 8);
    b->set_swizzle_bytes(t.Tma() ? 128 : 0);
    b->set_param(a->param() + 1);
    b->set_stage(true);
  }
  return g;
}

/// Tf32Name with "wgmma", e.g. "sgemm_wgmma_128x128x32_w64x128_s3_g8_b1_3xtf32".
std::string WgmmaName(const Config& config, v1::DType /*dtype*/) {
  return Tf32Name(config, "wgmma");
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(wgmma_tf32, {.name = "wgmma_tf32", .label = "wgmma", .form = Form::kF32, .code = kCode, .order = 0, .params = {"BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK", "PASSES", "GROUP", "MINB", "LA", "PROMOTE", "WS"}, .fixed = Tf32Fixed(), .admits = AdmitsTf32, .space = WgmmaSpace, .check = CheckWgmma, .config_name = WgmmaName, .source = WgmmaSource, .geometry = WgmmaGeometry, .model_features = TileFeatures});
