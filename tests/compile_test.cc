// NVRTC-compiles every valid config of every family for sm_90 (no GPU needed)
// and checks the result: a cubin, PTX, the lowered entry name, and no spills.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
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

/// A share of the configs of one family form and kernel template: shard
/// `shard` of `shards` (compile_check.h's groups of the selected configs,
/// dealt round-robin), so that no one test holds a whole kind's space.
struct Part {
  const Family* family;
  std::string name;  // the form, the template and the shard
  std::vector<Config> configs;  // every valid config of the form and template
  size_t shard;
  size_t shards;
};

/// Every valid config of every family's forms (sgemm's dtypes: fp32 and
/// the 16-bit forms) and math modes (sgemm's tensor-core kinds are in
/// MATH_FP32_ACCURATE's and MATH_TF32's spaces), each once, by form and
/// kernel template, in about one shard for each 4 programs of the whole
/// space. The parts do not depend on which configs a run compiles
/// (compile_check::Select, in the test), so ctest's list of tests is one.
std::vector<Part> AllParts() {
  std::vector<Part> parts;
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
      std::map<std::string, std::vector<Config>> by_template;
      for (v1::Math math : f->MathModes()) {
        for (auto& c : f->ValidSpace(Sm90ReferenceDevice(), nullptr, math)) {
          if (!names.insert(f->ConfigName(c)).second) continue;
          const std::string expr = f->Source(c).name_expression;
          by_template[expr.substr(0, expr.find('<'))].push_back(c);
        }
      }
      for (auto& [kernel, configs] : by_template) {
        const size_t shards = (compile_check::GroupBySource(*f, configs).size() + 3) / 4;
        for (size_t shard = 0; shard < shards; ++shard) {
          std::string name = absl::StrCat(std::string(f->name()), "_", v1::DType_Name(f->dtype()), "_", kernel,
                                          "_", shard);
          for (char& ch : name) {
            if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
          }
          parts.push_back({f, std::move(name), configs, shard, shards});
        }
      }
    }
  }
  return parts;
}

void PrintTo(const Part& p, std::ostream* os) { *os << p.name; }

class CompileTest : public ::testing::TestWithParam<Part> {};

/// Each config of the part that compile_check::Select keeps compiles for
/// sm_90 into a cubin with its entry, within 255 registers and without
/// spills, its wgmmas asynchronous (compile_check.h ExpectGroupCompiles).
TEST_P(CompileTest, CompilesForSm90WithoutSpills) {
  const Part& part = GetParam();
  const std::vector<Config> selected = compile_check::Select(*part.family, part.configs);
  const auto groups = compile_check::GroupBySource(*part.family, selected);
  size_t compiled = 0;
  for (size_t g = part.shard; g < groups.size(); g += part.shards) {
    compile_check::ExpectGroupCompiles(*part.family, groups[g]);
    compiled += groups[g].size();
  }
  std::cout << "compile_check: " << compiled << " of " << part.configs.size() << " configs (seed "
            << compile_check::Seed() << (compile_check::AllConfigs() ? ", all" : "") << ")\n";
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, CompileTest, ::testing::ValuesIn(AllParts()),
                         [](const ::testing::TestParamInfo<Part>& info) { return info.param.name; });

// Select keeps configs that take every code path and a seeded sample of the
// rest: every path of every form is taken by each seed's selection, the
// sample changes with the seed, and TUNED_ALL_CONFIGS=1 keeps every config.
TEST(CompileCheck, SelectTakesEveryPathAndASeededSample) {
  size_t total = 0, kept = 0, covering = 0;
  std::set<std::string> all_paths, kept_paths;
  std::vector<std::string> names_a, names_b;
  for (const Part& p : AllParts()) {
    if (p.shard != 0) continue;
    total += p.configs.size();
    covering += compile_check::CoverPaths(*p.family, p.configs).size();
    for (const Config& c : p.configs) {
      for (std::string& path : compile_check::PathsOf(*p.family, c)) all_paths.insert(path);
    }
    ::setenv("TUNED_COMPILE_SEED", "a", 1);
    for (const Config& c : compile_check::Select(*p.family, p.configs)) {
      for (std::string& path : compile_check::PathsOf(*p.family, c)) kept_paths.insert(path);
      names_a.push_back(p.family->ConfigName(c));
      ++kept;
    }
    ::setenv("TUNED_COMPILE_SEED", "b", 1);
    for (const Config& c : compile_check::Select(*p.family, p.configs)) {
      names_b.push_back(p.family->ConfigName(c));
    }
    ::setenv("TUNED_ALL_CONFIGS", "1", 1);
    EXPECT_EQ(compile_check::Select(*p.family, p.configs).size(), p.configs.size()) << p.name;
    ::unsetenv("TUNED_ALL_CONFIGS");
  }
  ::unsetenv("TUNED_COMPILE_SEED");
  std::cout << total << " configs, " << all_paths.size() << " code paths taken by " << covering
            << " of them; " << kept << " compiled with seed a\n";
  EXPECT_EQ(kept_paths, all_paths);
  EXPECT_NE(names_a, names_b);
  EXPECT_GT(total, 1000u);
  EXPECT_LT(kept, total / 4);
  EXPECT_GT(kept, covering);  // the sample is not empty
}

// The groups of the whole space (compile_check::GroupBySource, by part):
// each valid config is in one group of one part, and each group holds
// configs of one source. Prints each group's first config (the GPU
// machine's list of tensor-core configs is made from these lines:
// docs/development.md).
TEST(CompileCheck, GroupsHoldEveryConfigOnce) {
  size_t configs = 0, grouped = 0;
  std::set<std::string> names;
  for (const Part& p : AllParts()) {
    if (p.shard != 0) continue;
    configs += p.configs.size();
    for (const auto& g : compile_check::GroupBySource(*p.family, p.configs)) {
      std::cout << "group " << p.family->ConfigName(g.front()) << " " << g.size() << "\n";
      for (const Config& c : g) {
        EXPECT_TRUE(names.insert(p.family->ConfigName(c)).second) << p.family->ConfigName(c);
        EXPECT_EQ(SourceText(p.family->Source(c)), SourceText(p.family->Source(g.front())));
        ++grouped;
      }
    }
  }
  EXPECT_EQ(grouped, configs);
}

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
// (families/gemm/worker/problem.cc) builds for sm_90 without spilling.
// So does its form for each 16-bit dtype (families/gemm/worker/problem.cc).
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
