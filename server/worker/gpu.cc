#include "server/worker/gpu.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/serving.h"
#include "server/worker/compiler.h"
#include "server/worker/icache_flush.h"

namespace tuned {

// ---- device ----

absl::StatusOr<v1::Device> OpenDevice(int ordinal) {
  int count = 0;
  if (cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no usable CUDA GPU (cudaGetDeviceCount: ", cudaGetErrorName(err), ": ",
        cudaGetErrorString(err), ")"));
  }
  if (ordinal < 0 || ordinal >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU ", ordinal, " does not exist (", count, " GPUs present)"));
  }
  TUNED_CUDA(cudaSetDevice(ordinal));
  TUNED_CUDA(cudaFree(nullptr));  // creates the primary context
  cudaDeviceProp p{};
  TUNED_CUDA(cudaGetDeviceProperties(&p, ordinal));
  int driver = 0;
  TUNED_CUDA(cudaDriverGetVersion(&driver));
  v1::Device d;
  d.set_name(p.name);
  d.set_cc_major(p.major);
  d.set_cc_minor(p.minor);
  d.set_driver_version(driver);
  d.set_nvrtc_version(NvrtcVersion());
  d.set_sm_count(p.multiProcessorCount);
  d.set_total_memory_bytes(static_cast<int64_t>(p.totalGlobalMem));
  d.set_max_threads_per_block(p.maxThreadsPerBlock);
  d.set_shared_memory_per_block(static_cast<int32_t>(p.sharedMemPerBlock));
  d.set_shared_memory_per_block_optin(static_cast<int32_t>(p.sharedMemPerBlockOptin));
  d.set_registers_per_block(p.regsPerBlock);
  d.set_registers_per_sm(p.regsPerMultiprocessor);
  d.set_max_threads_per_sm(p.maxThreadsPerMultiProcessor);
  d.set_l2_cache_bytes(p.l2CacheSize);
  // As nvidia-smi -L prints it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
  std::string uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
    absl::StrAppend(&uuid, absl::Hex(static_cast<unsigned char>(p.uuid.bytes[i]), absl::kZeroPad2));
  }
  d.set_uuid(uuid);
  return d;
}

// ---- timing ----

absl::StatusOr<double> TimeMedianMs(const std::function<absl::Status(cudaStream_t)>& run,
                                    const std::function<absl::Status(cudaStream_t)>& flush,
                                    int warmup, int reps, cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) TUNED_RETURN_IF_ERROR(run(stream));
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  };
  std::vector<Events> ev(static_cast<size_t>(std::max(reps, 1)));
  for (auto& e : ev) {
    TUNED_CUDA(cudaEventCreate(&e.start));
    TUNED_CUDA(cudaEventCreate(&e.stop));
  }
  for (auto& e : ev) {
    if (flush) TUNED_RETURN_IF_ERROR(flush(stream));
    TUNED_CUDA(cudaEventRecord(e.start, stream));
    TUNED_RETURN_IF_ERROR(run(stream));
    TUNED_CUDA(cudaEventRecord(e.stop, stream));
  }
  TUNED_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (auto& e : ev) {
    float t = 0;
    TUNED_CUDA(cudaEventElapsedTime(&t, e.start, e.stop));
    ms.push_back(t);
  }
  return Median(std::move(ms));
}

absl::StatusOr<std::vector<std::vector<double>>> TimeInterleavedSamplesMs(
    const std::vector<std::function<absl::Status(cudaStream_t)>>& runs,
    const std::function<absl::Status(cudaStream_t)>& flush, int rounds, cudaStream_t stream,
    std::vector<std::vector<double>>* warm,
    const std::function<absl::Status(cudaStream_t)>& reset) {
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  };
  rounds = std::max(rounds, 1);
  // Pass 0 of a round: flushed; pass 1 (with `warm`): warm.
  const size_t passes = warm != nullptr ? 2 : 1;
  const size_t per_pass = runs.size() * static_cast<size_t>(rounds);
  std::vector<Events> ev(passes * per_pass);
  for (auto& e : ev) {
    TUNED_CUDA(cudaEventCreate(&e.start));
    TUNED_CUDA(cudaEventCreate(&e.stop));
  }
  for (int r = 0; r < rounds; ++r) {
    for (size_t pass = 0; pass < passes; ++pass) {
      for (size_t j = 0; j < runs.size(); ++j) {
        const size_t i = r % 2 == 0 ? j : runs.size() - 1 - j;  // reversed every other round
        Events& e = ev[pass * per_pass + static_cast<size_t>(r) * runs.size() + i];
        if (pass == 0 && reset) TUNED_RETURN_IF_ERROR(reset(stream));
        if (pass == 0 && flush) TUNED_RETURN_IF_ERROR(flush(stream));
        if (pass == 1) TUNED_RETURN_IF_ERROR(runs[i](stream));  // untimed: warms the caches
        if (pass == 1 && reset) TUNED_RETURN_IF_ERROR(reset(stream));
        TUNED_CUDA(cudaEventRecord(e.start, stream));
        TUNED_RETURN_IF_ERROR(runs[i](stream));
        TUNED_CUDA(cudaEventRecord(e.stop, stream));
      }
    }
  }
  TUNED_CUDA(cudaStreamSynchronize(stream));
  // samples[pass][i][r]
  std::vector<std::vector<std::vector<double>>> samples(
      passes, std::vector<std::vector<double>>(runs.size()));
  for (size_t pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < runs.size(); ++i) {
      for (int r = 0; r < rounds; ++r) {
        float t = 0;
        Events& e = ev[pass * per_pass + static_cast<size_t>(r) * runs.size() + i];
        TUNED_CUDA(cudaEventElapsedTime(&t, e.start, e.stop));
        samples[pass][i].push_back(t);
      }
    }
  }
  if (warm != nullptr) *warm = std::move(samples[1]);
  return std::move(samples[0]);
}

absl::StatusOr<L2Flusher> L2Flusher::Create(int64_t l2_bytes) {
  L2Flusher f;
  auto buf = DeviceBuffer::Alloc(static_cast<size_t>(std::max<int64_t>(2 * l2_bytes, 1 << 20)));
  if (!buf.ok()) return buf.status();
  f.scratch_ = *std::move(buf);
  int device = 0, major = 0, minor = 0, sms = 0;
  TUNED_CUDA(cudaGetDevice(&device));
  TUNED_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TUNED_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  TUNED_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto compiled = Compile(kIcacheFlushSource, kIcacheFlushName, {}, absl::StrCat("sm_", major, minor));
  if (!compiled.ok()) {
    return absl::InternalError(absl::StrCat("flush kernel: ", compiled.status().message()));
  }
  auto kernel = LoadedKernel::Load(compiled->cubin, compiled->entry);
  if (!kernel.ok()) return kernel.status();
  f.kernel_ = std::make_shared<LoadedKernel>(*std::move(kernel));
  // A block on every SM (each SM's caches its own), a warp per segment.
  for (uint32_t d : {static_cast<uint32_t>(std::max(sms, 1)), 1u, 1u}) f.geometry_.add_grid(d);
  for (uint32_t d : {32u * kIcacheFlushWarps, 1u, 1u}) f.geometry_.add_block(d);
  return f;
}

absl::Status L2Flusher::Flush(cudaStream_t stream) const {
  static int value = 0;
  TUNED_CUDA(cudaMemsetAsync(scratch_.get(), ++value & 0xff, scratch_.bytes(), stream));
  float* out = static_cast<float*>(scratch_.get());
  void* args[] = {&out};
  return kernel_->Launch(geometry_, args, stream);
}

}  // namespace tuned
