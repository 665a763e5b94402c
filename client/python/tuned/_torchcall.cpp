// tuned._torchcall: a served-cuBLAS call that returns a new tensor, in C++.
//
// Allocating the result from Python (a.new_empty(m, n)) is itself a torch
// op dispatched from Python: 2-4.6 us of the CPU a call on the H100 host, a
// fifth to a third of what a CPU-bound stream of small products costs
// (bench/results/2026-11-26_h100_drop_in_cublaslt_plan/cost_probe_*.log).
// Here the result is allocated with at::empty and the plan of tuned._fastcall
// runs on it, in one call. Optional: built at pip install only where torch
// is importable (its headers and libraries); without it tuned/blas.py
// allocates from Python.
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <climits>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

namespace {

// tuned._fastcall's FastcallApi (the capsule "tuned._fastcall._api"); the
// same layout as there.
struct FastcallApi {
  int (*plan_shape)(PyObject* plan, long long* m, long long* n);
  int (*run)(PyObject* plan, const void* b, const void* a, void* c, void* stream, void* workspace,
             const char** what);
};

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

PyMethodDef methods[] = {
    {"matmul", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(matmul)), METH_FASTCALL,
     "matmul(plan, a, b, stream, workspace) -> a new tensor, or (what, status)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "tuned._torchcall",
                      "A served-cuBLAS call returning a new tensor, in C++.", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__torchcall() {
  api = static_cast<const FastcallApi*>(PyCapsule_Import("tuned._fastcall._api", 0));
  if (!api) return nullptr;
  return PyModule_Create(&module);
}
