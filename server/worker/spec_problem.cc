// A kernel spec's problem on the device (families/spec_family.h): one
// buffer per buffer argument, filled as the spec says from the job's seed;
// the reference outputs, computed once by the reference kernel or the
// reference config; each candidate's outputs compared element by element
// with |out - ref| <= atol + rtol * |ref|; the default config (else the
// reference) timed as the baseline. The reference and the default config
// come compiled (Prepare.spec_compiled, by the daemon's confined compiler
// process): this process compiles no spec code; it loads their binaries and
// runs them, as every candidate's.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"

namespace tuned {
namespace {

/// Host bytes of `count` elements of `type` drawn as `rule` says.
std::vector<unsigned char> HostFill(v1::SpecType type, const spec::FillRule& rule, int64_t count,
                                    std::mt19937_64& rng) {
  spec::FillSampler sampler(rule);
  const int size = spec::TypeBytes(type);
  std::vector<unsigned char> out(static_cast<size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i) {
    const double x = sampler.Next(rng);
    unsigned char* at = out.data() + i * size;
    switch (type) {
      case v1::SPEC_TYPE_F32: { const float v = static_cast<float>(x); std::memcpy(at, &v, 4); break; }
      case v1::SPEC_TYPE_F64: std::memcpy(at, &x, 8); break;
      case v1::SPEC_TYPE_F16: { const __half v = __double2half(x); std::memcpy(at, &v, 2); break; }
      case v1::SPEC_TYPE_BF16: { const __nv_bfloat16 v = __double2bfloat16(x); std::memcpy(at, &v, 2); break; }
      case v1::SPEC_TYPE_I32: { const int32_t v = static_cast<int32_t>(x); std::memcpy(at, &v, 4); break; }
      case v1::SPEC_TYPE_I64: { const int64_t v = static_cast<int64_t>(x); std::memcpy(at, &v, 8); break; }
      case v1::SPEC_TYPE_U8: { const uint8_t v = static_cast<uint8_t>(x); std::memcpy(at, &v, 1); break; }
      default: break;
    }
  }
  return out;
}

/// Element `i` of a host copy of a buffer of `type`, as a double.
double ElementAt(const std::vector<unsigned char>& bytes, v1::SpecType type, int64_t i) {
  const unsigned char* at = bytes.data() + i * spec::TypeBytes(type);
  switch (type) {
    case v1::SPEC_TYPE_F32: { float v; std::memcpy(&v, at, 4); return v; }
    case v1::SPEC_TYPE_F64: { double v; std::memcpy(&v, at, 8); return v; }
    case v1::SPEC_TYPE_F16: { __half v; std::memcpy(&v, at, 2); return __half2float(v); }
    case v1::SPEC_TYPE_BF16: { __nv_bfloat16 v; std::memcpy(&v, at, 2); return __bfloat162float(v); }
    case v1::SPEC_TYPE_I32: { int32_t v; std::memcpy(&v, at, 4); return v; }
    case v1::SPEC_TYPE_I64: { int64_t v; std::memcpy(&v, at, 8); return static_cast<double>(v); }
    case v1::SPEC_TYPE_U8: return at[0];
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

absl::StatusOr<std::vector<unsigned char>> ToHost(const DeviceBuffer& buf) {
  std::vector<unsigned char> out(buf.bytes());
  TUNED_CUDA(cudaMemcpy(out.data(), buf.get(), buf.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

class SpecProblem final : public DeviceProblem {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const v1::worker::Prepare& request,
                                                               const Shape& shape,
                                                               const v1::Device& device) {
    const v1::KernelSpec& spec = request.spec();
    auto family = SpecFamily::Create(spec);
    if (!family.ok()) return family.status();
    const SpecFamily& f = **family;
    TUNED_RETURN_IF_ERROR(f.ValidateProblem(shape, device));
    // The reference, then the baseline where it is another kernel
    // (SpecFamily::PrepareKernels), compiled by the daemon's compiler.
    const int kernels = request.spec_kernels_size();
    if (kernels < 1 || kernels > 2 || request.spec_compiled_size() != kernels) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a kernel spec's Prepare carries its reference (and default config) compiled: got ", kernels,
          " kernels and ", request.spec_compiled_size(), " results; this worker compiles no spec code"));
    }
    std::vector<LoadedKernel> loaded;
    for (int i = 0; i < kernels; ++i) {
      const v1::worker::MeasureResult& c = request.spec_compiled(i);
      if (c.status() != v1::MEASUREMENT_COMPILED) {
        return absl::FailedPreconditionError(
            absl::StrCat(request.spec_kernels(i).name(), " did not compile: ", c.message()));
      }
      auto k = LoadedKernel::Load(c.cubin(), c.entry());
      if (!k.ok()) return k.status();
      loaded.push_back(*std::move(k));
    }
    auto p = std::unique_ptr<SpecProblem>(new SpecProblem());
    p->tolerance_rtol_ = spec.verification().rtol();
    p->tolerance_atol_ = spec.verification().atol();

    // The arguments: buffers filled from the seed, scalars by value.
    auto ref_config = f.RepresentativeConfig(shape);
    if (!ref_config.ok()) return ref_config.status();
    auto launch = f.Launch(*ref_config, shape);
    if (!launch.ok()) return launch.status();
    std::mt19937_64 rng(request.seed());
    p->args_.resize(launch->arguments.size());
    p->slots_.resize(launch->arguments.size());
    for (size_t i = 0; i < launch->arguments.size(); ++i) {
      const spec::ArgumentValue& a = launch->arguments[i];
      Slot& slot = p->slots_[i];
      slot.type = a.type;
      if (!a.is_buffer) {
        switch (a.type) {
          case v1::SPEC_TYPE_F32: { const float v = static_cast<float>(a.scalar); std::memcpy(slot.scalar, &v, 4); break; }
          case v1::SPEC_TYPE_F64: std::memcpy(slot.scalar, &a.scalar, 8); break;
          case v1::SPEC_TYPE_I32: { const int32_t v = static_cast<int32_t>(a.scalar); std::memcpy(slot.scalar, &v, 4); break; }
          default: { const int64_t v = static_cast<int64_t>(a.scalar); std::memcpy(slot.scalar, &v, 8); break; }
        }
        p->args_[i] = slot.scalar;
        continue;
      }
      const v1::SpecBuffer& b = spec.arguments(static_cast<int>(i)).buffer();
      slot.is_buffer = true;
      slot.role = b.role();
      slot.elements = a.elements;
      auto buf = DeviceBuffer::Alloc(static_cast<size_t>(a.bytes));
      if (!buf.ok()) return buf.status();
      slot.buffer = *std::move(buf);
      slot.reset_every_run = spec::ResetsEveryRun(b);
      const auto host = HostFill(a.type, spec::ResolveFill(b), a.elements, rng);
      TUNED_CUDA(cudaMemcpy(slot.buffer.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
      if (b.role() != v1::SPEC_ROLE_IN) {
        // Outputs start from their fill before every verification run (and
        // every timed run, with reset = "every_run").
        auto initial = DeviceBuffer::Alloc(static_cast<size_t>(a.bytes));
        if (!initial.ok()) return initial.status();
        slot.initial = *std::move(initial);
        TUNED_CUDA(cudaMemcpy(slot.initial.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
      }
      slot.pointer = slot.buffer.get();
      p->args_[i] = &slot.pointer;
    }

    // The reference outputs.
    const v1::LaunchGeometry& reference_geometry = request.spec_kernels(0).geometry();
    TUNED_RETURN_IF_ERROR(p->ResetOutputs(nullptr, /*every_run_only=*/false));
    TUNED_RETURN_IF_ERROR(loaded[0].Launch(reference_geometry, p->args_.data(), nullptr));
    TUNED_CUDA(cudaDeviceSynchronize());
    for (Slot& slot : p->slots_) {
      if (!slot.is_buffer || slot.role == v1::SPEC_ROLE_IN) continue;
      auto host = ToHost(slot.buffer);
      if (!host.ok()) return host.status();
      slot.expected = *std::move(host);
    }

    // The baseline: the default config where it runs at the shape, else the reference.
    const int baseline = kernels - 1;
    p->baseline_ = std::move(loaded[baseline]);
    p->baseline_geometry_ = request.spec_kernels(baseline).geometry();
    p->baseline_name_ = request.spec_kernels(baseline).name();
    return std::unique_ptr<DeviceProblem>(std::move(p));
  }

  /// The spec's arguments in order: a pointer to each buffer's device
  /// pointer, or to each scalar's value.
  std::vector<void*>& KernelArgs() override { return args_; }

  /// Outputs back to their fill (inout buffers to their inputs), as the
  /// reference found them: a kernel that accumulates into its output (a
  /// reduction's atomics) starts from the same values, and an element a
  /// kernel skips keeps its random fill and fails the check.
  absl::Status PoisonOutput(cudaStream_t stream) override {
    return ResetOutputs(stream, /*every_run_only=*/false);
  }

  /// The outputs with reset = "every_run" back to their fill, so that an
  /// accumulating kernel is timed on the same output each run.
  absl::Status BeforeTimedRun(cudaStream_t stream) override {
    return ResetOutputs(stream, /*every_run_only=*/true);
  }

  /// The largest |out - ref| / (atol + rtol * |ref|) over the output
  /// elements (an exact tolerance, atol = rtol = 0: 0 where equal, infinity
  /// where not); infinity for NaN. Passes at <= 1.
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaStreamSynchronize(stream));
    double worst = 0;
    for (const Slot& slot : slots_) {
      if (!slot.is_buffer || slot.role == v1::SPEC_ROLE_IN) continue;
      auto got = ToHost(slot.buffer);
      if (!got.ok()) return got.status();
      for (int64_t i = 0; i < slot.elements; ++i) {
        const double out = ElementAt(*got, slot.type, i), ref = ElementAt(slot.expected, slot.type, i);
        if (std::isnan(out) != std::isnan(ref)) return std::numeric_limits<double>::infinity();
        if (std::isnan(out) || out == ref) continue;
        const double bound = tolerance_atol_ + tolerance_rtol_ * std::fabs(ref);
        const double ratio = bound > 0 ? std::fabs(out - ref) / bound : std::numeric_limits<double>::infinity();
        if (!(ratio <= worst)) worst = ratio;
      }
    }
    return worst;
  }

  double Tolerance() const override { return 1.0; }

  absl::Status RunBaseline(cudaStream_t stream) override {
    return baseline_.Launch(baseline_geometry_, args_.data(), stream);
  }

  std::string BaselineName() const override { return baseline_name_; }

 private:
  struct Slot {
    bool is_buffer = false;
    v1::SpecType type = v1::SPEC_TYPE_UNSPECIFIED;
    v1::SpecRole role = v1::SPEC_ROLE_UNSPECIFIED;
    int64_t elements = 0;
    DeviceBuffer buffer;
    bool reset_every_run = false;        // outputs: restored before every timed run too
    DeviceBuffer initial;                // outputs: the fill, restored before each verification
    void* pointer = nullptr;             // buffer.get(), passed by address
    alignas(8) unsigned char scalar[8];  // a scalar's value
    std::vector<unsigned char> expected;  // outputs: the reference's, on the host
  };

  SpecProblem() = default;

  /// Copies each output's fill back (`every_run_only`: those with reset =
  /// "every_run"), on `stream`.
  absl::Status ResetOutputs(cudaStream_t stream, bool every_run_only) {
    for (Slot& slot : slots_) {
      if (!slot.is_buffer || slot.role == v1::SPEC_ROLE_IN) continue;
      if (every_run_only && !slot.reset_every_run) continue;
      TUNED_CUDA(cudaMemcpyAsync(slot.buffer.get(), slot.initial.get(), slot.buffer.bytes(),
                                 cudaMemcpyDeviceToDevice, stream));
    }
    return absl::OkStatus();
  }

  std::vector<Slot> slots_;
  std::vector<void*> args_;
  double tolerance_rtol_ = 0, tolerance_atol_ = 0;
  LoadedKernel baseline_;
  v1::LaunchGeometry baseline_geometry_;
  std::string baseline_name_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeSpecProblem(const v1::worker::Prepare& request,
                                                               const Shape& shape,
                                                               const v1::Device& device) {
  return SpecProblem::Create(request, shape, device);
}

}  // namespace tuned
