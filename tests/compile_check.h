// The compile check of the tests: a family's configs NVRTC-compiled for
// sm_90 on the CPU, those that share a source and options in one program
// (CompileTogether: the front end parses the source once for all of them).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "gtest/gtest.h"
#include "server/worker/compiler.h"

namespace tuned::compile_check {

/// Configs compiled in one NVRTC program at most: few enough that two test
/// processes keep both of CI's cores busy to the end.
inline constexpr size_t kConfigsPerProgram = 24;

/// `configs` in groups of at most `per_program` that share their source text
/// and options, in the order of their first config.
inline std::vector<std::vector<Config>> GroupBySource(const Family& family,
                                                      const std::vector<Config>& configs,
                                                      size_t per_program = kConfigsPerProgram) {
  std::vector<std::vector<Config>> groups;
  std::map<std::string, size_t> open;  // source and options -> the group being filled
  for (const Config& c : configs) {
    const KernelSource src = family.Source(c);
    const std::string key = absl::StrCat(SourceText(src), "\n", absl::StrJoin(src.options, " "));
    auto it = open.find(key);
    if (it == open.end() || groups[it->second].size() == per_program) {
      groups.emplace_back();
      it = open.insert_or_assign(key, groups.size() - 1).first;
    }
    groups[it->second].push_back(c);
  }
  return groups;
}

/// Compiles one group of GroupBySource in one program and expects, for
/// each config: a cubin with its mangled entry, 1-255 registers, no spills,
/// its wgmmas asynchronous (ptxas warns "wgmma.mma_async instructions are
/// serialized" where it cannot keep them so), and PTX for the target the
/// source names (sm_90a for wgmma) or sm_90. An entry that spills in the
/// shared program is compiled alone, as the daemon compiles it (Compile:
/// ptxas's allocation varies between runs).
inline void ExpectGroupCompiles(const Family& family, const std::vector<Config>& group) {
  ASSERT_FALSE(group.empty());
  const KernelSource first = family.Source(group.front());
  const std::string text = SourceText(first);
  std::vector<std::string> names;
  for (const Config& c : group) names.push_back(family.Source(c).name_expression);
  auto together = CompileTogether(text, names, first.options, "sm_90");
  ASSERT_TRUE(together.ok()) << family.ConfigName(group.front()) << " and its group: "
                             << together.status();
  ASSERT_EQ(together->size(), group.size());
  const bool sm90a = std::find(first.options.begin(), first.options.end(),
                               "--gpu-architecture=sm_90a") != first.options.end();
  const CompiledKernel& program = together->front();
  EXPECT_GT(program.cubin.size(), 1000u);
  EXPECT_NE(program.ptx.find(sm90a ? ".target sm_90a" : ".target sm_90"), std::string::npos);
  EXPECT_EQ(program.log.find("serialized"), std::string::npos) << program.log;
  for (size_t i = 0; i < group.size(); ++i) {
    const std::string config = family.ConfigName(group[i]);
    CompiledKernel k = (*together)[i];
    if (k.spill_bytes > 0) {
      auto alone = Compile(text, names[i], first.options, "sm_90");
      ASSERT_TRUE(alone.ok()) << config << ": " << alone.status();
      k = *std::move(alone);
    }
    EXPECT_EQ(k.entry.rfind("_Z", 0), 0u) << config << ": " << k.entry;  // a template instantiation
    EXPECT_NE(k.ptx.find(k.entry), std::string::npos) << config;
    EXPECT_GT(k.registers, 0) << config << "\n" << k.log;
    EXPECT_LE(k.registers, 255) << config;
    EXPECT_EQ(k.spill_bytes, 0) << config << "\n" << k.log;
  }
}

/// Every config of `configs` compiles as ExpectGroupCompiles expects, one
/// group after another on one thread: ctest runs as many tests as there
/// are cores, and a test that took two would leave no core idle for the
/// SCHED_IDLE compiles of jobs_test's compile-ahead daemon.
inline void ExpectCompiles(const Family& family, const std::vector<Config>& configs) {
  for (const std::vector<Config>& group : GroupBySource(family, configs)) {
    ExpectGroupCompiles(family, group);
  }
}

}  // namespace tuned::compile_check
