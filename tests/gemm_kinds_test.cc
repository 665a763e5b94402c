// The GEMM op's kind registry (families/gemm/kind.h): every kind folder
// registered once, each (form, KIND) one kind, the KIND parameter's values
// the registered kinds', and each config of a form's space the work of the
// kind its KIND names. CPU only.
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "gtest/gtest.h"
#include "tests/gemm_test_util.h"

namespace tuned {
namespace {

using gemm::Form;
using gemm::Kind;
using namespace gemm_test;  // NOLINT(build/namespaces): the forms

TEST(GemmKinds, EachKindIsRegisteredOnceUnderItsCode) {
  std::set<std::string> names;
  std::set<std::pair<Form, int64_t>> codes;
  for (const Kind* kind : gemm::Kinds()) {
    EXPECT_TRUE(names.insert(std::string(kind->name)).second) << kind->name;
    EXPECT_TRUE(codes.insert({kind->form, kind->code}).second) << kind->name;
    EXPECT_EQ(gemm::KindOf(kind->form, kind->code), kind);
    EXPECT_FALSE(kind->label.empty()) << kind->name;
    EXPECT_FALSE(kind->params.empty()) << kind->name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"naive", "coalesced", "tiled", "warp", "gemv",
                                          "mma_tf32", "wgmma_tf32", "simt16", "mma16", "wgmma16",
                                          "decode16"}));
  EXPECT_EQ(gemm::KindOf(Form::kF32, 7), nullptr);
  EXPECT_EQ(gemm::KindOf(Form::k16, 4), nullptr);
  EXPECT_EQ(gemm::KindOf(Form::kF32, 6)->name, "wgmma_tf32");
  EXPECT_EQ(gemm::KindOf(Form::k16, 2)->name, "wgmma16");
}

TEST(GemmKinds, TheKindParameterTakesTheRegisteredCodes) {
  EXPECT_EQ(F().params().front().name, "KIND");
  EXPECT_EQ(F().params().front().values, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(gemm::KindCodes(Form::kF32), F().params().front().values);
  EXPECT_EQ(Bf16().params().front().values, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(gemm::KindCodes(Form::k16), Bf16().params().front().values);
}

// Each form's space is its kinds' spaces in their order: the fp32 form's
// tensor cores first (wgmma, then mma), then warp, gemv and the first
// designs; the 16-bit forms' wgmma, mma, simt, decode.
TEST(GemmKinds, SpacesFollowTheKindsOrder) {
  auto order = [](const Family& f) {
    std::vector<int64_t> kinds;
    for (const Config& c : f.Space()) {
      if (kinds.empty() || kinds.back() != c.at("KIND")) kinds.push_back(c.at("KIND"));
    }
    return kinds;
  };
  EXPECT_EQ(order(F()), (std::vector<int64_t>{6, 5, 3, 4, 0, 1, 2}));
  EXPECT_EQ(order(Bf16()), (std::vector<int64_t>{2, 1, 0, 3}));
  std::vector<std::string> f32, f16;
  for (const Kind* k : gemm::KindsOf(Form::kF32)) f32.emplace_back(k->name);
  for (const Kind* k : gemm::KindsOf(Form::k16)) f16.emplace_back(k->name);
  EXPECT_EQ(f32, (std::vector<std::string>{"wgmma_tf32", "mma_tf32", "warp", "gemv", "naive",
                                           "coalesced", "tiled"}));
  EXPECT_EQ(f16, (std::vector<std::string>{"wgmma16", "mma16", "simt16", "decode16"}));
}

// The op's name, source and geometry are the kind's, with the form's
// suffixes: the kind alone names and builds a config.
TEST(GemmKinds, TheOpDispatchesToTheKind) {
  const v1::Device d = Sm90ReferenceDevice();
  for (const Family* f : {&F(), &Bf16()}) {
    const Form form = f == &F() ? Form::kF32 : Form::k16;
    std::map<int64_t, int> seen;
    for (const Config& c : f->ValidSpace(d, nullptr, v1::MATH_IEEE_FP32, v1::LAYOUT_NN)) {
      const Kind* kind = gemm::KindOf(form, c.at("KIND"));
      ASSERT_NE(kind, nullptr) << f->ConfigName(c);
      if (seen[c.at("KIND")]++ > 0) continue;
      EXPECT_EQ(f->ConfigName(c), kind->config_name(c, f->dtype())) << kind->name;
      EXPECT_EQ(f->Source(c).name_expression, kind->source(c, f->dtype()).name_expression);
      EXPECT_EQ(f->Geometry(c, {512, 512, 512}, d).SerializeAsString(),
                kind->geometry(c, {512, 512, 512}, d, f->dtype()).SerializeAsString());
    }
    EXPECT_EQ(seen.size(), form == Form::kF32 ? 5u : 4u);  // MATH_IEEE_FP32: no tensor-core fp32 kinds
  }
  Config unknown = {{"KIND", 9}, {"BM", 16}, {"BN", 16}};
  EXPECT_EQ(F().Source(unknown).name_expression, "");
  EXPECT_EQ(F().Geometry(unknown, {64, 64, 64}, d).grid_size(), 0);
  EXPECT_FALSE(F().Admits(unknown, v1::MATH_IEEE_FP32));
}

}  // namespace
}  // namespace tuned
