// One Jacobi step of the 5-point stencil on a w x h grid (fp32, row-major):
// out = 0.2 * (centre + left + right + up + down) inside, out = in on the
// border. TILE_X, TILE_Y and UNROLL come from the spec's parameters.

// A block of TILE_X x TILE_Y threads computes TILE_X x (TILE_Y * UNROLL)
// points: it loads them and a one-point halo into dynamic shared memory
// ((TILE_X + 2) x (TILE_Y * UNROLL + 2) floats), then each thread computes
// UNROLL points, TILE_Y rows apart.
__global__ void stencil_tiled(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  extern __shared__ float tile[];
  constexpr int SW = TILE_X + 2, SH = TILE_Y * UNROLL + 2;
  const int x0 = blockIdx.x * TILE_X - 1, y0 = blockIdx.y * TILE_Y * UNROLL - 1;
  for (int i = threadIdx.y * TILE_X + threadIdx.x; i < SW * SH; i += TILE_X * TILE_Y) {
    const int gx = x0 + i % SW, gy = y0 + i / SW;
    tile[i] = (gx >= 0 && gx < w && gy >= 0 && gy < h) ? in[gy * w + gx] : 0.0f;
  }
  __syncthreads();
  const int x = x0 + 1 + threadIdx.x;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int ly = threadIdx.y + u * TILE_Y;
    const int y = y0 + 1 + ly;
    if (x < w && y < h) {
      const float* t = tile + (ly + 1) * SW + threadIdx.x + 1;
      const bool border = x == 0 || y == 0 || x == w - 1 || y == h - 1;
      out[y * w + x] = border ? t[0] : 0.2f * (t[0] + t[-1] + t[1] + t[-SW] + t[SW]);
    }
  }
}

// The reference: one thread per point, straight from global memory.
__global__ void stencil_naive(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int i = y * w + x;
  const bool border = x == 0 || y == 0 || x == w - 1 || y == h - 1;
  out[i] = border ? in[i] : 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
