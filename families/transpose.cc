// The transpose family: fp32, in(ROWS x COLS) row-major -> out(COLS x ROWS)
// row-major, out[c * ROWS + r] = in[r * COLS + c]. Kernels in
// kernels_src/transpose/transpose.cuh.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/family.h"
#include "core/status.h"

namespace tuned {
namespace {

/// KIND values.
enum Kind : int64_t {
  kNaive = 0,  // transpose_naive<TILE,BY>: coalesced reads, strided writes
  kTiled = 1,  // transpose_tiled<TILE,BY,PAD>: shared-memory tile
  kVec4 = 2,   // transpose_vec4<TILE,BY,PAD>: shared-memory tile, float4 global accesses
};

constexpr const char* KindName(int64_t kind) {
  switch (kind) {
    case kNaive: return "naive";
    case kTiled: return "tiled";
    case kVec4: return "vec4";
  }
  return "unknown";
}

constexpr int64_t kBytesPerElement = 4;  // fp32

class TransposeFamilyImpl final : public Family {
 public:
  TransposeFamilyImpl()
      : params_{
            {"KIND", {kNaive, kTiled, kVec4},
             "0 = naive (no shared memory; reads coalesced, writes strided), 1 = tiled "
             "(shared-memory tile, reads and writes coalesced), 2 = vec4 (tiled with float4 "
             "global loads/stores when ROWS % 4 == COLS % 4 == 0, else scalar)"},
            {"TILE", {16, 32, 64},
             "side of the square tile one block transposes, in elements (TILE x TILE)"},
            {"BY", {4, 8, 16, 32},
             "threads per block along y; the block is TILE x BY threads (vec4: TILE/4 x BY) "
             "and each thread moves TILE/BY tile rows"},
            {"PAD", {0, 1},
             "floats of padding per shared-memory tile row (row stride TILE + PAD); 1 removes "
             "bank conflicts. Shared-memory kinds only; naive takes 0"},
        } {}

  v1::Family id() const override { return v1::FAMILY_TRANSPOSE; }
  std::string_view name() const override { return "transpose"; }
  std::vector<std::string> dims() const override { return {"ROWS", "COLS"}; }
  std::string_view metric_unit() const override { return "GB/s"; }
  std::string_view baseline_name() const override { return "copy kernel"; }
  const std::vector<Param>& params() const override { return params_; }

  /// Bytes read + written: 2 * 4 * ROWS * COLS.
  double Work(const Shape& shape) const override {
    return 2.0 * kBytesPerElement * static_cast<double>(shape[0]) * static_cast<double>(shape[1]);
  }

  /// in, out, and the baseline's copy target: 3 * 4 * ROWS * COLS bytes.
  int64_t BufferBytes(const Shape& shape, v1::Math) const override {
    return 3 * kBytesPerElement * MaxBufferElements(shape);
  }

  /// Every buffer holds ROWS * COLS elements.
  int64_t MaxBufferElements(const Shape& shape) const override { return shape[0] * shape[1]; }

  /// KIND x TILE x BY x PAD, with PAD = 0 only for the naive kind (it has no
  /// shared memory), so that each distinct kernel appears once.
  std::vector<Config> Space() const override {
    std::vector<Config> space;
    for (int64_t kind : params_[0].values) {
      for (int64_t tile : params_[1].values) {
        for (int64_t by : params_[2].values) {
          for (int64_t pad : params_[3].values) {
            if (kind == kNaive && pad != 0) continue;
            space.push_back({{"KIND", kind}, {"TILE", tile}, {"BY", by}, {"PAD", pad}});
          }
        }
      }
    }
    return space;
  }

  absl::Status Check(const Config& config, const v1::Device& device) const override {
    TUNED_RETURN_IF_ERROR(CheckParams(config));
    const int64_t kind = config.at("KIND");
    const int64_t tile = config.at("TILE");
    const int64_t by = config.at("BY");
    const int64_t pad = config.at("PAD");
    if (kind == kNaive && pad != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("PAD=", pad, " needs a shared-memory tile; the naive kind takes PAD=0"));
    }
    if (tile % by != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("TILE=", tile, " is not a multiple of BY=", by,
                       ": each thread must move a whole number of tile rows"));
    }
    const int64_t threads = BlockX(kind, tile) * by;
    if (threads > device.max_threads_per_block()) {
      return absl::FailedPreconditionError(
          absl::StrCat(threads, " threads per block (", BlockX(kind, tile), "x", by,
                       ") exceed the device's limit of ", device.max_threads_per_block()));
    }
    if (threads % 32 != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(threads, " threads per block (", BlockX(kind, tile), "x", by,
                       ") is not a multiple of the warp size 32"));
    }
    const int64_t smem = SharedBytes(kind, tile, pad);
    if (smem > device.shared_memory_per_block()) {
      return absl::FailedPreconditionError(
          absl::StrCat(smem, " bytes of shared memory (", tile, "x", tile + pad,
                       " floats) exceed the device's per-block limit of ",
                       device.shared_memory_per_block()));
    }
    return absl::OkStatus();
  }

  /// "transpose_<kind>_<TILE>x<BY>" plus "_p<PAD>" for the shared-memory
  /// kinds, e.g. "transpose_naive_32x8", "transpose_tiled_32x8_p1".
  std::string ConfigName(const Config& config) const override {
    const int64_t kind = Get(config, "KIND");
    std::string name = absl::StrCat("transpose_", KindName(kind), "_", Get(config, "TILE"), "x",
                                    Get(config, "BY"));
    if (kind != kNaive) absl::StrAppend(&name, "_p", Get(config, "PAD"));
    return name;
  }

  /// transpose_naive<TILE,BY>, transpose_tiled<TILE,BY,PAD> or
  /// transpose_vec4<TILE,BY,PAD>; no extra options.
  KernelSource Source(const Config& config) const override {
    const int64_t kind = Get(config, "KIND");
    std::string expr = absl::StrCat("transpose_", KindName(kind), "<", Get(config, "TILE"), ",",
                                    Get(config, "BY"));
    if (kind != kNaive) absl::StrAppend(&expr, ",", Get(config, "PAD"));
    absl::StrAppend(&expr, ">");
    return {{"transpose/transpose.cuh"}, std::move(expr), {}};
  }

  /// One block per TILE x TILE tile on a 1-D grid:
  /// grid = {ceil(ROWS / TILE) * ceil(COLS / TILE), 1, 1};
  /// block = {TILE, BY, 1} (vec4: {TILE / 4, BY, 1}); static shared memory only.
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                              const v1::Device& /*device*/) const override {
    const int64_t kind = Get(config, "KIND");
    const int64_t tile = Get(config, "TILE");
    const int64_t tiles = CeilDiv(shape[0], tile) * CeilDiv(shape[1], tile);
    v1::LaunchGeometry g;
    g.add_grid(static_cast<uint32_t>(tiles));
    g.add_grid(1);
    g.add_grid(1);
    g.add_block(static_cast<uint32_t>(BlockX(kind, tile)));
    g.add_block(static_cast<uint32_t>(Get(config, "BY")));
    g.add_block(1);
    g.set_dynamic_shared_bytes(0);
    return g;
  }

  std::vector<std::string> Arguments() const override {
    return {"int rows", "int cols", "const float* in", "float* out"};
  }

 private:
  static int64_t Get(const Config& config, const std::string& key) {
    auto it = config.find(key);
    return it == config.end() ? 0 : it->second;
  }
  static int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
  /// Threads per block along x.
  static int64_t BlockX(int64_t kind, int64_t tile) { return kind == kVec4 ? tile / 4 : tile; }
  /// Static shared memory of the kernel in bytes.
  static int64_t SharedBytes(int64_t kind, int64_t tile, int64_t pad) {
    return kind == kNaive ? 0 : kBytesPerElement * tile * (tile + pad);
  }

  std::vector<Param> params_;
};

}  // namespace

const Family& TransposeFamily() {
  static const TransposeFamilyImpl family;
  return family;
}

}  // namespace tuned
