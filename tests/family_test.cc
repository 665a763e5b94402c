// The shared family helpers: shape validation, registry, nearest-shape rule.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "families/family.h"

namespace tuned {
namespace {

TEST(ShapeDistance, IsTheSumOfLog2Ratios) {
  EXPECT_DOUBLE_EQ(ShapeDistance({1024, 1024, 1024}, {1024, 1024, 1024}), 0.0);
  EXPECT_DOUBLE_EQ(ShapeDistance({2048, 1024, 1024}, {1024, 1024, 1024}), 1.0);
  EXPECT_DOUBLE_EQ(ShapeDistance({1024, 1024, 1024}, {2048, 512, 1024}), 2.0);
  EXPECT_NEAR(ShapeDistance({1100, 1000, 900}, {1024, 1024, 1024}),
              std::log2(1100.0 / 1024) + std::log2(1024.0 / 1000) + std::log2(1024.0 / 900), 1e-12);
  EXPECT_TRUE(std::isinf(ShapeDistance({1, 2}, {1, 2, 3})));
}

TEST(NearestShape, PicksTheClosestWithinTheLimit) {
  const std::vector<Shape> tuned = {{512, 512, 512}, {1024, 1024, 1024}, {4096, 4096, 4096}};
  EXPECT_EQ(NearestShape({1100, 1000, 900}, tuned), (Shape{1024, 1024, 1024}));
  EXPECT_EQ(NearestShape({600, 600, 600}, tuned), (Shape{512, 512, 512}));
  EXPECT_EQ(NearestShape({4096, 4096, 4096}, tuned), (Shape{4096, 4096, 4096}));
  // 2048^3 is 3 from both 1024^3 and 4096^3: the first listed wins the tie.
  EXPECT_EQ(NearestShape({2048, 2048, 2048}, tuned), (Shape{1024, 1024, 1024}));
  // 16 x 4096 x 4096 is far from every tuned shape (log2(512/16) = 5 alone).
  EXPECT_EQ(NearestShape({16, 4096, 4096}, tuned), std::nullopt);
  EXPECT_EQ(NearestShape({1024, 1024, 1024}, {}), std::nullopt);
}

TEST(Registry, FindsEveryFamilyByIdAndName) {
  ASSERT_EQ(AllFamilies().size(), 2u);
  for (const Family* f : AllFamilies()) {
    EXPECT_EQ(FindFamily(f->id()), f);
    EXPECT_EQ(FindFamily(f->name()), f);
  }
  EXPECT_EQ(FindFamily(v1::FAMILY_UNSPECIFIED), nullptr);
  EXPECT_EQ(FindFamily("conv2d"), nullptr);
}

// The code families (what the client library links, without the spec
// parser) and their lookups agree with the registry's: every built-in
// family's name and alias finds its id, a spec-made one (transpose) by its
// enum value; a code family finds a problem's form of its dtype; a
// spec-made or user's family, no code family.
TEST(Registry, TheCodeFamiliesAgreeWithTheRegistry) {
  std::set<std::string> code;
  for (const Family* f : BuiltinCodeFamilies()) code.insert(std::string(f->name()));
  EXPECT_EQ(code, (std::set<std::string>{"sgemm", "fault_test"}));
  for (const Family* f : AllFamilies()) EXPECT_EQ(BuiltinFamilyId(f->name()), f->id()) << f->name();
  EXPECT_EQ(BuiltinFamilyId("gemm"), v1::FAMILY_SGEMM);
  EXPECT_EQ(BuiltinFamilyId("transpose"), v1::FAMILY_TRANSPOSE);
  for (const Family* f : BuiltinFamilies()) EXPECT_EQ(BuiltinFamilyName(f->id()), f->name());
  EXPECT_EQ(BuiltinFamilyName(v1::FAMILY_UNSPECIFIED), "");
  EXPECT_EQ(BuiltinFamilyName(static_cast<v1::Family>(77)), "");
  for (const char* other : {"SGEMM", "softmax", "unspecified", "", "fault_test"}) {
    EXPECT_EQ(BuiltinFamilyId(other), v1::FAMILY_UNSPECIFIED) << other;
  }
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_BF16);
  EXPECT_EQ(FindCodeFamily(p), FindFamily(p));
  EXPECT_EQ(FindCodeFamily(p)->dtype(), v1::DTYPE_BF16);
  p.set_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(FindCodeFamily(p), &GemmFamily());
  p.set_family(v1::FAMILY_TRANSPOSE);
  EXPECT_EQ(FindCodeFamily(p), nullptr);
  p.set_family(v1::FAMILY_SGEMM);
  p.set_family_name("softmax");
  EXPECT_EQ(FindCodeFamily(p), nullptr);
}

// A kernel spec may not take a built-in family's name in any case: "SGEMM"
// beside sgemm would read as the same family.
TEST(Registry, ASpecNamedAsABuiltInFamilyInAnyCaseIsRefused) {
  for (const char* name : {"sgemm", "SGEMM", "Transpose", "gemm", "GEMM"}) {
    const absl::Status s = CheckSpecFamilyName(name);
    EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << name;
    EXPECT_NE(s.message().find("is the built-in family"), std::string::npos) << s;
  }
  EXPECT_TRUE(CheckSpecFamilyName("sgemm2").ok());
  EXPECT_TRUE(CheckSpecFamilyName("softmax_rows").ok());
}

TEST(EnumName, IsTheApiNameOrTheNumber) {
  EXPECT_EQ(EnumName(v1::FAMILY_SGEMM), "FAMILY_SGEMM");
  EXPECT_EQ(EnumName(static_cast<v1::Family>(77)), "77");
  EXPECT_EQ(EnumName(static_cast<v1::DType>(9)), "9");
  EXPECT_EQ(EnumName(v1::MEASUREMENT_COMPILE_ERROR), "MEASUREMENT_COMPILE_ERROR");
}

TEST(ValidateProblem, RejectsBadShapesWithTheRightCode) {
  const Family& f = GemmFamily();
  EXPECT_TRUE(f.ValidateShape({1, 1, 1}).ok());
  EXPECT_EQ(f.ValidateShape({0, 1, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.ValidateShape({1, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.ValidateShape({1, 1, int64_t{1} << 31}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.ValidateShape({46341, 46341, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(f.ValidateShape({46340, 46340, 1}).ok());
  v1::Device small = Sm90ReferenceDevice();
  small.set_total_memory_bytes(int64_t{1} << 30);
  // 4 * (2 * 8192 * 16384 + 2 * 8192^2) bytes = 1.5 GiB.
  EXPECT_EQ(f.ValidateProblem({8192, 8192, 16384}, small).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(f.ValidateProblem({8192, 8192, 16384}, Sm90ReferenceDevice()).ok());
  // The fp64 reference of fp32_accurate: 12 * (MK + KN + MN) bytes, 1.125 GiB
  // at 8192 x 8192 x 2048, over the 1 GiB device; ieee_fp32 fits (0.625 GiB).
  EXPECT_EQ(f.ValidateProblem({8192, 8192, 2048}, small, v1::MATH_FP32_ACCURATE).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(f.ValidateProblem({8192, 8192, 2048}, small, v1::MATH_IEEE_FP32).ok());
}

TEST(Neighbours, StepOneParameterToTheAdjacentListedValues) {
  // fault_test: BEHAVIOR 0..6, WORK 1, 2, 4, ..., 32, BLOCK 64, 128, 256, 2048.
  const Family& f = FaultTestFamily();
  const std::vector<Config> got = f.Neighbours({{"BEHAVIOR", 0}, {"WORK", 4}, {"BLOCK", 64}});
  const std::vector<Config> want = {{{"BEHAVIOR", 1}, {"WORK", 4}, {"BLOCK", 64}},
                                    {{"BEHAVIOR", 0}, {"WORK", 2}, {"BLOCK", 64}},
                                    {{"BEHAVIOR", 0}, {"WORK", 8}, {"BLOCK", 64}},
                                    {{"BEHAVIOR", 0}, {"WORK", 4}, {"BLOCK", 128}}};
  EXPECT_EQ(got, want);
  // The last listed value steps only back; a value off the list has no neighbours.
  EXPECT_EQ(f.Neighbours({{"BEHAVIOR", 6}, {"WORK", 32}, {"BLOCK", 2048}}).size(), 3u);
  EXPECT_EQ(f.Neighbours({{"BEHAVIOR", 0}, {"WORK", 3}, {"BLOCK", 64}}).size(), 2u);
}

TEST(ByName, LooksUpAFewNamesAsTheWholeIndexHasThem) {
  // sgemm's space and 2 rounds of its neighbours; a few names of each round
  // (and one no round reaches), looked up alone, get the index's configs.
  const Family& f = GemmFamily();
  const auto space = f.ByName(0);
  const auto one = f.ByName(1);
  const auto two = f.ByName(2);
  ASSERT_LT(space.size(), one.size());
  ASSERT_LT(one.size(), two.size());
  for (const auto& [name, config] : one) EXPECT_EQ(two.at(name), config) << name;
  std::set<std::string> names = {"sgemm_no_such_kernel"};
  std::map<std::string, Config> want;
  int of_round[3] = {0, 0, 0};
  for (const auto& [name, config] : two) {
    const int round = space.count(name) != 0 ? 0 : one.count(name) != 0 ? 1 : 2;
    if (of_round[round]++ % 97 != 0) continue;
    names.insert(name);
    want.emplace(name, config);
  }
  ASSERT_GT(of_round[0], 97);
  EXPECT_EQ(f.ByName(2, names), want);
  std::map<std::string, Config> within_one;
  for (const auto& [name, config] : want) {
    if (one.count(name) != 0) within_one.emplace(name, config);
  }
  EXPECT_EQ(f.ByName(1, names), within_one);
  // Names of the space alone: found there.
  std::set<std::string> first;
  for (const auto& [name, config] : space) {
    if (first.size() < 5) first.insert(name);
  }
  const auto found = f.ByName(2, first);
  ASSERT_EQ(found.size(), first.size());
  for (const auto& [name, config] : found) EXPECT_EQ(config, space.at(name)) << name;
}

}  // namespace
}  // namespace tuned
