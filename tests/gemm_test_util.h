// Helpers of the GEMM family's tests (gemm_*_test.cc): configs of each
// kind with the fixed values of the parameters it does not use, and checks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "server/worker/compiler.h"
#include "tests/compile_check.h"

namespace tuned::gemm_test {

inline const Family& F() { return GemmFamily(); }
/// The family's 16-bit forms.
inline const Family& Bf16() { return *GemmFamily().ForDType(v1::DTYPE_BF16); }
inline const Family& F16() { return *GemmFamily().ForDType(v1::DTYPE_F16); }
inline const Family& Bf16F32() { return *GemmFamily().ForDType(v1::DTYPE_BF16_F32); }
inline const Family& F16F32() { return *GemmFamily().ForDType(v1::DTYPE_F16_F32); }

/// A tiled config; the defaults are the classic 128x128x8, 8x8 per thread kernel.
inline Config Tiled(int64_t bm = 128, int64_t bn = 128, int64_t bk = 8, int64_t tm = 8,
                    int64_t tn = 8, int64_t pad = 4, int64_t vec = 4, int64_t loop = 0,
                    int64_t map = 1, int64_t db = 0) {
  return {{"KIND", 2},   {"BM", bm},     {"BN", bn},     {"BK", bk},    {"TM", tm},
          {"TN", tn},    {"PAD", pad},   {"VEC", vec},   {"LOOP", loop}, {"MAP", map},
          {"DB", db},    {"LN", 0},      {"STAGES", 0},  {"SPLITK", 1}, {"GROUP", 1},
          {"MINB", 1},   {"SLICEK", 1},  {"STREAMB", 0}, {"STREAMK", 0}, {"RUL", 5}};
}

/// A warp-tiled config (kind 3); the defaults are 128x128x16, 8x8 per thread,
/// warp tile 32x64, 3 stages, GROUP 8, MINB 2, no sliced-K, B not streamed,
/// no stream-K, ptxas's default register usage level.
inline Config Warp(int64_t bm = 128, int64_t bn = 128, int64_t bk = 16, int64_t tm = 8,
                   int64_t tn = 8, int64_t ln = 8, int64_t stages = 3, int64_t splitk = 1,
                   int64_t group = 8, int64_t minb = 2, int64_t slicek = 1, int64_t streamb = 0,
                   int64_t streamk = 0, int64_t rul = 5) {
  return {{"KIND", 3},   {"BM", bm},          {"BN", bn},          {"BK", bk},
          {"TM", tm},    {"TN", tn},          {"PAD", 4},          {"VEC", 4},
          {"LOOP", 0},   {"MAP", 1},          {"DB", 0},           {"LN", ln},
          {"STAGES", stages}, {"SPLITK", splitk}, {"GROUP", group}, {"MINB", minb},
          {"SLICEK", slicek}, {"STREAMB", streamb}, {"STREAMK", streamk}, {"RUL", rul}};
}

/// A naive (kind 0) or coalesced (kind 1) config with the fixed unused values.
inline Config Naive(int64_t kind, int64_t bm, int64_t bn) {
  return {{"KIND", kind}, {"BM", bm},   {"BN", bn},     {"BK", 8},     {"TM", 1},
          {"TN", 1},      {"PAD", 0},   {"VEC", 1},     {"LOOP", 0},   {"MAP", 0},
          {"DB", 0},      {"LN", 0},    {"STAGES", 0},  {"SPLITK", 1}, {"GROUP", 1},
          {"MINB", 1},    {"SLICEK", 1},  {"STREAMB", 0}, {"STREAMK", 0}, {"RUL", 5}};
}

/// A gemv config (kind 4): GSIDE 0 (rows, small N) or 1 (cols, small M), GW
/// warps, GR rows (cols: float4 column groups per lane), GU k-quads in
/// flight, chunks of GC, SPLITK blocks along K; the other parameters fixed.
inline Config Gemv(int64_t side, int64_t gw, int64_t gr, int64_t gu, int64_t gc,
                   int64_t splitk = 1) {
  Config c = Naive(4, 8, 8);
  c["SPLITK"] = splitk;
  for (auto [k, v] : {std::pair<const char*, int64_t>{"GSIDE", side}, {"GW", gw}, {"GR", gr},
                      {"GU", gu}, {"GC", gc}}) {
    c[k] = v;
  }
  return c;
}

/// Check's status on the sm_90 reference device.
inline absl::Status CheckSm90(const Config& c) { return F().Check(c, Sm90ReferenceDevice()); }

/// Expects FAILED_PRECONDITION whose message contains `cause`.
inline void ExpectRejectedOn(const Config& c, const v1::Device& d, const std::string& cause) {
  const absl::Status s = F().Check(c, d);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << F().ConfigKey(c) << ": " << s;
  EXPECT_NE(std::string(s.message()).find(cause), std::string::npos)
      << F().ConfigKey(c) << ": '" << s.message() << "' lacks '" << cause << "'";
}
inline void ExpectRejected(const Config& c, const std::string& cause) {
  ExpectRejectedOn(c, Sm90ReferenceDevice(), cause);
}

inline std::vector<uint32_t> Grid(const v1::LaunchGeometry& g) {
  return {g.grid().begin(), g.grid().end()};
}
inline std::vector<uint32_t> Block(const v1::LaunchGeometry& g) {
  return {g.block().begin(), g.block().end()};
}

/// A tensor-core config (kind 5); the defaults are 128x128x16, warp tile
/// 64x64, 3 stages, 3xTF32, GROUP 8, MINB 1.
inline Config Mma(int64_t bm = 128, int64_t bn = 128, int64_t bk = 16, int64_t wm = 64,
                  int64_t wn = 64, int64_t stages = 3, int64_t splitk = 1, int64_t passes = 3, int64_t group = 8,
                  int64_t minb = 1) {
  return {{"KIND", 5},     {"BM", bm},       {"BN", bn},      {"BK", bk},         {"TM", 1},
          {"TN", 1},       {"PAD", 0},       {"VEC", 1},      {"LOOP", 0},        {"MAP", 0},
          {"DB", 0},       {"LN", 0},        {"STAGES", stages}, {"SPLITK", splitk}, {"GROUP", group},
          {"MINB", minb},  {"SLICEK", 1},    {"STREAMB", 0},  {"STREAMK", 0},     {"RUL", 5},
          {"WM", wm},      {"WN", wn},       {"PASSES", passes}};
}

inline std::vector<std::string> Names(const std::vector<Config>& configs) {
  std::vector<std::string> names;
  for (const auto& c : configs) names.push_back(GemmFamily().ConfigName(c));
  return names;
}

/// A wgmma config (kind 6); the defaults are 128x128x32, two 64x128
/// warpgroup tiles, 3 stages, 3xTF32, GROUP 8, MINB 1.
inline Config Wgmma(int64_t bm = 128, int64_t bn = 128, int64_t bk = 32, int64_t wm = 64,
                    int64_t wn = 128, int64_t stages = 3, int64_t splitk = 1,
                    int64_t passes = 3, int64_t group = 8, int64_t minb = 1) {
  Config c = Mma(bm, bn, bk, wm, wn, stages, splitk, passes, group, minb);
  c["KIND"] = 6;
  return c;
}

/// `c` made for problems in `layout` (Family::InLayout: LAYOUT set, or left
/// out for LAYOUT_NN).
inline Config In(const Config& c, v1::Layout layout) { return F().InLayout(c, layout); }

/// The layouts other than NN.
inline constexpr v1::Layout kTransposedLayouts[] = {v1::LAYOUT_NT, v1::LAYOUT_TN,
                                                     v1::LAYOUT_TT};
/// A layout's config-name suffix: "_nt", "_tn", "_tt" ("" for NN).
inline std::string LayoutSuffixOf(v1::Layout layout) {
  return layout == v1::LAYOUT_NN ? "" : "_" + absl::AsciiStrToLower(absl::StripPrefix(
                                                  v1::Layout_Name(layout), "LAYOUT_"));
}

/// NVRTC-compiles each config of `family` (sgemm's fp32 form by default)
/// for sm_90 on the CPU (compile_check.h: those sharing a source in one
/// program, two programs at a time), and expects a kernel that does not
/// spill.
inline void ExpectCompiles(const std::vector<Config>& configs, const Family& family = F()) {
  compile_check::ExpectCompiles(family, configs);
}

}  // namespace tuned::gemm_test
