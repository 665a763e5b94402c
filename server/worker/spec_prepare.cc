// A kernel spec's problem prepared without the daemon: its reference and
// default config compiled by this process, for tools and tests that run a
// spec's problem in-process on a trusted spec (bench/spec_bench,
// tests/gpu_test). The GPU worker's Prepare never takes this path: its
// kernels come compiled by the daemon's confined compiler process
// (JobRunner::PrepareRequest).
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "families/kernel_text.h"
#include "families/spec_family.h"
#include "server/worker/compiler.h"
#include "server/worker/problem.h"

namespace tuned {

absl::Status CompileSpecKernels(const Shape& shape, const v1::Device& device,
                                v1::worker::Prepare* request) {
  auto family = SpecFamily::Create(request->spec());
  if (!family.ok()) return family.status();
  auto kernels = (*family)->PrepareKernels(shape);
  if (!kernels.ok()) return kernels.status();
  request->clear_spec_kernels();
  request->clear_spec_compiled();
  const std::string arch = absl::StrCat("sm_", device.cc_major(), device.cc_minor());
  for (const SpecFamily::PrepareKernel& k : *kernels) {
    auto compiled = Compile(SourceText(k.source), k.source.name_expression, k.source.options, arch);
    if (!compiled.ok()) return compiled.status();
    v1::worker::Kernel* kernel = request->add_spec_kernels();
    kernel->set_name(k.name);
    *kernel->mutable_geometry() = k.geometry;
    v1::worker::MeasureResult* result = request->add_spec_compiled();
    result->set_status(v1::MEASUREMENT_COMPILED);
    result->set_cubin(compiled->cubin);
    result->set_entry(compiled->entry);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeSpecProblem(const v1::KernelSpec& spec,
                                                               const Shape& shape, uint64_t seed,
                                                               const v1::Device& device) {
  v1::worker::Prepare request;
  *request.mutable_spec() = spec;
  request.set_seed(seed);
  TUNED_RETURN_IF_ERROR(CompileSpecKernels(shape, device, &request));
  return MakeSpecProblem(request, shape, device);
}

}  // namespace tuned
