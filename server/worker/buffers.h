// The plug-in kit of the worker: what a family's worker problem
// (families/<name>/worker/, server/worker/problem.h) uses to hold and fill
// its operands and read its result back: device buffers, seeded random
// fills, copies to the host, bitwise comparison. Timing and the cache
// flushes are the worker's own (server/worker/gpu.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status.h"   // TUNED_RETURN_IF_ERROR
#include "tuned/launch.h"  // TUNED_CUDA, the checked CUDA call; LoadedKernel

namespace tuned {

/// Owns one cudaMalloc allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// RESOURCE_EXHAUSTED if the device is out of memory.
  static absl::StatusOr<DeviceBuffer> Alloc(size_t bytes);
  void* get() const { return ptr_; }
  float* f32() const { return static_cast<float*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Fills `count` floats of `buf` with uniform random values in [-1, 1)
/// from fixed-seed generators (std::mt19937_64, one per 2^20 values, on
/// several threads): the same seed gives the same values, and a shorter
/// fill of the same seed is a prefix of a longer one.
absl::Status FillRandom(const DeviceBuffer& buf, size_t count, uint64_t seed);

/// Copies `count` floats to the host.
absl::StatusOr<std::vector<float>> CopyToHost(const DeviceBuffer& buf, size_t count);

/// Elements of `got` whose bits differ from `want`'s (NaN poison included),
/// over want.size() elements: the check of families whose result is exact.
int64_t BitMismatches(const std::vector<float>& got, const std::vector<float>& want);

}  // namespace tuned
