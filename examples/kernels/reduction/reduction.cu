// out[0] = sum of x[0 .. n-1] (fp32). BLOCK, ITEMS and VEC come from the
// spec's parameters (-DBLOCK=256 -DITEMS=4 -DVEC=4).

template <int V> struct Vec;
template <> struct Vec<1> {
  using T = float;
  __device__ static float sum(float v) { return v; }
};
template <> struct Vec<2> {
  using T = float2;
  __device__ static float sum(float2 v) { return v.x + v.y; }
};
template <> struct Vec<4> {
  using T = float4;
  __device__ static float sum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
};

__device__ float warp_sum(float s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  return s;
}

// Each thread adds ITEMS vectors of VEC floats (consecutive threads read
// consecutive vectors), the block adds its threads' sums with warp shuffles,
// and one atomicAdd per block adds the block's sum into out[0], which is
// zero before the launch. n is a multiple of VEC (a restriction).
__global__ void __launch_bounds__(BLOCK) reduce_sum(const float* __restrict__ x,
                                                    float* __restrict__ out, int n) {
  using V = typename Vec<VEC>::T;
  const V* xv = reinterpret_cast<const V*>(x);
  const int nv = n / VEC;
  const int base = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = base + i * BLOCK;
    if (j < nv) s += Vec<VEC>::sum(xv[j]);
  }
  s = warp_sum(s);
  __shared__ float warp_sums[BLOCK / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0f;
    s = warp_sum(s);
    if (threadIdx.x == 0) atomicAdd(out, s);
  }
}
