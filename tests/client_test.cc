// The client library offline: export and import of a kernel description, the
// PTX path (no cubin), and launch geometry as a function of the shape.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "families/family.h"
#include "families/kernel_text.h"
#include "server/worker/compiler.h"
#include "tuned/client.h"

namespace tuned {
namespace {

// A BestKernel as GetBest returns it, for an sgemm config tuned at 1024^3.
v1::BestKernel Described(const Config& config) {
  const Family& f = SgemmFamily();
  const KernelSource src = f.Source(config);
  auto k = Compile(SourceText(src), src.name_expression, src.options, "sm_90");
  EXPECT_TRUE(k.ok()) << k.status();
  v1::BestKernel b;
  *b.mutable_problem() = SgemmProblem(1024, 1024, 1024);
  b.set_match(v1::MATCH_EXACT);
  for (int64_t d : {1024, 1024, 1024}) b.add_tuned_shape(d);
  b.mutable_measurement()->mutable_config()->set_name(f.ConfigName(config));
  for (const auto& [key, v] : config) (*b.mutable_measurement()->mutable_config()->mutable_params())[key] = v;
  b.mutable_measurement()->set_median_ms(0.07);
  b.set_source(SourceText(src));
  b.set_cubin(k->cubin);
  b.set_ptx(k->ptx);
  b.set_entry(k->entry);
  *b.mutable_geometry() = f.Geometry(config, {1024, 1024, 1024}, Sm90ReferenceDevice());
  b.mutable_device()->set_cc_major(9);
  return b;
}

TEST(ClientOffline, ExportedCubinFreeDescriptionKeepsPtxAndGeometry) {
  const Family& f = SgemmFamily();
  const Config config = f.ValidSpace(Sm90ReferenceDevice(), nullptr).back();
  const v1::BestKernel best = Described(config);
  const std::string dir = ::testing::TempDir() + "/tuned_export_" + std::to_string(getpid());
  ASSERT_TRUE(SaveKernel(best, dir).ok());
  std::filesystem::remove(dir + "/kernel.cubin");  // the PTX path

  auto back = LoadKernelDescription(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->cubin().empty());
  EXPECT_EQ(back->ptx(), best.ptx());
  EXPECT_EQ(back->source(), best.source());
  EXPECT_EQ(back->entry(), best.entry());
  EXPECT_EQ(back->measurement().config().name(), f.ConfigName(config));
  EXPECT_DOUBLE_EQ(back->measurement().median_ms(), 0.07);

  // Geometry is the family's rule for whatever shape the caller runs.
  for (const Shape& shape : {Shape{1024, 1024, 1024}, Shape{1000, 17, 4097}, Shape{1, 1, 1}}) {
    auto g = TunedKernel::GeometryFor(*back, shape);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->SerializeAsString(),
              f.Geometry(config, shape, Sm90ReferenceDevice()).SerializeAsString());
    EXPECT_EQ(g->grid(0), (shape[1] + config.at("BN") - 1) / config.at("BN"));
  }
  EXPECT_EQ(TunedKernel::GeometryFor(*back, {0, 1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Loading needs a GPU: without one it says so; with one the PTX JIT-loads.
  auto loaded = TunedKernel::Load(*back);
  if (!loaded.ok()) {
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition) << loaded.status();
  }
  std::filesystem::remove_all(dir);
}

// A BestKernel with no kernel (no config passed verification: tuner.proto,
// "No kernel") loads as cuBLAS in the problem's math mode: without a GPU it
// says so, as any load does, rather than asking for a cubin.
TEST(ClientOffline, ADescriptionWithNoKernelLoadsAsCublas) {
  v1::BestKernel b;
  *b.mutable_problem() = SgemmProblem(67, 131, 1, v1::MATH_TF32);
  b.set_match(v1::MATCH_EXACT);
  b.set_use_baseline(true);
  b.set_baseline_name("cuBLAS TF32");
  b.set_baseline_ms(0.004);
  b.set_serving_reason("cuBLAS TF32: no kernel passed verification");
  auto loaded = TunedKernel::Load(b);
  if (loaded.ok()) {  // a GPU
    EXPECT_TRUE(loaded->uses_cublas());
  } else {
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition) << loaded.status();
    EXPECT_NE(loaded.status().message().find("no usable CUDA GPU"), std::string::npos) << loaded.status();
  }
  // A transpose (whose baseline is never served) still needs its kernel.
  *b.mutable_problem() = TransposeProblem(64, 64);
  EXPECT_EQ(TunedKernel::Load(b).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClientOffline, ImportOfAMissingDirectoryIsNotFound) {
  EXPECT_EQ(LoadKernelDescription("/nonexistent/tuned").status().code(), absl::StatusCode::kNotFound);
  v1::BestKernel empty;
  EXPECT_EQ(TunedKernel::Load(empty).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tuned
