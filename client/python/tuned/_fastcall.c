/* tuned._fastcall: the launches of tuned.Kernel and tuned.matmul in C.
 *
 * Through ctypes a launch converts each argument and a cuBLAS SGEMM takes 14
 * of them: a call cost several us of the CPU more than torch.matmul's own.
 * Here each is one call of a CPython function. Optional: the package falls
 * back to ctypes and torch where this module is not built (no C compiler or
 * Python headers at install) or its libraries are missing.
 *
 * The CUDA driver (libcuda.so.1), cuBLAS and cuBLASLt (libcublas.so.13 or .12
 * and libcublasLt of the same number, the ones torch has loaded where it has)
 * are opened with dlopen at init(); no CUDA header is needed to build, so the
 * few types and constants used are declared here, as cuda.h, cublas_api.h and
 * cublasLt.h (CUDA 12 and 13) define them.
 * Every call's status is returned to the caller, which raises (tuned/kernel.py
 * names a CUresult with cuGetErrorName, a cublasStatus_t with
 * cublasGetStatusName): a failure is reported, never ignored.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "_fastcall_api.h"
#include "tuned/launch_c.h"

typedef int CUresult;
typedef void* CUcontext;
typedef void* CUstream;
typedef void* CUfunction;
typedef unsigned long long CUdeviceptr;

/* CUlaunchConfig (cuda.h); tuned/driver.py's LaunchConfig has the same fields. */
typedef TunedCuLaunchConfig LaunchConfig;

static CUresult (*cuCtxGetCurrent_)(CUcontext*);
static CUresult (*cuCtxPushCurrent_)(CUcontext);
static CUresult (*cuCtxPopCurrent_)(CUcontext*);
static CUresult (*cuStreamIsCapturing_)(CUstream, int*);  /* CUstreamCaptureStatus: 0 none */
/* The launcher (tuned/launch_c.h, core/launch_c.c) on libcuda: the launches and the tensor maps. */
static const TunedDriver* launcher;

typedef int cublasStatus_t;
typedef void* cublasHandle_t;
static cublasStatus_t (*cublasCreate_)(void**);  /* cublasHandle_t* */
static cublasStatus_t (*cublasSetStream_)(cublasHandle_t, CUstream);
static cublasStatus_t (*cublasSetMathMode_)(cublasHandle_t, int);
static cublasStatus_t (*cublasSgemm_)(cublasHandle_t, int, int, int, int, int, const float*,
                                      const float*, int, const float*, int, const float*, float*,
                                      int);
/* cublasGemmEx: the 16-bit GEMMs' call where cuBLASLt offers no algorithm. */
static cublasStatus_t (*cublasGemmEx_)(cublasHandle_t, int, int, int, int, int, const void*,
                                       const void*, int, int, const void*, int, int, const void*,
                                       void*, int, int, int, int);
static const char* (*cublasGetStatusName_)(cublasStatus_t);

/* cuBLASLt (cublasLt.h): the descriptors are opaque pointers here. */
typedef void* cublasLtHandle_t;
typedef void* LtDesc;
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
enum {
  CUDA_R_32F = 0,                    /* cudaDataType (library_types.h) */
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
  CUBLAS_GEMM_DEFAULT = -1,          /* cublasGemmAlgo_t */
  CUBLAS_COMPUTE_32F = 68,           /* cublasComputeType_t */
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLASLT_MATMUL_DESC_TRANSA = 3,   /* cublasLtMatmulDescAttributes_t */
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1, /* cublasLtMatmulPreferenceAttributes_t */
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,    /* cublasMath_t */
};
static cublasStatus_t (*cublasLtCreate_)(void**);  /* cublasLtHandle_t* */
static cublasStatus_t (*cublasLtMatmulDescCreate_)(LtDesc*, int, int);
static cublasStatus_t (*cublasLtMatmulDescDestroy_)(LtDesc);
static cublasStatus_t (*cublasLtMatmulDescSetAttribute_)(LtDesc, int, const void*, size_t);
static cublasStatus_t (*cublasLtMatrixLayoutCreate_)(LtDesc*, int, uint64_t, uint64_t, int64_t);
static cublasStatus_t (*cublasLtMatrixLayoutDestroy_)(LtDesc);
static cublasStatus_t (*cublasLtMatmulPreferenceCreate_)(LtDesc*);
static cublasStatus_t (*cublasLtMatmulPreferenceDestroy_)(LtDesc);
static cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute_)(LtDesc, int, const void*, size_t);
static cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic_)(cublasLtHandle_t, LtDesc, LtDesc, LtDesc,
                                                         LtDesc, LtDesc, LtDesc, int,
                                                         cublasLtMatmulHeuristicResult_t*, int*);
static cublasStatus_t (*cublasLtMatmul_)(cublasLtHandle_t, LtDesc, const void*, const void*, LtDesc,
                                         const void*, LtDesc, const void*, const void*, LtDesc,
                                         void*, LtDesc, const cublasLtMatmulAlgo_t*, void*, size_t,
                                         CUstream);

static void* libcuda;
static void* libcublas;
static void* libcublaslt;

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

/* init() -> (driver, cublas, cublaslt): whether the launches, the cuBLAS GEMM
 * and its planned cuBLASLt form are available (their libraries and every
 * symbol found). Idempotent. */
static PyObject* init(PyObject* self, PyObject* unused) {
  static const char* const cuda_names[] = {"libcuda.so.1", NULL};
  static const char* const cublas_names[] = {"libcublas.so.13", "libcublas.so.12", NULL};
  static const char* const cublaslt_names[] = {"libcublasLt.so.13", "libcublasLt.so.12", NULL};
  if (!libcuda) {
    void* h = open_library(cuda_names);
    if (h && RESOLVE(h, cuCtxGetCurrent_, "cuCtxGetCurrent") &&
        RESOLVE(h, cuCtxPushCurrent_, "cuCtxPushCurrent_v2") &&
        RESOLVE(h, cuCtxPopCurrent_, "cuCtxPopCurrent_v2") &&
        RESOLVE(h, cuStreamIsCapturing_, "cuStreamIsCapturing") &&
        (launcher = tuned_driver_open()) != NULL) {
      libcuda = h;
    }
  }
  if (!libcublas) {
    void* h = open_library(cublas_names);
    if (h && RESOLVE(h, cublasCreate_, "cublasCreate_v2") &&
        RESOLVE(h, cublasSetStream_, "cublasSetStream_v2") &&
        RESOLVE(h, cublasSetMathMode_, "cublasSetMathMode") &&
        RESOLVE(h, cublasSgemm_, "cublasSgemm_v2") && RESOLVE(h, cublasGemmEx_, "cublasGemmEx") &&
        RESOLVE(h, cublasGetStatusName_, "cublasGetStatusName")) {
      libcublas = h;
    }
  }
  if (!libcublaslt) {
    void* h = open_library(cublaslt_names);
    if (h && RESOLVE(h, cublasLtCreate_, "cublasLtCreate") &&
        RESOLVE(h, cublasLtMatmulDescCreate_, "cublasLtMatmulDescCreate") &&
        RESOLVE(h, cublasLtMatmulDescDestroy_, "cublasLtMatmulDescDestroy") &&
        RESOLVE(h, cublasLtMatmulDescSetAttribute_, "cublasLtMatmulDescSetAttribute") &&
        RESOLVE(h, cublasLtMatrixLayoutCreate_, "cublasLtMatrixLayoutCreate") &&
        RESOLVE(h, cublasLtMatrixLayoutDestroy_, "cublasLtMatrixLayoutDestroy") &&
        RESOLVE(h, cublasLtMatmulPreferenceCreate_, "cublasLtMatmulPreferenceCreate") &&
        RESOLVE(h, cublasLtMatmulPreferenceDestroy_, "cublasLtMatmulPreferenceDestroy") &&
        RESOLVE(h, cublasLtMatmulPreferenceSetAttribute_, "cublasLtMatmulPreferenceSetAttribute") &&
        RESOLVE(h, cublasLtMatmulAlgoGetHeuristic_, "cublasLtMatmulAlgoGetHeuristic") &&
        RESOLVE(h, cublasLtMatmul_, "cublasLtMatmul")) {
      libcublaslt = h;
    }
  }
  return Py_BuildValue("(OOO)", libcuda ? Py_True : Py_False, libcublas ? Py_True : Py_False,
                       libcublaslt ? Py_True : Py_False);
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
/* The launch of `fn` with `config` (its hStream set here) and `params`, the
 * context made current as push_unless_current, and zero_count > 0 32-bit
 * words at zero_ptr set to zero first on the same stream. 0, or the
 * failed step's CUresult with *what naming it. */
static CUresult launch_kernel(CUfunction fn, CUcontext ctx, LaunchConfig* config, void** params,
                              CUstream stream, CUdeviceptr zero_ptr, long long zero_count,
                              const char** what) {
  TunedLaunchPlan plan; /* no maps: only the geometry is read */
  plan.grid[0] = config->gridDimX, plan.grid[1] = config->gridDimY, plan.grid[2] = config->gridDimZ;
  plan.block[0] = config->blockDimX, plan.block[1] = config->blockDimY;
  plan.block[2] = config->blockDimZ;
  plan.dynamic_shared_bytes = config->sharedMemBytes;
  plan.map_count = 0;
  plan.param_count = 0;
  return tuned_launch(launcher, fn, ctx, &plan, params, NULL, stream, zero_ptr, zero_count, what);
}

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
  const char* what = NULL;
  CUresult r = launch_kernel(fn, ctx, config, params, stream, zero_ptr, zero_count, &what);
  if (r != 0) return failed(what, r);
  Py_RETURN_NONE;
}

/* (handle, status): `create` (cublasCreate or cublasLtCreate) run with
 * `arg`'s CUcontext current (pushed only where another one is); handle 0
 * where status is not CUBLAS_STATUS_SUCCESS (a cublasStatus_t, or a CUresult
 * negated). */
static PyObject* create_in_context(PyObject* arg, cublasStatus_t (*create)(void**)) {
  void* ctx = PyLong_AsVoidPtr(arg);
  if (PyErr_Occurred()) return NULL;
  int pushed;
  CUresult r = push_unless_current(ctx, &pushed);
  if (r != 0) return Py_BuildValue("(Ki)", 0ULL, -r);
  void* handle = NULL;
  cublasStatus_t s = create(&handle);
  r = pop_if_pushed(pushed);
  if (s == 0 && r != 0) s = -r;
  return Py_BuildValue("(Ki)", (unsigned long long)(uintptr_t)(s == 0 ? handle : NULL), s);
}

/* cublas_create(ctx) -> (handle, status): a cuBLAS handle made with `ctx` (a
 * CUcontext) current, bound to its device (create_in_context). Kept for the
 * process's life, as torch keeps its own. */
static PyObject* cublas_create(PyObject* self, PyObject* arg) {
  if (!libcublas || !libcuda) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no cuBLAS (call init() first)");
    return NULL;
  }
  return create_in_context(arg, cublasCreate_);
}

/* cublas_status_name(status) -> its name (cublasGetStatusName). */
static PyObject* cublas_status_name(PyObject* self, PyObject* arg) {
  long s = PyLong_AsLong(arg);
  if (PyErr_Occurred()) return NULL;
  if (!libcublas) return PyUnicode_FromFormat("cublasStatus_t %ld", s);
  const char* name = cublasGetStatusName_((cublasStatus_t)s);
  return PyUnicode_FromString(name ? name : "unknown cublasStatus_t");
}

/* cublaslt_create(ctx) -> (handle, status): a cuBLASLt handle, as
 * cublas_create makes a cuBLAS one; kept for the process's life. */
static PyObject* cublaslt_create(PyObject* self, PyObject* arg) {
  if (!libcublaslt || !libcuda) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no cuBLASLt (call init() first)");
    return NULL;
  }
  return create_in_context(arg, cublasLtCreate_);
}

/* One GEMM's plan: cublasSgemm's (or for 16-bit operands cublasGemmEx's)
 * arguments in its column-major terms, and,
 * where cuBLASLt's heuristic gave an algorithm, the cuBLASLt descriptors and
 * that algorithm, so that a call is one cublasLtMatmul with no heuristic
 * look-up and no handle state to set. */
typedef struct {
  cublasHandle_t handle;
  CUcontext ctx;
  int math, opb, opa, n, m, k, ldb, lda, ldc;
  int ab_type, c_type;   /* cudaDataType of A and B, of C: CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F */
  cublasLtHandle_t lt;   /* NULL: cublasSgemm (cublasGemmEx) runs every call */
  LtDesc desc, layout_b, layout_a, layout_c;
  cublasLtMatmulAlgo_t algo;
  size_t workspace;      /* bytes `algo` needs */
  int has_bare;          /* where workspace > 0: whether bare_algo, one that needs none, exists */
  cublasLtMatmulAlgo_t bare_algo;
} Plan;

static const char* const kPlanName = "tuned._fastcall.Plan";

/* Frees the cuBLASLt descriptors. A destroy's status has no caller to go to
 * here (a destructor); cublasLt*Destroy of a descriptor made by its create
 * returns CUBLAS_STATUS_SUCCESS by cublasLt.h. */
static void plan_free(PyObject* capsule) {
  Plan* p = (Plan*)PyCapsule_GetPointer(capsule, kPlanName);
  if (!p) return;
  if (p->layout_c) cublasLtMatrixLayoutDestroy_(p->layout_c);
  if (p->layout_a) cublasLtMatrixLayoutDestroy_(p->layout_a);
  if (p->layout_b) cublasLtMatrixLayoutDestroy_(p->layout_b);
  if (p->desc) cublasLtMatmulDescDestroy_(p->desc);
  PyMem_Free(p);
}

/* cuBLASLt's heuristic's first algorithm for p's descriptors within `limit`
 * bytes of workspace: 0 with *found 1 and *algo, *workspace set; 0 with
 * *found 0 where it offers none (CUBLAS_STATUS_NOT_SUPPORTED, or no result);
 * else the failed call's status, *what naming it. The preference is the
 * default one (256-byte alignment, which gemm() checks on each call's
 * pointers) with the workspace limit. */
static cublasStatus_t heuristic(Plan* p, cublasLtHandle_t lt, uint64_t limit,
                                cublasLtMatmulAlgo_t* algo, size_t* workspace, int* found,
                                const char** what) {
  LtDesc pref = NULL;
  *found = 0;
  *what = "cublasLtMatmulPreferenceCreate";
  cublasStatus_t s = cublasLtMatmulPreferenceCreate_(&pref);
  if (s == 0) {
    *what = "cublasLtMatmulPreferenceSetAttribute";
    s = cublasLtMatmulPreferenceSetAttribute_(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
                                              sizeof limit);
  }
  if (s == 0) {
    cublasLtMatmulHeuristicResult_t result;
    int returned = 0;
    *what = "cublasLtMatmulAlgoGetHeuristic";
    s = cublasLtMatmulAlgoGetHeuristic_(lt, p->desc, p->layout_b, p->layout_a, p->layout_c,
                                        p->layout_c, pref, 1, &result, &returned);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) {
      s = 0;
    } else if (s == 0 && returned > 0 && result.state == 0) {
      *algo = result.algo;
      *workspace = result.workspaceSize;
      *found = 1;
    }
  }
  if (pref) {
    cublasStatus_t d = cublasLtMatmulPreferenceDestroy_(pref);
    if (s == 0 && d != 0) {
      *what = "cublasLtMatmulPreferenceDestroy";
      s = d;
    }
  }
  return s;
}

/* Plans cuBLASLt's form of p's GEMM: the descriptors, the heuristic's first
 * algorithm within `workspace_limit` bytes and, where that one takes a
 * workspace, its first that takes none (for a stream being captured, or a
 * call given no workspace). Returns 0 with p->lt set where it has an
 * algorithm, 0 with p->lt NULL where cuBLASLt offers none, else the failed
 * call's status with *what naming it. The matrices are p's column-major
 * ones: D(n x m) = op(B)(n x k) op(A)(k x m), A and B of p->ab_type, C and D
 * of p->c_type, the scale type fp32. The compute type is the one cublasSgemm
 * takes in the math mode: CUBLAS_COMPUTE_32F_FAST_TF32 for
 * CUBLAS_TF32_TENSOR_OP_MATH, else CUBLAS_COMPUTE_32F (cuBLAS's
 * cublasSetMathMode notes), which 16-bit operands always take (as
 * cublasGemmEx with CUBLAS_COMPUTE_32F, torch.matmul's). */
static cublasStatus_t plan_lt(Plan* p, cublasLtHandle_t lt, size_t workspace_limit,
                              const char** what) {
  int compute = p->math == CUBLAS_TF32_TENSOR_OP_MATH && p->ab_type == CUDA_R_32F
                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                    : CUBLAS_COMPUTE_32F;
  cublasStatus_t s;
  *what = "cublasLtMatmulDescCreate";
  s = cublasLtMatmulDescCreate_(&p->desc, compute, CUDA_R_32F);
  if (s == 0) {
    *what = "cublasLtMatmulDescSetAttribute";
    s = cublasLtMatmulDescSetAttribute_(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &p->opb, sizeof(int));
  }
  if (s == 0) s = cublasLtMatmulDescSetAttribute_(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &p->opa, sizeof(int));
  if (s == 0) {
    *what = "cublasLtMatrixLayoutCreate";
    s = p->opb ? cublasLtMatrixLayoutCreate_(&p->layout_b, p->ab_type, p->k, p->n, p->ldb)
               : cublasLtMatrixLayoutCreate_(&p->layout_b, p->ab_type, p->n, p->k, p->ldb);
  }
  if (s == 0) {
    s = p->opa ? cublasLtMatrixLayoutCreate_(&p->layout_a, p->ab_type, p->m, p->k, p->lda)
               : cublasLtMatrixLayoutCreate_(&p->layout_a, p->ab_type, p->k, p->m, p->lda);
  }
  if (s == 0) s = cublasLtMatrixLayoutCreate_(&p->layout_c, p->c_type, p->n, p->m, p->ldc);
  int found = 0;
  if (s == 0) s = heuristic(p, lt, workspace_limit, &p->algo, &p->workspace, &found, what);
  if (s == 0 && found && p->workspace > 0) {
    size_t none;
    s = heuristic(p, lt, 0, &p->bare_algo, &none, &p->has_bare, what);
  }
  if (s == 0 && found) p->lt = lt;
  return s;
}

/* plan(handle, lt, ctx, math, opb, opa, n, m, k, ldb, lda, ldc, workspace_limit
 *      [, ab_type, c_type]) -> (plan, workspace) or (what, status) where a step failed (a
 * cublasStatus_t; a CUresult negated for the context push).
 * The GEMM is cublasSgemm's with alpha 1 and beta 0 in its column-major
 * terms, C(n x m, ldc) = op(B) op(A): a row-major C = op(A) op(B) passed as
 * its transpose (as core/launch.cc's RowMajorGemm). handle: a cuBLAS handle;
 * lt: a cuBLASLt handle, or 0 for cublasSgemm alone; ctx: their device's
 * context, pushed only where another one is current; math: a cublasMath_t
 * (CUBLAS_DEFAULT_MATH 0: fp32; CUBLAS_TF32_TENSOR_OP_MATH 3); opa, opb:
 * cublasOperation_t (0 N, 1 T); workspace_limit: the most workspace bytes
 * cuBLASLt's algorithm may take. plan: an object for gemm(); workspace: the
 * bytes of workspace its cuBLASLt algorithm needs, -1 where it has none
 * (cublasSgemm runs each call). ab_type, c_type: the cudaDataType of A and
 * B and of C (default CUDA_R_32F, fp32); 16-bit A and B (CUDA_R_16BF,
 * CUDA_R_16F) with C of their type or fp32 compute in fp32 whatever `math`
 * is, and run cublasGemmEx where cuBLASLt offers no algorithm. */
static PyObject* plan(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 13 && nargs != 15) {
    PyErr_SetString(PyExc_TypeError, "plan takes 13 or 15 arguments");
    return NULL;
  }
  void* handle = PyLong_AsVoidPtr(args[0]);
  void* lt = PyLong_AsVoidPtr(args[1]);
  void* ctx = PyLong_AsVoidPtr(args[2]);
  int v[9];
  for (int i = 0; i < 9; ++i) v[i] = (int)PyLong_AsLong(args[3 + i]);  // math .. ldc
  unsigned long long limit = PyLong_AsUnsignedLongLong(args[12]);
  int ab_type = CUDA_R_32F, c_type = CUDA_R_32F;
  if (nargs == 15) {
    ab_type = (int)PyLong_AsLong(args[13]);
    c_type = (int)PyLong_AsLong(args[14]);
  }
  if (PyErr_Occurred()) return NULL;
  const int sixteen = ab_type == CUDA_R_16BF || ab_type == CUDA_R_16F;
  if ((ab_type != CUDA_R_32F && !sixteen) || (c_type != ab_type && c_type != CUDA_R_32F)) {
    PyErr_SetString(PyExc_ValueError,
                    "plan: A and B fp32, bf16 or f16 (CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F), C of "
                    "their type or fp32");
    return NULL;
  }
  if (!libcublas || !libcuda || (lt && !libcublaslt)) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no cuBLAS (call init() first)");
    return NULL;
  }
  if (!handle) {
    PyErr_SetString(PyExc_ValueError, "plan: null cuBLAS handle");
    return NULL;
  }
  Plan* p = (Plan*)PyMem_Calloc(1, sizeof(Plan));
  if (!p) return PyErr_NoMemory();
  p->handle = handle;
  p->ctx = ctx;
  p->math = v[0], p->opb = v[1], p->opa = v[2], p->n = v[3], p->m = v[4], p->k = v[5];
  p->ldb = v[6], p->lda = v[7], p->ldc = v[8];
  p->ab_type = ab_type, p->c_type = c_type;
  PyObject* capsule = PyCapsule_New(p, kPlanName, plan_free);
  if (!capsule) {
    PyMem_Free(p);
    return NULL;
  }
  if (lt) {
    int pushed;
    CUresult r = push_unless_current(ctx, &pushed);
    if (r != 0) {
      Py_DECREF(capsule);
      return failed("cuCtxPushCurrent", -r);
    }
    const char* what = "";
    cublasStatus_t s = plan_lt(p, lt, (size_t)limit, &what);
    r = pop_if_pushed(pushed);
    if (s == 0 && r != 0) what = "cuCtxPopCurrent", s = -r;
    if (s != 0) {
      Py_DECREF(capsule);
      return failed(what, s);
    }
  }
  return Py_BuildValue("(Nn)", capsule, p->lt ? (Py_ssize_t)p->workspace : (Py_ssize_t)-1);
}

/* Runs plan `p` on device pointers b, a, c on `stream` with `workspace` (as
 * gemm() says). Returns 0, or the failed step's status (a cublasStatus_t; a
 * CUresult negated) with *what naming it. */
static int run_plan(const Plan* p, const void* b, const void* a, void* c, void* stream,
                    void* workspace, const char** what) {
  int pushed;
  CUresult r = push_unless_current(p->ctx, &pushed);
  if (r != 0) {
    *what = "cuCtxPushCurrent";
    return -r;
  }
  static const float one = 1.0f, zero = 0.0f;
  cublasStatus_t s = 0;
  /* The algorithm to run: NULL for cublasSgemm. */
  const cublasLtMatmulAlgo_t* algo = NULL;
  if (p->lt && ((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 256 == 0) {
    algo = &p->algo;
    if (p->workspace > 0) {
      int capture = 0;
      r = cuStreamIsCapturing_(stream, &capture);
      if (r != 0) *what = "cuStreamIsCapturing", s = -r;
      if (capture != 0 || !workspace) algo = p->has_bare ? &p->bare_algo : NULL;
    }
  }
  if (s != 0) {
    /* *what names the failed step */
  } else if (algo) {
    int bare = algo == &p->bare_algo;
    *what = "cublasLtMatmul";
    s = cublasLtMatmul_(p->lt, p->desc, &one, b, p->layout_b, a, p->layout_a, &zero, c,
                        p->layout_c, c, p->layout_c, algo, bare ? NULL : workspace,
                        bare ? 0 : p->workspace, stream);
  } else {
    *what = "cublasSetStream";
    s = cublasSetStream_(p->handle, stream);
    if (s == 0) {
      *what = "cublasSetMathMode";
      s = cublasSetMathMode_(p->handle, p->math);
    }
    if (s == 0 && p->ab_type != CUDA_R_32F) {
      *what = "cublasGemmEx";
      s = cublasGemmEx_(p->handle, p->opb, p->opa, p->n, p->m, p->k, &one, b, p->ab_type, p->ldb,
                        a, p->ab_type, p->lda, &zero, c, p->c_type, p->ldc, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
    } else if (s == 0) {
      *what = "cublasSgemm";
      s = cublasSgemm_(p->handle, p->opb, p->opa, p->n, p->m, p->k, &one, (const float*)b,
                       p->ldb, (const float*)a, p->lda, &zero, (float*)c, p->ldc);
    }
  }
  r = pop_if_pushed(pushed);
  if (s == 0 && r != 0) *what = "cuCtxPopCurrent", s = -r;
  return s;
}

/* gemm(plan, b, a, c, stream, workspace) -> None, or (what, status) where a
 * step failed (a cublasStatus_t; a CUresult negated).
 * Runs the plan's GEMM on device pointers b, a, c (cuBLAS's order: its first
 * operand is the row-major op(B)) on `stream` (a CUstream); `workspace`: a
 * device pointer to the plan's workspace bytes for this stream, or 0.
 * cublasLtMatmul runs with the plan's algorithm where it has one and every
 * pointer is 256-byte aligned (the alignment it was planned for). Where that
 * algorithm takes a workspace and the stream is being captured (a graph
 * would keep the stream's workspace, which calls outside it reuse) or none is
 * given, the plan's algorithm that takes none runs instead. Otherwise
 * cublasSgemm runs, with the handle's stream and math mode set for the call,
 * as torch sets its own. */
static PyObject* gemm(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError, "gemm takes 6 arguments");
    return NULL;
  }
  Plan* p = (Plan*)PyCapsule_GetPointer(args[0], kPlanName);
  if (!p) return NULL;
  const void* b = PyLong_AsVoidPtr(args[1]);
  const void* a = PyLong_AsVoidPtr(args[2]);
  void* c = PyLong_AsVoidPtr(args[3]);
  void* stream = PyLong_AsVoidPtr(args[4]);
  void* workspace = PyLong_AsVoidPtr(args[5]);
  if (PyErr_Occurred()) return NULL;
  const char* what = NULL;
  int s = run_plan(p, b, a, c, stream, workspace, &what);
  if (s != 0) return failed(what, s);
  Py_RETURN_NONE;
}

/* ---- a served kernel's launch plan on the launcher (tuned/launch_c.h) ---- */

static const char kLaunchPlanName[] = "tuned._fastcall.launch_plan";

static void launch_plan_free(PyObject* capsule) {
  PyMem_Free(PyCapsule_GetPointer(capsule, kLaunchPlanName));
}

/* Reads up to `max` integers of sequence `seq` into out; their count, or -1 with an error set. */
static Py_ssize_t read_u64s(PyObject* seq, uint64_t* out, Py_ssize_t max, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > max) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "malformed tensor map: %s has %zd entries, at most %zd", what,
                 n, max);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
  }
  Py_DECREF(fast);
  return PyErr_Occurred() ? -1 : n;
}

/* launch_plan(grid, block, smem, prescale, param_count, maps) -> plan: a
 * served kernel's launch checked once (tuned_map_make, tuned_plan_check).
 * grid, block: 3 integers each; maps: a sequence of TensorMap fields
 * (param, pointer_arg, dtype, dims, strides_bytes, box, swizzle_bytes,
 * l2_promotion_bytes, stage), dtype a tuner.proto DType. ValueError
 * "malformed tensor map: ..." or "malformed launch geometry: ..." naming
 * what the launcher refused. */
static PyObject* launch_plan(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError, "launch_plan takes 6 arguments");
    return NULL;
  }
  TunedLaunchPlan* p = (TunedLaunchPlan*)PyMem_Calloc(1, sizeof(TunedLaunchPlan));
  if (!p) return PyErr_NoMemory();
  uint64_t grid[3] = {0}, block[3] = {0};
  const char* what = NULL;
  int ok = read_u64s(args[0], grid, 3, "grid") == 3 && read_u64s(args[1], block, 3, "block") == 3;
  if (ok) {
    for (int i = 0; i < 3; ++i) p->grid[i] = (uint32_t)grid[i], p->block[i] = (uint32_t)block[i];
    p->dynamic_shared_bytes = (uint32_t)PyLong_AsUnsignedLong(args[2]);
    p->prescale_output = PyObject_IsTrue(args[3]) == 1;
    p->param_count = (uint32_t)PyLong_AsUnsignedLong(args[4]);
    ok = !PyErr_Occurred();
  }
  PyObject* maps = ok ? PySequence_Fast(args[5], "maps") : NULL;
  if (maps) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(maps);
    if (n > TUNED_LAUNCH_MAX_MAPS) {
      PyErr_Format(PyExc_ValueError, "malformed launch geometry: %zd tensor maps, at most %d", n,
                   TUNED_LAUNCH_MAX_MAPS);
    }
    for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); ++i) {
      PyObject* m = PySequence_Fast_GET_ITEM(maps, i);
      if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) != 9) {
        PyErr_SetString(PyExc_TypeError, "a map is a tuple of 9 TensorMap fields");
        break;
      }
      uint64_t dims[TUNED_LAUNCH_MAX_RANK], strides[TUNED_LAUNCH_MAX_RANK], box64[TUNED_LAUNCH_MAX_RANK];
      uint32_t box[TUNED_LAUNCH_MAX_RANK];
      Py_ssize_t rank = read_u64s(PyTuple_GET_ITEM(m, 3), dims, TUNED_LAUNCH_MAX_RANK, "dims");
      Py_ssize_t nstrides = rank < 0 ? -1 : read_u64s(PyTuple_GET_ITEM(m, 4), strides, TUNED_LAUNCH_MAX_RANK, "strides");
      Py_ssize_t nbox = nstrides < 0 ? -1 : read_u64s(PyTuple_GET_ITEM(m, 5), box64, TUNED_LAUNCH_MAX_RANK, "box");
      if (nbox < 0) break;
      for (Py_ssize_t j = 0; j < nbox; ++j) box[j] = (uint32_t)box64[j];
      unsigned long v[5];
      const int at[5] = {0, 1, 2, 6, 7};
      for (int j = 0; j < 5; ++j) v[j] = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(m, at[j]));
      int stage = PyObject_IsTrue(PyTuple_GET_ITEM(m, 8));
      if (PyErr_Occurred()) break;
      if (tuned_map_make(&p->maps[i], (uint32_t)v[0], (uint32_t)v[1], (int)v[2], (uint32_t)rank,
                         dims, (uint32_t)nstrides, strides, (uint32_t)nbox, box, (uint32_t)v[3],
                         (uint32_t)v[4], stage == 1, &what) != 0) {
        PyErr_Format(PyExc_ValueError, "malformed %s", what);
        break;
      }
      p->map_count = (uint32_t)(i + 1);
    }
    Py_DECREF(maps);
    if (!PyErr_Occurred() && tuned_plan_check(p, &what) != 0) {
      PyErr_Format(PyExc_ValueError, "malformed %s", what);
    }
  }
  if (PyErr_Occurred()) {
    PyMem_Free(p);
    return NULL;
  }
  PyObject* capsule = PyCapsule_New(p, kLaunchPlanName, launch_plan_free);
  if (!capsule) PyMem_Free(p);
  return capsule;
}

/* The driver a launch calls: the table at address `arg` (a stand-in's), or
 * 0 for libcuda's (RuntimeError where init() found none). */
static const TunedDriver* driver_of(PyObject* arg) {
  const TunedDriver* d = (const TunedDriver*)PyLong_AsVoidPtr(arg);
  if (PyErr_Occurred()) return NULL;
  if (!d) d = launcher;
  if (!d) PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no CUDA driver (call init() first)");
  return d;
}

/* plan_maps(plan) -> [(pointer_arg, data_type, dims, strides, box, swizzle, l2, stage)]:
 * the plan's maps in the driver's enums (CUtensorMapDataType,
 * CUtensorMapSwizzle, CUtensorMapL2promotion), as tuned._torchcall takes them. */
static PyObject* plan_maps(PyObject* self, PyObject* arg) {
  const TunedLaunchPlan* p = (const TunedLaunchPlan*)PyCapsule_GetPointer(arg, kLaunchPlanName);
  if (!p) return NULL;
  PyObject* out = PyList_New(p->map_count);
  for (uint32_t i = 0; out && i < p->map_count; ++i) {
    const TunedMapPlan* m = &p->maps[i];
    PyObject *dims = PyList_New(m->rank), *strides = PyList_New(m->rank - 1), *box = PyList_New(m->rank);
    for (uint32_t j = 0; dims && strides && box && j < m->rank; ++j) {
      PyList_SET_ITEM(dims, j, PyLong_FromUnsignedLongLong(m->dims[j]));
      PyList_SET_ITEM(box, j, PyLong_FromUnsignedLong(m->box[j]));
      if (j + 1 < m->rank) PyList_SET_ITEM(strides, j, PyLong_FromUnsignedLongLong(m->strides_bytes[j]));
    }
    PyObject* t = dims && strides && box
                      ? Py_BuildValue("(IiNNNiiO)", m->pointer_arg, m->data_type, dims, strides, box,
                                      m->swizzle, m->l2_promotion, m->stage ? Py_True : Py_False)
                      : NULL;
    if (!t) {
      Py_XDECREF(dims), Py_XDECREF(strides), Py_XDECREF(box);
      Py_DECREF(out);
      return NULL;
    }
    PyList_SET_ITEM(out, i, t);
  }
  return out;
}

/* The launch plan of an entry point `name` taking `want` arguments, the
 * plan's capsule first; where `map` is not NULL, *map is the argument at
 * `map_arg`, an index of one of the plan's tensor maps. NULL with a Python
 * error set (TypeError for another count, ValueError for no such map). */
static const TunedLaunchPlan* plan_args(const char* name, PyObject* const* args, Py_ssize_t nargs,
                                        Py_ssize_t want, Py_ssize_t map_arg, Py_ssize_t* map) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, want);
    return NULL;
  }
  const TunedLaunchPlan* p = (const TunedLaunchPlan*)PyCapsule_GetPointer(args[0], kLaunchPlanName);
  if (!p || !map) return p;
  *map = PyLong_AsSsize_t(args[map_arg]);
  if (*map == -1 && PyErr_Occurred()) return NULL;
  if (*map < 0 || *map >= (Py_ssize_t)p->map_count) {
    PyErr_Format(PyExc_ValueError, "%s: no map %zd (the plan has %u)", name, *map, p->map_count);
    return NULL;
  }
  return p;
}

/* encode_map(plan, driver, i, base, out) -> None or (what, CUresult): map i
 * of the plan over device address `base` into the 64-byte aligned 128 bytes
 * at address `out` (tuned_encode_map: zeros where TMA cannot take it). */
static PyObject* encode_map(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Py_ssize_t i;
  const TunedLaunchPlan* p = plan_args("encode_map", args, nargs, 5, 2, &i);
  if (!p) return NULL;
  const TunedDriver* d = driver_of(args[1]);
  if (!d) return NULL;
  uint64_t base = PyLong_AsUnsignedLongLong(args[3]);
  void* out = PyLong_AsVoidPtr(args[4]);
  if (PyErr_Occurred()) return NULL;
  if (!out || (uintptr_t)out % 64 != 0) {
    PyErr_SetString(PyExc_ValueError, "encode_map: a null or unaligned output");
    return NULL;
  }
  const char* what = NULL;
  int r = tuned_encode_map(d, &p->maps[i], base, NULL, out, &what);
  if (r != 0) return failed(what, r);
  Py_RETURN_NONE;
}

/* stages(plan, i, base) -> whether a launch over `base` stages map i's operand (tuned_stages). */
static PyObject* stages(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Py_ssize_t i;
  const TunedLaunchPlan* p = plan_args("stages", args, nargs, 3, 1, &i);
  if (!p) return NULL;
  uint64_t base = PyLong_AsUnsignedLongLong(args[2]);
  if (PyErr_Occurred()) return NULL;
  return PyBool_FromLong(tuned_stages(&p->maps[i], base));
}

/* launch_planned(plan, driver, fn, ctx, params, maps, stream, zero_ptr, zero_count)
 * -> None, or (what, status) where a step failed (a CUresult, or a negative
 * TUNED_LAUNCH_* code): tuned_launch. driver: the address of a TunedDriver
 * (a stand-in's), or 0 for libcuda's; params: the address of the plan's
 * param_count parameter pointers; maps: 0, or the address of one pointer
 * per map to its encoding (a cache; a staged map is encoded anew). */
static PyObject* launch_planned(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  const TunedLaunchPlan* p = plan_args("launch_planned", args, nargs, 9, 0, NULL);
  if (!p) return NULL;
  const TunedDriver* d = driver_of(args[1]);
  if (!d) return NULL;
  void* fn = PyLong_AsVoidPtr(args[2]);
  void* ctx = PyLong_AsVoidPtr(args[3]);
  void* const* params = (void* const*)PyLong_AsVoidPtr(args[4]);
  const void* const* maps = (const void* const*)PyLong_AsVoidPtr(args[5]);
  void* stream = PyLong_AsVoidPtr(args[6]);
  unsigned long long zero_ptr = PyLong_AsUnsignedLongLong(args[7]);
  long long zero_count = PyLong_AsLongLong(args[8]);
  if (PyErr_Occurred()) return NULL;
  if (!fn || !params) {
    PyErr_SetString(PyExc_ValueError, "launch_planned: null function or parameters");
    return NULL;
  }
  const char* what = NULL;
  int r = tuned_launch(d, fn, ctx, p, params, maps, stream, zero_ptr, zero_count, &what);
  if (r != 0) return failed(what, r);
  Py_RETURN_NONE;
}

/* The C API for tuned._torchcall (tuned/_fastcall_api.h). */

static int api_plan_shape(PyObject* plan, long long* m, long long* n) {
  Plan* p = (Plan*)PyCapsule_GetPointer(plan, kPlanName);
  if (!p) return -1;
  *m = p->m;
  *n = p->n;
  return 0;
}

static int api_run(PyObject* plan, const void* b, const void* a, void* c, void* stream,
                   void* workspace, const char** what) {
  Plan* p = (Plan*)PyCapsule_GetPointer(plan, kPlanName);
  if (!p) return INT_MIN;
  return run_plan(p, b, a, c, stream, workspace, what);
}

static int api_launch(void* fn, void* ctx, const unsigned int dims[7], void** params, void* stream,
                      unsigned long long zero_ptr, long long zero_count, const char** what) {
  if (!libcuda) {
    PyErr_SetString(PyExc_RuntimeError, "tuned._fastcall: no CUDA driver (call init() first)");
    return INT_MIN;
  }
  LaunchConfig config = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6],
                         NULL, NULL, 0};
  return launch_kernel(fn, ctx, &config, params, stream, zero_ptr, zero_count, what);
}

static int api_is_capturing(void* stream, int* capturing) {
  *capturing = 0;
  if (!libcuda) return -1;
  return cuStreamIsCapturing_(stream, capturing);
}

static int api_plan_of(PyObject* capsule, TunedLaunchPlan* out) {
  const TunedLaunchPlan* p = (const TunedLaunchPlan*)PyCapsule_GetPointer(capsule, kLaunchPlanName);
  if (!p) return -1;
  *out = *p;
  return 0;
}

static int api_launch_plan(const TunedDriver* driver, void* fn, void* ctx,
                           const TunedLaunchPlan* plan, void* const* params, void* stream,
                           unsigned long long zero_ptr, long long zero_count, const char** what) {
  return tuned_launch(driver ? driver : launcher, fn, ctx, plan, params, NULL, stream, zero_ptr,
                      zero_count, what);
}

static int api_stages(const TunedLaunchPlan* plan, unsigned int map, unsigned long long base) {
  return map < plan->map_count && tuned_stages(&plan->maps[map], base);
}

static const FastcallApi kApi = {api_plan_shape,   api_run,     api_launch,     api_is_capturing,
                                 api_plan_of, api_launch_plan, api_stages};

static PyMethodDef methods[] = {
    {"init", init, METH_NOARGS, "init() -> (driver, cublas): load libcuda and cuBLAS"},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(fn, ctx, config, params, stream, zero_ptr, zero_count) -> None or (what, CUresult)"},
    {"cublas_create", cublas_create, METH_O, "cublas_create(ctx) -> (handle, cublasStatus_t)"},
    {"cublas_status_name", cublas_status_name, METH_O, "the name of a cublasStatus_t"},
    {"cublaslt_create", cublaslt_create, METH_O, "cublaslt_create(ctx) -> (handle, cublasStatus_t)"},
    {"plan", (PyCFunction)(void (*)(void))plan, METH_FASTCALL,
     "plan(handle, lt, ctx, math, opb, opa, n, m, k, ldb, lda, ldc, workspace_limit[, ab_type, "
     "c_type]) -> "
     "(plan, workspace bytes or -1) or (what, status)"},
    {"launch_plan", (PyCFunction)(void (*)(void))launch_plan, METH_FASTCALL,
     "launch_plan(grid, block, smem, prescale, param_count, maps) -> plan"},
    {"plan_maps", plan_maps, METH_O, "plan_maps(plan) -> the maps in the driver's enums"},
    {"encode_map", (PyCFunction)(void (*)(void))encode_map, METH_FASTCALL,
     "encode_map(plan, driver, i, base, out) -> None or (what, CUresult)"},
    {"stages", (PyCFunction)(void (*)(void))stages, METH_FASTCALL,
     "stages(plan, i, base) -> whether the launch stages map i's operand"},
    {"launch_planned", (PyCFunction)(void (*)(void))launch_planned, METH_FASTCALL,
     "launch_planned(plan, driver, fn, ctx, params, maps, stream, zero_ptr, zero_count) -> None or "
     "(what, status)"},
    {"gemm", (PyCFunction)(void (*)(void))gemm, METH_FASTCALL,
     "gemm(plan, b, a, c, stream, workspace) -> None or (what, status)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tuned._fastcall",
                                    "The launches of tuned.Kernel and tuned.matmul in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fastcall(void) {
  PyObject* m = PyModule_Create(&module);
  if (!m) return NULL;
  PyObject* api = PyCapsule_New((void*)&kApi, "tuned._fastcall._api", NULL);
  if (!api || PyModule_AddObject(m, "_api", api) != 0) {
    Py_XDECREF(api);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
