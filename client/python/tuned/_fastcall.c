/* tuned._fastcall: the launches of tuned.Kernel and tuned.matmul in C.
 *
 * Through ctypes a launch converts each argument and a cuBLAS SGEMM takes 14
 * of them: a call cost several us of the CPU more than torch.matmul's own.
 * Here each is one call of a CPython function. Optional: the package falls
 * back to ctypes and torch where this module is not built (no C compiler or
 * Python headers at install) or its libraries are missing.
 *
 * The CUDA driver (libcuda.so.1) and cuBLAS (libcublas.so.13 or .12, the one
 * torch has loaded where it has) are opened with dlopen at init(); no CUDA
 * header is needed to build, so the few types and constants used are
 * declared here, as cuda.h and cublas_api.h (CUDA 12 and 13) define them.
 * Every call's status is returned to the caller, which raises (tuned/kernel.py
 * names a CUresult with cuGetErrorName, a cublasStatus_t with
 * cublasGetStatusName): a failure is reported, never ignored.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>

typedef int CUresult;
typedef void* CUcontext;
typedef void* CUstream;
typedef void* CUfunction;
typedef unsigned long long CUdeviceptr;

/* CUlaunchConfig (cuda.h); tuned/kernel.py's _LaunchConfig has the same fields. */
typedef struct {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void* attrs;
  unsigned int numAttrs;
} LaunchConfig;

static CUresult (*cuCtxGetCurrent_)(CUcontext*);
static CUresult (*cuCtxPushCurrent_)(CUcontext);
static CUresult (*cuCtxPopCurrent_)(CUcontext*);
static CUresult (*cuLaunchKernelEx_)(const LaunchConfig*, CUfunction, void**, void**);
static CUresult (*cuMemsetD32Async_)(CUdeviceptr, unsigned int, size_t, CUstream);

typedef int cublasStatus_t;
typedef void* cublasHandle_t;
static cublasStatus_t (*cublasCreate_)(cublasHandle_t*);
static cublasStatus_t (*cublasSetStream_)(cublasHandle_t, CUstream);
static cublasStatus_t (*cublasSetMathMode_)(cublasHandle_t, int);
static cublasStatus_t (*cublasSgemm_)(cublasHandle_t, int, int, int, int, int, const float*,
                                      const float*, int, const float*, int, const float*, float*,
                                      int);
static const char* (*cublasGetStatusName_)(cublasStatus_t);

static void* libcuda;
static void* libcublas;

/* A library already in the process (torch's copy) before a fresh load. */
static void* open_library(const char* const* names) {
  for (const char* const* n = names; *n; ++n) {
    void* h = dlopen(*n, RTLD_NOW | RTLD_NOLOAD);
    if (h) return h;
  }
  for (const char* const* n = names; *n; ++n) {
    void* h = dlopen(*n, RTLD_NOW);
    if (h) return h;
  }
  return NULL;
}

#define RESOLVE(lib, var, name) (*(void**)(&var) = dlsym(lib, name)) != NULL

/* init() -> (driver, cublas): whether the launches and the cuBLAS GEMM are
 * available (their libraries and every symbol found). Idempotent. */
static PyObject* init(PyObject* self, PyObject* unused) {
  static const char* const cuda_names[] = {"libcuda.so.1", NULL};
  static const char* const cublas_names[] = {"libcublas.so.13", "libcublas.so.12", NULL};
  if (!libcuda) {
    void* h = open_library(cuda_names);
    if (h && RESOLVE(h, cuCtxGetCurrent_, "cuCtxGetCurrent") &&
        RESOLVE(h, cuCtxPushCurrent_, "cuCtxPushCurrent_v2") &&
        RESOLVE(h, cuCtxPopCurrent_, "cuCtxPopCurrent_v2") &&
        RESOLVE(h, cuLaunchKernelEx_, "cuLaunchKernelEx") &&
        RESOLVE(h, cuMemsetD32Async_, "cuMemsetD32Async")) {
      libcuda = h;
    }
  }
  if (!libcublas) {
    void* h = open_library(cublas_names);
    if (h && RESOLVE(h, cublasCreate_, "cublasCreate_v2") &&
        RESOLVE(h, cublasSetStream_, "cublasSetStream_v2") &&
        RESOLVE(h, cublasSetMathMode_, "cublasSetMathMode") &&
        RESOLVE(h, cublasSgemm_, "cublasSgemm_v2") &&
        RESOLVE(h, cublasGetStatusName_, "cublasGetStatusName")) {
      libcublas = h;
    }
  }
  return Py_BuildValue("(OO)", libcuda ? Py_True : Py_False, libcublas ? Py_True : Py_False);
}

/* Makes `ctx` current where another context is (pushed; *pushed set, for
 * pop_if_pushed). Returns the CUresult of the push (0 where none was needed). */
static CUresult push_unless_current(CUcontext ctx, int* pushed) {
  CUcontext current = NULL;
  *pushed = 0;
  if (cuCtxGetCurrent_(&current) == 0 && current == ctx) return 0;
  CUresult r = cuCtxPushCurrent_(ctx);
  *pushed = r == 0;
  return r;
}

/* Pops the context push_unless_current pushed, if it did; its CUresult. */
static CUresult pop_if_pushed(int pushed) {
  CUcontext popped;
  return pushed ? cuCtxPopCurrent_(&popped) : 0;
}

/* A failed step: (what, status) for the caller to raise. */
static PyObject* failed(const char* what, int status) { return Py_BuildValue("(si)", what, status); }

/* launch(fn, ctx, config, params, stream, zero_ptr, zero_count) -> None, or
 * (what, CUresult) where a step failed.
 * fn: the CUfunction; ctx: the CUcontext it was loaded into, made current
 * (pushed, then popped) only where another one is; config: the address of
 * a CUlaunchConfig whose hStream is set to `stream` (a CUstream handle);
 * params: the address of the kernel's parameter array; zero_ptr, zero_count:
 * where zero_count > 0, that many 32-bit words at device address zero_ptr
 * are set to zero first, on the same stream (a kernel adding into C). */
static PyObject* launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError, "launch takes 7 arguments");
    return NULL;
  }
  void* fn = PyLong_AsVoidPtr(args[0]);
  void* ctx = PyLong_AsVoidPtr(args[1]);
  LaunchConfig* config = (LaunchConfig*)PyLong_AsVoidPtr(args[2]);
  void** params = (void**)PyLong_AsVoidPtr(args[3]);
  void* stream = PyLong_AsVoidPtr(args[4]);
  unsigned long long zero_ptr = PyLong_AsUnsignedLongLong(args[5]);
  long long zero_count = PyLong_AsLongLong(args[6]);
  if (PyErr_Occurred()) return NULL;
  if (!libcuda) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no CUDA driver (call init() first)");
    return NULL;
  }
  if (!fn || !config || !params) {
    PyErr_SetString(PyExc_ValueError, "launch: null function, config or parameters");
    return NULL;
  }
  int pushed;
  CUresult r = push_unless_current(ctx, &pushed);
  if (r != 0) return failed("cuCtxPushCurrent", r);
  const char* what = "cuLaunchKernelEx";
  if (zero_count > 0) {
    r = cuMemsetD32Async_((CUdeviceptr)zero_ptr, 0, (size_t)zero_count, stream);
    if (r != 0) what = "cuMemsetD32Async (prescale C)";
  }
  if (r == 0) {
    config->hStream = stream;
    r = cuLaunchKernelEx_(config, fn, params, NULL);
  }
  CUresult p = pop_if_pushed(pushed);
  if (r == 0 && p != 0) return failed("cuCtxPopCurrent", p);
  if (r != 0) return failed(what, r);
  Py_RETURN_NONE;
}

/* cublas_create(ctx) -> (handle, status): a cuBLAS handle made with `ctx` (a
 * CUcontext) current, bound to its device; handle 0 where status is not
 * CUBLAS_STATUS_SUCCESS (a cublasStatus_t, or a CUresult negated). Kept for
 * the process's life, as torch keeps its own. */
static PyObject* cublas_create(PyObject* self, PyObject* arg) {
  if (!libcublas || !libcuda) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no cuBLAS (call init() first)");
    return NULL;
  }
  void* ctx = PyLong_AsVoidPtr(arg);
  if (PyErr_Occurred()) return NULL;
  int pushed;
  CUresult r = push_unless_current(ctx, &pushed);
  if (r != 0) return Py_BuildValue("(Ki)", 0ULL, -r);
  cublasHandle_t handle = NULL;
  cublasStatus_t s = cublasCreate_(&handle);
  r = pop_if_pushed(pushed);
  if (s == 0 && r != 0) s = -r;
  return Py_BuildValue("(Ki)", (unsigned long long)(uintptr_t)(s == 0 ? handle : NULL), s);
}

/* cublas_status_name(status) -> its name (cublasGetStatusName). */
static PyObject* cublas_status_name(PyObject* self, PyObject* arg) {
  long s = PyLong_AsLong(arg);
  if (PyErr_Occurred()) return NULL;
  if (!libcublas) return PyUnicode_FromFormat("cublasStatus_t %ld", s);
  const char* name = cublasGetStatusName_((cublasStatus_t)s);
  return PyUnicode_FromString(name ? name : "unknown cublasStatus_t");
}

/* sgemm(handle, ctx, math, opb, opa, n, m, k, b, ldb, a, lda, c, ldc, stream)
 * -> None, or (what, status) where a step failed (a cublasStatus_t; a
 * CUresult negated for the context push).
 * cublasSgemm with alpha 1 and beta 0 in cuBLAS's column-major terms,
 * C(n x m, ldc) = op(B) op(A): the caller passes a row-major C = op(A) op(B)
 * as its transpose (as core/launch.cc's RowMajorGemm). math: a
 * cublasMath_t (CUBLAS_DEFAULT_MATH 0: fp32; CUBLAS_TF32_TENSOR_OP_MATH 3),
 * set on the handle for the call, as torch sets it for its own; opa, opb:
 * cublasOperation_t (0 N, 1 T); stream: the CUstream to run on; ctx: the
 * handle's device's context, pushed only where another one is current. */
static PyObject* sgemm(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 15) {
    PyErr_SetString(PyExc_TypeError, "sgemm takes 15 arguments");
    return NULL;
  }
  void* handle = PyLong_AsVoidPtr(args[0]);
  void* ctx = PyLong_AsVoidPtr(args[1]);
  int v[8];
  for (int i = 0; i < 6; ++i) v[i] = (int)PyLong_AsLong(args[2 + i]);  // math opb opa n m k
  const float* b = (const float*)PyLong_AsVoidPtr(args[8]);
  v[6] = (int)PyLong_AsLong(args[9]);  // ldb
  const float* a = (const float*)PyLong_AsVoidPtr(args[10]);
  v[7] = (int)PyLong_AsLong(args[11]);  // lda
  float* c = (float*)PyLong_AsVoidPtr(args[12]);
  int ldc = (int)PyLong_AsLong(args[13]);
  void* stream = PyLong_AsVoidPtr(args[14]);
  if (PyErr_Occurred()) return NULL;
  if (!libcublas || !libcuda) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no cuBLAS (call init() first)");
    return NULL;
  }
  if (!handle) {
    PyErr_SetString(PyExc_ValueError, "sgemm: null cuBLAS handle");
    return NULL;
  }
  int pushed;
  CUresult r = push_unless_current(ctx, &pushed);
  if (r != 0) return failed("cuCtxPushCurrent", -r);
  static const float one = 1.0f, zero = 0.0f;
  const char* what = "cublasSetStream";
  cublasStatus_t s = cublasSetStream_(handle, stream);
  if (s == 0) {
    what = "cublasSetMathMode";
    s = cublasSetMathMode_(handle, v[0]);
  }
  if (s == 0) {
    what = "cublasSgemm";
    s = cublasSgemm_(handle, v[1], v[2], v[3], v[4], v[5], &one, b, v[6], a, v[7], &zero, c, ldc);
  }
  r = pop_if_pushed(pushed);
  if (s != 0) return failed(what, s);
  if (r != 0) return failed("cuCtxPopCurrent", -r);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", init, METH_NOARGS, "init() -> (driver, cublas): load libcuda and cuBLAS"},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(fn, ctx, config, params, stream, zero_ptr, zero_count) -> None or (what, CUresult)"},
    {"cublas_create", cublas_create, METH_O, "cublas_create(ctx) -> (handle, cublasStatus_t)"},
    {"cublas_status_name", cublas_status_name, METH_O, "the name of a cublasStatus_t"},
    {"sgemm", (PyCFunction)(void (*)(void))sgemm, METH_FASTCALL,
     "sgemm(handle, ctx, math, opb, opa, n, m, k, b, ldb, a, lda, c, ldc, stream) -> None or "
     "(what, status)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tuned._fastcall",
                                    "The launches of tuned.Kernel and tuned.matmul in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fastcall(void) { return PyModule_Create(&module); }
