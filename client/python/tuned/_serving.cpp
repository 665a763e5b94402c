// Serving at torch's dispatcher, in C++: the operators tuned::linear and
// tuned::mm, and the scoped kernels of aten::mm, aten::addmm and aten::linear
// that tuned.enable() installs, all served from the table of
// tuned/_serving_table.cpp.
//
// The table maps a GEMM's key (M, N, K, dtype, the operands' layouts, math
// mode, epilogue, device) to what serves it: the daemon's kernel (its launch
// prepared once: function, geometry, parameter bytes, the slots a call sets,
// its tensor maps) or torch's own kernel (the daemon serves cuBLAS, or has
// nothing yet). A hit costs a hash look-up, the result's allocation and one
// launch through tuned._fastcall's C launcher. A key never seen runs torch's
// own kernel and is queued; tuned/serving.py's thread takes it (next_miss),
// asks the daemon (GetBest, tune_if_missing) and fills the entry
// (put_kernel, put_torch). A miss neither blocks nor raises. A miss while the
// stream is being captured into a CUDA graph is not queued (the filler would
// load modules during the capture): look each shape up once before
// capturing, and the graph replays the served kernels.
//
// Tests run all of it on CPU tensors with a stand-in driver (stand_in): the
// CPU's keys are served and the launches are the stand-in's calls.
#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/core/DimVector.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/linear_native.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>
#include <torch/version.h>

#include <initializer_list>
#include <memory>
#include <string>
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

void* CurrentStream(const Tensor& t) {
#ifdef TUNED_TORCH_CUDA
  if (t.is_cuda()) return c10::cuda::getCurrentCUDAStream(t.get_device()).stream();
#endif
  (void)t;
  return nullptr;
}

int8_t DtypeIndex(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0;
    case at::kBFloat16: return 1;
    case at::kHalf: return 2;
    default: return -1;
  }
}

// An operand's layout from its sizes and strides: 'n' (row-major, as
// torch's is_contiguous; preferred where both hold), 't' (strides (1, rows),
// a dimension of size 1 taking any stride), 0 for neither (as
// tuned/layout.py's operand_layout).
char LayoutOf(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 == cols)) return 'n';
  if ((s0 == 1 || rows == 1) && (s1 == rows || cols == 1)) return 't';
  return 0;
}

char LayoutOf(const Tensor& t) { return LayoutOf(t.size(0), t.size(1), t.stride(0), t.stride(1)); }

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
  // The eager path's words (tuned/ops.py, _check_dtype), so that tracing
  // refuses a call as running it does.
  TORCH_CHECK(mode == kAuto || mode == kIeee || dtype == at::kFloat, "tuned: math '",
              std::string(math), "' is for float32 operands; ", dtype,
              " takes math 'ieee_fp32' (or auto) only (16-bit inputs, fp32 accumulation)");
  return mode;
}

// One GEMM as Serve takes it: op(A) (m x k) in layout la at a's data, op(B)
// (k x n) in layout lb at b's data (layouts as LayoutOf; 0: neither).
struct Gemm {
  const Tensor& a;
  const Tensor& b;
  int64_t m, n, k;
  char la, lb;
};

// op(A) @ op(B) (+ bias) by the served kernel: bias undefined or (n) of the
// operands' dtype; into `out` where it is defined (row-major (m, n) of
// their dtype), else a new tensor of `shape` (m * n elements, row-major).
// Returns an undefined tensor where tuned does not serve the call (the
// caller runs torch's own kernel): another device type or dtype, mixed
// devices, a layout neither "n" nor "t", an empty or oversized GEMM, a bias
// of another shape, or a key the table has no kernel for (queued as Find
// says).
Tensor Serve(const Gemm& g, const Tensor& bias, int8_t math, Tensor out, c10::IntArrayRef shape) {
  const Tensor &a = g.a, &b = g.b;
  if (a.device().type() != ServedType() || b.device() != a.device() ||
      b.scalar_type() != a.scalar_type()) {
    return Tensor();
  }
  const int8_t dtype = DtypeIndex(a.scalar_type());
  const int64_t m = g.m, n = g.n, k = g.k;
  if (dtype < 0 || g.la == 0 || g.lb == 0 || m == 0 || n == 0 || k == 0 || m > INT32_MAX ||
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
  key.la = g.la, key.lb = g.lb;
  key.math = ResolveMath(math, dtype);
  key.epilogue = bias.defined() && dtype != 0 ? 1 : 0;  // a 16-bit kernel adds the bias itself
  key.device = static_cast<int8_t>(a.device().index());
  void* stream = CurrentStream(a);
  std::shared_ptr<const Launch> launch = Find(key, stream);
  if (!launch) return Tensor();
  if (!out.defined()) out = at::empty(shape, a.options());
  if (!Run(*launch, a.data_ptr(), b.data_ptr(), out.data_ptr(),
           key.epilogue ? bias.data_ptr() : nullptr, m * n, stream)) {
    CountTorchCall();
    return Tensor();
  }
  CountHit();
  if (bias.defined() && key.epilogue == 0) out.add_(bias);
  return out;
}

// Serve of two matrices: a (m, k) and b (k, n) in their layouts.
Tensor Serve(const Tensor& a, const Tensor& b, const Tensor& bias, int8_t math, Tensor out) {
  if (a.dim() != 2 || b.dim() != 2 || b.size(0) != a.size(1)) return Tensor();
  const int64_t m = a.size(0), n = b.size(1);
  return Serve(Gemm{a, b, m, n, a.size(1), LayoutOf(a), LayoutOf(b)}, bias, math, std::move(out),
               {m, n});
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

at::DimVector LinearShape(const Tensor& x, int64_t n) {
  at::DimVector shape(x.sizes().begin(), x.sizes().end());
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
  // op(A): x as its rows (a contiguous x of any rank is row-major); op(B):
  // weight's transpose, its layout read from weight's strides swapped (no
  // view made for either).
  const char lb = LayoutOf(k, n, weight.stride(1), weight.stride(0));
  if (x.dim() == 2) {
    const int64_t m = x.size(0);
    Tensor y = Serve(Gemm{x, weight, m, n, k, LayoutOf(x), lb}, b, math, Tensor(), {m, n});
    if (y.defined()) return y;
  } else if (x.is_contiguous()) {
    Tensor y = Serve(Gemm{x, weight, k > 0 ? x.numel() / k : 0, n, k, 'n', lb}, b, math, Tensor(),
                     LinearShape(x, n));
    if (y.defined()) return y;
  }
  Tf32Scope scope(math, x.scalar_type());
  const Tensor x2 = x.dim() == 2 ? x : x.reshape({-1, k});
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
  const bool cpu = ServedType() == c10::DeviceType::CPU;
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

// Whether a call on `tensors` may run the served linear without the
// dispatcher: autograd does not record it, and past the autograd keys (and
// BackendSelect, which every thread includes and tuned::linear falls
// through) the dispatcher would go straight to the served device type's
// kernel (no Python mode, tracer, functorch, autocast or other key before
// it), so tuned::linear's own kernel is what it would run. (A profiler then
// records the kernel's own ops, not tuned::linear.)
bool Direct(std::initializer_list<const Tensor*> tensors) {
  if (Records(tensors)) return false;
  c10::DispatchKeySet keys;
  for (const Tensor* t : tensors) {
    if (t->defined()) keys = keys | t->key_set();
  }
  const c10::impl::LocalDispatchKeySet local = c10::impl::tls_local_dispatch_key_set();
  keys = ((keys | local.included_) - local.excluded_) -
         (c10::autograd_dispatch_keyset_with_ADInplaceOrView |
          c10::DispatchKeySet(c10::DispatchKey::BackendSelect));
  const c10::DispatchKey device =
      ServedType() == c10::DeviceType::CPU ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA;
  return keys.highestPriorityTypeId() == device;
}

// tuned::linear(x, weight, bias, "auto"): its kernel called directly where
// Direct holds (a served call's CPU time: no dispatch), else through the
// dispatcher (autograd, modes, tracing).
PyObject* CallLinear(PyObject* x, PyObject* weight, PyObject* bias) {
  if (!THPVariable_Check(x) || !THPVariable_Check(weight) ||
      (bias != Py_None && !THPVariable_Check(bias))) {
    PyErr_SetString(PyExc_TypeError, "linear(x, weight, bias): tensors (bias may be None)");
    return nullptr;
  }
  const Tensor &xt = THPVariable_Unpack(x), &wt = THPVariable_Unpack(weight);
  c10::optional<Tensor> b;
  if (bias != Py_None) b = THPVariable_Unpack(bias);
  const Tensor none;
  if (Direct({&xt, &wt, b ? &*b : &none})) {
    at::AutoDispatchBelowADInplaceOrView below;  // as LinearAutograd calls it
    return THPVariable_Wrap(Linear(xt, wt, b, kAuto));
  }
  return THPVariable_Wrap(LinearOp().call(xt, wt, b, "auto"));
}

// linear(x, weight, bias) -> tuned::linear(x, weight, bias, "auto"), called
// from Python without torch's argument parsing.
PyObject* PyLinear(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "linear(x, weight, bias): tensors (bias may be None)");
    return nullptr;
  }
  return CallLinear(args[0], args[1], args[2]);
  END_HANDLE_TH_ERRORS
}

// The parameter `name` of an nn.Module: from its _parameters (what
// nn.Module.__getattr__ reads first, without its Python call), else by
// getattr (a parametrization, a property). A new reference; null with a
// Python error set.
PyObject* Parameter(PyObject* module, PyObject* name) {
  static PyObject* const parameters = PyUnicode_InternFromString("_parameters");
  PyObject* dict = PyObject_GenericGetDict(module, nullptr);
  if (dict == nullptr) return nullptr;
  PyObject* params = PyDict_GetItemWithError(dict, parameters);  // borrowed, as found below
  PyObject* found = params && PyDict_Check(params) ? PyDict_GetItemWithError(params, name) : nullptr;
  Py_XINCREF(found);
  Py_DECREF(dict);
  if (found != nullptr || PyErr_Occurred()) return found;
  return PyObject_GetAttr(module, name);
}

// linear_module(module, x) -> linear(x, module.weight, module.bias): an
// nn.Linear's forward.
PyObject* PyLinearModule(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  static PyObject* const weight_name = PyUnicode_InternFromString("weight");
  static PyObject* const bias_name = PyUnicode_InternFromString("bias");
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "linear_module(module, x)");
    return nullptr;
  }
  PyObject* weight = Parameter(args[0], weight_name);
  if (weight == nullptr) return nullptr;
  PyObject* bias = Parameter(args[0], bias_name);
  PyObject* y = bias ? CallLinear(args[1], weight, bias) : nullptr;
  Py_DECREF(weight);
  Py_XDECREF(bias);
  return y;
  END_HANDLE_TH_ERRORS
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

#define FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

}  // namespace

PyMethodDef kOpMethods[] = {
    {"linear", FASTCALL(PyLinear), METH_FASTCALL,
     "linear(x, weight, bias) -> tuned::linear(x, weight, bias, 'auto')"},
    {"linear_module", FASTCALL(PyLinearModule), METH_FASTCALL,
     "linear_module(module, x) -> linear(x, module.weight, module.bias)"},
    {"override_begin", PyOverrideBegin, METH_NOARGS,
     "override_begin() -> tuned's aten::mm, addmm, linear kernels, registered"},
    {"override_end", PyOverrideEnd, METH_O, "override_end(capsule): removes them"},
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
