// NVRTC-compiles every valid config of every family for sm_90 (no GPU needed)
// and checks the result: a cubin, PTX, the lowered entry name, and no spills.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <string>

#include "families/family.h"
#include "families/kernel_text.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/worker/compiler.h"
#include "server/worker/fp64_check.h"
#include "server/worker/icache_flush.h"
#include "tests/compile_check.h"

namespace tuned {
namespace {

/// Configs of one family form compiled in one program (compile_check.h).
struct Group {
  const Family* family;
  std::string name;  // the group's first config and the group's index
  std::vector<Config> configs;
};

/// Every valid config of every family's forms (sgemm's dtypes: fp32 and
/// the 16-bit forms) and math modes (sgemm's tensor-core kinds are in
/// MATH_FP32_ACCURATE's and MATH_TF32's spaces), each once, in groups that
/// share their source and options.
std::vector<Group> AllGroups() {
  std::vector<Group> groups;
  for (const Family* base : AllFamilies()) {
    std::vector<const Family*> forms = {base};
    for (v1::DType dtype : base->DTypes()) {
      const Family* form = base->ForDType(dtype);
      if (form != nullptr && std::find(forms.begin(), forms.end(), form) == forms.end()) {
        forms.push_back(form);
      }
    }
    for (const Family* f : forms) {
      std::set<std::string> names;
      std::vector<Config> configs;
      for (v1::Math math : f->MathModes()) {
        for (auto& c : f->ValidSpace(Sm90ReferenceDevice(), nullptr, math)) {
          if (names.insert(f->ConfigName(c)).second) configs.push_back(c);
        }
      }
      for (auto& g : compile_check::GroupBySource(*f, configs)) {
        std::string name = absl::StrCat(f->ConfigName(g.front()), "_", groups.size());
        for (char& ch : name) {
          if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
        }
        groups.push_back({f, std::move(name), std::move(g)});
      }
    }
  }
  return groups;
}

void PrintTo(const Group& g, std::ostream* os) { *os << g.name; }

class CompileTest : public ::testing::TestWithParam<Group> {};

/// Each config of the group compiles for sm_90 into a cubin with its entry,
/// within 255 registers and without spills, its wgmmas asynchronous
/// (compile_check.h ExpectGroupCompiles).
TEST_P(CompileTest, CompilesForSm90WithoutSpills) {
  compile_check::ExpectGroupCompiles(*GetParam().family, GetParam().configs);
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, CompileTest, ::testing::ValuesIn(AllGroups()),
                         [](const ::testing::TestParamInfo<Group>& info) { return info.param.name; });

// Compiled together, each instantiation gets its own entry and its own
// registers from the ptxas log: a kernel with 64 live accumulators uses
// more registers than one with 2, as it does compiled alone.
TEST(Compiler, CompileTogetherParsesEachEntrysOwnRegisters) {
  constexpr char kSource[] = R"(
template <int N> __global__ void k(const float* x, float* y) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = x[i * blockDim.x + threadIdx.x];
  for (int t = 0; t < 100; ++t) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + t) % N] + 1.0f;
  }
#pragma unroll
  for (int i = 0; i < N; ++i) y[i * blockDim.x + threadIdx.x] = acc[i];
})";
  auto together = CompileTogether(kSource, {"k<64>", "k<2>"}, {}, "sm_90");
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_EQ(together->size(), 2u);
  for (int i : {0, 1}) {
    auto alone = Compile(kSource, i == 0 ? "k<64>" : "k<2>", {}, "sm_90");
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ((*together)[i].entry, alone->entry);
    EXPECT_EQ((*together)[i].registers, alone->registers) << (*together)[i].log;
  }
  EXPECT_GT((*together)[0].registers, (*together)[1].registers + 32);
  auto bad = CompileTogether("template <int N> __global__ void k(float* x) { x[0] = nope; }",
                             {"k<1>", "k<2>"}, {}, "sm_90");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("2 instantiations"), std::string::npos) << bad.status();
}

TEST(Compiler, ReportsCompileErrorsWithTheLog) {
  auto k = Compile("template <int N> __global__ void k(float* x) { x[0] = undefined_name; }",
                   "k<1>", {}, "sm_90");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(k.status().message().find("undefined_name"), std::string::npos) << k.status();
}

// CompileEach hands each result over once, one call at a time; one thread
// takes the sources in their order, and a failure comes as its status.
TEST(Compiler, CompileEachHandsEachResultOverOnceInTheSourcesOrder) {
  const std::string source = "template <int N> __global__ void k(float* x) { x[0] = N; }";
  std::vector<CompileInput> sources;
  for (int n = 0; n < 5; ++n) sources.push_back({source, absl::StrCat("k<", n, ">"), {}});
  sources[3].source = "template <int N> __global__ void k(float* x) { x[0] = undefined_name; }";
  for (int threads : {1, 3}) {
    std::vector<size_t> order;
    std::vector<bool> ok(sources.size(), false);
    std::atomic<int> inside{0};
    int overlapped = 0;
    CompileEach(sources, "sm_90", threads, [&](size_t i, absl::StatusOr<CompiledKernel> k) {
      if (inside++ > 0) ++overlapped;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // room for an overlap
      order.push_back(i);
      ok[i] = k.ok();
      --inside;
    });
    EXPECT_EQ(overlapped, 0) << threads << " threads";
    ASSERT_EQ(order.size(), sources.size()) << threads << " threads";
    EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), sources.size());
    if (threads == 1) {
      EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
    }
    EXPECT_EQ(ok, (std::vector<bool>{true, true, true, false, true})) << threads << " threads";
  }
}

// 64 live accumulators under a 32-register cap: ptxas spills on every
// attempt (compiled kCompileAttemptsWhileSpilling times, the log naming the
// attempts before the last), and the kernel is rejected with the bytes named;
// a kernel that does not spill is compiled once.
TEST(Compiler, RejectsAKernelThatSpills) {
  constexpr char kSource[] = R"(
template <int N> __global__ void k(const float* x, float* y) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = x[i * blockDim.x + threadIdx.x];
  for (int t = 0; t < 100; ++t) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + t) % N] + 1.0f;
  }
#pragma unroll
  for (int i = 0; i < N; ++i) y[i * blockDim.x + threadIdx.x] = acc[i];
})";
  auto k = Compile(kSource, "k<64>", {"--maxrregcount=32"}, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_GT(k->spill_bytes, 0) << k->log;
  for (int attempt = 1; attempt < kCompileAttemptsWhileSpilling; ++attempt) {
    EXPECT_NE(k->log.find(absl::StrCat("attempt ", attempt, ": ptxas spilled ")), std::string::npos)
        << k->log;
  }
  EXPECT_EQ(k->log.find(absl::StrCat("attempt ", kCompileAttemptsWhileSpilling, ":")),
            std::string::npos);
  const absl::Status s = CheckNoSpills(*k);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(absl::StrCat("spilled ", k->spill_bytes, " bytes")), std::string::npos)
      << s;
  auto fine = Compile(kSource, "k<8>", {}, "sm_90");
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_TRUE(CheckNoSpills(*fine).ok()) << fine->log;
  EXPECT_EQ(fine->log.find("attempt "), std::string::npos) << fine->log;
}

TEST(Compiler, TheInstructionCacheFlushOutgrowsTheInstructionCaches) {
  // L2Flusher's kernel must carry more code than an SM caches (sliced-K
  // kernels of 100-124 KB lost their cached code after it on an H100:
  // bench/RESULTS.md sbs-probe), without spilling.
  auto k = Compile(kIcacheFlushSource, kIcacheFlushName, {}, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(CheckNoSpills(*k).ok());
  EXPECT_GT(k->cubin.size(), 150u * 1024) << "the flush kernel shrank to " << k->cubin.size() << " B";
}

// The fp64 check of the math modes other than MATH_IEEE_FP32
// (families/sgemm/worker/problem.cc) builds for sm_90 without spilling.
// So does its form for each 16-bit dtype (families/sgemm/worker/problem.cc).
TEST(Compiler, CompilesTheFp64CheckKernel) {
  for (v1::DType dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16}) {
    auto k = Compile(kFp64CheckSource, Fp64CheckName(dtype), {}, "sm_90");
    ASSERT_TRUE(k.ok()) << Fp64CheckName(dtype) << ": " << k.status();
    EXPECT_TRUE(CheckNoSpills(*k).ok());
    EXPECT_FALSE(k->entry.empty());
  }
}

// The erf GELU pass of EPILOGUE_BIAS_GELU_ERF's baseline, for each type
// of C, builds for sm_90 without spilling.
TEST(Compiler, CompilesTheGeluErfPass) {
  for (v1::DType dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16}) {
    auto k = Compile(kGeluErfSource, GeluErfName(dtype), {}, "sm_90");
    ASSERT_TRUE(k.ok()) << GeluErfName(dtype) << ": " << k.status();
    EXPECT_TRUE(CheckNoSpills(*k).ok());
    EXPECT_NE(k->entry.find("gelu_erf"), std::string::npos) << k->entry;
  }
}

// A source that names the arch-specific variant of the device's target
// (sgemm's KIND 6: wgmma, sm_90a) is compiled for it; another target than
// the device's is refused.
TEST(Compiler, CompilesForTheArchSpecificTargetASourceNames) {
  constexpr char kSource[] = "template <int N> __global__ void k(float* x) { x[threadIdx.x] *= N; }";
  auto a = Compile(kSource, "k<2>", {"--gpu-architecture=sm_90a"}, "sm_90");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_NE(a->ptx.find(".target sm_90a"), std::string::npos) << a->ptx;
  auto plain = Compile(kSource, "k<2>", {}, "sm_90");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->ptx.find(".target sm_90a"), std::string::npos);
  for (const auto& [option, arch] :
       {std::pair{"--gpu-architecture=sm_90a", "sm_80"}, {"--gpu-architecture=sm_100a", "sm_90"}}) {
    auto refused = Compile(kSource, "k<2>", {option}, arch);
    ASSERT_FALSE(refused.ok()) << option << " on " << arch;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find(std::string("which is not the device's ") + arch),
              std::string::npos)
        << refused.status();
  }
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
