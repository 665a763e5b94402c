// Serving at torch's dispatcher (tuned/_serving.cpp: the operators and
// tuned.enable()'s kernels; tuned/_serving_table.cpp: the served-kernel
// table, its launches and the filler's functions): what the two share, and
// what tuned/_torchcall.cpp adds to its module. Needs Python.h first.
#ifndef TUNED_SERVING_H_
#define TUNED_SERVING_H_

#include <Python.h>

#include <c10/core/DeviceType.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "_fastcall_api.h"

namespace tuned_serving {

// Math modes (tuner.proto Math's names); kAuto: torch's setting (TF32 where
// torch's cuBLAS matmuls use it), resolved per call.
enum Math : int8_t { kIeee = 0, kTf32 = 1, kAccurate = 2, kAuto = -1 };

// One GEMM: C(m x n) = op(A)(m x k) op(B)(k x n), C row-major; la, lb: 'n'
// (row-major) or 't' (the transpose of a row-major matrix).
struct Key {
  int64_t m = 0, n = 0, k = 0;
  int8_t dtype = 0, math = 0, epilogue = 0, device = 0;
  char la = 'n', lb = 'n';
  bool operator==(const Key& o) const {
    return m == o.m && n == o.n && k == o.k && dtype == o.dtype && math == o.math &&
           epilogue == o.epilogue && device == o.device && la == o.la && lb == o.lb;
  }
};

// A served kernel's launch (tuned/_serving_table.cpp).
struct Launch;

// What serves `key`: its kernel's launch, or null (torch's own kernel
// runs). A key never seen, or one whose torch entry is past its retry time,
// is marked pending and queued for the filler, unless `stream` is being
// captured into a CUDA graph.
std::shared_ptr<const Launch> Find(const Key& key, void* stream);

// Runs `launch` with A, B, C (and the bias of a kernel with an epilogue) at
// these device addresses on `stream`, C of c_words 32-bit words (set to
// zero first where the kernel adds into it), its tensor maps encoded over
// them. False, with nothing launched, where a staged map's operand is not
// TMA-aligned; raises (c10::Error) with the failed step and its CUresult.
bool Run(const Launch& launch, const void* a, const void* b, void* c, const void* bias,
         int64_t c_words, void* stream);

// The table's counters (stats()): a call the served kernel ran, a call
// torch's own kernel ran.
void CountHit();
void CountTorchCall();

// The device type whose tensors are served: CUDA, or the CPU with the
// tests' stand-in driver (stand_in).
c10::DeviceType ServedType();

// Sets tuned._fastcall's C API (the launches), once, at the module's import.
void SetApi(const FastcallApi* api);

// The module's functions, each array ending with a null entry: the
// operators' (tuned/_serving.cpp) and the table's (tuned/_serving_table.cpp),
// documented there and in tuned/serving.py.
extern PyMethodDef kOpMethods[];
extern PyMethodDef kTableMethods[];

/// Reads `n` integers of the Python sequence `seq` into `out`; false with a
/// Python error set (ValueError naming `what` where the length differs).
bool ReadInts(PyObject* seq, int64_t* out, Py_ssize_t n, const char* what);

/// Reads a kernel's packed parameters (bytes, 8 a parameter, at most `max`
/// parameters) into `out`; false with a Python error set (ValueError naming
/// `what`).
bool ReadParams(PyObject* bytes, size_t max, std::vector<uint64_t>* out, const char* what);

}  // namespace tuned_serving

#endif  // TUNED_SERVING_H_
