// The C launcher (core/launch_c.c, tuned/launch_c.h) on a stand-in driver:
// what it asks the driver for a launch (context, prescaling, tensor maps,
// staging, parameters), and its C++ face's conversion of a family's
// geometry (LaunchPlan). No GPU.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "tuned/launch.h"
#include "tuned/launch_c.h"

namespace tuned {
namespace {

// The declared driver types are cuda.h's.
static_assert(sizeof(TunedCuLaunchConfig) == sizeof(CUlaunchConfig));
static_assert(offsetof(TunedCuLaunchConfig, hStream) == offsetof(CUlaunchConfig, hStream));
static_assert(offsetof(TunedCuLaunchConfig, numAttrs) == offsetof(CUlaunchConfig, numAttrs));
static_assert(sizeof(TunedCuMemcpy2D) == sizeof(CUDA_MEMCPY2D));
static_assert(offsetof(TunedCuMemcpy2D, dstDevice) == offsetof(CUDA_MEMCPY2D, dstDevice));
static_assert(offsetof(TunedCuMemcpy2D, Height) == offsetof(CUDA_MEMCPY2D, Height));
static_assert(sizeof(TunedCuMemPoolProps) == sizeof(CUmemPoolProps));
static_assert(offsetof(TunedCuMemPoolProps, usage) == offsetof(CUmemPoolProps, usage));
static_assert(sizeof(TunedCuMemPoolProps::reserved) == sizeof(CUmemPoolProps::reserved));

// What the stand-in driver saw.
struct Seen {
  void* current = reinterpret_cast<void*>(0xC0);
  std::vector<std::string> calls;
  TunedCuLaunchConfig config{};
  std::vector<uint64_t> params;            // each launch parameter's first 8 bytes
  std::vector<std::vector<uint8_t>> maps;  // the 128 bytes of each map parameter
  int map_params = 0;                      // the parameters before the maps
  int map_count = 0;                       // the maps after them
  struct Encode {
    int dtype, swizzle, l2;
    unsigned rank;
    uint64_t base;
    std::vector<uint64_t> dims, strides;
    std::vector<unsigned> box;
  };
  std::vector<Encode> encodes;
  std::vector<TunedCuMemcpy2D> copies;
  int pools = 0;
  int launch_result = 0;
  uint64_t next_alloc = 0x40000000;
};
Seen* seen = nullptr;

const TunedDriver kFake = {
    [](void** ctx) { *ctx = seen->current; return 0; },
    [](void* ctx) { seen->calls.push_back("push"); seen->current = ctx; return 0; },
    [](void** ctx) { seen->calls.push_back("pop"); *ctx = seen->current; seen->current = nullptr; return 0; },
    [](int* device) { *device = 0; return 0; },
    [](const TunedCuLaunchConfig* c, void*, void** params, void**) {
      seen->calls.push_back("launch");
      seen->config = *c;
      for (int i = 0; i < seen->map_params; ++i) {
        uint64_t v = 0;
        std::memcpy(&v, params[i], sizeof v);
        seen->params.push_back(v);
      }
      for (int i = seen->map_params; i < seen->map_params + seen->map_count; ++i) {
        const auto* b = static_cast<const uint8_t*>(params[i]);
        seen->maps.emplace_back(b, b + TUNED_TENSOR_MAP_BYTES);
      }
      return seen->launch_result;
    },
    [](uint64_t ptr, unsigned value, size_t count, void*) {
      seen->calls.push_back("memset " + std::to_string(ptr) + " " + std::to_string(value) + " " +
                            std::to_string(count));
      return 0;
    },
    [](uint64_t ptr, size_t pitch, unsigned char, size_t width, size_t height, void*) {
      seen->calls.push_back("pad " + std::to_string(ptr) + " " + std::to_string(pitch) + " " +
                            std::to_string(width) + " " + std::to_string(height));
      return 0;
    },
    [](const TunedCuMemcpy2D* c, void*) { seen->calls.push_back("copy"); seen->copies.push_back(*c); return 0; },
    [](void** pool, const TunedCuMemPoolProps*) { ++seen->pools; *pool = reinterpret_cast<void*>(0x9000); return 0; },
    [](void*, int, void*) { return 0; },
    [](uint64_t* ptr, size_t bytes, void*, void*) {
      *ptr = seen->next_alloc;
      seen->next_alloc += 0x100000;
      seen->calls.push_back("alloc " + std::to_string(bytes));
      return 0;
    },
    [](uint64_t ptr, void*) { seen->calls.push_back("free " + std::to_string(ptr)); return 0; },
    [](void* map, int dtype, unsigned rank, void* base, const uint64_t* dims, const uint64_t* strides,
       const unsigned* box, const unsigned*, int, int swizzle, int l2, int) {
      seen->encodes.push_back({dtype, swizzle, l2, rank, reinterpret_cast<uint64_t>(base),
                               std::vector<uint64_t>(dims, dims + rank),
                               std::vector<uint64_t>(strides, strides + rank - 1),
                               std::vector<unsigned>(box, box + rank)});
      std::memset(map, 0xA5, TUNED_TENSOR_MAP_BYTES);
      return 0;
    },
    [](int, const char** name) { *name = "CUDA_ERROR_FAKE"; return 0; },
};

class LaunchC : public ::testing::Test {
 protected:
  void SetUp() override { seen = &s_; }
  void TearDown() override { seen = nullptr; }
  Seen s_;
};

// A BF16 map of A (M x K, pitch `pitch` bytes), over parameter 4 as map 8.
TunedMapPlan MapOfA(uint64_t m, uint64_t k, uint64_t pitch, bool stage) {
  const uint64_t dims[] = {k, m}, strides[] = {pitch};
  const uint32_t box[] = {64, 128};
  TunedMapPlan p;
  const char* what = nullptr;
  EXPECT_EQ(tuned_map_make(&p, 8, 4, /*DTYPE_BF16*/ 2, 2, dims, 1, strides, 2, box, 128, 128, stage,
                           &what),
            0)
      << what;
  return p;
}

TunedLaunchPlan Plan(std::vector<TunedMapPlan> maps) {
  TunedLaunchPlan p{};
  for (int i = 0; i < 3; ++i) p.grid[i] = p.block[i] = 1;
  p.grid[0] = 7, p.block[0] = 128, p.dynamic_shared_bytes = 1000, p.param_count = 8;
  p.map_count = maps.size();
  for (size_t i = 0; i < maps.size(); ++i) p.maps[i] = maps[i], p.maps[i].param = 8 + i;
  return p;
}

TEST_F(LaunchC, MapMakeConvertsToTheDriversEnums) {
  TunedMapPlan m = MapOfA(100, 64, 128, false);
  EXPECT_EQ(m.data_type, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(m.element_bytes, 2u);
  EXPECT_EQ(m.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(m.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  const uint64_t dims[] = {4, 4}, strides[] = {16};
  const uint32_t box[] = {4, 4};
  const char* what = nullptr;
  struct Case {
    int dtype;
    uint32_t swizzle, l2, rank, strides, box;
    int stage;
    int want;
    int want_type;
  };
  for (const Case& c : std::vector<Case>{
           {0, 0, 0, 2, 1, 2, 0, 0, CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
           {1, 32, 256, 2, 1, 2, 1, 0, CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
           {3, 64, 64, 2, 1, 2, 0, 0, CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
           {4, 0, 0, 2, 1, 2, 0, TUNED_LAUNCH_BAD_PLAN, 0},   // dtype
           {1, 16, 0, 2, 1, 2, 0, TUNED_LAUNCH_BAD_PLAN, 0},  // swizzle
           {1, 0, 32, 2, 1, 2, 0, TUNED_LAUNCH_BAD_PLAN, 0},  // L2 promotion
           {1, 0, 0, 2, 2, 2, 0, TUNED_LAUNCH_BAD_PLAN, 0},   // strides
           {1, 0, 0, 2, 1, 1, 0, TUNED_LAUNCH_BAD_PLAN, 0},   // box
           {1, 0, 0, 1, 0, 1, 1, TUNED_LAUNCH_BAD_PLAN, 0},   // staged, rank 1
       }) {
    EXPECT_EQ(tuned_map_make(&m, 8, 0, c.dtype, c.rank, dims, c.strides, strides, c.box, box,
                             c.swizzle, c.l2, c.stage, &what),
              c.want)
        << c.dtype << " " << c.swizzle << " " << c.l2;
    if (c.want == 0) {
      EXPECT_EQ(m.data_type, c.want_type);
    }
  }
  EXPECT_EQ(tuned_map_make(&m, 8, 0, 1, 2, dims, 1, strides, 2, box, 0, 0, 0, &what), 0);
  EXPECT_EQ(m.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);  // 0: 256 bytes
}

TEST_F(LaunchC, PlanCheckWantsMapsAfterTheParameters) {
  const char* what = nullptr;
  TunedLaunchPlan p = Plan({MapOfA(64, 64, 128, false)});
  EXPECT_EQ(tuned_plan_check(&p, &what), 0);
  p.maps[0].param = 9;
  EXPECT_EQ(tuned_plan_check(&p, &what), TUNED_LAUNCH_BAD_PLAN);
  p.maps[0].param = 8, p.maps[0].pointer_arg = 8;
  EXPECT_EQ(tuned_plan_check(&p, &what), TUNED_LAUNCH_BAD_PLAN);
  p = Plan({});
  EXPECT_EQ(tuned_plan_check(&p, &what), 0);
}

TEST_F(LaunchC, TmaTakesAlignedBasesAndPitches) {
  const TunedMapPlan m = MapOfA(64, 64, 128, true);
  EXPECT_TRUE(tuned_tma_takes(&m, 0x1000, nullptr));
  EXPECT_FALSE(tuned_tma_takes(&m, 0x1008, nullptr));
  const uint64_t odd[] = {74};
  EXPECT_FALSE(tuned_tma_takes(&m, 0x1000, odd));
  EXPECT_FALSE(tuned_stages(&m, 0x1000));
  EXPECT_TRUE(tuned_stages(&m, 0x1002));
  const TunedMapPlan no_stage = MapOfA(64, 64, 128, false);
  EXPECT_FALSE(tuned_stages(&no_stage, 0x1002));
}

// Without maps: the parameters as given, the geometry, the stream; the
// context pushed only where another is current; C zeroed before the kernel.
TEST_F(LaunchC, LaunchesWithTheGeometryAndPushesOnlyAnotherContext) {
  s_.map_params = 8;
  const TunedLaunchPlan p = Plan({});
  uint64_t values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  void* params[8];
  for (int i = 0; i < 8; ++i) params[i] = &values[i];
  void* stream = reinterpret_cast<void*>(0x5);
  const char* what = nullptr;
  ASSERT_EQ(tuned_launch(&kFake, nullptr, reinterpret_cast<void*>(0xC0), &p, params, nullptr,
                         stream, 0x7000, 12, &what),
            0);
  EXPECT_EQ(s_.calls, (std::vector<std::string>{"memset 28672 0 12", "launch"}));
  EXPECT_EQ(s_.params, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s_.config.gridDimX, 7u);
  EXPECT_EQ(s_.config.blockDimX, 128u);
  EXPECT_EQ(s_.config.gridDimY * s_.config.gridDimZ * s_.config.blockDimY * s_.config.blockDimZ, 1u);
  EXPECT_EQ(s_.config.sharedMemBytes, 1000u);
  EXPECT_EQ(s_.config.hStream, stream);
  s_.calls.clear();
  s_.current = reinterpret_cast<void*>(0xC1);
  ASSERT_EQ(tuned_launch(&kFake, nullptr, reinterpret_cast<void*>(0xC0), &p, params, nullptr,
                         stream, 0, 0, &what),
            0);
  EXPECT_EQ(s_.calls, (std::vector<std::string>{"push", "launch", "pop"}));
  s_.launch_result = 700;
  EXPECT_EQ(tuned_launch(&kFake, nullptr, nullptr, &p, params, nullptr, stream, 0, 0, &what), 700);
  EXPECT_STREQ(what, "cuLaunchKernelEx");
  char buf[32];
  EXPECT_STREQ(tuned_launch_error_name(&kFake, 700, buf, sizeof buf), "CUDA_ERROR_FAKE");
  EXPECT_STREQ(tuned_launch_error_name(nullptr, 700, buf, sizeof buf), "CUresult 700");
}

// A map over an aligned operand: encoded with the map's fields and passed
// after the parameters; over an unaligned one that is not staged: zeros, no
// encode; the caller's cached encoding where given.
TEST_F(LaunchC, EncodesMapsAfterTheParameters) {
  s_.map_params = 8, s_.map_count = 1;
  const TunedLaunchPlan p = Plan({MapOfA(100, 64, 128, false)});
  uint64_t values[8] = {100, 200, 64, 0, 0x10000, 0x20000, 0, 0x30000};
  void* params[8];
  for (int i = 0; i < 8; ++i) params[i] = &values[i];
  const char* what = nullptr;
  ASSERT_EQ(tuned_launch(&kFake, nullptr, nullptr, &p, params, nullptr, nullptr, 0, 0, &what), 0);
  ASSERT_EQ(s_.encodes.size(), 1u);
  EXPECT_EQ(s_.encodes[0].base, 0x10000u);
  EXPECT_EQ(s_.encodes[0].dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(s_.encodes[0].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(s_.encodes[0].l2, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(s_.encodes[0].dims, (std::vector<uint64_t>{64, 100}));
  EXPECT_EQ(s_.encodes[0].strides, (std::vector<uint64_t>{128}));
  EXPECT_EQ(s_.encodes[0].box, (std::vector<unsigned>{64, 128}));
  ASSERT_EQ(s_.maps.size(), 1u);
  EXPECT_EQ(s_.maps[0], std::vector<uint8_t>(128, 0xA5));
  values[4] = 0x10004;  // TMA cannot take it; not staged: zeros
  ASSERT_EQ(tuned_launch(&kFake, nullptr, nullptr, &p, params, nullptr, nullptr, 0, 0, &what), 0);
  EXPECT_EQ(s_.encodes.size(), 1u);
  EXPECT_EQ(s_.maps[1], std::vector<uint8_t>(128, 0));
  alignas(64) uint8_t cached[128];
  std::memset(cached, 0x3C, sizeof cached);
  const void* maps[] = {cached};
  values[4] = 0x10000;
  ASSERT_EQ(tuned_launch(&kFake, nullptr, nullptr, &p, params, maps, nullptr, 0, 0, &what), 0);
  EXPECT_EQ(s_.encodes.size(), 1u);
  EXPECT_EQ(s_.maps[2], std::vector<uint8_t>(128, 0x3C));
}

// A staged operand: copied into the pool with 16-byte rows (padding zeroed),
// the copy passed in its place and under its map, freed after the kernel,
// whether or not it ran; the pool made once.
TEST_F(LaunchC, StagesAnOperandTmaCannotTake) {
  s_.map_params = 8, s_.map_count = 1;
  const TunedLaunchPlan p = Plan({MapOfA(5, 37, 74, true)});  // 37 bf16: 74-byte rows
  uint64_t values[8] = {5, 200, 37, 0, 0x10000, 0x20000, 0, 0x30000};
  void* params[8];
  for (int i = 0; i < 8; ++i) params[i] = &values[i];
  void* stream = reinterpret_cast<void*>(0x5);
  const char* what = nullptr;
  ASSERT_EQ(tuned_launch(&kFake, nullptr, nullptr, &p, params, nullptr, stream, 0, 0, &what), 0);
  const std::string copy = std::to_string(0x40000000);
  EXPECT_EQ(s_.calls, (std::vector<std::string>{"alloc 400", "copy",
                                                "pad " + std::to_string(0x40000000 + 74) + " 80 6 5",
                                                "launch", "free " + copy}));
  ASSERT_EQ(s_.copies.size(), 1u);
  EXPECT_EQ(s_.copies[0].srcDevice, 0x10000u);
  EXPECT_EQ(s_.copies[0].srcPitch, 74u);
  EXPECT_EQ(s_.copies[0].dstPitch, 80u);
  EXPECT_EQ(s_.copies[0].WidthInBytes, 74u);
  EXPECT_EQ(s_.copies[0].Height, 5u);
  EXPECT_EQ(s_.params[4], 0x40000000u);  // the copy in A's place
  EXPECT_EQ(values[4], 0x10000u);        // the caller's value untouched
  ASSERT_EQ(s_.encodes.size(), 1u);
  EXPECT_EQ(s_.encodes[0].base, 0x40000000u);
  EXPECT_EQ(s_.encodes[0].strides, (std::vector<uint64_t>{80}));
  s_.calls.clear();
  s_.launch_result = 1;
  EXPECT_EQ(tuned_launch(&kFake, nullptr, nullptr, &p, params, nullptr, stream, 0, 0, &what), 1);
  EXPECT_EQ(s_.calls.back(), "free " + std::to_string(0x40100000));
  EXPECT_EQ(s_.pools, 1);
}

// The C++ face: a geometry (tuner.proto) becomes the C launcher's plan, its
// errors INVALID_ARGUMENT.
TEST(LaunchPlan, ConvertsAGeometry) {
  v1::LaunchGeometry g;
  for (uint32_t v : {4u, 2u, 1u}) g.add_grid(v);
  for (uint32_t v : {256u, 1u, 1u}) g.add_block(v);
  g.set_dynamic_shared_bytes(99000);
  g.set_prescale_output(true);
  v1::TensorMap* m = g.add_tensor_maps();
  m->set_param(8), m->set_pointer_arg(4), m->set_dtype(v1::DTYPE_F16), m->set_swizzle_bytes(64);
  for (uint64_t d : {64u, 32u}) m->add_dims(d);
  m->add_strides_bytes(128);
  for (uint32_t b : {32u, 16u}) m->add_box(b);
  auto p = LaunchPlan(g);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->grid[0] * p->grid[1] * p->grid[2], 8u);
  EXPECT_EQ(p->block[0], 256u);
  EXPECT_EQ(p->dynamic_shared_bytes, 99000u);
  EXPECT_TRUE(p->prescale_output);
  EXPECT_EQ(p->param_count, 8u);
  ASSERT_EQ(p->map_count, 1u);
  EXPECT_EQ(p->maps[0].data_type, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(p->maps[0].swizzle, CU_TENSOR_MAP_SWIZZLE_64B);
  m->set_swizzle_bytes(48);
  EXPECT_EQ(LaunchPlan(g).status().code(), absl::StatusCode::kInvalidArgument);
  m->set_swizzle_bytes(64);
  m->set_pointer_arg(9);
  EXPECT_EQ(LaunchPlan(g).status().code(), absl::StatusCode::kInvalidArgument);
  g.clear_grid();
  EXPECT_EQ(LaunchPlan(g).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LaunchStatus(2, "x").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(LaunchStatus(TUNED_LAUNCH_BAD_PLAN, "x").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tuned
