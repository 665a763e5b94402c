// Unit tests of the sgemm family's SIMT kinds, KIND 0-3 (naive, coalesced,
// tiled, warp; families/gemm/simt/, warp/): sources, geometry, rules. CPU only.
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

TEST(SgemmFamily, Sources) {
  const KernelSource naive = F().Source(Naive(0, 16, 32));
  EXPECT_EQ(naive.name_expression, "sgemm_naive<16,32>");
  EXPECT_EQ(naive.parts, (std::vector<std::string>{"gemm/sgemm.cuh", "gemm/warp.cuh"}));
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

// The SIMT kinds take every layout: LAYOUT is their kernels' last template
// argument where it is not 0 (NN's names and expressions are those stored
// before layouts), the name gets the layout's suffix, Check admits it.
TEST(SgemmFamily, SimtKindsTakeEveryLayout) {
  const std::vector<std::pair<Config, std::string>> cases = {
      {Naive(0, 16, 32), "sgemm_naive<16,32"},
      {Naive(1, 32, 32), "sgemm_coalesced<32,32"},
      {Tiled(), "sgemm_tiled<128,128,8,8,8,4,4,0,1,0"},
      {Warp(), "sgemm_warp<128,128,16,8,8,8,3,1,8,2,1,0,0"},
  };
  const char* suffix[] = {"", "_nt", "_tn", "_tt"};
  for (const auto& [config, expression] : cases) {
    for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
      const Config c = In(config, layout);
      EXPECT_EQ(c.contains("LAYOUT"), layout != v1::LAYOUT_NN);
      EXPECT_EQ(F().LayoutOf(c), layout);
      EXPECT_EQ(F().ConfigName(c), F().ConfigName(config) + suffix[layout]);
      const KernelSource src = F().Source(c);
      EXPECT_EQ(src.name_expression,
                expression + (layout == v1::LAYOUT_NN ? "" : "," + std::to_string(layout)) + ">");
      EXPECT_EQ(src.parts, F().Source(config).parts);
      EXPECT_TRUE(CheckSm90(c).ok()) << F().ConfigName(c) << ": " << CheckSm90(c);
    }
  }
  EXPECT_EQ(F().ConfigName(In(Warp(), v1::LAYOUT_NT)),
            "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_nt");
  EXPECT_EQ(F().Source(In(Tiled(), v1::LAYOUT_TT)).name_expression,
            "sgemm_tiled<128,128,8,8,8,4,4,0,1,0,3>");
}

// The warp kind copies a K-contiguous B (op(B) = B^T) transposed, into rows
// of BN+4 floats (as A's BM+4): its shared memory, in Geometry and in
// Check, counts the padding; op(A) = A^T needs none.
TEST(SgemmFamily, WarpKindCountsBsPaddingWhereBIsTransposed) {
  const Shape shape = {1000, 1000, 1000};
  const v1::Device d = Sm90ReferenceDevice();
  EXPECT_EQ(F().Geometry(In(Warp(), v1::LAYOUT_NN), shape, d).dynamic_shared_bytes(),
            3u * 16 * (132 + 128) * 4);
  EXPECT_EQ(F().Geometry(In(Warp(), v1::LAYOUT_TN), shape, d).dynamic_shared_bytes(),
            3u * 16 * (132 + 128) * 4);
  for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_TT}) {
    EXPECT_EQ(F().Geometry(In(Warp(), layout), shape, d).dynamic_shared_bytes(),
              3u * 16 * (132 + 132) * 4);
  }
  // 2 x 32 x (132 + 128) floats fit 100 KiB; with Bs's padding, 2 x 32 x
  // (132 + 132) do not.
  v1::Device small = d;
  small.set_shared_memory_per_block_optin(2 * 32 * (132 + 128) * 4);
  const Config c = Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 1);
  EXPECT_TRUE(F().Check(c, small).ok());
  ExpectRejectedOn(In(c, v1::LAYOUT_NT), small, "67584 bytes of shared memory (STAGES x BK*(BM+4 + BN+4)");
  // On the sm_90 reference device, every SIMT config of the space passes in
  // TN; in NT and TT, all but the two whose MINB blocks the padding takes
  // over the SM's shared memory (stream-K 16x128x32, 3 stages, MINB 4:
  // 4 x 58368 bytes).
  for (v1::Layout layout : kTransposedLayouts) {
    size_t nn = 0, in = 0, refused = 0;
    for (const Config& c : F().ValidSpace(d, nullptr)) nn += c.at("KIND") <= 3;
    std::vector<Pruned> pruned;
    for (const Config& c : F().ValidSpace(d, &pruned, v1::MATH_IEEE_FP32, layout)) {
      in += c.at("KIND") <= 3;
    }
    for (const Pruned& p : pruned) {
      if (p.config.at("KIND") > 3 || !CheckSm90(In(p.config, v1::LAYOUT_NN)).ok()) continue;
      ++refused;
      EXPECT_NE(p.reason.find("MINB=4 blocks of 58368 bytes of shared memory"), std::string::npos)
          << F().ConfigName(p.config) << ": " << p.reason;
    }
    EXPECT_EQ(in + refused, nn) << EnumName(layout);
    EXPECT_EQ(refused, layout == v1::LAYOUT_TN ? 0u : 2u) << EnumName(layout);
  }
}

// NVRTC compiles each SIMT kind in each layout other than NN without
// spills (a sample: a few configs each; tests/compile_test.cc compiles
// every NN config): the scalar and float4 tiled paths, the warp kind's
// 16-byte copies of op(A) = A^T with a short last round (sliced-K 32x64:
// 256 float4 of A over 512 threads), split-K with a streamed B, stream-K.
TEST(SgemmFamily, SimtKindsCompileInEveryLayout) {
  ExpectCompiles({
      In(Naive(0, 16, 16), v1::LAYOUT_NT),
      In(Naive(0, 16, 16), v1::LAYOUT_TT),
      In(Naive(1, 16, 16), v1::LAYOUT_NT),
      In(Naive(1, 16, 16), v1::LAYOUT_TN),
      In(Tiled(), v1::LAYOUT_NT),
      In(Tiled(32, 32, 32, 1, 1, 4, 1, 0, 0, 1), v1::LAYOUT_TN),
      In(Tiled(64, 64, 8, 8, 1, 4, 1, 0, 1, 0), v1::LAYOUT_TT),
      In(Warp(), v1::LAYOUT_NT),
      In(Warp(32, 64, 32, 4, 4, 8, 3, 1, 1, 1, 4), v1::LAYOUT_TN),
      In(Warp(16, 128, 32, 4, 4, 8, 3, 4, 1, 1, 1, 1), v1::LAYOUT_NT),
      In(Warp(128, 128, 32, 8, 8, 8, 2, 1, 8, 2, 1, 0, 1), v1::LAYOUT_TT),
  });
}

}  // namespace
}  // namespace tuned
