// Helpers of the sgemm family's layout tests (sgemm_*_test.cc): configs in
// a layout, and NVRTC compiles of a few of them (no GPU needed).
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "server/worker/compiler.h"

namespace tuned::sgemm_test {

/// The non-NN layouts and their config-name suffixes.
inline const std::vector<std::pair<v1::Layout, std::string>>& OtherLayouts() {
  static const auto* layouts = new std::vector<std::pair<v1::Layout, std::string>>{
      {v1::LAYOUT_NT, "_nt"}, {v1::LAYOUT_TN, "_tn"}, {v1::LAYOUT_TT, "_tt"}};
  return *layouts;
}

/// NVRTC-compiles `configs` (each with its Source's options) for sm_90, two
/// at a time, and expects each to compile without errors or spills.
inline void ExpectCompileWithoutSpills(const Family& f, const std::vector<Config>& configs) {
  std::vector<CompileInput> sources;
  for (const Config& c : configs) {
    const KernelSource src = f.Source(c);
    sources.push_back({SourceText(src), src.name_expression, src.options});
  }
  const auto kernels = CompileMany(sources, "sm_90", 2);
  ASSERT_EQ(kernels.size(), configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string name = f.ConfigName(configs[i]);
    ASSERT_TRUE(kernels[i].ok()) << name << ": " << kernels[i].status();
    EXPECT_EQ(kernels[i]->spill_bytes, 0) << name << ": " << kernels[i]->log;
    EXPECT_EQ(kernels[i]->log.find("serialized"), std::string::npos) << name << kernels[i]->log;
  }
}

}  // namespace tuned::sgemm_test
