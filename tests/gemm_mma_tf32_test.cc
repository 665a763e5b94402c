// Unit tests of the sgemm family's mma.sync tensor-core kind, KIND 5
// (families/gemm/mma_tf32/): names, keys, source, geometry, rules. CPU only.
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

TEST(SgemmMath, TensorCoreNamesKeysSourceAndGeometry) {
  const Family& f = GemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  EXPECT_EQ(f.ConfigName(Mma()), "sgemm_mma_128x128x16_w64x64_s3_g8_b1_3xtf32");
  EXPECT_EQ(f.ConfigName(Mma(32, 64, 32, 32, 32, 3, 4, 1, 1)), "sgemm_mma_32x64x32_w32x32_s3_g1_b1_sk4_tf32");
  EXPECT_TRUE(f.Check(Mma(), d).ok()) << f.Check(Mma(), d);
  const KernelSource src = f.Source(Mma());
  EXPECT_EQ(src.name_expression, "sgemm_mma<128,128,16,64,64,3,1,3,8,1>");
  EXPECT_EQ(src.parts, (std::vector<std::string>{"gemm/sgemm.cuh", "gemm/warp.cuh",
                                                 "gemm/mma_tf32.cuh"}));
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
  const Family& f = GemmFamily();
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

// KIND 5 in every layout (sgemm_mma's LAYOUT): the name's suffix, LAYOUT
// as the expression's last argument, Check admits it, the shared memory of
// each operand's tile as it is stored (op(A) = A^T: As[BK][BM+8]; op(B) =
// B^T: Bs[BN][BK+4]); the layout's space holds every NN mma config; a
// sample compiles with NVRTC.
TEST(SgemmMath, MmaLayouts) {
  const Family& f = GemmFamily();
  const v1::Device d = Sm90ReferenceDevice();
  const Config nn = Mma();  // 128x128x16, 3 stages
  EXPECT_EQ(f.Geometry(nn, {1000, 1000, 1000}, d).dynamic_shared_bytes(),
            3u * (128 * 20 + 16 * 136) * 4);
  const std::map<v1::Layout, uint32_t> smem = {
      {v1::LAYOUT_NT, 3u * (128 * 20 + 128 * 20) * 4},
      {v1::LAYOUT_TN, 3u * (16 * 136 + 16 * 136) * 4},
      {v1::LAYOUT_TT, 3u * (16 * 136 + 128 * 20) * 4}};
  size_t nn_mma = 0;
  for (const Config& c : f.ValidSpace(d, nullptr, v1::MATH_TF32)) nn_mma += c.at("KIND") == 5;
  std::vector<Config> sample;
  for (v1::Layout layout : kTransposedLayouts) {
    const std::string suffix = LayoutSuffixOf(layout);
    const Config c = f.InLayout(nn, layout);
    EXPECT_EQ(f.ConfigName(c), f.ConfigName(nn) + suffix);
    EXPECT_EQ(f.Source(c).name_expression,
              absl::StrCat("sgemm_mma<128,128,16,64,64,3,1,3,8,1,", static_cast<int>(layout), ">"));
    EXPECT_TRUE(f.Check(c, d).ok()) << f.Check(c, d);
    EXPECT_TRUE(f.AdmitsIn(c, v1::MATH_TF32, layout));
    EXPECT_FALSE(f.AdmitsIn(c, v1::MATH_TF32, v1::LAYOUT_NN));
    EXPECT_EQ(f.Geometry(c, {1000, 1000, 1000}, d).dynamic_shared_bytes(), smem.at(layout));
    size_t mma = 0;
    for (const Config& v : f.ValidSpace(d, nullptr, v1::MATH_TF32, layout)) {
      EXPECT_TRUE(absl::EndsWith(f.ConfigName(v), suffix)) << f.ConfigName(v);
      mma += v.at("KIND") == 5;
    }
    EXPECT_EQ(mma, nn_mma) << suffix;
    sample.push_back(f.InLayout(Mma(128, 128, 32, 64, 64, 3, 1, 1), layout));
  }
  sample.push_back(f.InLayout(Mma(32, 128, 32, 32, 32, 3, 4, 3, 1), v1::LAYOUT_TN));
  ExpectCompiles(sample);
}

}  // namespace
}  // namespace tuned
