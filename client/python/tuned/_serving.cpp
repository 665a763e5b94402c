// Serving at torch's dispatcher, in C++: the operators tuned::linear and
// tuned::mm, the served-kernel table they look up, and the scoped kernels of
// aten::mm, aten::addmm and aten::linear that tuned.enable() installs.
//
// The table maps a GEMM's key (M, N, K, dtype, the operands' layouts, math
// mode, epilogue, device) to what serves it: the daemon's kernel (its launch
// prepared once: function, geometry, parameter bytes, the slots a call sets)
// or torch's own kernel (the daemon serves cuBLAS, or has nothing yet). A hit
// costs a hash look-up, the result's allocation and one launch through
// tuned._fastcall's C launcher. A key never seen runs torch's own kernel and is
// queued; tuned/serving.py's thread takes it (next_miss), asks the daemon
// (GetBest, tune_if_missing) and fills the entry (put_kernel, put_torch). A
// miss neither blocks nor raises. A miss while the stream is being captured
// into a CUDA graph is not queued (the filler would load modules during the
// capture): look each shape up once before capturing, and the graph replays
// the served kernels.
//
// Tests run all of it on CPU tensors with a stand-in driver (stand_in): the
// CPU's keys are served and the launches are the stand-in's calls.
#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/linear_native.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>
#include <torch/version.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef TUNED_TORCH_CUDA  // torch built with CUDA (setup.py): its streams and kernels
#include <ATen/ops/addmm_cuda_dispatch.h>
#include <ATen/ops/mm_cuda_dispatch.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "_serving.h"

namespace tuned_serving {
namespace {

using at::Tensor;
using Clock = std::chrono::steady_clock;

const FastcallApi* api = nullptr;

// Math modes (tuner.proto Math's names); kAuto: torch's setting (TF32 where
// torch's cuBLAS matmuls use it), resolved per call.
enum Math : int8_t { kIeee = 0, kTf32 = 1, kAccurate = 2, kAuto = -1 };
constexpr const char* kMathNames[] = {"ieee_fp32", "tf32", "fp32_accurate"};
// Problem dtypes (Problem.dtype's names) of A, B and C alike.
constexpr const char* kDtypeNames[] = {"f32", "bf16", "f16"};
constexpr const char* kEpilogueNames[] = {"none", "bias"};
constexpr size_t kMaxParams = 32;  // an SGEMM kernel has 8 (9 with an epilogue's bias)
constexpr size_t kMaxMaps = 4;     // tensor maps a kernel takes (a TMA GEMM: A, B, C)

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

struct KeyHash {
  size_t operator()(const Key& key) const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : {static_cast<uint64_t>(key.m), static_cast<uint64_t>(key.n),
                       static_cast<uint64_t>(key.k),
                       static_cast<uint64_t>(key.dtype) | static_cast<uint64_t>(key.math) << 8 |
                           static_cast<uint64_t>(key.epilogue) << 16 |
                           static_cast<uint64_t>(static_cast<uint8_t>(key.device)) << 24 |
                           static_cast<uint64_t>(key.la) << 32 |
                           static_cast<uint64_t>(key.lb) << 40}) {
      h = (h ^ v) * 1099511628211ull;
    }
    return h;
  }
};

// A tensor map a launch encodes over an operand, as driver.Launcher
// describes it (its enums resolved there): the pointer parameter it covers,
// its CUtensorMapDataType, rank, dims, strides in bytes (of dims 1..), box,
// CUtensorMapSwizzle and CUtensorMapL2promotion; `stage`: where the operand
// is not TMA-aligned the kernel needs a padded copy (not made here).
struct MapSpec {
  int pointer_arg = 0, dtype = 0, swizzle = 0, l2 = 0;
  unsigned int rank = 0;
  unsigned long long dims[5] = {}, strides[4] = {};
  unsigned int box[5] = {};
  bool stage = false;
};

// A served kernel's launch, prepared by tuned.Kernel (its driver.Launcher):
// the function and its context, grid, block and dynamic shared bytes, each
// parameter's bytes (8 a parameter), the parameters a call sets, and the
// tensor maps passed after the parameters.
struct Launch {
  void* fn = nullptr;
  void* ctx = nullptr;
  unsigned int dims[7] = {};
  std::vector<uint64_t> params;
  int slot[6] = {};  // A, B, C, alpha, beta, and the epilogue's bias
  int slots = 5;     // 6 with a bias
  bool prescale = false;  // the kernel adds into C: C set to zero first
  std::vector<MapSpec> maps;
};

enum class State : uint8_t { kPending, kTorch, kKernel };

struct Entry {
  State state = State::kPending;
  Clock::time_point retry = Clock::time_point::max();  // kTorch: when the daemon is asked again
  std::shared_ptr<const Launch> launch;                // kKernel
};

// The served-kernel table, its queue of misses, and its counters.
struct Table {
  std::shared_mutex mutex;
  std::unordered_map<Key, Entry, KeyHash> entries;
  std::mutex queue_mutex;
  std::condition_variable queued;
  std::deque<Key> queue;
  std::atomic<int64_t> hits{0}, misses{0}, torch_calls{0}, uncaptured_misses{0};
};

Table& table() {
  static Table* t = new Table();  // never destroyed: the filler thread may outlive exit
  return *t;
}

// The device type whose tensors are served (CUDA; the CPU with a stand-in
// driver in the tests) and the stand-in driver (a Python object with
// cuLaunchKernelEx and cuMemsetD32Async, as tests/cuda_fake.py's).
std::atomic<c10::DeviceType> served_type{c10::DeviceType::CUDA};
PyObject* stand_in_driver = nullptr;

// CUlaunchConfig (cuda.h), as tuned/_fastcall.c and tuned.driver.LaunchConfig declare it.
struct LaunchConfig {
  unsigned int grid[3], block[3], smem;
  void* stream;
  void* attrs;
  unsigned int num_attrs;
};

void* CurrentStream(const Tensor& t) {
#ifdef TUNED_TORCH_CUDA
  if (t.is_cuda()) return c10::cuda::getCurrentCUDAStream(t.get_device()).stream();
#endif
  (void)t;
  return nullptr;
}

// Whether `stream` is being captured; true where the driver cannot tell (so
// that nothing is queued during a capture).
bool Capturing(void* stream) {
  if (stand_in_driver != nullptr) return false;
  int capturing = 0;
  return api == nullptr || api->is_capturing(stream, &capturing) != 0 || capturing != 0;
}

// The stand-in driver's method `name` called with the arguments that
// `format` and the values build (Py_BuildValue), the GIL taken; its int
// result (a CUresult; -1 where the call raised, the error printed).
template <typename... Values>
int CallStandIn(const char* name, const char* format, Values... values) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int r = -1;
  PyObject* args = Py_BuildValue(format, values...);
  PyObject* method = args ? PyObject_GetAttrString(stand_in_driver, name) : nullptr;
  PyObject* result = method ? PyObject_CallObject(method, args) : nullptr;
  if (result != nullptr) r = static_cast<int>(PyLong_AsLong(result));
  if (PyErr_Occurred()) PyErr_Print();
  Py_XDECREF(result);
  Py_XDECREF(method);
  Py_XDECREF(args);
  PyGILState_Release(gil);
  return r;
}

// Whether TMA takes a map over `base` (driver.tma_takes): the base 16-byte
// aligned and every stride a multiple of 16.
bool TmaTakes(unsigned long long base, const MapSpec& m) {
  if (base % 16 != 0) return false;
  for (unsigned int i = 0; i + 1 < m.rank; ++i) {
    if (m.strides[i] % 16 != 0) return false;
  }
  return true;
}

// Runs `launch` with A, B, C (and bias) at these addresses on `stream`, its
// tensor maps encoded over them (zero bytes where TMA does not take the
// operand: the kernel then reads it without TMA). False, with nothing
// launched, where a staged map's operand is not TMA-aligned; raises
// (c10::Error) with the failed step and its CUresult.
bool Run(const Launch& launch, const void* a, const void* b, void* c, const void* bias,
         int64_t c_words, void* stream) {
  uint64_t values[kMaxParams];
  void* pointers[kMaxParams + kMaxMaps];
  alignas(64) unsigned char maps[kMaxMaps][128];
  std::memcpy(values, launch.params.data(), launch.params.size() * 8);
  for (size_t i = 0; i < launch.params.size(); ++i) pointers[i] = &values[i];
  const void* addresses[4] = {a, b, c, bias};
  for (int i = 0; i < 3; ++i) std::memcpy(&values[launch.slot[i]], &addresses[i], sizeof(void*));
  if (launch.slots > 5) std::memcpy(&values[launch.slot[5]], &addresses[3], sizeof(void*));
  const float one = 1.0f, zero = 0.0f;
  std::memcpy(&values[launch.slot[3]], &one, sizeof(float));
  std::memcpy(&values[launch.slot[4]], &zero, sizeof(float));
  for (size_t i = 0; i < launch.maps.size(); ++i) {
    const MapSpec& m = launch.maps[i];
    unsigned long long base = 0;
    std::memcpy(&base, &values[m.pointer_arg], sizeof(base));
    const bool takes = TmaTakes(base, m);
    if (!takes && m.stage) return false;
    std::memset(maps[i], 0, sizeof(maps[i]));
    pointers[launch.params.size() + i] = maps[i];
    if (!takes) continue;
    const int r = stand_in_driver != nullptr
        ? CallStandIn("encode_tiled", "(KiIKKKKii)", reinterpret_cast<unsigned long long>(maps[i]),
                      m.dtype, m.rank, base, reinterpret_cast<unsigned long long>(m.dims),
                      reinterpret_cast<unsigned long long>(m.strides),
                      reinterpret_cast<unsigned long long>(m.box), m.swizzle, m.l2)
        : api->encode_tiled(maps[i], m.dtype, m.rank, reinterpret_cast<void*>(base), m.dims,
                            m.strides, m.box, m.swizzle, m.l2);
    TORCH_CHECK(r == 0, "tuned: cuTensorMapEncodeTiled failed: CUresult ", r);
  }
  const auto c_address = reinterpret_cast<unsigned long long>(c);
  if (stand_in_driver != nullptr) {
    if (launch.prescale) {
      const int r = CallStandIn("cuMemsetD32Async", "(KiLK)", c_address, 0,
                                static_cast<long long>(c_words),
                                reinterpret_cast<unsigned long long>(stream));
      TORCH_CHECK(r == 0, "tuned: cuMemsetD32Async (prescale C) failed: CUresult ", r);
    }
    LaunchConfig config{{launch.dims[0], launch.dims[1], launch.dims[2]},
                        {launch.dims[3], launch.dims[4], launch.dims[5]},
                        launch.dims[6], stream, nullptr, 0};
    const int r = CallStandIn("cuLaunchKernelEx", "(KKKO)",
                              reinterpret_cast<unsigned long long>(&config),
                              reinterpret_cast<unsigned long long>(launch.fn),
                              reinterpret_cast<unsigned long long>(pointers), Py_None);
    TORCH_CHECK(r == 0, "tuned: cuLaunchKernelEx failed: CUresult ", r);
    return true;
  }
  const char* what = "";
  const int r = api->launch(launch.fn, launch.ctx, launch.dims, pointers, stream,
                            launch.prescale ? c_address : 0, launch.prescale ? c_words : 0, &what);
  TORCH_CHECK(r == 0, "tuned: ", what, " failed: CUresult ", r);
  return true;
}

int8_t DtypeIndex(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0;
    case at::kBFloat16: return 1;
    case at::kHalf: return 2;
    default: return -1;
  }
}

// An operand's layout: 'n' (row-major; preferred where both hold), 't'
// (strides (1, rows), a dimension of size 1 taking any stride), 0 for
// neither (as tuned/layout.py's operand_layout).
char LayoutOf(const Tensor& t) {
  if (t.is_contiguous()) return 'n';
  const int64_t rows = t.size(0), cols = t.size(1);
  if ((t.stride(0) == 1 || rows == 1) && (t.stride(1) == rows || cols == 1)) return 't';
  return 0;
}

// The math mode of a call's `math` argument for operands of dtype index
// `dtype`: 16-bit operands compute in fp32 whatever torch's TF32 setting
// (ieee_fp32); kAuto for float32 reads torch's cuBLAS setting.
int8_t ResolveMath(int8_t math, int8_t dtype) {
  if (dtype != 0) return kIeee;
  if (math != kAuto) return math;
  return at::globalContext().allowTF32CuBLAS() ? kTf32 : kIeee;
}

int8_t ParseMath(c10::string_view math, at::ScalarType dtype) {
  int8_t mode = kAuto;
  if (math == "ieee_fp32") {
    mode = kIeee;
  } else if (math == "tf32") {
    mode = kTf32;
  } else if (math == "fp32_accurate") {
    mode = kAccurate;
  } else {
    TORCH_CHECK(math == "auto", "tuned: unknown math mode '", std::string(math),
                "' (known: ieee_fp32, tf32, fp32_accurate, auto)");
  }
  TORCH_CHECK(mode == kAuto || mode == kIeee || dtype == at::kFloat,
              "tuned: ", dtype, " operands take math ieee_fp32 (or auto) only, not ",
              std::string(math));
  return mode;
}

void Enqueue(Table& t, const Key& key) {
  {
    std::lock_guard<std::mutex> lock(t.queue_mutex);
    t.queue.push_back(key);
  }
  t.queued.notify_one();
}

// What serves `key`: its kernel's launch, or null (torch's own kernel runs).
// A key never seen, or a kTorch entry past its retry time, is marked
// pending and queued for the filler, unless `stream` is being captured.
std::shared_ptr<const Launch> Find(const Key& key, void* stream) {
  Table& t = table();
  {
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    auto it = t.entries.find(key);
    if (it != t.entries.end() && it->second.state == State::kKernel) return it->second.launch;
    t.torch_calls.fetch_add(1, std::memory_order_relaxed);
    if (it != t.entries.end() &&
        (it->second.state == State::kPending || Clock::now() < it->second.retry)) {
      return nullptr;
    }
  }
  if (Capturing(stream)) {
    t.uncaptured_misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  bool queue = false;
  {
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    auto [it, inserted] = t.entries.try_emplace(key);  // a new entry is kPending
    Entry& e = it->second;
    if (inserted) {
      queue = true;
    } else if (e.state == State::kTorch && Clock::now() >= e.retry) {
      e.state = State::kPending;
      queue = true;
    }
  }
  if (queue) {
    t.misses.fetch_add(1, std::memory_order_relaxed);
    Enqueue(t, key);
  }
  return nullptr;
}

// op(A) @ op(B) (+ bias) by the served kernel: a (m, k) and b (k, n) in their
// layouts, bias undefined or (n) of their dtype; into `out` where it is
// defined (row-major (m, n) of their dtype), else a new tensor. Returns an
// undefined tensor where tuned does not serve the call (the caller runs
// torch's own kernel): another device type or dtype, mixed devices, a layout
// neither "n" nor "t", an empty or oversized GEMM, a bias of another shape,
// or a key the table has no kernel for (queued as Find says).
Tensor Serve(const Tensor& a, const Tensor& b, const Tensor& bias, int8_t math, Tensor out) {
  if (a.device().type() != served_type.load(std::memory_order_relaxed) || a.dim() != 2 ||
      b.dim() != 2 || b.device() != a.device() || b.scalar_type() != a.scalar_type()) {
    return Tensor();
  }
  const int8_t dtype = DtypeIndex(a.scalar_type());
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (dtype < 0 || b.size(0) != k || m == 0 || n == 0 || k == 0 || m > INT32_MAX ||
      n > INT32_MAX || k > INT32_MAX) {
    return Tensor();
  }
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != n || !bias.is_contiguous() ||
                         bias.scalar_type() != a.scalar_type() || bias.device() != a.device())) {
    return Tensor();
  }
  if (out.defined() && (out.scalar_type() != a.scalar_type() || out.device() != a.device() ||
                        out.dim() != 2 || out.size(0) != m || out.size(1) != n ||
                        !out.is_contiguous())) {
    return Tensor();
  }
  Key key;
  key.m = m, key.n = n, key.k = k, key.dtype = dtype;
  key.la = LayoutOf(a), key.lb = LayoutOf(b);
  if (key.la == 0 || key.lb == 0) return Tensor();
  key.math = ResolveMath(math, dtype);
  key.epilogue = bias.defined() && dtype != 0 ? 1 : 0;  // a 16-bit kernel adds the bias itself
  key.device = static_cast<int8_t>(a.device().index());
  void* stream = CurrentStream(a);
  std::shared_ptr<const Launch> launch = Find(key, stream);
  if (!launch) return Tensor();
  if (!out.defined()) out = at::empty({m, n}, a.options());
  Table& t = table();
  if (!Run(*launch, a.data_ptr(), b.data_ptr(), out.data_ptr(),
           key.epilogue ? bias.data_ptr() : nullptr, m * n, stream)) {
    t.torch_calls.fetch_add(1, std::memory_order_relaxed);
    return Tensor();
  }
  t.hits.fetch_add(1, std::memory_order_relaxed);
  if (bias.defined() && key.epilogue == 0) out.add_(bias);
  return out;
}

// tf32 for float32 operands in mode `math` for a scope, as torch's cuBLAS
// reads it (restored after); nothing for kAuto or 16-bit operands.
class Tf32Scope {
 public:
  Tf32Scope(int8_t math, at::ScalarType dtype) {
    if (math == kAuto || dtype != at::kFloat) return;
    const bool want = math == kTf32;
    if (at::globalContext().allowTF32CuBLAS() != want) {
      at::globalContext().setAllowTF32CuBLAS(want);
      restore_ = true;
      saved_ = !want;
    }
  }
  ~Tf32Scope() {
    if (restore_) at::globalContext().setAllowTF32CuBLAS(saved_);
  }

 private:
  bool restore_ = false, saved_ = false;
};

// torch's own kernels for the device, called without the dispatcher, so that
// tuned's own registrations for aten::mm and aten::addmm are not re-entered.
Tensor TorchMm(const Tensor& a, const Tensor& b) {
#ifdef TUNED_TORCH_CUDA
  if (a.is_cuda()) return at::cuda::mm(a, b);
#endif
  if (a.is_cpu()) return at::cpu::mm(a, b);
  return at::mm(a, b);
}

Tensor TorchAddmm(const Tensor& self, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                  const at::Scalar& alpha) {
#ifdef TUNED_TORCH_CUDA
  if (a.is_cuda()) return at::cuda::addmm(self, a, b, beta, alpha);
#endif
  if (a.is_cpu()) return at::cpu::addmm(self, a, b, beta, alpha);
  return at::addmm(self, a, b, beta, alpha);
}

Tensor& TorchMmOut(const Tensor& a, const Tensor& b, Tensor& out) {
#ifdef TUNED_TORCH_CUDA
  if (a.is_cuda()) return at::cuda::mm_out(out, a, b);
#endif
  if (a.is_cpu()) return at::cpu::mm_out(out, a, b);
  return at::mm_out(out, a, b);
}

Tensor& TorchAddmmOut(const Tensor& self, const Tensor& a, const Tensor& b,
                      const at::Scalar& beta, const at::Scalar& alpha, Tensor& out) {
#ifdef TUNED_TORCH_CUDA
  if (a.is_cuda()) return at::cuda::addmm_out(out, self, a, b, beta, alpha);
#endif
  if (a.is_cpu()) return at::cpu::addmm_out(out, self, a, b, beta, alpha);
  return at::addmm_out(out, self, a, b, beta, alpha);
}

std::vector<int64_t> LinearShape(const Tensor& x, int64_t n) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = n;
  return shape;
}

// linear(x, weight, bias) served, or by torch's own kernels in the mode.
Tensor Linear(const Tensor& x, const Tensor& weight, const c10::optional<Tensor>& bias,
              int8_t math) {
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1),
              "tuned::linear takes x (..., K) and weight (N, K), not ", x.sizes(), " and ",
              weight.sizes());
  const int64_t n = weight.size(0), k = weight.size(1);
  const Tensor b = bias.has_value() ? *bias : Tensor();
  const bool flat = x.dim() == 2 || x.is_contiguous();
  if (flat) {
    Tensor y = Serve(x.dim() == 2 ? x : x.view({-1, k}), weight.t(), b, math, Tensor());
    if (y.defined()) return x.dim() == 2 ? y : y.view(LinearShape(x, n));
  }
  Tf32Scope scope(math, x.scalar_type());
  const Tensor x2 = x.reshape({-1, k});
  Tensor y = b.defined() && b.dim() <= 1 ? TorchAddmm(b, x2, weight.t(), 1, 1)
                                         : TorchMm(x2, weight.t());
  if (b.defined() && b.dim() > 1) y = y.view(LinearShape(x, n)).add_(b);
  return x.dim() == 2 ? y : y.view(LinearShape(x, n));
}

Tensor Mm(const Tensor& a, const Tensor& b, int8_t math) {
  Tensor y = Serve(a, b, Tensor(), math, Tensor());
  if (y.defined()) return y;
  Tf32Scope scope(math, a.scalar_type());
  return TorchMm(a, b);
}

// ---- tuned::linear and tuned::mm ----

Tensor LinearKernel(const Tensor& x, const Tensor& weight, const c10::optional<Tensor>& bias,
                    c10::string_view math) {
  return Linear(x, weight, bias, ParseMath(math, x.scalar_type()));
}

Tensor MmKernel(const Tensor& a, const Tensor& b, c10::string_view math) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0),
              "tuned::mm takes (M, K) and (K, N), not ", a.sizes(), " and ", b.sizes());
  return Mm(a, b, ParseMath(math, a.scalar_type()));
}

// The results' shapes and dtypes while torch.compile traces (no data).
Tensor LinearMeta(const Tensor& x, const Tensor& weight, const c10::optional<Tensor>& bias,
                  c10::string_view math) {
  ParseMath(math, x.scalar_type());
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1,
              "tuned::linear takes x (..., K) and weight (N, K), not ", x.sizes(), " and ",
              weight.sizes());
  (void)bias;
#if TORCH_VERSION_MAJOR >= 2
  std::vector<c10::SymInt> shape(x.sym_sizes().begin(), x.sym_sizes().end());
  shape.back() = weight.sym_size(0);
  return at::empty_symint(shape, x.options());
#else
  return at::empty(LinearShape(x, weight.size(0)), x.options());
#endif
}

Tensor MmMeta(const Tensor& a, const Tensor& b, c10::string_view math) {
  ParseMath(math, a.scalar_type());
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "tuned::mm takes (M, K) and (K, N), not ", a.sizes(),
              " and ", b.sizes());
#if TORCH_VERSION_MAJOR >= 2
  return at::empty_symint({a.sym_size(0), b.sym_size(1)}, a.options());
#else
  return at::empty({a.size(0), b.size(1)}, a.options());
#endif
}

const c10::TypedOperatorHandle<Tensor(const Tensor&, const Tensor&, const c10::optional<Tensor>&,
                                      c10::string_view)>&
LinearOp() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("tuned::linear", "")
                             .typed<Tensor(const Tensor&, const Tensor&,
                                           const c10::optional<Tensor>&, c10::string_view)>();
  return op;
}

const c10::TypedOperatorHandle<Tensor(const Tensor&, const Tensor&, c10::string_view)>& MmOp() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("tuned::mm", "")
                             .typed<Tensor(const Tensor&, const Tensor&, c10::string_view)>();
  return op;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Gradients through the same serving: dX = dY W ("nn"), dW = dY^T X ("tn"),
// both tuned::mm; db = dY summed over the rows.
class LinearFunction : public torch::autograd::Function<LinearFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const c10::optional<Tensor>& bias, c10::string_view math) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["math"] = std::string(math);
    ctx->saved_data["bias"] = bias.has_value();
    at::AutoDispatchBelowADInplaceOrView below;
    return LinearOp().call(x, weight, bias, math);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &weight = saved[1];
    const std::string math = ctx->saved_data["math"].toStringRef();
    const int64_t n = weight.size(0), k = weight.size(1);
    const Tensor g = grads[0].reshape({-1, n}).contiguous();
    Tensor gx, gw, gb;
    if (ctx->needs_input_grad(0)) gx = MmOp().call(g, weight, math).view(x.sizes());
    if (ctx->needs_input_grad(1)) gw = MmOp().call(g.t(), x.reshape({-1, k}), math);
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) gb = g.sum(0);
    return {gx, gw, gb, Tensor()};
  }
};

// dA = dY B^T ("nt" for a row-major B), dB = A^T dY ("tn"), tuned::mm.
class MmFunction : public torch::autograd::Function<MmFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b,
                        c10::string_view math) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["math"] = std::string(math);
    at::AutoDispatchBelowADInplaceOrView below;
    return MmOp().call(a, b, math);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const std::string math = ctx->saved_data["math"].toStringRef();
    const Tensor g = grads[0].contiguous();
    Tensor ga, gb;
    if (ctx->needs_input_grad(0)) ga = MmOp().call(g, saved[1].t(), math);
    if (ctx->needs_input_grad(1)) gb = MmOp().call(saved[0].t(), g, math);
    return {ga, gb, Tensor()};
  }
};

bool Records(std::initializer_list<const Tensor*> tensors) {
  if (!at::GradMode::is_enabled()) return false;
  for (const Tensor* t : tensors) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

// The autograd kernels: the Function where autograd records, else straight
// to the device kernel (no node made: a served call's CPU time).
Tensor LinearAutograd(const Tensor& x, const Tensor& weight, const c10::optional<Tensor>& bias,
                      c10::string_view math) {
  const Tensor b = bias.has_value() ? *bias : Tensor();
  if (Records({&x, &weight, &b})) return LinearFunction::apply(x, weight, bias, math);
  at::AutoDispatchBelowADInplaceOrView below;
  return LinearOp().call(x, weight, bias, math);
}

Tensor MmAutograd(const Tensor& a, const Tensor& b, c10::string_view math) {
  if (Records({&a, &b})) return MmFunction::apply(a, b, math);
  at::AutoDispatchBelowADInplaceOrView below;
  return MmOp().call(a, b, math);
}

// ---- aten::mm, aten::addmm, aten::linear while tuned.enable() holds ----

Tensor AtenMm(const Tensor& a, const Tensor& b) {
  Tensor y = Serve(a, b, Tensor(), kAuto, Tensor());
  return y.defined() ? y : TorchMm(a, b);
}

Tensor& AtenMmOut(const Tensor& a, const Tensor& b, Tensor& out) {
  if (Serve(a, b, Tensor(), kAuto, out).defined()) return out;
  return TorchMmOut(a, b, out);
}

// The bias addmm adds: self of shape (n) or (1, n) with beta = alpha = 1; undefined otherwise.
Tensor AddmmBias(const Tensor& self, const Tensor& b, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  if (!beta.equal(1) || !alpha.equal(1) || b.dim() != 2) return Tensor();
  if (self.dim() == 1) return self;
  if (self.dim() == 2 && self.size(0) == 1) return self.view({self.size(1)});
  return Tensor();
}

Tensor AtenAddmm(const Tensor& self, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  const Tensor bias = AddmmBias(self, b, beta, alpha);
  if (bias.defined()) {
    Tensor y = Serve(a, b, bias, kAuto, Tensor());
    if (y.defined()) return y;
  }
  return TorchAddmm(self, a, b, beta, alpha);
}

Tensor& AtenAddmmOut(const Tensor& self, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                     const at::Scalar& alpha, Tensor& out) {
  const Tensor bias = AddmmBias(self, b, beta, alpha);
  if (bias.defined() && !out.is_same(self) && Serve(a, b, bias, kAuto, out).defined()) return out;
  return TorchAddmmOut(self, a, b, beta, alpha, out);
}

Tensor AtenLinear(const Tensor& x, const Tensor& weight, const c10::optional<Tensor>& bias) {
  return Linear(x, weight, bias, kAuto);
}

// aten::linear's autograd kernel while tuned's device kernel holds: torch's
// composite linear (addmm, matmul: recorded, and served through tuned's mm
// and addmm) where autograd records, else the served linear.
Tensor AtenLinearAutograd(const Tensor& x, const Tensor& weight,
                          const c10::optional<Tensor>& bias) {
  const Tensor b = bias.has_value() ? *bias : Tensor();
  if (Records({&x, &weight, &b})) return at::native::linear(x, weight, bias);
  at::AutoDispatchBelowADInplaceOrView below;
  return Linear(x, weight, bias, kAuto);
}

// A warning handler that drops torch's "overriding a previously registered
// kernel" warnings of the override's own registrations.
#if TORCH_VERSION_MAJOR >= 2
class SilentHandler : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};
#endif

// The registrations tuned.enable() holds: made on enter, removed (the
// previous kernels restored) when destroyed on exit.
struct Override {
  std::unique_ptr<torch::Library> device, autograd;
};

constexpr const char* kOverrideName = "tuned._torchcall.Override";

std::unique_ptr<Override> MakeOverride() {
  const bool cpu = served_type.load() == c10::DeviceType::CPU;
  const c10::DispatchKey key = cpu ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA;
  const c10::DispatchKey autograd = cpu ? c10::DispatchKey::AutogradCPU
                                        : c10::DispatchKey::AutogradCUDA;
#if TORCH_VERSION_MAJOR >= 2
  SilentHandler silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
#endif
  auto o = std::make_unique<Override>();
  o->device = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", key, __FILE__,
                                               __LINE__);
  o->device->impl("mm", TORCH_FN(AtenMm));
  o->device->impl("mm.out", TORCH_FN(AtenMmOut));
  o->device->impl("addmm", TORCH_FN(AtenAddmm));
  o->device->impl("addmm.out", TORCH_FN(AtenAddmmOut));
  o->device->impl("linear", TORCH_FN(AtenLinear));
  o->autograd = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", autograd, __FILE__,
                                                 __LINE__);
  o->autograd->impl("linear", TORCH_FN(AtenLinearAutograd));
  return o;
}

void FreeOverride(PyObject* capsule) {
  delete static_cast<Override*>(PyCapsule_GetPointer(capsule, kOverrideName));
}

// ---- the Python functions ----

PyObject* KeyTuple(const Key& key) {
  const char layout[3] = {key.la, key.lb, 0};
  return Py_BuildValue("(LLLssssi)", static_cast<long long>(key.m),
                       static_cast<long long>(key.n), static_cast<long long>(key.k),
                       kDtypeNames[key.dtype], layout, kMathNames[key.math],
                       kEpilogueNames[key.epilogue], static_cast<int>(key.device));
}

int IndexOf(const char* name, const char* const* names, int count) {
  for (int i = 0; i < count; ++i) {
    if (std::strcmp(name, names[i]) == 0) return i;
  }
  return -1;
}

// A key tuple back (as next_miss gives it); false with a Python error set.
bool ParseKey(PyObject* tuple, Key* key) {
  long long m, n, k;
  const char *dtype, *layout, *math, *epilogue;
  int device;
  if (!PyArg_ParseTuple(tuple, "LLLssssi", &m, &n, &k, &dtype, &layout, &math, &epilogue,
                        &device)) {
    return false;
  }
  key->m = m, key->n = n, key->k = k, key->device = static_cast<int8_t>(device);
  const int d = IndexOf(dtype, kDtypeNames, 3), mm = IndexOf(math, kMathNames, 3),
            e = IndexOf(epilogue, kEpilogueNames, 2);
  if (d < 0 || mm < 0 || e < 0 || std::strlen(layout) != 2 ||
      (layout[0] != 'n' && layout[0] != 't') || (layout[1] != 'n' && layout[1] != 't')) {
    PyErr_SetString(PyExc_ValueError, "not a key of the served-kernel table");
    return false;
  }
  key->dtype = static_cast<int8_t>(d), key->math = static_cast<int8_t>(mm);
  key->epilogue = static_cast<int8_t>(e), key->la = layout[0], key->lb = layout[1];
  return true;
}

// linear(x, weight, bias) -> tuned::linear(x, weight, bias, "auto") through
// the dispatcher (autograd included), called from Python without torch's
// argument parsing.
PyObject* PyLinear(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 3 || !THPVariable_Check(args[0]) || !THPVariable_Check(args[1]) ||
      (args[2] != Py_None && !THPVariable_Check(args[2]))) {
    PyErr_SetString(PyExc_TypeError, "linear(x, weight, bias): tensors (bias may be None)");
    return nullptr;
  }
  c10::optional<Tensor> bias;
  if (args[2] != Py_None) bias = THPVariable_Unpack(args[2]);
  return THPVariable_Wrap(
      LinearOp().call(THPVariable_Unpack(args[0]), THPVariable_Unpack(args[1]), bias, "auto"));
  END_HANDLE_TH_ERRORS
}

// next_miss(timeout_s) -> the next queued key, or None after timeout_s
// seconds (waits without the GIL). A key: (m, n, k, dtype, layout, math,
// epilogue, device index; -1 for the CPU).
PyObject* PyNextMiss(PyObject*, PyObject* arg) {
  const double timeout = PyFloat_AsDouble(arg);
  if (PyErr_Occurred()) return nullptr;
  Table& t = table();
  Key key;
  bool got = false;
  Py_BEGIN_ALLOW_THREADS
  std::unique_lock<std::mutex> lock(t.queue_mutex);
  got = t.queued.wait_for(lock, std::chrono::duration<double>(timeout > 0 ? timeout : 0),
                          [&t] { return !t.queue.empty(); });
  if (got) {
    key = t.queue.front();
    t.queue.pop_front();
  }
  Py_END_ALLOW_THREADS
  if (!got) Py_RETURN_NONE;
  return KeyTuple(key);
}

void Put(const Key& key, Entry entry) {
  Table& t = table();
  std::unique_lock<std::shared_mutex> lock(t.mutex);
  t.entries[key] = std::move(entry);
}

// put_torch(key, retry_s): torch's own kernel serves `key`; the daemon is
// asked again after retry_s seconds (never where retry_s < 0).
PyObject* PyPutTorch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "put_torch(key, retry_s)");
    return nullptr;
  }
  Key key;
  if (!ParseKey(args[0], &key)) return nullptr;
  const double retry = PyFloat_AsDouble(args[1]);
  if (PyErr_Occurred()) return nullptr;
  Entry e;
  e.state = State::kTorch;
  e.retry = retry < 0 ? Clock::time_point::max()
                      : Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(retry));
  Put(key, std::move(e));
  Py_RETURN_NONE;
}

bool ReadInts(PyObject* seq, int64_t* out, Py_ssize_t n, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return false;
  bool ok = PySequence_Fast_GET_SIZE(fast) == n;
  for (Py_ssize_t i = 0; ok && i < n; ++i) {
    out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    ok = !PyErr_Occurred();
  }
  Py_DECREF(fast);
  if (!ok && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: %zd integers expected", what, n);
  return ok;
}

// One tensor map of put_kernel's: (pointer_arg, dtype, dims, strides,
// box, swizzle, l2, stage); false with a Python error set.
bool ParseMap(PyObject* item, size_t params, MapSpec* m) {
  PyObject *dims, *strides, *box, *stage;
  if (!PyArg_ParseTuple(item, "iiOOOiiO", &m->pointer_arg, &m->dtype, &dims, &strides, &box,
                        &m->swizzle, &m->l2, &stage)) {
    return false;
  }
  const Py_ssize_t rank = PySequence_Size(dims);
  if (rank < 1 || rank > 5 || m->pointer_arg < 0 || static_cast<size_t>(m->pointer_arg) >= params) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "put_kernel: a malformed tensor map");
    return false;
  }
  m->rank = static_cast<unsigned int>(rank);
  int64_t v[5];
  if (!ReadInts(dims, v, rank, "put_kernel: a map's dims")) return false;
  for (Py_ssize_t i = 0; i < rank; ++i) m->dims[i] = static_cast<unsigned long long>(v[i]);
  if (!ReadInts(strides, v, rank - 1, "put_kernel: a map's strides")) return false;
  for (Py_ssize_t i = 0; i + 1 < rank; ++i) m->strides[i] = static_cast<unsigned long long>(v[i]);
  if (!ReadInts(box, v, rank, "put_kernel: a map's box")) return false;
  for (Py_ssize_t i = 0; i < rank; ++i) m->box[i] = static_cast<unsigned int>(v[i]);
  m->stage = PyObject_IsTrue(stage) == 1;
  return true;
}

// put_kernel(key, fn, ctx, dims, params, slots, prescale, maps): the kernel
// serves `key`. fn, ctx: its CUfunction and the CUcontext it was loaded into
// (kept loaded by the caller for the process's life); dims: grid x, y, z,
// block x, y, z, dynamic shared bytes; params: 8 bytes a parameter, each
// value from the start of its 8; slots: the indices of A, B, C, alpha, beta
// (and the bias of a kernel with an epilogue: 6); prescale: C is set to zero
// first; maps: its tensor maps in parameter order after `params` (ParseMap's
// tuples), encoded each call over the call's pointers.
PyObject* PyPutKernel(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 8) {
    PyErr_SetString(PyExc_TypeError, "put_kernel takes 8 arguments");
    return nullptr;
  }
  Key key;
  if (!ParseKey(args[0], &key)) return nullptr;
  auto launch = std::make_shared<Launch>();
  launch->fn = PyLong_AsVoidPtr(args[1]);
  launch->ctx = PyLong_AsVoidPtr(args[2]);
  if (PyErr_Occurred()) return nullptr;
  int64_t dims[7], slots[6];
  if (!ReadInts(args[3], dims, 7, "put_kernel: dims")) return nullptr;
  const Py_ssize_t count = PySequence_Size(args[5]);
  if (count != 5 + key.epilogue) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_ValueError,
                      "put_kernel: slots are A, B, C, alpha, beta (and bias with an epilogue)");
    }
    return nullptr;
  }
  if (!ReadInts(args[5], slots, count, "put_kernel: slots")) return nullptr;
  for (int i = 0; i < 7; ++i) launch->dims[i] = static_cast<unsigned int>(dims[i]);
  char* bytes = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(args[4], &bytes, &size) != 0) return nullptr;
  if (size % 8 != 0 || size / 8 > static_cast<Py_ssize_t>(kMaxParams)) {
    PyErr_SetString(PyExc_ValueError, "put_kernel: params must be 8 bytes a parameter, 32 at most");
    return nullptr;
  }
  launch->params.resize(size / 8);
  std::memcpy(launch->params.data(), bytes, size);
  launch->slots = static_cast<int>(count);
  for (int i = 0; i < count; ++i) {
    if (slots[i] < 0 || slots[i] >= static_cast<int64_t>(launch->params.size())) {
      PyErr_SetString(PyExc_ValueError, "put_kernel: a slot outside the parameters");
      return nullptr;
    }
    launch->slot[i] = static_cast<int>(slots[i]);
  }
  launch->prescale = PyObject_IsTrue(args[6]) == 1;
  PyObject* maps = PySequence_Fast(args[7], "put_kernel: maps must be a sequence");
  if (!maps) return nullptr;
  const Py_ssize_t map_count = PySequence_Fast_GET_SIZE(maps);
  bool ok = static_cast<size_t>(map_count) <= kMaxMaps;
  if (!ok) PyErr_SetString(PyExc_ValueError, "put_kernel: at most 4 tensor maps");
  launch->maps.resize(ok ? map_count : 0);
  for (Py_ssize_t i = 0; ok && i < map_count; ++i) {
    ok = ParseMap(PySequence_Fast_GET_ITEM(maps, i), launch->params.size(), &launch->maps[i]);
  }
  Py_DECREF(maps);
  if (!ok) return nullptr;
  if (launch->prescale && key.dtype != 0) {
    PyErr_SetString(PyExc_ValueError, "put_kernel: only a float32 C is prescaled");
    return nullptr;
  }
  if (api == nullptr || (stand_in_driver == nullptr && api->launch == nullptr)) {
    PyErr_SetString(PyExc_RuntimeError, "put_kernel: no launcher");
    return nullptr;
  }
  Entry e;
  e.state = State::kKernel;
  e.launch = std::move(launch);
  Put(key, std::move(e));
  Py_RETURN_NONE;
}

// clear(): forgets every entry and queued key (the counters stay).
PyObject* PyClear(PyObject*, PyObject*) {
  Table& t = table();
  {
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    t.entries.clear();
  }
  std::lock_guard<std::mutex> lock(t.queue_mutex);
  t.queue.clear();
  Py_RETURN_NONE;
}

// stats() -> {"hits", "misses", "torch", "uncaptured_misses", "entries"}:
// calls served by a kernel, keys queued, calls run by torch's own kernel,
// misses not queued during a capture; the table's size.
PyObject* PyStats(PyObject*, PyObject*) {
  Table& t = table();
  Py_ssize_t size;
  {
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    size = static_cast<Py_ssize_t>(t.entries.size());
  }
  return Py_BuildValue("{sLsLsLsLsn}", "hits", static_cast<long long>(t.hits.load()), "misses",
                       static_cast<long long>(t.misses.load()), "torch",
                       static_cast<long long>(t.torch_calls.load()), "uncaptured_misses",
                       static_cast<long long>(t.uncaptured_misses.load()), "entries", size);
}

// override_begin() -> a capsule holding tuned's kernels for aten::mm,
// mm.out, addmm, addmm.out and linear of the served device type (and
// linear's autograd kernel), registered now; override_end(capsule) removes
// them (torch's own kernels serve again).
PyObject* PyOverrideBegin(PyObject*, PyObject*) {
  HANDLE_TH_ERRORS
  std::unique_ptr<Override> o = MakeOverride();
  PyObject* capsule = PyCapsule_New(o.get(), kOverrideName, FreeOverride);
  if (capsule) o.release();
  return capsule;
  END_HANDLE_TH_ERRORS
}

PyObject* PyOverrideEnd(PyObject*, PyObject* capsule) {
  HANDLE_TH_ERRORS
  auto* o = static_cast<Override*>(PyCapsule_GetPointer(capsule, kOverrideName));
  if (!o) return nullptr;
  if (PyCapsule_SetPointer(capsule, new Override()) != 0) return nullptr;
  delete o;
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

// stand_in(device_type, driver): serve tensors of device type "cpu" with
// `driver` (a Python object with cuLaunchKernelEx(config, fn, params,
// extra) and cuMemsetD32Async(ptr, value, count, stream), as
// tests/cuda_fake.py's, and encode_tiled(map, dtype, rank, base, dims,
// strides, box, swizzle, l2), the last four arguments addresses of arrays
// of 64-bit integers (box: 32-bit)) launching; stand_in("cuda", None) goes
// back to the GPU and tuned._fastcall's launcher.
PyObject* PyStandIn(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "stand_in(device_type, driver)");
    return nullptr;
  }
  const char* type = PyUnicode_AsUTF8(args[0]);
  if (!type) return nullptr;
  const bool cpu = std::strcmp(type, "cpu") == 0;
  if (cpu == (args[1] == Py_None) || (!cpu && std::strcmp(type, "cuda") != 0)) {
    PyErr_SetString(PyExc_ValueError, "stand_in: (\"cpu\", a driver) or (\"cuda\", None)");
    return nullptr;
  }
  Py_XDECREF(stand_in_driver);
  stand_in_driver = cpu ? args[1] : nullptr;
  Py_XINCREF(stand_in_driver);
  served_type.store(cpu ? c10::DeviceType::CPU : c10::DeviceType::CUDA);
  Py_RETURN_NONE;
}

#define FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

}  // namespace

void SetApi(const FastcallApi* fastcall_api) { api = fastcall_api; }

PyMethodDef kMethods[] = {
    {"linear", FASTCALL(PyLinear), METH_FASTCALL,
     "linear(x, weight, bias) -> tuned::linear(x, weight, bias, 'auto')"},
    {"next_miss", PyNextMiss, METH_O, "next_miss(timeout_s) -> a queued key or None"},
    {"put_torch", FASTCALL(PyPutTorch), METH_FASTCALL, "put_torch(key, retry_s)"},
    {"put_kernel", FASTCALL(PyPutKernel), METH_FASTCALL,
     "put_kernel(key, fn, ctx, dims, params, slots, prescale, maps)"},
    {"clear", PyClear, METH_NOARGS, "clear(): forget every entry and queued key"},
    {"stats", PyStats, METH_NOARGS, "stats() -> the table's counters"},
    {"override_begin", PyOverrideBegin, METH_NOARGS,
     "override_begin() -> tuned's aten::mm, addmm, linear kernels, registered"},
    {"override_end", PyOverrideEnd, METH_O, "override_end(capsule): removes them"},
    {"stand_in", FASTCALL(PyStandIn), METH_FASTCALL, "stand_in(device_type, driver)"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace tuned_serving

TORCH_LIBRARY_FRAGMENT(tuned, m) {
  m.def("linear(Tensor x, Tensor weight, Tensor? bias=None, str math=\"ieee_fp32\") -> Tensor");
  m.def("mm(Tensor a, Tensor b, str math=\"auto\") -> Tensor");
}

TORCH_LIBRARY_IMPL(tuned, CUDA, m) {
  m.impl("linear", TORCH_FN(tuned_serving::LinearKernel));
  m.impl("mm", TORCH_FN(tuned_serving::MmKernel));
}

TORCH_LIBRARY_IMPL(tuned, CPU, m) {
  m.impl("linear", TORCH_FN(tuned_serving::LinearKernel));
  m.impl("mm", TORCH_FN(tuned_serving::MmKernel));
}

TORCH_LIBRARY_IMPL(tuned, Meta, m) {
  m.impl("linear", TORCH_FN(tuned_serving::LinearMeta));
  m.impl("mm", TORCH_FN(tuned_serving::MmMeta));
}

TORCH_LIBRARY_IMPL(tuned, Autograd, m) {
  m.impl("linear", TORCH_FN(tuned_serving::LinearAutograd));
  m.impl("mm", TORCH_FN(tuned_serving::MmAutograd));
}
