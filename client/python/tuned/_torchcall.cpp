// tuned._torchcall: the calls of tuned.matmul and tuned.Kernel.sgemm whose
// checks and allocation cost the most from Python, in C++; with
// tuned/_serving.cpp and _serving_table.cpp, serving at torch's dispatcher
// (their functions are added to this module).
//
// Allocating the result from Python (a.new_empty(m, n)) is itself a torch
// op dispatched from Python: 2-4.6 us of the CPU a call on the H100 host, a
// fifth to a third of what a CPU-bound stream of small products costs
// (bench/RESULTS.md cublaslt-plan).
// Here the result is allocated with at::empty and the plan of tuned._fastcall
// runs on it, in one call. Kernel.sgemm's launch (sgemm) checks its tensors,
// sets the kernel's parameters and launches, in one call too. Optional:
// built at pip install only where torch is importable (its headers and
// libraries); without it tuned/blas.py and tuned/kernel.py do this from
// Python.
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include "_fastcall_api.h"  // tuned._fastcall's C API
#include "_serving.h"       // serving at torch's dispatcher (tuned/_serving*.cpp)

namespace {

const FastcallApi* api = nullptr;

// matmul(plan, a, b, stream, workspace) -> a new row-major (m, n) tensor of
// a's dtype on a's device holding op(A) op(B), or (what, status) where a
// step failed (as tuned._fastcall.gemm). plan: a tuned._fastcall plan; a, b:
// the route's checked operands (float32, on the plan's GPU, in its layout);
// stream: the CUstream to run on; workspace: the stream's workspace (device
// address) or 0. torch's own exceptions (an allocation that fails:
// torch.OutOfMemoryError) are raised as torch raises them.
PyObject* matmul(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "matmul takes 5 arguments");
    return nullptr;
  }
  if (!THPVariable_Check(args[1]) || !THPVariable_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "matmul: a and b must be tensors");
    return nullptr;
  }
  long long m = 0, n = 0;
  if (api->plan_shape(args[0], &m, &n) != 0) return nullptr;
  void* stream = PyLong_AsVoidPtr(args[3]);
  void* workspace = PyLong_AsVoidPtr(args[4]);
  if (PyErr_Occurred()) return nullptr;
  const at::Tensor& a = THPVariable_Unpack(args[1]);
  const at::Tensor& b = THPVariable_Unpack(args[2]);
  at::Tensor out = at::empty({m, n}, a.options());
  const char* what = "";
  int s = api->run(args[0], b.data_ptr(), a.data_ptr(), out.data_ptr(), stream,
                   workspace, &what);
  if (s == INT_MIN) return nullptr;
  if (s != 0) return Py_BuildValue("(si)", what, s);
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

// A Kernel.sgemm launch prepared once (sgemm_spec): the kernel, its
// geometry, its parameters' initial values, and what a call's tensors must
// be. Kernels with tensor maps are not prepared here (their maps are encoded
// per pointer, in Python).
struct SgemmSpec {
  void* fn = nullptr;
  void* ctx = nullptr;
  unsigned int dims[7] = {};  // grid x, y, z; block x, y, z; dynamic shared bytes
  std::vector<uint64_t> params;  // each parameter's bytes, from the start of its 8
  int slot[5] = {};  // the parameters A, B, C, alpha, beta
  bool prescale = false;  // the kernel adds alpha * A B into C
  at::ScalarType dtype = at::kFloat;      // A's and B's
  at::ScalarType out_dtype = at::kFloat;  // C's
  int index = 0;  // the CUDA device
  int64_t m = 0, n = 0, k = 0;
  // op(A)'s and op(B)'s strides where transposed ("t"); {0, 0}: contiguous
  std::array<int64_t, 2> stride_a{}, stride_b{};
};

constexpr const char* kSpecName = "tuned._torchcall.SgemmSpec";
constexpr size_t kMaxParams = 32;  // an SGEMM kernel has 8 (M, N, K, alpha, A, B, beta, C)

void FreeSpec(PyObject* capsule) {
  delete static_cast<SgemmSpec*>(PyCapsule_GetPointer(capsule, kSpecName));
}

using tuned_serving::ReadInts;
using tuned_serving::ReadParams;

// sgemm_spec(fn, ctx, dims, params, slots, prescale, dtype, out_dtype, index,
// m, n, k, stride_a, stride_b) -> a capsule for sgemm. fn, ctx: the CUfunction and
// the CUcontext it was loaded into; dims: 7 integers (grid, block, dynamic
// shared bytes); params: bytes, 8 a parameter, each value from the start of
// its 8 (little-endian: an int or float in the first 4); slots: the indices
// of A, B, C, alpha and beta among them; prescale: C is set to zero first
// where beta is 0 (the kernel adds into it); dtype, out_dtype: a's and b's
// torch.dtype, out's; index: their CUDA device; m, n, k: the shape;
// stride_a, stride_b: op(A)'s and op(B)'s strides where transposed, None
// where contiguous.
PyObject* sgemm_spec(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 14) {
    PyErr_SetString(PyExc_TypeError, "sgemm_spec takes 14 arguments");
    return nullptr;
  }
  auto spec = std::make_unique<SgemmSpec>();
  spec->fn = PyLong_AsVoidPtr(args[0]);
  spec->ctx = PyLong_AsVoidPtr(args[1]);
  if (PyErr_Occurred()) return nullptr;
  int64_t dims[7], slots[5];
  if (!ReadInts(args[2], dims, 7, "sgemm_spec: dims") ||
      !ReadInts(args[4], slots, 5, "sgemm_spec: slots")) {
    return nullptr;
  }
  for (int i = 0; i < 7; ++i) spec->dims[i] = static_cast<unsigned int>(dims[i]);
  if (!ReadParams(args[3], kMaxParams, &spec->params, "sgemm_spec: params")) return nullptr;
  for (int i = 0; i < 5; ++i) {
    if (slots[i] < 0 || slots[i] >= static_cast<int64_t>(spec->params.size())) {
      PyErr_SetString(PyExc_ValueError, "sgemm_spec: a slot outside the parameters");
      return nullptr;
    }
    spec->slot[i] = static_cast<int>(slots[i]);
  }
  spec->prescale = PyObject_IsTrue(args[5]) == 1;
  if (!THPDtype_Check(args[6]) || !THPDtype_Check(args[7])) {
    PyErr_SetString(PyExc_TypeError, "sgemm_spec: dtype and out_dtype must be torch.dtypes");
    return nullptr;
  }
  spec->dtype = reinterpret_cast<THPDtype*>(args[6])->scalar_type;
  spec->out_dtype = reinterpret_cast<THPDtype*>(args[7])->scalar_type;
  spec->index = static_cast<int>(PyLong_AsLong(args[8]));
  spec->m = PyLong_AsLongLong(args[9]);
  spec->n = PyLong_AsLongLong(args[10]);
  spec->k = PyLong_AsLongLong(args[11]);
  if (PyErr_Occurred()) return nullptr;
  if (args[12] != Py_None && !ReadInts(args[12], spec->stride_a.data(), 2, "sgemm_spec: stride_a")) {
    return nullptr;
  }
  if (args[13] != Py_None && !ReadInts(args[13], spec->stride_b.data(), 2, "sgemm_spec: stride_b")) {
    return nullptr;
  }
  PyObject* capsule = PyCapsule_New(spec.get(), kSpecName, FreeSpec);
  if (capsule) spec.release();
  return capsule;
}

// Whether t is on the spec's device, of `dtype` and of (rows, cols),
// contiguous where `stride` is {0, 0}, else of that stride.
bool Fits(const at::Tensor& t, const SgemmSpec& s, at::ScalarType dtype, int64_t rows,
          int64_t cols, const std::array<int64_t, 2>& stride) {
  if (t.scalar_type() != dtype || t.dim() != 2 || t.size(0) != rows || t.size(1) != cols ||
      !t.is_cuda() || t.get_device() != s.index) {
    return false;
  }
  if (stride[0] == 0 && stride[1] == 0) return t.is_contiguous();
  return t.stride(0) == stride[0] && t.stride(1) == stride[1];
}

// sgemm(spec, a, b, out, alpha, beta, stream) -> out (a new tensor where out
// is None), or (what, CUresult) where a step failed, or NotImplemented where
// a tensor or value is not what the spec asks (Kernel.sgemm then checks
// from Python and names what is wrong). out = alpha * a @ b + beta * out on
// the CUstream `stream`; alpha, beta: numbers (the kernel's are fp32); a
// new out only with beta 0; beta other than 0 and 1 with a prescaling
// kernel is left to Python (out.mul_(beta) first).
PyObject* sgemm(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError, "sgemm takes 7 arguments");
    return nullptr;
  }
  auto* s = static_cast<SgemmSpec*>(PyCapsule_GetPointer(args[0], kSpecName));
  if (!s) return nullptr;
  PyObject* out_obj = args[3];
  const bool new_out = out_obj == Py_None;
  if (!THPVariable_Check(args[1]) || !THPVariable_Check(args[2]) ||
      (!new_out && !THPVariable_Check(out_obj))) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  const double alpha = PyFloat_AsDouble(args[4]);
  const double beta = PyFloat_AsDouble(args[5]);
  void* stream = PyLong_AsVoidPtr(args[6]);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_NOTIMPLEMENTED;
  }
  if ((new_out && beta != 0) || (s->prescale && beta != 0 && beta != 1)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  const at::Tensor& a = THPVariable_Unpack(args[1]);
  const at::Tensor& b = THPVariable_Unpack(args[2]);
  constexpr std::array<int64_t, 2> kContiguous{};
  if (!Fits(a, *s, s->dtype, s->m, s->k, s->stride_a) ||
      !Fits(b, *s, s->dtype, s->k, s->n, s->stride_b)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  at::Tensor out;
  if (new_out) {
    out = at::empty({s->m, s->n}, a.options().dtype(s->out_dtype));
  } else {
    const at::Tensor& given = THPVariable_Unpack(out_obj);
    if (!Fits(given, *s, s->out_dtype, s->m, s->n, kContiguous)) Py_RETURN_NOTIMPLEMENTED;
    out = given;
  }
  // The driver copies the parameters at the launch: a copy per call, on the
  // stack of this thread, needs no lock.
  uint64_t values[kMaxParams];
  void* param_ptrs[kMaxParams];
  std::memcpy(values, s->params.data(), s->params.size() * 8);
  for (size_t i = 0; i < s->params.size(); ++i) param_ptrs[i] = &values[i];
  void* ptrs[3] = {a.data_ptr(), b.data_ptr(), out.data_ptr()};
  for (int i = 0; i < 3; ++i) std::memcpy(&values[s->slot[i]], &ptrs[i], sizeof(void*));
  const float scalars[2] = {static_cast<float>(alpha), static_cast<float>(beta)};
  std::memcpy(&values[s->slot[3]], &scalars[0], sizeof(float));
  std::memcpy(&values[s->slot[4]], &scalars[1], sizeof(float));
  const bool zero = s->prescale && beta == 0;
  const char* what = "";
  const int r = api->launch(s->fn, s->ctx, s->dims, param_ptrs, stream,
                            zero ? reinterpret_cast<unsigned long long>(ptrs[2]) : 0,
                            zero ? s->m * s->n : 0, &what);
  if (r == INT_MIN) return nullptr;
  if (r != 0) return Py_BuildValue("(si)", what, r);
  if (new_out) return THPVariable_Wrap(std::move(out));
  Py_INCREF(out_obj);
  return out_obj;
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"matmul", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(matmul)), METH_FASTCALL,
     "matmul(plan, a, b, stream, workspace) -> a new tensor, or (what, status)"},
    {"sgemm_spec", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(sgemm_spec)),
     METH_FASTCALL,
     "sgemm_spec(fn, ctx, dims, params, slots, prescale, dtype, out_dtype, index, m, n, k, "
     "stride_a, stride_b) -> a launch prepared for sgemm"},
    {"sgemm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(sgemm)), METH_FASTCALL,
     "sgemm(spec, a, b, out, alpha, beta, stream) -> out, (what, CUresult) or NotImplemented"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "tuned._torchcall",
                      "tuned.matmul's served-cuBLAS call, Kernel.sgemm's launch and serving at torch's "
                      "dispatcher, in C++.", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__torchcall() {
  api = static_cast<const FastcallApi*>(PyCapsule_Import("tuned._fastcall._api", 0));
  if (!api) return nullptr;
  tuned_serving::SetApi(api);
  PyObject* m = PyModule_Create(&module);
  if (m && (PyModule_AddFunctions(m, tuned_serving::kOpMethods) != 0 ||
            PyModule_AddFunctions(m, tuned_serving::kTableMethods) != 0)) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
