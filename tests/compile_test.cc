// NVRTC-compiles every valid config of every family for sm_90 (no GPU needed)
// and checks the result: a cubin, PTX, the lowered entry name, and no spills.
#include <gtest/gtest.h>

#include "server/families/family.h"
#include "server/worker/compiler.h"

namespace tuned {
namespace {

struct Case {
  const Family* family;
  Config config;
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const Family* f : AllFamilies()) {
    for (auto& c : f->ValidSpace(Sm90ReferenceDevice(), nullptr)) cases.push_back({f, c});
  }
  return cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.family->ConfigName(c.config); }

class CompileTest : public ::testing::TestWithParam<Case> {};

TEST_P(CompileTest, CompilesForSm90WithoutSpills) {
  const auto& [family, config] = GetParam();
  const KernelSource src = family->Source(config);
  auto k = Compile(src.source, src.name_expression, src.options, "sm_90");
  ASSERT_TRUE(k.ok()) << family->ConfigName(config) << ": " << k.status();
  EXPECT_GT(k->cubin.size(), 1000u);
  EXPECT_NE(k->ptx.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(k->entry.rfind("_Z", 0), 0u) << k->entry;  // a mangled template instantiation
  EXPECT_GT(k->registers, 0) << k->log;
  EXPECT_LE(k->registers, 255);
  EXPECT_EQ(k->spill_bytes, 0) << k->log;
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, CompileTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.family->ConfigName(info.param.config);
                         });

TEST(Compiler, ReportsCompileErrorsWithTheLog) {
  auto k = Compile("template <int N> __global__ void k(float* x) { x[0] = undefined_name; }",
                   "k<1>", {}, "sm_90");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(k.status().message().find("undefined_name"), std::string::npos) << k.status();
}

TEST(Compiler, ParsesRegistersFromPtxasLog) {
  auto k = Compile("template <int N> __global__ void k(float* x) { x[threadIdx.x] *= N; }", "k<3>",
                   {}, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->entry, "_Z1kILi3EEvPf");
  EXPECT_GT(k->registers, 0);
  EXPECT_LT(k->registers, 32);
  EXPECT_EQ(k->spill_bytes, 0);
  EXPECT_FALSE(NvrtcVersion().empty());
}

}  // namespace
}  // namespace tuned
