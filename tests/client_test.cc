// The client library offline: export and import of a kernel description, the
// PTX path (no cubin), and launch geometry as a function of the shape.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "families/family.h"
#include "families/kernel_text.h"
#include "server/worker/compiler.h"
#include "tuned/client.h"

namespace tuned {
namespace {

// A BestKernel as GetBest returns it, for an sgemm config tuned at 1024^3.
v1::BestKernel Described(const Config& config) {
  const Family& f = GemmFamily();
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
  const Family& f = GemmFamily();
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

v1::KernelArgument Arg(const std::string& name, v1::SpecType type, bool buffer, int64_t elements,
                       double value = 0, int64_t int_value = 0) {
  v1::KernelArgument a;
  a.set_name(name);
  a.set_type(type);
  a.set_is_buffer(buffer);
  a.set_elements(elements);
  a.set_value(value);
  a.set_int_value(int_value);
  return a;
}

template <typename T>
T SlotAs(const PackedArguments& p, size_t i) {
  T v;
  std::memcpy(&v, &p.slots[i], sizeof v);
  return v;
}

TEST(ClientOffline, FamilyProblemMapsBuiltinNamesAndSendsOthersByName) {
  const v1::Problem s = FamilyProblem("sgemm", {64, 32, 16});
  EXPECT_EQ(s.SerializeAsString(), SgemmProblem(64, 32, 16).SerializeAsString());
  EXPECT_EQ(FamilyProblem("gemm", {64, 32, 16}).SerializeAsString(), s.SerializeAsString());
  EXPECT_EQ(GemmProblem(64, 32, 16, v1::MATH_IEEE_FP32, v1::LAYOUT_NT, v1::DTYPE_BF16).SerializeAsString(),
            SgemmProblem(64, 32, 16, v1::MATH_IEEE_FP32, v1::LAYOUT_NT, v1::DTYPE_BF16).SerializeAsString());
  EXPECT_EQ(FamilyProblem("transpose", {4, 8}).SerializeAsString(),
            TransposeProblem(4, 8).SerializeAsString());
  const v1::Problem m = FamilyProblem("matmul_tiled", {1024, 512, 256}, "ab12");
  EXPECT_EQ(m.family(), v1::FAMILY_UNSPECIFIED);
  EXPECT_EQ(m.family_name(), "matmul_tiled");
  EXPECT_EQ(m.spec_hash(), "ab12");
  EXPECT_EQ(m.dtype(), v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(std::vector<int64_t>(m.shape().begin(), m.shape().end()),
            (std::vector<int64_t>{1024, 512, 256}));
  EXPECT_EQ(ProblemFamilyName(m), "matmul_tiled");
  EXPECT_EQ(ProblemFamilyName(s), "sgemm");
  EXPECT_TRUE(IsBuiltinFamily("transpose"));
  EXPECT_FALSE(IsBuiltinFamily("matmul_tiled"));
}

TEST(ClientOffline, KernelArgumentsArePackedInOrderByType) {
  v1::BestKernel b;
  *b.add_kernel_arguments() = Arg("x", v1::SPEC_TYPE_F16, true, 100);
  *b.add_kernel_arguments() = Arg("alpha", v1::SPEC_TYPE_F32, false, 0, 0.1);
  *b.add_kernel_arguments() = Arg("y", v1::SPEC_TYPE_F32, true, 100);
  *b.add_kernel_arguments() = Arg("eps", v1::SPEC_TYPE_F64, false, 0, 0.1);
  *b.add_kernel_arguments() = Arg("n", v1::SPEC_TYPE_I32, false, 0, -7, -7);
  *b.add_kernel_arguments() = Arg("stride", v1::SPEC_TYPE_I64, false, 0, 0, (int64_t{1} << 40) + 3);
  int dx = 0, dy = 0;  // stand-ins for device pointers
  auto p = PackKernelArguments(b, {&dx, &dy});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->slots.size(), 6u);
  EXPECT_EQ(SlotAs<void*>(*p, 0), &dx);
  EXPECT_EQ(SlotAs<float>(*p, 1), 0.1f);
  EXPECT_EQ(SlotAs<void*>(*p, 2), &dy);
  EXPECT_EQ(SlotAs<double>(*p, 3), 0.1);
  EXPECT_EQ(SlotAs<int32_t>(*p, 4), -7);
  EXPECT_EQ(SlotAs<int64_t>(*p, 5), (int64_t{1} << 40) + 3);
  const std::vector<void*> ptrs = p->Pointers();
  ASSERT_EQ(ptrs.size(), 6u);
  for (size_t i = 0; i < ptrs.size(); ++i) EXPECT_EQ(ptrs[i], &p->slots[i]);
}

TEST(ClientOffline, KernelArgumentsRefuseWrongBuffersAndTypes) {
  v1::BestKernel b;
  *b.add_kernel_arguments() = Arg("A", v1::SPEC_TYPE_F32, true, 16);
  *b.add_kernel_arguments() = Arg("B", v1::SPEC_TYPE_F32, true, 16);
  *b.add_kernel_arguments() = Arg("n", v1::SPEC_TYPE_I32, false, 0, 4, 4);
  int d = 0;
  auto few = PackKernelArguments(b, {&d});
  EXPECT_EQ(few.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(few.status().message(), "the kernel takes 2 buffers (A, B), got 1");
  auto null = PackKernelArguments(b, {&d, nullptr});
  EXPECT_EQ(null.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(null.status().message(), "buffer 1 (B) is a null pointer");
  v1::BestKernel half = b;
  *half.add_kernel_arguments() = Arg("h", v1::SPEC_TYPE_F16, false, 0, 1);
  EXPECT_EQ(PackKernelArguments(half, {&d, &d}).status().code(), absl::StatusCode::kInvalidArgument);
  v1::BestKernel wide = b;
  *wide.add_kernel_arguments() = Arg("big", v1::SPEC_TYPE_I32, false, 0, 0, int64_t{1} << 31);
  EXPECT_EQ(PackKernelArguments(wide, {&d, &d}).status().code(), absl::StatusCode::kInvalidArgument);
  // A built-in family's kernel has none: use Sgemm or Transpose.
  v1::BestKernel sgemm;
  *sgemm.mutable_problem() = SgemmProblem(4, 4, 4);
  EXPECT_EQ(PackKernelArguments(sgemm, {}).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tuned
