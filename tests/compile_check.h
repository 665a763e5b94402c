// The compile check of the tests: a family's configs NVRTC-compiled for
// sm_90 on the CPU, those that share a source and options in one program
// (CompileTogether: the front end parses the source once for all of them).
//
// Which configs (Select): by default configs that take every code path
// (PathsOf, CoverPaths) and a sample of the others seeded by TUNED_COMPILE_SEED (scripts/test.sh
// sets the commit, so that successive commits cover the whole space); every
// config where TUNED_ALL_CONFIGS=1 (`scripts/test.sh --all-configs`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "gtest/gtest.h"
#include "server/worker/compiler.h"

namespace tuned::compile_check {

/// The share of the other configs that a sampled check compiles besides
/// the code paths' cover (Select): with it the test command keeps within its
/// time (docs/development.md, "The compile checks").
inline constexpr double kSampleShare = 0.04;

/// The code paths that `config` takes in `family`'s form, one string each:
/// its kernel (the form's name, dtype and epilogue, the kernel template it
/// instantiates and its compile options: the kind and its target, and its
/// layout), and that kernel with each parameter's setting: the value of a
/// parameter of at most three values (the switches: double buffering,
/// stream-K, staging, persistence, multicast, ...), else whether it is at its
/// first value (SPLITK 1, STAGES 0, SLICEK 1: off) or not. Configs that take
/// the same paths differ only in tile sizes and counts.
inline std::vector<std::string> PathsOf(const Family& family, const Config& config) {
  const KernelSource src = family.Source(config);
  const std::string& expr = src.name_expression;
  const std::string kernel = absl::StrCat(
      std::string(family.name()), "|", static_cast<int>(family.dtype()), "|",
      static_cast<int>(family.epilogue()), "|", expr.substr(0, expr.find('<')), "|",
      absl::StrJoin(src.options, " "), "|", static_cast<int>(family.LayoutOf(config)));
  std::vector<std::string> paths = {kernel};
  for (const Param& p : family.params()) {
    const auto it = config.find(p.name);
    if (it == config.end() || p.values.empty()) continue;
    const int64_t v = p.values.size() <= 3 ? it->second : it->second == p.values.front();
    paths.push_back(absl::StrCat(kernel, "|", p.name, "=", v));
  }
  return paths;
}

/// Indices of `configs` that together take every code path (PathsOf) that
/// any of them takes: greedily, the config that takes the most paths not yet
/// taken (the first of equals), until none is left; in `configs`' order.
inline std::vector<size_t> CoverPaths(const Family& family, const std::vector<Config>& configs) {
  std::vector<std::vector<std::string>> paths;
  std::set<std::string> left;
  for (const Config& c : configs) {
    paths.push_back(PathsOf(family, c));
    left.insert(paths.back().begin(), paths.back().end());
  }
  std::vector<size_t> cover;
  while (!left.empty()) {
    size_t best = 0, best_new = 0;
    for (size_t i = 0; i < configs.size(); ++i) {
      size_t fresh = 0;
      for (const std::string& p : paths[i]) fresh += left.count(p);
      if (fresh > best_new) best = i, best_new = fresh;
    }
    for (const std::string& p : paths[best]) left.erase(p);
    cover.push_back(best);
  }
  std::sort(cover.begin(), cover.end());
  return cover;
}

/// FNV-1a of `text`: a hash that is the same in every process and build
/// (absl::Hash is seeded per process).
inline uint64_t StableHash(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// Whether every config is compiled: TUNED_ALL_CONFIGS=1.
inline bool AllConfigs() {
  const char* all = std::getenv("TUNED_ALL_CONFIGS");
  return all != nullptr && std::string_view(all) == "1";
}

/// The sample's seed: TUNED_COMPILE_SEED (scripts/test.sh: the commit), "0" where unset.
inline std::string Seed() {
  const char* seed = std::getenv("TUNED_COMPILE_SEED");
  return seed != nullptr && *seed != '\0' ? seed : "0";
}

/// Whether the sample of `seed` holds the config named `name`: a stable hash
/// of both below kSampleShare, so a config is in about that share of seeds.
inline bool InSample(std::string_view seed, std::string_view name) {
  const uint64_t h = StableHash(absl::StrCat(std::string(seed), "/", std::string(name)));
  return static_cast<double>(h >> 11) * 0x1p-53 < kSampleShare;
}

/// The configs of `configs` (in their order) that a check compiles: all of
/// them where AllConfigs(); else those that take every code path
/// (CoverPaths) and those of the others that are InSample(Seed()).
inline std::vector<Config> Select(const Family& family, const std::vector<Config>& configs) {
  if (AllConfigs()) return configs;
  const std::string seed = Seed();
  const std::vector<size_t> cover = CoverPaths(family, configs);
  std::vector<Config> selected;
  for (size_t i = 0, next = 0; i < configs.size(); ++i) {
    const bool covers = next < cover.size() && cover[next] == i;
    next += covers;
    if (covers || InSample(seed, family.ConfigName(configs[i]))) selected.push_back(configs[i]);
  }
  return selected;
}

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

/// The configs of `configs` that Select keeps compile as ExpectGroupCompiles
/// expects, one group after another on one thread: ctest runs as many tests
/// as there are cores, and a test that took two would leave no core idle for
/// the SCHED_IDLE compiles of jobs_test's compile-ahead daemon.
inline void ExpectCompiles(const Family& family, const std::vector<Config>& configs) {
  const std::vector<Config> selected = Select(family, configs);
  std::cout << "compile_check: " << family.name() << " " << selected.size() << " of "
            << configs.size() << " configs (seed " << Seed() << (AllConfigs() ? ", all" : "")
            << ")\n";
  for (const std::vector<Config>& group : GroupBySource(family, selected)) {
    ExpectGroupCompiles(family, group);
  }
}

}  // namespace tuned::compile_check
