/* The launcher of a served kernel in C (tuned/launch_c.h). */
#include "tuned/launch_c.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum {
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEM_ALLOCATION_TYPE_PINNED = 1,
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  DTYPE_UNSPECIFIED = 0, /* tuner.proto DType */
  DTYPE_F32 = 1,
  DTYPE_BF16 = 2,
  DTYPE_F16 = 3,
};

/* ---- the driver ---- */

static TunedDriver driver;
static const TunedDriver* opened;
static pthread_once_t open_once = PTHREAD_ONCE_INIT;

#define RESOLVE(field, name) ((*(void**)(&driver.field) = dlsym(h, name)) != NULL)

static void open_driver(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return;
  if (RESOLVE(ctx_get_current, "cuCtxGetCurrent") &&
      RESOLVE(ctx_push_current, "cuCtxPushCurrent_v2") &&
      RESOLVE(ctx_pop_current, "cuCtxPopCurrent_v2") && RESOLVE(ctx_get_device, "cuCtxGetDevice") &&
      RESOLVE(launch_kernel_ex, "cuLaunchKernelEx") &&
      RESOLVE(memset_d32_async, "cuMemsetD32Async") &&
      RESOLVE(memset_d2d8_async, "cuMemsetD2D8Async") &&
      RESOLVE(memcpy_2d_async, "cuMemcpy2DAsync_v2") &&
      RESOLVE(mem_pool_create, "cuMemPoolCreate") &&
      RESOLVE(mem_pool_set_attribute, "cuMemPoolSetAttribute") &&
      RESOLVE(mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync") &&
      RESOLVE(mem_free_async, "cuMemFreeAsync") && RESOLVE(get_error_name, "cuGetErrorName")) {
    *(void**)(&driver.tensor_map_encode_tiled) = dlsym(h, "cuTensorMapEncodeTiled"); /* may be NULL */
    opened = &driver;
  }
}

const TunedDriver* tuned_driver_open(void) {
  pthread_once(&open_once, open_driver);
  return opened;
}

const char* tuned_launch_error_name(const TunedDriver* d, int result, char* buf, size_t size) {
  if (result == TUNED_LAUNCH_BAD_PLAN) return "TUNED_LAUNCH_BAD_PLAN";
  if (result == TUNED_LAUNCH_NO_DRIVER) return "TUNED_LAUNCH_NO_DRIVER";
  const char* name = NULL;
  if (d && d->get_error_name && d->get_error_name(result, &name) == 0 && name) return name;
  snprintf(buf, size, "CUresult %d", result);
  return buf;
}

/* ---- tensor maps ---- */

static int bad(const char** what, const char* why) {
  *what = why;
  return TUNED_LAUNCH_BAD_PLAN;
}

int tuned_map_make(TunedMapPlan* out, uint32_t param, uint32_t pointer_arg, int dtype,
                   uint32_t rank, const uint64_t* dims, uint32_t stride_count,
                   const uint64_t* strides_bytes, uint32_t box_count, const uint32_t* box,
                   uint32_t swizzle_bytes, uint32_t l2_promotion_bytes, int stage,
                   const char** what) {
  memset(out, 0, sizeof *out);
  out->param = param;
  out->pointer_arg = pointer_arg;
  switch (dtype) {
    case DTYPE_UNSPECIFIED:
    case DTYPE_F32: out->data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, out->element_bytes = 4; break;
    case DTYPE_BF16: out->data_type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, out->element_bytes = 2; break;
    case DTYPE_F16: out->data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16, out->element_bytes = 2; break;
    default: return bad(what, "tensor map: dtype is not f32, bf16 or f16");
  }
  if (rank < 1 || rank > TUNED_LAUNCH_MAX_RANK) return bad(what, "tensor map: rank is not 1 to 5");
  if (stride_count != rank - 1 || box_count != rank) {
    return bad(what, "tensor map: it needs rank - 1 strides and rank box sizes");
  }
  out->rank = rank;
  for (uint32_t i = 0; i < rank; ++i) {
    out->dims[i] = dims[i];
    out->box[i] = box[i];
    if (i + 1 < rank) out->strides_bytes[i] = strides_bytes[i];
  }
  switch (swizzle_bytes) { /* CUtensorMapSwizzle */
    case 0: out->swizzle = 0; break;
    case 32: out->swizzle = 1; break;
    case 64: out->swizzle = 2; break;
    case 128: out->swizzle = 3; break;
    default: return bad(what, "tensor map: swizzle is not 0, 32, 64 or 128 bytes");
  }
  switch (l2_promotion_bytes) { /* CUtensorMapL2promotion; 0 means 256 */
    case 64: out->l2_promotion = 1; break;
    case 128: out->l2_promotion = 2; break;
    case 0:
    case 256: out->l2_promotion = 3; break;
    default: return bad(what, "tensor map: L2 promotion is not 0, 64, 128 or 256 bytes");
  }
  if (stage && rank != 2) return bad(what, "tensor map: a staged map has rank 2");
  out->stage = stage != 0;
  return 0;
}

int tuned_plan_check(const TunedLaunchPlan* p, const char** what) {
  if (p->map_count > TUNED_LAUNCH_MAX_MAPS) return bad(what, "launch geometry: too many tensor maps");
  for (uint32_t i = 0; i < p->map_count; ++i) {
    const TunedMapPlan* m = &p->maps[i];
    if (m->param != p->param_count + i || m->pointer_arg >= p->param_count) {
      return bad(what,
                 "tensor maps follow the other parameters in order, each over one of them");
    }
    if (m->rank < 1 || m->rank > TUNED_LAUNCH_MAX_RANK) return bad(what, "tensor map: bad rank");
    if (m->stage && m->rank != 2) return bad(what, "tensor map: a staged map has rank 2");
  }
  return 0;
}

int tuned_tma_takes(const TunedMapPlan* m, uint64_t base, const uint64_t* strides) {
  if (!strides) strides = m->strides_bytes;
  if (base % 16 != 0) return 0;
  for (uint32_t i = 0; i + 1 < m->rank; ++i) {
    if (strides[i] % 16 != 0) return 0;
  }
  return 1;
}

int tuned_stages(const TunedMapPlan* m, uint64_t base) {
  return m->stage && !tuned_tma_takes(m, base, NULL);
}

int tuned_encode_map(const TunedDriver* d, const TunedMapPlan* m, uint64_t base,
                     const uint64_t* strides, void* out, const char** what) {
  static const unsigned int ones[TUNED_LAUNCH_MAX_RANK] = {1, 1, 1, 1, 1};
  if (!strides) strides = m->strides_bytes;
  memset(out, 0, TUNED_TENSOR_MAP_BYTES);
  if (!tuned_tma_takes(m, base, strides)) return 0;
  *what = "cuTensorMapEncodeTiled";
  if (!d->tensor_map_encode_tiled) return TUNED_LAUNCH_NO_DRIVER;
  return d->tensor_map_encode_tiled(out, m->data_type, m->rank, (void*)(uintptr_t)base, m->dims,
                                    strides, m->box, ones, /*interleave none*/ 0, m->swizzle,
                                    m->l2_promotion, /*oob fill none*/ 0);
}

/* ---- staging ---- */

#define MAX_DEVICES 64
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static void* pools[MAX_DEVICES];
static const TunedDriver* pools_driver; /* the driver the pools were made with */

int tuned_staging_pool(const TunedDriver* d, void** pool, const char** what) {
  int device = 0;
  *what = "cuCtxGetDevice";
  int r = d->ctx_get_device(&device);
  if (r != 0) return r;
  if (device < 0 || device >= MAX_DEVICES) return bad(what, "staging pool: device out of range");
  pthread_mutex_lock(&pools_mu);
  if (pools_driver != d) { /* another driver (a test's): its pools are its own */
    memset(pools, 0, sizeof pools);
    pools_driver = d;
  }
  if (!pools[device]) {
    TunedCuMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
    props.locationId = device;
    void* made = NULL;
    *what = "cuMemPoolCreate";
    r = d->mem_pool_create(&made, &props);
    if (r == 0) {
      uint64_t keep = UINT64_MAX;
      *what = "cuMemPoolSetAttribute";
      r = d->mem_pool_set_attribute(made, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    }
    if (r == 0) pools[device] = made;
  }
  *pool = pools[device];
  pthread_mutex_unlock(&pools_mu);
  return r;
}

int tuned_stage_operand(const TunedDriver* d, const TunedMapPlan* m, uint64_t base, void* pool,
                        void* stream, uint64_t* copy, uint64_t* pitch, const char** what) {
  if (m->rank != 2) return bad(what, "tensor map: a staged map has rank 2");
  const uint64_t row = m->dims[0] * m->element_bytes;
  *pitch = (row + 15) / 16 * 16;
  *copy = 0;
  *what = "cuMemAllocFromPoolAsync (staging)";
  int r = d->mem_alloc_from_pool_async(copy, (size_t)(*pitch * m->dims[1]), pool, stream);
  if (r != 0) return r;
  TunedCuMemcpy2D desc;
  memset(&desc, 0, sizeof desc);
  desc.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  desc.srcDevice = base;
  desc.srcPitch = (size_t)m->strides_bytes[0];
  desc.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  desc.dstDevice = *copy;
  desc.dstPitch = (size_t)*pitch;
  desc.WidthInBytes = (size_t)row;
  desc.Height = (size_t)m->dims[1];
  *what = "cuMemcpy2DAsync (staging)";
  r = d->memcpy_2d_async(&desc, stream);
  if (r == 0 && *pitch > row) {
    *what = "cuMemsetD2D8Async (staging)";
    r = d->memset_d2d8_async(*copy + row, (size_t)*pitch, 0, (size_t)(*pitch - row),
                             (size_t)m->dims[1], stream);
  }
  if (r != 0) {
    d->mem_free_async(*copy, stream); /* the copy's error is the one returned */
    *copy = 0;
  }
  return r;
}

/* ---- the launch ---- */

/* The launch with the context current: the maps (staged where asked), the
 * prescaling memset, the kernel, the copies freed. */
static int launch_current(const TunedDriver* d, void* fn, const TunedLaunchPlan* p,
                          void* const* params, const void* const* maps, void* stream,
                          uint64_t zero_ptr, int64_t zero_count, const char** what) {
  /* The maps (64-byte aligned), the parameter array, and each staged
   * operand's copy with the slot that passes its address. */
  _Alignas(64) unsigned char encoded[TUNED_LAUNCH_MAX_MAPS][TUNED_TENSOR_MAP_BYTES];
  void* all[256];
  uint64_t copies[TUNED_LAUNCH_MAX_MAPS] = {0};
  if (p->map_count == 0) { /* the parameters as they are */
    if (zero_count > 0) {
      *what = "cuMemsetD32Async (prescale C)";
      int r = d->memset_d32_async(zero_ptr, 0, (size_t)zero_count, stream);
      if (r != 0) return r;
    }
    TunedCuLaunchConfig config = {p->grid[0],  p->grid[1],  p->grid[2], p->block[0],
                                  p->block[1], p->block[2], p->dynamic_shared_bytes,
                                  stream,      NULL,        0};
    *what = "cuLaunchKernelEx";
    return d->launch_kernel_ex(&config, fn, (void**)params, NULL);
  }
  if (p->param_count + p->map_count > sizeof all / sizeof all[0]) {
    return bad(what, "launch: too many parameters");
  }
  memcpy(all, params, p->param_count * sizeof(void*));
  int r = 0;
  void* pool = NULL;
  for (uint32_t i = 0; i < p->map_count && r == 0; ++i) {
    const TunedMapPlan* m = &p->maps[i];
    const uint64_t base = (uint64_t)(uintptr_t)(*(void* const*)params[m->pointer_arg]);
    if (tuned_stages(m, base)) {
      uint64_t pitch = 0;
      if (!pool) r = tuned_staging_pool(d, &pool, what);
      if (r == 0) r = tuned_stage_operand(d, m, base, pool, stream, &copies[i], &pitch, what);
      if (r == 0) {
        all[m->pointer_arg] = &copies[i]; /* the copy in the operand's place */
        r = tuned_encode_map(d, m, copies[i], &pitch, encoded[i], what);
      }
      all[p->param_count + i] = encoded[i];
    } else if (maps && maps[i]) {
      all[p->param_count + i] = (void*)maps[i];
    } else {
      r = tuned_encode_map(d, m, base, NULL, encoded[i], what);
      all[p->param_count + i] = encoded[i];
    }
  }
  if (r == 0 && zero_count > 0) {
    *what = "cuMemsetD32Async (prescale C)";
    r = d->memset_d32_async(zero_ptr, 0, (size_t)zero_count, stream);
  }
  if (r == 0) {
    TunedCuLaunchConfig config = {p->grid[0],  p->grid[1],  p->grid[2], p->block[0],
                                  p->block[1], p->block[2], p->dynamic_shared_bytes,
                                  stream,      NULL,        0};
    *what = "cuLaunchKernelEx";
    r = d->launch_kernel_ex(&config, fn, all, NULL);
  }
  for (uint32_t i = 0; i < p->map_count; ++i) {
    if (!copies[i]) continue;
    int freed = d->mem_free_async(copies[i], stream);
    if (r == 0 && freed != 0) *what = "cuMemFreeAsync (staging)", r = freed;
  }
  return r;
}

int tuned_launch(const TunedDriver* d, void* fn, void* ctx, const TunedLaunchPlan* plan,
                 void* const* params, const void* const* maps, void* stream, uint64_t zero_ptr,
                 int64_t zero_count, const char** what) {
  if (!d) {
    *what = "no CUDA driver (libcuda.so.1)";
    return TUNED_LAUNCH_NO_DRIVER;
  }
  int pushed = 0;
  if (ctx) {
    void* current = NULL;
    if (d->ctx_get_current(&current) != 0 || current != ctx) {
      *what = "cuCtxPushCurrent";
      int r = d->ctx_push_current(ctx);
      if (r != 0) return r;
      pushed = 1;
    }
  }
  int r = launch_current(d, fn, plan, params, maps, stream, zero_ptr, zero_count, what);
  if (pushed) {
    void* popped = NULL;
    int p = d->ctx_pop_current(&popped);
    if (r == 0 && p != 0) *what = "cuCtxPopCurrent", r = p;
  }
  return r;
}
