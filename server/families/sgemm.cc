// The sgemm family: row-major fp32 C(MxN) = alpha * A(MxK) * B(KxN) + beta * C
// (lda = K, ldb = N, ldc = N). Kernels in kernels_src/sgemm/sgemm.cuh:
//   KIND 0  sgemm_naive<BM,BN>       one thread per output, threadIdx.x along rows
//   KIND 1  sgemm_coalesced<BM,BN>   one thread per output, threadIdx.x along columns
//   KIND 2  sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>
//           shared-memory block tiling with a TM x TN register micro-tile per thread
// One searchable space: the parameters a kind does not use take one fixed
// value (Unused() below), so each distinct kernel appears once.
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
#include "server/embedded.h"
#include "server/families/family.h"

namespace tuned {
namespace {

/// KIND values.
enum Kind : int64_t {
  kNaive = 0,      // sgemm_naive<BM,BN>
  kCoalesced = 1,  // sgemm_coalesced<BM,BN>
  kTiled = 2,      // sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>
};

constexpr const char* KindName(int64_t kind) {
  switch (kind) {
    case kNaive: return "naive";
    case kCoalesced: return "coalesced";
    case kTiled: return "tiled";
  }
  return "unknown";
}

constexpr int64_t kBytesPerElement = 4;  // fp32
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

/// The values that the naive kinds take for the parameters they do not use.
const Config& Unused() {
  static const Config unused = {{"BK", 8}, {"TM", 1}, {"TN", 1}, {"PAD", 0},
                                {"VEC", 1}, {"LOOP", 0}, {"MAP", 0}, {"DB", 0}};
  return unused;
}

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

/// The first kCore2DTiles of k2DTiles, the classic fast tiles, also get
/// PAD = 0 and the VEC = 1 and LOOP = 1 ablations.
constexpr size_t kCore2DTiles = 5;

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

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
            {"KIND", {kNaive, kCoalesced, kTiled},
             "0 = naive (one thread per output, threadIdx.x along rows: uncoalesced), "
             "1 = coalesced (one thread per output, threadIdx.x along columns), "
             "2 = tiled (shared-memory block tiling, TM x TN outputs per thread)"},
            {"BM", {8, 16, 32, 64, 128, 256},
             "rows of C per block; naive kinds: block dimension along M"},
            {"BN", {8, 16, 32, 64, 128, 256},
             "columns of C per block; naive kinds: block dimension along N"},
            {"BK", {8, 16, 32},
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
        } {}

  v1::Family id() const override { return v1::FAMILY_SGEMM; }
  std::string_view name() const override { return "sgemm"; }
  std::vector<std::string> dims() const override { return {"M", "N", "K"}; }
  std::string_view metric_unit() const override { return "GFLOPS"; }
  std::string_view baseline_name() const override { return "cuBLAS"; }
  bool baseline_is_candidate() const override { return true; }
  const std::vector<Param>& params() const override { return params_; }

  /// Flops of one GEMM: 2 * M * N * K (one multiply and one add per term;
  /// the alpha/beta epilogue is not counted, as in cuBLAS benchmarks).
  double Work(const Shape& shape) const override {
    return 2.0 * static_cast<double>(shape[0]) * static_cast<double>(shape[1]) *
           static_cast<double>(shape[2]);
  }

  /// Bytes of A (M*K), B (K*N), C (M*N) and the reference C (M*N), fp32.
  int64_t BufferBytes(const Shape& shape) const override {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    return kBytesPerElement * (m * k + k * n + 2 * m * n);
  }

  /// max(M*K, K*N, M*N): the largest of A, B and C, in elements.
  int64_t MaxBufferElements(const Shape& shape) const override {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    return std::max({m * k, k * n, m * n});
  }

  /// The space, built from groups (each config once; unused parameters take
  /// the values of Unused() for the naive kinds, LOOP = MAP = 0 where TM = TN = 1,
  /// MAP = 0 where MAP cannot change the mapping):
  ///  - naive and coalesced, blocks 16x16, 32x32, 8x32, 32x8;
  ///  - classic shared-memory tiling (TM = TN = 1), 16x16 and 32x32 tiles,
  ///    every BK, PAD, VEC, DB;
  ///  - 1-D block tiling (TN = 1, TM = 8, 16), BM 64..128, BN 32..64, BK 8..16,
  ///    every VEC and MAP, PAD = 4;
  ///  - 2-D block tiling, the fast design: the tiles of k2DTiles, BK 8..32,
  ///    every MAP and DB, PAD = 4 (and 0 for the core tiles), VEC = 4, LOOP = 0;
  ///  - ablations on the core 2-D tiles: VEC = 1 and LOOP = 1.
  /// About 45% of the points fail Check() on sm_90 (threads, uneven loads,
  /// shared memory, registers) and are pruned before compiling.
  std::vector<Config> Space() const override {
    std::vector<Config> space;
    auto add = [&](const Config& c) {
      if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
    };
    auto tiled = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t pad,
                     int64_t vec, int64_t loop, int64_t map, int64_t db) {
      if (tm == 1 && tn == 1) loop = 0;
      if (MapIsIrrelevant(tm, tn)) map = 0;
      add({{"KIND", kTiled}, {"BM", bm}, {"BN", bn}, {"BK", bk}, {"TM", tm}, {"TN", tn},
           {"PAD", pad}, {"VEC", vec}, {"LOOP", loop}, {"MAP", map}, {"DB", db}});
    };
    // Naive kinds.
    for (int64_t kind : {kNaive, kCoalesced}) {
      for (auto [bm, bn] : {std::pair<int64_t, int64_t>{16, 16}, {32, 32}, {8, 32}, {32, 8}}) {
        Config c = Unused();
        c["KIND"] = kind;
        c["BM"] = bm;
        c["BN"] = bn;
        add(c);
      }
    }
    // Classic shared-memory tiling: one output per thread.
    for (int64_t b : {16, 32}) {
      for (int64_t bk : {8, 16, 32}) {
        for (int64_t pad : {0, 4}) {
          for (int64_t vec : {1, 4}) {
            for (int64_t db : {0, 1}) tiled(b, b, bk, 1, 1, pad, vec, 0, 0, db);
          }
        }
      }
    }
    // 1-D block tiling: a column of TM outputs per thread.
    for (int64_t bm : {64, 128}) {
      for (int64_t bn : {32, 64}) {
        for (int64_t bk : {8, 16}) {
          for (int64_t tm : {8, 16}) {
            for (int64_t vec : {1, 4}) {
              for (int64_t map : {0, 1}) tiled(bm, bn, bk, tm, 1, 4, vec, 0, map, 0);
            }
          }
        }
      }
    }
    // 2-D block tiling, the fast design: float4 loads, registers outer
    // product; every BK, MAP and DB; PAD = 4, and also 0 for the core tiles.
    for (size_t i = 0; i < k2DTiles.size(); ++i) {
      const auto& [bm, bn, tm, tn] = k2DTiles[i];
      for (int64_t bk : {8, 16, 32}) {
        for (int64_t pad : {4, 0}) {
          if (pad == 0 && i >= kCore2DTiles) continue;
          for (int64_t map : {0, 1}) {
            for (int64_t db : {0, 1}) tiled(bm, bn, bk, tm, tn, pad, 4, 0, map, db);
          }
        }
      }
    }
    // Ablations on the core tiles: scalar global loads, k-innermost loop.
    for (size_t i = 0; i < kCore2DTiles; ++i) {
      const auto& [bm, bn, tm, tn] = k2DTiles[i];
      for (int64_t bk : {8, 16}) {
        for (int64_t map : {0, 1}) {
          tiled(bm, bn, bk, tm, tn, 4, 1, 0, map, 0);
          tiled(bm, bn, bk, tm, tn, 4, 4, 1, map, 0);
        }
      }
    }
    return space;
  }

  /// OK if the config runs on `device` for every shape. FAILED_PRECONDITION,
  /// naming the cause, for: an unknown or missing parameter or a value outside
  /// params(); a naive config whose unused parameters are not Unused();
  /// threads per block above the device limit, below or not a multiple of the
  /// warp (32); BM % TM or BN % TN != 0; BK % VEC != 0; A or B tile loads that
  /// do not divide evenly (BM*BK and BN*BK multiples of THREADS*VEC); static
  /// shared memory above shared_memory_per_block; RegisterEstimate() above 255
  /// or, times the threads, above registers_per_block.
  absl::Status Check(const Config& config, const v1::Device& device) const override {
    if (auto s = CheckParams(config); !s.ok()) return s;
    const int64_t kind = config.at("KIND");
    if (kind != kTiled) {
      for (const auto& [key, value] : Unused()) {
        if (config.at(key) != value) {
          return absl::FailedPreconditionError(
              absl::StrCat(key, "=", config.at(key), " is unused by KIND=", kind, " (",
                           KindName(kind), "), which takes ", key, "=", value));
        }
      }
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

  /// "sgemm_naive_<BM>x<BN>", "sgemm_coalesced_<BM>x<BN>", or
  /// "sgemm_tiled_<BM>x<BN>x<BK>_<TM>x<TN>_p<PAD>_v<VEC>_l<LOOP>_m<MAP>" with
  /// "_db" appended when DB=1, e.g. "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1_db".
  std::string ConfigName(const Config& config) const override {
    const int64_t kind = Get(config, "KIND");
    if (kind != kTiled) {
      return absl::StrCat("sgemm_", KindName(kind), "_", Get(config, "BM"), "x", Get(config, "BN"));
    }
    std::string name = absl::StrCat(
        "sgemm_tiled_", Get(config, "BM"), "x", Get(config, "BN"), "x", Get(config, "BK"), "_",
        Get(config, "TM"), "x", Get(config, "TN"), "_p", Get(config, "PAD"), "_v",
        Get(config, "VEC"), "_l", Get(config, "LOOP"), "_m", Get(config, "MAP"));
    if (Get(config, "DB") != 0) absl::StrAppend(&name, "_db");
    return name;
  }

  /// The whole of sgemm.cuh and "sgemm_naive<BM,BN>", "sgemm_coalesced<BM,BN>"
  /// or "sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>"; no extra options.
  KernelSource Source(const Config& config) const override {
    const int64_t kind = Get(config, "KIND");
    std::string expr;
    if (kind != kTiled) {
      expr = absl::StrCat("sgemm_", KindName(kind), "<", Get(config, "BM"), ",", Get(config, "BN"),
                          ">");
    } else {
      std::vector<int64_t> args;
      for (const char* p : {"BM", "BN", "BK", "TM", "TN", "PAD", "VEC", "LOOP", "MAP", "DB"}) {
        args.push_back(Get(config, p));
      }
      expr = absl::StrCat("sgemm_tiled<", absl::StrJoin(args, ","), ">");
    }
    return {embedded::kSgemmSource, std::move(expr), {}};
  }

  /// grid = {ceil(N / BN), ceil(M / BM), 1}. Where ceil(M / BM) exceeds 65535
  /// (M > 65535 * BM), grid = {ceil(N / BN), 65535, ceil(ceil(M / BM) / 65535)}:
  /// the kernels take blockIdx.z * gridDim.y + blockIdx.y as the row block and
  /// return past the last one. block = {BM, BN, 1} for naive (x along rows),
  /// {BN, BM, 1} for coalesced (x along columns), {(BM/TM)*(BN/TN), 1, 1} for
  /// tiled; static shared memory only (0 dynamic).
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape) const override {
    const int64_t kind = Get(config, "KIND");
    const int64_t bm = Get(config, "BM"), bn = Get(config, "BN");
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
        const int64_t tm = Get(config, "TM"), tn = Get(config, "TN");
        g.add_block(static_cast<uint32_t>(tm > 0 && tn > 0 ? (bm / tm) * (bn / tn) : 0));
        g.add_block(1);
      }
    }
    g.add_block(1);
    g.set_dynamic_shared_bytes(0);
    return g;
  }

  /// The kernels' common signature, in order.
  std::vector<std::string> Arguments() const override {
    return {"int M", "int N", "int K", "float alpha", "const float* A", "const float* B",
            "float beta", "float* C"};
  }

 private:
  /// The parameter's value, 0 when absent (Check() reports missing ones).
  static int64_t Get(const Config& config, const std::string& key) {
    auto it = config.find(key);
    return it == config.end() ? 0 : it->second;
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
