// The 16-bit forms' decode kind (KIND 3, families/gemm/decode16/): its
// name, instantiation, launch, the shapes and layouts it is measured on,
// and its rules. NVRTC compiles of its space: compile_test.cc.
#include "families/gemm/op.h"
#include "tests/gemm_test_util.h"

namespace tuned::gemm_test {
namespace {

Config Decode16(int64_t bm, int64_t bn, int64_t wn, int64_t kwarps, int64_t kblocks,
                int64_t splitk = 1) {
  Config c = {{"KIND", 3}, {"BM", bm}, {"BN", bn}, {"BK", 32},
              {"WN", wn},  {"KWARPS", kwarps}, {"KBLOCKS", kblocks}};
  if (splitk > 1) c["SPLITK"] = splitk;
  return c;
}

TEST(Gemm16Decode, NameSourceAndGeometry) {
  const Config c = Bf16().InLayout(Decode16(8, 64, 16, 2, 2, 4), v1::LAYOUT_NT);
  EXPECT_EQ(Bf16().ConfigName(c), "gemm_bf16_decode_8x64_w16_kw2_kb2_sk4_nt");
  EXPECT_EQ(F16F32().ConfigName(Decode16(64, 128, 32, 1, 2)), "gemm_f16_f32_decode_64x128_w32_kw1_kb2");
  EXPECT_EQ(Bf16().Source(c).name_expression, "gemm16_decode<2,8,64,16,2,2,4,1>");
  EXPECT_EQ(F16F32().Source(Decode16(64, 128, 32, 1, 2)).name_expression,
            "gemm16_decode<5,64,128,32,1,2,1,0>");
  EXPECT_EQ(Bf16().Source(c).parts,
            (std::vector<std::string>{"gemm/sgemm.cuh", "gemm/half16.cuh", "gemm/mma16.cuh",
                                      "gemm/decode16.cuh"}));
  EXPECT_TRUE(Bf16().Source(c).options.empty());  // sm_90: mma.sync and clusters, no wgmma

  // Llama-2-7B's down projection for one token: 4096 rows of B in tiles of
  // 64, the one token in a block of 8, K over a cluster of 4.
  const v1::LaunchGeometry g = Bf16().Geometry(c, {1, 4096, 11008}, Sm90ReferenceDevice());
  EXPECT_EQ(std::vector<uint32_t>(g.grid().begin(), g.grid().end()),
            (std::vector<uint32_t>{64, 1, 4}));
  EXPECT_EQ(std::vector<uint32_t>(g.block().begin(), g.block().end()),
            (std::vector<uint32_t>{256, 1, 1}));  // 4 warps along N x 2 along K
  EXPECT_EQ(g.dynamic_shared_bytes(), 0u);
  EXPECT_FALSE(g.prescale_output());
  EXPECT_TRUE(g.tensor_maps().empty());
  // N and M not multiples of the tile: the last blocks are partial.
  const v1::LaunchGeometry odd = Bf16().Geometry(Decode16(16, 128, 16, 1, 4), {13, 1000, 7},
                                                 Sm90ReferenceDevice());
  EXPECT_EQ(std::vector<uint32_t>(odd.grid().begin(), odd.grid().end()),
            (std::vector<uint32_t>{8, 1, 1}));
  EXPECT_EQ(odd.block(0), 256u);
}

// A decode config is measured on the tokens of its BM (the smallest block
// that holds M: 8 for 1 to 8 tokens), M up to 64, and where B's rows are
// K-contiguous (NT, TT).
TEST(Gemm16Decode, SuitsTheTokensOfItsBlockInLayoutsNtAndTt) {
  const Family& f = Bf16();
  auto suits = [&](int64_t bm, int64_t m, v1::Layout layout) {
    return f.SuitsShape(f.InLayout(Decode16(bm, 64, 16, 2, 2), layout), {m, 4096, 4096}).ok();
  };
  for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_TT}) {
    EXPECT_TRUE(suits(8, 1, layout));
    EXPECT_TRUE(suits(8, 8, layout));
    EXPECT_FALSE(suits(8, 9, layout));
    EXPECT_TRUE(suits(16, 9, layout));
    EXPECT_TRUE(suits(16, 16, layout));
    EXPECT_FALSE(suits(16, 4, layout));  // BM 8 holds 4 tokens
    EXPECT_TRUE(suits(32, 17, layout));
    EXPECT_TRUE(suits(64, 64, layout));
    EXPECT_FALSE(suits(64, 32, layout));
  }
  const absl::Status many = f.SuitsShape(f.InLayout(Decode16(64, 64, 32, 2, 2), v1::LAYOUT_NT),
                                         {65, 4096, 4096});
  EXPECT_EQ(many.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(many.message(), "decode is for M <= 64 tokens, not 65");
  for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_TN}) {
    const absl::Status s = f.SuitsShape(f.InLayout(Decode16(8, 64, 16, 2, 2), layout), {1, 4096, 4096});
    EXPECT_EQ(s.message(), "decode streams B's rows along K: layouts NT and TT (B stored N x K)");
  }
  // Other kinds are not restricted by it.
  const Config simt = {{"KIND", 0}, {"BM", 64}, {"BN", 64}, {"BK", 16}, {"TM", 4}, {"TN", 4}};
  EXPECT_TRUE(f.SuitsShape(simt, {1, 4096, 4096}).ok());
}

TEST(Gemm16Decode, RulesNameTheirCause) {
  const Family& f = Bf16();
  const v1::Device d = Sm90ReferenceDevice();
  auto message = [&](const Config& c) { return std::string(f.Check(c, d).message()); };
  EXPECT_TRUE(f.Check(Decode16(8, 64, 16, 2, 2, 4), d).ok());
  EXPECT_EQ(message(Decode16(16, 16, 32, 2, 2)),
            "KIND=3 needs WN a multiple of 16 dividing BN; got BN=16 WN=32");
  Config bk = Decode16(8, 64, 16, 2, 2);
  bk["BK"] = 64;
  EXPECT_EQ(message(bk), "KIND=3 loads K in blocks of BK=32, not 64");
  EXPECT_EQ(message(Decode16(128, 64, 16, 1, 1)), "KIND=3 takes BM 8, 16, ..., 64 tokens a block, not 128");
  // 4 k-warps x 64 tokens x 64 rows x 4 bytes = 64 KB of partial sums.
  EXPECT_EQ(message(Decode16(64, 64, 16, 4, 1)),
            "65536 bytes of static shared memory (KWARPS*BM*BN*4) exceed the device's 49152");
  // 1024 threads at most.
  EXPECT_NE(message(Decode16(8, 256, 16, 4, 1)).find("32*(BN/WN)*KWARPS"), std::string::npos);
  // Registers: 2 m16 x 8 n8 tiles with 4 blocks ahead.
  EXPECT_NE(message(Decode16(64, 64, 32, 1, 4)).find("registers"), std::string::npos);
  // The other kinds' parameters are refused by name.
  Config tm = Decode16(8, 64, 16, 2, 2);
  tm["TM"] = 4;
  EXPECT_EQ(message(tm), "TM=4 is unused by KIND=3, which takes TM=0");
  // Split-K reduces in a cluster: compute capability 9.0.
  v1::Device a100 = d;
  a100.set_cc_major(8);
  EXPECT_EQ(std::string(f.Check(Decode16(8, 64, 16, 2, 2, 4), a100).message()),
            "SPLITK=4 reduces within a thread-block cluster (compute capability 9.0), the device is 8.0");
  EXPECT_TRUE(f.Check(Decode16(8, 64, 16, 2, 2), a100).ok());
}

// A decode config's grid holds 65535 blocks of BM tokens along y: a best
// is served at no M past that; the other kinds run at every shape.
TEST(Gemm16Decode, RunsUpTo65535BlocksOfTokens) {
  const Config c = Bf16().InLayout(Decode16(8, 64, 16, 2, 2), v1::LAYOUT_NT);
  EXPECT_TRUE(Bf16().RunsAt(c, {65535 * 8, 64, 64}).ok());
  const absl::Status past = Bf16().RunsAt(c, {65535 * 8 + 1, 64, 64});
  EXPECT_EQ(past.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(past.message(), "a decode config runs up to 65535 blocks of BM=8 tokens, not M = 524281");
  const Config simt = {{"KIND", 0}, {"BM", 16}, {"BN", 64}, {"BK", 32}, {"TM", 1}, {"TN", 4}};
  EXPECT_TRUE(Bf16().RunsAt(simt, {1 << 24, 8, 8}).ok());
}

}  // namespace
}  // namespace tuned::gemm_test
