// The problem key's text form (core/problem_key.h): the shared vectors of
// tests/data/problem_keys.txt (the Python package reads the same file), a
// round trip over many random keys, what a malformed text is told, and a
// worker's Prepare that names its problem by key and shape.
#include "core/problem_key.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/text_format.h"
#include "server/common/ipc.h"
#include "google/protobuf/util/message_differencer.h"

namespace tuned {
namespace {

struct Vectors {
  std::vector<std::pair<std::string, v1::Problem>> good;
  std::vector<std::string> bad;
};

Vectors ReadVectors() {
  Vectors v;
  std::ifstream in(TUNED_PROBLEM_KEYS);
  EXPECT_TRUE(in) << TUNED_PROBLEM_KEYS;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '!') {
      v.bad.push_back(line.substr(1));
      continue;
    }
    const size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    v1::Problem p;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(line.substr(tab + 1), &p)) << line;
    v.good.emplace_back(line.substr(0, tab), p);
  }
  return v;
}

TEST(ProblemKeyTest, SharedVectorsReadAndWriteBothWays) {
  const Vectors v = ReadVectors();
  ASSERT_GE(v.good.size(), 14u);
  ASSERT_GE(v.bad.size(), 30u);
  for (const auto& [text, problem] : v.good) {
    SCOPED_TRACE(text);
    EXPECT_EQ(FormatKey(KeyOf(problem)), text);
    auto key = ParseKey(text);
    ASSERT_TRUE(key.ok()) << key.status();
    EXPECT_EQ(*key, KeyOf(problem));
    auto back = ToProblem(*key);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, problem)) << back->DebugString();
  }
  for (const std::string& text : v.bad) {
    auto key = ParseKey(text);
    EXPECT_TRUE(absl::IsInvalidArgument(key.status())) << "'" << text << "' read as " << FormatKey(*key);
    EXPECT_NE(key.status().message().find("problem key '" + text + "'"), std::string::npos) << key.status();
  }
}

TEST(ProblemKeyTest, MalformedTextIsToldWhatIsWrong) {
  auto message = [](absl::string_view text) { return std::string(ParseKey(text).status().message()); };
  EXPECT_NE(message("sgemm:b=f32,a=f32").find("not in canonical form"), std::string::npos);
  EXPECT_NE(message("sgemm:b=f32,a=f32").find("'sgemm:a=f32,b=f32'"), std::string::npos);
  EXPECT_NE(message("sgemm:layout=nn").find("'sgemm'"), std::string::npos);  // the default left out
  EXPECT_NE(message("sgemm:layout=xx").find("layout is one of nt, tn, tt"), std::string::npos);
  EXPECT_NE(message("sgemm:a=bf16_f32").find("a is one of f32, bf16, f16"), std::string::npos);
  EXPECT_NE(message("sgemm:d=f32").find("fields: a, b, c, compute, layout, math, epilogue"), std::string::npos);
  EXPECT_NE(message("sgemm:a=f32,a=f32").find("a is given twice"), std::string::npos);
  EXPECT_NE(message("gemm_unknown").find("no built-in family is named 'gemm_unknown'"), std::string::npos);
  EXPECT_NE(message("matmul@3F2A").find("lower-case hex"), std::string::npos);
  EXPECT_NE(message("mat-mul@00").find("the family must be a name"), std::string::npos);
  // A long text is quoted cut, not echoed whole.
  EXPECT_LT(message(std::string(100000, 'x')).size(), 1000u);
}

TEST(ProblemKeyTest, ToProblemRefusesTypesNoDTypeNames) {
  auto key = ParseKey("sgemm:a=bf16,b=f16,c=f32,compute=f32");
  ASSERT_TRUE(key.ok()) << key.status();
  auto problem = ToProblem(*key);
  EXPECT_TRUE(absl::IsInvalidArgument(problem.status()));
  EXPECT_NE(problem.status().message().find("no dtype has the element types"), std::string::npos);
}

/// Every enum value of `d` that a key's field takes, and a value no name has.
std::vector<int> Values(const google::protobuf::EnumDescriptor* d, bool element_types) {
  std::vector<int> out;
  for (int i = 0; i < d->value_count(); ++i) {
    const int n = d->value(i)->number();
    if (!element_types || n == v1::DTYPE_UNSPECIFIED || n == v1::DTYPE_F32 || n == v1::DTYPE_BF16 ||
        n == v1::DTYPE_F16) {
      out.push_back(n);
    }
  }
  return out;
}

TEST(ProblemKeyTest, ParseOfFormatIsTheKeyOverManyRandomKeys) {
  std::mt19937 rng(20261202);
  auto pick = [&rng](const std::vector<int>& values) {
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
  };
  const std::vector<int> types = Values(v1::DType_descriptor(), true);
  const std::vector<int> layouts = Values(v1::Layout_descriptor(), false);
  const std::vector<int> maths = Values(v1::Math_descriptor(), false);
  const std::vector<int> epilogues = Values(v1::Epilogue_descriptor(), false);
  const std::vector<std::string> builtins = {"sgemm", "transpose", "fault_test"};
  const std::string ident = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789";
  std::set<std::string> texts;
  for (int i = 0; i < 20000; ++i) {
    ProblemKey k;
    if (rng() % 2 == 0) {
      k.family = builtins[rng() % builtins.size()];
    } else {
      k.family = std::string(1, ident[rng() % 53]);  // no digit first
      for (int n = static_cast<int>(rng() % 12); n > 0; --n) k.family += ident[rng() % ident.size()];
      for (int n = 1 + static_cast<int>(rng() % 64); n > 0; --n) k.spec_hash += "0123456789abcdef"[rng() % 16];
    }
    k.a = static_cast<v1::DType>(pick(types));
    k.b = static_cast<v1::DType>(pick(types));
    k.c = static_cast<v1::DType>(pick(types));
    k.compute = static_cast<v1::DType>(pick(types));
    k.layout = static_cast<v1::Layout>(pick(layouts));
    k.math = static_cast<v1::Math>(pick(maths));
    k.epilogue = static_cast<v1::Epilogue>(pick(epilogues));
    const std::string text = FormatKey(k);
    auto back = ParseKey(text);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(*back, k) << text;
    texts.insert(text);
  }
  EXPECT_GT(texts.size(), 15000u);  // distinct keys, distinct texts
}

TEST(ProblemKeyTest, EveryBuiltinProblemFormRoundTripsThroughItsKey) {
  int n = 0;
  for (int f : {v1::FAMILY_SGEMM, v1::FAMILY_TRANSPOSE, v1::FAMILY_FAULT_TEST}) {
    for (int d : Values(v1::DType_descriptor(), false)) {
      for (int l : Values(v1::Layout_descriptor(), false)) {
        for (int m : Values(v1::Math_descriptor(), false)) {
          for (int e : Values(v1::Epilogue_descriptor(), false)) {
            v1::Problem p;
            p.set_family(static_cast<v1::Family>(f));
            p.set_dtype(static_cast<v1::DType>(d));
            p.set_layout(static_cast<v1::Layout>(l));
            p.set_math(static_cast<v1::Math>(m));
            p.set_epilogue(static_cast<v1::Epilogue>(e));
            auto key = ParseKey(FormatKey(KeyOf(p)));
            ASSERT_TRUE(key.ok()) << key.status();
            auto back = ToProblem(*key);
            ASSERT_TRUE(back.ok()) << back.status();
            ASSERT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, p)) << p.DebugString();
            ++n;
          }
        }
      }
    }
  }
  EXPECT_EQ(n, 3 * 6 * 4 * 3 * 5);
}

TEST(ProblemKeyTest, AWorkersPrepareNamesItsProblemByKeyAndShape) {
  v1::worker::Prepare prepare;
  prepare.set_key("sgemm:a=bf16,b=bf16,c=f32,compute=f32,layout=nt,epilogue=bias");
  for (int64_t d : {64, 32, 16}) prepare.add_shape(d);
  auto problem = PreparedProblem(prepare);
  ASSERT_TRUE(problem.ok()) << problem.status();
  v1::Problem want;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "family: FAMILY_SGEMM dtype: DTYPE_BF16_F32 layout: LAYOUT_NT epilogue: EPILOGUE_BIAS "
      "shape: [64, 32, 16]", &want));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*problem, want)) << problem->DebugString();

  // Without a key (a test's request): its problem as sent.
  prepare.clear_key();
  *prepare.mutable_problem() = want;
  prepare.mutable_problem()->set_math(v1::MATH_TF32);
  problem = PreparedProblem(prepare);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->math(), v1::MATH_TF32);

  prepare.set_key("sgemm:layout=nn");
  EXPECT_TRUE(absl::IsInvalidArgument(PreparedProblem(prepare).status()));
}

}  // namespace
}  // namespace tuned
