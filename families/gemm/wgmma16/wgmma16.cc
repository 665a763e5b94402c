// The wgmma16 kind, KIND 2 of the 16-bit forms: gemm16_wgmma<DTYPE,BM,BN,
// BK,STAGES,GROUP,LAYOUT,SPLITK,PERSIST,CONSUMERS,...>
// (kernels_src/gemm/wgmma16.cuh), sm_90a: Hopper's warpgroup tensor cores,
// A and B copied by TMA in 128-byte swizzled stages by a producer
// warpgroup, CONSUMERS warpgroups of wgmma.mma_async m64nNk16, each operand
// read in its own layout; persistent, or split-K in a cluster; B or A
// multicast in a cluster; C stored by TMA. Its configs, rules, name,
// source and launch geometry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "tuned/dtype.h"

namespace tuned::gemm {
namespace {

/// KIND of the wgmma16 kind's configs.
constexpr int64_t kCode = 2;

/// Bytes of one element of A, B and C.
constexpr int64_t kBytes16 = 2;

/// The wgmma kind's configs (BM, BN, STAGES, SPLITK, PERSIST, CONSUMERS,
/// MCAST, EPI, MCASTN, ACCS), BK 64, GROUP 8: the fastest per shape class of the probe on
/// an H100 (bench/RESULTS.md gemm16-wgmma-probe): 128x256 and
/// 256x128 tiles, persistent and not, for large shapes (0.93-1.01x cuBLAS
/// from 2048^3 up); 128x128 persistent for mid-size and small-K shapes;
/// 128x64 for small ones; split-K 2 of it for M of 128; one consumer
/// warpgroup of 64 rows for N of 128 and, with split-K 2, M of 16. Then
/// the forms with B multicast (MCAST 2) and the C tile stored by TMA (EPI
/// 1), each the fastest somewhere in the probe on an H200
/// (bench/RESULTS.md gemm16-mcast-epi): 128x128 with both for
/// 4096x11008x4096, 2048^3, 1000^3 and 4096x4096x64 (1.5x the form without
/// them there); 128x256 with both for 4096^3; 128x64 and 64x128 persistent
/// with EPI for 1024^3, 512^3, M of 128 and N of 128. Then, with the
/// descriptors kept in uniform registers, 128x256 and 128x128 persistent
/// with EPI and without MCAST: the fastest at 4096^3, 8192^3 and
/// 4096x11008x4096 (128x256) and at 2048^3 (128x128), and one consumer of
/// 64x256 with both for 3000x2000x1500 (bench/RESULTS.md gemm16-uniform).
/// Then C stored a 64 x 64 box at a time (EPI 2), which leaves room for 4
/// stages: 128x256 with and without MCAST and 256x128, the fastest of the
/// probe at 4096^3, 4096x11008x4096 and 8192^3 in bf16 (0.6-1.3% over EPI
/// 1; bench/RESULTS.md gemm16-epi2). Then one consumer of
/// 64x128 with both, the probe's fastest at 1000^3 once MCAST's cluster
/// lost its exit barrier (0.90x cuBLAS against 0.84x for the suite's
/// 128x128; bench/RESULTS.md gemm16-mcast-tail). Then A
/// multicast along N (MCASTN 2): 128x128 in a 2 x 2 cluster, 0.93x cuBLAS
/// at 1000^3 in bf16 against 0.90x for 64x128, and 128x64 in two along N
/// (cuBLAS's own form there), 0.96x in f16 against 0.90x
/// (bench/RESULTS.md gemm16-cluster2d). Then two accumulator
/// sets (ACCS 2) for the forms of long K loops on few tiles: split-K 2 of
/// 128x64 at M of 128 (0.99 -> 1.02x cuBLAS at 128x4096x4096) and one
/// consumer of 64x128 with MCAST and EPI at N of 128 (1.00 -> 1.02x at
/// 8192x128x8192), bf16 (bench/RESULTS.md gemm16-accs).
constexpr std::array<std::array<int64_t, 10>, 24> kWgmmaConfigs = {{
    {128, 256, 4, 1, 1, 2, 1, 0, 1, 1},
    {128, 256, 4, 1, 0, 2, 1, 0, 1, 1},
    {256, 128, 4, 1, 1, 2, 1, 0, 1, 1},
    {256, 128, 4, 1, 0, 2, 1, 0, 1, 1},
    {128, 128, 6, 1, 1, 2, 1, 0, 1, 1},
    {128, 64, 8, 1, 0, 2, 1, 0, 1, 1},
    {128, 64, 6, 2, 0, 2, 1, 0, 1, 1},
    {64, 128, 8, 1, 0, 1, 1, 0, 1, 1},
    {64, 128, 8, 2, 0, 1, 1, 0, 1, 1},
    {128, 128, 6, 1, 1, 2, 2, 1, 1, 1},
    {128, 256, 3, 1, 1, 2, 2, 1, 1, 1},
    {128, 64, 8, 1, 1, 2, 1, 1, 1, 1},
    {64, 128, 8, 1, 1, 1, 1, 1, 1, 1},
    {128, 256, 3, 1, 1, 2, 1, 1, 1, 1},
    {128, 128, 6, 1, 1, 2, 1, 1, 1, 1},
    {64, 256, 4, 1, 1, 1, 2, 1, 1, 1},
    {128, 256, 4, 1, 1, 2, 1, 2, 1, 1},
    {128, 256, 4, 1, 1, 2, 2, 2, 1, 1},
    {256, 128, 4, 1, 1, 2, 1, 2, 1, 1},
    {64, 128, 8, 1, 0, 1, 2, 1, 1, 1},
    {128, 128, 6, 1, 0, 2, 2, 1, 2, 1},
    {128, 64, 8, 1, 0, 2, 1, 1, 2, 1},
    {128, 64, 8, 2, 0, 2, 1, 0, 1, 2},
    {64, 128, 8, 1, 0, 1, 2, 1, 1, 2},
}};

/// The wgmma kind's STAGED configs (BM, BN, STAGES, SPLITK, PERSIST,
/// STAGED), CONSUMERS 2, BK 64, GROUP 8, for problems whose A or B pitch
/// TMA cannot take (StagedSuitsShape): the fastest of the probe on an H100
/// (bench/RESULTS.md gemm16-staged): 128x256 for one such
/// operand (1.48x cuBLAS at 4096x4096x4097), 256x128 where it is B with a
/// small M (1024x50257x1024), 128x128 with three raw buffers for mid-size
/// shapes, and split-K 2 of 128x64 for small ones.
constexpr std::array<std::array<int64_t, 6>, 4> kWgmmaStagedConfigs = {{
    {128, 256, 2, 1, 1, 2},
    {256, 128, 2, 1, 1, 2},
    {128, 128, 2, 1, 1, 3},
    {128, 64, 4, 2, 0, 2},
}};

/// Bytes of one raw slot of STAGED (copy16.cuh's kRawSlot): a 64-element
/// row's 16-byte-aligned span.
constexpr int64_t kRawSlot = 144;

/// The wgmma kind's threads: CONSUMERS warpgroups and the producer's.
int64_t WgmmaThreads(const Config& c) { return 128 * (Get(c, "CONSUMERS") + 1); }

/// The wgmma kind's dynamic shared memory (wgmma16.cuh's launch rules):
/// STAGES stages of the A and B tiles (BM + BN rows of BK = 64 elements,
/// 128 bytes), EPI 1's BM x BN C tile or EPI 2's two 64 x 64 boxes a
/// consumer warpgroup (16 KB each), 1024 bytes to align them to the
/// swizzle's period, the stages' two mbarriers (16 bytes), STAGED raw
/// buffers of BM + BN slots with their two mbarriers, and SPLITK's receive
/// buffer (the SPLITK - 1 peers' fp32 partial sums of this rank's
/// ceil(BN / 32 / SPLITK) 32-column groups) with its mbarrier.
int64_t WgmmaSharedBytes(const Config& c) {
  const int64_t rows = Get(c, "BM") + Get(c, "BN"), splitk = At1(c, "SPLITK");
  const int64_t recv =
      splitk > 1 ? (splitk - 1) * CeilDiv(Get(c, "BN") / 32, splitk) * 128 * Get(c, "BM") + 8 : 0;
  const int64_t epi = Get(c, "EPI") == 1   ? Get(c, "BM") * Get(c, "BN") * kBytes16
                      : Get(c, "EPI") == 2 ? Get(c, "CONSUMERS") * 2 * 64 * 64 * kBytes16
                                           : 0;
  return Get(c, "STAGES") * rows * Get(c, "BK") * kBytes16 + epi + 1024 + 16 * Get(c, "STAGES") +
         Get(c, "STAGED") * (rows * kRawSlot + 16) + recv;
}

/// wgmma16.cuh's static_asserts and the device: compute capability 9.0
/// (sm_90a); CONSUMERS 1 or 2; BM = 64 * CONSUMERS * MI with MI (m64
/// wgmmas per consumer) 1 or 2; BN 64, 128 or 256 with MI * BN <= 256 (128
/// fp32 accumulators a thread); BK 64; STAGES >= 2 within the opt-in shared
/// memory; SPLITK's partial sums (BM * BN * 4 bytes) within the stages'
/// shared memory; a persistent grid only without split-K.
absl::Status CheckWgmma(const Config& c, const v1::Device& device) {
  if (device.cc_major() != 9 || device.cc_minor() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=2 needs wgmma (sm_90a: compute capability 9.0), the device is ", device.cc_major(),
        ".", device.cc_minor()));
  }
  const int64_t bm = Get(c, "BM"), bn = Get(c, "BN"), bk = Get(c, "BK"), stages = Get(c, "STAGES");
  const int64_t consumers = Get(c, "CONSUMERS");
  if (consumers != 1 && consumers != 2) {
    return absl::FailedPreconditionError("KIND=2 takes CONSUMERS 1 or 2");
  }
  const int64_t mi = bm / (64 * consumers);
  if (bm % (64 * consumers) != 0 || (mi != 1 && mi != 2)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=2 needs BM = 64 * CONSUMERS * (1 or 2); got BM=", bm, " CONSUMERS=", consumers));
  }
  if ((bn != 64 && bn != 128 && bn != 256) || mi * bn > 256) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=2 needs BN 64, 128 or 256 with (BM / 64 / CONSUMERS) * BN <= 256 (fp32 accumulators); "
        "got BM=", bm, " BN=", bn));
  }
  if (bk != 64) return absl::FailedPreconditionError("KIND=2 takes BK=64 (one 128-byte swizzled row)");
  // erff's evaluation beside two m64 blocks of accumulators a consumer:
  // ptxas spilled 4 to 12 bytes (tests/gemm_epilogue16_test.cc compiles the rest).
  if (Get(c, "EPILOGUE") == v1::EPILOGUE_BIAS_GELU_ERF && mi == 2 && consumers == 2) {
    return absl::FailedPreconditionError(
        "KIND=2 with BM=256 (two m64 blocks a consumer) has no registers for the erf GELU epilogue");
  }
  if (stages < 2) return absl::FailedPreconditionError("KIND=2 needs STAGES >= 2");
  const int64_t staged = Get(c, "STAGED");
  if (staged != 0 && staged != 2 && staged != 3) {
    return absl::FailedPreconditionError(absl::StrCat("KIND=2 takes STAGED 0, 2 or 3; got ", staged));
  }
  if (staged != 0 && (bm + bn) % (consumers * 16) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "STAGED: the consumers' ", consumers * 16, " segments a pass must divide BM + BN = ", bm + bn));
  }
  // MCAST's, MCASTN's and EPI's values are the parameters' own (Family::Check).
  const int64_t cluster = At1(c, "MCAST") * At1(c, "MCASTN");
  if (cluster > 4) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MCAST * MCASTN (the multicast cluster's CTAs) is at most 4; got ", cluster));
  }
  if (cluster > 1 && (At1(c, "SPLITK") > 1 || staged != 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MCAST=", At1(c, "MCAST"), " MCASTN=", At1(c, "MCASTN"),
        " (a multicast cluster) takes neither SPLITK > 1 (a cluster along K) nor STAGED"));
  }
  // ACCS's values are the parameter's own (Family::Check).
  if (At1(c, "ACCS") == 2 && mi * bn > 128) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ACCS=2 needs BM / CONSUMERS / 64 * BN <= 128 (two sets of that many / 2 accumulators a "
        "thread); got ", mi * bn));
  }
  if (At1(c, "SPLITK") > 1 && Get(c, "PERSIST") != 0) {
    return absl::FailedPreconditionError("KIND=2 takes PERSIST=1 only with SPLITK=1");
  }
  if (Get(c, "EPI") != 0 && At1(c, "SPLITK") > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("EPI=", Get(c, "EPI"), " (C stored by TMA) takes no SPLITK > 1"));
  }
  const int64_t smem = WgmmaSharedBytes(c);
  if (smem > device.shared_memory_per_block_optin()) {
    return absl::FailedPreconditionError(absl::StrCat(
        smem, " bytes of shared memory (STAGES * (BM + BN) * 128 + EPI's C buffers + 1024 + 16 * "
        "STAGES + STAGED * ((BM + BN) * 144 + 16) + SPLITK's receive buffer) exceed the device's "
        "opt-in limit of ",
        device.shared_memory_per_block_optin()));
  }
  return absl::OkStatus();
}

/// A 2-D tensor map of `dtype` (an element type: DTYPE_BF16, DTYPE_F16 or
/// DTYPE_F32) over pointer argument `arg` (A: 4, B: 5, C: 7), passed as
/// kernel parameter `param`: `inner` x `outer` elements with a row pitch of
/// `inner` elements, a box of 128 bytes (64 16-bit or 32 fp32 elements) x
/// `box_outer`, the 128-byte swizzle; `stage`: TensorMap.stage. A map of A
/// or B whose rows TMA takes as they are (a pitch of a multiple of
/// 16 bytes) but which do not start on 128-byte lines gets 128-byte L2
/// promotion: with 256 bytes, 1000^3 ran 128x64 at 15.6 us and 64x128 with
/// MCAST at 12.4 us, with 128 bytes at 14.1 and 11.9 us; at 1024^3 the
/// promotion made no difference (bf16, H100, a timeline probe:
/// bench/RESULTS.md gemm16-timeline). In the client's
/// timing, the suite's 1000^3 went from 0.93-0.95x cuBLAS to 1.00x
/// (bench/RESULTS.md gemm16-suite).
void AddMap(v1::LaunchGeometry& g, uint32_t arg, uint32_t param, int64_t inner, int64_t outer,
            int64_t box_outer, v1::DType dtype, bool stage = false) {
  const int64_t bytes = ElementBytes(dtype);
  const int64_t pitch = inner * bytes;
  v1::TensorMap* m = g.add_tensor_maps();
  m->set_pointer_arg(arg);
  m->add_dims(static_cast<uint64_t>(inner));
  m->add_dims(static_cast<uint64_t>(outer));
  m->add_strides_bytes(static_cast<uint64_t>(inner * bytes));
  m->add_box(static_cast<uint32_t>(128 / bytes));
  m->add_box(static_cast<uint32_t>(box_outer));
  m->set_swizzle_bytes(128);
  m->set_param(param);
  m->set_dtype(dtype);
  m->set_stage(stage);
  if (arg != kSgemmArgC && pitch % 16 == 0 && pitch % 128 != 0) m->set_l2_promotion_bytes(128);
}

/// kWgmmaConfigs' configs, then kWgmmaStagedConfigs'.
void Wgmma16Space(std::vector<Config>& space) {
  for (const auto& [bm, bn, stages, splitk, persist, consumers, mcast, epi, mcastn, accs] :
       kWgmmaConfigs) {
    Config c = {{"KIND", kCode},   {"BM", bm},      {"BN", bn},
                {"BK", 64},         {"STAGES", stages}, {"GROUP", 8},
                {"CONSUMERS", consumers}};
    if (splitk > 1) c["SPLITK"] = splitk;
    if (persist != 0) c["PERSIST"] = persist;
    if (mcast > 1) c["MCAST"] = mcast;
    if (epi != 0) c["EPI"] = epi;
    if (mcastn > 1) c["MCASTN"] = mcastn;
    if (accs > 1) c["ACCS"] = accs;
    AddOnce(space, c);
  }
  for (const auto& [bm, bn, stages, splitk, persist, staged] : kWgmmaStagedConfigs) {
    Config c = {{"KIND", kCode},   {"BM", bm},         {"BN", bn},        {"BK", 64},
                {"STAGES", stages}, {"GROUP", 8},       {"CONSUMERS", 2}, {"STAGED", staged}};
    if (splitk > 1) c["SPLITK"] = splitk;
    if (persist != 0) c["PERSIST"] = persist;
    AddOnce(space, c);
  }
}

/// OK unless the config is STAGED (> 0) and both of the shape's pitches
/// (in the config's LAYOUT: A's K or M, B's N or K) are multiples of 8
/// elements, where TMA copies both operands and STAGED only costs stages
/// (FAILED_PRECONDITION).
absl::Status StagedSuitsShape(const Config& config, const Shape& shape) {
  if (Get(config, "STAGED") == 0) return absl::OkStatus();
  const int64_t layout = Get(config, "LAYOUT");
  const int64_t lda = TransposedA(layout) ? shape[0] : shape[2];
  const int64_t ldb = TransposedB(layout) ? shape[2] : shape[1];
  if (lda % 8 != 0 || ldb % 8 != 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "STAGED=", Get(config, "STAGED"), " is for a pitch TMA cannot take; A's (", lda, ") and B's (",
      ldb, ") are multiples of 8 elements"));
}

/// "gemm_<dtype>_wgmma_<BM>x<BN>x<BK>_s<STAGES>_g<GROUP>_c<CONSUMERS>", then
/// "_sk<SPLITK>" where above 1, "_p" where PERSIST=1, "_r<STAGED>" where
/// STAGED > 0, "_m<MCAST>", "_e<EPI>", "_n<MCASTN>" and "_a2" where set,
/// and LayoutSuffix().
std::string Wgmma16Name(const Config& config, v1::DType dtype) {
  const std::string split =
      At1(config, "SPLITK") > 1 ? absl::StrCat("_sk", At1(config, "SPLITK")) : "";
  return absl::StrCat("gemm_", DTypeText(dtype), "_wgmma_", Get(config, "BM"), "x",
                      Get(config, "BN"), "x", Get(config, "BK"), "_s", Get(config, "STAGES"), "_g",
                      At1(config, "GROUP"), "_c", Get(config, "CONSUMERS"), split,
                      Get(config, "PERSIST") != 0 ? "_p" : "",
                      Get(config, "STAGED") != 0 ? absl::StrCat("_r", Get(config, "STAGED")) : "",
                      At1(config, "MCAST") > 1 ? absl::StrCat("_m", At1(config, "MCAST")) : "",
                      Get(config, "EPI") != 0 ? absl::StrCat("_e", Get(config, "EPI")) : "",
                      At1(config, "MCASTN") > 1 ? absl::StrCat("_n", At1(config, "MCASTN")) : "",
                      At1(config, "ACCS") > 1 ? "_a2" : "", LayoutSuffix(config));
}

/// sgemm.cuh, half16.cuh, hopper.cuh, copy16.cuh, wgmma16_ops.cuh,
/// wgmma16_epilogue.cuh and wgmma16.cuh, "gemm16_wgmma<DTYPE,BM,BN,BK,
/// STAGES,GROUP,LAYOUT,SPLITK,PERSIST,CONSUMERS[,STAGED[,MCAST,EPI[,MCASTN
/// [,ACCS]]]]>" (the trailing ones as far as one is not its default) and
/// kWgmmaArchOption.
KernelSource Wgmma16Source(const Config& config, v1::DType dtype) {
  KernelSource s;
  const int d = static_cast<int>(dtype);
  // sgemm.cuh: sgemm_detail::RasterTile; half16.cuh: the 16-bit conversions;
  // hopper.cuh: mbarriers, TMA, wgmma's fence, commit and wait; copy16.cuh:
  // the copies without TMA; wgmma16_ops.cuh: the wgmma instruction,
  // descriptors, cluster and shared-memory primitives; wgmma16_epilogue.cuh:
  // the tile's stores into C.
  s.parts = {"gemm/sgemm.cuh",       "gemm/half16.cuh",           "gemm/hopper.cuh",
             "gemm/copy16.cuh",      "gemm/wgmma16_ops.cuh",      "gemm/wgmma16_epilogue.cuh",
             "gemm/wgmma16.cuh"};
  // The trailing parameters STAGED, MCAST, EPI, MCASTN, ACCS only as far
  // as one is not its default (the instantiations of the configs without
  // them unchanged).
  const bool accs = At1(config, "ACCS") > 1;
  const bool mcastn = At1(config, "MCASTN") > 1 || accs;
  const bool tail = At1(config, "MCAST") > 1 || Get(config, "EPI") != 0 || mcastn;
  s.name_expression = absl::StrCat(
      "gemm16_wgmma<", d, ",", Get(config, "BM"), ",", Get(config, "BN"), ",", Get(config, "BK"),
      ",", Get(config, "STAGES"), ",", At1(config, "GROUP"), ",", Get(config, "LAYOUT"), ",",
      At1(config, "SPLITK"), ",", Get(config, "PERSIST"), ",", Get(config, "CONSUMERS"),
      Get(config, "STAGED") != 0 || tail ? absl::StrCat(",", Get(config, "STAGED")) : "",
      tail ? absl::StrCat(",", At1(config, "MCAST"), ",", Get(config, "EPI")) : "",
      mcastn ? absl::StrCat(",", At1(config, "MCASTN")) : "",
      accs ? absl::StrCat(",", At1(config, "ACCS")) : "", ">");
  s.options = {std::string(kWgmmaArchOption)};
  return s;
}

/// grid = {tiles, 1, SPLITK} of MCAST x MCASTN clusters, or with PERSIST=1
/// as many clusters as the device runs at once; block = {128 *
/// (CONSUMERS + 1), 1, 1}; WgmmaSharedBytes(); A's, B's and C's tensor maps
/// of `dtype` (128-byte swizzle; a K-major operand one box of 64 k x BM or
/// BN rows, an M- or N-major one boxes of 64 x 64), passed after C (and a
/// fused entry's bias). No prescaling of C: nothing adds into it.
v1::LaunchGeometry Wgmma16Geometry(const Config& config, const Shape& shape,
                                   const v1::Device& device, v1::DType dtype) {
  const int64_t bm = Get(config, "BM"), bn = Get(config, "BN");
  v1::LaunchGeometry g;
  // Cluster tiles: MCAST x MCASTN output tiles (MCAST along M, MCASTN
  // along N). A persistent grid holds as many clusters as the device runs
  // at once: SMs / 2 for clusters of 2 (cudaOccupancyMaxActiveClusters gave
  // 66 clusters of 2 on 132 SMs,
  // bench/RESULTS.md gemm16-mcast-epi),
  // and 30 clusters of 4 on an H100's 132
  // (bench/RESULTS.md gemm16-cluster2d): SMs * 30 / 132 for 4.
  const bool persist = Get(config, "PERSIST") != 0;
  const int64_t mcast = At1(config, "MCAST"), mcastn = At1(config, "MCASTN");
  const int64_t csize = mcast * mcastn;
  const int64_t units = CeilDiv(CeilDiv(shape[0], bm), mcast) * CeilDiv(CeilDiv(shape[1], bn), mcastn);
  const int64_t resident = csize >= 4   ? device.sm_count() * 30 / 132
                           : device.sm_count() >= csize ? device.sm_count() / csize
                                                        : units;
  for (int64_t d : {csize * (persist ? std::min(units, std::max<int64_t>(resident, 1)) : units),
                    int64_t{1},
                    persist ? int64_t{1} : At1(config, "SPLITK")}) {
    g.add_grid(static_cast<uint32_t>(d));
  }
  for (int64_t d : {WgmmaThreads(config), int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(d));
  g.set_dynamic_shared_bytes(static_cast<uint32_t>(WgmmaSharedBytes(config)));
  const int64_t m = shape[0], n = shape[1], k = shape[2], layout = Get(config, "LAYOUT");
  // The maps follow the arguments: sgemm's 8, and a fused entry's bias.
  const uint32_t after_c =
      static_cast<uint32_t>(Arguments().size()) + (Get(config, "EPILOGUE") != 0 ? 1 : 0);
  const v1::DType in = InputDType(dtype);
  // A and B, at a pitch TMA cannot take, are staged (copied with 16-byte
  // rows) and read by TMA, except by STAGED > 0, whose raw buffers take
  // such a pitch without the copy. At 4097^3 the copies cost 0.10 ms of
  // cuBLAS's 1.02 ms (bench/RESULTS.md gemm16-stage-rows).
  const bool stage = Get(config, "STAGED") == 0;
  // A: K-major (NN, NT) boxes of 64 k x BM / MCASTN rows (a rank's share of
  // the multicast); M-major (TN, TT) boxes of 64 m x 64 k.
  if (TransposedA(layout)) {
    AddMap(g, kSgemmArgA, after_c, m, k, 64, in, stage);
  } else {
    AddMap(g, kSgemmArgA, after_c, k, m, bm / mcastn, in, stage);
  }
  // B: K-major (NT, TT) boxes of 64 k x BN / MCAST rows (a rank's share of
  // the multicast); N-major (NN, TN) boxes of 64 n x 64 k.
  if (TransposedB(layout)) {
    AddMap(g, kSgemmArgA + 1, after_c + 1, k, n, bn / mcast, in, stage);
  } else {
    AddMap(g, kSgemmArgA + 1, after_c + 1, n, k, 64, in, stage);
  }
  // C (every kernel takes it; EPI 1 stores a 16-bit C through it): boxes of
  // 64 n x 64 m, or for an fp32 C (unused) 32 n x 64 m.
  AddMap(g, kSgemmArgC, after_c + 2, n, m, 64, OutputDType(dtype));
  return g;
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(wgmma16, {.name = "wgmma16", .label = "wgmma", .form = Form::k16, .code = kCode, .order = 0, .params = {"BM", "BN", "BK", "STAGES", "SPLITK", "GROUP", "PERSIST", "CONSUMERS", "STAGED", "MCAST", "EPI", "MCASTN", "ACCS"}, .admits = Admits16, .space = Wgmma16Space, .check = CheckWgmma, .config_name = Wgmma16Name, .source = Wgmma16Source, .geometry = Wgmma16Geometry, .suits_shape = StagedSuitsShape});
