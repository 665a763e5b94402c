// The fault_test family (test-only): out[i] = 2 * in[i] + 1 over a vector of
// N floats, with configs that give wrong answers, fault, hang, fail to launch,
// fail to compile or compile forever on purpose (kernels_src/fault_test/).
// Registered only when the daemon runs with --enable-fault-test-family, so the
// job system's fault isolation is tested with real kernels (on a GPU) or with
// the compile-only worker's simulation of them (CI).
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "families/family.h"

namespace tuned {
namespace {

constexpr int64_t kLaunchErrorBlock = 2048;  // over every GPU's 1024-thread limit

class FaultTestFamilyImpl final : public Family {
 public:
  FaultTestFamilyImpl()
      : params_{
            {"BEHAVIOR", {0, 1, 2, 3, 4, 5, 6},
             "0 ok, 1 wrong answer, 2 device fault, 3 hang, 4 launch error, 5 compile error, "
             "6 compile hang (see kernels_src/fault_test/fault_test.cuh)"},
            {"WORK", {1, 2, 4, 8, 16, 32}, "times each thread reads its input: the speed"},
            {"BLOCK", {64, 128, 256, kLaunchErrorBlock}, "threads per block"},
        } {}

  v1::Family id() const override { return v1::FAMILY_FAULT_TEST; }
  std::string_view name() const override { return "fault_test"; }
  bool test_only() const override { return true; }
  std::vector<std::string> dims() const override { return {"N"}; }
  std::string_view metric_unit() const override { return "GB/s"; }
  std::string_view baseline_name() const override { return "cudaMemcpy"; }
  const std::vector<Param>& params() const override { return params_; }

  /// Bytes read + written by the WORK=1 kernel: 8 * N.
  double Work(const Shape& shape) const override { return 8.0 * static_cast<double>(shape[0]); }
  /// in and out: 8 * N bytes.
  int64_t BufferBytes(const Shape& shape, v1::Math) const override { return 8 * shape[0]; }
  int64_t MaxBufferElements(const Shape& shape) const override { return shape[0]; }

  /// Every WORK x BLOCK (64..256) ok config, then one config of each bad
  /// behaviour (WORK 1, BLOCK 128; the launch error with BLOCK 2048). The best
  /// config is therefore an ok one with WORK 1.
  std::vector<Config> Space() const override {
    std::vector<Config> space;
    for (int64_t work : params_[1].values) {
      for (int64_t block : {64, 128, 256}) {
        space.push_back({{"BEHAVIOR", 0}, {"WORK", work}, {"BLOCK", block}});
      }
    }
    for (int64_t behavior = 1; behavior <= 6; ++behavior) {
      space.push_back({{"BEHAVIOR", behavior},
                       {"WORK", 1},
                       {"BLOCK", behavior == 4 ? kLaunchErrorBlock : 128}});
    }
    return space;
  }

  /// Only the parameter values are checked: the bad configs must reach the GPU.
  absl::Status Check(const Config& config, const v1::Device&) const override {
    return CheckParams(config);
  }

  /// "fault_test_<behavior>_w<WORK>_b<BLOCK>", e.g. "fault_test_hang_w1_b128".
  std::string ConfigName(const Config& config) const override {
    static constexpr const char* kNames[] = {"ok",           "wrong",        "fault",
                                             "hang",         "launch_error", "compile_error",
                                             "compile_hang"};
    const int64_t b = config.at("BEHAVIOR");
    return absl::StrCat("fault_test_", b >= 0 && b <= 6 ? kNames[b] : "unknown", "_w",
                        config.at("WORK"), "_b", config.at("BLOCK"));
  }

  /// fault_test<BEHAVIOR,WORK,BLOCK>.
  KernelSource Source(const Config& config) const override {
    return {{"fault_test/fault_test.cuh"},
            absl::StrCat("fault_test<", config.at("BEHAVIOR"), ",", config.at("WORK"), ",",
                         config.at("BLOCK"), ">"),
            {}};
  }

  /// grid = {ceil(N / BLOCK), 1, 1}, block = {BLOCK, 1, 1}.
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                              const v1::Device& /*device*/) const override {
    const int64_t block = config.at("BLOCK");
    v1::LaunchGeometry g;
    for (int64_t v : {(shape[0] + block - 1) / block, int64_t{1}, int64_t{1}}) {
      g.add_grid(static_cast<uint32_t>(v));
    }
    for (int64_t v : {block, int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(v));
    g.set_dynamic_shared_bytes(0);
    return g;
  }

  std::vector<std::string> Arguments() const override {
    return {"int n", "const float* in", "float* out"};
  }

 private:
  std::vector<Param> params_;
};

}  // namespace

const Family& FaultTestFamily() {
  static const FaultTestFamilyImpl family;
  return family;
}

}  // namespace tuned
