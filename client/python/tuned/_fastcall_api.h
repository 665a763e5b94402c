/* tuned._fastcall's C API for tuned._torchcall (C++, built against torch):
 * the capsule "tuned._fastcall._api" holds a FastcallApi. Included by both
 * tuned/_fastcall.c and tuned/_torchcall.cpp, so that its layout has one
 * home. Needs Python.h first. */
#ifndef TUNED_FASTCALL_API_H_
#define TUNED_FASTCALL_API_H_

typedef struct {
  /* A plan's row-major C shape (m rows, n columns): 0 with *m, *n set; -1
   * with a Python error set where `plan` is not one. */
  int (*plan_shape)(PyObject* plan, long long* m, long long* n);
  /* The plan's GEMM on b, a, c (device addresses) on `stream` with
   * `workspace` (0: none): 0, or the failed step's status with *what naming
   * it (as tuned._fastcall.gemm); INT_MIN with a Python error set where
   * `plan` is not one. */
  int (*run)(PyObject* plan, const void* b, const void* a, void* c, void* stream, void* workspace,
             const char** what);
  /* The launch of `fn` (loaded into context `ctx`) on a grid of dims[0..2]
   * blocks of dims[3..5] threads with dims[6] bytes of dynamic shared
   * memory, with the parameters `params`, on `stream`, zero_count > 0
   * 32-bit words at zero_ptr set to zero first: 0, or the failed step's
   * CUresult with *what naming it; INT_MIN with a Python error set where
   * init() found no driver. */
  int (*launch)(void* fn, void* ctx, const unsigned int dims[7], void** params, void* stream,
                unsigned long long zero_ptr, long long zero_count, const char** what);
  /* Whether `stream` is being captured into a CUDA graph
   * (cuStreamIsCapturing): 0 with *capturing set, or the CUresult; -1
   * where init() found no driver. Needs no Python state (callable without
   * the GIL). */
  int (*is_capturing)(void* stream, int* capturing);
  /* cuTensorMapEncodeTiled into the 64-byte aligned 128 bytes at `map`: a
   * tensor map of CUtensorMapDataType `dtype` and `rank` over `base` (dims,
   * strides in bytes of dims 1.., box), element strides 1, no interleave,
   * CUtensorMapSwizzle `swizzle`, CUtensorMapL2promotion `l2`, out-of-range
   * reads zero: 0, or the CUresult; -1 where the driver lacks it. Needs no
   * Python state. */
  int (*encode_tiled)(void* map, int dtype, unsigned int rank, void* base,
                      const unsigned long long* dims, const unsigned long long* strides,
                      const unsigned int* box, int swizzle, int l2);
} FastcallApi;

#endif /* TUNED_FASTCALL_API_H_ */
