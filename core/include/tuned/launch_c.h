/* The launcher of a served kernel, in C: one home for the rules of a
 * launch, called by the C++ client library (core/launch.cc, client/) and by
 * the Python package's extension (client/python/tuned/_fastcall.c; its
 * setup.py compiles core/launch_c.c into it).
 *
 * It speaks the CUDA driver API through a table of functions (TunedDriver):
 * tuned_driver_open() fills it from libcuda.so.1 with dlopen (the copy
 * already in the process first), so that no CUDA header or library is
 * needed to build it; a test fills it with fakes. The few driver types it
 * needs are declared here as cuda.h (CUDA 12 and 13) defines them
 * (tests/launch_c_test.cc checks their layouts against cuda.h).
 *
 * What it does for a launch (tuned_launch): makes the kernel's context
 * current where another one is (pushed, then popped), sets C to zero first
 * where the kernel adds into it (LaunchGeometry.prescale_output with
 * beta == 0; beta != 0 is the caller's cuBLAS scaling), encodes the tensor
 * maps over the operands (tuned_encode_map), staging the operands TMA cannot
 * take where the map asks (tuned_stage_operand), passes them after the
 * other parameters, and launches with cuLaunchKernelEx.
 *
 * Every function returns 0 or the failed driver call's CUresult (a negative
 * TUNED_LAUNCH_* code for a malformed plan), with *what naming the step. */
#ifndef TUNED_LAUNCH_C_H_
#define TUNED_LAUNCH_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tensor maps a launch takes at most, and a map's rank at most (cuTensorMapEncodeTiled's 5). */
#define TUNED_LAUNCH_MAX_MAPS 8
#define TUNED_LAUNCH_MAX_RANK 5
/* A CUtensorMap's size in bytes (64-byte aligned). */
#define TUNED_TENSOR_MAP_BYTES 128

/* The launcher's own errors (negative, apart from CUresult's). */
enum {
  TUNED_LAUNCH_BAD_PLAN = -1,  /* a malformed geometry or tensor map */
  TUNED_LAUNCH_NO_DRIVER = -2, /* the driver lacks a function the launch needs */
};

/* CUlaunchConfig (cuda.h), cuLaunchKernelEx's first argument. */
typedef struct {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void* hStream;
  void* attrs;
  unsigned int numAttrs;
} TunedCuLaunchConfig;

/* CUDA_MEMCPY2D (cuda.h), cuMemcpy2DAsync's description of a copy. */
typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void* srcHost;
  uint64_t srcDevice;
  void* srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void* dstHost;
  uint64_t dstDevice;
  void* dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} TunedCuMemcpy2D;

/* CUmemPoolProps (cuda.h), cuMemPoolCreate's description of a pool. */
typedef struct {
  int allocType, handleTypes;
  int locationType, locationId;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} TunedCuMemPoolProps;

/* The driver functions the launcher calls (cuda.h's, the enums as ints,
 * CUdeviceptr as uint64_t). tensor_map_encode_tiled may be NULL (a driver
 * older than CUDA 12): a launch with tensor maps then fails. */
typedef struct {
  int (*ctx_get_current)(void** ctx);
  int (*ctx_push_current)(void* ctx);
  int (*ctx_pop_current)(void** ctx);
  int (*ctx_get_device)(int* device);
  int (*launch_kernel_ex)(const TunedCuLaunchConfig* config, void* fn, void** params, void** extra);
  int (*memset_d32_async)(uint64_t ptr, unsigned int value, size_t count, void* stream);
  int (*memset_d2d8_async)(uint64_t ptr, size_t pitch, unsigned char value, size_t width,
                           size_t height, void* stream);
  int (*memcpy_2d_async)(const TunedCuMemcpy2D* copy, void* stream);
  int (*mem_pool_create)(void** pool, const TunedCuMemPoolProps* props);
  int (*mem_pool_set_attribute)(void* pool, int attr, void* value);
  int (*mem_alloc_from_pool_async)(uint64_t* ptr, size_t bytes, void* pool, void* stream);
  int (*mem_free_async)(uint64_t ptr, void* stream);
  int (*tensor_map_encode_tiled)(void* map, int dtype, unsigned int rank, void* base,
                                 const uint64_t* dims, const uint64_t* strides,
                                 const unsigned int* box, const unsigned int* element_strides,
                                 int interleave, int swizzle, int l2_promotion, int oob_fill);
  int (*get_error_name)(int result, const char** name); /* cuGetErrorName */
} TunedDriver;

/* The driver of libcuda.so.1 (the process's copy where one is loaded),
 * resolved once: NULL where the library or one of the functions (but
 * cuTensorMapEncodeTiled) is missing. Thread-safe. */
const TunedDriver* tuned_driver_open(void);

/* The name of a status the launcher returned: cuGetErrorName's for a
 * CUresult ("CUDA_ERROR_..."), "TUNED_LAUNCH_BAD_PLAN" or
 * "TUNED_LAUNCH_NO_DRIVER" for its own, "CUresult <n>" where the driver
 * has no name for it (written into `buf` of `size` bytes). */
const char* tuned_launch_error_name(const TunedDriver* d, int result, char* buf, size_t size);

/* A tensor map's template (tuner.proto TensorMap, checked and converted to
 * the driver's enums by tuned_map_make): the map passed as kernel
 * parameter `param`, over the operand of pointer parameter `pointer_arg`. */
typedef struct {
  uint32_t param, pointer_arg;
  int32_t data_type;      /* CUtensorMapDataType */
  uint32_t element_bytes; /* 4 for FLOAT32, 2 for BFLOAT16 and FLOAT16 */
  uint32_t rank;
  uint64_t dims[TUNED_LAUNCH_MAX_RANK];
  uint64_t strides_bytes[TUNED_LAUNCH_MAX_RANK - 1];
  uint32_t box[TUNED_LAUNCH_MAX_RANK];
  int32_t swizzle;      /* CUtensorMapSwizzle */
  int32_t l2_promotion; /* CUtensorMapL2promotion */
  int32_t stage;        /* TensorMap.stage: copy the operand where TMA cannot take it */
} TunedMapPlan;

/* Fills *out from a TensorMap's fields as tuner.proto holds them: `dtype` a
 * tuner.proto DType (DTYPE_UNSPECIFIED 0 or DTYPE_F32: FLOAT32; DTYPE_BF16;
 * DTYPE_F16), `rank` dims and box, rank - 1 strides in bytes, a swizzle of
 * 0, 32, 64 or 128 bytes, an L2 promotion of 0 (256), 64, 128 or 256 bytes;
 * a staged map of rank 2. 0, or TUNED_LAUNCH_BAD_PLAN with *what saying
 * which field is wrong. */
int tuned_map_make(TunedMapPlan* out, uint32_t param, uint32_t pointer_arg, int dtype,
                   uint32_t rank, const uint64_t* dims, uint32_t stride_count,
                   const uint64_t* strides_bytes, uint32_t box_count, const uint32_t* box,
                   uint32_t swizzle_bytes, uint32_t l2_promotion_bytes, int stage,
                   const char** what);

/* A served kernel's launch, checked once (tuned_plan_check): the geometry,
 * whether C is prescaled, the parameters other than the tensor maps
 * (`param_count`), and the maps, passed as parameters param_count.. in
 * order. */
typedef struct {
  uint32_t grid[3], block[3];
  uint32_t dynamic_shared_bytes;
  int32_t prescale_output; /* LaunchGeometry.prescale_output: the kernel adds into C */
  uint32_t param_count;
  uint32_t map_count;
  TunedMapPlan maps[TUNED_LAUNCH_MAX_MAPS];
} TunedLaunchPlan;

/* Checks `plan`'s tensor maps (passed after the other parameters, in
 * order, each over one of those: maps[i].param == param_count + i,
 * pointer_arg < param_count; a staged one of rank 2). 0, or
 * TUNED_LAUNCH_BAD_PLAN with *what saying why. The geometry is the
 * driver's to refuse (cuLaunchKernelEx). */
int tuned_plan_check(const TunedLaunchPlan* plan, const char** what);

/* Whether TMA takes map `m` over device address `base` with these strides
 * (`strides` NULL: the map's): base 16-byte aligned and every stride a
 * multiple of 16 bytes (cuTensorMapEncodeTiled's rules). */
int tuned_tma_takes(const TunedMapPlan* m, uint64_t base, const uint64_t* strides);

/* Whether a launch over `base` stages map m's operand: m->stage and TMA does not take it. */
int tuned_stages(const TunedMapPlan* m, uint64_t base);

/* Encodes map `m` over `base` (strides in bytes `strides`, NULL: the map's)
 * into the 64-byte aligned TUNED_TENSOR_MAP_BYTES at `out`:
 * cuTensorMapEncodeTiled with element strides 1, no interleave, the map's
 * swizzle and L2 promotion, out-of-range reads zero; where TMA cannot take
 * it (tuned_tma_takes) the bytes are zero, and the kernel, testing the same,
 * copies without TMA. 0, or the CUresult (TUNED_LAUNCH_NO_DRIVER without
 * cuTensorMapEncodeTiled). */
int tuned_encode_map(const TunedDriver* d, const TunedMapPlan* m, uint64_t base,
                     const uint64_t* strides, void* out, const char** what);

/* The staging pool of the current context's device: a pool of device memory
 * created once per device for the process (cuMemPoolCreate), its memory
 * kept between launches (release threshold unbounded), so that a staged
 * launch allocates in stream order without a cuMemAlloc. */
int tuned_staging_pool(const TunedDriver* d, void** pool, const char** what);

/* Copies the rank-2 operand of map `m` at `base` (dims[1] rows of dims[0]
 * elements, pitch strides_bytes[0]) into a workspace of `pool` whose rows
 * are padded to a multiple of 16 bytes (the padding zeroed), on `stream`:
 * *copy its address, *pitch its row pitch in bytes. The caller frees it with
 * cuMemFreeAsync on `stream` after the kernel; on failure nothing stays
 * allocated. */
int tuned_stage_operand(const TunedDriver* d, const TunedMapPlan* m, uint64_t base, void* pool,
                        void* stream, uint64_t* copy, uint64_t* pitch, const char** what);

/* Launches `fn` (a CUfunction, or a CUkernel of the current context) with
 * `plan` on `stream`. `params`: pointers to the plan's param_count
 * parameters, in the kernel's order (the maps are added here; a plan
 * without maps passes `params` as it is, whatever param_count says). `ctx`: the
 * context `fn` belongs to, pushed for the launch where another one is
 * current (NULL: the current one). `zero_ptr`, `zero_count`: where
 * zero_count > 0, that many 32-bit words at zero_ptr are set to zero first,
 * on the stream (the prescaling of C for beta == 0). `maps`: NULL, or per
 * map the caller's encoding over its operand (a cache; a staged map is
 * encoded here over its copy all the same). A staged operand's copy is
 * passed in the operand's place and freed after the kernel in stream order,
 * whether or not it ran. */
int tuned_launch(const TunedDriver* d, void* fn, void* ctx, const TunedLaunchPlan* plan,
                 void* const* params, const void* const* maps, void* stream, uint64_t zero_ptr,
                 int64_t zero_count, const char** what);

#ifdef __cplusplus
}
#endif

#endif /* TUNED_LAUNCH_C_H_ */
