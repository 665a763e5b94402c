// The specs of examples/kernels/ compile with NVRTC (no GPU needed): the
// default config of each, and its reference kernel or reference config,
// with the name expression and defines that EvaluateLaunch gives.
#include <gtest/gtest.h>

#include "families/spec/spec.h"
#include "server/worker/compiler.h"

namespace tuned::spec {
namespace {

TEST(SpecCompile, ExamplesCompile) {
  for (const char* dir : {"matmul", "reduction", "stencil", "softmax"}) {
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

}  // namespace
}  // namespace tuned::spec
