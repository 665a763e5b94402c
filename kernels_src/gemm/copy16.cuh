// The copies of a 16-bit operand tile into shared memory without TMA, for
// gemm16_wgmma (wgmma16.cuh) where an operand's pointer or pitch breaks
// TMA's rules: into the layout TMA writes (128-byte rows, 16-byte unit u of
// row r at unit u ^ (r % 8)), by its producer (LoadTileManual), or with
// STAGED through raw buffers that its producer fills (IssueStaged) and its
// consumers shift into the stage (ShiftStaged).
//
// Compiled before wgmma16.cuh, no #include; NVRTC with
// --gpu-architecture=sm_90a. Names: namespace gemm16_detail.
namespace gemm16_detail {

// 16 bytes into shared memory at `addr`.
__device__ __forceinline__ void StShared16(unsigned addr, unsigned a, unsigned b, unsigned c,
                                           unsigned d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

// 8 consecutive 16-bit elements at p (2-byte aligned), the first `n` of
// them in range (the rest 0), as 16 bytes through registers: 2-byte loads
// where p is not 4-byte aligned (a pitch not a multiple of 8 elements, or an
// unaligned pointer), else 4-byte ones.
__device__ __forceinline__ uint4 LoadUnit8(const unsigned short* p, int n) {
  if (n >= 8 && (reinterpret_cast<unsigned long long>(p) & 3) == 0) {
    const unsigned* q = reinterpret_cast<const unsigned*>(p);
    return make_uint4(q[0], q[1], q[2], q[3]);
  }
  unsigned v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = e < n ? p[e] : 0u;
  return make_uint4(v[0] | (v[1] << 16), v[2] | (v[3] << 16), v[4] | (v[5] << 16),
                    v[6] | (v[7] << 16));
}

// cp.async of `bytes` (4, 8 or 16; src and dst aligned to it) into shared
// memory, completing asynchronously (no registers held). 16 bytes bypass L1
// (.cg) unless L1 is set; fewer always go through it (.ca, PTX's rule).
template <int BYTES, bool L1 = false>
__device__ __forceinline__ void CpAsync(unsigned dst, const void* src) {
  if constexpr (BYTES == 16 && !L1) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(BYTES)
                 : "memory");
  }
}
// This thread's arrival on `bar` once its cp.asyncs issued before are done
// (counted in the mbarrier's expected arrivals: .noinc).
__device__ __forceinline__ void CpAsyncArrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// An operand tile of one stage loaded without TMA by the 128 producer
// threads (`ptid`), bounds-checked (out of range: 0), into the layout TMA
// writes: 128-byte rows, 16-byte unit u of row r at unit u ^ (r % 8).
//  - KMAJOR: ROWS rows (m or n: mn0 + r < mn_ext), 64 k each (k0 + c < K),
//    element (r, c) at src[(mn0 + r) * pitch + k0 + c];
//  - else ROWS / 64 chunks of 64 rows (k), 64 mn each, chunk j at
//    j * 8192 bytes, element (j, r, c) at src[(k0 + r) * pitch + mn0 + 64j + c].
// A unit of 8 elements wholly in range whose address is 4-byte aligned goes
// by cp.async (16, 8 or 4 bytes at a time, by its alignment); the others
// (edges, and 2-byte-aligned units) through registers, two units a thread
// at a time.
template <bool KMAJOR, int ROWS>
__device__ __forceinline__ void LoadTileManual(unsigned dst, const unsigned short* src, long long pitch,
                                               int mn0, int mn_ext, int k0, int K, int ptid) {
  static_assert((ROWS * 8) % 256 == 0, "ROWS");
#pragma unroll 1
  for (int u0 = ptid; u0 < ROWS * 8; u0 += 256) {
    uint4 v[2];
    unsigned off[2];
    bool reg[2];
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int u = u0 + 128 * x, c8 = u % 8;
      int r, row, n;  // r: the tile row; row: the matrix row; n: elements in range
      long long col;
      if constexpr (KMAJOR) {
        r = u / 8;
        row = mn0 + r;
        col = k0 + 8 * c8;
        n = row < mn_ext ? K - static_cast<int>(col) : 0;
        off[x] = r * 128;
      } else {
        const int j = u / 512;
        r = (u / 8) % 64;
        row = k0 + r;
        col = mn0 + 64 * j + 8 * c8;
        n = row < K ? mn_ext - static_cast<int>(col) : 0;
        off[x] = j * 8192 + r * 128;
      }
      off[x] = dst + off[x] + ((c8 ^ (r & 7)) << 4);
      const unsigned short* p = src + static_cast<long long>(row) * pitch + col;
      const unsigned a = static_cast<unsigned>(reinterpret_cast<unsigned long long>(p));
      reg[x] = n < 8 || (a & 3) != 0;
      if (!reg[x]) {
        if ((a & 15) == 0) {
          CpAsync<16>(off[x], p);
        } else if ((a & 7) == 0) {
          CpAsync<8>(off[x], p);
          CpAsync<8>(off[x] + 8, p + 4);
        } else {
#pragma unroll
          for (int w = 0; w < 4; ++w) CpAsync<4>(off[x] + 4 * w, p + 2 * w);
        }
      } else {
        v[x] = n > 0 ? LoadUnit8(p, n) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      if (reg[x]) StShared16(off[x], v[x].x, v[x].y, v[x].z, v[x].w);
    }
  }
}

// ---- STAGED: an operand TMA cannot copy, by cp.async and a shift.
// A tile is BM (A) or BN (B) segments of 64 elements, each one 128-byte row
// of the swizzled stage; a segment's 16-byte-aligned span in global memory
// (at most 144 bytes: 128 at any 2-byte offset) goes by cp.async into a
// raw slot (the producer), and the consumers shift it from there into the
// stage. Measured beside other forms of the same on an H100
// (bench/RESULTS.md gemm16-staged): a thread a segment in the
// producer and 4-byte shared loads in the shift ran fastest.
constexpr int kRawSlot = 144;

// Segment s of an operand tile whose K tile starts at k0, in the layout
// LoadTileManual writes:
//  - KMAJOR: tile row s, elements (mn0 + s, k0 .. k0 + 63);
//  - else chunk s / 64, k row s % 64: elements (k0 + s % 64, mn0 + 64 (s / 64) ..).
// Returns its first element's address; `n`: its elements in range (0: none);
// `row`: its 128-byte row's offset in the stage.
template <bool KMAJOR>
__device__ __forceinline__ const unsigned short* SegmentAt(int s, const unsigned short* src,
                                                           long long pitch, int mn0, int mn_ext,
                                                           int k0, int K, int& n, unsigned& row) {
  if constexpr (KMAJOR) {
    const int r = mn0 + s;
    n = r < mn_ext ? min(64, K - k0) : 0;
    row = s * 128;
    return src + static_cast<long long>(r) * pitch + k0;
  } else {
    const int r = s % 64, col = mn0 + 64 * (s / 64);
    n = k0 + r < K ? max(0, min(64, mn_ext - col)) : 0;
    row = (s / 64) * 8192 + r * 128;
    return src + static_cast<long long>(k0 + r) * pitch + col;
  }
}

// One K tile's copies into the raw slots at `raw` (A's BM segments, then
// B's BN, kRawSlot bytes each) for the operands marked staged, 16 bytes at
// a time by cp.async (through L1: a thread's next 16 bytes are in the
// sector its last copy brought): thread ptid takes segments ptid, ptid +
// 128, ..., then arrives on `bar` once they are done (.noinc: `bar`
// expects the 128 producer threads). A span starts and ends on 16-byte
// boundaries around elements in range, so it reads no page the operand
// does not touch.
template <bool AK, bool BKM, int BM, int BN>
__device__ __forceinline__ void IssueStaged(unsigned raw, unsigned bar, const unsigned short* A,
                                            long long lda, bool stage_a, const unsigned short* B,
                                            long long ldb, bool stage_b, int bm, int bn, int M,
                                            int N, int k0, int K, int ptid) {
#pragma unroll 1
  for (int q = ptid; q < BM + BN; q += 128) {
    const bool is_a = q < BM;
    if (is_a ? !stage_a : !stage_b) continue;
    int n;
    unsigned row;
    const unsigned short* p = is_a ? SegmentAt<AK>(q, A, lda, bm, M, k0, K, n, row)
                                   : SegmentAt<BKM>(q - BM, B, ldb, bn, N, k0, K, n, row);
    if (n <= 0) continue;
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    const unsigned long long lo = a & ~15ull, hi = (a + 2ull * n + 15ull) & ~15ull;
    const char* src = reinterpret_cast<const char*>(lo);
    const unsigned dst = raw + q * kRawSlot, units = static_cast<unsigned>(hi - lo) / 16;
#pragma unroll
    for (unsigned v = 0; v < kRawSlot / 16; ++v) {
      if (v < units) {
        CpAsync<16, /*L1=*/true>(dst + 16 * v, src + 16 * v);
      }
    }
  }
  CpAsyncArrive(bar);
}

// The 32 bits of elements 2j and 2j + 1 of a unit that are in range when
// its first `e` elements are.
__device__ __forceinline__ unsigned KeepMask(int e, int j) {
  return e >= 2 * j + 2 ? 0xffffffffu : (e == 2 * j + 1 ? 0xffffu : 0u);
}

// One K tile's shift from the raw slots (at byte offset `raw` of the
// block's shared memory `smem`) into the stage (A's tile at offset sa, B's
// at sb) for the staged operands, by T threads (the consumers): thread t
// writes unit t % 8 (16 bytes) of segments t / 8, + T / 8, ...: from its
// slot's 4-byte words at the segment's offset within its first 16 bytes, a
// funnel shift by 0 or 16 bits, zeros outside the operand, in TMA's
// 128-byte swizzle (unit u of row r at u ^ (r % 8)). Units go G at a time,
// their loads before their stores (which the compiler could not reorder:
// one array).
template <bool AK, bool BKM, int BM, int BN, int T>
__device__ __forceinline__ void ShiftStaged(unsigned char* smem, unsigned raw, unsigned sa,
                                            unsigned sb, const unsigned short* A, long long lda,
                                            bool stage_a, const unsigned short* B, long long ldb,
                                            bool stage_b, int bm, int bn, int M, int N, int k0,
                                            int K, int ptid) {
  static_assert((BM + BN) % (T / 8) == 0, "segments a thread");
  constexpr int kSegs = (BM + BN) / (T / 8), G = kSegs % 4 == 0 ? 4 : 2;
  static_assert(kSegs % G == 0, "segments a batch");
  const int u = ptid % 8;
#pragma unroll 1
  for (int j0 = 0; j0 < kSegs; j0 += G) {
    unsigned w[G][5], dst[G], sh[G];
    int e[G];
    bool staged[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int q = ptid / 8 + (T / 8) * (j0 + g);
      const bool is_a = q < BM;
      int n;
      unsigned row;
      const unsigned short* p = is_a ? SegmentAt<AK>(q, A, lda, bm, M, k0, K, n, row)
                                     : SegmentAt<BKM>(q - BM, B, ldb, bn, N, k0, K, n, row);
      staged[g] = is_a ? stage_a : stage_b;
      e[g] = n - 8 * u;  // this unit's elements in range
      dst[g] = (is_a ? sa : sb) + row + ((u ^ ((row >> 7) & 7)) << 4);
      const unsigned m = static_cast<unsigned>(reinterpret_cast<unsigned long long>(p)) & 15u;
      sh[g] = (m & 2u) * 8;
      const unsigned* src =
          reinterpret_cast<const unsigned*>(smem + raw + q * kRawSlot + 16 * u + (m & ~3u));
      if (staged[g] && e[g] > 0) {
#pragma unroll
        for (int x = 0; x < 5; ++x) w[g][x] = src[x];
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (!staged[g]) continue;
      unsigned o[4] = {0u, 0u, 0u, 0u};
      if (e[g] > 0) {
#pragma unroll
        for (int x = 0; x < 4; ++x) o[x] = __funnelshift_r(w[g][x], w[g][x + 1], sh[g]);
        if (e[g] < 8) {
#pragma unroll
          for (int x = 0; x < 4; ++x) o[x] &= KeepMask(e[g], x);
        }
      }
      *reinterpret_cast<uint4*>(smem + dst[g]) = make_uint4(o[0], o[1], o[2], o[3]);
    }
  }
}

}  // namespace gemm16_detail
