#include "tuned/kernel.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/family.h"
#include "core/status.h"
#include "tuned/dtype.h"

namespace tuned {
namespace {

constexpr size_t kMaxCachedMaps = 4;     // tensor maps per kernel that the cache keys
constexpr size_t kMapCacheEntries = 16;  // base pointer sets kept per kernel

// The geometry with its missing y, z set to 1; INVALID_ARGUMENT where it has
// no (or too many) grid or block dimensions.
absl::StatusOr<v1::LaunchGeometry> Padded(v1::LaunchGeometry g) {
  if (g.grid().empty() || g.block().empty() || g.grid_size() > 3 || g.block_size() > 3) {
    return absl::InvalidArgumentError(
        "the kernel description has no launch geometry (1 to 3 grid and block dimensions)");
  }
  while (g.grid_size() < 3) g.add_grid(1);
  while (g.block_size() < 3) g.add_block(1);
  return g;
}

}  // namespace

struct TunedKernel::MapCache {
  struct Entry {
    std::array<const void*, kMaxCachedMaps> bases{};
    std::array<TensorMapBytes, kMaxCachedMaps> maps;
  };
  std::mutex mu;
  std::vector<Entry> entries;  // oldest first
};

/// cuBLAS's handles and what their calls share. A handle's stream is set
/// per call (cublasSetStream), so calls are made one at a time under `mu`
/// (they enqueue work: the lock is held for microseconds). Each stream gets
/// a cuBLASLt workspace of its own, as cuBLAS's documentation asks of a
/// handle used on several streams (cublasSetWorkspace), kept for the
/// kernel's life: two streams never share one while both run.
struct TunedKernel::Blas {
  ~Blas() {
    plan.reset();  // before its handle
    if (lt != nullptr) cublasLtDestroy(lt);
    if (cublas != nullptr) cublasDestroy(cublas);
    for (const auto& [stream, workspace] : workspaces) cudaFree(workspace);
  }
  /// The workspace of `stream` (kLtWorkspaceBytes), allocated at its first
  /// call. INTERNAL (or RESOURCE_EXHAUSTED) where cudaMalloc fails. Under mu.
  absl::StatusOr<void*> Workspace(cudaStream_t stream) {
    auto it = workspaces.find(stream);
    if (it != workspaces.end()) return it->second;
    void* w = nullptr;
    TUNED_CUDA(cudaMalloc(&w, kLtWorkspaceBytes));
    workspaces.emplace(stream, w);
    return w;
  }
  std::mutex mu;
  cublasHandle_t cublas = nullptr;
  /// cuBLASLt, where cuBLAS serves a problem with an epilogue.
  cublasLtHandle_t lt = nullptr;
  /// The cuBLASLt plan of the shape asked for, made at its first call.
  std::unique_ptr<LtGemm> plan;
  std::map<cudaStream_t, void*> workspaces;
};

namespace {
/// Whether `problem` is a 16-bit GEMM (the sgemm family's BF16 and F16
/// forms and their fp32-output forms, tuned/dtype.h Is16BitGemm).
bool Is16Bit(const v1::Problem& problem) {
  return problem.family() == v1::FAMILY_SGEMM && Is16BitGemm(problem.dtype());
}
/// The cuBLAS math mode of the problem's baseline: its own mode, or for a
/// 16-bit GEMM CUBLAS_DEFAULT_MATH (MATH_FP32_ACCURATE's handle), which lets
/// cublasGemmEx use the tensor cores, as the worker's baseline does.
v1::Math BaselineMath(const v1::Problem& problem) {
  return Is16Bit(problem) ? v1::MATH_FP32_ACCURATE : problem.math();
}
}  // namespace

absl::StatusOr<TunedKernel> TunedKernel::Load(const v1::BestKernel& best) {
  // cuBLAS serves it (the daemon found it faster, or no kernel passed
  // verification and the description holds none): nothing to load.
  const bool cublas_only = best.use_baseline() && best.problem().family() == v1::FAMILY_SGEMM;
  if (!cublas_only && best.cubin().empty() && best.ptx().empty()) {
    return absl::InvalidArgumentError("the kernel description has neither a cubin nor PTX");
  }
  int device = 0;
  if (cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("no usable CUDA GPU: ", cudaGetErrorString(err)));
  }
  TunedKernel k;
  k.best_ = best;
  if (cublas_only) {
    auto handle = CreateCublas(BaselineMath(best.problem()));
    if (!handle.ok()) return handle.status();
    k.blas_ = std::make_unique<Blas>();
    k.blas_->cublas = *handle;
    if (best.problem().epilogue() != v1::EPILOGUE_NONE) {
      TUNED_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&k.blas_->lt), "cublasLtCreate"));
      k.prepared_shape_.assign(best.problem().shape().begin(), best.problem().shape().end());
    }
    return k;
  }
  cudaDeviceProp prop{};
  TUNED_CUDA(cudaGetDeviceProperties(&prop, device));
  const bool same_arch = best.device().cc_major() == prop.major &&
                         best.device().cc_minor() == prop.minor;
  const std::string& image = same_arch && !best.cubin().empty() ? best.cubin() : best.ptx();
  if (image.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the cubin is for sm_", best.device().cc_major(), best.device().cc_minor(),
        ", this GPU is sm_", prop.major, prop.minor, ", and there is no PTX"));
  }
  auto loaded = LoadedKernel::Load(image, best.entry());
  if (!loaded.ok()) return loaded.status();
  k.kernel_ = *std::move(loaded);
  // The launch of the shape asked for, prepared once (a failure here is
  // reported by each launch, which then works the geometry out itself).
  const bool spec = best.kernel_arguments_size() > 0;
  k.prepared_shape_.assign(best.problem().shape().begin(), best.problem().shape().end());
  absl::StatusOr<v1::LaunchGeometry> g =
      spec ? Padded(best.geometry()) : GeometryFor(best, k.prepared_shape_);
  if (g.ok()) {
    if (absl::StatusOr<PreparedLaunch> p = k.kernel_.Prepare(*g); p.ok()) {
      k.prepared_ = *std::move(p);
      if (k.prepared_->plan.map_count > 0) k.maps_ = std::make_unique<MapCache>();
    }
  }
  // cuBLAS serves the baseline, and the beta != 0 prescaling of C for
  // kernels that add into it (LaunchGeometry.prescale_output: split-K and
  // stream-K, a property of the config, whatever the shape).
  if (g.ok() && g->prescale_output()) {
    auto handle = CreateCublas(BaselineMath(best.problem()));
    if (!handle.ok()) return handle.status();
    k.blas_ = std::make_unique<Blas>();
    k.blas_->cublas = *handle;
  }
  return k;
}

TunedKernel::~TunedKernel() = default;
TunedKernel::TunedKernel(TunedKernel&& o) noexcept = default;
TunedKernel& TunedKernel::operator=(TunedKernel&& o) noexcept = default;

absl::StatusOr<v1::LaunchGeometry> TunedKernel::GeometryFor(const v1::BestKernel& best,
                                                            const std::vector<int64_t>& shape) {
  const Family* family = FindCodeFamily(best.problem());
  if (family == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown kernel family ", EnumName(best.problem().family())));
  }
  TUNED_RETURN_IF_ERROR(family->ValidateShape(shape));
  const auto& params = best.measurement().config().params();
  const Config config(params.begin(), params.end());
  TUNED_RETURN_IF_ERROR(family->CheckParams(config));
  return family->Geometry(config, shape, best.device());
}

absl::StatusOr<const PreparedLaunch*> TunedKernel::LaunchFor(const int64_t* shape, int rank,
                                                             PreparedLaunch* other,
                                                             bool* prepared) const {
  *prepared = prepared_.has_value() && static_cast<int>(prepared_shape_.size()) == rank &&
              std::equal(shape, shape + rank, prepared_shape_.begin());
  if (*prepared) return &*prepared_;
  auto g = GeometryFor(best_, std::vector<int64_t>(shape, shape + rank));
  if (!g.ok()) return g.status();
  auto p = kernel_.Prepare(*g);
  if (!p.ok()) return p.status();
  *other = *std::move(p);
  return other;
}

absl::Status TunedKernel::LaunchPrepared(const PreparedLaunch& p, bool prepared, void** args,
                                         cudaStream_t stream) const {
  const TunedLaunchPlan& plan = p.plan;
  const size_t count = plan.map_count;
  if (count == 0 || !prepared || maps_ == nullptr || count > kMaxCachedMaps) {
    return kernel_.Launch(p, args, stream);  // the maps, if any, encoded now
  }
  // The maps of these base pointers: cached, else encoded and kept (the
  // oldest set goes past kMapCacheEntries). Copied out under the lock, so a
  // launch never reads a map another thread evicts.
  MapCache::Entry entry;
  for (size_t i = 0; i < count; ++i) {
    entry.bases[i] = *static_cast<void* const*>(args[plan.maps[i].pointer_arg]);
    // A staged operand's map is over a fresh copy each launch: not cached.
    if (tuned_stages(&plan.maps[i], reinterpret_cast<uintptr_t>(entry.bases[i]))) {
      return kernel_.Launch(p, args, stream);
    }
  }
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(maps_->mu);
    for (auto it = maps_->entries.rbegin(); it != maps_->entries.rend(); ++it) {
      if (it->bases == entry.bases) {
        entry.maps = it->maps;
        found = true;
        break;
      }
    }
  }
  if (!found) {
    const TunedDriver* d = tuned_driver_open();
    if (d == nullptr) return absl::FailedPreconditionError("no CUDA driver (libcuda.so.1)");
    for (size_t i = 0; i < count; ++i) {
      const char* what = nullptr;
      TUNED_RETURN_IF_ERROR(LaunchStatus(
          tuned_encode_map(d, &plan.maps[i], reinterpret_cast<uintptr_t>(entry.bases[i]), nullptr,
                           &entry.maps[i], &what),
          what));
    }
    std::lock_guard<std::mutex> lock(maps_->mu);
    if (maps_->entries.size() >= kMapCacheEntries) maps_->entries.erase(maps_->entries.begin());
    maps_->entries.push_back(entry);
  }
  std::array<const void*, kMaxCachedMaps> maps;
  for (size_t i = 0; i < count; ++i) maps[i] = &entry.maps[i];
  return kernel_.Launch(p, args, stream, maps.data());
}

absl::Status TunedKernel::LaunchShape(const std::vector<int64_t>& shape, void** args,
                                      cudaStream_t stream) const {
  PreparedLaunch other;
  bool prepared = false;
  auto p = LaunchFor(shape.data(), static_cast<int>(shape.size()), &other, &prepared);
  if (!p.ok()) return p.status();
  return LaunchPrepared(**p, prepared, args, stream);
}

absl::Status TunedKernel::Sgemm(int m, int n, int k, float alpha, const float* a, const float* b,
                                float beta, float* c, cudaStream_t stream) const {
  if (best_.problem().family() != v1::FAMILY_SGEMM) {
    return absl::FailedPreconditionError("not an sgemm kernel");
  }
  if (Is16Bit(best_.problem())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a ", DTypeText(best_.problem().dtype()), " kernel: call Gemm16 with 16-bit buffers"));
  }
  if (uses_cublas()) {
    std::lock_guard<std::mutex> lock(blas_->mu);
    return RowMajorSgemm(blas_->cublas, m, n, k, alpha, a, b, beta, c, stream,
                         best_.problem().layout());
  }
  void* args[] = {&m, &n, &k, &alpha, &a, &b, &beta, &c};
  return LaunchGemm(m, n, k, beta, c, args, stream);
}

absl::Status TunedKernel::LaunchGemm(int m, int n, int k, float beta, float* c, void** args,
                                     cudaStream_t stream) const {
  PreparedLaunch other;
  bool prepared = false;
  const int64_t shape[] = {m, n, k};
  auto p = LaunchFor(shape, 3, &other, &prepared);
  if (!p.ok()) return p.status();
  if ((*p)->prescale_output()) {  // the kernel adds alpha * A * B into C = beta * C
    if (c == nullptr) {
      return absl::InternalError("a 16-bit kernel asks for C to be prescaled, which no 16-bit kind does");
    }
    if (blas_ == nullptr) {  // a memset where beta is 0; else PrescaleOutput says cuBLAS is missing
      TUNED_RETURN_IF_ERROR(PrescaleOutput(nullptr, beta, c, int64_t{m} * n, stream));
    } else {
      std::lock_guard<std::mutex> lock(blas_->mu);
      TUNED_RETURN_IF_ERROR(PrescaleOutput(blas_->cublas, beta, c, int64_t{m} * n, stream));
    }
  }
  return LaunchPrepared(**p, prepared, args, stream);
}

absl::Status TunedKernel::Gemm16(int m, int n, int k, float alpha, const void* a, const void* b,
                                 float beta, void* c, cudaStream_t stream) const {
  if (!Is16Bit(best_.problem())) {
    return absl::FailedPreconditionError(
        "not a 16-bit sgemm kernel (bf16, f16, bf16_f32 or f16_f32)");
  }
  if (best_.problem().epilogue() != v1::EPILOGUE_NONE) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a kernel with epilogue ", EnumName(best_.problem().epilogue()), ": call FusedGemm16 with its bias"));
  }
  if (uses_cublas()) {
    std::lock_guard<std::mutex> lock(blas_->mu);
    return RowMajorGemmEx(blas_->cublas, m, n, k, alpha, a, b, beta, c, stream, best_.problem().layout(),
                          best_.problem().dtype());
  }
  void* args[] = {&m, &n, &k, &alpha, &a, &b, &beta, &c};
  return LaunchGemm(m, n, k, beta, nullptr, args, stream);
}

absl::Status TunedKernel::FusedGemm16(int m, int n, int k, float alpha, const void* a,
                                      const void* b, float beta, void* c, const void* bias,
                                      cudaStream_t stream) const {
  const v1::Epilogue epilogue = best_.problem().epilogue();
  if (!Is16Bit(best_.problem()) || epilogue == v1::EPILOGUE_NONE) {
    return absl::FailedPreconditionError("not a 16-bit sgemm kernel with an epilogue (call Gemm16)");
  }
  if (uses_cublas()) {
    if (epilogue == v1::EPILOGUE_BIAS_GELU_ERF) {
      return absl::UnimplementedError(
          "cuBLAS serves this bias_gelu_erf problem and cuBLASLt has no erf GELU: run "
          "FusedGemm16 of the bias_gelu_tanh problem, or the bias problem and a GELU after");
    }
    std::lock_guard<std::mutex> lock(blas_->mu);
    absl::StatusOr<void*> workspace = blas_->Workspace(stream);
    if (!workspace.ok()) return workspace.status();
    if (prepared_shape_.size() != 3 || prepared_shape_[0] != m || prepared_shape_[1] != n ||
        prepared_shape_[2] != k) {
      return RowMajorGemmLt(blas_->lt, m, n, k, alpha, a, b, beta, c, bias, stream,
                            best_.problem().layout(), best_.problem().dtype(), epilogue,
                            *workspace, kLtWorkspaceBytes);
    }
    // The shape asked for is planned once: a call pays no heuristic.
    if (blas_->plan == nullptr) {
      auto made = LtGemm::Plan(blas_->lt, m, n, k, best_.problem().layout(),
                               best_.problem().dtype(), epilogue, bias, kLtWorkspaceBytes, 1);
      if (!made.ok()) return made.status();
      blas_->plan = *std::move(made);
    }
    return blas_->plan->Run(0, alpha, a, b, beta, c, bias, *workspace, stream);
  }
  if (best_.arguments_size() < 9 || !absl::EndsWith(best_.arguments(8), "* bias")) {
    return absl::FailedPreconditionError(
        "the served kernel takes no bias: its daemon is older than epilogues and ignored the "
        "problem's");
  }
  void* args[] = {&m, &n, &k, &alpha, &a, &b, &beta, &c, &bias};
  return LaunchGemm(m, n, k, beta, nullptr, args, stream);
}

absl::Status TunedKernel::Transpose(int rows, int cols, const float* in, float* out,
                                    cudaStream_t stream) const {
  if (best_.problem().family() != v1::FAMILY_TRANSPOSE) {
    return absl::FailedPreconditionError("not a transpose kernel");
  }
  void* args[] = {&rows, &cols, &in, &out};
  return LaunchShape({rows, cols}, args, stream);
}

std::vector<void*> PackedArguments::Pointers() {
  std::vector<void*> p;
  p.reserve(slots.size());
  for (uint64_t& s : slots) p.push_back(&s);
  return p;
}

absl::StatusOr<PackedArguments> PackKernelArguments(const v1::BestKernel& best,
                                                    const std::vector<void*>& buffers) {
  const auto& arguments = best.kernel_arguments();
  if (arguments.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the kernel of ", best.problem().family_name().empty() ? "this problem"
                                                               : best.problem().family_name(),
        " has no kernel_arguments: not a kernel spec's kernel (use Sgemm or Transpose), "
        "or a daemon older than kernel specs"));
  }
  std::vector<std::string> names;
  for (const v1::KernelArgument& a : arguments) {
    if (a.is_buffer()) names.push_back(a.name());
  }
  if (names.size() != buffers.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the kernel takes ", names.size(), " buffers (", absl::StrJoin(names, ", "), "), got ",
        buffers.size()));
  }
  PackedArguments packed;
  packed.slots.assign(arguments.size(), 0);
  size_t next = 0;
  for (int i = 0; i < arguments.size(); ++i) {
    const v1::KernelArgument& a = arguments[i];
    void* slot = &packed.slots[i];
    if (a.is_buffer()) {
      void* ptr = buffers[next++];
      if (ptr == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("buffer ", next - 1, " (", a.name(), ") is a null pointer"));
      }
      std::memcpy(slot, &ptr, sizeof ptr);
      continue;
    }
    switch (a.type()) {
      case v1::SPEC_TYPE_F32: {
        const float v = static_cast<float>(a.value());
        std::memcpy(slot, &v, sizeof v);
        break;
      }
      case v1::SPEC_TYPE_F64: {
        const double v = a.value();
        std::memcpy(slot, &v, sizeof v);
        break;
      }
      case v1::SPEC_TYPE_I32: {
        const int32_t v = static_cast<int32_t>(a.int_value());
        if (v != a.int_value()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "scalar ", a.name(), " (i32) = ", a.int_value(), " does not fit 32 bits"));
        }
        std::memcpy(slot, &v, sizeof v);
        break;
      }
      case v1::SPEC_TYPE_I64: {
        const int64_t v = a.int_value();
        std::memcpy(slot, &v, sizeof v);
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat("scalar ", a.name(), " has type ",
                                                       EnumName(a.type()),
                                                       "; scalars are f32, f64, i32 or i64"));
    }
  }
  return packed;
}

absl::Status TunedKernel::Launch(const std::vector<void*>& buffers, cudaStream_t stream) const {
  auto packed = PackKernelArguments(best_, buffers);
  if (!packed.ok()) return packed.status();
  std::vector<void*> args = packed->Pointers();
  if (prepared_.has_value()) return LaunchPrepared(*prepared_, true, args.data(), stream);
  auto g = Padded(best_.geometry());
  if (!g.ok()) return g.status();
  return kernel_.Launch(*g, args.data(), stream);
}

}  // namespace tuned
