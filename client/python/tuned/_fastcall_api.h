/* tuned._fastcall's C API for tuned._torchcall (C++, built against torch):
 * the capsule "tuned._fastcall._api" holds a FastcallApi. Included by both
 * tuned/_fastcall.c and tuned/_torchcall.cpp, so that its layout has one
 * home. Needs Python.h first. */
#ifndef TUNED_FASTCALL_API_H_
#define TUNED_FASTCALL_API_H_

#include "tuned/launch_c.h"

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
  /* The launch plan in `capsule` (tuned._fastcall.launch_plan's) copied
   * into *out: 0, or -1 with a Python error set where it is not one. */
  int (*plan_of)(PyObject* capsule, TunedLaunchPlan* out);
  /* The C launcher's launch of `plan` (tuned_launch: the tensor maps
   * encoded over the parameters' pointers, staged where the plan asks),
   * with `driver` (a TunedDriver, a stand-in's; NULL: libcuda's): 0, or
   * the failed step's status with *what naming it. Needs no Python state. */
  int (*launch_plan)(const TunedDriver* driver, void* fn, void* ctx, const TunedLaunchPlan* plan,
                     void* const* params, void* stream, unsigned long long zero_ptr,
                     long long zero_count, const char** what);
  /* Whether a launch of `plan` over `base` stages map `map`'s operand
   * (tuned_stages; 0 for no such map). Needs no Python state. */
  int (*stages)(const TunedLaunchPlan* plan, unsigned int map, unsigned long long base);
} FastcallApi;

#endif /* TUNED_FASTCALL_API_H_ */
