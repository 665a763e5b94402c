// The GEMM family's 16-bit forms (families/gemm/op16.cc): how a dtype
// finds its form, the space, the rules, names, sources and geometry of each
// kind, and NVRTC compiles of the space without spills.
#include <set>

#include "families/gemm/op.h"
#include "tests/gemm_test_util.h"
#include "tuned/launch.h"

namespace tuned::gemm_test {
namespace {

Config Mma16(int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn, int64_t stages,
             int64_t splitk = 1) {
  Config c = {{"KIND", 1}, {"BM", bm}, {"BN", bn}, {"BK", bk},
              {"WM", wm},  {"WN", wn}, {"STAGES", stages}, {"GROUP", 8}};
  if (splitk > 1) c["SPLITK"] = splitk;
  return c;
}

Config Simt16(int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn) {
  return {{"KIND", 0}, {"BM", bm}, {"BN", bn}, {"BK", bk}, {"TM", tm}, {"TN", tn}};
}

TEST(Gemm16Family, EachDtypeHasItsForm) {
  EXPECT_EQ(GemmFamily().DTypes(),
            (std::vector<v1::DType>{v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16,
                                    v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32}));
  EXPECT_EQ(GemmFamily().ForDType(v1::DTYPE_F32), &GemmFamily());
  EXPECT_NE(&Bf16(), &F16());
  EXPECT_NE(&Bf16(), &GemmFamily());
  EXPECT_NE(&Bf16F32(), &Bf16());
  EXPECT_NE(&F16F32(), &Bf16F32());
  for (const Family* f : {&Bf16(), &F16(), &Bf16F32(), &F16F32()}) {
    EXPECT_EQ(f->name(), "sgemm");
    EXPECT_EQ(f->id(), v1::FAMILY_SGEMM);
    EXPECT_EQ(f->DTypes(), GemmFamily().DTypes());
    EXPECT_EQ(f->ForDType(v1::DTYPE_F32), &GemmFamily());  // every form finds the others
    EXPECT_EQ(f->MathModes(), std::vector<v1::Math>{v1::MATH_IEEE_FP32});
    EXPECT_EQ(f->Layouts().size(), 4u);
  }
  EXPECT_EQ(Bf16().dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(F16().dtype(), v1::DTYPE_F16);
  EXPECT_EQ(Bf16F32().dtype(), v1::DTYPE_BF16_F32);
  EXPECT_EQ(F16F32().dtype(), v1::DTYPE_F16_F32);
  EXPECT_EQ(Bf16().ForDType(v1::DTYPE_F16), &F16());
  EXPECT_EQ(GemmFamily().ForDType(static_cast<v1::DType>(9)), nullptr);
  EXPECT_EQ(TransposeFamily().ForDType(v1::DTYPE_BF16), nullptr);

  // A problem finds its dtype's form; one the family does not take finds the
  // fp32 form, whose ValidateDType refuses it.
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_BF16);
  EXPECT_EQ(FindFamily(p), &Bf16());
  p.set_dtype(v1::DTYPE_F32);
  EXPECT_EQ(FindFamily(p), &GemmFamily());
  p.set_family(v1::FAMILY_TRANSPOSE);
  p.set_dtype(v1::DTYPE_F16);
  EXPECT_EQ(FindFamily(p), &TransposeFamily());
  const absl::Status s = TransposeFamily().ValidateDType(v1::DTYPE_F16);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "dtype DTYPE_F16 is not supported by transpose (supported: f32)");
  EXPECT_TRUE(Bf16().ValidateDType(v1::DTYPE_BF16).ok());
  EXPECT_EQ(Bf16().ValidateDType(v1::DTYPE_F16).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DTypeText(v1::DTYPE_BF16), "bf16");
  EXPECT_EQ(DTypeText(v1::DTYPE_F16), "f16");
}

TEST(Gemm16Family, SpaceIsValidAndNamedOnce) {
  for (const Family* f : {&Bf16(), &F16()}) {
    const std::vector<Config> space = f->Space();
    EXPECT_EQ(space.size(), 74u);
    std::set<std::string> names;
    int wgmma = 0, mma = 0, simt = 0, decode = 0;
    for (const Config& c : space) {
      EXPECT_TRUE(f->Check(c, Sm90ReferenceDevice()).ok()) << f->ConfigName(c) << ": "
                                                            << f->Check(c, Sm90ReferenceDevice());
      EXPECT_TRUE(names.insert(f->ConfigName(c)).second) << f->ConfigName(c);
      EXPECT_EQ(f->ConfigName(c).rfind("gemm_" + DTypeText(f->dtype()) + "_", 0), 0u);
      wgmma += c.at("KIND") == 2;
      mma += c.at("KIND") == 1;
      simt += c.at("KIND") == 0;
      decode += c.at("KIND") == 3;
      // Keys read back.
      auto back = f->ParseConfigKey(f->ConfigKey(c));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, c);
    }
    EXPECT_EQ(wgmma, 28);  // 4 of them STAGED, 14 with MCAST, MCASTN or EPI, 4 split-K, 2 ACCS 2
    EXPECT_EQ(mma, 11);
    EXPECT_EQ(simt, 5);
    EXPECT_EQ(decode, 30);  // BM 8 and 16 with 8 configs each, 32 and 64 with 7
    // Every layout's space is the NN one with LAYOUT set.
    std::vector<Pruned> pruned;
    EXPECT_EQ(f->ValidSpace(Sm90ReferenceDevice(), &pruned, v1::MATH_IEEE_FP32, v1::LAYOUT_TT).size(),
              74u);
    EXPECT_TRUE(pruned.empty());
    EXPECT_TRUE(f->ValidSpace(Sm90ReferenceDevice(), nullptr, v1::MATH_TF32).empty());
  }
}

TEST(Gemm16Family, NamesSourcesAndArguments) {
  const Config mma = Mma16(128, 128, 32, 64, 32, 4, 2);
  EXPECT_EQ(Bf16().ConfigName(mma), "gemm_bf16_mma_128x128x32_w64x32_s4_g8_b1_sk2");
  EXPECT_EQ(F16().ConfigName(F16().InLayout(mma, v1::LAYOUT_NT)),
            "gemm_f16_mma_128x128x32_w64x32_s4_g8_b1_sk2_nt");
  EXPECT_EQ(Bf16().Source(mma).name_expression, "gemm16_mma<2,128,128,32,64,32,4,2,8,0,1>");
  EXPECT_EQ(F16().Source(F16().InLayout(mma, v1::LAYOUT_TT)).name_expression,
            "gemm16_mma<3,128,128,32,64,32,4,2,8,3,1>");
  EXPECT_EQ(Bf16().Source(mma).parts,
            (std::vector<std::string>{"gemm/sgemm.cuh", "gemm/half16.cuh", "gemm/mma16.cuh"}));
  const Config simt = Simt16(64, 64, 16, 4, 4);
  EXPECT_EQ(F16().ConfigName(F16().InLayout(simt, v1::LAYOUT_TN)), "gemm_f16_simt_64x64x16_4x4_tn");
  EXPECT_EQ(Bf16().Source(simt).name_expression, "gemm16_simt<2,64,64,16,4,4>");
  EXPECT_EQ(Bf16().Source(Bf16().InLayout(simt, v1::LAYOUT_NT)).name_expression,
            "gemm16_simt<2,64,64,16,4,4,1>");
  EXPECT_EQ(Bf16().Arguments(),
            (std::vector<std::string>{"int M", "int N", "int K", "float alpha",
                                      "const __nv_bfloat16* A", "const __nv_bfloat16* B",
                                      "float beta", "__nv_bfloat16* C"}));
  EXPECT_EQ(F16().Arguments()[7], "__half* C");
  // A, B, C in 16 bits, the fp64 reference, and A and B widened while it is made.
  EXPECT_EQ(Bf16().BufferBytes({100, 200, 30}, v1::MATH_IEEE_FP32),
            10 * (100 * 30 + 30 * 200 + 100 * 200));
}

Config Wgmma16(int64_t bm, int64_t bn, int64_t stages, int64_t splitk, int64_t persist,
               int64_t consumers) {
  Config c = {{"KIND", 2},   {"BM", bm},      {"BN", bn},          {"BK", 64},
              {"STAGES", stages}, {"GROUP", 8}, {"CONSUMERS", consumers}};
  if (splitk > 1) c["SPLITK"] = splitk;
  if (persist != 0) c["PERSIST"] = persist;
  return c;
}

// The wgmma kind: its name, its instantiation for sm_90a, and its launch:
// the consumer warpgroups and the producer, the stages' shared memory, a
// persistent grid of at most the SMs or a split-K cluster along z, and A's
// and B's tensor maps in each layout (K-major: one 64 x BM or BN box;
// M- or N-major: 64 x 64 boxes).
TEST(Gemm16Family, WgmmaKind) {
  v1::Device d = Sm90ReferenceDevice();
  d.set_sm_count(132);
  const Config persistent = Wgmma16(128, 256, 4, 1, 1, 2);
  EXPECT_EQ(Bf16().ConfigName(persistent), "gemm_bf16_wgmma_128x256x64_s4_g8_c2_p");
  EXPECT_EQ(F16().ConfigName(F16().InLayout(Wgmma16(64, 128, 8, 2, 0, 1), v1::LAYOUT_TN)),
            "gemm_f16_wgmma_64x128x64_s8_g8_c1_sk2_tn");
  const KernelSource src = F16().Source(F16().InLayout(persistent, v1::LAYOUT_NT));
  EXPECT_EQ(src.name_expression, "gemm16_wgmma<3,128,256,64,4,8,1,1,1,2>");
  EXPECT_EQ(src.options, std::vector<std::string>{"--gpu-architecture=sm_90a"});
  EXPECT_EQ(src.parts,
            (std::vector<std::string>{"gemm/sgemm.cuh", "gemm/half16.cuh", "gemm/hopper.cuh",
                                      "gemm/copy16.cuh", "gemm/wgmma16_ops.cuh",
                                      "gemm/wgmma16_epilogue.cuh", "gemm/wgmma16.cuh"}));

  v1::LaunchGeometry g = Bf16().Geometry(persistent, {4096, 4096, 4096}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{132, 1, 1}));  // 512 tiles, 132 SMs
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{384, 1, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * (128 + 256) * 128 + 1024 + 16 * 4);
  ASSERT_EQ(g.tensor_maps_size(), 3);
  const v1::TensorMap& a = g.tensor_maps(0);
  const v1::TensorMap& b = g.tensor_maps(1);
  const v1::TensorMap& c = g.tensor_maps(2);
  EXPECT_EQ(a.pointer_arg(), 4u);
  EXPECT_EQ(a.param(), 8u);
  EXPECT_EQ(std::vector<uint64_t>(a.dims().begin(), a.dims().end()), (std::vector<uint64_t>{4096, 4096}));
  EXPECT_EQ(std::vector<uint32_t>(a.box().begin(), a.box().end()), (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(a.dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(a.swizzle_bytes(), 128u);
  EXPECT_EQ(b.pointer_arg(), 5u);
  EXPECT_EQ(b.param(), 9u);
  EXPECT_EQ(std::vector<uint32_t>(b.box().begin(), b.box().end()), (std::vector<uint32_t>{64, 64}));
  // C's map (EPI's TMA stores; every kernel takes it): N x M, boxes of 64 x 64.
  EXPECT_EQ(c.pointer_arg(), 7u);
  EXPECT_EQ(c.param(), 10u);
  EXPECT_EQ(std::vector<uint64_t>(c.dims().begin(), c.dims().end()), (std::vector<uint64_t>{4096, 4096}));
  EXPECT_EQ(c.strides_bytes(0), 8192u);
  EXPECT_EQ(std::vector<uint32_t>(c.box().begin(), c.box().end()), (std::vector<uint32_t>{64, 64}));
  // A and B are staged where TMA cannot take their pitch; C never is.
  EXPECT_TRUE(a.stage());
  EXPECT_TRUE(b.stage());
  EXPECT_FALSE(c.stage());
  // Rows on 128-byte lines: the default L2 promotion (256 bytes).
  EXPECT_EQ(a.l2_promotion_bytes(), 0u);
  EXPECT_EQ(b.l2_promotion_bytes(), 0u);
  // 1000^3: rows of 2000 bytes, off 128-byte lines, so A and B take 128-byte
  // promotion; C keeps the default. At K 1003 A's pitch (2006 bytes) is
  // staged, and keeps it too.
  g = Bf16().Geometry(persistent, {1000, 1000, 1000}, d);
  EXPECT_EQ(g.tensor_maps(0).l2_promotion_bytes(), 128u);
  EXPECT_EQ(g.tensor_maps(1).l2_promotion_bytes(), 128u);
  EXPECT_EQ(g.tensor_maps(2).l2_promotion_bytes(), 0u);
  g = Bf16().Geometry(persistent, {1000, 1000, 1003}, d);
  EXPECT_EQ(g.tensor_maps(0).l2_promotion_bytes(), 0u);
  EXPECT_EQ(g.tensor_maps(1).l2_promotion_bytes(), 128u);

  // TN at 100 x 300 x 40: A stored 40 x 100 (M-major, pitch 100), B stored
  // 40 x 300 (N-major); a split-K grid of 2 x 2 tiles, 2 along z.
  g = F16().Geometry(F16().InLayout(Wgmma16(128, 256, 4, 2, 0, 2), v1::LAYOUT_TN), {100, 300, 40}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{2, 1, 2}));
  EXPECT_EQ(std::vector<uint64_t>(g.tensor_maps(0).dims().begin(), g.tensor_maps(0).dims().end()),
            (std::vector<uint64_t>{100, 40}));
  EXPECT_EQ(g.tensor_maps(0).strides_bytes(0), 200u);
  EXPECT_EQ(std::vector<uint64_t>(g.tensor_maps(1).dims().begin(), g.tensor_maps(1).dims().end()),
            (std::vector<uint64_t>{300, 40}));
  EXPECT_EQ(g.tensor_maps(1).dtype(), v1::DTYPE_F16);
  // Split-K's receive buffer: the peer's fp32 partial sums of this rank's
  // half of the columns (2 groups of 32 columns x 128 rows x 4 bytes), and
  // its mbarrier.
  g = Bf16().Geometry(Wgmma16(128, 128, 4, 2, 0, 2), {1024, 1024, 1024}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{64, 1, 2}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * (128 + 128) * 128 + 1024 + 16 * 4 + 2 * 32 * 128 * 4 + 8);
  // NT: B stored 300 x 40, K-major: one box of 64 k x BN rows.
  g = F16().Geometry(F16().InLayout(Wgmma16(128, 256, 4, 1, 0, 2), v1::LAYOUT_NT), {100, 300, 40}, d);
  EXPECT_EQ(std::vector<uint64_t>(g.tensor_maps(1).dims().begin(), g.tensor_maps(1).dims().end()),
            (std::vector<uint64_t>{40, 300}));
  EXPECT_EQ(std::vector<uint32_t>(g.tensor_maps(1).box().begin(), g.tensor_maps(1).box().end()),
            (std::vector<uint32_t>{64, 256}));

  auto refused = [&](const Config& c, const std::string& cause, const v1::Device& dev) {
    const absl::Status s = Bf16().Check(c, dev);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << Bf16().ConfigKey(c);
    EXPECT_NE(std::string(s.message()).find(cause), std::string::npos) << s.message();
  };
  refused(Wgmma16(256, 256, 3, 1, 0, 2), "fp32 accumulators", d);
  refused(Wgmma16(128, 256, 8, 1, 0, 2), "shared memory", d);
  refused(Wgmma16(128, 256, 4, 2, 1, 2), "PERSIST=1 only with SPLITK=1", d);
  refused(Wgmma16(128, 256, 4, 2, 0, 2), "receive buffer", d);  // 4 stages and 64 KB of partial sums
  refused(Wgmma16(256, 256, 2, 2, 0, 1), "BM = 64 * CONSUMERS", d);
  refused(Wgmma16(64, 128, 8, 1, 0, 2), "BM = 64 * CONSUMERS", d);
  v1::Device ampere = d;
  ampere.set_cc_major(8);
  refused(persistent, "sm_90a", ampere);
}

// MCAST and EPI: names and instantiations (the trailing parameters only
// where one is set), EPI's C tile in shared memory, the cluster grid
// (persistent: SMs / 2 clusters; else every cluster tile, an odd count of
// tile rows rounded up), B's K-major box split between the two ranks, and
// the combinations the kernel refuses.
TEST(Gemm16Family, WgmmaMulticastAndTmaStore) {
  v1::Device d = Sm90ReferenceDevice();
  d.set_sm_count(132);
  Config both = Wgmma16(128, 128, 6, 1, 1, 2);
  both["MCAST"] = 2;
  both["EPI"] = 1;
  EXPECT_EQ(Bf16().ConfigName(both), "gemm_bf16_wgmma_128x128x64_s6_g8_c2_p_m2_e1");
  EXPECT_EQ(Bf16().Source(both).name_expression, "gemm16_wgmma<2,128,128,64,6,8,0,1,1,2,0,2,1>");
  EXPECT_TRUE(Bf16().Check(both, d).ok()) << Bf16().Check(both, d);
  v1::LaunchGeometry g = Bf16().Geometry(both, {4096, 4096, 4096}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{132, 1, 1}));  // 66 clusters of 2
  EXPECT_EQ(g.dynamic_shared_bytes(), 6u * (128 + 128) * 128 + 128 * 128 * 2 + 1024 + 16 * 6);
  Config mc = both;
  mc.erase("PERSIST");
  mc.erase("EPI");
  EXPECT_EQ(F16().ConfigName(mc), "gemm_f16_wgmma_128x128x64_s6_g8_c2_m2");
  // 3 tile rows (M = 300) make 2 cluster tiles a column, 2 columns: 4 clusters.
  g = F16().Geometry(F16().InLayout(mc, v1::LAYOUT_NT), {300, 200, 64}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{8, 1, 1}));
  EXPECT_EQ(std::vector<uint32_t>(g.tensor_maps(1).box().begin(), g.tensor_maps(1).box().end()),
            (std::vector<uint32_t>{64, 64}));  // BN / MCAST rows of K-major B

  // MCASTN: a 2 x 2 cluster (rank rm + 2 rn) sharing A along N and B along
  // M; the instantiation takes MCASTN after EPI.
  Config grid2 = mc;
  grid2["MCASTN"] = 2;
  grid2["EPI"] = 1;
  EXPECT_EQ(Bf16().ConfigName(grid2), "gemm_bf16_wgmma_128x128x64_s6_g8_c2_m2_e1_n2");
  EXPECT_EQ(Bf16().Source(grid2).name_expression, "gemm16_wgmma<2,128,128,64,6,8,0,1,0,2,0,2,1,2>");
  EXPECT_TRUE(Bf16().Check(grid2, d).ok()) << Bf16().Check(grid2, d);
  // 1000^3: 8 tile rows and 8 columns, 4 x 4 clusters of 4.
  g = Bf16().Geometry(grid2, {1000, 1000, 1000}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{64, 1, 1}));
  EXPECT_EQ(std::vector<uint32_t>(g.tensor_maps(0).box().begin(), g.tensor_maps(0).box().end()),
            (std::vector<uint32_t>{64, 64}));  // BM / MCASTN rows of K-major A
  // 3 tile columns (N = 300) make 2 cluster tiles a row; 3 rows, 2 cluster rows: 4 clusters.
  g = Bf16().Geometry(grid2, {300, 300, 64}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{16, 1, 1}));
  // Persistent: 30 clusters of 4 on 132 SMs.
  grid2["PERSIST"] = 1;
  g = Bf16().Geometry(grid2, {4096, 4096, 4096}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{120, 1, 1}));
  Config epi = Wgmma16(128, 64, 8, 1, 1, 2);
  epi["EPI"] = 1;
  EXPECT_EQ(Bf16().Source(epi).name_expression, "gemm16_wgmma<2,128,64,64,8,8,0,1,1,2,0,1,1>");

  auto refused = [&](Config c, const std::string& key, int64_t v, const std::string& cause) {
    c[key] = v;
    const absl::Status s = Bf16().Check(c, d);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << Bf16().ConfigKey(c);
    EXPECT_NE(std::string(s.message()).find(cause), std::string::npos) << s.message();
  };
  refused(both, "MCAST", 4, "MCAST=4 is not one of the supported values");
  refused(both, "EPI", 3, "EPI=3 is not one of the supported values");
  refused(Wgmma16(128, 64, 6, 2, 0, 2), "MCAST", 2, "neither SPLITK");
  refused(Wgmma16(128, 64, 6, 2, 0, 2), "EPI", 1, "EPI=1");
  Config staged = Wgmma16(128, 128, 2, 1, 1, 2);
  staged["STAGED"] = 2;
  refused(staged, "MCAST", 2, "nor STAGED");
  refused(Wgmma16(128, 256, 4, 1, 1, 2), "EPI", 1, "shared memory");  // 4 stages and 64 KB of C
  refused(Wgmma16(128, 64, 6, 2, 0, 2), "EPI", 2, "EPI=2");
  refused(both, "MCASTN", 3, "MCASTN=3 is not one of the supported values");
  refused(both, "MCASTN", 4, "at most 4; got 8");
  refused(Wgmma16(128, 64, 6, 2, 0, 2), "MCASTN", 2, "neither SPLITK");
  refused(staged, "MCASTN", 2, "nor STAGED");
  // ACCS 2: the odd K tiles into a second accumulator set; the instantiation
  // takes it after MCASTN, with the parameters before it at their defaults.
  Config accs = Wgmma16(128, 64, 8, 2, 0, 2);
  accs["ACCS"] = 2;
  EXPECT_TRUE(Bf16().Check(accs, d).ok()) << Bf16().Check(accs, d);
  EXPECT_EQ(Bf16().ConfigName(accs), "gemm_bf16_wgmma_128x64x64_s8_g8_c2_sk2_a2");
  EXPECT_EQ(Bf16().Source(accs).name_expression, "gemm16_wgmma<2,128,64,64,8,8,0,2,0,2,0,1,0,1,2>");
  refused(Wgmma16(128, 128, 6, 1, 1, 2), "ACCS", 3, "ACCS=3 is not one of the supported values");
  refused(Wgmma16(128, 256, 4, 1, 1, 2), "ACCS", 2, "got 256");  // 2 x 128 accumulators a thread
  // EPI 2: two 64 x 64 boxes a consumer warpgroup, so 128x256 keeps 4 stages.
  Config sub = Wgmma16(128, 256, 4, 1, 1, 2);
  sub["EPI"] = 2;
  EXPECT_TRUE(Bf16().Check(sub, d).ok()) << Bf16().Check(sub, d);
  EXPECT_EQ(Bf16().ConfigName(sub), "gemm_bf16_wgmma_128x256x64_s4_g8_c2_p_e2");
  EXPECT_EQ(Bf16().Source(sub).name_expression, "gemm16_wgmma<2,128,256,64,4,8,0,1,1,2,0,1,2>");
  EXPECT_EQ(Bf16().Geometry(sub, {4096, 4096, 4096}, d).dynamic_shared_bytes(),
            4u * (128 + 256) * 128 + 2 * 2 * 8192 + 1024 + 16 * 4);
}

// Which launches stage an operand (TensorMap.stage, core/launch.cc): at
// 4097^3 A's and B's pitch (8194 bytes) is no multiple of 16, so both are
// staged, over any base; at 4096^3 neither is over 16-byte aligned bases,
// and both are over a base one element off; C never is. Prepare refuses a
// staged map of another rank than 2 before any CUDA call.
TEST(Gemm16Family, WgmmaStagesWhatTmaCannotTake) {
  v1::Device d = Sm90ReferenceDevice();
  d.set_sm_count(132);
  const Config c = Wgmma16(128, 256, 4, 1, 1, 2);
  alignas(16) static uint16_t buffer[16];
  const void* aligned = buffer;
  const void* off = buffer + 1;
  const v1::LaunchGeometry odd = Bf16().Geometry(c, {4097, 4097, 4097}, d);
  ASSERT_EQ(odd.tensor_maps_size(), 3);
  EXPECT_TRUE(Stages(odd.tensor_maps(0), aligned));
  EXPECT_TRUE(Stages(odd.tensor_maps(1), aligned));
  EXPECT_FALSE(Stages(odd.tensor_maps(2), off));
  EXPECT_FALSE(TmaTakes(odd.tensor_maps(2), aligned));  // C's pitch: C is stored without TMA
  const v1::LaunchGeometry even = Bf16().Geometry(c, {4096, 4096, 4096}, d);
  EXPECT_FALSE(Stages(even.tensor_maps(0), aligned));
  EXPECT_FALSE(Stages(even.tensor_maps(1), aligned));
  EXPECT_TRUE(Stages(even.tensor_maps(0), off));
  EXPECT_TRUE(Stages(even.tensor_maps(1), off));

  v1::LaunchGeometry rank3 = odd;
  rank3.mutable_tensor_maps(0)->add_dims(1);
  rank3.mutable_tensor_maps(0)->add_strides_bytes(8194u * 4097u);
  rank3.mutable_tensor_maps(0)->add_box(1);
  rank3.set_dynamic_shared_bytes(0);  // no opt-in: Prepare makes no CUDA call
  const LoadedKernel none;
  const absl::Status s = none.Prepare(rank3).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("a staged map has rank 2"), std::string::npos) << s;
}

// STAGED: its name and instantiation, its raw buffers' shared memory, the
// rules Check adds, and the shapes it is searched on: where A's or B's
// pitch in the config's layout is not a multiple of 8 elements.
TEST(Gemm16Family, WgmmaStaged) {
  v1::Device d = Sm90ReferenceDevice();
  d.set_sm_count(132);
  Config staged = Wgmma16(128, 256, 2, 1, 1, 2);
  staged["STAGED"] = 2;
  EXPECT_EQ(Bf16().ConfigName(staged), "gemm_bf16_wgmma_128x256x64_s2_g8_c2_p_r2");
  EXPECT_EQ(Bf16().Source(staged).name_expression, "gemm16_wgmma<2,128,256,64,2,8,0,1,1,2,2>");
  // Without STAGED the instantiation keeps its 10 arguments.
  EXPECT_EQ(Bf16().Source(Wgmma16(128, 256, 2, 1, 1, 2)).name_expression,
            "gemm16_wgmma<2,128,256,64,2,8,0,1,1,2>");
  EXPECT_TRUE(Bf16().Check(staged, d).ok()) << Bf16().Check(staged, d);
  // 2 stages of 384 rows of 128 bytes, 1024 + 2 * 16, 2 raw buffers of 384 slots of 144 bytes + 16.
  const v1::LaunchGeometry g = Bf16().Geometry(staged, {4096, 4096, 4097}, d);
  EXPECT_EQ(g.dynamic_shared_bytes(), 2u * 384 * 128 + 1024 + 32 + 2 * (384 * 144 + 16));
  // Its raw buffers take the pitch as it is: the launcher stages nothing.
  for (const v1::TensorMap& m : g.tensor_maps()) EXPECT_FALSE(m.stage());

  // NN: A's pitch is K, B's N; NT: B's is K; TN: A's is M.
  const Shape aligned = {4096, 4096, 4096}, odd_k = {4096, 4096, 4097}, odd_n = {1024, 50257, 1024},
              odd_m = {4097, 4096, 4096};
  EXPECT_EQ(Bf16().SuitsShape(staged, aligned).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(Bf16().SuitsShape(staged, aligned).message()).find("multiples of 8"),
            std::string::npos);
  EXPECT_TRUE(Bf16().SuitsShape(staged, odd_k).ok());
  EXPECT_TRUE(Bf16().SuitsShape(staged, odd_n).ok());
  EXPECT_FALSE(Bf16().SuitsShape(staged, odd_m).ok());  // NN: M is no pitch
  EXPECT_TRUE(Bf16().SuitsShape(Bf16().InLayout(staged, v1::LAYOUT_TN), odd_m).ok());
  EXPECT_FALSE(Bf16().SuitsShape(Bf16().InLayout(staged, v1::LAYOUT_NT), odd_n).ok());
  EXPECT_TRUE(Bf16().SuitsShape(Wgmma16(128, 256, 4, 1, 1, 2), aligned).ok());  // STAGED 0: all

  auto refused = [&](Config c, const std::string& cause) {
    const absl::Status s = Bf16().Check(c, d);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << Bf16().ConfigKey(c);
    EXPECT_NE(std::string(s.message()).find(cause), std::string::npos) << s.message();
  };
  Config four = staged;
  four["STAGED"] = 4;
  refused(four, "STAGED");  // not a value of the parameter
  Config big = staged;
  big["STAGES"] = 3;  // 3 * 49152 + 2 * 55312 + ... > 227 KB
  refused(big, "shared memory");
  Config one = Wgmma16(64, 128, 8, 1, 0, 1);
  one["STAGES"] = 2;
  one["STAGED"] = 2;
  EXPECT_TRUE(Bf16().Check(one, d).ok()) << Bf16().Check(one, d);  // 192 rows, 16 a pass
}

TEST(Gemm16Family, Geometry) {
  const v1::Device d = Sm90ReferenceDevice();
  // mma: one block per output tile, the split-K cluster along z, the
  // pipeline's shared memory (4 stages of A 128 x 40 and B 32 x 136, 2
  // bytes), or in NT B 128 x 40.
  const Config mma = Mma16(128, 128, 32, 64, 32, 4, 2);
  v1::LaunchGeometry g = Bf16().Geometry(mma, {1000, 1000, 1003}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{64, 1, 2}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * (128 * 40 + 32 * 136) * 2);
  EXPECT_FALSE(g.prescale_output());
  g = Bf16().Geometry(Bf16().InLayout(mma, v1::LAYOUT_NT), {1000, 1000, 1003}, d);
  EXPECT_EQ(g.dynamic_shared_bytes(), 4u * (128 * 40 + 128 * 40) * 2);
  // Split-K's fp32 partial sums set the floor: 64 x 64 x 4 bytes.
  g = Bf16().Geometry(Mma16(64, 64, 64, 32, 32, 2, 4), {16, 4096, 4096}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{64, 1, 4}));
  EXPECT_EQ(g.dynamic_shared_bytes(), std::max(2u * (64 * 72 + 64 * 72) * 2, 64u * 64 * 4));
  // simt: columns along x, rows along y.
  g = F16().Geometry(Simt16(64, 64, 16, 4, 4), {100, 200, 37}, d);
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{4, 2, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 0u);
}

TEST(Gemm16Family, CheckRefusesWhatTheKernelsCannotRun) {
  const v1::Device d = Sm90ReferenceDevice();
  auto expect = [&](const Config& c, const std::string& cause, const v1::Device& dev) {
    const absl::Status s = Bf16().Check(c, dev);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << Bf16().ConfigKey(c);
    EXPECT_NE(std::string(s.message()).find(cause), std::string::npos) << s.message();
  };
  Config with_tm = Mma16(128, 128, 32, 64, 64, 4);
  with_tm["TM"] = 4;
  expect(with_tm, "TM=4 is unused by KIND=1", d);
  Config with_wm = Simt16(64, 64, 16, 4, 4);
  with_wm["WM"] = 32;
  expect(with_wm, "WM=32 is unused by KIND=0", d);
  EXPECT_TRUE(Bf16().Check(Mma16(128, 128, 32, 32, 32, 4), d).ok());
  expect(Mma16(128, 128, 32, 64, 64, 0), "STAGES >= 2", d);
  expect(Mma16(256, 256, 64, 64, 64, 4), "shared memory", d);
  expect(Mma16(128, 128, 24, 64, 64, 4), "BK", d);  // not a listed value
  expect(Mma16(64, 128, 32, 64, 128, 4), "WN", d);  // not a listed value
  v1::Device ampere = d;
  ampere.set_cc_major(8);
  ampere.set_cc_minor(0);
  expect(Mma16(64, 64, 64, 32, 32, 4, 2), "thread-block cluster", ampere);
  EXPECT_TRUE(Bf16().Check(Mma16(64, 64, 64, 32, 32, 4), ampere).ok());
  expect(Simt16(256, 256, 16, 4, 4), "threads", d);  // 4096 threads
}

// Every 16-bit form's configs compile in layout nn (compile_test); here
// bf16's in the other layouts, whose kernels read A or B transposed (each
// code path and a seeded sample of the rest: compile_check.h Select).
TEST(Gemm16Family, SpaceCompilesWithoutSpillsInEveryLayout) {
  std::vector<Config> configs;
  for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
    for (const Config& c : Bf16().Space()) configs.push_back(Bf16().InLayout(c, layout));
  }
  ExpectCompiles(configs, Bf16());
}

// The fp32-output forms: the same space and kernels with C float. Names
// carry the dtype, instantiations its value (4, 5), C's argument is a float
// pointer, the worker's buffers hold a 4-byte C, and the wgmma kind's
// tensor maps keep A and B 16-bit with C's map fp32 (a 128-byte box: 32
// columns).
TEST(Gemm16Family, Fp32OutputForms) {
  EXPECT_EQ(Bf16F32().Space().size(), Bf16().Space().size());
  const Config wgmma = Wgmma16(128, 256, 4, 1, 1, 2);
  EXPECT_EQ(Bf16F32().ConfigName(wgmma), "gemm_bf16_f32_wgmma_128x256x64_s4_g8_c2_p");
  EXPECT_EQ(F16F32().Source(wgmma).name_expression, "gemm16_wgmma<5,128,256,64,4,8,0,1,1,2>");
  EXPECT_EQ(Bf16F32().Source(Simt16(64, 64, 16, 4, 4)).name_expression, "gemm16_simt<4,64,64,16,4,4>");
  EXPECT_EQ(F16F32().Source(Mma16(128, 128, 32, 64, 32, 4)).name_expression,
            "gemm16_mma<5,128,128,32,64,32,4,1,8,0,1>");
  EXPECT_EQ(Bf16F32().Arguments(),
            (std::vector<std::string>{"int M", "int N", "int K", "float alpha",
                                      "const __nv_bfloat16* A", "const __nv_bfloat16* B",
                                      "float beta", "float* C"}));
  EXPECT_EQ(F16F32().Arguments()[4], "const __half* A");
  EXPECT_EQ(F16F32().Arguments()[7], "float* C");
  // 10 (MK + KN) + 12 MN bytes against bf16's 10 (MK + KN + MN).
  EXPECT_EQ(Bf16F32().BufferBytes({100, 200, 30}, v1::MATH_IEEE_FP32),
            10 * (100 * 30 + 30 * 200) + 12 * 100 * 200);
  v1::Device d = Sm90ReferenceDevice();
  d.set_sm_count(132);
  const v1::LaunchGeometry g = Bf16F32().Geometry(wgmma, {4096, 1000, 512}, d);
  ASSERT_EQ(g.tensor_maps_size(), 3);
  EXPECT_EQ(g.tensor_maps(0).dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(g.tensor_maps(1).dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(g.tensor_maps(1).strides_bytes(0), 2000u);
  EXPECT_EQ(g.tensor_maps(2).dtype(), v1::DTYPE_F32);
  EXPECT_EQ(g.tensor_maps(2).strides_bytes(0), 4000u);
  EXPECT_EQ(std::vector<uint32_t>(g.tensor_maps(2).box().begin(), g.tensor_maps(2).box().end()),
            (std::vector<uint32_t>{32, 64}));
  EXPECT_TRUE(Bf16F32().ValidateDType(v1::DTYPE_BF16_F32).ok());
  EXPECT_EQ(DTypeText(v1::DTYPE_F16_F32), "f16_f32");
}

}  // namespace
}  // namespace tuned::gemm_test
