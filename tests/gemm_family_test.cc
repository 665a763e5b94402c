// Unit tests of the GEMM family's fp32 form (families/gemm/op.cc): what
// every kind shares: its parameters, space, pruning, names, keys, neighbours,
// metric and math modes. The kinds' own rules: gemm_simt_test.cc,
// gemm_gemv_test.cc, gemm_mma_tf32_test.cc, gemm_wgmma_tf32_test.cc; the
// kind registry: gemm_kinds_test.cc. CPU only.
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

TEST(SgemmFamily, Describes) {
  EXPECT_EQ(F().id(), v1::FAMILY_SGEMM);
  EXPECT_EQ(F().name(), "sgemm");
  EXPECT_EQ(F().dims(), (std::vector<std::string>{"M", "N", "K"}));
  EXPECT_EQ(F().metric_unit(), "GFLOPS");
  EXPECT_EQ(F().baseline_name(), "cuBLAS");
  EXPECT_EQ(F().Arguments(),
            (std::vector<std::string>{"int M", "int N", "int K", "float alpha", "const float* A",
                                      "const float* B", "float beta", "float* C"}));
  std::vector<std::string> names;
  for (const auto& p : F().params()) {
    names.push_back(p.name);
    EXPECT_FALSE(p.values.empty()) << p.name;
    EXPECT_FALSE(p.doc.empty()) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"KIND", "BM", "BN", "BK", "TM", "TN", "PAD", "VEC",
                                              "LOOP", "MAP", "DB", "LN", "STAGES", "SPLITK",
                                              "GROUP", "MINB", "SLICEK", "STREAMB",
                                              "STREAMK", "RUL", "WM", "WN", "PASSES", "GSIDE",
                                              "GW", "GR", "GU", "GC", "LA", "PROMOTE", "WS",
                                              "LAYOUT"}));
  EXPECT_EQ(F().MathModes(), (std::vector<v1::Math>{v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE,
                                                     v1::MATH_TF32}));
}

TEST(SgemmFamily, IsRegistered) {
  EXPECT_EQ(FindFamily("sgemm"), &GemmFamily());
  EXPECT_EQ(FindFamily("gemm"), &GemmFamily());  // its other name: it tunes 16-bit GEMMs too
  EXPECT_EQ(FindFamily(v1::FAMILY_SGEMM), &GemmFamily());
}

TEST(SgemmFamily, WorkAndBuffers) {
  EXPECT_EQ(F().Work({1024, 1024, 1024}), 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(F().Work({16, 4096, 4096}), 2.0 * 16 * 4096 * 4096);
  EXPECT_EQ(F().Work({17, 33, 65}), 2.0 * 17 * 33 * 65);
  // A (M*K) + B (K*N) + C and reference (2*M*N), 4 bytes each.
  EXPECT_EQ(F().BufferBytes({1024, 1024, 1024}, v1::MATH_IEEE_FP32), int64_t{4} * 4 * 1024 * 1024);
  EXPECT_EQ(F().BufferBytes({2, 3, 5}, v1::MATH_IEEE_FP32), 4 * (2 * 5 + 5 * 3 + 2 * 2 * 3));
  // The fp64 reference: 12 bytes per element of A, B and C at the peak.
  EXPECT_EQ(F().BufferBytes({2, 3, 5}, v1::MATH_FP32_ACCURATE), 12 * (2 * 5 + 5 * 3 + 2 * 3));
  EXPECT_EQ(F().BufferBytes({2, 3, 5}, v1::MATH_TF32), 12 * (2 * 5 + 5 * 3 + 2 * 3));
  EXPECT_EQ(F().MaxBufferElements({2, 3, 5}), 15);        // K*N
  EXPECT_EQ(F().MaxBufferElements({7, 3, 5}), 35);        // M*K
  EXPECT_EQ(F().MaxBufferElements({7, 11, 5}), 77);       // M*N
}

TEST(SgemmFamily, ValidatesShapes) {
  EXPECT_TRUE(F().ValidateShape({1000, 1000, 1000}).ok());
  EXPECT_TRUE(F().ValidateShape({1, 1, 1}).ok());
  EXPECT_EQ(F().ValidateShape({1000, 1000}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(F().ValidateShape({16, 0, 16}).code(), absl::StatusCode::kInvalidArgument);
  // A would have 2^31 elements: the kernels index with int.
  EXPECT_EQ(F().ValidateShape({int64_t{1} << 16, 1, int64_t{1} << 15}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SgemmFamily, SpaceSizeAfterPruning) {
  const auto space = F().Space();
  std::vector<Pruned> pruned;
  const auto valid = F().ValidSpace(Sm90ReferenceDevice(), &pruned);
  // MATH_IEEE_FP32's space: every kind but the tensor cores' (5 and 6).
  EXPECT_EQ(valid.size() + pruned.size(),
            std::count_if(space.begin(), space.end(),
                          [](const Config& c) { return c.at("KIND") < 5; }));
  // Small enough to tune the 12-shape suite in minutes (compile + measure):
  // a job on a shape searches at most 480 (the gemv kind's configs only
  // where M or N is at most 8, a quarter of them per shape).
  EXPECT_GE(valid.size(), 150u);
  EXPECT_LE(valid.size(), 540u);
  EXPECT_LE(F().ValidSpace(Sm90ReferenceDevice(), {1024, 1024, 1024}, nullptr).size(), 480u);
  EXPECT_LE(F().ValidSpace(Sm90ReferenceDevice(), {1, 8192, 8192}, nullptr).size(), 480u);
  EXPECT_GT(pruned.size(), 0u);  // the rules do prune
  for (const auto& p : pruned) EXPECT_FALSE(p.reason.empty()) << F().ConfigKey(p.config);

  int naive = 0, coalesced = 0, classic = 0, one_d = 0, two_d = 0, fast = 0, warp = 0,
      split = 0, sliced = 0, deep = 0, streamed = 0, four_blocks = 0, stream_k = 0, rul10 = 0,
      gemv = 0;
  for (const auto& c : valid) {
    if (c.at("KIND") != 4) {
      for (const char* p : {"GSIDE", "GW", "GR", "GU", "GC"}) EXPECT_FALSE(c.contains(p)) << p;
    }
    switch (c.at("KIND")) {
      case 0: ++naive; break;
      case 1: ++coalesced; break;
      case 4: ++gemv; break;
      case 3:
        ++warp;
        split += c.at("SPLITK") > 1;
        sliced += c.at("SLICEK") > 1;
        deep += c.at("STAGES") == 8;
        streamed += c.at("STREAMB") == 1;
        rul10 += c.at("RUL") == 10;
        if (c.at("MINB") == 4) {  // 4 blocks of up to 128 threads: 128 registers or more
          ++four_blocks;
          EXPECT_LE((c.at("BM") / c.at("TM")) * (c.at("BN") / c.at("TN")), 128)
              << F().ConfigName(c);
        }
        if (c.at("STREAMK") == 1) {  // stream-K splits K itself
          ++stream_k;
          EXPECT_EQ(c.at("SPLITK"), 1) << F().ConfigName(c);
          EXPECT_EQ(c.at("SLICEK"), 1) << F().ConfigName(c);
        }
        break;
      default:
        if (c.at("TM") == 1 && c.at("TN") == 1) {
          ++classic;
        } else if (c.at("TN") == 1) {
          ++one_d;
        } else {
          ++two_d;
        }
        if (c.at("VEC") == 4 && c.at("TM") * c.at("TN") >= 64) ++fast;
    }
  }
  EXPECT_EQ(naive, 1);
  EXPECT_EQ(coalesced, 1);
  EXPECT_EQ(classic, 1);
  EXPECT_EQ(one_d, 2);
  EXPECT_GE(two_d, 15);
  EXPECT_GE(fast, 10);
  EXPECT_GE(warp, 120);
  EXPECT_GE(split, 50);
  EXPECT_GE(sliced, 30);
  EXPECT_GE(deep, 20);
  EXPECT_GE(streamed, 30);
  EXPECT_GE(four_blocks, 15);
  EXPECT_GE(stream_k, 30);
  EXPECT_GE(rul10, 10);
  EXPECT_GE(gemv, 40);
  EXPECT_LE(gemv, 60);
  EXPECT_TRUE(CheckSm90(Tiled()).ok());  // the reference 128x128x8, 8x8 kernel is in
  EXPECT_TRUE(CheckSm90(Warp()).ok());
  // The warp kind comes first, so that a job meets a fast kernel early.
  EXPECT_EQ(valid.front().at("KIND"), 3);
}

TEST(SgemmFamily, SpaceHasNoDuplicatesAndOnlyListedValues) {
  std::set<Config> configs;
  std::set<std::string> names, expressions;
  for (const auto& c : F().Space()) {
    EXPECT_TRUE(configs.insert(c).second) << F().ConfigKey(c);
    EXPECT_TRUE(names.insert(F().ConfigName(c)).second) << F().ConfigName(c);
    // Each config a distinct kernel: its instantiation and compile options.
    const KernelSource src = F().Source(c);
    std::string kernel = src.name_expression;
    for (const auto& o : src.options) kernel += " " + o;
    EXPECT_TRUE(expressions.insert(kernel).second) << F().ConfigKey(c);
    // The tensor-core kinds' (5, 6) and KIND 4's own parameters are absent
    // from the other kinds' configs (so that their stored keys hold); KIND
    // 6's LA is named by its LA=2 and LA=0 configs alone (its LA=1 ones keep
    // the name without LA), its PROMOTE by PROMOTE=2 ones, its WS by WS=1,
    // 2 and 3 ones.
    const std::set<std::string> mma_only = {"WM", "WN", "PASSES"},
                                gemv_only = {"GSIDE", "GW", "GR", "GU", "GC"};
    const bool mma = c.at("KIND") == 5 || c.at("KIND") == 6, gemv = c.at("KIND") == 4;
    const bool la = c.contains("LA"), promote = c.contains("PROMOTE"), ws = c.contains("WS");
    if (la) {
      EXPECT_EQ(c.at("KIND"), 6) << F().ConfigKey(c);
      EXPECT_TRUE(c.at("LA") == 2 || c.at("LA") == 0) << F().ConfigKey(c);
    }
    if (promote) {
      EXPECT_EQ(c.at("PROMOTE"), 2) << F().ConfigKey(c);
      EXPECT_TRUE(la && c.at("LA") == 0 && c.at("PASSES") == 3) << F().ConfigKey(c);
    }
    if (ws) {
      EXPECT_TRUE(c.at("WS") >= 1 && c.at("WS") <= 4) << F().ConfigKey(c);
      EXPECT_TRUE(la && c.at("LA") == 0 && c.at("PASSES") == 1) << F().ConfigKey(c);
    }
    ASSERT_EQ(c.size(), F().params().size() - (mma ? 0 : 3) - (gemv ? 0 : 5) - (la ? 0 : 1) -
                            (promote ? 0 : 1) - (ws ? 0 : 1) - 1)  // LAYOUT: InLayout's
        << F().ConfigKey(c);
    for (const auto& p : F().params()) {
      if ((!mma && mma_only.count(p.name)) || (!gemv && gemv_only.count(p.name)) ||
          (!la && p.name == "LA") || (!promote && p.name == "PROMOTE") ||
          (!ws && p.name == "WS") || p.name == "LAYOUT") {
        EXPECT_FALSE(c.contains(p.name)) << F().ConfigKey(c);
        continue;
      }
      ASSERT_TRUE(c.contains(p.name));
      EXPECT_NE(std::find(p.values.begin(), p.values.end(), c.at(p.name)), p.values.end())
          << p.name << "=" << c.at(p.name);
    }
    // Irrelevant parameters are fixed: MAP=1 only where it changes the mapping
    // (TM or TN of 8 or more), LOOP=1 only with a micro-tile.
    if (c.at("KIND") == 2) {
      if (c.at("MAP") == 1) {
        EXPECT_TRUE(c.at("TM") >= 8 || c.at("TN") >= 8) << F().ConfigKey(c);
      }
      if (c.at("LOOP") == 1) {
        EXPECT_GT(c.at("TM") * c.at("TN"), 1) << F().ConfigKey(c);
      }
    }
  }
}

TEST(SgemmFamily, ConfigKeyRoundTrips) {
  for (const auto& c : F().Space()) {
    const std::string key = F().ConfigKey(c);
    auto parsed = F().ParseConfigKey(key);
    ASSERT_TRUE(parsed.ok()) << key << ": " << parsed.status();
    EXPECT_EQ(*parsed, c) << key;
  }
  EXPECT_EQ(F().ConfigKey(Tiled()),
            "KIND=2,BM=128,BN=128,BK=8,TM=8,TN=8,PAD=4,VEC=4,LOOP=0,MAP=1,DB=0,LN=0,STAGES=0,"
            "SPLITK=1,GROUP=1,MINB=1,SLICEK=1,STREAMB=0,STREAMK=0,RUL=5");
}

TEST(SgemmFamily, ConfigNames) {
  EXPECT_EQ(F().ConfigName(Naive(0, 16, 16)), "sgemm_naive_16x16");
  EXPECT_EQ(F().ConfigName(Naive(1, 32, 8)), "sgemm_coalesced_32x8");
  EXPECT_EQ(F().ConfigName(Tiled()), "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1");
  EXPECT_EQ(F().ConfigName(Tiled(64, 128, 16, 4, 8, 0, 1, 1, 0, 1)),
            "sgemm_tiled_64x128x16_4x8_p0_v1_l1_m0_db");
  EXPECT_EQ(F().ConfigName(Warp()), "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2");
  EXPECT_EQ(F().ConfigName(Warp(16, 128, 32, 4, 4, 8, 3, 16, 1, 1)),
            "sgemm_warp_16x128x32_4x4_ln8_s3_g1_b1_sk16");
  EXPECT_EQ(F().ConfigName(Warp(32, 64, 32, 4, 4, 8, 3, 2, 1, 1, 4)),
            "sgemm_warp_32x64x32_4x4_ln8_s3_g1_b1_sl4_sk2");
  EXPECT_EQ(F().ConfigName(Warp(16, 128, 16, 4, 4, 8, 4, 8, 1, 1, 1, 1)),
            "sgemm_warp_16x128x16_4x4_ln8_s4_g1_b1_sk8_sb");
  EXPECT_EQ(F().ConfigName(Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 2, 1, 0, 1)),
            "sgemm_warp_128x128x32_8x8_ln8_s2_g8_b2_st");
  EXPECT_EQ(F().ConfigName(Warp(128, 256, 16, 8, 16, 8, 4, 1, 8, 1, 1, 0, 1, 10)),
            "sgemm_warp_128x256x16_8x16_ln8_s4_g8_b1_st_r10");
}

// A warp config stored before SLICEK, STREAMB and STREAMK existed lacks them:
// it is still valid, named, compiled and launched as the kernel it was
// (SLICEK 1, STREAMB 0, STREAMK 0).
TEST(SgemmFamily, ConfigsStoredBeforeSliceKStillServe) {
  Config old = Warp();
  old.erase("SLICEK");
  old.erase("STREAMB");
  old.erase("STREAMK");
  old.erase("RUL");
  EXPECT_TRUE(F().CheckParams(old).ok());
  EXPECT_TRUE(CheckSm90(old).ok());
  EXPECT_EQ(F().ConfigName(old), F().ConfigName(Warp()));
  EXPECT_EQ(F().Source(old).name_expression, F().Source(Warp()).name_expression);
  EXPECT_EQ(Grid(F().Geometry(old, {1000, 1000, 1000}, Sm90ReferenceDevice())),
            Grid(F().Geometry(Warp(), {1000, 1000, 1000}, Sm90ReferenceDevice())));
  EXPECT_EQ(F().ConfigKey(old).find("SLICEK"), std::string::npos);  // its stored key
  EXPECT_EQ(F().ConfigKey(old).find("STREAMB"), std::string::npos);
  EXPECT_EQ(F().ConfigKey(old).find("STREAMK"), std::string::npos);
  EXPECT_EQ(F().ConfigKey(old).find("RUL"), std::string::npos);
  EXPECT_TRUE(F().Source(old).options.empty());
  // Only the parameters with an if_absent value may be missing.
  old.erase("MINB");
  EXPECT_EQ(F().CheckParams(old).code(), absl::StatusCode::kFailedPrecondition);
}

// The job's local search around its best configs: a warp config's
// neighbours step one parameter each; those the device cannot run are
// pruned by Check. A config stored before RUL existed steps to RUL 0 and 10.
TEST(SgemmFamily, NeighboursOfAWarpConfigStepOneParameter) {
  Config old = Warp();  // 128x128x16 8x8 LN 8, 3 stages, GROUP 8, MINB 2
  old.erase("RUL");
  std::set<std::string> valid;
  for (const Config& c : F().Neighbours(old)) {
    int changed = 0;
    for (const auto& [key, value] : c) {
      changed += value != (old.contains(key) ? old.at(key) : 5);  // RUL's if_absent: 5
    }
    EXPECT_EQ(changed, 1) << F().ConfigKey(c);
    if (CheckSm90(c).ok()) valid.insert(F().ConfigName(c));
  }
  for (const char* name : {"sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_r0",
                           "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_r10",
                           "sgemm_warp_128x128x16_8x8_ln8_s2_g8_b2",
                           "sgemm_warp_128x128x16_8x8_ln8_s4_g8_b2",
                           "sgemm_warp_128x128x8_8x8_ln8_s3_g8_b2",
                           "sgemm_warp_128x128x32_8x8_ln8_s3_g8_b2",
                           "sgemm_warp_128x128x16_8x8_ln8_s3_g1_b2",
                           "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b1",
                           "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_sk2",
                           "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_st"}) {
    EXPECT_TRUE(valid.count(name)) << name;
  }
  // Pruned: KIND 2 takes none of the warp parameters; MINB 4 x 256 threads
  // exceeds the SM's 2048 threads.
  EXPECT_FALSE(valid.count("sgemm_warp_128x128x16_8x8_ln8_s3_g8_b4"));
  for (const auto& name : valid) EXPECT_EQ(name.rfind("sgemm_warp_", 0), 0u) << name;
}

// A round of the job's refinement: the untried valid neighbours of its best,
// each once; a config already refined is not refined again, so a later
// round holds only the neighbours of a new entrant.
TEST(SgemmFamily, RefinementsAreTheUntriedValidNeighboursOfTheBestEachOnce) {
  const Config a = Warp();                                                  // s3, MINB 2
  const Config b = Warp(128, 128, 16, 8, 8, 8, 4, 1, 8, 2);                 // s4: a's neighbour
  const std::set<std::string> measured = {F().ConfigName(a), F().ConfigName(b),
                                          "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_r10"};
  std::set<std::string> refined;
  const auto first = Refinements(F(), Sm90ReferenceDevice(), {a, b}, measured, &refined);
  EXPECT_EQ(refined, (std::set<std::string>{F().ConfigName(a), F().ConfigName(b)}));
  std::set<std::string> names;
  for (const Config& c : first) {
    const std::string name = F().ConfigName(c);
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(measured.count(name), 0u) << name;
    EXPECT_TRUE(CheckSm90(c).ok()) << name;
  }
  EXPECT_TRUE(names.count("sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_r0"));   // a's
  EXPECT_TRUE(names.count("sgemm_warp_128x128x16_8x8_ln8_s6_g8_b2"));      // b's (a's s4 = b)
  EXPECT_FALSE(names.count("sgemm_warp_128x128x16_8x8_ln8_s3_g8_b4"));     // MINB 4: pruned
  EXPECT_GT(first.size(), 10u);
  // Everything refined and measured: the next round is empty, unless a new
  // config joins the best.
  std::set<std::string> now = measured;
  now.insert(names.begin(), names.end());
  EXPECT_TRUE(Refinements(F(), Sm90ReferenceDevice(), {a, b}, now, &refined).empty());
  const Config c = first.front();
  const auto next = Refinements(F(), Sm90ReferenceDevice(), {c, a}, now, &refined);
  EXPECT_FALSE(next.empty());
  for (const Config& n : next) EXPECT_EQ(now.count(F().ConfigName(n)), 0u);
}

// The layout is the problem's: InLayout sets LAYOUT (NN leaves it out, so
// NN configs keep their stored names, keys and kernels), names carry its
// suffix and the source its template argument, Neighbours never step it,
// a job's space and refinements stay in it, and ByName reads its names
// back.
TEST(SgemmFamily, TheLayoutIsSetFromTheProblemAndNeverSearched) {
  EXPECT_EQ(F().Layouts(), (std::vector<v1::Layout>{v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN,
                                                    v1::LAYOUT_TT}));
  EXPECT_TRUE(F().ValidateLayout(v1::LAYOUT_TT).ok());
  EXPECT_EQ(F().ValidateLayout(static_cast<v1::Layout>(9)).message(),
            "layout 9 is not supported by sgemm (supported: nn, nt, tn, tt)");
  EXPECT_EQ(TransposeFamily().ValidateLayout(v1::LAYOUT_NT).message(),
            "layout LAYOUT_NT is not supported by transpose (supported: nn)");
  const Config nn = Warp();
  const Config nt = F().InLayout(nn, v1::LAYOUT_NT);
  EXPECT_EQ(nt.at("LAYOUT"), 1);
  EXPECT_EQ(F().InLayout(nt, v1::LAYOUT_NN), nn);
  EXPECT_EQ(F().LayoutOf(nt), v1::LAYOUT_NT);
  EXPECT_EQ(F().LayoutOf(nn), v1::LAYOUT_NN);
  EXPECT_EQ(F().ConfigName(nt), F().ConfigName(nn) + "_nt");
  EXPECT_EQ(F().ConfigName(F().InLayout(nn, v1::LAYOUT_TT)), F().ConfigName(nn) + "_tt");
  const std::string expr = F().Source(nn).name_expression;
  EXPECT_EQ(F().Source(F().InLayout(nn, v1::LAYOUT_TN)).name_expression,
            expr.substr(0, expr.size() - 1) + ",2>");
  EXPECT_TRUE(F().AdmitsIn(nt, v1::MATH_IEEE_FP32, v1::LAYOUT_NT));
  EXPECT_FALSE(F().AdmitsIn(nt, v1::MATH_IEEE_FP32, v1::LAYOUT_NN));
  for (const Config& c : F().Neighbours(nt)) EXPECT_EQ(c.at("LAYOUT"), 1) << F().ConfigKey(c);
  std::set<std::string> refined;
  const auto next = Refinements(F(), Sm90ReferenceDevice(), {nt}, {}, &refined,
                                v1::MATH_IEEE_FP32, {1024, 1024, 1024}, v1::LAYOUT_NT);
  for (const Config& c : next) EXPECT_EQ(F().LayoutOf(c), v1::LAYOUT_NT) << F().ConfigKey(c);
  for (v1::Layout layout : F().Layouts()) {
    for (v1::Math math : F().MathModes()) {
      for (const Config& c : F().ValidSpace(Sm90ReferenceDevice(), nullptr, math, layout)) {
        ASSERT_EQ(F().LayoutOf(c), layout) << F().ConfigKey(c);
      }
    }
  }
  const auto found = F().ByName(0, {F().ConfigName(nt), F().ConfigName(nn)});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found.at(F().ConfigName(nt)), nt);
}

TEST(SgemmFamily, ChecksParameterNames) {
  Config c = Tiled();
  c["WARP"] = 1;
  ExpectRejected(c, "unknown parameter 'WARP'");
  c = Tiled();
  c.erase("DB");
  ExpectRejected(c, "missing parameter 'DB'");
  c = Tiled();
  c["BM"] = 96;
  ExpectRejected(c, "BM=96 is not one of the supported values");
  // The naive kinds take the fixed values of the parameters they do not use,
  // so that their names stay unique.
  c = Naive(0, 16, 16);
  c["BK"] = 16;
  ExpectRejected(c, "BK=16 is unused by KIND=0");
}

TEST(SgemmFamily, EveryValidConfigHasConsistentGeometry) {
  for (const auto& c : F().ValidSpace(Sm90ReferenceDevice(), nullptr)) {
    const v1::LaunchGeometry g = F().Geometry(c, {1000, 1000, 1000}, Sm90ReferenceDevice());
    ASSERT_EQ(g.block_size(), 3);
    const int64_t threads = int64_t{g.block(0)} * g.block(1) * g.block(2);
    EXPECT_GE(threads, 32) << F().ConfigName(c);
    EXPECT_LE(threads, 1024) << F().ConfigName(c);
    EXPECT_EQ(threads % 32, 0) << F().ConfigName(c);
    const int64_t tiles_n = (1000 + c.at("BN") - 1) / c.at("BN");
    const int64_t tiles_m = (1000 + c.at("BM") - 1) / c.at("BM");
    if (c.at("KIND") == 4) {
      // Gemv: 32*GW threads; rows (GR) or 128*GR columns along x, SPLITK along y.
      EXPECT_EQ(threads, 32 * c.at("GW")) << F().ConfigName(c);
      const int64_t per_block = c.at("GSIDE") == 0 ? c.at("GR") : 128 * c.at("GR");
      EXPECT_EQ(g.grid(0), (1000 + per_block - 1) / per_block) << F().ConfigName(c);
      EXPECT_EQ(g.grid(1), c.at("SPLITK")) << F().ConfigName(c);
      EXPECT_EQ(g.prescale_output(), c.at("SPLITK") > 1) << F().ConfigName(c);
    } else if (c.at("KIND") == 3) {
      // Stream-K: MINB blocks per SM along x, rows of whole waves and the
      // row that shares the rest.
      const int64_t tiles = tiles_m * tiles_n, slots = c.at("MINB") * 132;
      EXPECT_EQ(g.grid(0), c.at("STREAMK") ? slots : tiles) << F().ConfigName(c);
      EXPECT_EQ(g.grid(1), c.at("STREAMK") ? (tiles + slots - 1) / slots : c.at("SPLITK"))
          << F().ConfigName(c);
      EXPECT_LE(g.dynamic_shared_bytes(), 227u * 1024) << F().ConfigName(c);
    } else {
      EXPECT_EQ(g.grid(0), tiles_n) << F().ConfigName(c);
      EXPECT_EQ(g.grid(1), tiles_m) << F().ConfigName(c);
    }
  }
}

// MATH_IEEE_FP32's space is the CUDA-core kinds' (505 configs, in
// the same order, the warp kind first) and the 56 gemv configs (KIND 4), with
// no tensor-core config; MATH_FP32_ACCURATE adds 3xTF32 configs, MATH_TF32 has
// only tensor-core ones, TF32 and 3xTF32; 30 to 100 of them per mode and
// kind (5: mma.sync; 6: wgmma, first).
TEST(SgemmMath, EachModeAdmitsItsKinds) {
  const Family& f = GemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  std::vector<Pruned> pruned;
  const auto ieee = f.ValidSpace(d, &pruned);
  EXPECT_EQ(f.ValidSpace(d, nullptr, v1::MATH_IEEE_FP32).size(), ieee.size());
  EXPECT_EQ(ieee.size() + pruned.size(), 505u + 56);  // KIND 0-3, and KIND 4
  for (const auto& c : ieee) EXPECT_LT(c.at("KIND"), 5) << f.ConfigName(c);
  EXPECT_EQ(f.ConfigName(ieee.front()), "sgemm_warp_128x128x8_8x8_ln8_s2_g8_b1");

  const auto accurate = f.ValidSpace(d, nullptr, v1::MATH_FP32_ACCURATE);
  const auto tf32 = f.ValidSpace(d, nullptr, v1::MATH_TF32);
  std::map<int64_t, int> accurate_tc, tf32_one, tf32_three;  // by kind
  for (const auto& c : accurate) {
    if (c.at("KIND") < 5) continue;
    ++accurate_tc[c.at("KIND")];
    EXPECT_EQ(c.at("PASSES"), 3) << f.ConfigName(c);
  }
  for (const auto& c : tf32) {
    ASSERT_GE(c.at("KIND"), 5) << f.ConfigName(c);
    (c.at("PASSES") == 1 ? tf32_one : tf32_three)[c.at("KIND")]++;
  }
  EXPECT_EQ(accurate.size(), ieee.size() + accurate_tc[5] + accurate_tc[6]);
  EXPECT_EQ(accurate.front().at("KIND"), 6);  // tensor cores first, wgmma's first
  EXPECT_EQ(tf32.front().at("KIND"), 6);
  // The fp32 kinds in fp32_accurate are ieee_fp32's, in the same order;
  // the tensor-core configs come before them, KIND 6's before KIND 5's.
  std::vector<Config> simt;
  int64_t last_kind = 6;
  for (const auto& c : accurate) {
    EXPECT_LE(c.at("KIND") >= 5 ? c.at("KIND") : 0, last_kind) << f.ConfigName(c);
    last_kind = c.at("KIND") >= 5 ? c.at("KIND") : 0;
    if (c.at("KIND") < 5) simt.push_back(c);
  }
  EXPECT_EQ(Names(simt), Names(ieee));
  for (int64_t kind : {5, 6}) {
    EXPECT_GE(accurate_tc[kind], kind == 5 ? 30 : 15) << kind;
    EXPECT_LE(accurate_tc[kind], 100) << kind;
    EXPECT_EQ(tf32_three[kind], accurate_tc[kind]) << kind;
    EXPECT_GE(tf32_one[kind], kind == 5 ? 30 : 20) << kind;
    EXPECT_LE(tf32_one[kind] + tf32_three[kind], 110) << kind;
  }
  // KIND 6 is the space of compute capability 9.0 only: on an sm_80 or an
  // sm_100 device the modes have KIND 5's configs alone.
  for (auto [major, minor] : {std::pair{8, 0}, std::pair{10, 0}, std::pair{9, 1}}) {
    v1::Device other = d;
    other.set_cc_major(major);
    other.set_cc_minor(minor);
    for (const auto& c : f.ValidSpace(other, nullptr, v1::MATH_TF32)) {
      EXPECT_EQ(c.at("KIND"), 5) << f.ConfigName(c) << " on " << major << "." << minor;
    }
  }

  for (v1::Math m : f.MathModes()) EXPECT_TRUE(f.ValidateMath(m).ok());
  const absl::Status bad = f.ValidateMath(static_cast<v1::Math>(7));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "math mode 7 is not supported by sgemm in dtype f32 (supported: ieee_fp32, fp32_accurate, "
            "tf32)");
  EXPECT_EQ(TransposeFamily().ValidateMath(v1::MATH_TF32).message(),
            "math mode MATH_TF32 is not supported by transpose (supported: ieee_fp32)");
}

TEST(SgemmMath, AdmitsByKindAndPasses) {
  const Family& f = GemmFamily();
  EXPECT_FALSE(f.Admits(Mma(), v1::MATH_IEEE_FP32));
  EXPECT_TRUE(f.Admits(Mma(), v1::MATH_FP32_ACCURATE));
  EXPECT_TRUE(f.Admits(Mma(), v1::MATH_TF32));
  const Config one = Mma(128, 128, 16, 64, 64, 3, 1, 1);
  EXPECT_FALSE(f.Admits(one, v1::MATH_IEEE_FP32));
  EXPECT_FALSE(f.Admits(one, v1::MATH_FP32_ACCURATE));
  EXPECT_TRUE(f.Admits(one, v1::MATH_TF32));
  const Config warp = f.ValidSpace(Sm90ReferenceDevice(), nullptr).front();
  EXPECT_TRUE(f.Admits(warp, v1::MATH_IEEE_FP32));
  EXPECT_TRUE(f.Admits(warp, v1::MATH_FP32_ACCURATE));
  EXPECT_FALSE(f.Admits(warp, v1::MATH_TF32));
}

}  // namespace
}  // namespace tuned
