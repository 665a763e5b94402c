// The served-kernel table of serving at torch's dispatcher
// (tuned/_serving.h): keys to what serves them, the queue of misses that
// the filler (tuned/serving.py) takes, the launch of a served kernel through
// tuned._fastcall's C launcher (its tensor maps encoded per call), and the
// Python functions the filler and the tests call. The tests launch on CPU
// tensors through a stand-in driver (stand_in).
#include <Python.h>

#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "_serving.h"

namespace tuned_serving {

using Clock = std::chrono::steady_clock;

namespace {

const FastcallApi* api = nullptr;

constexpr const char* kMathNames[] = {"ieee_fp32", "tf32", "fp32_accurate"};
// Problem dtypes (Problem.dtype's names) of A, B and C alike.
constexpr const char* kDtypeNames[] = {"f32", "bf16", "f16"};
constexpr const char* kEpilogueNames[] = {"none", "bias"};
constexpr size_t kMaxParams = 32;  // an SGEMM kernel has 8 (9 with an epilogue's bias)

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

}  // namespace

// A served kernel's launch, prepared by tuned.Kernel (its driver.Launcher):
// the function and its context, the C launcher's plan (geometry, tensor
// maps), each parameter's bytes (8 a parameter), the parameters a call sets.
struct Launch {
  void* fn = nullptr;
  void* ctx = nullptr;
  TunedLaunchPlan plan{};
  std::vector<uint64_t> params;
  int slot[6] = {};  // A, B, C, alpha, beta, and the epilogue's bias
  int slots = 5;     // 6 with a bias
  bool prescale = false;  // the kernel adds into C: C set to zero first
};

namespace {

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
// driver in the tests) and the stand-in driver (the C launcher's table of
// its functions, tests/cuda_fake.py's launcher_table; null: libcuda's).
std::atomic<c10::DeviceType> served_type{c10::DeviceType::CUDA};
std::atomic<const TunedDriver*> stand_in_driver{nullptr};
// Whether the stand-in's stream counts as being captured (stand_in_capture).
std::atomic<bool> stand_in_capturing{false};

// Whether `stream` is being captured; true where the driver cannot tell (so
// that nothing is queued during a capture).
bool Capturing(void* stream) {
  if (stand_in_driver != nullptr) return stand_in_capturing;
  int capturing = 0;
  return api == nullptr || api->is_capturing(stream, &capturing) != 0 || capturing != 0;
}

void Enqueue(Table& t, const Key& key) {
  {
    std::lock_guard<std::mutex> lock(t.queue_mutex);
    t.queue.push_back(key);
  }
  t.queued.notify_one();
}

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

// put_kernel(key, fn, ctx, plan, params, slots, prescale): the kernel
// serves `key`. fn, ctx: its CUfunction and the CUcontext it was loaded into
// (kept loaded by the caller for the process's life); plan: its launch plan
// (tuned._fastcall.launch_plan: geometry, tensor maps encoded each call over
// the call's pointers); params: 8 bytes a parameter, each value from the
// start of its 8; slots: the indices of A, B, C, alpha, beta (and the bias
// of a kernel with an epilogue: 6); prescale: C is set to zero first.
PyObject* PyPutKernel(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError, "put_kernel takes 7 arguments");
    return nullptr;
  }
  Key key;
  if (!ParseKey(args[0], &key)) return nullptr;
  auto launch = std::make_shared<Launch>();
  launch->fn = PyLong_AsVoidPtr(args[1]);
  launch->ctx = PyLong_AsVoidPtr(args[2]);
  if (PyErr_Occurred()) return nullptr;
  if (api == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "put_kernel: no launcher");
    return nullptr;
  }
  if (api->plan_of(args[3], &launch->plan) != 0) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "put_kernel: the plan is not tuned._fastcall.launch_plan's");
    return nullptr;
  }
  int64_t slots[6];
  const Py_ssize_t count = PySequence_Size(args[5]);
  if (count != 5 + key.epilogue) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_ValueError,
                      "put_kernel: slots are A, B, C, alpha, beta (and bias with an epilogue)");
    }
    return nullptr;
  }
  if (!ReadInts(args[5], slots, count, "put_kernel: slots")) return nullptr;
  if (!ReadParams(args[4], kMaxParams, &launch->params, "put_kernel: params")) return nullptr;
  if (launch->plan.param_count != 0 && launch->plan.param_count != launch->params.size()) {
    PyErr_SetString(PyExc_ValueError, "put_kernel: the plan's maps follow other parameters");
    return nullptr;
  }
  launch->slots = static_cast<int>(count);
  for (int i = 0; i < count; ++i) {
    if (slots[i] < 0 || slots[i] >= static_cast<int64_t>(launch->params.size())) {
      PyErr_SetString(PyExc_ValueError, "put_kernel: a slot outside the parameters");
      return nullptr;
    }
    launch->slot[i] = static_cast<int>(slots[i]);
  }
  launch->prescale = PyObject_IsTrue(args[6]) == 1;
  if (launch->prescale && key.dtype != 0) {
    PyErr_SetString(PyExc_ValueError, "put_kernel: only a float32 C is prescaled");
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

// stand_in(device_type, driver): serve tensors of device type "cpu" with
// `driver` (an object whose launcher_table() gives the address of a
// TunedDriver, as tests/cuda_fake.py's) launching; stand_in("cuda", None)
// goes back to the GPU and libcuda.
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
  const TunedDriver* table = nullptr;
  if (cpu) {
    PyObject* address = PyObject_CallMethod(args[1], "launcher_table", nullptr);
    if (!address) return nullptr;
    table = static_cast<const TunedDriver*>(PyLong_AsVoidPtr(address));
    Py_DECREF(address);
    if (PyErr_Occurred()) return nullptr;
  }
  stand_in_driver.store(table);
  stand_in_capturing.store(false);
  served_type.store(cpu ? c10::DeviceType::CPU : c10::DeviceType::CUDA);
  Py_RETURN_NONE;
}

// stand_in_capture(on): the stand-in's stream counts as being captured into
// a CUDA graph (on) or not, as the driver would say of a GPU's stream.
PyObject* PyStandInCapture(PyObject*, PyObject* on) {
  const int value = PyObject_IsTrue(on);
  if (value < 0) return nullptr;
  stand_in_capturing.store(value == 1);
  Py_RETURN_NONE;
}

#define FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

}  // namespace

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

bool ReadParams(PyObject* bytes_object, size_t max, std::vector<uint64_t>* out, const char* what) {
  char* bytes = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(bytes_object, &bytes, &size) != 0) return false;
  if (size % 8 != 0 || size / 8 > static_cast<Py_ssize_t>(max)) {
    PyErr_Format(PyExc_ValueError, "%s must be 8 bytes a parameter, %zu at most", what, max);
    return false;
  }
  out->resize(size / 8);
  std::memcpy(out->data(), bytes, size);
  return true;
}

// A staged operand (TensorMap.stage where TMA cannot take it) is not
// copied here: the call runs torch's kernel (false).
bool Run(const Launch& launch, const void* a, const void* b, void* c, const void* bias,
         int64_t c_words, void* stream) {
  uint64_t values[kMaxParams];
  void* pointers[kMaxParams];
  std::memcpy(values, launch.params.data(), launch.params.size() * 8);
  for (size_t i = 0; i < launch.params.size(); ++i) pointers[i] = &values[i];
  const void* addresses[4] = {a, b, c, bias};
  for (int i = 0; i < 3; ++i) std::memcpy(&values[launch.slot[i]], &addresses[i], sizeof(void*));
  if (launch.slots > 5) std::memcpy(&values[launch.slot[5]], &addresses[3], sizeof(void*));
  const float one = 1.0f, zero = 0.0f;
  std::memcpy(&values[launch.slot[3]], &one, sizeof(float));
  std::memcpy(&values[launch.slot[4]], &zero, sizeof(float));
  for (uint32_t i = 0; i < launch.plan.map_count; ++i) {
    uint64_t base = 0;
    std::memcpy(&base, &values[launch.plan.maps[i].pointer_arg], sizeof(base));
    if (api->stages(&launch.plan, i, base)) return false;
  }
  const auto c_address = reinterpret_cast<unsigned long long>(c);
  const char* what = "";
  const int r = api->launch_plan(stand_in_driver.load(), launch.fn, launch.ctx, &launch.plan,
                                 pointers, stream, launch.prescale ? c_address : 0,
                                 launch.prescale ? c_words : 0, &what);
  TORCH_CHECK(r == 0, "tuned: ", what, " failed: CUresult ", r);
  return true;
}

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

void CountHit() { table().hits.fetch_add(1, std::memory_order_relaxed); }

void CountTorchCall() { table().torch_calls.fetch_add(1, std::memory_order_relaxed); }

c10::DeviceType ServedType() { return served_type.load(std::memory_order_relaxed); }

void SetApi(const FastcallApi* fastcall_api) { api = fastcall_api; }

PyMethodDef kTableMethods[] = {
    {"next_miss", PyNextMiss, METH_O, "next_miss(timeout_s) -> a queued key or None"},
    {"put_torch", FASTCALL(PyPutTorch), METH_FASTCALL, "put_torch(key, retry_s)"},
    {"put_kernel", FASTCALL(PyPutKernel), METH_FASTCALL,
     "put_kernel(key, fn, ctx, plan, params, slots, prescale)"},
    {"clear", PyClear, METH_NOARGS, "clear(): forget every entry and queued key"},
    {"stats", PyStats, METH_NOARGS, "stats() -> the table's counters"},
    {"stand_in", FASTCALL(PyStandIn), METH_FASTCALL, "stand_in(device_type, driver)"},
    {"stand_in_capture", PyStandInCapture, METH_O,
     "stand_in_capture(on): the stand-in's stream counts as captured or not"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace tuned_serving
