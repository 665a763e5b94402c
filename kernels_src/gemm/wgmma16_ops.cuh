// The primitives of gemm16_wgmma (wgmma16.cuh) beyond hopper.cuh's: the
// shared-window address, mbarrier expect_tx, the tensor map's prefetch, the
// cluster's rank and barriers, st.async to a peer's shared memory, shared
// loads and stores, named barriers, the wgmma matrix descriptor, and the
// m64nNk16 BF16 / FP16 wgmma (N 64, 128, 256) on fp32 accumulators, and the
// epilogue's select of one of four registers.
//
// Compiled after sgemm/hopper.cuh and before sgemm/wgmma16.cuh, no
// #include; NVRTC with --gpu-architecture=sm_90a. Names: namespace
// gemm16_detail (its G16_ macros #undef'd).
namespace gemm16_detail {

using namespace hopper_detail;  // NOLINT(build/namespaces): hopper.cuh's primitives

__host__ __device__ constexpr int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// The shared-window address of `p`. The intrinsic (not inline cvta) lets
// the compiler see that an address of the shared array is warp-uniform, so
// the wgmma descriptors built from it stay in uniform registers.
__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Adds `bytes` of expected transactions to `bar`'s phase without arriving
// (hopper.cuh's MbarArriveTx arrives too).
__device__ __forceinline__ void MbarExpectTx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(bar),
               "r"(bytes)
               : "memory");
}

// The tensor map `map` prefetched (PTX ISA "prefetch.tensormap").
__device__ __forceinline__ void PrefetchMap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
}

// ---- the stage ring: STAGES stages, each with a "full" mbarrier (its
// bytes arrived) and an "empty" one (its readers are done), 8 bytes each.

// The stage after `s`: s + 1, or 0 with the phase parity flipped.
template <int STAGES>
__device__ __forceinline__ void NextStage(int& s, unsigned& phase) {
  if (++s == STAGES) {
    s = 0;
    phase ^= 1u;
  }
}

// A consumer warpgroup with nothing to compute in a unit (a tail half's
// second warpgroup) passes over its `nk` K tiles: it waits for each stage's
// bytes on `full` and releases the stage (`release(stage)`), so that every
// stage's phases stay whole.
template <int STAGES, class Release>
__device__ __forceinline__ void PassStages(unsigned full, int nk, int& stage, unsigned& phase,
                                           Release release) {
#pragma unroll 1
  for (int t = 0; t < nk; ++t) {
    MbarWait(full + 8 * stage, phase);
    release(stage);
    NextStage<STAGES>(stage, phase);
  }
}

// ---- clusters (MCAST, SPLITK): rank in the cluster, the cluster
// barrier's two halves, a store into a peer's shared memory.
__device__ __forceinline__ unsigned ClusterRank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The cluster barrier's two halves. The arrive has no release semantics:
// it follows the mbarriers' initialization, which
// fence.mbarrier_init.release.cluster (FenceMbarInit) orders before it
// (PTX ISA, barrier.cluster and fence.mbarrier_init; CUTLASS's
// cluster_arrive_relaxed). The release form compiles to MEMBAR.ALL.GPU,
// which held every CTA of a cluster kernel at its start (5.8% of the warp
// stall samples of a 128x64 MCASTN 2 kernel at 1000^3, bf16, H100:
// bench/RESULTS.md gemm16-start-barrier). The wait waits
// until every thread of the cluster that has not exited has arrived.
__device__ __forceinline__ void ClusterArriveRelaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void ClusterWait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Stores (a, b, c, d) at this CTA's shared address `addr` as mapped into
// cluster rank `rank`'s shared memory, completing 16 bytes of transactions
// on that rank's mbarrier at (this CTA's address) `bar` (PTX ISA
// "st.async").
__device__ __forceinline__ void StAsyncPeer4(unsigned addr, unsigned bar, unsigned rank, float a,
                                             float b, float c, float d) {
  asm volatile(
      "{\n.reg .b32 ra, rb;\nmapa.shared::cluster.u32 ra, %0, %2;\n"
      "mapa.shared::cluster.u32 rb, %1, %2;\n"
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [ra], {%3, %4, %5, %6}, [rb];\n}\n"
      ::"r"(addr), "r"(bar), "r"(rank), "f"(a), "f"(b), "f"(c), "f"(d)
      : "memory");
}
__device__ __forceinline__ float4 LdShared4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
// stmatrix.sync.aligned.m8n8.x4.b16: four 8 x 8 matrices of 16-bit
// elements; this lane's register j holds row lane / 4, columns 2 (lane %
// 4) and + 1 of matrix j (the mma / wgmma D fragment's layout), and `addr`
// is row lane % 8 of matrix lane / 8 (16 bytes).
__device__ __forceinline__ void StMatrix4(unsigned addr, unsigned r0, unsigned r1, unsigned r2,
                                          unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ unsigned LdShared32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
// Named barrier `id` over `count` threads (the consumer warpgroups).
__device__ __forceinline__ void NamedSync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Matrix descriptor (PTX ISA 9.7.15.5.1.1) of a 128-byte-swizzled tile at
// shared address `addr`: leading byte offset `lbo`, stride byte offset `sbo`.
__device__ __forceinline__ unsigned long long Desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (1ull << 62);
}

// d (+)= A(64 x 16) * B(16 x N); A and B through descriptors; TA / TB the
// transpose immediates (1: the operand is MN-major in shared memory).
// G16_WGMMA(N, T, REGS, P, DA, DB, TA, TB): the m64nNk16 instruction for
// element type T ("bf16", "f16") on the accumulators REGS (hopper.cuh's
// HOPPER_WGMMA_REGS_<N / 2>), descriptors DA and DB, scale-d from the
// predicate of operand P, and the transposes TA and TB.
#define G16_WGMMA(N, T, REGS, P, DA, DB, TA, TB)                                       \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                      \
  "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " {" REGS "}, " DA ", " DB \
  ", p, 1, 1, " TA ", " TB ";\n}\n"
// One specialization's Run: the instruction for DTYPE (2 BF16, else FP16).
#define G16_RUN(N, REGS, P, DA, DB, TA_, TB_, ...)                                      \
  if constexpr (DTYPE == 2) {                                                          \
    asm volatile(G16_WGMMA(N, "bf16", REGS, P, DA, DB, TA_, TB_)                        \
                 : __VA_ARGS__                                                         \
                 : "l"(a), "l"(b), "r"(scale_d), "n"(TA), "n"(TB));                     \
  } else {                                                                             \
    asm volatile(G16_WGMMA(N, "f16", REGS, P, DA, DB, TA_, TB_)                         \
                 : __VA_ARGS__                                                         \
                 : "l"(a), "l"(b), "r"(scale_d), "n"(TA), "n"(TB));                     \
  }
template <int N, int DTYPE, int TA, int TB>
struct Wgmma;
template <int DTYPE, int TA, int TB>
struct Wgmma<64, DTYPE, TA, TB> {
  static __device__ __forceinline__ void Run(float (&d)[32], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    G16_RUN(64, HOPPER_WGMMA_REGS_32, "%34", "%32", "%33", "%35", "%36", HOPPER_WGMMA_D32(d, 0))
  }
};

template <int DTYPE, int TA, int TB>
struct Wgmma<128, DTYPE, TA, TB> {
  static __device__ __forceinline__ void Run(float (&d)[64], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    G16_RUN(128, HOPPER_WGMMA_REGS_64, "%66", "%64", "%65", "%67", "%68", HOPPER_WGMMA_D32(d, 0),
            HOPPER_WGMMA_D32(d, 32))
  }
};

template <int DTYPE, int TA, int TB>
struct Wgmma<256, DTYPE, TA, TB> {
  static __device__ __forceinline__ void Run(float (&d)[128], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    G16_RUN(256, HOPPER_WGMMA_REGS_128, "%130", "%128", "%129", "%131", "%132",
            HOPPER_WGMMA_D32(d, 0), HOPPER_WGMMA_D32(d, 32), HOPPER_WGMMA_D32(d, 64),
            HOPPER_WGMMA_D32(d, 96))
  }
};
#undef G16_RUN
#undef G16_WGMMA

// x[i] of (x0, x1, x2, x3) for a run-time i in 0..3, as selects (a
// dynamically indexed register array would go to local memory).
__device__ __forceinline__ float Sel4(float x0, float x1, float x2, float x3, int i) {
  const float lo = (i & 1) ? x1 : x0, hi = (i & 1) ? x3 : x2;
  return (i & 2) ? hi : lo;
}

}  // namespace gemm16_detail
