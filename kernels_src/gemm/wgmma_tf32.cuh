// Row-major fp32 GEMM on Hopper's warpgroup tensor cores for tuned (family
// "sgemm", KIND 6, families/sgemm/wgmma.cc), sm_90a only:
//
//   C(MxN) = alpha * op(A) * op(B) + beta * C,   ldc = N,
//
// in the operand layout LAYOUT (tuner.proto Layout, the kernels' last
// template argument; op(A) = A^T where LAYOUT & 2, A stored K x M, lda = M;
// op(B) = B^T where LAYOUT & 1, B stored N x K, ldb = K; as KIND 5),
//
// with the signature of every sgemm kernel (kernels_src/sgemm/sgemm.cuh):
//
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
//
// Compiled at runtime by NVRTC appended to sgemm.cuh, warp.cuh, mma_tf32.cuh
// and hopper.cuh (it uses sgemm_detail's CeilDiv, RasterTile, SplitKRange,
// SmemAddr and Aligned16, sgemm_mma_detail's Split and hopper_detail's
// mbarriers, TMA and wgmma fences; no #include), and
// followed by wgmma_tile.cuh, wgmma_rs.cuh and wgmma_kernels.cuh: this
// file holds the PTX wrappers they share. For the target
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
//    with one long-lived accumulator, tests/gpu_test.cc); so it
//    is bounded by 3 x BK/8 products, about (BK/8) x 2^-24 for BK <= 32.
//    The register-A form (LA = 0) may keep a fresh set for PROMOTE = 2 K
//    tiles: twice the products and the bias (error 4.7e-7 against 2.5e-7
//    to 3.7e-7 relative to fp64 on the H100), half the waits.
//
// Operand layouts in shared memory (PTX ISA 9.7.15.5.1 "Register fragments
// and shared memory matrix layouts", 9.7.15.5.1.2 "Shared Memory Matrix
// Layout"): .tf32 wgmma takes A and B K-major only (the transpose
// immediates imm-trans-a/b exist for .f16/.bf16 alone, 9.7.15.5.2
// "wgmma.mma_async"). A (M x K, k contiguous in global memory) is K-major as
// it comes; B (K x N, n contiguous) is stored transposed, Bs[n][k], by the
// register-staged copy below. In the other layouts each operand is staged
// per its contiguity (Tile::LoadOperand, StoreOperand): a K-contiguous one
// (op(B) = B^T's storage N x K) as A, an M-contiguous one (op(A) = A^T's,
// K x M) transposed as B. A tile is rows of BK floats (ROWB = 4*BK =
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

// sgemm.cuh's, mma_tf32.cuh's and hopper.cuh's helpers (this file is compiled
// appended to them).
using sgemm_detail::Aligned16;
using sgemm_detail::CeilDiv;
using sgemm_detail::SmemAddr;
using sgemm_mma_detail::Split;
using namespace hopper_detail;  // NOLINT(build/namespaces): hopper.cuh's primitives

// SGEMM_TF32_WGMMA(N, REGS, P, A, B): the m64nNk8 .tf32 instruction on the
// accumulators REGS (hopper.cuh's HOPPER_WGMMA_REGS_<N / 2>), A (a
// descriptor, or four registers), the descriptor B, and scale-d from the
// predicate of operand P.
#define SGEMM_TF32_WGMMA(N, REGS, P, A, B)                                               \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                         \
  "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" REGS "}, " A ", " B       \
  ", p, 1, 1;\n}\n"

// d (+)= A(64 x 8) * B(8 x N) for the warpgroup, A and B through the matrix
// descriptors a and b; scale_d 0: d = A * B (a fresh accumulator), 1: d +=
// A * B. imm-scale-a = imm-scale-b = 1; .tf32 takes no transpose immediates.
template <int N>
struct Wgmma;

template <>
struct Wgmma<64> {
  static __device__ __forceinline__ void Run(float (&d)[32], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    asm volatile(SGEMM_TF32_WGMMA(64, HOPPER_WGMMA_REGS_32, "%34", "%32", "%33")
                 : HOPPER_WGMMA_D32(d, 0)
                 : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<128> {
  static __device__ __forceinline__ void Run(float (&d)[64], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    asm volatile(SGEMM_TF32_WGMMA(128, HOPPER_WGMMA_REGS_64, "%66", "%64", "%65")
                 : HOPPER_WGMMA_D32(d, 0), HOPPER_WGMMA_D32(d, 32)
                 : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<256> {
  static __device__ __forceinline__ void Run(float (&d)[128], unsigned long long a,
                                             unsigned long long b, int scale_d) {
    asm volatile(SGEMM_TF32_WGMMA(256, HOPPER_WGMMA_REGS_128, "%130", "%128", "%129")
                 : HOPPER_WGMMA_D32(d, 0), HOPPER_WGMMA_D32(d, 32), HOPPER_WGMMA_D32(d, 64), HOPPER_WGMMA_D32(d, 96)
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
struct WgmmaRs<64> {
  static __device__ __forceinline__ void Run(float (&d)[32], const unsigned (&a)[4],
                                             unsigned long long b, int scale_d) {
    asm volatile(SGEMM_TF32_WGMMA(64, HOPPER_WGMMA_REGS_32, "%37", "{%32, %33, %34, %35}", "%36")
                 : HOPPER_WGMMA_D32(d, 0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};

template <>
struct WgmmaRs<128> {
  static __device__ __forceinline__ void Run(float (&d)[64], const unsigned (&a)[4],
                                             unsigned long long b, int scale_d) {
    asm volatile(SGEMM_TF32_WGMMA(128, HOPPER_WGMMA_REGS_64, "%69", "{%64, %65, %66, %67}", "%68")
                 : HOPPER_WGMMA_D32(d, 0), HOPPER_WGMMA_D32(d, 32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};

template <>
struct WgmmaRs<256> {
  static __device__ __forceinline__ void Run(float (&d)[128], const unsigned (&a)[4],
                                             unsigned long long b, int scale_d) {
    asm volatile(SGEMM_TF32_WGMMA(256, HOPPER_WGMMA_REGS_128, "%133", "{%128, %129, %130, %131}", "%132")
                 : HOPPER_WGMMA_D32(d, 0), HOPPER_WGMMA_D32(d, 32), HOPPER_WGMMA_D32(d, 64), HOPPER_WGMMA_D32(d, 96)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};
#undef SGEMM_TF32_WGMMA

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
// the add, a mask) (Nsight Compute's SASS of LA=0). A NaN is
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

// d[j] <- this thread's 32 bits of matrix j of four 8 x 16-byte matrices in
// shared memory (PTX ISA "ldmatrix", .b16 pairs read as one 32-bit value:
// row lane / 4, bytes 4 (lane % 4) .. + 3), whose rows' shared addresses
// lanes 8j .. 8j + 7 give in `addr`.
__device__ __forceinline__ void LdMatrix4(unsigned addr, unsigned (&d)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr)
               : "memory");
}

// This thread's arrival, once its cp.async issued before complete (the
// arrival is counted in the mbarrier's expected count: .noinc).
__device__ __forceinline__ void CpAsyncArrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
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

}  // namespace sgemm_wgmma_detail
