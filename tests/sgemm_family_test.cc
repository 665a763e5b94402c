// Unit tests of the sgemm family description (server/families/sgemm.cc): its
// space, pruning rules, names, keys, geometry and metric. CPU only.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "server/families/family.h"
#include "server/families/kernel_text.h"

namespace tuned {
namespace {

const Family& F() { return SgemmFamily(); }

/// A tiled config; the defaults are the classic 128x128x8, 8x8 per thread kernel.
Config Tiled(int64_t bm = 128, int64_t bn = 128, int64_t bk = 8, int64_t tm = 8, int64_t tn = 8,
             int64_t pad = 4, int64_t vec = 4, int64_t loop = 0, int64_t map = 1, int64_t db = 0) {
  return {{"KIND", 2},   {"BM", bm},     {"BN", bn},     {"BK", bk},    {"TM", tm},
          {"TN", tn},    {"PAD", pad},   {"VEC", vec},   {"LOOP", loop}, {"MAP", map},
          {"DB", db},    {"LN", 0},      {"STAGES", 0},  {"SPLITK", 1}, {"GROUP", 1},
          {"MINB", 1},   {"SLICEK", 1},  {"STREAMB", 0}, {"STREAMK", 0}, {"RUL", 5}};
}

/// A warp-tiled config (kind 3); the defaults are 128x128x16, 8x8 per thread,
/// warp tile 32x64, 3 stages, GROUP 8, MINB 2, no sliced-K, B not streamed,
/// no stream-K, ptxas's default register usage level.
Config Warp(int64_t bm = 128, int64_t bn = 128, int64_t bk = 16, int64_t tm = 8, int64_t tn = 8,
            int64_t ln = 8, int64_t stages = 3, int64_t splitk = 1, int64_t group = 8,
            int64_t minb = 2, int64_t slicek = 1, int64_t streamb = 0, int64_t streamk = 0,
            int64_t rul = 5) {
  return {{"KIND", 3},   {"BM", bm},          {"BN", bn},          {"BK", bk},
          {"TM", tm},    {"TN", tn},          {"PAD", 4},          {"VEC", 4},
          {"LOOP", 0},   {"MAP", 1},          {"DB", 0},           {"LN", ln},
          {"STAGES", stages}, {"SPLITK", splitk}, {"GROUP", group}, {"MINB", minb},
          {"SLICEK", slicek}, {"STREAMB", streamb}, {"STREAMK", streamk}, {"RUL", rul}};
}

/// A naive (kind 0) or coalesced (kind 1) config with the fixed unused values.
Config Naive(int64_t kind, int64_t bm, int64_t bn) {
  return {{"KIND", kind}, {"BM", bm},   {"BN", bn},     {"BK", 8},     {"TM", 1},
          {"TN", 1},      {"PAD", 0},   {"VEC", 1},     {"LOOP", 0},   {"MAP", 0},
          {"DB", 0},      {"LN", 0},    {"STAGES", 0},  {"SPLITK", 1}, {"GROUP", 1},
          {"MINB", 1},    {"SLICEK", 1},  {"STREAMB", 0}, {"STREAMK", 0}, {"RUL", 5}};
}

/// A gemv config (kind 4): GSIDE 0 (rows, small N) or 1 (cols, small M), GW
/// warps, GR rows (cols: float4 column groups per lane), GU k-quads in
/// flight, chunks of GC, SPLITK blocks along K; the other parameters fixed.
Config Gemv(int64_t side, int64_t gw, int64_t gr, int64_t gu, int64_t gc, int64_t splitk = 1) {
  Config c = Naive(4, 8, 8);
  c["SPLITK"] = splitk;
  for (auto [k, v] : {std::pair<const char*, int64_t>{"GSIDE", side}, {"GW", gw}, {"GR", gr},
                      {"GU", gu}, {"GC", gc}}) {
    c[k] = v;
  }
  return c;
}

/// Check's status on the sm_90 reference device.
absl::Status CheckSm90(const Config& c) { return F().Check(c, Sm90ReferenceDevice()); }

/// Expects FAILED_PRECONDITION whose message contains `cause`.
void ExpectRejectedOn(const Config& c, const v1::Device& d, const std::string& cause) {
  const absl::Status s = F().Check(c, d);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << F().ConfigKey(c) << ": " << s;
  EXPECT_NE(std::string(s.message()).find(cause), std::string::npos)
      << F().ConfigKey(c) << ": '" << s.message() << "' lacks '" << cause << "'";
}
void ExpectRejected(const Config& c, const std::string& cause) {
  ExpectRejectedOn(c, Sm90ReferenceDevice(), cause);
}

std::vector<uint32_t> Grid(const v1::LaunchGeometry& g) {
  return {g.grid().begin(), g.grid().end()};
}
std::vector<uint32_t> Block(const v1::LaunchGeometry& g) {
  return {g.block().begin(), g.block().end()};
}

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
                                              "GW", "GR", "GU", "GC", "LA", "PROMOTE", "WS"}));
  EXPECT_EQ(F().MathModes(), (std::vector<v1::Math>{v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE,
                                                     v1::MATH_TF32}));
}

TEST(SgemmFamily, IsRegistered) {
  EXPECT_EQ(FindFamily("sgemm"), &SgemmFamily());
  EXPECT_EQ(FindFamily(v1::FAMILY_SGEMM), &SgemmFamily());
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
    // from the other kinds' configs (so that their keys are those of before
    // them); KIND 6's LA is named by its LA=2 and LA=0 configs alone (its
    // LA=1 ones are those of before it), its PROMOTE by PROMOTE=2 ones, its
    // WS by WS=1 ones.
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
      EXPECT_EQ(c.at("WS"), 1) << F().ConfigKey(c);
      EXPECT_TRUE(la && c.at("LA") == 0 && c.at("PASSES") == 1) << F().ConfigKey(c);
    }
    ASSERT_EQ(c.size(), F().params().size() - (mma ? 0 : 3) - (gemv ? 0 : 5) - (la ? 0 : 1) -
                            (promote ? 0 : 1) - (ws ? 0 : 1))
        << F().ConfigKey(c);
    for (const auto& p : F().params()) {
      if ((!mma && mma_only.count(p.name)) || (!gemv && gemv_only.count(p.name)) ||
          (!la && p.name == "LA") || (!promote && p.name == "PROMOTE") ||
          (!ws && p.name == "WS")) {
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

TEST(SgemmFamily, Sources) {
  const KernelSource naive = F().Source(Naive(0, 16, 32));
  EXPECT_EQ(naive.name_expression, "sgemm_naive<16,32>");
  EXPECT_EQ(naive.parts, (std::vector<std::string>{"sgemm/sgemm.cuh", "sgemm/warp.cuh"}));
  EXPECT_TRUE(naive.options.empty());
  EXPECT_EQ(F().Source(Naive(1, 32, 32)).name_expression, "sgemm_coalesced<32,32>");
  EXPECT_EQ(F().Source(Tiled()).name_expression, "sgemm_tiled<128,128,8,8,8,4,4,0,1,0>");
  EXPECT_EQ(F().Source(Tiled(64, 32, 16, 4, 1, 0, 1, 0, 0, 1)).name_expression,
            "sgemm_tiled<64,32,16,4,1,0,1,0,0,1>");
  EXPECT_EQ(F().Source(Warp()).name_expression, "sgemm_warp<128,128,16,8,8,8,3,1,8,2,1,0,0>");
  EXPECT_EQ(F().Source(Warp(32, 64, 32, 4, 4, 8, 3, 2, 1, 1, 4)).name_expression,
            "sgemm_warp<32,64,32,4,4,8,3,2,1,1,4,0,0>");
  EXPECT_EQ(F().Source(Warp(16, 128, 16, 4, 4, 8, 4, 8, 1, 1, 1, 1)).name_expression,
            "sgemm_warp<16,128,16,4,4,8,4,8,1,1,1,1,0>");
  EXPECT_EQ(F().Source(Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 2, 1, 0, 1)).name_expression,
            "sgemm_warp<128,128,32,8,8,8,2,1,8,2,1,0,1>");
  // RUL: a ptxas option, not a template argument.
  EXPECT_TRUE(F().Source(Warp()).options.empty());
  const KernelSource rul = F().Source(Warp(128, 256, 16, 8, 16, 8, 4, 1, 8, 1, 1, 0, 0, 10));
  EXPECT_EQ(rul.name_expression, "sgemm_warp<128,256,16,8,16,8,4,1,8,1,1,0,0>");
  EXPECT_EQ(rul.options, std::vector<std::string>{"-Xptxas=--register-usage-level=10"});
  EXPECT_EQ(F().Source(Warp(128, 256, 16, 8, 16, 8, 4, 1, 8, 1, 1, 0, 0, 0)).options,
            std::vector<std::string>{"-Xptxas=--register-usage-level=0"});
  // The embedded text is self-contained and defines the four templates.
  const std::string src = SourceText(naive);
  for (const char* kernel : {"sgemm_naive(", "sgemm_coalesced(", "sgemm_tiled(", "sgemm_warp("}) {
    EXPECT_NE(src.find(kernel), std::string::npos) << kernel;
  }
  EXPECT_EQ(src.find("\n#include"), std::string::npos);
  EXPECT_NE(src.rfind("#include", 0), 0u);
}

TEST(SgemmFamily, Geometry) {
  auto expect = [](const Config& c, const Shape& s, std::vector<uint32_t> grid,
                   std::vector<uint32_t> block) {
    const v1::LaunchGeometry g = F().Geometry(c, s, Sm90ReferenceDevice());
    EXPECT_EQ(Grid(g), grid) << F().ConfigName(c);
    EXPECT_EQ(Block(g), block) << F().ConfigName(c);
    EXPECT_EQ(g.dynamic_shared_bytes(), 0u);
  };
  // grid = {ceil(N / BN), ceil(M / BM), 1}.
  expect(Tiled(), {1000, 1000, 1000}, {8, 8, 1}, {256, 1, 1});
  expect(Tiled(128, 64, 16, 8, 4), {1000, 1000, 1000}, {16, 8, 1}, {256, 1, 1});
  expect(Tiled(32, 128, 8, 4, 4), {16, 4096, 4096}, {32, 1, 1}, {256, 1, 1});
  expect(Tiled(128, 128, 8, 8, 8), {16, 4096, 4096}, {32, 1, 1}, {256, 1, 1});
  expect(Tiled(64, 64, 8, 4, 4), {17, 33, 65}, {1, 1, 1}, {256, 1, 1});
  expect(Tiled(256, 128, 8, 16, 8), {4097, 4097, 4097}, {33, 17, 1}, {256, 1, 1});
  expect(Tiled(64, 32, 8, 8, 1), {4096, 4096, 1}, {128, 64, 1}, {256, 1, 1});
  // Naive: x along rows, block {BM, BN}; coalesced: x along columns, block {BN, BM}.
  expect(Naive(0, 32, 8), {1000, 1000, 1000}, {125, 32, 1}, {32, 8, 1});
  expect(Naive(1, 32, 8), {1000, 1000, 1000}, {125, 32, 1}, {8, 32, 1});
  expect(Naive(1, 16, 16), {17, 33, 65}, {3, 2, 1}, {16, 16, 1});
  // Warp kind: one block per output tile along x, SPLITK along y, dynamic
  // shared memory STAGES * BK * (BM + 4 + BN) floats, prescale with split-K.
  for (auto [c, shape, grid, smem, prescale] :
       {std::tuple{Warp(), Shape{1000, 1000, 1000}, std::vector<uint32_t>{64, 1, 1},
                   3u * 16 * (132 + 128) * 4, false},
        std::tuple{Warp(16, 128, 32, 4, 4, 8, 3, 16, 1, 1), Shape{16, 4096, 4096},
                   std::vector<uint32_t>{32, 16, 1}, 3u * 32 * (20 + 128) * 4, true},
        std::tuple{Warp(128, 64, 16, 8, 8, 4, 4, 4, 1, 1), Shape{8192, 128, 8192},
                   std::vector<uint32_t>{128, 4, 1}, 4u * 16 * (132 + 64) * 4, true},
        // Sliced-K: SLICEK groups of threads, and (SLICEK-1) * BM*BN floats
        // of reduction after the stages.
        std::tuple{Warp(32, 64, 32, 4, 4, 8, 3, 1, 1, 1, 4), Shape{512, 512, 512},
                   std::vector<uint32_t>{128, 1, 1}, (3u * 32 * (36 + 64) + 3 * 32 * 64) * 4,
                   false},
        // Stream-K: MINB blocks per SM (2 x 132) along x, ceil(tiles / 264)
        // rows (33 x 33 tiles: 4 whole waves and the row that shares the
        // 33 left), prescale; at most one block per (tile, K tile)
        // iteration (16x64 tiles of 16x64x16: 1 x 1 tile x 1 K tile).
        std::tuple{Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 2, 1, 0, 1), Shape{4097, 4097, 4097},
                   std::vector<uint32_t>{264, 5, 1}, 2u * 32 * (132 + 128) * 4, true},
        std::tuple{Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 2, 1, 0, 1), Shape{4096, 4096, 4096},
                   std::vector<uint32_t>{264, 4, 1}, 2u * 32 * (132 + 128) * 4, true},
        std::tuple{Warp(16, 64, 16, 4, 4, 8, 4, 1, 1, 4, 1, 0, 1), Shape{16, 64, 16},
                   std::vector<uint32_t>{1, 1, 1}, 4u * 16 * (20 + 64) * 4, true},
        std::tuple{Warp(16, 64, 16, 4, 4, 8, 4, 1, 1, 4, 1, 0, 1), Shape{16, 64, 100},
                   std::vector<uint32_t>{7, 1, 1}, 4u * 16 * (20 + 64) * 4, true}}) {
    const v1::LaunchGeometry g = F().Geometry(c, shape, Sm90ReferenceDevice());
    EXPECT_EQ(Grid(g), grid) << F().ConfigName(c);
    EXPECT_EQ(Block(g)[0],
              c.at("SLICEK") * (c.at("BM") / c.at("TM")) * (c.at("BN") / c.at("TN")));
    EXPECT_EQ(g.dynamic_shared_bytes(), smem) << F().ConfigName(c);
    EXPECT_EQ(g.prescale_output(), prescale) << F().ConfigName(c);
  }
  // More than 65535 row blocks: grid.y = 65535, the rest over grid.z.
  expect(Naive(0, 8, 32), {int64_t{1} << 20, 1024, 1024}, {32, 65535, 3}, {8, 32, 1});
  expect(Tiled(), {int64_t{1} << 24, 64, 64}, {1, 65535, 3}, {256, 1, 1});
  expect(Tiled(), {65535 * 128, 64, 64}, {1, 65535, 1}, {256, 1, 1});
}

TEST(SgemmFamily, ChecksThreads) {
  // 256x128 with 4x4 per thread: 64*32 = 2048 threads.
  ExpectRejected(Tiled(256, 128, 8, 4, 4), "2048 threads per block");
  ExpectRejected(Tiled(256, 128, 8, 4, 4), "limit of 1024");
  // 32x32 with 8x8 per thread: 16 threads, less than a warp.
  ExpectRejected(Tiled(32, 32, 8, 8, 8), "16 threads per block");
  ExpectRejected(Tiled(32, 32, 8, 8, 8), "warp");
  ExpectRejected(Naive(1, 32, 64), "2048 threads per block");
  EXPECT_TRUE(CheckSm90(Naive(0, 8, 8)).ok());
  // A device with a smaller limit.
  v1::Device small = Sm90ReferenceDevice();
  small.set_max_threads_per_block(128);
  ExpectRejectedOn(Tiled(), small, "256 threads per block");
}

TEST(SgemmFamily, ChecksDivisibility) {
  // Only listed values are accepted, so BM % TM != 0 needs BM = 8 with TM = 16.
  ExpectRejected(Tiled(8, 128, 8, 16, 4), "BM=8 is not a multiple of TM=16");
  ExpectRejected(Tiled(128, 8, 8, 4, 16), "BN=8 is not a multiple of TN=16");
  // 64x64x8 with 4x4 per thread: 256 threads, each A/B tile is 512 floats:
  // 2 scalar loads per thread are fine, float4 loads are not.
  EXPECT_TRUE(CheckSm90(Tiled(64, 64, 8, 4, 4, 4, 1, 0, 0)).ok());
  ExpectRejected(Tiled(64, 64, 8, 4, 4, 4, 4, 0, 0), "the A tile (512 floats) does not divide");
  // 128x32x8 with 4x4 per thread: 256 threads; A = 1024 floats divides, B = 256 does not.
  ExpectRejected(Tiled(128, 32, 8, 4, 4, 4, 4, 0, 0), "the B tile (256 floats) does not divide");
}

TEST(SgemmFamily, ChecksSharedMemory) {
  // Double-buffered 128x64x32, PAD 4: 2 * 32 * (132 + 68) * 4 = 51200 bytes > 48 KiB.
  ExpectRejected(Tiled(128, 64, 32, 8, 4, 4, 4, 0, 0, 1), "51200 bytes of shared memory");
  ExpectRejected(Tiled(128, 64, 32, 8, 4, 4, 4, 0, 0, 1), "limit of 49152");
  // Single-buffered: 25600 bytes fit.
  EXPECT_TRUE(CheckSm90(Tiled(128, 64, 32, 8, 4, 4, 4, 0, 0, 0)).ok());
  v1::Device small = Sm90ReferenceDevice();
  small.set_shared_memory_per_block(16 * 1024);
  ExpectRejectedOn(Tiled(128, 128, 16, 8, 8), small, "16896 bytes of shared memory");
}

TEST(SgemmFamily, ChecksRegisters) {
  // Estimate: TM*TN + TM + TN + 5 * (BM+BN)*BK/THREADS + 24.
  // 16x16 per thread: 256 + 32 + 5 * 16 + 24 = 392 > 255.
  ExpectRejected(Tiled(256, 256, 8, 16, 16), "an estimated 392 registers per thread");
  ExpectRejected(Tiled(256, 256, 8, 16, 16), "limit of 255");
  // 64x64, 8x8 per thread (64 threads): BK = 8 stages 16 floats per thread,
  // 64 + 16 + 80 + 24 = 184 fits; BK = 16 stages 32, 64 + 16 + 160 + 24 = 264.
  EXPECT_TRUE(CheckSm90(Tiled(64, 64, 8, 8, 8)).ok());
  ExpectRejected(Tiled(64, 64, 16, 8, 8), "an estimated 264 registers per thread");
  ExpectRejected(Tiled(64, 64, 16, 8, 8), "5 x 32 staged floats");
  // 256x128x8, 8x8 per thread: 512 threads of 64 + 16 + 5 * 6 + 24 = 134
  // registers, 68608 in all: over the 65536 of a block.
  ExpectRejected(Tiled(256, 128, 8, 8, 8, 4, 1, 0, 1, 1),
                 "an estimated 134 registers per thread x 512 threads = 68608 registers exceed "
                 "the device's per-block limit of 65536");
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

TEST(SgemmFamily, ChecksWarpKind) {
  EXPECT_TRUE(CheckSm90(Warp()).ok());
  // cp.async needs sm_80.
  v1::Device volta = Sm90ReferenceDevice();
  volta.set_cc_major(7);
  ExpectRejectedOn(Warp(), volta, "compute capability 8.0+");
  // The parameters of the tiled kind are fixed.
  Config c = Warp();
  c["DB"] = 1;
  ExpectRejected(c, "DB=1 is unused by KIND=3");
  // Warp tile 32x64 (LN 8, 8x8) does not tile 16 rows.
  ExpectRejected(Warp(16, 128, 16, 8, 8, 8, 3, 1, 8, 1), "the warp tile 32x64");
  // 128x128x32, 4 stages: 4 * 32 * 260 * 4 = 133120 bytes: one block fits
  // the 227 KiB opt-in limit, two do not fit an SM.
  EXPECT_TRUE(CheckSm90(Warp(128, 128, 32, 8, 8, 8, 4, 1, 8, 1)).ok());
  ExpectRejected(Warp(128, 128, 32, 8, 8, 8, 4, 1, 8, 2), "MINB=2 blocks of 133120 bytes");
  v1::Device small = Sm90ReferenceDevice();
  small.set_shared_memory_per_block_optin(100 * 1024);
  ExpectRejectedOn(Warp(128, 128, 32, 8, 8, 8, 4, 1, 8, 1), small, "133120 bytes of shared memory");
  // MINB = 4: 128 threads of 8x8 fit the cap of 65536 / 512 = 128
  // registers (64 + 16 + 40 = 120); 256 threads get 64.
  EXPECT_TRUE(CheckSm90(Warp(64, 128, 16, 8, 8, 8, 4, 1, 8, 4)).ok());
  ExpectRejected(Warp(128, 128, 16, 8, 8, 8, 3, 1, 8, 4), "exceed the cap of 64 that MINB=4");
  // 16x8 per thread under MINB = 2 with 256 threads: 128 + 24 + 40 = 192
  // registers over the cap of 65536 / 512 = 128.
  ExpectRejected(Warp(128, 256, 16, 8, 16, 8, 3, 1, 8, 2),
                 "an estimated 192 registers per thread");
  EXPECT_TRUE(CheckSm90(Warp(128, 256, 16, 8, 16, 8, 3, 1, 8, 1)).ok());
  // BK = 8 with 512 threads: the B tile (1024 floats) is 256 float4 copies.
  ExpectRejected(Warp(128, 128, 8, 8, 4, 8, 3, 1, 8, 1), "does not divide evenly among 512");
  // Sliced-K: its groups count in the threads (and in the even division
  // of the tile copies), its reduction in the shared memory.
  EXPECT_TRUE(CheckSm90(Warp(32, 64, 32, 4, 4, 8, 3, 1, 1, 1, 4)).ok());
  ExpectRejected(Warp(32, 64, 8, 4, 4, 8, 3, 1, 1, 1, 16), "SLICEK=16 is not one of");
  ExpectRejected(Warp(128, 128, 16, 8, 4, 8, 3, 1, 1, 1, 4),
                 "2048 threads per block (SLICEK*(BM/TM)*(BN/TN) = 4*16*32)");
  ExpectRejected(Warp(64, 64, 8, 8, 4, 8, 3, 1, 1, 1, 4), "does not divide evenly among 512");
  // 4 x 128 threads, 2 blocks per SM: cap 64.
  EXPECT_TRUE(CheckSm90(Warp(64, 64, 32, 8, 4, 8, 3, 1, 1, 1, 4)).ok());
  ExpectRejected(Warp(64, 64, 32, 8, 4, 8, 3, 1, 1, 2, 4), "an estimated 84 registers per thread");
  // 3 x 32 x (132 + 128) + 3 x 128 x 128 floats = 296448 bytes.
  ExpectRejected(Warp(128, 128, 32, 8, 8, 8, 3, 1, 1, 1, 4), "296448 bytes of shared memory");
  // Stream-K splits K itself: no split-K or sliced-K with it.
  EXPECT_TRUE(CheckSm90(Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 2, 1, 0, 1)).ok());
  ExpectRejected(Warp(128, 128, 16, 8, 8, 8, 4, 4, 8, 2, 1, 0, 1),
                 "STREAMK=1 takes SPLITK=1 and SLICEK=1");
  ExpectRejected(Warp(32, 64, 32, 4, 4, 8, 3, 1, 1, 1, 4, 0, 1), "not SPLITK=1 and SLICEK=4");
  // MINB blocks must fit the SM's threads (stream-K's grid is MINB per SM).
  v1::Device few_threads = Sm90ReferenceDevice();
  few_threads.set_max_threads_per_sm(384);
  ExpectRejectedOn(Warp(64, 128, 16, 8, 8, 8, 4, 1, 8, 4), few_threads,
                   "MINB=4 blocks of 128 threads exceed the SM's 384 threads");
  EXPECT_TRUE(F().Check(Warp(64, 128, 16, 8, 8, 8, 4, 1, 8, 2), few_threads).ok());
}

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
            (std::vector<std::string>{"sgemm/sgemm.cuh", "sgemm/warp.cuh", "sgemm/gemv.cuh"}));
  // 65536 / (256 x (4 + 2 x (4 + 16) + 2 + 24)) = 3.
  EXPECT_EQ(F().Source(Gemv(1, 8, 1, 2, 1, 4)).name_expression, "sgemm_gemv_cols<8,1,2,1,4,3>");
  const std::string gemv(*KernelFileText("sgemm/gemv.cuh"));
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

}  // namespace
}  // namespace tuned

namespace tuned {
namespace {

/// A tensor-core config (kind 5); the defaults are 128x128x16, warp tile
/// 64x64, 3 stages, 3xTF32, GROUP 8, MINB 1.
Config Mma(int64_t bm = 128, int64_t bn = 128, int64_t bk = 16, int64_t wm = 64, int64_t wn = 64,
           int64_t stages = 3, int64_t splitk = 1, int64_t passes = 3, int64_t group = 8,
           int64_t minb = 1) {
  return {{"KIND", 5},     {"BM", bm},       {"BN", bn},      {"BK", bk},         {"TM", 1},
          {"TN", 1},       {"PAD", 0},       {"VEC", 1},      {"LOOP", 0},        {"MAP", 0},
          {"DB", 0},       {"LN", 0},        {"STAGES", stages}, {"SPLITK", splitk}, {"GROUP", group},
          {"MINB", minb},  {"SLICEK", 1},    {"STREAMB", 0},  {"STREAMK", 0},     {"RUL", 5},
          {"WM", wm},      {"WN", wn},       {"PASSES", passes}};
}

std::vector<std::string> Names(const std::vector<Config>& configs) {
  std::vector<std::string> names;
  for (const auto& c : configs) names.push_back(SgemmFamily().ConfigName(c));
  return names;
}

// MATH_IEEE_FP32's space is that of before the math modes (505 configs, in
// the same order, the warp kind first) and the 56 gemv configs (KIND 4), with
// no tensor-core config; MATH_FP32_ACCURATE adds 3xTF32 configs, MATH_TF32 has
// only tensor-core ones, TF32 and 3xTF32; 30 to 100 of them per mode and
// kind (5: mma.sync; 6: wgmma, first).
TEST(SgemmMath, EachModeAdmitsItsKinds) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  std::vector<Pruned> pruned;
  const auto ieee = f.ValidSpace(d, &pruned);
  EXPECT_EQ(f.ValidSpace(d, nullptr, v1::MATH_IEEE_FP32).size(), ieee.size());
  EXPECT_EQ(ieee.size() + pruned.size(), 505u + 56);  // the space of before KIND 5, and KIND 4
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
            "math mode 7 is not supported by sgemm (supported: ieee_fp32, fp32_accurate, tf32)");
  EXPECT_EQ(TransposeFamily().ValidateMath(v1::MATH_TF32).message(),
            "math mode MATH_TF32 is not supported by transpose (supported: ieee_fp32)");
}

TEST(SgemmMath, AdmitsByKindAndPasses) {
  const Family& f = SgemmFamily();
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

TEST(SgemmMath, TensorCoreNamesKeysSourceAndGeometry) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  EXPECT_EQ(f.ConfigName(Mma()), "sgemm_mma_128x128x16_w64x64_s3_g8_b1_3xtf32");
  EXPECT_EQ(f.ConfigName(Mma(32, 64, 32, 32, 32, 3, 4, 1, 1)), "sgemm_mma_32x64x32_w32x32_s3_g1_b1_sk4_tf32");
  EXPECT_TRUE(f.Check(Mma(), d).ok()) << f.Check(Mma(), d);
  const KernelSource src = f.Source(Mma());
  EXPECT_EQ(src.name_expression, "sgemm_mma<128,128,16,64,64,3,1,3,8,1>");
  EXPECT_EQ(src.parts, (std::vector<std::string>{"sgemm/sgemm.cuh", "sgemm/warp.cuh",
                                                 "sgemm/mma_tf32.cuh"}));
  EXPECT_TRUE(src.options.empty());
  // Every tensor-core config of every mode: its name and key read back.
  std::set<std::string> names;
  for (v1::Math m : {v1::MATH_FP32_ACCURATE, v1::MATH_TF32}) {
    for (const auto& c : f.ValidSpace(d, nullptr, m)) {
      auto back = f.ParseConfigKey(f.ConfigKey(c));
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, c);
      names.insert(f.ConfigName(c));
    }
  }
  const auto by_name = f.ByName(0);
  for (const auto& n : names) EXPECT_TRUE(by_name.contains(n)) << n;

  // 1000x1000x1000 with 128x128 tiles: 8 x 8 tiles, 4 warps, 3 stages of
  // 128*20 + 16*136 floats; split-K 4 adds into C.
  const v1::LaunchGeometry g = f.Geometry(Mma(), {1000, 1000, 1000}, d);
  EXPECT_EQ(std::vector<uint32_t>(g.grid().begin(), g.grid().end()), (std::vector<uint32_t>{64, 1, 1}));
  EXPECT_EQ(std::vector<uint32_t>(g.block().begin(), g.block().end()), (std::vector<uint32_t>{128, 1, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 3u * (128 * 20 + 16 * 136) * 4);
  EXPECT_FALSE(g.prescale_output());
  const v1::LaunchGeometry s = f.Geometry(Mma(32, 64, 32, 32, 32, 3, 4), {7, 13, 5}, d);
  EXPECT_EQ(std::vector<uint32_t>(s.grid().begin(), s.grid().end()), (std::vector<uint32_t>{1, 4, 1}));
  EXPECT_EQ(s.block(0), 64u);
  EXPECT_TRUE(s.prescale_output());
}

TEST(SgemmMath, CheckRejectsBadTensorCoreConfigs) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  v1::Device ampere_less = d;
  ampere_less.set_cc_major(7);
  EXPECT_EQ(f.Check(Mma(), ampere_less).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(f.Check(Mma(128, 128, 16, 64, 64, 3, 1, 0), d).ok());   // PASSES 0
  EXPECT_FALSE(f.Check(Mma(128, 128, 16, 0, 64), d).ok());             // no warp tile
  EXPECT_FALSE(f.Check(Mma(128, 128, 64), d).ok());                   // BK 64
  EXPECT_FALSE(f.Check(Mma(256, 128, 32, 64, 32, 3, 1, 3, 8, 2), d).ok());  // registers over the cap
  Config tiled_with_wm = Tiled();
  tiled_with_wm["WM"] = 32;
  const absl::Status s = f.Check(tiled_with_wm, d);
  EXPECT_EQ(s.message(), "WM=32 is unused by KIND=2 (tiled), which takes WM=0");
  Config mma_with_tm = Mma();
  mma_with_tm["TM"] = 8;
  EXPECT_FALSE(f.Check(mma_with_tm, d).ok());
}

/// A wgmma config (kind 6); the defaults are 128x128x32, two 64x128
/// warpgroup tiles, 3 stages, 3xTF32, GROUP 8, MINB 1.
Config Wgmma(int64_t bm = 128, int64_t bn = 128, int64_t bk = 32, int64_t wm = 64,
             int64_t wn = 128, int64_t stages = 3, int64_t splitk = 1, int64_t passes = 3,
             int64_t group = 8, int64_t minb = 1) {
  Config c = Mma(bm, bn, bk, wm, wn, stages, splitk, passes, group, minb);
  c["KIND"] = 6;
  return c;
}

TEST(SgemmMath, WgmmaNamesSourceGeometryAndAdmits) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  EXPECT_EQ(f.ConfigName(Wgmma()), "sgemm_wgmma_128x128x32_w64x128_s3_g8_b1_3xtf32");
  EXPECT_EQ(f.ConfigName(Wgmma(64, 128, 32, 64, 128, 4, 4, 1, 1)),
            "sgemm_wgmma_64x128x32_w64x128_s4_g1_b1_sk4_tf32");
  EXPECT_TRUE(f.Check(Wgmma(), d).ok()) << f.Check(Wgmma(), d);
  const KernelSource src = f.Source(Wgmma());
  EXPECT_EQ(src.name_expression, "sgemm_wgmma<128,128,32,64,128,3,1,3,8,1,1>");
  EXPECT_EQ(src.parts, (std::vector<std::string>{
                           "sgemm/sgemm.cuh", "sgemm/warp.cuh", "sgemm/mma_tf32.cuh",
                           "sgemm/wgmma_tf32.cuh", "sgemm/wgmma_tile.cuh", "sgemm/wgmma_rs.cuh",
                           "sgemm/wgmma_kernels.cuh"}));
  EXPECT_EQ(src.options, (std::vector<std::string>{"--gpu-architecture=sm_90a"}));
  // As KIND 5: no candidate of ieee_fp32; 3xTF32 of fp32_accurate and tf32.
  EXPECT_FALSE(f.Admits(Wgmma(), v1::MATH_IEEE_FP32));
  EXPECT_TRUE(f.Admits(Wgmma(), v1::MATH_FP32_ACCURATE));
  EXPECT_TRUE(f.Admits(Wgmma(), v1::MATH_TF32));
  const Config one = Wgmma(128, 128, 32, 64, 128, 4, 1, 1);
  EXPECT_FALSE(f.Admits(one, v1::MATH_IEEE_FP32));
  EXPECT_FALSE(f.Admits(one, v1::MATH_FP32_ACCURATE));
  EXPECT_TRUE(f.Admits(one, v1::MATH_TF32));

  // 1000x1000x1000 with 128x128 tiles: 8 x 8 tiles, 2 warpgroups, 3 stages
  // of big and small 256 rows of 32 floats, and 1024 bytes to align them.
  const v1::LaunchGeometry g = f.Geometry(Wgmma(), {1000, 1000, 1000}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{64, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 3u * 2 * 256 * 32 * 4 + 1024);
  EXPECT_FALSE(g.prescale_output());
  const v1::LaunchGeometry s = f.Geometry(Wgmma(64, 128, 32, 64, 128, 4, 4, 1, 1), {7, 13, 5}, d);
  EXPECT_EQ(Grid(s), (std::vector<uint32_t>{1, 4, 1}));
  EXPECT_EQ(Block(s), (std::vector<uint32_t>{128, 1, 1}));
  EXPECT_EQ(s.dynamic_shared_bytes(), 4u * 192 * 32 * 4 + 1024);
  EXPECT_TRUE(s.prescale_output());
}

TEST(SgemmMath, CheckRejectsBadWgmmaConfigs) {
  const v1::Device d = Sm90ReferenceDevice();
  // wgmma is sm_90a's: compute capability 9.0 and no other.
  for (auto [major, minor] : {std::pair{8, 0}, std::pair{8, 9}, std::pair{10, 0}, std::pair{12, 0}}) {
    v1::Device other = d;
    other.set_cc_major(major);
    other.set_cc_minor(minor);
    ExpectRejectedOn(Wgmma(), other, "KIND=6 needs wgmma (sm_90a: compute capability 9.0)");
  }
  ExpectRejected(Wgmma(128, 128, 32, 64, 128, 3, 1, 0), "KIND=6 takes PASSES 1 or 3");
  ExpectRejected(Wgmma(128, 128, 32, 32, 128), "the warpgroup tile 32x128");
  ExpectRejected(Wgmma(128, 128, 32, 64, 32), "the warpgroup tile 64x32");
  ExpectRejected(Wgmma(128, 128, 64), "KIND=6 takes BK 16 or 32 and STAGES >= 3");
  ExpectRejected(Wgmma(128, 128, 32, 64, 128, 2), "KIND=6 takes BK 16 or 32 and STAGES >= 3");
  // 4 stages of big and small 128x128x32 tiles: 256 KiB.
  ExpectRejected(Wgmma(128, 128, 32, 64, 128, 4), "bytes of shared memory");
  // The fresh accumulators of 64x256 3xTF32 warpgroup tiles: 256 registers.
  ExpectRejected(Wgmma(128, 256, 16, 64, 256, 3), "registers per thread");
  // Four warpgroups (128 registers a thread) at BK 32: spills.
  ExpectRejected(Wgmma(256, 128, 32, 64, 128, 3, 1, 1), "registers per thread");
  EXPECT_TRUE(CheckSm90(Wgmma(256, 128, 16, 64, 128, 4, 1, 1)).ok());
  // KIND 6 takes KIND 5's fixed values of the other parameters.
  Config with_tm = Wgmma();
  with_tm["TM"] = 8;
  ExpectRejected(with_tm, "TM=8 is unused by KIND=6 (wgmma)");
}

// LA (K tiles loaded ahead into registers): KIND 6's alone, 1 or 2; an LA=2
// config is named "_la2", instantiates LA=2, reads back by name, and its
// register estimate counts the second register set; LA=1 (named or not)
// is the config of before LA.
TEST(SgemmMath, WgmmaLoadAhead) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  Config la2 = Wgmma(256, 128, 16, 64, 128, 4, 1, 1);
  la2["LA"] = 2;
  const std::string name = "sgemm_wgmma_256x128x16_w64x128_s4_g8_b1_tf32_la2";
  EXPECT_EQ(f.ConfigName(la2), name);
  EXPECT_TRUE(f.Check(la2, d).ok()) << f.Check(la2, d);
  EXPECT_EQ(f.Source(la2).name_expression, "sgemm_wgmma<256,128,16,64,128,4,1,1,8,1,2>");
  const auto by_name = f.ByName(0);
  ASSERT_TRUE(by_name.contains(name));
  EXPECT_EQ(by_name.at(name), la2);
  EXPECT_EQ(f.ConfigName(by_name.at(name)), name);
  auto parsed = f.ParseConfigKey(f.ConfigKey(la2));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, la2);
  // LA=1 named is LA absent: the name and instantiation of before LA.
  Config la1 = la2;
  la1["LA"] = 1;
  la2.erase("LA");
  EXPECT_EQ(f.ConfigName(la1), "sgemm_wgmma_256x128x16_w64x128_s4_g8_b1_tf32");
  EXPECT_EQ(f.ConfigName(la1), f.ConfigName(la2));
  EXPECT_EQ(f.Source(la1).name_expression, f.Source(la2).name_expression);
  EXPECT_TRUE(f.Check(la1, d).ok());
  EXPECT_EQ(by_name.at(f.ConfigName(la1)), la2);
  // Refused: LA 3, LA 2 of another kind, LA 2 where the second set does not
  // fit (one 64x128 warpgroup at BK 32: 64 + 4 x 48 + 16 = 272).
  Config la3 = la1;
  la3["LA"] = 3;
  ExpectRejected(la3, "LA=3 is not one of the supported values 0, 1, 2");
  for (Config other : {Mma(), Warp(), Tiled()}) {
    other["LA"] = 2;
    const absl::Status s = f.Check(other, d);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("LA=2 is unused by KIND="), std::string::npos) << s;
    other["LA"] = 1;
    EXPECT_TRUE(f.Check(other, d).ok()) << f.Check(other, d);
  }
  Config one_wg = Wgmma(64, 128, 32, 64, 128, 4, 1, 1);
  EXPECT_TRUE(f.Check(one_wg, d).ok());
  one_wg["LA"] = 2;
  ExpectRejected(one_wg, "an estimated 272 registers per thread (64 accumulators + 4 x 48");
  // The space's LA=2 configs: KIND 6, SPLITK 1, each the twin of an LA=1
  // config; TF32 and 3xTF32 ones in tf32.
  const auto tf32 = f.ValidSpace(d, nullptr, v1::MATH_TF32);
  std::set<std::string> names;
  for (const auto& c : tf32) names.insert(f.ConfigName(c));
  int one = 0, three = 0;
  for (const auto& c : tf32) {
    if (!c.contains("LA") || c.at("LA") == 0) continue;
    EXPECT_EQ(c.at("KIND"), 6);
    EXPECT_EQ(c.at("SPLITK"), 1);
    Config twin = c;
    twin.erase("LA");
    EXPECT_TRUE(names.contains(f.ConfigName(twin))) << f.ConfigName(c);
    (c.at("PASSES") == 1 ? one : three)++;
  }
  EXPECT_EQ(one, 11);  // SPLITK 1, GROUP 8, less what the estimate refuses and kWgmmaLa2Spills
  EXPECT_EQ(three, 8);
}

// LA=0, the register-A form (wgmma_tf32.cuh RsTile): BK 32, WM = BM = 128,
// WN 64, 4 stages or more; its shared memory and register estimate (two
// fragment sets); 3 3xTF32 configs, each also with PROMOTE 2, and 4 TF32
// configs in the space, each also with WS.
TEST(SgemmMath, WgmmaRegisterA) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  Config rs = Wgmma(128, 128, 32, 128, 64, 4, 1, 3, 1);
  rs["LA"] = 0;
  EXPECT_EQ(f.ConfigName(rs), "sgemm_wgmma_128x128x32_w128x64_s4_g1_b1_3xtf32_la0");
  EXPECT_EQ(f.Source(rs).name_expression, "sgemm_wgmma<128,128,32,128,64,4,1,3,1,1,0>");
  EXPECT_TRUE(f.Check(rs, d).ok()) << f.Check(rs, d);
  const v1::LaunchGeometry g = f.Geometry(rs, {1000, 300, 77}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{8 * 3, 1, 1}));
  EXPECT_EQ(g.block(0), 256u);  // two warpgroups of 64 columns
  // 4 stages of (2 x 128 x 32 + 32 x 136) floats = 50176 bytes (49 KiB), + 1024
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * 50176 + 1024);
  Config tf32 = Wgmma(256, 128, 32, 256, 64, 4, 1, 1, 1);
  tf32["LA"] = 0;
  EXPECT_TRUE(f.Check(tf32, d).ok()) << f.Check(tf32, d);
  EXPECT_EQ(f.Geometry(tf32, {512, 512, 512}, d).block(0), 256u);
  // Refused: another K tile or warpgroup tile, 3 stages, 3xTF32 beyond
  // 128x128, four warpgroups of TF32 (64 + 32 + 48 registers over 128).
  for (auto [key, value] : {std::pair<const char*, int64_t>{"BK", 16}, {"WM", 64}, {"WN", 128}}) {
    Config bad = rs;
    bad[key] = value;
    ExpectRejected(bad, "LA=0 (the register-A form) takes BK 32, WM = BM (128 or 256) and WN 64");
  }
  Config three_stages = rs;
  three_stages["STAGES"] = 3;
  ExpectRejected(three_stages, "STAGES >= 3 (LA=0: 4)");
  Config wide = tf32;
  wide["PASSES"] = 3;
  ExpectRejected(wide, "(3xTF32: BM = BN = 128)");
  Config four = Wgmma(128, 256, 32, 128, 64, 4, 1, 1, 1);
  four["LA"] = 0;
  ExpectRejected(four, "64 accumulators + 32 fragment registers (LA=0) + 48");
  // The space's: 3xTF32 in fp32_accurate and tf32, TF32 in tf32 only.
  int three = 0, one = 0;
  for (const auto& c : f.ValidSpace(d, nullptr, v1::MATH_TF32)) {
    if (c.contains("LA") && c.at("LA") == 0) (c.at("PASSES") == 3 ? three : one)++;
  }
  EXPECT_EQ(three, 6);
  EXPECT_EQ(one, 8);  // 4, and their WS twins
  int accurate = 0, promoted = 0;
  for (const auto& c : f.ValidSpace(d, nullptr, v1::MATH_FP32_ACCURATE)) {
    if (c.contains("LA") && c.at("LA") == 0) {
      EXPECT_EQ(c.at("PASSES"), 3) << f.ConfigName(c);
      ++accurate;
      promoted += c.contains("PROMOTE");
    }
  }
  EXPECT_EQ(accurate, 6);
  EXPECT_EQ(promoted, 3);
}

// WS (TF32 with LA=0, BN 128): the warp-specialized form, a producer
// warpgroup more (384 threads), 16 bytes of mbarriers a stage more, the
// consumers' registers under setmaxnreg's 232 (not the 168 of 384
// threads); named "_ws", its own kernel sgemm_wgmma_ws taking A's TMA tensor
// map (LaunchGeometry.tensor_maps) after C; each TF32 LA=0 config
// of the space has a WS twin; refused elsewhere with a clear message.
TEST(SgemmMath, WgmmaWarpSpecialized) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  Config ws = Wgmma(256, 128, 32, 256, 64, 4, 1, 1, 1);
  ws["LA"] = 0;
  ws["WS"] = 1;
  EXPECT_EQ(f.ConfigName(ws), "sgemm_wgmma_256x128x32_w256x64_s4_g1_b1_tf32_la0_ws");
  EXPECT_EQ(f.Source(ws).name_expression, "sgemm_wgmma_ws<256,4,1,1>");
  EXPECT_TRUE(f.Check(ws, d).ok()) << f.Check(ws, d);
  const v1::LaunchGeometry g = f.Geometry(ws, {1000, 300, 77}, d);
  EXPECT_EQ(g.block(0), 384u);  // two consumer warpgroups and the producer
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * 50176 + 1024 + 4 * 16);
  // A (1000 x 77) by TMA: dims K, M; a row of 77 floats; boxes of 32 x 256,
  // 128-byte swizzle; passed after C (parameter 8) over A (parameter 4).
  ASSERT_EQ(g.tensor_maps_size(), 1);
  const v1::TensorMap& a = g.tensor_maps(0);
  EXPECT_EQ(a.pointer_arg(), 4u);
  EXPECT_EQ(a.param(), 8u);
  EXPECT_EQ(std::vector<uint64_t>(a.dims().begin(), a.dims().end()), (std::vector<uint64_t>{77, 1000}));
  EXPECT_EQ(std::vector<uint64_t>(a.strides_bytes().begin(), a.strides_bytes().end()),
            (std::vector<uint64_t>{308}));
  EXPECT_EQ(std::vector<uint32_t>(a.box().begin(), a.box().end()), (std::vector<uint32_t>{32, 256}));
  EXPECT_EQ(a.swizzle_bytes(), 128u);
  Config no_ws = ws;
  no_ws.erase("WS");
  EXPECT_EQ(f.Source(no_ws).name_expression, "sgemm_wgmma<256,128,32,256,64,4,1,1,1,1,0>");
  const v1::LaunchGeometry g0 = f.Geometry(no_ws, {1000, 300, 77}, d);
  EXPECT_EQ(g0.block(0), 256u);
  EXPECT_EQ(g0.tensor_maps_size(), 0);
  Config accurate = ws;  // 3xTF32 128x128
  accurate["BM"] = accurate["WM"] = 128;
  accurate["PASSES"] = 3;
  ExpectRejected(accurate, "WS=1 (warp-specialized) is TF32's with LA=0, BN 128");
  Config la1 = ws;
  la1.erase("LA");
  la1["WM"] = 64;
  la1["BK"] = 16;
  ExpectRejected(la1, "WS=1 (warp-specialized) is TF32's with LA=0, BN 128");
  Config two_blocks = ws;
  two_blocks["MINB"] = 2;
  ExpectRejected(two_blocks, "and MINB 1; this config has PASSES=1, LA=0, BN=128, MINB=2");
  for (Config other : {Mma(), Warp(), Tiled()}) {
    other["WS"] = 1;
    ExpectRejected(other, "WS=1 is unused by KIND=");
  }
  int twins = 0;
  for (const auto& c : f.ValidSpace(d, nullptr, v1::MATH_TF32)) {
    if (!c.contains("WS")) continue;
    ++twins;
    EXPECT_EQ(c.at("LA"), 0) << f.ConfigName(c);
    EXPECT_EQ(c.at("PASSES"), 1) << f.ConfigName(c);
  }
  EXPECT_EQ(twins, 4);
}

// PROMOTE (3xTF32 with LA=0): 2 K tiles of products per tensor-core partial
// sum; named "_p2" and instantiated as the template's last argument, 1
// (the default) as before it; refused elsewhere with a clear message.
TEST(SgemmMath, WgmmaPromote) {
  const Family& f = SgemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  Config p2 = Wgmma(128, 128, 32, 128, 64, 4, 4, 3, 1);
  p2["LA"] = 0;
  p2["PROMOTE"] = 2;
  const std::string name = "sgemm_wgmma_128x128x32_w128x64_s4_g1_b1_sk4_3xtf32_la0_p2";
  EXPECT_EQ(f.ConfigName(p2), name);
  EXPECT_EQ(f.Source(p2).name_expression, "sgemm_wgmma<128,128,32,128,64,4,4,3,1,1,0,2>");
  EXPECT_TRUE(f.Check(p2, d).ok()) << f.Check(p2, d);
  EXPECT_TRUE(f.Admits(p2, v1::MATH_FP32_ACCURATE));
  EXPECT_FALSE(f.Admits(p2, v1::MATH_IEEE_FP32));
  const auto by_name = f.ByName(0);
  ASSERT_TRUE(by_name.contains(name));
  EXPECT_EQ(by_name.at(name), p2);
  auto parsed = f.ParseConfigKey(f.ConfigKey(p2));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, p2);
  // PROMOTE=1 named is PROMOTE absent.
  Config p1 = p2;
  p1["PROMOTE"] = 1;
  Config absent = p2;
  absent.erase("PROMOTE");
  EXPECT_EQ(f.ConfigName(p1), "sgemm_wgmma_128x128x32_w128x64_s4_g1_b1_sk4_3xtf32_la0");
  EXPECT_EQ(f.ConfigName(p1), f.ConfigName(absent));
  EXPECT_EQ(f.Source(p1).name_expression, "sgemm_wgmma<128,128,32,128,64,4,4,3,1,1,0>");
  EXPECT_EQ(f.Source(p1).name_expression, f.Source(absent).name_expression);
  // Refused: PROMOTE 3, PROMOTE 2 with TF32, with LA 1, on another kind.
  Config p3 = p2;
  p3["PROMOTE"] = 3;
  ExpectRejected(p3, "PROMOTE=3 is not one of the supported values 1, 2");
  Config tf32 = Wgmma(256, 128, 32, 256, 64, 4, 1, 1, 1);
  tf32["LA"] = 0;
  tf32["PROMOTE"] = 2;
  ExpectRejected(tf32, "PROMOTE=2 is 3xTF32's with LA=0 (PASSES 3); this config has PASSES=1, LA=0");
  Config la1 = Wgmma(128, 128, 32, 64, 128, 3, 1, 3);
  ASSERT_TRUE(f.Check(la1, d).ok()) << f.Check(la1, d);
  la1["PROMOTE"] = 2;
  ExpectRejected(la1, "this config has PASSES=3, LA=1, which take PROMOTE=1");
  for (Config other : {Mma(), Warp(), Tiled()}) {
    other["PROMOTE"] = 2;
    const absl::Status s = f.Check(other, d);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("PROMOTE=2 is unused by KIND="), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace tuned
