// Hopper (sm_90a) primitives of the warpgroup kernels, fp32 (wgmma_tf32.cuh)
// and 16-bit (wgmma16.cuh): mbarriers (a cluster peer's too), TMA loads of a
// tensor map (multicast to a cluster too) and TMA stores, the async proxy's
// fence, and wgmma's fence, commit and wait.
//
// Compiled after sgemm/sgemm.cuh and before those files, no #include; NVRTC
// with --gpu-architecture=sm_90a. Names: namespace hopper_detail, which the
// kernels' namespaces bring in (using namespace).

// The accumulator operands of a warpgroup's wgmma m64nN (N / 2 fp32 a
// thread), for the asm statements of the files compiled after this one
// (wgmma_tf32.cuh, wgmma16_ops.cuh): HOPPER_WGMMA_D8(d, i) and _D32, the
// "+f" constraints of d[i..i+7] and d[i..i+31]; HOPPER_WGMMA_REGS_<n>, the
// operand numbers %0 .. %(n - 1).
#define HOPPER_WGMMA_D8(d, i)                                                           \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),           \
      "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define HOPPER_WGMMA_D32(d, i)                                                          \
  HOPPER_WGMMA_D8(d, i), HOPPER_WGMMA_D8(d, i + 8), HOPPER_WGMMA_D8(d, i + 16),         \
      HOPPER_WGMMA_D8(d, i + 24)
#define HOPPER_WGMMA_REGS_32                                                            \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "             \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define HOPPER_WGMMA_REGS_64                                                            \
  HOPPER_WGMMA_REGS_32 ", "                                                             \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "   \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define HOPPER_WGMMA_REGS_128                                                           \
  HOPPER_WGMMA_REGS_64 ", "                                                             \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "   \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "   \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "    \
  "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "      \
  "%123, %124, %125, %126, %127"

namespace hopper_detail {

// The CUtensorMap of cuda.h (128 opaque bytes, 64-byte aligned), which the
// launcher encodes (LaunchGeometry.tensor_maps) and passes by value
// (__grid_constant__); NVRTC compiles without cuda.h.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// Whether the launcher encoded `map`: it passes 128 zero bytes for an operand
// TMA cannot take (tuner.proto TensorMap), and an encoded map is never all
// zeros (it holds the base address). Testing the map itself, rather than the
// pointer and pitch, lets the launcher stage such an operand (TensorMap.stage:
// a copy with 16-byte rows) and the kernel read the copy by TMA.
__device__ __forceinline__ bool MapEncoded(const TensorMap* map) {
  unsigned long long any = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) any |= map->opaque[i];
  return any != 0;
}

// ---- mbarriers (PTX ISA "mbarrier"); `bar` is a shared address.
__device__ __forceinline__ void MbarInit(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// The initializations visible to the async proxy (TMA's and cp.async's arrivals).
__device__ __forceinline__ void FenceMbarInit() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void MbarArrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// This thread's arrival, with `bytes` more transactions (a TMA copy's)
// expected in the current phase.
__device__ __forceinline__ void MbarArriveTx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Waits until the phase of `bar` of parity `parity` has completed.
__device__ __forceinline__ void MbarWait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// This thread's arrival on the mbarrier at shared address `bar` of cluster
// rank `rank` (this CTA's own included).
__device__ __forceinline__ void MbarArriveCluster(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// ---- TMA (PTX ISA "cp.async.bulk.tensor"): the box at (x, y) (elements, x
// innermost) of the 2-D tensor map `map` into shared memory at `dst`,
// completing on mbarrier `bar`.
__device__ __forceinline__ void TmaLoad2d(unsigned dst, const TensorMap* map, int x, int y,
                                          unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// TmaLoad2d's box into shared address `dst` of every CTA of the cluster in
// `mask` (bit r: rank r), each completing on its own mbarrier at `bar`.
__device__ __forceinline__ void TmaLoad2dMulticast(unsigned dst, const TensorMap* map, int x, int y,
                                                   unsigned bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
      : "memory");
}
// ---- TMA stores (PTX ISA "cp.async.bulk.tensor", .global.shared::cta):
// the box at (x, y) of `map` from shared address `src`, in this thread's
// bulk group; the commit; the wait until at most 0 groups still read
// shared memory (READ) or are not yet done at all.
__device__ __forceinline__ void TmaStore2d(const TensorMap* map, int x, int y, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(x), "r"(y), "r"(src)
               : "memory");
}
__device__ __forceinline__ void BulkCommit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <bool READ>
__device__ __forceinline__ void BulkWait0() {
  if constexpr (READ) {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  } else {
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  }
}
// The wait until at most one of this thread's bulk groups still reads
// shared memory.
__device__ __forceinline__ void BulkWaitRead1() {
  asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
}
// This thread's generic-proxy writes to shared memory become visible to the
// async proxy (wgmma's operand reads) after a barrier.
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- wgmma (PTX ISA 9.7.15 "wgmma.mma_async").
// wgmma.fence: orders the registers' earlier accesses before the wgmmas
// that follow (9.7.15.6.1).
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
// The wgmmas issued since the last commit become one group (9.7.15.6.2).
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N of this warpgroup's groups are pending (9.7.15.6.3).
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses to accumulator registers across
// the asynchronous wgmmas that own them.
template <int N>
__device__ __forceinline__ void Pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace hopper_detail
