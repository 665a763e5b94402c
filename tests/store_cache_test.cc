// The store's compile cache and crash counts on both backends
// (db/store_cache.cc).
#include <string>
#include <utility>

#include "tests/store_test.h"

namespace tuned {
namespace {

CompileKey Key(std::string arch = "sm_90") {
  return {"template <int X> __global__ void k() {}", "k<1>", "-DX=1", std::move(arch), "13.0"};
}

TEST_P(StoreTest, CompileCacheHitsOnlyTheExactKey) {
  auto miss = store_->LookupCompiled(Key());
  ASSERT_TRUE(miss.ok()) << miss.status();
  EXPECT_FALSE(miss->has_value());
  EXPECT_FALSE(*store_->HasCompiled(Key()));

  CompiledRow row;
  row.ok = true;
  row.message = "ptxas info: Used 32 registers";
  row.binary = {Key().source, "_Z1kILi1EEvv", std::string("\x7f" "ELF\0bin", 8), ".ptx", row.message};
  row.registers = 32;
  row.local_bytes = 0;
  row.compile_ms = 120.5;
  ASSERT_TRUE(store_->AddCompiled(Key(), row).ok());
  ASSERT_TRUE(store_->AddCompiled(Key(), row).ok());  // idempotent

  auto hit = store_->LookupCompiled(Key());
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_TRUE(*store_->HasCompiled(Key()));
  EXPECT_TRUE((*hit)->ok);
  EXPECT_EQ((*hit)->binary.cubin, row.binary.cubin);  // bytes, NUL kept
  EXPECT_EQ((*hit)->binary.entry, "_Z1kILi1EEvv");
  EXPECT_EQ((*hit)->registers, 32);
  EXPECT_DOUBLE_EQ((*hit)->compile_ms, 120.5);

  // Any other architecture, NVRTC, option or instantiation is another kernel.
  EXPECT_FALSE(store_->LookupCompiled(Key("sm_80"))->has_value());
  EXPECT_FALSE(*store_->HasCompiled(Key("sm_80")));
  CompileKey other = Key();
  other.nvrtc_version = "13.1";
  EXPECT_FALSE(store_->LookupCompiled(other)->has_value());
  EXPECT_FALSE(*store_->HasCompiled(other));
  other = Key();
  other.options = "-DX=2";
  EXPECT_FALSE(store_->LookupCompiled(other)->has_value());
  EXPECT_FALSE(*store_->HasCompiled(other));
  other = Key();
  other.name_expression = "k<2>";
  EXPECT_FALSE(store_->LookupCompiled(other)->has_value());
  EXPECT_FALSE(*store_->HasCompiled(other));

  // A compile error is cached too, without a binary.
  CompiledRow error;
  error.ok = false;
  error.message = "error: nope";
  ASSERT_TRUE(store_->AddCompiled(Key("sm_80"), error).ok());
  auto bad = store_->LookupCompiled(Key("sm_80"));
  ASSERT_TRUE(bad.ok() && bad->has_value());
  EXPECT_TRUE(*store_->HasCompiled(Key("sm_80")));
  EXPECT_FALSE((*bad)->ok);
  EXPECT_EQ((*bad)->message, "error: nope");
  EXPECT_TRUE((*bad)->binary.cubin.empty());
}

TEST_P(StoreTest, CrashCountsPerDeviceFamilyAndConfig) {
  EXPECT_EQ(*store_->CrashCount(dev_, BuiltinKey(v1::FAMILY_SGEMM), "bad"), 0);
  const ProblemKey sgemm = BuiltinKey(v1::FAMILY_SGEMM);
  EXPECT_EQ(*store_->AddCrash(dev_, sgemm, "bad", "MEASUREMENT_DEVICE_FAULT: x"), 1);
  EXPECT_EQ(*store_->AddCrash(dev_, sgemm, "bad", "MEASUREMENT_RUN_TIMEOUT: y"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, BuiltinKey(v1::FAMILY_SGEMM), "bad"), 2);
  EXPECT_EQ(*store_->CrashCount(dev_, BuiltinKey(v1::FAMILY_TRANSPOSE), "bad"), 0);
  EXPECT_EQ(*store_->CrashCount(dev_, BuiltinKey(v1::FAMILY_SGEMM), "good"), 0);
  auto other = store_->UpsertDevice(Gpu("13.1"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*store_->CrashCount(*other, BuiltinKey(v1::FAMILY_SGEMM), "bad"), 0);
}

}  // namespace
}  // namespace tuned
