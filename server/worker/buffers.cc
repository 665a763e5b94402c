#include "server/worker/buffers.h"

#include <algorithm>
#include <bit>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace tuned {

namespace {
/// FillRandom's values per generator, and its threads at most.
constexpr size_t kFillChunk = size_t{1} << 20;
constexpr size_t kFillThreads = 16;
}  // namespace

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

}  // namespace tuned
