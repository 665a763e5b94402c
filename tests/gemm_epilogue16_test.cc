// The 16-bit forms' epilogues (tuner.proto Epilogue, families/gemm/op16.cc):
// a form per epilogue, how a problem finds it, its configs, names,
// instantiations, arguments and launch, and NVRTC compiles of the fused
// entries without spills.
#include "families/gemm/op.h"
#include "tests/gemm_test_util.h"

namespace tuned::gemm_test {
namespace {

const Family& Fused(v1::DType dtype, v1::Epilogue e) {
  return *GemmFamily().ForDType(dtype)->ForEpilogue(e);
}

v1::Problem Gemm(v1::DType dtype, v1::Epilogue e) {
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(dtype);
  p.set_layout(v1::LAYOUT_NT);
  p.set_epilogue(e);
  for (int64_t d : {16, 4096, 4096}) p.add_shape(d);
  return p;
}

TEST(Gemm16Epilogue, EachEpilogueHasItsForm) {
  const std::vector<v1::Epilogue> all = {v1::EPILOGUE_NONE, v1::EPILOGUE_BIAS,
                                         v1::EPILOGUE_BIAS_RELU, v1::EPILOGUE_BIAS_GELU_TANH,
                                         v1::EPILOGUE_BIAS_GELU_ERF};
  EXPECT_EQ(Bf16().Epilogues(), all);
  EXPECT_EQ(Bf16().epilogue(), v1::EPILOGUE_NONE);
  EXPECT_EQ(Bf16().ForEpilogue(v1::EPILOGUE_NONE), &Bf16());
  EXPECT_EQ(Bf16().ForEpilogue(static_cast<v1::Epilogue>(9)), nullptr);
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32}) {
    for (v1::Epilogue e : all) {
      const Family& f = Fused(dtype, e);
      EXPECT_EQ(f.name(), "sgemm");
      EXPECT_EQ(f.dtype(), dtype);
      EXPECT_EQ(f.epilogue(), e);
      EXPECT_EQ(f.ForEpilogue(v1::EPILOGUE_NONE), GemmFamily().ForDType(dtype));
      EXPECT_EQ(FindFamily(Gemm(dtype, e)), &f);
      EXPECT_TRUE(f.ValidateEpilogue(e).ok());
      EXPECT_TRUE(f.ValidateDType(dtype).ok());
    }
  }
  EXPECT_NE(&Fused(v1::DTYPE_BF16, v1::EPILOGUE_BIAS), &Fused(v1::DTYPE_F16, v1::EPILOGUE_BIAS));

  // fp32 and the other families take no epilogue: the problem finds the
  // dtype's form, whose ValidateEpilogue says what it takes.
  EXPECT_EQ(GemmFamily().Epilogues(), std::vector<v1::Epilogue>{v1::EPILOGUE_NONE});
  EXPECT_EQ(FindFamily(Gemm(v1::DTYPE_F32, v1::EPILOGUE_BIAS)), &GemmFamily());
  const absl::Status f32 = GemmFamily().ValidateEpilogue(v1::EPILOGUE_BIAS);
  EXPECT_EQ(f32.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f32.message(),
            "epilogue EPILOGUE_BIAS is not supported by sgemm in dtype f32 (supported: none)");
  EXPECT_EQ(TransposeFamily().ValidateEpilogue(v1::EPILOGUE_BIAS_RELU).message(),
            "epilogue EPILOGUE_BIAS_RELU is not supported by transpose (supported: none)");
  const absl::Status other = Bf16().ValidateEpilogue(v1::EPILOGUE_BIAS);
  EXPECT_EQ(other.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("in its form for it"), absl::string_view::npos) << other;
}

// A form's configs are the plain form's with EPILOGUE set from the problem
// (as LAYOUT is): the same space, names ending in the epilogue, and none of
// another epilogue's admitted.
TEST(Gemm16Epilogue, ConfigsCarryTheEpilogue) {
  const v1::Device d = Sm90ReferenceDevice();
  const Family& gelu = Fused(v1::DTYPE_BF16, v1::EPILOGUE_BIAS_GELU_TANH);
  const std::vector<Config> plain = Bf16().ValidSpace(d, nullptr, v1::MATH_IEEE_FP32, v1::LAYOUT_NT);
  const std::vector<Config> fused = gelu.ValidSpace(d, nullptr, v1::MATH_IEEE_FP32, v1::LAYOUT_NT);
  ASSERT_EQ(fused.size(), plain.size());
  ASSERT_FALSE(fused.empty());
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_EQ(fused[i].at("EPILOGUE"), v1::EPILOGUE_BIAS_GELU_TANH);
    EXPECT_EQ(gelu.ConfigName(fused[i]), Bf16().ConfigName(plain[i]) + "_bias_gelu");
    EXPECT_TRUE(gelu.AdmitsIn(fused[i], v1::MATH_IEEE_FP32, v1::LAYOUT_NT));
    EXPECT_FALSE(Bf16().AdmitsIn(fused[i], v1::MATH_IEEE_FP32, v1::LAYOUT_NT));
    EXPECT_FALSE(gelu.AdmitsIn(plain[i], v1::MATH_IEEE_FP32, v1::LAYOUT_NT));
  }
  // The local search keeps the epilogue (a parameter from the problem).
  for (const Config& n : gelu.Neighbours(fused.front())) {
    EXPECT_EQ(n.at("EPILOGUE"), v1::EPILOGUE_BIAS_GELU_TANH) << gelu.ConfigKey(n);
  }
  // The erf GELU leaves out the wgmma tiles of two m64 blocks a consumer,
  // where it spills; the other epilogues keep the whole space.
  const Family& erf = Fused(v1::DTYPE_BF16, v1::EPILOGUE_BIAS_GELU_ERF);
  std::vector<Pruned> pruned;
  const size_t kept = erf.ValidSpace(d, &pruned, v1::MATH_IEEE_FP32, v1::LAYOUT_NT).size();
  EXPECT_LT(kept, plain.size());
  size_t erf_pruned = 0;
  for (const Pruned& p : pruned) {
    if (p.reason.find("no registers for the erf GELU") != std::string::npos) {
      ++erf_pruned;
      EXPECT_EQ(p.config.at("BM"), 256);
    }
  }
  EXPECT_EQ(kept + erf_pruned, plain.size());
  // The plain form's configs name no EPILOGUE, as stored ones never did.
  EXPECT_EQ(plain.front().count("EPILOGUE"), 0u);
  EXPECT_EQ(Bf16().InLayout(fused.front(), v1::LAYOUT_NT).count("EPILOGUE"), 0u);
}

TEST(Gemm16Epilogue, FusedEntriesTakeTheBiasAfterC) {
  const Family& bias = Fused(v1::DTYPE_BF16, v1::EPILOGUE_BIAS);
  const Family& erf32 = Fused(v1::DTYPE_F16_F32, v1::EPILOGUE_BIAS_GELU_ERF);
  EXPECT_EQ(bias.Arguments(),
            (std::vector<std::string>{"int M", "int N", "int K", "float alpha",
                                      "const __nv_bfloat16* A", "const __nv_bfloat16* B",
                                      "float beta", "__nv_bfloat16* C",
                                      "const __nv_bfloat16* bias"}));
  EXPECT_EQ(erf32.Arguments().back(), "const float* bias");
  EXPECT_EQ(Bf16().Arguments().size(), 8u);

  const Config mma = bias.InLayout({{"KIND", 1}, {"BM", 64}, {"BN", 64}, {"BK", 64}, {"WM", 32},
                                    {"WN", 32}, {"STAGES", 4}, {"GROUP", 8}},
                                   v1::LAYOUT_NT);
  EXPECT_EQ(bias.ConfigName(mma), "gemm_bf16_mma_64x64x64_w32x32_s4_g8_b1_nt_bias");
  EXPECT_EQ(bias.Source(mma).name_expression, "gemm16_mma_fused<1,2,64,64,64,32,32,4,1,8,1,1>");
  const Config decode = erf32.InLayout({{"KIND", 3}, {"BM", 8}, {"BN", 64}, {"BK", 32}, {"WN", 16},
                                        {"KWARPS", 2}, {"KBLOCKS", 2}, {"SPLITK", 4}},
                                       v1::LAYOUT_NT);
  EXPECT_EQ(erf32.ConfigName(decode), "gemm_f16_f32_decode_8x64_w16_kw2_kb2_sk4_nt_bias_gelu_erf");
  EXPECT_EQ(erf32.Source(decode).name_expression, "gemm16_decode_fused<4,5,8,64,16,2,2,4,1>");
  const Config simt = bias.InLayout(
      {{"KIND", 0}, {"BM", 64}, {"BN", 64}, {"BK", 16}, {"TM", 4}, {"TN", 4}}, v1::LAYOUT_TT);
  EXPECT_EQ(bias.ConfigName(simt), "gemm_bf16_simt_64x64x16_4x4_tt_bias");
  EXPECT_EQ(bias.Source(simt).name_expression, "gemm16_simt_fused<1,2,64,64,16,4,4,3>");

  // wgmma: the tensor maps follow the bias (parameters 9, 10, 11; 8, 9, 10
  // without an epilogue), each over its own operand.
  Config wgmma;
  for (const Config& c : bias.Space()) {
    if (c.at("KIND") == 2 && !c.count("STAGED")) {
      wgmma = bias.InLayout(c, v1::LAYOUT_NT);
      break;
    }
  }
  ASSERT_FALSE(wgmma.empty());
  EXPECT_EQ(bias.Source(wgmma).name_expression.rfind("gemm16_wgmma_fused<1,2,", 0), 0u)
      << bias.Source(wgmma).name_expression;
  const Shape shape = {512, 4096, 4096};
  const v1::LaunchGeometry fused = bias.Geometry(wgmma, shape, Sm90ReferenceDevice());
  const v1::LaunchGeometry plain =
      Bf16().Geometry(Bf16().InLayout(wgmma, v1::LAYOUT_NT), shape, Sm90ReferenceDevice());
  ASSERT_EQ(fused.tensor_maps_size(), 3);
  ASSERT_EQ(plain.tensor_maps_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(fused.tensor_maps(i).param(), 9u + i);
    EXPECT_EQ(plain.tensor_maps(i).param(), 8u + i);
    EXPECT_EQ(fused.tensor_maps(i).pointer_arg(), plain.tensor_maps(i).pointer_arg());
  }
  EXPECT_EQ(fused.grid(0), plain.grid(0));
  // A config without the parameters (a stored row that lost them) has no
  // geometry, which a launch refuses, rather than one divided by zero.
  EXPECT_EQ(bias.Geometry({}, shape, Sm90ReferenceDevice()).grid_size(), 0);
}

// The configs of the heaviest epilogue (GELU's erf form) compile in bf16,
// layout nt, without spills (each code path and a seeded sample of the rest:
// compile_check.h Select); each kind's configs of the other epilogues and
// dtypes share its code (half16::Fuse), so one config of each kind of them.
TEST(Gemm16Epilogue, SpaceCompilesWithEachEpilogue) {
  const v1::Device d = Sm90ReferenceDevice();
  const Family& erf = Fused(v1::DTYPE_BF16, v1::EPILOGUE_BIAS_GELU_ERF);
  ExpectCompiles(erf.ValidSpace(d, nullptr, v1::MATH_IEEE_FP32, v1::LAYOUT_NT), erf);
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32, v1::DTYPE_F16_F32}) {
    for (v1::Epilogue e : {v1::EPILOGUE_BIAS, v1::EPILOGUE_BIAS_RELU, v1::EPILOGUE_BIAS_GELU_TANH,
                           v1::EPILOGUE_BIAS_GELU_ERF}) {
      if (dtype == v1::DTYPE_BF16 && e == v1::EPILOGUE_BIAS_GELU_ERF) continue;
      const Family& f = Fused(dtype, e);
      std::vector<Config> sample;
      std::set<int64_t> kinds;
      for (const Config& c : f.ValidSpace(d, nullptr, v1::MATH_IEEE_FP32, v1::LAYOUT_NN)) {
        if (kinds.insert(c.at("KIND")).second) sample.push_back(c);
      }
      EXPECT_EQ(sample.size(), 4u);
      ExpectCompiles(sample, f);
    }
  }
}

}  // namespace
}  // namespace tuned::gemm_test
