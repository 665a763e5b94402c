// ImportKernel's kernel files, as `tunectl import DIR` reads them
// (LoadKernelDescription: kernel.json, kernel.cubin, kernel.ptx, kernel.cu)
// and the daemon stores them (TunerService::ImportKernel, in process over a
// seeded store: fuzz/service_harness.h). What the client library does with a
// loaded description without a GPU runs too: its geometry for the problem's
// shape and its packed kernel arguments.
//
// Input: the four files' bytes in that order, separated by lines "@@@"
// ("\n@@@\n"); a file whose part is missing is not written.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "fuzz/service_harness.h"
#include "tuned/client.h"
#include "tuned/kernel.h"

using tuned::fuzz::ServiceHarness;
namespace v1 = tuned::v1;

namespace {

const std::string& Dir() {
  static const std::string* dir = new std::string(tuned::fuzz::TempDir("tuned_import"));
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tuned::fuzz::MaybeWriteSeeds();
  ServiceHarness::Get();
  Dir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSeparator = "\n@@@\n";
  const std::string& dir = Dir();
  for (const char* name : {"kernel.json", "kernel.cubin", "kernel.ptx", "kernel.cu"}) {
    const std::string path = dir + "/" + name;
    if (input.data() == nullptr) {
      std::filesystem::remove(path);
      continue;
    }
    const size_t end = input.find(kSeparator);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << input.substr(0, end);
    if (end == std::string_view::npos) {
      input = std::string_view();
    } else {
      input.remove_prefix(end + kSeparator.size());
    }
  }
  auto best = tuned::LoadKernelDescription(dir);
  if (!best.ok()) return 0;

  // The client library, offline: geometry and arguments of the description.
  const std::vector<int64_t> shape(best->problem().shape().begin(), best->problem().shape().end());
  (void)tuned::TunedKernel::GeometryFor(*best, shape);
  std::vector<void*> buffers;
  for (const v1::KernelArgument& a : best->kernel_arguments()) {
    if (a.is_buffer() && buffers.size() < 64) buffers.push_back(reinterpret_cast<void*>(0x1000));
  }
  (void)tuned::PackKernelArguments(*best, buffers);

  // The daemon: ImportKernel with the description as tunectl sends it.
  auto& harness = ServiceHarness::Get();
  v1::ImportKernelRequest req;
  *req.mutable_kernel() = *std::move(best);
  v1::Job job;
  const grpc::Status s = harness.stub().ImportKernel(ServiceHarness::Context().get(), req, &job);
  if (const char* v = std::getenv("TUNED_FUZZ_VERBOSE"); v != nullptr && *v == '1') {
    fprintf(stderr, "ImportKernel: %d %s\n", static_cast<int>(s.error_code()), s.error_message().c_str());
  }
  harness.ResetIfChanged();
  return 0;
}
