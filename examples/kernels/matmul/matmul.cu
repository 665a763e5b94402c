// C = A * B with A m x k, B k x n, C m x n, all row-major fp32.
// TILE and PAD come from the spec's parameters (-DTILE=16 -DPAD=1).

// Each block computes a TILE x TILE tile of C, stepping through k one
// TILE x TILE tile of A and of B at a time through shared memory (the
// classic tutorial kernel). m, n and k are multiples of TILE (a restriction).
__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int m, int n, int k) {
  __shared__ float As[TILE][TILE + PAD];
  __shared__ float Bs[TILE][TILE + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    As[ty][tx] = A[row * k + t + tx];
    Bs[ty][tx] = B[(t + ty) * n + col];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc += As[ty][i] * Bs[i][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

// The reference: one thread per element of C, straight from global memory.
__global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int m, int n, int k) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += A[row * k + i] * B[i * n + col];
  C[row * n + col] = acc;
}
