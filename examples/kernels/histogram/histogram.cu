// counts[b] += the number of bytes of x[0 .. n-1] equal to b, for the 256
// values b of a byte. BLOCK, ITEMS, VEC and COPIES come from the spec's
// parameters (-DBLOCK=256 -DITEMS=4 -DVEC=4 -DCOPIES=2).

// Adds the four bytes of `w` to the bins `h`.
__device__ __forceinline__ void add_bytes(int* h, unsigned int w) {
  atomicAdd(&h[w & 0xFFu], 1);
  atomicAdd(&h[(w >> 8) & 0xFFu], 1);
  atomicAdd(&h[(w >> 16) & 0xFFu], 1);
  atomicAdd(&h[w >> 24], 1);
}

// Each block counts into COPIES histograms in shared memory (thread t into
// copy t % COPIES: fewer threads contend for one bin's atomic), each thread
// ITEMS loads of VEC bytes (consecutive threads read consecutive loads),
// then the block adds its copies' sums into `counts` with one atomicAdd a
// bin. `counts` is not cleared: the kernel adds to it (the spec's fill is
// zeros, reset before every timed run).
__global__ void __launch_bounds__(BLOCK) histogram256(const unsigned char* __restrict__ x,
                                                      int* __restrict__ counts, int n) {
  __shared__ int bins[COPIES][256];
  for (int i = threadIdx.x; i < COPIES * 256; i += BLOCK) (&bins[0][0])[i] = 0;
  __syncthreads();
  int* mine = bins[threadIdx.x % COPIES];
  const long long base = static_cast<long long>(blockIdx.x) * BLOCK * ITEMS * VEC;
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const long long i = base + (static_cast<long long>(it) * BLOCK + threadIdx.x) * VEC;
    if (i + VEC <= n) {
#if VEC == 16
      const uint4 v = *reinterpret_cast<const uint4*>(x + i);
      add_bytes(mine, v.x);
      add_bytes(mine, v.y);
      add_bytes(mine, v.z);
      add_bytes(mine, v.w);
#elif VEC == 4
      add_bytes(mine, *reinterpret_cast<const unsigned int*>(x + i));
#else
      atomicAdd(&mine[x[i]], 1);
#endif
    } else {
      for (long long j = i; j < n; ++j) atomicAdd(&mine[x[j]], 1);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += BLOCK) {
    int sum = 0;
#pragma unroll
    for (int c = 0; c < COPIES; ++c) sum += bins[c][b];
    if (sum != 0) atomicAdd(&counts[b], sum);
  }
}

// The reference: one thread a byte, one atomicAdd into `counts` each.
// Compiled with a config's -D values too, which it does not use.
__global__ void histogram_naive(const unsigned char* __restrict__ x, int* __restrict__ counts, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&counts[x[i]], 1);
}
