// Unit tests of the sgemm family's wgmma kind, KIND 6
// (families/gemm/wgmma_tf32/): names, source, geometry, rules, LA,
// the register-A and warp-specialized forms, PROMOTE. CPU only.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "tests/gemm_test_util.h"

namespace tuned {
namespace {

using namespace gemm_test;  // NOLINT(build/namespaces): the kinds' config helpers

TEST(SgemmMath, WgmmaNamesSourceGeometryAndAdmits) {
  const Family& f = GemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  EXPECT_EQ(f.ConfigName(Wgmma()), "sgemm_wgmma_128x128x32_w64x128_s3_g8_b1_3xtf32");
  EXPECT_EQ(f.ConfigName(Wgmma(64, 128, 32, 64, 128, 4, 4, 1, 1)),
            "sgemm_wgmma_64x128x32_w64x128_s4_g1_b1_sk4_tf32");
  EXPECT_TRUE(f.Check(Wgmma(), d).ok()) << f.Check(Wgmma(), d);
  const KernelSource src = f.Source(Wgmma());
  EXPECT_EQ(src.name_expression, "sgemm_wgmma<128,128,32,64,128,3,1,3,8,1,1>");
  EXPECT_EQ(src.parts, (std::vector<std::string>{
                           "gemm/sgemm.cuh", "gemm/warp.cuh", "gemm/mma_tf32.cuh",
                           "gemm/hopper.cuh", "gemm/wgmma_tf32.cuh", "gemm/wgmma_tile.cuh",
                           "gemm/wgmma_rs.cuh",
                           "gemm/wgmma_kernels.cuh"}));
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
// is the config without LA (its stored name).
TEST(SgemmMath, WgmmaLoadAhead) {
  const Family& f = GemmFamily();
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
  // LA=1 named is LA absent: the name and instantiation without LA.
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
// configs in the space, each also with WS, two of them with WS 2 and 3, and
// 7 of WS 2 for few tiles (64x128, split-K), 3 of WS 4.
TEST(SgemmMath, WgmmaRegisterA) {
  const Family& f = GemmFamily();
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
    ExpectRejected(bad, "LA=0 (the register-A form) takes BK 32, WM = BM (128 or 256; WS 2 to 4 "
                        "also 64) and WN 64");
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
  EXPECT_EQ(one, 22);  // 4, their WS twins, two with WS 2 and 3, 7 for few tiles with WS 2, 3 WS 4
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
  const Family& f = GemmFamily();
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
  // Then B's (77 x 300, never read by TMA): dims N, K, parameter 9 over B
  // (parameter 5). Both staged where TMA cannot take them (here A's pitch
  // of 308 bytes).
  ASSERT_EQ(g.tensor_maps_size(), 2);
  const v1::TensorMap& a = g.tensor_maps(0);
  EXPECT_EQ(a.pointer_arg(), 4u);
  EXPECT_EQ(a.param(), 8u);
  EXPECT_EQ(std::vector<uint64_t>(a.dims().begin(), a.dims().end()), (std::vector<uint64_t>{77, 1000}));
  EXPECT_EQ(std::vector<uint64_t>(a.strides_bytes().begin(), a.strides_bytes().end()),
            (std::vector<uint64_t>{308}));
  EXPECT_EQ(std::vector<uint32_t>(a.box().begin(), a.box().end()), (std::vector<uint32_t>{32, 256}));
  EXPECT_EQ(a.swizzle_bytes(), 128u);
  EXPECT_TRUE(a.stage());
  const v1::TensorMap& b = g.tensor_maps(1);
  EXPECT_EQ(b.pointer_arg(), 5u);
  EXPECT_EQ(b.param(), 9u);
  EXPECT_EQ(std::vector<uint64_t>(b.dims().begin(), b.dims().end()), (std::vector<uint64_t>{300, 77}));
  EXPECT_EQ(std::vector<uint64_t>(b.strides_bytes().begin(), b.strides_bytes().end()),
            (std::vector<uint64_t>{1200}));
  EXPECT_EQ(std::vector<uint32_t>(b.box().begin(), b.box().end()), (std::vector<uint32_t>{32, 8}));
  EXPECT_EQ(b.swizzle_bytes(), 0u);
  EXPECT_TRUE(b.stage());
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
  EXPECT_EQ(twins, 18);  // 4 with WS 1, 2 each with WS 2 and 3, 7 more with WS 2, 3 with WS 4
}

// WS 2 and 3 (sgemm_wgmma_tma): both operands by TMA, B in 32 x 32 boxes in
// the 128-byte swizzle; a persistent grid of as many (clusters of) CTAs as
// the device holds, 3 with B multicast in a cluster of two along M; named
// "_tma" and "_tma_m2"; NN only; SPLITK 1..8 units a tile, added into a
// prescaled C.
TEST(SgemmMath, WgmmaTma) {
  const Family& f = GemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  Config tma = Wgmma(256, 128, 32, 256, 64, 4, 1, 1, 1);
  tma["LA"] = 0;
  tma["WS"] = 2;
  EXPECT_EQ(f.ConfigName(tma), "sgemm_wgmma_256x128x32_w256x64_s4_g1_b1_tf32_la0_tma");
  EXPECT_EQ(f.Source(tma).name_expression, "sgemm_wgmma_tma<256,4,1,1,1,1,0>");
  EXPECT_EQ(f.Source(tma).parts.back(), "gemm/wgmma_tf32_tma.cuh");
  EXPECT_TRUE(f.Check(tma, d).ok()) << f.Check(tma, d);
  // 4096 x 11008: 16 x 86 tiles, on 132 SMs a grid of 132; 4 stages of
  // (256 + 128) rows of 32 floats, 1024 bytes of alignment, the mbarriers.
  const v1::LaunchGeometry g = f.Geometry(tma, {4096, 11008, 4096}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{132, 1, 1}));
  EXPECT_EQ(g.block(0), 384u);
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * 384 * 128 + 1024 + 4 * 16);
  ASSERT_EQ(g.tensor_maps_size(), 2);
  EXPECT_EQ(std::vector<uint32_t>(g.tensor_maps(0).box().begin(), g.tensor_maps(0).box().end()),
            (std::vector<uint32_t>{32, 256}));
  const v1::TensorMap& b = g.tensor_maps(1);
  EXPECT_EQ(std::vector<uint64_t>(b.dims().begin(), b.dims().end()),
            (std::vector<uint64_t>{11008, 4096}));
  EXPECT_EQ(std::vector<uint32_t>(b.box().begin(), b.box().end()), (std::vector<uint32_t>{32, 32}));
  EXPECT_EQ(b.swizzle_bytes(), 128u);
  EXPECT_TRUE(b.stage());
  // Fewer tiles than SMs: one CTA a tile.
  EXPECT_EQ(Grid(f.Geometry(tma, {512, 512, 512}, d)), (std::vector<uint32_t>{8, 1, 1}));
  Config m2 = tma;
  m2["WS"] = 3;
  EXPECT_EQ(f.ConfigName(m2), "sgemm_wgmma_256x128x32_w256x64_s4_g1_b1_tf32_la0_tma_m2");
  EXPECT_EQ(f.Source(m2).name_expression, "sgemm_wgmma_tma<256,4,1,1,2,1,0>");
  // Clusters of two tiles along M: 66 of them on 132 SMs.
  EXPECT_EQ(Grid(f.Geometry(m2, {4096, 11008, 4096}, d)), (std::vector<uint32_t>{132, 1, 1}));
  EXPECT_EQ(Grid(f.Geometry(m2, {512, 512, 512}, d)), (std::vector<uint32_t>{8, 1, 1}));
  EXPECT_FALSE(f.Geometry(tma, {512, 512, 512}, d).prescale_output());
  // SPLITK 4 at 1024^3 with 128x128: 64 tiles of 4 units, 132 CTAs, C
  // prescaled by beta; 6 split-K configs in the space.
  Config split = tma;
  split["BM"] = split["WM"] = 128;
  split["STAGES"] = 6;
  split["SPLITK"] = 4;
  EXPECT_TRUE(f.Check(split, d).ok()) << f.Check(split, d);
  EXPECT_EQ(f.ConfigName(split), "sgemm_wgmma_128x128x32_w128x64_s6_g1_b1_sk4_tf32_la0_tma");
  EXPECT_EQ(f.Source(split).name_expression, "sgemm_wgmma_tma<128,6,1,1,1,4,0>");
  const v1::LaunchGeometry gs = f.Geometry(split, {1024, 1024, 1024}, d);
  EXPECT_EQ(Grid(gs), (std::vector<uint32_t>{132, 1, 1}));
  EXPECT_TRUE(gs.prescale_output());
  EXPECT_EQ(Grid(f.Geometry(split, {256, 256, 1024}, d)), (std::vector<uint32_t>{16, 1, 1}));
  int splits = 0;
  for (const auto& c : f.ValidSpace(d, nullptr, v1::MATH_TF32)) {
    if (c.contains("WS") && c.at("WS") == 2 && c.at("SPLITK") > 1) ++splits;
  }
  EXPECT_EQ(splits, 6);
  // 64x128 (WS 2 and 3 only): wgmma N 64, 128 CTAs at 1024^3, 8 stages of
  // (64 + 128) rows of 32 floats.
  Config narrow = tma;
  narrow["BM"] = narrow["WM"] = 64;
  narrow["STAGES"] = 8;
  EXPECT_TRUE(f.Check(narrow, d).ok()) << f.Check(narrow, d);
  EXPECT_EQ(f.ConfigName(narrow), "sgemm_wgmma_64x128x32_w64x64_s8_g1_b1_tf32_la0_tma");
  EXPECT_EQ(f.Source(narrow).name_expression, "sgemm_wgmma_tma<64,8,1,1,1,1,0>");
  const v1::LaunchGeometry gn = f.Geometry(narrow, {1024, 1024, 1024}, d);
  EXPECT_EQ(Grid(gn), (std::vector<uint32_t>{128, 1, 1}));
  EXPECT_EQ(gn.dynamic_shared_bytes(), 8u * 192 * 128 + 1024 + 8 * 16);
  EXPECT_EQ(gn.tensor_maps(0).box(1), 64u);
  Config narrow_ws1 = narrow;
  narrow_ws1["WS"] = 1;
  ExpectRejected(narrow_ws1, "WM = BM (128 or 256; WS 2 to 4 also 64) and WN 64 (3xTF32: BM = "
                             "BN = 128), not BK=32, 64x64 warpgroup tiles of 64x128");
  // WS 4: split-K reduced in a cluster (1, 1, SPLITK): grid {tiles, 1,
  // SPLITK}, no prescale, the receive buffer of SPLITK - 1 tiles of fp32.
  Config kc = narrow;
  kc["WS"] = 4;
  kc["SPLITK"] = 2;
  EXPECT_TRUE(f.Check(kc, d).ok()) << f.Check(kc, d);
  EXPECT_EQ(f.ConfigName(kc), "sgemm_wgmma_64x128x32_w64x64_s8_g1_b1_sk2_tf32_la0_tma_kc");
  EXPECT_EQ(f.Source(kc).name_expression, "sgemm_wgmma_tma<64,8,1,0,1,2,1>");
  const v1::LaunchGeometry gk = f.Geometry(kc, {512, 512, 512}, d);
  EXPECT_EQ(Grid(gk), (std::vector<uint32_t>{32, 1, 2}));
  EXPECT_FALSE(gk.prescale_output());
  EXPECT_EQ(gk.dynamic_shared_bytes(), 8u * 192 * 128 + 1024 + 8 * 16 + 64 * 128 * 4 + 8);
  ASSERT_EQ(gk.tensor_maps_size(), 2);
  int kcs = 0;
  for (const auto& c : f.ValidSpace(d, nullptr, v1::MATH_TF32)) {
    kcs += c.contains("WS") && c.at("WS") == 4;
  }
  EXPECT_EQ(kcs, 3);
  for (int64_t s : {1, 8}) {
    Config bad = kc;
    bad["SPLITK"] = s;
    ExpectRejected(bad, "WS=4 (split-K reduced in a cluster of SPLITK CTAs) takes SPLITK 2..4");
  }
  Config sixteen = split;
  sixteen["SPLITK"] = 16;
  ExpectRejected(sixteen, "WS=2 (both operands by TMA, sgemm_wgmma_tma) takes SPLITK 1..8 and layout NN");
  Config nt = tma;
  nt["LAYOUT"] = v1::LAYOUT_NT;
  ExpectRejected(nt, "not SPLITK=1 in LAYOUT_NT");
  Config accurate = tma;
  accurate["BM"] = accurate["WM"] = 128;
  accurate["PASSES"] = 3;
  ExpectRejected(accurate, "WS=2 (warp-specialized) is TF32's with LA=0, BN 128");
}

// PROMOTE (3xTF32 with LA=0): 2 K tiles of products per tensor-core partial
// sum; named "_p2" and instantiated as the template's last argument, 1
// (the default) as a config without PROMOTE; refused elsewhere with a clear message.
TEST(SgemmMath, WgmmaPromote) {
  const Family& f = GemmFamily();
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

// KIND 6 in every layout (LAYOUT, the last template argument of
// sgemm_wgmma, after PROMOTE, which it names then, and of sgemm_wgmma_ws):
// LA 1 and 2 take all four (each operand staged per its contiguity); LA=0
// and WS take NN, NT (B^T's tile, BN rows of BK + 4 floats) and TT (C^T =
// B A, the swapped problem's grid and B's tensor map), and refuse TN;
// LA=0 3xTF32 is refused in NT (it spills). A sample of each form compiles
// with NVRTC.
TEST(SgemmMath, WgmmaLayouts) {
  const Family& f = GemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  const Config la1 = Wgmma();  // 3xTF32 128x128x32, 3 stages
  Config la2 = Wgmma(128, 128, 16, 64, 128, 4, 1, 3);
  la2["LA"] = 2;
  Config la0 = Wgmma(128, 128, 32, 128, 64, 4, 1, 3, 1);
  la0["LA"] = 0;
  Config p2 = la0;
  p2["PROMOTE"] = 2;
  Config tf32_la0 = la0;
  tf32_la0["PASSES"] = 1;
  Config ws = Wgmma(256, 128, 32, 256, 64, 4, 1, 1, 1);
  ws["LA"] = 0;
  ws["WS"] = 1;
  EXPECT_EQ(f.Source(la0).name_expression, "sgemm_wgmma<128,128,32,128,64,4,1,3,1,1,0>");
  EXPECT_EQ(f.Source(p2).name_expression, "sgemm_wgmma<128,128,32,128,64,4,1,3,1,1,0,2>");
  const Shape shape = {1000, 300, 77};
  for (v1::Layout layout : kTransposedLayouts) {
    const std::string suffix = LayoutSuffixOf(layout);
    const int l = static_cast<int>(layout);
    const Config c1 = f.InLayout(la1, layout), c2 = f.InLayout(la2, layout);
    const Config c0 = f.InLayout(la0, layout), cws = f.InLayout(ws, layout);
    const Config c0p2 = f.InLayout(p2, layout), c0tf32 = f.InLayout(tf32_la0, layout);
    EXPECT_EQ(f.ConfigName(c1), f.ConfigName(la1) + suffix);
    EXPECT_EQ(f.ConfigName(cws), f.ConfigName(ws) + suffix);
    EXPECT_EQ(f.Source(c1).name_expression,
              absl::StrCat("sgemm_wgmma<128,128,32,64,128,3,1,3,8,1,1,1,", l, ">"));
    EXPECT_EQ(f.Source(c2).name_expression,
              absl::StrCat("sgemm_wgmma<128,128,16,64,128,4,1,3,8,1,2,1,", l, ">"));
    EXPECT_EQ(f.Source(c0).name_expression,
              absl::StrCat("sgemm_wgmma<128,128,32,128,64,4,1,3,1,1,0,1,", l, ">"));
    EXPECT_EQ(f.Source(c0p2).name_expression,
              absl::StrCat("sgemm_wgmma<128,128,32,128,64,4,1,3,1,1,0,2,", l, ">"));
    EXPECT_EQ(f.Source(cws).name_expression, absl::StrCat("sgemm_wgmma_ws<256,4,1,1,", l, ">"));
    for (const Config& c : {c1, c2}) {
      EXPECT_TRUE(f.Check(c, d).ok()) << f.ConfigName(c) << ": " << f.Check(c, d);
      EXPECT_EQ(f.Geometry(c, shape, d).SerializeAsString(),
                f.Geometry(f.InLayout(c, v1::LAYOUT_NN), shape, d).SerializeAsString());
    }
    if (layout == v1::LAYOUT_TN) {
      for (const Config& c : {c0, c0p2, c0tf32}) {
        ExpectRejected(c, "LA=0 (the register-A form) does not take TN");
      }
      ExpectRejected(cws, "LA=0 with WS=1 (the register-A form) does not take TN");
    } else if (layout == v1::LAYOUT_NT) {
      ExpectRejected(c0, "LA=0 3xTF32 with op(B) = B^T");
      ExpectRejected(c0p2, "LA=0 3xTF32 with op(B) = B^T");
      EXPECT_TRUE(f.Check(c0tf32, d).ok()) << f.Check(c0tf32, d);
      EXPECT_TRUE(f.Check(cws, d).ok()) << f.Check(cws, d);
      // B^T's tile: BN rows of BK + 4 floats (B's: BK rows of BN + 8).
      const v1::LaunchGeometry g = f.Geometry(cws, shape, d);
      EXPECT_EQ(g.dynamic_shared_bytes(), 4u * (32768 + 18432) + 1024 + 4 * 16);
      EXPECT_EQ(f.Geometry(c0tf32, shape, d).dynamic_shared_bytes(), 4u * (16384 + 18432) + 1024);
      ASSERT_EQ(g.tensor_maps_size(), 2);
      EXPECT_EQ(g.tensor_maps(0).SerializeAsString(),
                f.Geometry(ws, shape, d).tensor_maps(0).SerializeAsString());
      // B stored N x K (300 x 77): rows of K.
      EXPECT_EQ(std::vector<uint64_t>(g.tensor_maps(1).dims().begin(), g.tensor_maps(1).dims().end()),
                (std::vector<uint64_t>{77, 300}));
    } else {  // TT: C^T = B A, NN's kernel body on the swapped problem
      for (const Config& c : {c0, c0p2, c0tf32, cws}) {
        EXPECT_TRUE(f.Check(c, d).ok()) << f.ConfigName(c) << ": " << f.Check(c, d);
        const v1::LaunchGeometry g = f.Geometry(c, shape, d);
        Config nn = c;
        nn.erase("LAYOUT");
        const v1::LaunchGeometry swapped = f.Geometry(nn, {300, 1000, 77}, d);
        EXPECT_EQ(g.grid(0), swapped.grid(0)) << f.ConfigName(c);
        EXPECT_EQ(g.dynamic_shared_bytes(), swapped.dynamic_shared_bytes());
      }
      // B (300 x 77) by TMA: dims K, N; parameter 5 (B). The swapped
      // problem's B is A, stored K x M (77 x 1000): parameter 4.
      const v1::LaunchGeometry g = f.Geometry(cws, shape, d);
      EXPECT_EQ(g.grid(0), 2u * 8u);  // ceil(300 / 256) * ceil(1000 / 128)
      ASSERT_EQ(g.tensor_maps_size(), 2);
      const v1::TensorMap& b = g.tensor_maps(0);
      EXPECT_EQ(b.pointer_arg(), 5u);
      EXPECT_EQ(std::vector<uint64_t>(b.dims().begin(), b.dims().end()),
                (std::vector<uint64_t>{77, 300}));
      EXPECT_EQ(std::vector<uint64_t>(b.strides_bytes().begin(), b.strides_bytes().end()),
                (std::vector<uint64_t>{308}));
      const v1::TensorMap& a = g.tensor_maps(1);
      EXPECT_EQ(a.pointer_arg(), 4u);
      EXPECT_EQ(std::vector<uint64_t>(a.dims().begin(), a.dims().end()),
                (std::vector<uint64_t>{1000, 77}));
    }
    // The layout's space: every config named for it; LA=0 (and WS) but in TN.
    int la0_configs = 0, ws_configs = 0;
    for (const Config& v : f.ValidSpace(d, nullptr, v1::MATH_TF32, layout)) {
      EXPECT_TRUE(absl::EndsWith(f.ConfigName(v), suffix)) << f.ConfigName(v);
      la0_configs += v.at("KIND") == 6 && v.contains("LA") && v.at("LA") == 0;
      ws_configs += v.contains("WS") && v.at("WS") == 1;
    }
    EXPECT_EQ(la0_configs == 0, layout == v1::LAYOUT_TN) << suffix;
    EXPECT_EQ(ws_configs == 0, layout == v1::LAYOUT_TN) << suffix;
  }
  Config tf32 = Wgmma(128, 128, 32, 64, 128, 4, 1, 1);
  ExpectCompiles(
      {f.InLayout(tf32, v1::LAYOUT_NT), f.InLayout(tf32, v1::LAYOUT_TN),
          f.InLayout(la2, v1::LAYOUT_TT), f.InLayout(tf32_la0, v1::LAYOUT_NT),
          f.InLayout(ws, v1::LAYOUT_NT), f.InLayout(p2, v1::LAYOUT_TT),
          f.InLayout(ws, v1::LAYOUT_TT)});
}

}  // namespace
}  // namespace tuned
