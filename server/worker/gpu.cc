#include "server/worker/gpu.h"

#include <algorithm>
#include <bit>
#include <random>
#include <thread>
#include <vector>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/serving.h"
#include "server/worker/compiler.h"
#include "server/worker/icache_flush.h"

namespace tuned {

namespace {
/// FillRandom's values per generator, and its threads at most.
constexpr size_t kFillChunk = size_t{1} << 20;
constexpr size_t kFillThreads = 16;
}  // namespace

// ---- DeviceBuffer ----

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);  // nothing to do on failure in a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Alloc(size_t bytes) {
  DeviceBuffer b;
  TUNED_CUDA(cudaMalloc(&b.ptr_, std::max<size_t>(bytes, 16)));
  b.bytes_ = bytes;
  return b;
}

absl::Status FillRandom(const DeviceBuffer& buf, size_t count, uint64_t seed) {
  if (count * sizeof(float) > buf.bytes()) return absl::InvalidArgumentError("FillRandom: overflow");
  std::vector<float> host(count);
  // Chunks of kFillChunk values, each from its own generator seeded by
  // (seed, chunk), filled on up to kFillThreads threads: the values depend
  // on the seed alone, not on the threads. One generator took 0.9 s for the
  // 8192x8192 A of 8192x128x8192, twice a job (its search and its judging).
  const size_t chunks = (count + kFillChunk - 1) / kFillChunk;
  auto fill = [&](size_t first, size_t step) {
    for (size_t c = first; c < chunks; c += step) {
      std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                        static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32)};
      std::mt19937_64 gen(seq);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      const size_t end = std::min(count, (c + 1) * kFillChunk);
      for (size_t i = c * kFillChunk; i < end; ++i) host[i] = dist(gen);
    }
  };
  const size_t threads =
      std::min<size_t>({chunks, kFillThreads, std::max(1u, std::thread::hardware_concurrency())});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(fill, t, threads);
  fill(0, std::max<size_t>(threads, 1));
  for (std::thread& t : pool) t.join();
  TUNED_CUDA(cudaMemcpy(buf.get(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> CopyToHost(const DeviceBuffer& buf, size_t count) {
  if (count * sizeof(float) > buf.bytes()) return absl::InvalidArgumentError("CopyToHost: overflow");
  std::vector<float> host(count);
  TUNED_CUDA(cudaMemcpy(host.data(), buf.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

int64_t BitMismatches(const std::vector<float>& got, const std::vector<float>& want) {
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    bad += i >= got.size() || std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]);
  }
  return bad;
}

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
