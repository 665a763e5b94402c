// The daemon's CPU split (server/common/cpus.h) on hwloc's synthetic
// topologies, and a thread's binding.
#include "server/common/cpus.h"

#include <pthread.h>
#include <sched.h>

#include <thread>

#include "gtest/gtest.h"

namespace tuned {
namespace {

TEST(CpusTest, AutoTakesTheLastWholeCoresForTheLookUpThreads) {
  // 16 CPUs, two hardware threads a core: 4 look-up threads take cores 6 and 7.
  auto split = SplitCpus("auto", 4, "pack:1 core:8 pu:2");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "12-15");
  EXPECT_EQ(split->work, "0-11");
  // 3 threads still take whole cores: no compiler shares a core with them.
  split = SplitCpus("auto", 3, "pack:1 core:8 pu:2");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "12-15");
  // One thread a core: exactly as many CPUs as threads.
  split = SplitCpus("auto", 4, "pack:2 core:8 pu:1");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "12-15");
  EXPECT_EQ(split->work, "0-11");
}

TEST(CpusTest, AutoPinsNothingOnASmallMachineOrForManyThreadsAndAllNowhere) {
  auto split = SplitCpus("auto", 1, "core:4 pu:1");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "");
  EXPECT_EQ(split->work, "");
  // Look-up threads on more than half the CPUs: nothing pinned, not an error.
  split = SplitCpus("auto", 9, "core:16 pu:1");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "");
  EXPECT_EQ(split->work, "");
  split = SplitCpus("auto", 8, "core:16 pu:1");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "8-15");
  split = SplitCpus("all", 4, "core:16 pu:1");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "");
  EXPECT_EQ(split->work, "");
}

TEST(CpusTest, AListServesThoseCpusAndTheRestWork) {
  auto split = SplitCpus("0-1,8", 4, "core:16 pu:1");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->serving, "0-1,8");
  EXPECT_EQ(split->work, "2-7,9-15");
}

TEST(CpusTest, ABadListIsRefusedWithWhatIsWrong) {
  auto split = SplitCpus("12-20", 4, "core:16 pu:1");
  ASSERT_TRUE(absl::IsInvalidArgument(split.status())) << split.status();
  EXPECT_NE(split.status().message().find("only on CPUs 0-15"), std::string::npos) << split.status();
  split = SplitCpus("0-15", 4, "core:16 pu:1");
  ASSERT_TRUE(absl::IsInvalidArgument(split.status())) << split.status();
  EXPECT_NE(split.status().message().find("leaves no CPU"), std::string::npos) << split.status();
  split = SplitCpus("twelve", 4, "core:16 pu:1");
  EXPECT_TRUE(absl::IsInvalidArgument(split.status())) << split.status();
  EXPECT_EQ(CountCpus("0-3,8"), 5);
  EXPECT_EQ(CountCpus("3-"), -1);
  EXPECT_EQ(CountCpus(""), -1);
  EXPECT_EQ(CountCpus("a"), -1);
}

// A bound thread runs only there, and a thread it starts inherits it.
TEST(CpusTest, APinnedThreadAndItsChildrenRunOnItsCpus) {
  std::thread([] {
    ASSERT_TRUE(PinCallingThread("0").ok());
    cpu_set_t set;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof set, &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), 1);
    EXPECT_TRUE(CPU_ISSET(0, &set));
    std::thread([] {
      cpu_set_t child;
      ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof child, &child), 0);
      EXPECT_EQ(CPU_COUNT(&child), 1);
    }).join();
    EXPECT_TRUE(absl::IsInvalidArgument(PinCallingThread("x")));
    EXPECT_TRUE(PinCallingThread("").ok());  // nothing to do
  }).join();
}

}  // namespace
}  // namespace tuned
