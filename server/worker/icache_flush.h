// The kernel that L2Flusher (server/worker/gpu.h) runs on every SM before
// each timed run to evict the instruction caches, as NVRTC source. Apart so
// that CI (no GPU) compiles it: compile_test checks it builds and carries
// more code than the SM's instruction caches hold.
#pragma once

#include <string_view>

namespace tuned {

/// Warps per block of the flush kernel (one block per SM): each runs its own
/// segment of the code, so the SM fetches the segments side by side. One
/// warp fetching all of it line after line took ~0.6 ms a flush on the H100
/// (a job's measuring went from 4 s to 10 s for ~500 configs; see
/// bench/RESULTS.md regret7).
inline constexpr int kIcacheFlushWarps = 16;

/// 16384 distinct FFMAs (a ~200 KB sm_90 cubin, over the SM's instruction
/// caches: 4 x 12.5 KB through each SM sub-partition's), in 16 segments of
/// 8 independent chains, segment W run by warp W of the block.
inline constexpr std::string_view kIcacheFlushSource =
    "template <int W> __device__ __forceinline__ void segment(float* x) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 128; ++i)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 8; ++j) x[j] = x[j] * 0.999f + float((W * 128 + i) * 8 + j);\n"
    "}\n"
    "__global__ void icache_flush(float* out) {\n"
    "  float x[8];\n"
    "  for (int j = 0; j < 8; ++j) x[j] = threadIdx.x + j;\n"
    "  switch (threadIdx.x >> 5) {\n"
    "    case 0: segment<0>(x); break;    case 1: segment<1>(x); break;\n"
    "    case 2: segment<2>(x); break;    case 3: segment<3>(x); break;\n"
    "    case 4: segment<4>(x); break;    case 5: segment<5>(x); break;\n"
    "    case 6: segment<6>(x); break;    case 7: segment<7>(x); break;\n"
    "    case 8: segment<8>(x); break;    case 9: segment<9>(x); break;\n"
    "    case 10: segment<10>(x); break;  case 11: segment<11>(x); break;\n"
    "    case 12: segment<12>(x); break;  case 13: segment<13>(x); break;\n"
    "    case 14: segment<14>(x); break;  default: segment<15>(x); break;\n"
    "  }\n"
    "  float s = 0;\n"
    "  for (int j = 0; j < 8; ++j) s += x[j];\n"
    "  if (s == 1.5f) *out = s;  // never: keeps the chains\n"
    "}\n";

/// Its name expression, for NVRTC.
inline constexpr std::string_view kIcacheFlushName = "icache_flush";

}  // namespace tuned
