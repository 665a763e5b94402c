// Transpose on the device: random in (ROWS x COLS, row-major); the exact
// transpose, computed on the host, as reference; the number of mismatched
// elements (bitwise) as the check; a plain copy kernel (copy_kernel<32,8,4>
// of transpose.cuh, NVRTC-compiled here) as the baseline.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "families/kernel_text.h"
#include "server/worker/compiler.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"

namespace tuned {
namespace {

// The baseline: 32x8 threads, each copying 4 rows of a 32x32 tile (the copy
// kernel of NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++").
constexpr int kCopyBx = 32;
constexpr int kCopyBy = 8;
constexpr int kCopyEpt = 4;

class TransposeProblem final : public DeviceProblem {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const Shape& shape, uint64_t seed,
                                                               const v1::Device& device) {
    auto p = std::unique_ptr<TransposeProblem>(new TransposeProblem());
    p->rows_ = static_cast<int>(shape[0]);
    p->cols_ = static_cast<int>(shape[1]);
    const size_t n = size_t(p->rows_) * size_t(p->cols_);
    for (DeviceBuffer* buf : {&p->in_, &p->out_, &p->copy_}) {
      auto b = DeviceBuffer::Alloc(n * sizeof(float));
      if (!b.ok()) return b.status();
      *buf = *std::move(b);
    }
    TUNED_RETURN_IF_ERROR(FillRandom(p->in_, n, seed));
    p->in_ptr_ = p->in_.f32();
    p->out_ptr_ = p->out_.f32();
    p->copy_ptr_ = p->copy_.f32();
    p->args_ = {&p->rows_, &p->cols_, &p->in_ptr_, &p->out_ptr_};
    p->copy_args_ = {&p->rows_, &p->cols_, &p->in_ptr_, &p->copy_ptr_};

    auto in_host = CopyToHost(p->in_, n);
    if (!in_host.ok()) return in_host.status();
    p->expected_ = Transpose(*in_host, p->rows_, p->cols_);

    // The baseline copy kernel, compiled for this device.
    const std::string arch = absl::StrCat("sm_", device.cc_major(), device.cc_minor());
    const std::string expr = absl::StrCat("copy_kernel<", kCopyBx, ",", kCopyBy, ",", kCopyEpt, ">");
    auto text = KernelFileText("transpose/transpose.cuh");
    if (!text.ok()) return text.status();
    auto compiled = Compile(*text, expr, {}, arch);
    if (!compiled.ok()) return compiled.status();
    auto kernel = LoadedKernel::Load(compiled->cubin, compiled->entry);
    if (!kernel.ok()) return kernel.status();
    p->copy_kernel_ = *std::move(kernel);
    const int64_t tiles = CeilDiv(p->cols_, kCopyBx) * CeilDiv(p->rows_, kCopyBy * kCopyEpt);
    for (uint32_t v : {static_cast<uint32_t>(tiles), 1u, 1u}) p->copy_geometry_.add_grid(v);
    for (uint32_t v : {uint32_t{kCopyBx}, uint32_t{kCopyBy}, 1u}) p->copy_geometry_.add_block(v);
    p->copy_geometry_.set_dynamic_shared_bytes(0);

    // A baseline that does not copy would time nothing: check it once.
    TUNED_CUDA(cudaMemset(p->copy_.get(), 0xff, n * sizeof(float)));
    TUNED_RETURN_IF_ERROR(p->RunBaseline(nullptr));
    TUNED_CUDA(cudaDeviceSynchronize());
    auto copied = CopyToHost(p->copy_, n);
    if (!copied.ok()) return copied.status();
    if (const int64_t bad = BitMismatches(*copied, *in_host); bad != 0) {
      return absl::InternalError(
          absl::StrCat("baseline ", expr, " copied ", bad, " of ", n, " elements wrongly"));
    }
    return std::unique_ptr<DeviceProblem>(std::move(p));
  }

  /// (int rows, int cols, const float* in, float* out).
  std::vector<void*>& KernelArgs() override { return args_; }

  absl::Status PoisonOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaMemsetAsync(out_.get(), 0xff, out_.bytes(), stream));  // NaN
    return absl::OkStatus();
  }

  /// Elements of out (COLS x ROWS) that differ bitwise from in's transpose.
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaStreamSynchronize(stream));
    auto out = CopyToHost(out_, expected_.size());
    if (!out.ok()) return out.status();
    return static_cast<double>(BitMismatches(*out, expected_));
  }

  /// A transpose moves bits: every element must match exactly.
  double Tolerance() const override { return 0; }

  /// copy_kernel<32,8,4>: in -> copy target, same layout.
  absl::Status RunBaseline(cudaStream_t stream) override {
    return copy_kernel_.Launch(copy_geometry_, copy_args_.data(), stream);
  }

  std::string BaselineName() const override { return "copy kernel"; }

 private:
  TransposeProblem() = default;

  static int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

  /// out[c * rows + r] = in[r * cols + c], in 64 x 64 blocks for the caches.
  static std::vector<float> Transpose(const std::vector<float>& in, int rows, int cols) {
    constexpr int kBlock = 64;
    std::vector<float> out(in.size());
    for (int r0 = 0; r0 < rows; r0 += kBlock) {
      for (int c0 = 0; c0 < cols; c0 += kBlock) {
        const int r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
        for (int r = r0; r < r1; ++r) {
          for (int c = c0; c < c1; ++c) out[size_t(c) * rows + r] = in[size_t(r) * cols + c];
        }
      }
    }
    return out;
  }

  int rows_ = 0, cols_ = 0;
  DeviceBuffer in_, out_, copy_;  // in: ROWS x COLS; out: COLS x ROWS; copy: ROWS x COLS
  const float* in_ptr_ = nullptr;
  float* out_ptr_ = nullptr;
  float* copy_ptr_ = nullptr;
  std::vector<void*> args_, copy_args_;
  std::vector<float> expected_;  // in's transpose, COLS x ROWS
  LoadedKernel copy_kernel_;
  v1::LaunchGeometry copy_geometry_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeTransposeProblem(const Shape& shape,
                                                                    uint64_t seed,
                                                                    const v1::Device& device) {
  TUNED_RETURN_IF_ERROR(TransposeFamily().ValidateProblem(shape, device));
  return TransposeProblem::Create(shape, seed, device);
}

}  // namespace tuned
