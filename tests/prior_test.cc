// The prior (server/search/prior.h): the shipped file, the format's checks,
// which GPUs use it, and the order it gives the compile-ahead. The daemon's
// use of it (flags, DescribePrior, the model strategy's first round) is in
// jobs_test.cc.
#include "server/search/prior.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tuned::search {
namespace {

v1::Device Gpu(const std::string& name, int major, int minor) {
  v1::Device d;
  d.set_name(name);
  d.set_cc_major(major);
  d.set_cc_minor(minor);
  return d;
}

const Family& Sgemm() { return *FindFamily("sgemm"); }

/// A small prior: two shapes of sgemm ieee_fp32, the configs given by the
/// sgemm space's first valid ones.
std::string SmallPrior(const std::string& device = "NVIDIA H100 80GB HBM3\t9.0\t132\t13000\t13.0") {
  const std::vector<Config> space = Sgemm().ValidSpace(Sm90ReferenceDevice(), {512, 512, 512}, nullptr,
                                                       v1::MATH_IEEE_FP32);
  std::string names;
  for (const Param& p : Sgemm().params()) absl::StrAppend(&names, "\t", p.name);
  auto row = [&](double ms, const Config& c) {
    std::string r = absl::StrCat(ms);
    for (const Param& p : Sgemm().params()) {
      auto it = c.find(p.name);
      absl::StrAppend(&r, "\t", it == c.end() ? "-" : absl::StrCat(it->second));
    }
    return r + "\n";
  };
  return absl::StrCat("tuned-prior\t1\n# a comment\ndevice\t", device, "\nsource\ttest\nparams\tsgemm",
                      names, "\nshape\tsgemm\tf32\tieee_fp32\t512x512x512\n", row(0.02, space[1]),
                      row(0.01, space[0]), row(0.05, space[2]),
                      "shape\tsgemm\tf32\tieee_fp32\t1024x1024x1024\n", row(0.1, space[2]),
                      row(0.3, space[0]));
}

TEST(PriorTest, TheShippedPriorHoldsThePublicSuiteInEveryMathMode) {
  auto prior = Prior::Shipped();
  ASSERT_TRUE(prior.ok()) << prior.status();
  EXPECT_EQ(prior->version(), 1);
  // Every row a config of today's space: after a change of the space,
  // rebuild the prior (prior/README.md).
  EXPECT_EQ(prior->skipped(), 0);
  EXPECT_EQ(prior->device().name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(prior->device().cc_major(), 9);
  for (v1::Math math : {v1::MATH_IEEE_FP32, v1::MATH_TF32, v1::MATH_FP32_ACCURATE}) {
    auto it = prior->problems().find({"sgemm", v1::DTYPE_F32, math});
    ASSERT_NE(it, prior->problems().end()) << v1::Math_Name(math);
    EXPECT_GE(it->second.by_shape.size(), 8u) << v1::Math_Name(math);
    EXPECT_GT(it->second.rows(), 500) << v1::Math_Name(math);
  }
  // ieee_fp32: the 12 public shapes and the 20 of bench/prior_shapes.txt.
  const auto& ieee = prior->problems().at({"sgemm", v1::DTYPE_F32, v1::MATH_IEEE_FP32});
  EXPECT_EQ(ieee.by_shape.size(), 32u);
  for (const auto& [shape, rows] : ieee.by_shape) {
    ASSERT_FALSE(rows.empty());
    for (size_t i = 1; i < rows.size(); ++i) EXPECT_LE(rows[i - 1].ms, rows[i].ms);
  }
}

TEST(PriorTest, AGpuOfTheSameArchitectureUsesItAndAnotherDoesNot) {
  auto prior = Prior::Parse(SmallPrior(), "test");
  ASSERT_TRUE(prior.ok()) << prior.status();
  EXPECT_EQ(prior->Match(Gpu("NVIDIA H100 80GB HBM3", 9, 0)), PriorMatch::kSameGpu);
  EXPECT_EQ(prior->Match(Gpu("NVIDIA H200", 9, 0)), PriorMatch::kSameArchitecture);
  EXPECT_EQ(prior->Match(Gpu("NVIDIA A100-SXM4-80GB", 8, 0)), PriorMatch::kNone);
  EXPECT_EQ(prior->source(), "test");
}

TEST(PriorTest, RecordsLeaveOutTheShapeBeingTunedAndTheShapesTunedHere) {
  auto prior = Prior::Parse(SmallPrior(), "test");
  ASSERT_TRUE(prior.ok()) << prior.status();
  EXPECT_EQ(prior->Records("sgemm", v1::DTYPE_F32, v1::MATH_IEEE_FP32, {64, 64, 64}).size(), 5u);
  const auto without = prior->Records("sgemm", v1::DTYPE_F32, v1::MATH_IEEE_FP32, {512, 512, 512});
  ASSERT_EQ(without.size(), 2u);
  for (const Record& r : without) EXPECT_EQ(r.shape, (Shape{1024, 1024, 1024}));
  EXPECT_DOUBLE_EQ(without[0].ms, 0.1);  // fastest first
  const std::set<Shape> tuned_here = {{1024, 1024, 1024}};
  EXPECT_TRUE(prior->Records("sgemm", v1::DTYPE_F32, v1::MATH_IEEE_FP32, {512, 512, 512}, &tuned_here)
                  .empty());
  // Thinned: the fastest of each shape, then every kThinEvery-th of the rest
  // (the first of them kept: 512^3's third is left out).
  EXPECT_EQ(prior->Records("sgemm", v1::DTYPE_F32, v1::MATH_IEEE_FP32, {64, 64, 64}, nullptr, 1).size(),
            4u);
  EXPECT_TRUE(prior->Records("sgemm", v1::DTYPE_F32, v1::MATH_TF32, {64, 64, 64}).empty());
  EXPECT_TRUE(prior->Records("transpose", v1::DTYPE_F32, v1::MATH_IEEE_FP32, {64, 64}).empty());
}

TEST(PriorTest, TheCompileAheadTakesTheWinnersFirstThenTheirNeighbours) {
  auto prior = Prior::Parse(SmallPrior(), "test");
  ASSERT_TRUE(prior.ok()) << prior.status();
  const std::vector<Config> space = Sgemm().ValidSpace(Sm90ReferenceDevice(), {512, 512, 512}, nullptr,
                                                       v1::MATH_IEEE_FP32);
  // space[0] won 512^3 and space[2] 1024^3 (rank 0 on one shape each);
  // space[0] also ranks second on 1024^3; space[1] is at best second.
  const std::vector<Config> ranked = prior->Ranked("sgemm", v1::MATH_IEEE_FP32);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[2], space[1]);
  EXPECT_TRUE(prior->Ranked("sgemm", v1::MATH_TF32).empty());
  const auto places = AheadPlaces(*prior, {&Sgemm()}, 1);
  EXPECT_EQ(places.at(Sgemm().ConfigName(space[1])), 2u);
  EXPECT_LT(places.at(Sgemm().ConfigName(space[0])), 2u);
  EXPECT_LT(places.at(Sgemm().ConfigName(space[2])), 2u);
  // The neighbours of the first ranked config come after the ranked ones
  // (at 3); those of the others (neighbours_of = 1) and the rest of the
  // space not at all.
  const std::vector<Config> near = Sgemm().Neighbours(ranked[0]);
  ASSERT_FALSE(near.empty());
  int placed = 0;
  for (const Config& n : near) {
    auto it = places.find(Sgemm().ConfigName(n));
    if (it != places.end() && it->second == 3u) ++placed;
  }
  EXPECT_GT(placed, 0);
  EXPECT_LT(places.size(), space.size());
}

TEST(PriorTest, RefusesAFileThatIsNotThisFormatNamingTheLine) {
  const std::string good = SmallPrior();
  auto refused = [](const std::string& text, const std::string& why) {
    auto p = Prior::Parse(text, "bad.tsv");
    ASSERT_FALSE(p.ok()) << text.substr(0, 200);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("prior bad.tsv, line"), std::string::npos) << p.status();
    EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status();
  };
  refused("", "empty");
  refused("hello\n", "not a prior");
  refused("tuned-prior\t2\n", "format version 2");
  std::string other = good;
  other.replace(other.find("params\tsgemm"), 12, "params\tnosuchfamily");
  refused(other, "unknown family 'nosuchfamily'");
  std::string cut = good;
  cut.erase(cut.rfind('\t'));  // the last row loses its last value
  refused(cut, "fields");
  std::string zero = good;
  zero.replace(zero.find("\n0.02\t") + 1, 4, "0");
  refused(zero, "bad time");
  std::string math = good;
  math.replace(math.find("ieee_fp32"), 9, "fp64");
  refused(math, "unknown math mode 'fp64'");
  refused(absl::StrCat("tuned-prior\t1\n", good.substr(good.find("params"))), "no device line");
  // A row of a config the family no longer accepts is skipped, not refused.
  std::string old_space = good;
  const size_t row = old_space.find("\n0.02\t") + 6;  // the row's first parameter value
  old_space.replace(row, old_space.find('\t', row) - row, "7777777");
  auto skipped = Prior::Parse(old_space, "old.tsv");
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_EQ(skipped->skipped(), 1);
  EXPECT_EQ(skipped->Records("sgemm", v1::DTYPE_F32, v1::MATH_IEEE_FP32, {64, 64, 64}).size(), 4u);
  auto missing = Prior::Load("/nonexistent/prior.tsv");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tuned::search
