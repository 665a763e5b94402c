// fp32 matrix transpose kernels, compiled at runtime with NVRTC (self-contained, no headers:
// NVRTC provides blockIdx, __syncthreads, float4, ...).
//
//   in:  ROWS x COLS, row-major      out: COLS x ROWS, row-major
//   out[c * rows + r] = in[r * cols + c]
//
// The kernel, transpose<KIND, TILE, BY, PAD>, takes (int rows, int cols,
// const float* in, float* out) and is
// correct for every shape with rows * cols < 2^31 (bounds checks on every
// access; the index arithmetic never forms an out-of-range offset).
//
// Grid: one-dimensional, one block per TILE x TILE tile, tiles in row-major
// order: blockIdx.x = tile_row * tiles_x + tile_col with
// tiles_x = ceil(cols / TILE). (A 2-D grid would cap the tile rows at 65535.)
// The kinds follow NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++"
// and the CUDA samples' transpose:
//   naive (KIND 0)   reads coalesced, writes strided; no shared memory.
//   tiled (KIND 1)   stages the tile in shared memory so that both the reads
//                    and the writes are coalesced; PAD = 1 pads each tile row
//                    by one float, removing the bank conflicts of the
//                    column-wise shared-memory reads.
//   vec4 (KIND 2)    as tiled, with float4 global loads and stores when the
//                    shape and pointers allow it (grid-uniform check), else a
//                    scalar path over the same tile.
// Block: TILE x BY threads (vec4: TILE/4 x BY); each thread moves TILE/BY
// rows of the tile (vec4: TILE/BY float4s).

namespace tuned_transpose_detail {

/// Origin of this block's tile and how many of its rows/columns are in range.
struct TileOrigin {
  int r0, c0;            // first row / column of the tile in `in`
  int rows_left;         // rows - r0 (>= 1): tile rows r < rows_left exist
  int cols_left;         // cols - c0 (>= 1)
};

template <int TILE_R, int TILE_C>
__device__ __forceinline__ TileOrigin tile_origin(int rows, int cols) {
  const int tiles_x = (cols - 1) / TILE_C + 1;  // no overflow for cols near 2^31
  const int tile_col = static_cast<int>(blockIdx.x) % tiles_x;
  const int tile_row = static_cast<int>(blockIdx.x) / tiles_x;
  TileOrigin t;
  t.r0 = tile_row * TILE_R;  // < rows: the grid holds only tiles that start in range
  t.c0 = tile_col * TILE_C;  // < cols
  t.rows_left = rows - t.r0;
  t.cols_left = cols - t.c0;
  return t;
}

}  // namespace tuned_transpose_detail

namespace tuned_transpose_detail {

/// Naive transpose: coalesced reads, strided writes. Block TILE x BY.
template <int TILE, int BY>
__device__ __forceinline__ void naive(int rows, int cols, const float* __restrict__ in,
                                      float* __restrict__ out) {
  const tuned_transpose_detail::TileOrigin t =
      tile_origin<TILE, TILE>(rows, cols);
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  if (tx >= t.cols_left) return;
  const int c = t.c0 + tx;
#pragma unroll
  for (int j = 0; j < TILE; j += BY) {
    const int r = ty + j;
    if (r < t.rows_left) out[c * rows + t.r0 + r] = in[(t.r0 + r) * cols + c];
  }
}

/// Shared-memory tiled transpose. Block TILE x BY; shared tile
/// TILE x (TILE + PAD) floats = 4 * TILE * (TILE + PAD) bytes.
template <int TILE, int BY, int PAD>
__device__ __forceinline__ void tiled(int rows, int cols, const float* __restrict__ in,
                                      float* __restrict__ out) {
  __shared__ float tile[TILE][TILE + PAD];
  const tuned_transpose_detail::TileOrigin t =
      tile_origin<TILE, TILE>(rows, cols);
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  if (tx < t.cols_left) {
#pragma unroll
    for (int j = 0; j < TILE; j += BY) {
      const int r = ty + j;
      if (r < t.rows_left) tile[r][tx] = in[(t.r0 + r) * cols + t.c0 + tx];
    }
  }
  __syncthreads();
  // Thread tx now writes element tx of output rows c0 + ty + j (in's columns).
  if (tx < t.rows_left) {
#pragma unroll
    for (int j = 0; j < TILE; j += BY) {
      const int c = ty + j;
      if (c < t.cols_left) out[(t.c0 + c) * rows + t.r0 + tx] = tile[tx][c];
    }
  }
}

/// Tiled transpose with float4 global accesses. Block (TILE / 4) x BY; shared
/// tile as transpose_tiled. The float4 path needs rows % 4 == 0,
/// cols % 4 == 0 and 16-byte aligned pointers (then every float4 is either
/// wholly in range or wholly out); otherwise the same block moves the tile
/// with scalar, coalesced accesses.
template <int TILE, int BY, int PAD>
__device__ __forceinline__ void vec4(int rows, int cols, const float* __restrict__ in,
                                     float* __restrict__ out) {
  constexpr int BX = TILE / 4;
  __shared__ float tile[TILE][TILE + PAD];
  const tuned_transpose_detail::TileOrigin t =
      tile_origin<TILE, TILE>(rows, cols);
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const bool vec = ((rows | cols) & 3) == 0 &&
                   ((reinterpret_cast<unsigned long long>(in) |
                     reinterpret_cast<unsigned long long>(out)) & 15ull) == 0;
  if (vec) {
    if (4 * tx < t.cols_left) {
#pragma unroll
      for (int j = 0; j < TILE; j += BY) {
        const int r = ty + j;
        if (r < t.rows_left) {
          const float4 v =
              *reinterpret_cast<const float4*>(in + (t.r0 + r) * cols + t.c0 + 4 * tx);
          tile[r][4 * tx + 0] = v.x;
          tile[r][4 * tx + 1] = v.y;
          tile[r][4 * tx + 2] = v.z;
          tile[r][4 * tx + 3] = v.w;
        }
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int c = tx + k * BX;
      if (c < t.cols_left) {
#pragma unroll
        for (int j = 0; j < TILE; j += BY) {
          const int r = ty + j;
          if (r < t.rows_left) tile[r][c] = in[(t.r0 + r) * cols + t.c0 + c];
        }
      }
    }
  }
  __syncthreads();
  if (vec) {
    if (4 * tx < t.rows_left) {
#pragma unroll
      for (int j = 0; j < TILE; j += BY) {
        const int c = ty + j;
        if (c < t.cols_left) {
          float4 v;
          v.x = tile[4 * tx + 0][c];
          v.y = tile[4 * tx + 1][c];
          v.z = tile[4 * tx + 2][c];
          v.w = tile[4 * tx + 3][c];
          *reinterpret_cast<float4*>(out + (t.c0 + c) * rows + t.r0 + 4 * tx) = v;
        }
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int r = tx + k * BX;
      if (r < t.rows_left) {
#pragma unroll
        for (int j = 0; j < TILE; j += BY) {
          const int c = ty + j;
          if (c < t.cols_left) out[(t.c0 + c) * rows + t.r0 + r] = tile[r][c];
        }
      }
    }
  }
}

}  // namespace tuned_transpose_detail

/// The family's one kernel (families/transpose/spec.toml): KIND 0 = naive,
/// 1 = tiled, 2 = vec4, each with its block of TILE x BY threads (vec4:
/// TILE/4 x BY).
template <int KIND, int TILE, int BY, int PAD>
__global__ void __launch_bounds__((KIND == 2 ? TILE / 4 : TILE) * BY)
    transpose(int rows, int cols, const float* __restrict__ in, float* __restrict__ out) {
  if constexpr (KIND == 0) {
    tuned_transpose_detail::naive<TILE, BY>(rows, cols, in, out);
  } else if constexpr (KIND == 1) {
    tuned_transpose_detail::tiled<TILE, BY, PAD>(rows, cols, in, out);
  } else {
    tuned_transpose_detail::vec4<TILE, BY, PAD>(rows, cols, in, out);
  }
}
