import os, re, sys
src = open('/work/main/kernels_src/sgemm/wgmma_tf32.cuh').read()
def write(name, s):
    d = f'/tmp/var/{name}/kernels_src/sgemm'
    os.makedirs(d, exist_ok=True)
    open(f'{d}/wgmma_tf32.cuh', 'w').write(s)
    for f in ['sgemm.cuh', 'mma_tf32.cuh']:
        open(f'{d}/{f}', 'w').write(open(f'/work/main/kernels_src/sgemm/{f}').read())
def rep(s, a, b):
    assert a in s, a[:80]
    return s.replace(a, b)
# v1: A's split by truncation: big = x as copied (wgmma reads its top 19 bits), small = tf32(x - trunc(x)); TF32: no pass over A
old_round = src[src.index('  static __device__ __forceinline__ void Round(unsigned char* stage, int tid) {'):src.index('  // This thread\'s B^T fragments of the stage')]
new_round = '''  static __device__ __forceinline__ void Round(unsigned char* stage, int tid) {
    if constexpr (PASSES == 3) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS;
      const uint4 v = *reinterpret_cast<const uint4*>(
          stage + Swizzle<ROWB>((c / (BK / 4)) * ROWB + (c % (BK / 4)) * 16));
      uint4 small;
      small.x = sgemm_mma_detail::Tf32(__uint_as_float(v.x) - __uint_as_float(v.x & 0xffffe000u));
      small.y = sgemm_mma_detail::Tf32(__uint_as_float(v.y) - __uint_as_float(v.y & 0xffffe000u));
      small.z = sgemm_mma_detail::Tf32(__uint_as_float(v.z) - __uint_as_float(v.z & 0xffffe000u));
      small.w = sgemm_mma_detail::Tf32(__uint_as_float(v.w) - __uint_as_float(v.w & 0xffffe000u));
      *reinterpret_cast<uint4*>(stage + A_BYTES + Swizzle<ROWB>((c / (BK / 4)) * ROWB + (c % (BK / 4)) * 16)) = small;
    }
    }
  }

'''
v1 = src.replace(old_round, new_round)
v1 = rep(v1, '''        Round(next, tid);
        FenceProxyAsync();''', '''        if constexpr (PASSES == 3) {
          Round(next, tid);
          FenceProxyAsync();
        }''')
write('v1', v1)
# v2: v1, the 16-byte path only
v2 = rep(v1, '''  if (((K | N) & 3) == 0 && Aligned16(A) && Aligned16(B)) {
    T::template KLoop<true>(smem_raw + pad, raw + pad, A, B, rows, cols, N, K, kt0, kt1, tid, acc);
  } else {
    T::template KLoop<false>(smem_raw + pad, raw + pad, A, B, rows, cols, N, K, kt0, kt1, tid, acc);
  }''', '''  T::template KLoop<true>(smem_raw + pad, raw + pad, A, B, rows, cols, N, K, kt0, kt1, tid, acc);''')
write('v2', v2)
# v3: v2, the epilogue without beta and bounds
v3 = rep(v2, '''      if (m >= rows || n >= cols) continue;
      float* c = C + static_cast<long long>(m) * N + n;
      const float v = alpha * acc[4 * i + j];
      if constexpr (SPLITK > 1) {
        atomicAdd(c, v);
      } else {
        *c = beta != 0.0f ? fmaf(beta, *c, v) : v;
      }''', '''      C[static_cast<long long>(m) * N + n] = acc[4 * i + j];''')
write('v3', v3)
# v4: v3, the copies unpredicated
v4 = rep(v3, '''        const bool in = row < rows && k < K;
        sgemm_detail::CpAsync16(dst, in ? src : A, in);''', '''        sgemm_detail::CpAsync16(dst, src, true);''')
v4 = rep(v4, '''        const bool in = k0 + kr < K && n < cols;
        sgemm_detail::CpAsync16(dst, in ? src : B, in);''', '''        sgemm_detail::CpAsync16(dst, src, true);''')
write('v4', v4)
