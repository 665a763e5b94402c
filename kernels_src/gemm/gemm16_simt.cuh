// Row-major 16-bit GEMM on the CUDA cores for tuned (the 16-bit form of the
// sgemm family, families/sgemm/gemm16.cc, KIND 0): C = alpha * op(A) op(B) +
// beta * C with A, B and C BF16 (DTYPE 2) or FP16 (DTYPE 3), products and
// sums in fp32, C rounded to nearest even once; or with A and B of those
// types and C fp32 (DTYPE 4, 5: half16::Elem). The kind that runs every
// shape, alignment and layout with nothing asked of them: the tensor-core
// kinds' fallback where they cannot win (1 x 1 x 1, K of a few elements).
//
// 2-D block tiling: a block of (BM / TM) * (BN / TN) threads computes a
// BM x BN tile of C, each thread TM x TN outputs strided by BM / TM rows and
// BN / TN columns (conflict-free shared reads, coalesced stores). Each K step
// stages a BK-deep slice of op(A) and op(B) in shared memory as fp32, read
// from global memory one element at a time along the operand's contiguous
// dimension (bounds-checked: out-of-range elements are zero), so any pitch
// and any 2-byte-aligned pointer works.
//
// LAYOUT (tuner.proto Layout): op(B) = B^T where LAYOUT & 1 (B stored N x K,
// ldb = K), op(A) = A^T where LAYOUT & 2 (A stored K x M, lda = M).
// Launch: grid = {ceil(N / BN), min(ceil(M / BM), 65535), ceil(ceil(M / BM)
// / 65535)} (the row block is blockIdx.z * gridDim.y + blockIdx.y), block =
// {(BM / TM) * (BN / TN), 1, 1}, static shared memory BK * (BM + BN + 2) * 4
// bytes. beta == 0 reads no C. Compiled after sgemm/half16.cuh (its
// conversions), no #include.
//
// gemm16_simt_fused<EPILOGUE, DTYPE, ...> (EPILOGUE 1..4, half16::Fuse)
// takes the bias, N elements of C's type, after C, and applies the
// epilogue to each element before its store.

namespace gemm16_simt_detail {

template <int DTYPE, int BM, int BN, int BK, int TM, int TN, int LAYOUT, int EPILOGUE>
__device__ __forceinline__ void Simt(int M, int N, int K, float alpha,
                                     const unsigned short* __restrict__ A,
                                     const unsigned short* __restrict__ B, float beta,
                                     half16::CType<DTYPE>* __restrict__ C,
                                     const half16::CType<DTYPE>* __restrict__ bias) {
  static_assert(DTYPE >= 2 && DTYPE <= 5, "DTYPE: 2 (BF16), 3 (FP16), 4, 5 (their fp32-C forms)");
  constexpr int IN = half16::Elem<DTYPE>::kIn;
  static_assert(BM % TM == 0 && BN % TN == 0, "BM % TM, BN % TN");
  constexpr int RT = BM / TM, CT = BN / TN, THREADS = RT * CT;
  constexpr bool TA = (LAYOUT & 2) != 0, TB = (LAYOUT & 1) != 0;
  using half16::Widen;
  __shared__ float As[BK][BM + 1];  // op(A)'s slice, k-major; +1: conflict-free transposed stores
  __shared__ float Bs[BK][BN + 1];

  const long long lda = TA ? M : K, ldb = TB ? K : N;
  const int bm = (blockIdx.z * gridDim.y + blockIdx.y) * BM, bn = blockIdx.x * BN;
  if (bm >= M) return;
  const int tid = threadIdx.x, tr = tid / CT, tc = tid % CT;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = 0; k0 < K; k0 += BK) {
    // Consecutive threads read consecutive elements of the operand's
    // contiguous dimension (K for A, M for A^T; N for B, K for B^T).
    for (int i = tid; i < BM * BK; i += THREADS) {
      const int r = TA ? i % BM : i / BK, kk = TA ? i / BM : i % BK;
      const int gr = bm + r, gk = k0 + kk;
      float v = 0.0f;
      if (gr < M && gk < K) v = Widen<IN>(TA ? A[gk * lda + gr] : A[gr * lda + gk]);
      As[kk][r] = v;
    }
    for (int i = tid; i < BN * BK; i += THREADS) {
      const int c = TB ? i / BK : i % BN, kk = TB ? i % BK : i / BN;
      const int gc = bn + c, gk = k0 + kk;
      float v = 0.0f;
      if (gc < N && gk < K) v = Widen<IN>(TB ? B[gc * ldb + gk] : B[gk * ldb + gc]);
      Bs[kk][c] = v;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][tr + i * RT];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc + j * CT];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + tr + i * RT;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = bn + tc + j * CT;
      if (col >= N) continue;
      half16::CType<DTYPE>* c = C + static_cast<long long>(row) * N + col;
      float v = alpha * acc[i][j];
      if (beta != 0.0f) v = fmaf(beta, half16::FromC<DTYPE>(*c), v);
      *c = half16::ToC<DTYPE>(half16::Fuse<DTYPE, EPILOGUE>(v, bias, col, N));
    }
  }
}

}  // namespace gemm16_simt_detail

template <int DTYPE, int BM, int BN, int BK, int TM, int TN, int LAYOUT = 0>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    gemm16_simt(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                const unsigned short* __restrict__ B, float beta,
                half16::CType<DTYPE>* __restrict__ C) {
  gemm16_simt_detail::Simt<DTYPE, BM, BN, BK, TM, TN, LAYOUT, 0>(M, N, K, alpha, A, B, beta, C,
                                                                 nullptr);
}

template <int EPILOGUE, int DTYPE, int BM, int BN, int BK, int TM, int TN, int LAYOUT = 0>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    gemm16_simt_fused(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                      const unsigned short* __restrict__ B, float beta,
                      half16::CType<DTYPE>* __restrict__ C,
                      const half16::CType<DTYPE>* __restrict__ bias) {
  gemm16_simt_detail::Simt<DTYPE, BM, BN, BK, TM, TN, LAYOUT, EPILOGUE>(M, N, K, alpha, A, B, beta,
                                                                        C, bias);
}
