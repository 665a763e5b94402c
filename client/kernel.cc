#include "tuned/kernel.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/family.h"
#include "core/status.h"

namespace tuned {
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
    auto handle = CreateCublas(best.problem().math());  // the mode's baseline
    if (!handle.ok()) return handle.status();
    k.cublas_ = *handle;
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
  // cuBLAS serves the baseline, and the beta != 0 prescaling of C for
  // kernels that add into it (split-K and stream-K: the family's
  // LaunchGeometry.prescale_output, families/sgemm/).
  const auto& params = best.measurement().config().params();
  const auto param = [&](const char* name) {
    const auto it = params.find(name);
    return it == params.end() ? int64_t{0} : it->second;
  };
  const bool accumulates = param("SPLITK") > 1 || param("STREAMK") != 0;
  if (accumulates && best.problem().family() == v1::FAMILY_SGEMM) {
    auto handle = CreateCublas(best.problem().math());  // the mode's baseline
    if (!handle.ok()) return handle.status();
    k.cublas_ = *handle;
  }
  return k;
}

TunedKernel::~TunedKernel() {
  if (cublas_ != nullptr) cublasDestroy(cublas_);
}

TunedKernel::TunedKernel(TunedKernel&& o) noexcept
    : best_(std::move(o.best_)),
      kernel_(std::move(o.kernel_)),
      cublas_(std::exchange(o.cublas_, nullptr)) {}

TunedKernel& TunedKernel::operator=(TunedKernel&& o) noexcept {
  if (this != &o) {
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    best_ = std::move(o.best_);
    kernel_ = std::move(o.kernel_);
    cublas_ = std::exchange(o.cublas_, nullptr);
  }
  return *this;
}

absl::StatusOr<v1::LaunchGeometry> TunedKernel::GeometryFor(const v1::BestKernel& best,
                                                            const std::vector<int64_t>& shape) {
  const Family* family = FindFamily(best.problem().family());
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

absl::Status TunedKernel::LaunchShape(const std::vector<int64_t>& shape, void** args,
                                      cudaStream_t stream) const {
  auto g = GeometryFor(best_, shape);
  if (!g.ok()) return g.status();
  return kernel_.Launch(*g, args, stream);
}

absl::Status TunedKernel::Sgemm(int m, int n, int k, float alpha, const float* a, const float* b,
                                float beta, float* c, cudaStream_t stream) const {
  if (best_.problem().family() != v1::FAMILY_SGEMM) {
    return absl::FailedPreconditionError("not an sgemm kernel");
  }
  if (uses_cublas()) return RowMajorSgemm(cublas_, m, n, k, alpha, a, b, beta, c, stream);
  auto g = GeometryFor(best_, {m, n, k});
  if (!g.ok()) return g.status();
  if (g->prescale_output()) {  // the kernel adds alpha * A * B into C = beta * C
    TUNED_RETURN_IF_ERROR(PrescaleOutput(cublas_, beta, c, int64_t{m} * n, stream));
  }
  void* args[] = {&m, &n, &k, &alpha, &a, &b, &beta, &c};
  return kernel_.Launch(*g, args, stream);
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
  v1::LaunchGeometry g = best_.geometry();
  if (g.grid().empty() || g.block().empty() || g.grid_size() > 3 || g.block_size() > 3) {
    return absl::InvalidArgumentError(
        "the kernel description has no launch geometry (1 to 3 grid and block dimensions)");
  }
  while (g.grid_size() < 3) g.add_grid(1);
  while (g.block_size() < 3) g.add_block(1);
  std::vector<void*> args = packed->Pointers();
  return kernel_.Launch(g, args.data(), stream);
}

}  // namespace tuned
