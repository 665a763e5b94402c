// y = softmax(x) along each row of a rows x cols fp32 matrix (row-major).
// THREADS and VEC are template arguments (the spec's kernel is
// "softmax<THREADS, VEC>").

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

// The combination over a block of THREADS threads (op: max or +).
template <int THREADS, bool MAX>
__device__ float block_reduce(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? fmaxf(v, u) : v + u;
  }
  if (THREADS > 32) {
    __syncthreads();  // scratch may still be read by the previous call
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < THREADS / 32; ++w) v = MAX ? fmaxf(v, scratch[w]) : v + scratch[w];
  }
  return v;
}

// One block of THREADS threads per row; each thread reads VEC floats at a
// time. Three passes over the row: its max, the sum of exp(x - max), and
// the output. cols is a multiple of VEC (a restriction).
template <int THREADS, int VEC>
__global__ void __launch_bounds__(THREADS) softmax(const float* __restrict__ x, float* __restrict__ y,
                                                   int rows, int cols) {
  using V = typename Vec<VEC>::T;
  __shared__ float scratch[THREADS / 32 > 0 ? THREADS / 32 : 1];
  const int row = blockIdx.x;
  const float* xr = x + static_cast<long long>(row) * cols;
  float* yr = y + static_cast<long long>(row) * cols;
  const int nv = cols / VEC;
  float m = __int_as_float(0xff800000);  // -inf
  for (int j = threadIdx.x; j < nv; j += THREADS) {
    const V v = reinterpret_cast<const V*>(xr)[j];
    const float* e = reinterpret_cast<const float*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) m = fmaxf(m, e[i]);
  }
  m = block_reduce<THREADS, true>(m, scratch);
  float s = 0.0f;
  for (int j = threadIdx.x; j < nv; j += THREADS) {
    const V v = reinterpret_cast<const V*>(xr)[j];
    const float* e = reinterpret_cast<const float*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) s += expf(e[i] - m);
  }
  s = block_reduce<THREADS, false>(s, scratch);
  const float inv = 1.0f / s;
  for (int j = threadIdx.x; j < nv; j += THREADS) {
    V v = reinterpret_cast<const V*>(xr)[j];
    float* e = reinterpret_cast<float*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) e[i] = expf(e[i] - m) * inv;
    reinterpret_cast<V*>(yr)[j] = v;
  }
}

// The reference: one thread per row.
__global__ void softmax_naive(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + static_cast<long long>(row) * cols;
  float* yr = y + static_cast<long long>(row) * cols;
  float m = __int_as_float(0xff800000), s = 0.0f;  // -inf, 0
  for (int j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
  for (int j = 0; j < cols; ++j) s += expf(xr[j] - m);
  for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) / s;
}
