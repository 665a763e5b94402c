// Unit tests of the sgemm family's gemv kind, KIND 4
// (families/gemm/gemv/): configs, shapes, geometry, rules. CPU only.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "tests/gemm_test_util.h"

namespace tuned {
namespace {

using namespace gemm_test;  // NOLINT(build/namespaces): the kinds' config helpers

// The gemv kind (KIND 4): both sides with every chunk size GC, names that
// read back, and its source: sgemm.cuh with gemv.cuh appended.
TEST(SgemmFamily, GemvConfigs) {
  std::set<std::pair<int64_t, int64_t>> sides_and_chunks;
  int split = 0;
  const auto by_name = F().ByName(0);
  for (const Config& c : F().ValidSpace(Sm90ReferenceDevice(), nullptr)) {
    if (c.at("KIND") != 4) continue;
    sides_and_chunks.insert({c.at("GSIDE"), c.at("GC")});
    split += c.at("SPLITK") > 1;
    const std::string name = F().ConfigName(c);
    EXPECT_EQ(name.rfind(c.at("GSIDE") == 0 ? "sgemm_gemv_rows_" : "sgemm_gemv_cols_", 0), 0u)
        << name;
    ASSERT_TRUE(by_name.contains(name)) << name;
    EXPECT_EQ(by_name.at(name), c) << name;
    auto parsed = F().ParseConfigKey(F().ConfigKey(c));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, c);
    // Unused parameters take the fixed values.
    for (auto [p, v] : {std::pair<const char*, int64_t>{"BM", 8}, {"BN", 8}, {"LN", 0},
                        {"STAGES", 0}, {"SLICEK", 1}, {"STREAMK", 0}, {"RUL", 5}}) {
      EXPECT_EQ(c.at(p), v) << name << " " << p;
    }
  }
  for (int64_t side : {0, 1}) {
    for (int64_t gc : {1, 2, 4, 8}) EXPECT_TRUE(sides_and_chunks.count({side, gc})) << side << gc;
  }
  EXPECT_GE(split, 20);
  EXPECT_EQ(F().ConfigName(Gemv(0, 4, 2, 2, 4)), "sgemm_gemv_rows_w4_r2_u2_c4");
  EXPECT_EQ(F().ConfigName(Gemv(1, 8, 1, 2, 1, 4)), "sgemm_gemv_cols_w8_r1_u2_c1_sk4");
  const KernelSource rows = F().Source(Gemv(0, 4, 2, 2, 4));
  // MINB: 65536 registers / (128 threads x (8 accumulators + 2 x (8 + 16)
  // loaded floats + 2 x 2 row pointers + 24)) = 6 blocks per SM.
  EXPECT_EQ(rows.name_expression, "sgemm_gemv_rows<4,2,2,4,1,6>");
  EXPECT_TRUE(rows.options.empty());
  EXPECT_EQ(rows.parts,
            (std::vector<std::string>{"gemm/sgemm.cuh", "gemm/warp.cuh", "gemm/gemv.cuh"}));
  // 65536 / (256 x (4 + 2 x (4 + 16) + 2 + 24)) = 3.
  EXPECT_EQ(F().Source(Gemv(1, 8, 1, 2, 1, 4)).name_expression, "sgemm_gemv_cols<8,1,2,1,4,3>");
  const std::string gemv(*KernelFileText("gemm/gemv.cuh"));
  for (const char* kernel : {"sgemm_gemv_rows(", "sgemm_gemv_cols("}) {
    EXPECT_NE(gemv.find(kernel), std::string::npos) << kernel;
  }
  EXPECT_EQ(gemv.find("#include"), std::string::npos);
}

// A job searches the gemv kind only where its small dimension (rows: N,
// cols: M) is at most 8, with the chunk GC that fits it (n <= GC < 2n);
// every other config suits every shape. Refinements keep to the shape too.
TEST(SgemmFamily, GemvIsSearchedOnlyForMatrixVectorShapes) {
  const v1::Device d = Sm90ReferenceDevice();
  const size_t all = F().ValidSpace(d, nullptr).size();
  const auto space = F().Space();  // MATH_IEEE_FP32's: every kind but the tensor cores'
  const size_t ieee_space = std::count_if(space.begin(), space.end(),
                                          [](const Config& c) { return c.at("KIND") < 5; });
  // {shape, {(GSIDE, GC) searched}}
  const std::vector<std::pair<Shape, std::set<std::pair<int64_t, int64_t>>>> cases = {
      {{1, 8192, 8192}, {{1, 1}}},
      {{8192, 1, 8192}, {{0, 1}}},
      {{4, 8192, 8192}, {{1, 4}}},
      {{8192, 4, 8192}, {{0, 4}}},
      {{3, 5, 1}, {{1, 4}, {0, 8}}},
      {{1, 1, 1}, {{0, 1}, {1, 1}}},
      {{7, 1000, 333}, {{1, 8}, }},
      {{2, 2, 4099}, {{0, 2}, {1, 2}}},
      {{1024, 1024, 1024}, {}},
      {{16, 4096, 4096}, {}},
      {{9, 9, 100}, {}},
  };
  for (const auto& [shape, want] : cases) {
    std::vector<Pruned> pruned;
    const auto valid = F().ValidSpace(d, shape, &pruned);
    EXPECT_EQ(valid.size() + pruned.size(), ieee_space) << Family::ShapeString(shape);
    std::set<std::pair<int64_t, int64_t>> got;
    int gemv = 0;
    for (const Config& c : valid) {
      if (c.at("KIND") != 4) continue;
      ++gemv;
      got.insert({c.at("GSIDE"), c.at("GC")});
    }
    EXPECT_EQ(got, want) << Family::ShapeString(shape);
    // The other kinds are all there.
    int others = 0;
    for (const Config& c : F().ValidSpace(d, nullptr)) others += c.at("KIND") != 4;
    EXPECT_EQ(static_cast<int>(valid.size()) - gemv, others) << Family::ShapeString(shape);
    EXPECT_LT(valid.size(), all);
    bool named = false;
    for (const auto& p : pruned) {
      named |= p.reason.find("gemv") != std::string::npos;
      EXPECT_FALSE(p.reason.empty());
    }
    EXPECT_TRUE(named) << Family::ShapeString(shape);
  }
  EXPECT_TRUE(F().SuitsShape(Warp(), {1, 8192, 8192}).ok());
  const absl::Status s = F().SuitsShape(Gemv(1, 8, 1, 2, 1, 4), {16, 4096, 4096});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("is for M <= 8, not 16"), std::string::npos) << s;
  EXPECT_NE(F().SuitsShape(Gemv(0, 4, 1, 4, 4), {8192, 1, 8192}).message().find(
                "GC=4 is not the chunk for N = 1"),
            std::string::npos);
  // The neighbours of a rows config on 8192 x 1 x 8192: no cols config (M is
  // 8192) and no other GC; without the shape, both are there.
  std::set<std::string> refined, unshaped;
  const Config best = Gemv(0, 4, 1, 4, 1);
  bool cols = false, other_gc = false;
  for (const Config& c :
       Refinements(F(), d, {best}, {}, &refined, v1::MATH_IEEE_FP32, {8192, 1, 8192})) {
    EXPECT_EQ(c.at("KIND"), 4) << F().ConfigName(c);
    EXPECT_EQ(c.at("GSIDE"), 0) << F().ConfigName(c);
    EXPECT_EQ(c.at("GC"), 1) << F().ConfigName(c);
  }
  for (const Config& c : Refinements(F(), d, {best}, {}, &unshaped)) {
    cols |= c.at("GSIDE") == 1;
    other_gc |= c.at("GC") != 1;
  }
  EXPECT_TRUE(cols);
  EXPECT_TRUE(other_gc);
}

TEST(SgemmFamily, GemvGeometry) {
  for (auto [c, shape, grid, block] :
       {// rows: ceil(M / GR) blocks along x.
        std::tuple{Gemv(0, 4, 2, 2, 4), Shape{8191, 4, 8192}, std::vector<uint32_t>{4096, 1, 1},
                   128u},
        std::tuple{Gemv(0, 4, 1, 4, 1, 8), Shape{300, 1, 8192}, std::vector<uint32_t>{300, 8, 1},
                   128u},
        std::tuple{Gemv(0, 2, 4, 2, 1), Shape{1, 1, 1}, std::vector<uint32_t>{1, 1, 1}, 64u},
        // cols: ceil(N / (128 * GR)) blocks along x.
        std::tuple{Gemv(1, 8, 1, 2, 1, 4), Shape{1, 8192, 8192}, std::vector<uint32_t>{64, 4, 1},
                   256u},
        std::tuple{Gemv(1, 4, 2, 2, 4, 4), Shape{4, 8192, 8192}, std::vector<uint32_t>{32, 4, 1},
                   128u},
        std::tuple{Gemv(1, 16, 1, 2, 8, 2), Shape{7, 1000, 333}, std::vector<uint32_t>{8, 2, 1},
                   512u}}) {
    const v1::LaunchGeometry g = F().Geometry(c, shape, Sm90ReferenceDevice());
    EXPECT_EQ(Grid(g), grid) << F().ConfigName(c);
    EXPECT_EQ(Block(g), (std::vector<uint32_t>{block, 1, 1})) << F().ConfigName(c);
    EXPECT_EQ(g.dynamic_shared_bytes(), 0u);
    EXPECT_EQ(g.prescale_output(), c.at("SPLITK") > 1) << F().ConfigName(c);
  }
}

TEST(SgemmFamily, ChecksGemvKind) {
  EXPECT_TRUE(CheckSm90(Gemv(0, 4, 1, 4, 1)).ok());
  EXPECT_TRUE(CheckSm90(Gemv(1, 8, 1, 2, 8, 4)).ok());
  ExpectRejected(Gemv(0, 0, 1, 4, 1), "KIND=4 needs GW, GR, GU and GC of 1 or more");
  ExpectRejected(Gemv(1, 4, 1, 2, 0), "KIND=4 needs GW, GR, GU and GC of 1 or more");
  ExpectRejected(Gemv(1, 4, 4, 1, 1), "GR=4 on the cols side (GSIDE=1) exceeds 2");
  // The warp kind's parameters are fixed, and the other kinds take none of
  // the gemv kind's.
  Config c = Gemv(0, 4, 1, 4, 1);
  c["STAGES"] = 2;
  ExpectRejected(c, "STAGES=2 is unused by KIND=4 (gemv)");
  c = Warp();
  c["GW"] = 4;
  ExpectRejected(c, "GW=4 is unused by KIND=3 (warp)");
  // cols, GC 8, 2 float4 groups, 8 quads in flight: 64 accumulators + 8 x
  // (32 + 32) loaded floats + 2 x 8 row pointers + 24 = 616 registers.
  ExpectRejected(Gemv(1, 4, 2, 8, 8), "an estimated 616 registers per thread");
  // 16 warps on a device of 256 threads a block.
  v1::Device small = Sm90ReferenceDevice();
  small.set_max_threads_per_block(256);
  ExpectRejectedOn(Gemv(1, 16, 1, 2, 1, 2), small, "512 threads per block (32*GW = 32*16)");
}

// The gemv kind in every layout: LAYOUT as its kernels' last template
// argument, the name's suffix. Each side streams its big operand coalesced:
// the rows side (small N) runs the rows algorithm (grid over M by GR) unless
// op(A) = A^T, where A is M-contiguous and it runs the cols algorithm (grid
// over M by 128*GR, GR at most 2); the cols side (small M) the cols
// algorithm unless op(B) = B^T, where it runs the rows algorithm over N.
TEST(SgemmFamily, GemvTakesEveryLayout) {
  const Config rows = Gemv(0, 4, 1, 4, 1), cols = Gemv(1, 8, 1, 2, 1, 4);
  EXPECT_EQ(F().ConfigName(In(rows, v1::LAYOUT_NT)), "sgemm_gemv_rows_w4_r1_u4_c1_nt");
  EXPECT_EQ(F().ConfigName(In(cols, v1::LAYOUT_TT)), "sgemm_gemv_cols_w8_r1_u2_c1_sk4_tt");
  // MINB follows the algorithm's register estimate: rows 65536 / (128 x (1
  // + 4 x 8 + 2 + 24)) = 8; cols 65536 / (128 x (4 + 4 x 20 + 2 + 24)) = 4.
  EXPECT_EQ(F().Source(rows).name_expression, "sgemm_gemv_rows<4,1,4,1,1,8>");
  EXPECT_EQ(F().Source(In(rows, v1::LAYOUT_NT)).name_expression, "sgemm_gemv_rows<4,1,4,1,1,8,1>");
  EXPECT_EQ(F().Source(In(rows, v1::LAYOUT_TN)).name_expression, "sgemm_gemv_rows<4,1,4,1,1,4,2>");
  EXPECT_EQ(F().Source(In(cols, v1::LAYOUT_TN)).name_expression, "sgemm_gemv_cols<8,1,2,1,4,3,2>");
  const v1::Device d = Sm90ReferenceDevice();
  for (auto [c, layout, shape, grid_x] :
       {std::tuple{rows, v1::LAYOUT_NT, Shape{4096, 1, 4096}, 4096u},
        std::tuple{rows, v1::LAYOUT_TN, Shape{4096, 1, 4096}, 32u},
        std::tuple{rows, v1::LAYOUT_TT, Shape{4097, 1, 4096}, 33u},
        std::tuple{cols, v1::LAYOUT_TN, Shape{1, 8192, 8192}, 64u},
        std::tuple{cols, v1::LAYOUT_NT, Shape{1, 8192, 8192}, 8192u},
        std::tuple{cols, v1::LAYOUT_TT, Shape{1, 1000, 333}, 1000u}}) {
    const Config in = In(c, layout);
    EXPECT_TRUE(CheckSm90(in).ok()) << F().ConfigName(in) << ": " << CheckSm90(in);
    EXPECT_TRUE(F().SuitsShape(in, shape).ok()) << F().ConfigName(in);
    const v1::LaunchGeometry g = F().Geometry(in, shape, d);
    EXPECT_EQ(Grid(g), (std::vector<uint32_t>{grid_x, static_cast<uint32_t>(c.at("SPLITK")), 1}))
        << F().ConfigName(in);
    EXPECT_EQ(Block(g)[0], 32 * c.at("GW"));
  }
  // GR 4 on the rows side: the cols algorithm, where op(A) = A^T, takes 2 at most.
  EXPECT_TRUE(CheckSm90(In(Gemv(0, 2, 4, 2, 1), v1::LAYOUT_NT)).ok());
  ExpectRejected(In(Gemv(0, 2, 4, 2, 1), v1::LAYOUT_TN),
                 "GR=4 exceeds 2: with op(A) = A^T (A stored K x M, M-contiguous) the rows side");
  // Every gemv config of the space passes in NT (where the cols side runs
  // the rows algorithm, also the three whose registers the cols algorithm's
  // estimate puts over the limits in NN); where op(A) = A^T, the rows
  // side's configs of GR 4 (2 x 4 GC) and those over the register limits
  // are refused.
  const auto space = F().Space();
  const int all = std::count_if(space.begin(), space.end(),
                                [](const Config& c) { return c.at("KIND") == 4; });
  for (v1::Layout layout : kTransposedLayouts) {
    int in = 0, refused = 0, gr4 = 0;
    std::vector<Pruned> pruned;
    for (const Config& c : F().ValidSpace(d, &pruned, v1::MATH_IEEE_FP32, layout)) {
      in += c.at("KIND") == 4;
    }
    for (const Pruned& p : pruned) {
      if (p.config.at("KIND") != 4) continue;
      ++refused;
      const bool gr = p.reason.find("exceeds 2: with op(A) = A^T") != std::string::npos;
      gr4 += gr;
      EXPECT_TRUE(gr || p.reason.find("registers per thread") != std::string::npos) << p.reason;
    }
    EXPECT_EQ(in + refused, all) << EnumName(layout);
    const bool trans_a = layout == v1::LAYOUT_TN || layout == v1::LAYOUT_TT;
    EXPECT_EQ(gr4, trans_a ? 8 : 0) << EnumName(layout);
    if (layout == v1::LAYOUT_NT) {
      EXPECT_EQ(refused, 0);
    }
  }
}

// NVRTC compiles each gemv side in each layout other than NN without
// spills, with the chunk sizes 1 to 8 (a sample; compile_test.cc compiles
// every NN config).
TEST(SgemmFamily, GemvCompilesInEveryLayout) {
  ExpectCompiles({
      In(Gemv(0, 4, 1, 4, 1), v1::LAYOUT_NT),
      In(Gemv(0, 4, 2, 2, 4), v1::LAYOUT_TN),
      In(Gemv(0, 4, 1, 4, 8, 8), v1::LAYOUT_TT),
      In(Gemv(1, 8, 1, 2, 1, 4), v1::LAYOUT_NT),
      In(Gemv(1, 4, 2, 2, 4, 4), v1::LAYOUT_TN),
      In(Gemv(1, 8, 1, 2, 8, 16), v1::LAYOUT_TT),
  });
}

}  // namespace
}  // namespace tuned
