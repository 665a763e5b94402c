// Row-major fp32 GEMM on Hopper's warpgroup tensor cores for tuned (family
// "sgemm", KIND 6, server/families/sgemm.cc), sm_90a only:
//
//   C(MxN) = alpha * A(MxK) * B(KxN) + beta * C,   lda = K, ldb = N, ldc = N,
//
// with the signature of every sgemm kernel (kernels_src/sgemm/sgemm.cuh):
//
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
//
// Compiled at runtime by NVRTC appended to sgemm.cuh and mma_tf32.cuh (it
// uses sgemm_detail's CeilDiv, RasterTile, SplitKRange, SmemAddr and
// Aligned16 and sgemm_mma_detail's Split; no #include), for the target
// sm_90a (the family's KernelSource.options, "--gpu-architecture=sm_90a":
// wgmma is an arch-specific feature, PTX ISA "wgmma.mma_async", target ISA
// notes), instantiated through a name expression, e.g.
// "sgemm_wgmma<128,128,32,64,128,4,1,1,8,1,1>".
// Correct for every M, N, K >= 1 with M*K, K*N, M*N < 2^31:
//  - every global load is predicated (an element out of range is 0 in
//    shared memory, read from nowhere), every store bounds-checked;
//  - 16-byte loads only on a block-uniform path chosen at run time (K and N
//    multiples of 4, A and B 16-byte aligned), else 4-byte ones;
//  - beta == 0 never reads C (BLAS semantics); SPLITK > 1 adds alpha * acc
//    into C with atomics after the launcher set C to beta * C
//    (LaunchGeometry.prescale_output).
//
// The arithmetic: wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 (PTX
// ISA 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"), A
// and B both from shared memory through matrix descriptors, fp32
// accumulators in registers. Each operand x is rounded to TF32 with
// cvt.rna.tf32.f32 as it is staged into shared memory (the tensor cores
// would otherwise truncate its low 13 bits), as KIND 5 (mma_tf32.cuh) does:
//  - PASSES = 1 (TF32): acc += big(a) * big(b);
//  - PASSES = 3 (3xTF32): big = tf32(x), small = tf32(x - big); shared
//    memory holds a big and a small copy of each operand tile, and each
//    K tile's small(a)*big(b) + big(a)*small(b) + big(a)*big(b) (BK/8 k8
//    steps, 3 wgmmas each) goes into a fresh accumulator set (scale-d = 0 on
//    the first), which after wgmma.wait_group is added into acc with IEEE
//    fp32 adds: the tensor cores' accumulation truncates, a bias that grows
//    with the number of products accumulated in them (2^-27 x K relative
//    with one long-lived accumulator, tests/gpu_test.cc, session 10); so it
//    is bounded by 3 x BK/8 products, about (BK/8) x 2^-24 for BK <= 32.
//    The register-A form (LA = 0) may keep a fresh set for PROMOTE = 2 K
//    tiles: twice the products and the bias (error 4.7e-7 against 2.5e-7
//    to 3.7e-7 relative to fp64 on the H100, session 18), half the waits.
//
// Operand layouts in shared memory (PTX ISA 9.7.15.5.1 "Register fragments
// and shared memory matrix layouts", 9.7.15.5.1.2 "Shared Memory Matrix
// Layout"): .tf32 wgmma takes A and B K-major only (the transpose
// immediates imm-trans-a/b exist for .f16/.bf16 alone, 9.7.15.5.2
// "wgmma.mma_async"). A (M x K, k contiguous in global memory) is K-major as
// it comes; B (K x N, n contiguous) is stored transposed, Bs[n][k], by the
// register-staged copy below. A tile is rows of BK floats (ROWB = 4*BK =
// 128, 64 or 32 bytes: BK 32, 16, 8), one row per m (A) or n (B), in the
// 128-, 64- or 32-byte swizzle mode whose width is ROWB: the swizzle atom is
// 8 rows x ROWB bytes (Table "swizzle atom layout": 128B/K: 8x8, 64B/K: 8x4,
// 32B/K: 8x2 16-byte units), and the 16-byte unit u of row r sits at unit
// u ^ ((r * ROWB / 128) % (ROWB / 16)) of its 128-byte line: byte offset o
// of the plain row-major tile goes to o ^ (((o >> 7) & (ROWB/16 - 1)) << 4)
// (address bits [4,7) XOR bits [7,10) for 128B; [4,6) ^ [7,9) for 64B; 4 ^ 7
// for 32B), applied by the hardware to the absolute shared address: every
// tile starts on a 1024-byte boundary (the dynamic shared memory is aligned
// up by hand; Geometry adds 1024 bytes for it).
// Matrix descriptor (9.7.15.5.1.1 "Matrix Descriptor Format"): bits 0-13
// start address >> 4; 16-29 leading dimension byte offset >> 4 (unused for
// swizzled K-major layouts whose k extent, 8 tf32 = 32 bytes, lies within
// the swizzle width; 1 as is customary); 32-45 stride dimension byte offset
// >> 4 = 8 * ROWB, the distance between 8-row groups (core matrices along M
// or N); 49-51 base offset 0 (atoms 1024-aligned); 62-63 swizzle mode (1 =
// 128B, 2 = 64B, 3 = 32B). The k8 step kk of a tile starts kk * 32 bytes into
// the rows (the swizzle, a function of the address, follows); the m64 block
// mi of A 64 * ROWB bytes further.
// Accumulator fragment of m64nNk8 .f32 (9.7.15.5.1 "Matrix fragments for
// wgmma .m64nNk8", D): warp w (0..3) of the warpgroup holds rows 16w..16w+15;
// with g = lane / 4, t = lane % 4, register d[4i + j] (i < N/8) is row
// 16w + g + 8 * (j / 2), column 8i + 2t + (j % 2), as mma.m16n8's C.
//
// Tiling: a block computes a BM x BN tile of C with (BM/WM) x (BN/WN)
// warpgroups of 128 threads, each a WM x WN warpgroup tile of WM/64 wgmmas of
// m64nWNk8 per k8 step. K advances BK at a time through STAGES >= 3 stages
// of dynamic shared memory, each A (BM rows) and B (BN rows) big and, for
// PASSES 3, small: STAGES * (1 or 2) * (BM + BN) * BK * 4 bytes. The copy is
// register-staged (it rounds, splits and, for B, transposes): each thread
// loads its float4s of K tile i + STAGES - 1 into registers while the
// wgmmas of tile i run, and stores them, converted and swizzled, into stage
// (i + STAGES - 1) % STAGES in the next iteration, after the K tile that
// stage held last (i - 1) is done: per iteration, (1) wgmma.fence, the
// wgmmas of stage i % STAGES, commit_group; (2) store the registers (tile
// i + STAGES - 2) into stage (i + STAGES - 2) % STAGES, last read by the
// wgmmas of tile i - 2; (3) load tile i + STAGES - 1 into the registers;
// (4) wgmma.wait_group 1 (PASSES 1: tile i - 1's wgmmas are done, tile i's
// may run on) or 0 (PASSES 3: then acc += the fresh accumulators);
// (5) fence.proxy.async (the generic-proxy stores become visible to the
// async proxy that wgmma reads through, PTX ISA "Memory consistency model:
// proxies") and __syncthreads. So tile i - 2's wgmmas of every warpgroup
// are done before (2) writes over their stage. LA (K tiles loaded ahead)
// = 1 is that: each load has one iteration (one K tile's wgmmas) to land.
// LA = 2 (KLoop2) keeps two register sets R[0], R[1]: the prologue stores
// tiles 0 .. STAGES - 3 as above, then loads tile STAGES - 2 into
// R[STAGES % 2] and STAGES - 1 into R[(STAGES + 1) % 2]; iteration i is
// (1), (2) from R[(i + STAGES) % 2] (which holds tile i + STAGES - 2,
// loaded in iteration i - 2 or the prologue), (3) tile i + STAGES into that
// same set, (4), (5): each load has two iterations to land, the stages are
// as with LA = 1. The set's index is a compile-time constant (the loop is
// unrolled by two, Step2<P>), else the sets would live in local memory. The
// 4-byte path (K or N not a multiple of 4, or A or B unaligned) keeps
// LA = 1: its per-float addresses and predicates would not fit twice under
// the register caps. A thread's copies: A as
// float4 along k (a quarter-warp writes 8 units of one 128-byte row, each
// in its own bank group); B as float4 along n, lanes 0-15 and 16-31 on 16
// consecutive k of two adjacent n-quads (full 32-byte sectors), stored as
// 4 scalars Bs[n + j][k], which the swizzle spreads over the 32 banks for
// ROWB = 128.
//
// Grid: x = ceil(M/BM) * ceil(N/BN) output tiles, visited GROUP tile-rows at
// a time (L2 reuse); y = SPLITK, each a contiguous range of the K tiles.
// Block: (BM/WM) * (BN/WN) * 128 threads; dynamic shared memory
// STAGES * (1 or 2) * (BM + BN) * BK * 4 + 1024 bytes.

namespace sgemm_wgmma_detail {

// sgemm.cuh's and mma_tf32.cuh's helpers (this file is compiled appended to them).
using sgemm_detail::Aligned16;
using sgemm_detail::CeilDiv;
using sgemm_detail::SmemAddr;
using sgemm_mma_detail::Split;

// The 4 x 8 "+f" operands d[i..i+31] of a wgmma's accumulators.
#define SGEMM_WGMMA_D8(d, i)                                                            \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),           \
      "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define SGEMM_WGMMA_D32(d, i)                                                           \
  SGEMM_WGMMA_D8(d, i), SGEMM_WGMMA_D8(d, i + 8), SGEMM_WGMMA_D8(d, i + 16),            \
      SGEMM_WGMMA_D8(d, i + 24)

// d (+)= A(64 x 8) * B(8 x N) for the warpgroup, A and B through the matrix
// descriptors a and b; scale_d 0: d = A * B (a fresh accumulator), 1: d +=
// A * B. imm-scale-a = imm-scale-b = 1; .tf32 takes no transpose immediates.
template <int N>
struct Wgmma;

template <>
struct Wgmma<64> {
  static __device__ __forceinline__ void Run(float (&d)[32], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17,"
        " %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1;\n}\n"
        : SGEMM_WGMMA_D32(d, 0)
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<128> {
  static __device__ __forceinline__ void Run(float (&d)[64], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17,"
        " %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33,"
        " %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49,"
        " %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1;\n}\n"
        : SGEMM_WGMMA_D32(d, 0), SGEMM_WGMMA_D32(d, 32)
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<256> {
  static __device__ __forceinline__ void Run(float (&d)[128], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17,"
        " %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33,"
        " %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49,"
        " %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65,"
        " %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81,"
        " %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97,"
        " %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125,"
        " %126, %127"
        "}, %128, %129, p, 1, 1;\n}\n"
        : SGEMM_WGMMA_D32(d, 0), SGEMM_WGMMA_D32(d, 32), SGEMM_WGMMA_D32(d, 64), SGEMM_WGMMA_D32(d, 96)
        : "l"(a), "l"(b), "r"(scale_d));
  }
};
// The register form of wgmma (PTX ISA 9.7.15.5.2: "d, a, b-desc"): d (+)=
// a(64 x 8, this thread's m64k8 .tf32 fragment: a0 (row g, k t), a1 (g + 8,
// t), a2 (g, t + 4), a3 (g + 8, t + 4) of its warp's 16 rows) * B(8 x N,
// the K-major shared tile of descriptor b); scale_d 0 overwrites d.
template <int N>
struct WgmmaRs;

template <>
struct WgmmaRs<128> {
  static __device__ __forceinline__ void Run(float (&d)[64], const unsigned (&a)[4],
                                             unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17,"
        " %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33,"
        " %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49,"
        " %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : SGEMM_WGMMA_D32(d, 0), SGEMM_WGMMA_D32(d, 32)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};

template <>
struct WgmmaRs<256> {
  static __device__ __forceinline__ void Run(float (&d)[128], const unsigned (&a)[4],
                                             unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17,"
        " %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33,"
        " %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49,"
        " %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65,"
        " %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81,"
        " %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97,"
        " %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125,"
        " %126, %127"
        "}, {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
        : SGEMM_WGMMA_D32(d, 0), SGEMM_WGMMA_D32(d, 32), SGEMM_WGMMA_D32(d, 64), SGEMM_WGMMA_D32(d, 96)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};
#undef SGEMM_WGMMA_D32
#undef SGEMM_WGMMA_D8

// wgmma.fence: orders the registers' earlier accesses before the wgmmas
// that follow (PTX ISA 9.7.15.6.1 "wgmma.fence").
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
// This thread's generic-proxy writes to shared memory become visible to the
// async proxy (wgmma's operand reads) after a barrier.
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accesses to accumulator registers across
// the asynchronous wgmmas that own them.
template <int N>
__device__ __forceinline__ void Pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Byte offset `off` of a row-major tile of ROWB-byte rows, swizzled (see the
// file comment; the tile starts on a 1024-byte boundary).
template <int ROWB>
__device__ __forceinline__ int Swizzle(int off) {
  return off ^ (((off >> 7) & (ROWB / 16 - 1)) << 4);
}

// x rounded to TF32 (to nearest, ties away from zero: cvt.rna's rounding)
// as a wgmma register operand: the tensor cores read a .tf32 operand's top
// 19 bits, so adding half a TF32 ulp (bit 12) to x's bits rounds it, the low
// 13 bits being left unread. Two instructions (a NaN test, an add) where
// cvt.rna.tf32.f32, which ptxas emulates on sm_90, takes three (the test,
// the add, a mask) (session 19: Nsight Compute's SASS of LA=0). A NaN is
// left as it is: the carry of its payload could reach the sign bit.
__device__ __forceinline__ unsigned Tf32Operand(float x) {
  unsigned r = __float_as_uint(x);
  asm("{\n.reg .pred p;\nsetp.num.f32 p, %1, %1;\n@p add.u32 %0, %0, 0x1000;\n}\n"
      : "+r"(r)
      : "f"(x));
  return r;
}

// 16 bytes from global `src` to shared address `dst` (both 16-byte
// aligned), bypassing L1 (cp.async.cg; sgemm_detail::CpAsync16 without its
// predicate and generic-to-shared conversion).
__device__ __forceinline__ void CpAsync16Shared(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// mbarriers (PTX ISA "mbarrier") for the warp-specialized LA=0 (WS):
// `bar` is a shared address.
__device__ __forceinline__ void MbarInit(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// The initializations visible to the async proxy (cp.async's arrivals).
__device__ __forceinline__ void FenceMbarInit() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void MbarArrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// This thread's arrival, once its cp.async issued before complete (the
// arrival is counted in the mbarrier's expected count: .noinc).
__device__ __forceinline__ void CpAsyncArrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// This thread's arrival, with `bytes` more transactions (a TMA copy's)
// expected in the current phase.
__device__ __forceinline__ void MbarExpectTx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

// The CUtensorMap of cuda.h (128 opaque bytes, 64-byte aligned), which the
// launcher encodes (LaunchGeometry.tensor_maps) and passes by value;
// NVRTC compiles without cuda.h.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

// The box at (x, y) (elements, x innermost) of the 2-D tensor map `map`
// into shared memory at `dst`, completing on mbarrier `bar` (PTX ISA
// "cp.async.bulk.tensor").
__device__ __forceinline__ void TmaLoad2d(unsigned dst, const TensorMap* map, int x, int y,
                                          unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar)
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

// Split's operands for wgmma's register form: big = tf32(x), masked (x -
// big must be exact), and for PASSES = 3 small = tf32(x - big) as
// Tf32Operand rounds it. The same values as Split for finite x; a NaN or an
// infinity makes small (and so the product) NaN, as with Split.
template <int PASSES>
__device__ __forceinline__ void SplitOperand(float x, unsigned& big, unsigned& small) {
  if constexpr (PASSES == 3) {
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = Tf32Operand(x - __uint_as_float(big));
  } else {
    big = Tf32Operand(x);
  }
}

// The matrix descriptor of a K-major, ROWB-byte-swizzled tile whose first
// row starts at shared address `addr` (see the file comment).
template <int ROWB>
__device__ __forceinline__ unsigned long long Descriptor(unsigned addr) {
  constexpr unsigned long long kMode = ROWB == 128 ? 1 : ROWB == 64 ? 2 : 3;
  constexpr unsigned long long kStride = (8 * ROWB) >> 4;
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16) |
         (kStride << 32) | (kMode << 62);
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int PASSES>
struct Tile {
  enum : int {
    WGS_N = BN / WN,
    THREADS = (BM / WM) * (BN / WN) * 128,
    MI = WM / 64,   // m64 wgmmas per k8 step
    ACC = WN / 2,   // accumulators per thread of one m64 x WN wgmma
    ROWB = BK * 4,  // bytes of a K-major row
    A_BYTES = BM * ROWB,
    B_BYTES = BN * ROWB,
    SMALL = A_BYTES + B_BYTES,  // offset of the small copies (PASSES 3)
    STAGE_BYTES = (PASSES == 3 ? 2 : 1) * (A_BYTES + B_BYTES),
    KQ = BK / 4,  // float4s of an A row
    NQ = BN / 4,  // float4s of a B row
    A_CHUNKS = BM * KQ / THREADS,  // float4s per thread per K tile
    B_CHUNKS = BK * NQ / THREADS,
  };
  static_assert(WM % 64 == 0 && BM % WM == 0 && BN % WN == 0, "warpgroup tiling");
  static_assert(WN == 64 || WN == 128 || WN == 256, "wgmma N");
  static_assert((BK == 16 || BK == 32) && STAGES >= 3 && (PASSES == 1 || PASSES == 3),
                "parameters");
  static_assert(BM * KQ % THREADS == 0 && BK * NQ % THREADS == 0, "even copies");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "1024-byte aligned tiles");

  // One K tile's float4s of this thread.
  struct Regs {
    float4 a[A_CHUNKS];
    float4 b[B_CHUNKS];
  };

  // Chunk c of A: row c / KQ, k quad c % KQ. Chunk c of B: k (c % 16) + 16 *
  // (c / (16 * NQ)), n quad (c / 16) % NQ (see the file comment).
  static __device__ __forceinline__ int BK_(int c) { return c % 16 + 16 * (c / (16 * NQ)); }
  static __device__ __forceinline__ int BQ_(int c) { return (c / 16) % NQ; }

  // r <- K tile at k0 of the block's A rows and B columns (A, B at the
  // block's corner; rows, cols left in M and N), zeros outside.
  template <bool VEC>
  static __device__ __forceinline__ void Load(Regs& r, const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int N, int K, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS, row = c / KQ, k = k0 + (c % KQ) * 4;
      const float* p = A + static_cast<long long>(row) * K + k;
      if constexpr (VEC) {  // K % 4 == 0: a quad is all in or all out
        r.a[i] = row < rows && k < K ? *reinterpret_cast<const float4*>(p)
                                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        const bool in = row < rows;
        r.a[i].x = in && k < K ? p[0] : 0.0f;
        r.a[i].y = in && k + 1 < K ? p[1] : 0.0f;
        r.a[i].z = in && k + 2 < K ? p[2] : 0.0f;
        r.a[i].w = in && k + 3 < K ? p[3] : 0.0f;
      }
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      const int c = tid + i * THREADS, k = k0 + BK_(c), n = BQ_(c) * 4;
      const float* p = B + static_cast<long long>(k) * N + n;
      if constexpr (VEC) {  // N % 4 == 0: so is cols, a quad is all in or all out
        r.b[i] = k < K && n < cols ? *reinterpret_cast<const float4*>(p)
                                   : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        const bool in = k < K;
        r.b[i].x = in && n < cols ? p[0] : 0.0f;
        r.b[i].y = in && n + 1 < cols ? p[1] : 0.0f;
        r.b[i].z = in && n + 2 < cols ? p[2] : 0.0f;
        r.b[i].w = in && n + 3 < cols ? p[3] : 0.0f;
      }
    }
  }

  // Stage at `stage` (a 1024-byte aligned shared pointer) <- r, rounded to
  // TF32 (and split, PASSES 3), swizzled; B transposed.
  static __device__ __forceinline__ void Store(unsigned char* stage, const Regs& r, int tid) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS;
      const int off = Swizzle<ROWB>((c / KQ) * ROWB + (c % KQ) * 16);
      uint4 big, small;
      Split<PASSES>(r.a[i].x, big.x, small.x);
      Split<PASSES>(r.a[i].y, big.y, small.y);
      Split<PASSES>(r.a[i].z, big.z, small.z);
      Split<PASSES>(r.a[i].w, big.w, small.w);
      *reinterpret_cast<uint4*>(stage + off) = big;
      if constexpr (PASSES == 3) *reinterpret_cast<uint4*>(stage + SMALL + off) = small;
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      const int c = tid + i * THREADS, k = BK_(c), n = BQ_(c) * 4;
      const float v[4] = {r.b[i].x, r.b[i].y, r.b[i].z, r.b[i].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int off = A_BYTES + Swizzle<ROWB>((n + j) * ROWB + k * 4);
        unsigned big, small;
        Split<PASSES>(v[j], big, small);
        *reinterpret_cast<unsigned*>(stage + off) = big;
        if constexpr (PASSES == 3) *reinterpret_cast<unsigned*>(stage + SMALL + off) = small;
      }
    }
  }

  // Issues (and commits, one group) the wgmmas of the stage at shared
  // address `stage` for the warpgroup tile at rows wm, columns wn of the
  // block: into acc (PASSES 1) or into the fresh part (PASSES 3).
  static __device__ __forceinline__ void Compute(unsigned stage, int wm, int wn,
                                                 float (&acc)[MI][ACC], float (&part)[MI][ACC]) {
    const unsigned a = stage + wm * ROWB, b = stage + A_BYTES + wn * ROWB;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (PASSES == 3) {
        Pin(part[mi]);
      } else {
        Pin(acc[mi]);
      }
    }
    WgmmaFence();
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const unsigned long long db = Descriptor<ROWB>(b + kk * 32);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const unsigned ak = a + mi * 64 * ROWB + kk * 32;
        const unsigned long long da = Descriptor<ROWB>(ak);
        if constexpr (PASSES == 3) {
          Wgmma<WN>::Run(part[mi], Descriptor<ROWB>(ak + SMALL), db, kk > 0 ? 1 : 0);
          Wgmma<WN>::Run(part[mi], da, Descriptor<ROWB>(b + SMALL + kk * 32), 1);
          Wgmma<WN>::Run(part[mi], da, db, 1);
        } else {
          Wgmma<WN>::Run(acc[mi], da, db, 1);
        }
      }
    }
    WgmmaCommit();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (PASSES == 3) {
        Pin(part[mi]);
      } else {
        Pin(acc[mi]);
      }
    }
  }

  // The K tiles [kt0, kt1) through the pipeline (see the file comment);
  // smem/base: the stages' generic pointer and shared address.
  template <bool VEC>
  static __device__ __forceinline__ void KLoop(unsigned char* smem, unsigned base,
                                               const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int N, int K, int kt0, int kt1, int tid, int wm,
                                               int wn, float (&acc)[MI][ACC]) {
    float part[MI][ACC];
    const int nk = kt1 - kt0;
    Regs r;
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
      if (s < nk) {
        Load<VEC>(r, A, B, rows, cols, N, K, (kt0 + s) * BK, tid);
        Store(smem + s * STAGE_BYTES, r, tid);
      }
    }
    if (STAGES - 2 < nk) Load<VEC>(r, A, B, rows, cols, N, K, (kt0 + STAGES - 2) * BK, tid);
    FenceProxyAsync();
    __syncthreads();
    for (int i = 0; i < nk; ++i) {
      Compute(base + (i % STAGES) * STAGE_BYTES, wm, wn, acc, part);
      const int next = i + STAGES - 2;  // the tile in the registers
      if (next < nk) Store(smem + (next % STAGES) * STAGE_BYTES, r, tid);
      if (next + 1 < nk) Load<VEC>(r, A, B, rows, cols, N, K, (kt0 + next + 1) * BK, tid);
      EndIteration(acc, part);
    }
    WgmmaWait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) Pin(acc[mi]);
  }

  // The end of an iteration (steps (4) and (5) of the file comment): wait
  // for the wgmmas of tile i - 1 (PASSES 1) or i (PASSES 3, then acc +=
  // part), make this thread's stores visible to the async proxy, barrier.
  static __device__ __forceinline__ void EndIteration(float (&acc)[MI][ACC],
                                                      float (&part)[MI][ACC]) {
    if constexpr (PASSES == 3) {
      WgmmaWait<0>();
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        Pin(part[mi]);
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[mi][e] += part[mi][e];
      }
    } else {
      WgmmaWait<1>();
    }
    FenceProxyAsync();
    __syncthreads();
  }

  // Iteration i of KLoop2 (LA = 2), whose register set (i + STAGES) % 2 is
  // P: tile i's wgmmas; r[P] (tile i + STAGES - 2) into its stage; tile
  // i + STAGES into r[P].
  template <int P, bool VEC>
  static __device__ __forceinline__ void Step2(unsigned char* smem, unsigned base,
                                               const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int N, int K, int kt0, int nk, int i, int tid,
                                               int wm, int wn, Regs (&r)[2],
                                               float (&acc)[MI][ACC], float (&part)[MI][ACC]) {
    Compute(base + (i % STAGES) * STAGE_BYTES, wm, wn, acc, part);
    const int next = i + STAGES - 2;  // the tile in r[P]
    if (next < nk) Store(smem + (next % STAGES) * STAGE_BYTES, r[P], tid);
    if (next + 2 < nk) Load<VEC>(r[P], A, B, rows, cols, N, K, (kt0 + next + 2) * BK, tid);
    EndIteration(acc, part);
  }

  // KLoop with LA = 2 register sets (see the file comment): each global
  // load has two iterations to land. The sets are indexed by compile-time
  // constants only (else they would go to local memory): the loop is
  // unrolled by two, Step2<P> for the iterations whose set is P.
  template <bool VEC>
  static __device__ __forceinline__ void KLoop2(unsigned char* smem, unsigned base,
                                                const float* __restrict__ A,
                                                const float* __restrict__ B, int rows, int cols,
                                                int N, int K, int kt0, int kt1, int tid, int wm,
                                                int wn, float (&acc)[MI][ACC]) {
    float part[MI][ACC];
    const int nk = kt1 - kt0;
    Regs r[2];
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
      if (s < nk) {
        Load<VEC>(r[0], A, B, rows, cols, N, K, (kt0 + s) * BK, tid);
        Store(smem + s * STAGE_BYTES, r[0], tid);
      }
    }
    if (STAGES - 2 < nk) {
      Load<VEC>(r[STAGES % 2], A, B, rows, cols, N, K, (kt0 + STAGES - 2) * BK, tid);
    }
    if (STAGES - 1 < nk) {
      Load<VEC>(r[(STAGES + 1) % 2], A, B, rows, cols, N, K, (kt0 + STAGES - 1) * BK, tid);
    }
    FenceProxyAsync();
    __syncthreads();
    for (int i = 0; i < nk; i += 2) {
      Step2<STAGES % 2, VEC>(smem, base, A, B, rows, cols, N, K, kt0, nk, i, tid, wm, wn, r, acc,
                             part);
      if (i + 1 < nk) {
        Step2<(STAGES + 1) % 2, VEC>(smem, base, A, B, rows, cols, N, K, kt0, nk, i + 1, tid, wm,
                                     wn, r, acc, part);
      }
    }
    WgmmaWait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) Pin(acc[mi]);
  }
};

// LA = 0, the register-A form (session 15): C^T = B^T * A^T. wgmma's
// shared operand is A^T, A's rows as they are (K-major), copied with
// cp.async into 128-byte-swizzled rows of BK = 32 floats; wgmma's register
// operand is B^T, read from B's natural tile (k rows of BN + 8 floats: a
// warp's fragment loads hit 32 banks) and rounded (cvt.rna) or split in
// registers. No transposing store. A is not rounded (session 16): wgmma
// reads it truncated to TF32, and 3xTF32 splits it by truncation (big = A
// as copied, small = tf32(A - trunc(A)) written beside it, SplitA), with
// the error of the rounded split (2.80e-7 against 2.77e-7 at 2048^3). So
// one-pass TF32 makes no pass over A at all, 30-40% faster, at 1.6x cuBLAS
// TF32's error against fp64 (4.2e-4 against 2.6e-4, H100, 2048^3 to
// 8192^3): one operand truncated and one rounded, where truncation's error
// (up to an ulp, biased) has about 1.5 times rounding's second moment, so
// the sum about 2.5 times and its root about 1.6 times; within the tf32
// mode's bound of 2x, which the job checks on every problem. A block: BN / 64
// warpgroups, each 64 columns of C by all BM rows (wgmma N = BM: 128 or
// 256); STAGES stages of (1 or 2) x BM x 128 + 32 x (BN + 8) x 4 bytes
// (rounded up to 1024; STAGES >= 4), STAGES - 1 K tiles of copies in
// flight (16-byte path; STAGES - 2 on the 4-byte one, see KLoop). Per K
// tile: BK/8 (x 3) wgmmas from fragments loaded before, and under them the
// next tile's work (KLoop); one __syncthreads (3xTF32: acc += the fresh
// accumulators, as LA 1 and 2 do, every PROMOTE K tiles).
// 16-byte copies where K and N are multiples of 4 and A and B 16-byte
// aligned, else 4-byte ones (each thread copies whole 16-byte units either
// way, so that it splits only what it copied); out-of-range elements are
// zero-filled, and blocks whose tile lies within M, N and K copy without
// predicates (FullCopier).
template <int BM, int BN, int STAGES, int PASSES, int PROMOTE = 1>
struct RsTile {
  enum : int {
    BK = 32,
    ROWB = BK * 4,
    THREADS = BN / 64 * 128,
    ACC = BM / 2,  // accumulators per thread of one m64 x BM wgmma
    A_BYTES = BM * ROWB,
    PB = BN + 8,  // B's row pitch, floats
    B_OFF = (PASSES == 3 ? 2 : 1) * A_BYTES,
    STAGE_BYTES = (B_OFF + BK * PB * 4 + 1023) / 1024 * 1024,
    A_CHUNKS = BM * (BK / 4) / THREADS,  // 16-byte units per thread per K tile
    B_CHUNKS = BK * (BN / 4) / THREADS,
  };
  static_assert((BM == 128 || BM == 256) && BN % 64 == 0 && STAGES >= 4, "LA=0 tile");
  static_assert(A_CHUNKS * THREADS == BM * BK / 4 && B_CHUNKS * THREADS == BK * BN / 4, "copies");
  static_assert(PROMOTE == 1 || PROMOTE == 2, "PROMOTE");

  // The copies of blocks whose tile lies within M, N and K (KLoop's FULL),
  // K tile after K tile: this thread's A chunks lie THREADS / 8 rows apart
  // and its B chunks THREADS / (BN / 4) rows apart, so a chunk costs a
  // 64-bit add, and their shared addresses are constant offsets from the
  // stage's (the swizzle of rows 8 apart is the same). The indexed form
  // (Load) took about 95 of the 226 instructions a warp issued per K tile
  // in LA=0 TF32 256x128 (session 19, Nsight Compute's SASS), recomputing
  // 64-bit addresses.
  template <int CT = THREADS>  // the threads that copy
  struct FullCopier {
    enum : int {
      A_ROWS = CT / (BK / 4),  // rows between a thread's A chunks
      B_ROWS = CT / (BN / 4),  // rows between its B chunks
      AC = BM * (BK / 4) / CT,  // chunks a thread
      BC = BK * (BN / 4) / CT,
    };
    const char* a;  // this thread's first A chunk of the next K tile
    const char* b;  // its first B chunk of the next K tile
    long long a_step, b_step;  // bytes between its chunks
    unsigned a_dst, b_dst;     // their offsets in a stage

    // A and B at the block's corner, k0 the first K tile's column.
    __device__ __forceinline__ FullCopier(const float* A, const float* B, int N, int K, int k0,
                                          int tid) {
      const int row = tid / (BK / 4), kq = tid % (BK / 4);
      const int kr = tid / (BN / 4), nq = tid % (BN / 4);
      a = reinterpret_cast<const char*>(A + static_cast<long long>(row) * K + k0 + kq * 4);
      b = reinterpret_cast<const char*>(B + static_cast<long long>(k0 + kr) * N + nq * 4);
      a_step = static_cast<long long>(A_ROWS) * K * 4;
      b_step = static_cast<long long>(B_ROWS) * N * 4;
      a_dst = Swizzle<ROWB>(row * ROWB + kq * 16);
      b_dst = B_OFF + (kr * PB + nq * 4) * 4;
    }
    // The next K tile into the stage at shared address `stage` (WITH_A
    // false: B's rows alone, A's come by TMA).
    template <bool WITH_A = true>
    __device__ __forceinline__ void Issue(unsigned stage) {
      static_assert(A_ROWS % 8 == 0 && BC * B_ROWS == BK, "copy plan");
      const char* p = a;
      if constexpr (WITH_A) {
#pragma unroll
        for (int i = 0; i < AC; ++i, p += a_step) {
          CpAsync16Shared(stage + a_dst + i * A_ROWS * ROWB, p);
        }
        a += BK * 4;
      }
      p = b;
#pragma unroll
      for (int i = 0; i < BC; ++i, p += b_step) {
        CpAsync16Shared(stage + b_dst + i * B_ROWS * PB * 4, p);
      }
      b = p;  // BK rows on
    }
  };

  // K tile at k0 into `stage`: A rows (rows left: `rows`) swizzled, B rows
  // (columns left: `cols`) padded to PB; zeros beyond M, N and K. Blocks
  // whose tile lies within M, N and K copy with FullCopier instead, without
  // predicates, which made the kernel 10-12% faster on the H100 (session 16:
  // the zero-filling form and its address selects in the K loop's issue
  // slots).
  // CT: the threads that copy; WS's producer (CT < THREADS) keeps its loops
  // rolled, within its 40 registers (unrolled, they spilled 1.2 KB).
  // WITH_A false: B alone (A comes by TMA).
  template <bool VEC, int CT = THREADS, bool WITH_A = true>
  static __device__ __forceinline__ void Load(unsigned char* stage, const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int N, int K, int k0, int tid) {
    constexpr int UNROLL = CT == THREADS ? 64 : 1;
#pragma unroll UNROLL
    for (int i = 0; i < (WITH_A ? BM * (BK / 4) / CT : 0); ++i) {
      const int c = tid + i * CT, row = c / (BK / 4), k = k0 + (c % (BK / 4)) * 4;
      float* dst =
          reinterpret_cast<float*>(stage + Swizzle<ROWB>(row * ROWB + (c % (BK / 4)) * 16));
      const float* src = A + static_cast<long long>(row) * K + k;
      if constexpr (VEC) {
        const bool in = row < rows && k < K;
        sgemm_detail::CpAsync16(dst, in ? src : A, in);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = row < rows && k + e < K;
          sgemm_detail::CpAsync4(dst + e, in ? src + e : A, in);
        }
      }
    }
#pragma unroll UNROLL
    for (int i = 0; i < BK * (BN / 4) / CT; ++i) {
      const int c = tid + i * CT, kr = c / (BN / 4), n = (c % (BN / 4)) * 4;
      float* dst = reinterpret_cast<float*>(stage + B_OFF) + kr * PB + n;
      const float* src = B + static_cast<long long>(k0 + kr) * N + n;
      if constexpr (VEC) {
        const bool in = k0 + kr < K && n < cols;
        sgemm_detail::CpAsync16(dst, in ? src : B, in);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = k0 + kr < K && n + e < cols;
          sgemm_detail::CpAsync4(dst + e, in ? src + e : B, in);
        }
      }
    }
  }

  // 3xTF32: this thread's A units of the stage, as Load copied them, split
  // by truncation: big is x as copied (wgmma reads a .tf32 operand's top 19
  // bits, i.e. x with its low 13 bits cleared), small = tf32(x - big) (the
  // difference is exact; cvt.rna rounds it), written A_BYTES further. One
  // store a unit instead of two: 3-5% faster than rounding big, with the
  // same error (session 16). TF32 makes no pass over A (see the comment
  // before RsTile).
  static __device__ __forceinline__ void SplitA(unsigned char* stage, int tid) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS;
      const int off = Swizzle<ROWB>((c / (BK / 4)) * ROWB + (c % (BK / 4)) * 16);
      const uint4 v = *reinterpret_cast<const uint4*>(stage + off);
      const uint4 small = {Small(v.x), Small(v.y), Small(v.z), Small(v.w)};
      *reinterpret_cast<uint4*>(stage + A_BYTES + off) = small;
    }
  }
  // tf32(x - trunc(x)), trunc(x): x's low 13 bits cleared (the part of x
  // that wgmma reads as .tf32).
  static __device__ __forceinline__ unsigned Small(unsigned x) {
    return sgemm_mma_detail::Tf32(__uint_as_float(x) - __uint_as_float(x & 0xffffe000u));
  }

  // The wgmma rows (B^T rows, columns of C) of a thread are ours to place:
  // its rows g and g + 8 of its warp's 16 (g = lane / 4) are columns n0 and
  // n0 + 1 of the block's BN, n0 = 16w + 2g of its warpgroup's 64 (w: its
  // warp in the warpgroup), so that each of its fragment pairs is one 8-byte
  // load (session 19: 8 loads a K tile instead of 16). This returns n0.
  static __device__ __forceinline__ int ColN0(int tid) {
    return (tid / 128) * 64 + 16 * ((tid % 128) / 32) + 2 * ((tid % 32) / 4);
  }

  // This thread's B^T fragments of the stage (m64k8 .tf32: a0 (row g, k
  // t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4) of the warp's 16
  // rows: columns n0 and n0 + 1 of the block's BN, ColN0), rounded or split.
  // A quarter-warp's 8-byte loads (rows t, t + 1, .. 8 floats apart in the
  // banks, PB = BN + 8) hit 32 banks.
  static __device__ __forceinline__ void Fragments(const unsigned char* stage, int n0, int t,
                                                   unsigned (&big)[BK / 8][4],
                                                   unsigned (&small)[BK / 8][4]) {
    const float* bs = reinterpret_cast<const float*>(stage + B_OFF);
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const float2 r0 = *reinterpret_cast<const float2*>(bs + (kk * 8 + t) * PB + n0);
      const float2 r4 = *reinterpret_cast<const float2*>(bs + (kk * 8 + t + 4) * PB + n0);
      SplitOperand<PASSES>(r0.x, big[kk][0], small[kk][0]);
      SplitOperand<PASSES>(r0.y, big[kk][1], small[kk][1]);
      SplitOperand<PASSES>(r4.x, big[kk][2], small[kk][2]);
      SplitOperand<PASSES>(r4.y, big[kk][3], small[kk][3]);
    }
  }

  // K tiles kt0 .. kt1 - 1 into acc (D = C^T: acc[4i + j] is row
  // 8i + 2t + j % 2 of the block's BM, column n0 + j / 2, ColN0; see the
  // epilogue). Tile i's wgmmas run under the work
  // of tile i + 1: this thread's split of tile i + 1's A (3xTF32), the
  // barrier, the copies of tile i + AHEAD, and tile i + 1's B^T fragments
  // into the other fragment set; then wgmma.wait_group (3xTF32: 0, and acc
  // += the fresh accumulators; TF32: before the barrier, 1, so that tile
  // i - 1's group, which read the other set, is done; 3xTF32 with PROMOTE
  // 2: the wait and the add after odd tiles only, a wait for 1 before the
  // barrier of the others). The one barrier a K tile makes tile i + 1's
  // stage whole and frees tile i - 1's. AHEAD K tiles are copied ahead:
  // STAGES - 1 on the 16-byte path, issued after the barrier into tile
  // i - 1's stage; STAGES - 2 on the 4-byte path (VEC false), issued
  // before it into tile i - 2's stage, where the copies' four times as many
  // instructions held up the fragments less.
  // On the H100 (session 18, bench/results/2026-11-25_h100_session18/
  // probe_ahead.txt) STAGES - 1 ran 2-7% faster on the 16-byte path (3xTF32
  // at 2048^3 to 8192^3, 1000^3 split in 2, 16 to 8192 rows by 4096 or
  // 128 split in 2 or 4), 3% slower at 4096x4096x64 and 14% slower on the
  // 4-byte path (4097^3). On the H100 the order of split, barrier and
  // fragments under the wgmmas ran 3-4% faster than doing that work between
  // the wgmma groups (session 16).
  template <bool VEC, bool FULL>
  static __device__ __forceinline__ void KLoop(unsigned char* smem, unsigned base,
                                               const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int N, int K, int kt0, int kt1, int tid,
                                               float (&acc)[ACC]) {
    constexpr int AHEAD = VEC ? STAGES - 1 : STAGES - 2;
    const int nk = kt1 - kt0;
    // K tile kt0 + t (issued in order of t) into stage s.
    FullCopier<> copier(A, B, N, K, kt0 * BK, tid);
    auto load = [&](int s, int t) {
      if constexpr (FULL) {
        copier.Issue(base + s * STAGE_BYTES);
      } else {
        Load<VEC>(smem + s * STAGE_BYTES, A, B, rows, cols, N, K, (kt0 + t) * BK, tid);
      }
    };
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
      if (s < nk) load(s, s);
      sgemm_detail::CpAsyncCommit();
    }
    const int t = tid % 4, n0 = ColN0(tid);
    float part[ACC];
    unsigned big0[BK / 8][4], small0[BK / 8][4], big1[BK / 8][4], small1[BK / 8][4];
    if (nk <= 0) return;
    sgemm_detail::CpAsyncWait<AHEAD - 1>();  // tile 0 landed
    if constexpr (PASSES == 3) {
      SplitA(smem, tid);
      FenceProxyAsync();
    }
    __syncthreads();
    Fragments(smem, n0, t, big0, small0);
    // Tile i, its fragments in (big, small); tile i + 1's into (nbig, nsmall).
    auto step = [&](int i, unsigned (&big)[BK / 8][4], unsigned (&small)[BK / 8][4],
                    unsigned (&nbig)[BK / 8][4], unsigned (&nsmall)[BK / 8][4]) {
      const unsigned a_tile = base + (i % STAGES) * STAGE_BYTES;
      // k8 step kk starts kk * 32 bytes further: its descriptor's address
      // field (bytes / 16, 14 bits, no carry within the stages) 2 * kk more.
      const unsigned long long d_big0 = Descriptor<ROWB>(a_tile);
      [[maybe_unused]] const unsigned long long d_small0 = Descriptor<ROWB>(a_tile + A_BYTES);
      // 3xTF32: tile i's products start a fresh part (i % PROMOTE == 0),
      // and part is added into acc after tile i's group (promote).
      const bool fresh = i % PROMOTE == 0;
      const bool promote = (i + 1) % PROMOTE == 0 || i + 1 == nk;
      if constexpr (PASSES == 3) {
        Pin(part);
      } else {
        Pin(acc);
      }
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; ++kk) {
        const unsigned long long d_big = d_big0 + 2ull * kk;
        if constexpr (PASSES == 3) {
          const unsigned long long d_small = d_small0 + 2ull * kk;
          WgmmaRs<BM>::Run(part, small[kk], d_big, kk > 0 || !fresh ? 1 : 0);
          WgmmaRs<BM>::Run(part, big[kk], d_small, 1);
          WgmmaRs<BM>::Run(part, big[kk], d_big, 1);
        } else {
          WgmmaRs<BM>::Run(acc, big[kk], d_big, 1);
        }
      }
      WgmmaCommit();
      // Tile i + AHEAD's copies into the stage of tile i + AHEAD - STAGES,
      // whose wgmmas every warpgroup waited for before the barrier of tile
      // i + AHEAD - STAGES + 1: i - 2 here (AHEAD STAGES - 2), i - 1 after
      // this step's barrier (AHEAD STAGES - 1).
      auto copy_ahead = [&]() {
        if (i + AHEAD < nk) load((i + AHEAD) % STAGES, i + AHEAD);
        sgemm_detail::CpAsyncCommit();
      };
      if constexpr (AHEAD == STAGES - 2) copy_ahead();
      unsigned char* next = smem + ((i + 1) % STAGES) * STAGE_BYTES;
      if (i + 1 < nk) {
        // This thread's copies of tile i + 1 landed: of the groups
        // committed, those of tiles i + 2 .. i + STAGES - 2 may be pending.
        sgemm_detail::CpAsyncWait<STAGES - 3>();
        if constexpr (PASSES == 3) {
          SplitA(next, tid);
          FenceProxyAsync();
        }
      }
      // Tile i - 1's group (unless it was waited for: 3xTF32's promotion):
      // the other fragment set is free.
      if (PASSES == 1 || !fresh) WgmmaWait<1>();
      __syncthreads();  // tile i + 1 split and landed in every thread
      if constexpr (AHEAD == STAGES - 1) copy_ahead();
      if (i + 1 < nk) Fragments(next, n0, t, nbig, nsmall);
      if (PASSES == 3 && promote) {
        WgmmaWait<0>();
        Pin(part);
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[e] += part[e];
      }
    };
    for (int i = 0; i < nk; i += 2) {
      step(i, big0, small0, big1, small1);
      if (i + 1 < nk) step(i + 1, big1, small1, big0, small0);
    }
    WgmmaWait<0>();
    Pin(acc);
  }

  // The warp-specialized form (WS, TF32; session 19's probe ran it 3-6%
  // faster than KLoop on the large shapes): a producer warpgroup (its
  // registers cut to 40 with setmaxnreg) issues every copy of a K tile,
  // WS_PRODUCERS threads, and arrives on the stage's "full" mbarrier through
  // cp.async.mbarrier.arrive; the THREADS consumer threads (registers raised
  // to 232) wait for it, read their fragments, issue the wgmmas, and after
  // wgmma.wait_group 1 arrive (a lane a warp) on the previous tile's
  // "empty" mbarrier, which the producer waits for before refilling it. No
  // CTA barrier in the K loop: each warpgroup runs at its own pace. The
  // mbarriers lie after the stages: full[STAGES], empty[STAGES].
  enum : int { WS_PRODUCERS = 128, WS_BARS = STAGES * STAGE_BYTES };

  // The producer (ptid: its thread in the producer warpgroup). TMA (A by
  // the tensor map `tma`, see RsGemm): thread 0 arrives on the stage's
  // "full" with A's BM x BK x 4 bytes of transactions expected and issues
  // one 2-D bulk tensor copy, which writes the 128-byte swizzle itself (the
  // layout Swizzle<128> gives the cp.async) and zero-fills rows beyond M and
  // columns beyond K; the producer warpgroup copies B alone. On the H100
  // that made the probe's WS 7-12% faster on 4096^3 and 8192^3 (session 20:
  // 128 threads' cp.async of A could not keep enough bytes in flight).
  template <bool VEC, bool FULL, bool TMA>
  static __device__ __forceinline__ void Produce(unsigned char* smem, unsigned base,
                                                 const float* __restrict__ A,
                                                 const float* __restrict__ B, int rows, int cols,
                                                 int N, int K, int kt0, int kt1, int ptid,
                                                 const TensorMap* tma, int m0) {
    const unsigned full = base + WS_BARS, empty = full + 8 * STAGES;
    FullCopier<WS_PRODUCERS> copier(A, B, N, K, kt0 * BK, ptid);
    const int nk = kt1 - kt0;
    for (int t = 0; t < nk; ++t) {
      const int st = t % STAGES;
      if (t >= STAGES) MbarWait(empty + 8 * st, ((t / STAGES) - 1) & 1);
      if constexpr (TMA) {
        if (ptid == 0) {
          MbarExpectTx(full + 8 * st, BM * BK * 4);
          TmaLoad2d(base + st * STAGE_BYTES, tma, (kt0 + t) * BK, m0, full + 8 * st);
        }
      }
      if constexpr (FULL) {
        copier.template Issue<!TMA>(base + st * STAGE_BYTES);
      } else {
        Load<VEC, WS_PRODUCERS, !TMA>(smem + st * STAGE_BYTES, A, B, rows, cols, N, K,
                                      (kt0 + t) * BK, ptid);
      }
      CpAsyncArrive(full + 8 * st);
    }
  }

  // Produce on the path the block's tile takes (see RsGemm's vec, whole).
  template <bool TMA>
  static __device__ __forceinline__ void ProduceAny(bool vec, bool whole, unsigned char* smem,
                                                    unsigned base, const float* __restrict__ A,
                                                    const float* __restrict__ B, int rows,
                                                    int cols, int N, int K, int kt0, int kt1,
                                                    int ptid, const TensorMap* tma, int m0) {
    if (vec && whole) {
      Produce<true, true, TMA>(smem, base, A, B, rows, cols, N, K, kt0, kt1, ptid, tma, m0);
    } else if (vec) {
      Produce<true, false, TMA>(smem, base, A, B, rows, cols, N, K, kt0, kt1, ptid, tma, m0);
    } else {
      Produce<false, false, TMA>(smem, base, A, B, rows, cols, N, K, kt0, kt1, ptid, tma, m0);
    }
  }

  // A consumer (tid < THREADS): K tiles kt0 .. kt0 + nk - 1 into acc, as
  // KLoop's (the same fragments, wgmmas and accumulator layout).
  static __device__ __forceinline__ void Consume(unsigned char* smem, unsigned base, int nk,
                                                 int tid, float (&acc)[ACC]) {
    static_assert(PASSES == 1, "WS: TF32");
    const unsigned full = base + WS_BARS, empty = full + 8 * STAGES;
    const int t = tid % 4, n0 = ColN0(tid);
    const bool lane0 = tid % 32 == 0;
    unsigned f0[BK / 8][4], f1[BK / 8][4], unused[BK / 8][4];
    MbarWait(full, 0);
    Fragments(smem, n0, t, f0, unused);
    auto step = [&](int i, unsigned (&f)[BK / 8][4], unsigned (&nf)[BK / 8][4]) {
      const unsigned long long d0 = Descriptor<ROWB>(base + (i % STAGES) * STAGE_BYTES);
      Pin(acc);
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; ++kk) WgmmaRs<BM>::Run(acc, f[kk], d0 + 2ull * kk, 1);
      WgmmaCommit();
      if (i + 1 < nk) MbarWait(full + 8 * ((i + 1) % STAGES), ((i + 1) / STAGES) & 1);
      WgmmaWait<1>();  // tile i - 1's wgmmas: its stage is free here
      if (i >= 1 && lane0) MbarArrive(empty + 8 * ((i - 1) % STAGES));
      if (i + 1 < nk) Fragments(smem + ((i + 1) % STAGES) * STAGE_BYTES, n0, t, nf, unused);
    };
    for (int i = 0; i < nk; i += 2) {
      step(i, f0, f1);
      if (i + 1 < nk) step(i + 1, f1, f0);
    }
    WgmmaWait<0>();
    Pin(acc);
  }
};

// The LA = 0 kernel body (sgemm_wgmma's signature, its shared memory):
// the output tile, the split's K tiles, RsTile's K loop, then C = alpha *
// acc + beta * C (SPLITK > 1: atomicAdd of alpha * acc, C prescaled).
// WS: `tma` is A's tensor map (dims K, M; box 32 x BM; 128-byte swizzle),
// used where K % 4 == 0 and A is 16-byte aligned (TMA's rules, which the
// launcher tests alike before it encodes the map; elsewhere the map is
// zeros and the producer copies A with cp.async).
template <int BM, int BN, int STAGES, int SPLITK, int PASSES, int GROUP, int PROMOTE, int WS>
__device__ __forceinline__ void RsGemm(int M, int N, int K, float alpha,
                                       const float* __restrict__ A, const float* __restrict__ B,
                                       float beta, float* __restrict__ C, unsigned char* smem_raw,
                                       const TensorMap* tma = nullptr) {
  using T = RsTile<BM, BN, STAGES, PASSES, PROMOTE>;
  const int tiles_m = CeilDiv(M, BM), tiles_n = CeilDiv(N, BN);
  int tile_m, tile_n;
  sgemm_detail::RasterTile<GROUP>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  if (tile_m >= tiles_m) return;
  int kt0, kt1;
  if (!sgemm_detail::SplitKRange<SPLITK>(CeilDiv(K, T::BK), kt0, kt1)) return;
  const unsigned raw = SmemAddr(smem_raw);
  const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
  const int tid = threadIdx.x;
  const int bm = tile_m * BM, bn = tile_n * BN;
  const int rows = M - bm, cols = N - bn;
  A += static_cast<long long>(bm) * K;
  B += bn;
  C += static_cast<long long>(bm) * N + bn;
  const bool vec = ((K | N) & 3) == 0 && Aligned16(A) && Aligned16(B);
  const bool whole = rows >= BM && cols >= BN && K % T::BK == 0;
  if constexpr (WS) {
    const unsigned full = raw + pad + T::WS_BARS;
    const bool by_tma = tma != nullptr && (K & 3) == 0 && Aligned16(A);
    if (tid < STAGES) {  // full: the producers' cp.async arrivals (and TMA's expect_tx one)
      MbarInit(full + 8 * tid, T::WS_PRODUCERS + (by_tma ? 1 : 0));
      MbarInit(full + 8 * STAGES + 8 * tid, T::THREADS / 32);
    }
    FenceMbarInit();
    __syncthreads();
    if (tid >= T::THREADS) {  // the producer warpgroup
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      const int ptid = tid - T::THREADS;
      if (by_tma) {
        T::template ProduceAny<true>(vec, whole, smem_raw + pad, raw + pad, A, B, rows, cols, N,
                                     K, kt0, kt1, ptid, tma, bm);
      } else {
        T::template ProduceAny<false>(vec, whole, smem_raw + pad, raw + pad, A, B, rows, cols, N,
                                      K, kt0, kt1, ptid, tma, bm);
      }
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  }
  float acc[T::ACC];
#pragma unroll
  for (int e = 0; e < T::ACC; ++e) acc[e] = 0.0f;
  if constexpr (WS) {
    T::Consume(smem_raw + pad, raw + pad, kt1 - kt0, tid, acc);
  } else if (vec) {
    if (whole) {
      T::template KLoop<true, true>(smem_raw + pad, raw + pad, A, B, rows, cols, N, K, kt0, kt1,
                                    tid, acc);
    } else {
      T::template KLoop<true, false>(smem_raw + pad, raw + pad, A, B, rows, cols, N, K, kt0, kt1,
                                     tid, acc);
    }
  } else {
    T::template KLoop<false, false>(smem_raw + pad, raw + pad, A, B, rows, cols, N, K, kt0, kt1,
                                    tid, acc);
  }
  // The epilogue through shared memory (the stages are free once every
  // warpgroup's wgmmas are done): acc[4i + j], row 8i + 2t + j % 2 of the
  // block's BM and column n0 + j / 2 (RsTile::ColN0), goes to Cs[m][n] (a
  // pitch of BN + 4 floats: a half-warp's 8-byte stores of both columns hit
  // 32 banks), then each warp writes whole rows of C, 4 floats a thread
  // (float4 where N % 4 == 0 and C is 16-byte aligned, else one by one).
  // Stored straight from acc, a warp's stores were 4 rows of 8 floats.
  // (WS: the consumers alone, at named barrier 1.)
  auto sync = [&]() {
    if constexpr (WS) {
      asm volatile("bar.sync 1, %0;\n" ::"r"(static_cast<int>(T::THREADS)) : "memory");
    } else {
      __syncthreads();
    }
  };
  constexpr int PC = BN + 4;
  static_assert(BM * PC * 4 <= STAGES * T::STAGE_BYTES, "the C tile fits in the stages");
  sync();
  float* cs = reinterpret_cast<float*>(smem_raw + pad);
  {
    const int t = tid % 4, n0 = T::ColN0(tid);
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        *reinterpret_cast<float2*>(cs + (8 * i + 2 * t + h) * PC + n0) =
            make_float2(acc[4 * i + h], acc[4 * i + 2 + h]);
      }
    }
  }
  sync();
  const bool cvec = (N & 3) == 0 && Aligned16(C);
#pragma unroll 4
  for (int q = tid; q < BM * BN / 4; q += T::THREADS) {
    const int m = q / (BN / 4), n = (q % (BN / 4)) * 4;
    if (m >= rows || n >= cols) continue;
    const float4 a = *reinterpret_cast<const float4*>(cs + m * PC + n);
    float v[4] = {alpha * a.x, alpha * a.y, alpha * a.z, alpha * a.w};
    float* c = C + static_cast<long long>(m) * N + n;
    if constexpr (SPLITK > 1) {
      if (cvec && n + 3 < cols) {  // 4 times fewer atomics than scalar ones
        sgemm_detail::RedAdd4(c, v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (n + e < cols) atomicAdd(c + e, v[e]);
        }
      }
    } else if (cvec && n + 3 < cols) {
      if (beta != 0.0f) {
        const float4 old = *reinterpret_cast<const float4*>(c);
        v[0] = fmaf(beta, old.x, v[0]);
        v[1] = fmaf(beta, old.y, v[1]);
        v[2] = fmaf(beta, old.z, v[2]);
        v[3] = fmaf(beta, old.w, v[3]);
      }
      *reinterpret_cast<float4*>(c) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (n + e < cols) c[e] = beta != 0.0f ? fmaf(beta, c[e], v[e]) : v[e];
      }
    }
  }
}

}  // namespace sgemm_wgmma_detail

// KIND=6: see the file comment. Parameters: BM x BN block tile, BK K tile,
// WM x WN warpgroup tile, STAGES shared-memory stages, SPLITK blocks along K
// per output tile, PASSES 1 (TF32) or 3 (3xTF32), GROUP tile-rows per
// raster group, MINB __launch_bounds__ minimum blocks per SM, LA K tiles
// loaded ahead into registers (1 or 2; the 16-byte path only), or 0: the
// register-A form (RsTile; BK 32, WM = BM, WN 64); PROMOTE (LA 0, 3xTF32)
// K tiles per tensor-core partial sum (1 or 2). WS = 1 is sgemm_wgmma_ws.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int PASSES, int GROUP,
          int MINB, int LA, int PROMOTE = 1>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 128, MINB)
    sgemm_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
  extern __shared__ __align__(1024) unsigned char sgemm_wgmma_smem[];
  if constexpr (LA == 0) {
    static_assert(BK == 32 && WM == BM && WN == 64, "LA=0: BK 32, WM = BM, WN 64");
    sgemm_wgmma_detail::RsGemm<BM, BN, STAGES, SPLITK, PASSES, GROUP, PROMOTE, 0>(
        M, N, K, alpha, A, B, beta, C, sgemm_wgmma_smem);
  } else {
    using T = sgemm_wgmma_detail::Tile<BM, BN, BK, WM, WN, STAGES, PASSES>;
    const int tiles_m = sgemm_wgmma_detail::CeilDiv(M, BM);
    const int tiles_n = sgemm_wgmma_detail::CeilDiv(N, BN);
    int tile_m, tile_n;
    sgemm_detail::RasterTile<GROUP>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
    if (tile_m >= tiles_m) return;
    int kt0, kt1;  // K tiles of this split
    if (!sgemm_detail::SplitKRange<SPLITK>(sgemm_detail::CeilDiv(K, BK), kt0, kt1)) return;

    // The stages start on a 1024-byte boundary (the swizzle's period).
    const unsigned raw = sgemm_wgmma_detail::SmemAddr(sgemm_wgmma_smem);
    const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
    unsigned char* smem = sgemm_wgmma_smem + pad;

    const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;
    const int wm = (wg / T::WGS_N) * WM, wn = (wg % T::WGS_N) * WN;
    const int bm = tile_m * BM, bn = tile_n * BN;
    const int rows = M - bm, cols = N - bn;
    A += static_cast<long long>(bm) * K;
    B += bn;
    C += static_cast<long long>(bm) * N + bn;

    float acc[T::MI][T::ACC];
  #pragma unroll
    for (int mi = 0; mi < T::MI; ++mi) {
  #pragma unroll
      for (int e = 0; e < T::ACC; ++e) acc[mi][e] = 0.0f;
    }
    const bool vec = ((K | N) & 3) == 0 && sgemm_wgmma_detail::Aligned16(A) &&
                     sgemm_wgmma_detail::Aligned16(B);
    static_assert(LA == 1 || LA == 2, "LA");
    if constexpr (LA == 2) {
      if (vec) {
        T::template KLoop2<true>(smem, raw + pad, A, B, rows, cols, N, K, kt0, kt1,
                                 tid, wm, wn, acc);
      } else {
        T::template KLoop<false>(smem, raw + pad, A, B, rows, cols, N, K, kt0, kt1,
                                 tid, wm, wn, acc);
      }
    } else if (vec) {
      T::template KLoop<true>(smem, raw + pad, A, B, rows, cols, N, K, kt0, kt1, tid, wm, wn, acc);
    } else {
      T::template KLoop<false>(smem, raw + pad, A, B, rows, cols, N, K, kt0, kt1, tid, wm, wn, acc);
    }

    // Epilogue: d[4i + j] at row 16w + g + 8 * (j / 2), column 8i + 2t + j % 2
    // of each m64 block (w: the warp in the warpgroup).
    const int g = lane / 4, t = lane % 4, w = (tid % 128) / 32;
    const bool pairs = (N & 1) == 0 && (reinterpret_cast<unsigned long long>(C) & 7ull) == 0;
  #pragma unroll
    for (int mi = 0; mi < T::MI; ++mi) {
  #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm + mi * 64 + 16 * w + g + 8 * h;
        if (row >= rows) continue;
        float* crow = C + static_cast<long long>(row) * N;
  #pragma unroll
        for (int i = 0; i < WN / 8; ++i) {
          const int col = wn + 8 * i + 2 * t;
          const float v0 = alpha * acc[mi][4 * i + 2 * h], v1 = alpha * acc[mi][4 * i + 2 * h + 1];
          if constexpr (SPLITK > 1) {
            if (col < cols) atomicAdd(crow + col, v0);
            if (col + 1 < cols) atomicAdd(crow + col + 1, v1);
          } else if (pairs && col + 1 < cols) {
            float2* c2 = reinterpret_cast<float2*>(crow + col);
            float2 v = make_float2(v0, v1);
            if (beta != 0.0f) {
              const float2 old = *c2;
              v.x = fmaf(beta, old.x, v0);
              v.y = fmaf(beta, old.y, v1);
            }
            *c2 = v;
          } else {
            if (col < cols) crow[col] = beta != 0.0f ? fmaf(beta, crow[col], v0) : v0;
            if (col + 1 < cols) crow[col + 1] = beta != 0.0f ? fmaf(beta, crow[col + 1], v1) : v1;
          }
        }
      }
    }
  }
}

// KIND=6 with WS = 1: the warp-specialized LA = 0 TF32 (BN 128, BK 32, WM
// = BM, WN 64, MINB 1), a producer warpgroup more (RsTile::Produce /
// Consume; dynamic shared memory 16 x STAGES bytes more for its
// mbarriers), A by TMA through `tma_a`, which the launcher encodes
// (LaunchGeometry.tensor_maps: dims K, M; box 32 x BM; 128-byte swizzle)
// and passes after C.
template <int BM, int STAGES, int SPLITK, int GROUP>
__global__ void __launch_bounds__(384, 1)  // two consumer warpgroups (BN 128 / WN 64) and the producer
    sgemm_wgmma_ws(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C,
                   const __grid_constant__ sgemm_wgmma_detail::TensorMap tma_a) {
  extern __shared__ __align__(1024) unsigned char sgemm_wgmma_smem[];
  sgemm_wgmma_detail::RsGemm<BM, 128, STAGES, SPLITK, 1, GROUP, 1, 1>(
      M, N, K, alpha, A, B, beta, C, sgemm_wgmma_smem, &tma_a);
}
