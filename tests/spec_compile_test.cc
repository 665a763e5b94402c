// The specs of examples/kernels/ compile with NVRTC (no GPU needed): the
// default config of each, and its reference kernel or reference config,
// with the name expression and defines that EvaluateLaunch gives; the
// figures of a module that holds a reference beside the kernel; and what a
// compile's log keeps of NVRTC's.
#include <gtest/gtest.h>

#include <string>

#include "families/family.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"
#include "server/worker/compiler.h"

namespace tuned::spec {
namespace {

TEST(SpecCompile, ExamplesCompile) {
  for (const char* dir : {"matmul", "reduction", "stencil", "softmax", "histogram"}) {
    SCOPED_TRACE(dir);
    auto spec = LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/" + dir + "/spec.toml");
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_GT(spec->sample_dims_size(), 0);
    const Dims dims(spec->sample_dims(0).dims().begin(), spec->sample_dims(0).dims().end());
    std::vector<Config> configs = {Config(spec->default_config().begin(), spec->default_config().end())};
    const auto& ref = spec->verification().reference_config();
    if (!ref.empty()) configs.emplace_back(ref.begin(), ref.end());
    for (const Config& config : configs) {
      auto launch = EvaluateLaunch(*spec, config, dims);
      ASSERT_TRUE(launch.ok()) << launch.status();
      auto k = Compile(spec->source(), launch->name_expression, launch->defines, "sm_90");
      ASSERT_TRUE(k.ok()) << launch->name_expression << ": " << k.status();
      EXPECT_FALSE(k->cubin.empty());
      EXPECT_EQ(k->spill_bytes, 0) << k->log;
      if (!spec->verification().reference_kernel().empty()) {
        auto r = Compile(spec->source(), spec->verification().reference_kernel(), launch->defines, "sm_90");
        ASSERT_TRUE(r.ok()) << spec->verification().reference_kernel() << ": " << r.status();
      }
    }
  }
}

// A spec's module holds its reference kernel beside the tuned one: the
// registers, spills and shared memory are the compiled kernel's own, from its
// own entry of the ptxas log, in either order of the two in the source. A
// spilling reference leaves a clean kernel accepted; a spilling kernel is
// rejected beside a clean reference.
TEST(SpecCompile, RegistersSpillsAndSharedMemoryAreTheCompiledKernelsOwn) {
  // 64 live accumulators under a 32-register cap (2 blocks of 1024 threads
  // an SM): ptxas spills (as in compile_test's RejectsAKernelThatSpills).
  constexpr char kSpilling[] = R"(
__global__ void __launch_bounds__(1024, 2) spilling(const float* x, float* y) {
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = x[i * blockDim.x + threadIdx.x];
  for (int t = 0; t < 100; ++t) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + t) % 64] + 1.0f;
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) y[i * blockDim.x + threadIdx.x] = acc[i];
}
)";
  // Few registers and 4 KiB of shared memory.
  constexpr char kClean[] = R"(
__global__ void clean(const float* x, float* y) {
  __shared__ float s[1024];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = s[1023 - threadIdx.x];
}
)";
  for (const std::string& source : {std::string(kSpilling) + kClean, std::string(kClean) + kSpilling}) {
    SCOPED_TRACE(source.substr(0, 40));
    auto clean = Compile(source, "clean", {}, "sm_90");
    ASSERT_TRUE(clean.ok()) << clean.status();
    EXPECT_EQ(clean->spill_bytes, 0) << clean->log;
    EXPECT_EQ(clean->static_smem_bytes, 4096) << clean->log;
    EXPECT_GT(clean->registers, 0) << clean->log;
    EXPECT_LT(clean->registers, 32) << clean->log;
    EXPECT_TRUE(CheckNoSpills(*clean).ok()) << clean->log;
    EXPECT_EQ(clean->log.find("attempt "), std::string::npos) << clean->log;  // compiled once

    auto spilling = Compile(source, "spilling", {}, "sm_90");
    ASSERT_TRUE(spilling.ok()) << spilling.status();
    EXPECT_GT(spilling->spill_bytes, 0) << spilling->log;
    EXPECT_LE(spilling->registers, 32) << spilling->log;
    EXPECT_EQ(spilling->static_smem_bytes, 0) << spilling->log;
    EXPECT_EQ(CheckNoSpills(*spilling).code(), absl::StatusCode::kFailedPrecondition);
  }
}

// A compile log keeps the diagnostics of the kernel's own lines: one about
// another file goes with the lines it quotes, the neutral lines stay, and
// a failed open reads the same whatever its reason.
TEST(SpecCompile, ALogKeepsOnlyTheKernelsOwnDiagnostics) {
  const std::string log =
      "kernel.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"
      "    int x;\n"
      "        ^\n"
      "\n"
      "/proc/self/environ(1): error: this declaration has no storage class or type specifier\n"
      "  NVIDIA_API_KEY=nvapi-secret PATH=/bin\n"
      "  ^\n"
      "\n"
      "/home/u/token(1): error: expected a \";\"\n"
      "  alice:secret register\n"
      "\n"
      "kernel.cu(7): catastrophic error: cannot open source file \"/etc/shadow\" (Permission denied)\n"
      "  #include \"/etc/shadow\"\n"
      "\n"
      "4 errors detected in the compilation of \"kernel.cu\".\n"
      "ptxas info    : Used 40 registers\n";
  const std::string kept = OwnDiagnostics(log);
  EXPECT_EQ(kept.find("secret"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("/proc/self/environ"), std::string::npos) << kept;
  EXPECT_NE(kept.find("kernel.cu(3): warning #177-D"), std::string::npos) << kept;
  EXPECT_NE(kept.find("    int x;\n"), std::string::npos) << kept;
  EXPECT_NE(kept.find("kernel.cu(7): catastrophic error: cannot open source file \"/etc/shadow\"\n"),
            std::string::npos) << kept;
  EXPECT_EQ(kept.find("Permission denied"), std::string::npos) << kept;
  EXPECT_NE(kept.find("4 errors detected"), std::string::npos) << kept;
  EXPECT_NE(kept.find("ptxas info    : Used 40 registers"), std::string::npos) << kept;
  EXPECT_NE(kept.find("(2 diagnostics about another file than the kernel's source cut)"), std::string::npos)
      << kept;
  EXPECT_EQ(OwnDiagnostics("kernel.cu(1): error: x\n"), "kernel.cu(1): error: x\n");  // nothing cut
}

// What preparing a spec's problem runs before any candidate, which the
// daemon's compiler compiles and the GPU worker only loads: the reference
// (kernel or config), then the default config where it runs at the shape.
TEST(SpecCompile, PrepareKernelsAreTheReferenceThenTheDefaultConfigWhereItRuns) {
  auto spec = LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/softmax/spec.toml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto softmax = SpecFamily::Create(*spec);
  ASSERT_TRUE(softmax.ok()) << softmax.status();
  auto both = (*softmax)->PrepareKernels({256, 100});
  ASSERT_TRUE(both.ok()) << both.status();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].name, "reference kernel softmax_naive");
  EXPECT_EQ((*both)[0].source.name_expression, "softmax_naive");
  EXPECT_EQ((*both)[0].source.text, spec->source());
  EXPECT_EQ(std::vector<uint32_t>((*both)[0].geometry.grid().begin(), (*both)[0].geometry.grid().end()),
            (std::vector<uint32_t>{2, 1, 1}));  // ceil_div(256, 128)
  EXPECT_EQ((*both)[1].name, "default config softmax_rows_THREADS128_VEC1");
  EXPECT_EQ((*both)[1].source.name_expression, "softmax<128, 1>");
  EXPECT_EQ((*both)[1].geometry.block(0), 128u);
  EXPECT_EQ((*both)[1].geometry.grid(0), 256u);
  // 16 columns: the default's 128 threads break THREADS * VEC <= 4 * cols;
  // the reference alone, timed as the baseline.
  auto reference = (*softmax)->PrepareKernels({256, 16});
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(reference->size(), 1u);
  EXPECT_EQ((*reference)[0].name, "reference kernel softmax_naive");

  // Transpose: a reference config, and its default config.
  const auto* transpose = dynamic_cast<const SpecFamily*>(&TransposeFamily());
  ASSERT_NE(transpose, nullptr);
  auto t = transpose->PrepareKernels({96, 40});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].name, "reference config transpose_naive_32x8");
  EXPECT_EQ((*t)[0].source.name_expression, "transpose<0, 32, 8, 0>");
  EXPECT_EQ((*t)[1].name, "default config transpose_tiled_32x8_p1");
  EXPECT_EQ((*t)[1].source.name_expression, "transpose<1, 32, 8, 1>");
  EXPECT_FALSE((*t)[1].source.parts.empty());  // the built-in's kernel files
}

}  // namespace
}  // namespace tuned::spec
