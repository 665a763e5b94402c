// The kernel text library (families/kernel_text.h): every config's
// kernel files exist, and SourceText joins them in order. CPU only.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "families/family.h"
#include "families/kernel_text.h"

namespace tuned {
namespace {

TEST(KernelText, EveryConfigsFilesAreEmbedded) {
  EnableFaultTestFamily();
  for (const Family* f : AllFamilies()) {
    std::set<std::vector<std::string>> seen;
    for (const auto& [name, config] : f->ByName(0)) {
      const KernelSource src = f->Source(config);
      ASSERT_FALSE(src.parts.empty()) << name;
      if (!seen.insert(src.parts).second) continue;
      for (const auto& part : src.parts) {
        const auto text = KernelFileText(part);
        ASSERT_TRUE(text.ok()) << name << ": " << text.status();
        EXPECT_FALSE(text->empty()) << part;
      }
      EXPECT_EQ(SourceText(src).find("#error"), std::string::npos) << name;
    }
  }
}

TEST(KernelText, JoinsThePartsInOrderWithANewline) {
  const std::string a(*KernelFileText("gemm/sgemm.cuh"));
  const std::string b(*KernelFileText("gemm/warp.cuh"));
  EXPECT_EQ(SourceText({{"gemm/sgemm.cuh", "gemm/warp.cuh"}, "sgemm_naive<16,16>", {}}),
            a + "\n" + b);
  EXPECT_EQ(SourceText({{"gemm/warp.cuh"}, "", {}}), b);
  EXPECT_EQ(SourceText({{}, "", {}}), "");
}

TEST(KernelText, AnUnknownFileIsAnErrorLineNamingIt) {
  EXPECT_EQ(KernelFileText("gemm/none.cuh").status().code(), absl::StatusCode::kNotFound);
  const std::string text = SourceText({{"gemm/none.cuh"}, "k", {}});
  EXPECT_EQ(text.rfind("#error", 0), 0u) << text;
  EXPECT_NE(text.find("kernels_src/gemm/none.cuh"), std::string::npos) << text;
}

}  // namespace
}  // namespace tuned
