// The kernel that L2Flusher (server/worker/gpu.h) runs on every SM before
// each timed run to evict the instruction caches, as NVRTC source. Apart so
// that CI (no GPU) compiles it: compile_test checks it builds and carries
// more code than the SM's instruction caches hold.
#pragma once

#include <string_view>

namespace tuned {

/// 16384 distinct FFMAs (a ~200 KB sm_90 cubin, over the SM's instruction
/// caches), in 8 independent chains; one warp per SM runs it.
inline constexpr std::string_view kIcacheFlushSource =
    "__global__ void icache_flush(float* out) {\n"
    "  float x[8];\n"
    "  for (int j = 0; j < 8; ++j) x[j] = threadIdx.x + j;\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 2048; ++i)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 8; ++j) x[j] = x[j] * 0.999f + float(i * 8 + j);\n"
    "  float s = 0;\n"
    "  for (int j = 0; j < 8; ++j) s += x[j];\n"
    "  if (s == 1.5f) *out = s;  // never: keeps the chains\n"
    "}\n";

/// Its name expression, for NVRTC.
inline constexpr std::string_view kIcacheFlushName = "icache_flush";

}  // namespace tuned
