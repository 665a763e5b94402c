// Timeline of gemm16_wgmma CTAs (globaltimer marks, G16_TIMELINE) beside event times.
#define main probe_main
#include "../bench/gemm16_wgmma_probe.cu"
#undef main
#include <algorithm>
template <int BM, int BN, int ST, int MC, int EPI, int MCN>
__global__ void __launch_bounds__(384, 1) gm_plain(int M, int N, int K, float alpha, const unsigned short* A,
    const unsigned short* B, float beta, unsigned short* C, const gemm16_detail::TensorMap* maps) {
  gemm16_detail::Gemm16<2, BM, BN, 64, ST, 8, 0, 1, 0, 2, 0, MC, EPI, MCN, 1>(M, N, K, alpha, A, B, beta, C, maps, maps + 1, maps + 2);
}
template <int BM, int BN, int ST, int MC, int EPI, int MCN>
__global__ void __launch_bounds__(384, 1) __cluster_dims__(MC * MCN, 1, 1) gm_cl(int M, int N, int K, float alpha, const unsigned short* A,
    const unsigned short* B, float beta, unsigned short* C, const gemm16_detail::TensorMap* maps) {
  gemm16_detail::Gemm16<2, BM, BN, 64, ST, 8, 0, 1, 0, 2, 0, MC, EPI, MCN, 1>(M, N, K, alpha, A, B, beta, C, maps, maps + 1, maps + 2);
}
static gemm16_detail::TensorMap* g_maps = nullptr;
static const void* g_gm[16];
static double Med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[v.size() / 2]; }
int main(int argc, char** argv) {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0)); g_sms = prop.multiProcessorCount;
  std::vector<Config> cfgs;
  cfgs.push_back(Make<2, 0, 128, 64, 8, 8, 1, 0, 2, 0, 1, 1>());
  cfgs.push_back(Make<2, 0, 128, 64, 8, 1, 1, 0, 2, 0, 1, 2>());
  cfgs.push_back(Make<2, 0, 128, 64, 8, 8, 1, 0, 2, 0, 1, 1, 2>());
  cfgs.push_back(Make<2, 0, 128, 128, 6, 8, 1, 0, 2, 0, 2, 1, 2>());
  cfgs.push_back(Make<2, 0, 64, 128, 8, 8, 1, 0, 1, 0, 2, 1>());
  cfgs.push_back(Make<2, 0, 128, 128, 6, 8, 1, 1, 2, 0, 1, 1>());
  CK(cudaMalloc(&g_maps, 3 * sizeof(Map)));
  {
    Config c1 = Make<2, 0, 128, 64, 8, 8, 1, 0, 2, 0, 1, 1>(); c1.name += "_GM";
    auto k1 = gm_plain<128, 64, 8, 1, 1, 1>;
    CK(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, int(c1.smem)));
    g_gm[cfgs.size()] = reinterpret_cast<const void*>(k1); cfgs.push_back(c1);
    Config c2 = Make<2, 0, 128, 128, 6, 8, 1, 0, 2, 0, 2, 1, 2>(); c2.name += "_GM";
    auto k2 = gm_cl<128, 128, 6, 2, 1, 2>;
    CK(cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, int(c2.smem)));
    g_gm[cfgs.size()] = reinterpret_cast<const void*>(k2); cfgs.push_back(c2);
    Config c3 = Make<2, 0, 128, 64, 8, 8, 1, 0, 2, 0, 1, 1, 2>(); c3.name += "_GM";
    auto k3 = gm_cl<128, 64, 8, 1, 1, 2>;
    CK(cudaFuncSetAttribute(k3, cudaFuncAttributeMaxDynamicSharedMemorySize, int(c3.smem)));
    g_gm[cfgs.size()] = reinterpret_cast<const void*>(k3); cfgs.push_back(c3);
  }
  cublasHandle_t h; CB(cublasCreate(&h));
  void* ws; CK(cudaMalloc(&ws, 64 << 20)); CB(cublasSetWorkspace(h, ws, 64 << 20));
  const size_t kFlush = 256 << 20; void* flush; CK(cudaMalloc(&flush, kFlush));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  unsigned long long* tl; CK(cudaGetSymbolAddress((void**)&tl, g16_tl));
  std::vector<int> shapes;
  for (int i = 1; i + 2 < argc; i += 3) { shapes.push_back(atoi(argv[i])); shapes.push_back(atoi(argv[i+1])); shapes.push_back(atoi(argv[i+2])); }
  const int R = getenv("TL_R") ? atoi(getenv("TL_R")) : 21;
  const bool noflush = getenv("TL_NOFLUSH") != nullptr;
  for (size_t si = 0; si < shapes.size(); si += 3) {
    Problem p; p.dtype = 2; p.c = {shapes[si], shapes[si+1], shapes[si+2], 0, 0, 1.0f, 0.0f, true};
    p.lda = p.c.K; p.ldb = p.c.N;
    CK(cudaMalloc(&p.A, size_t(p.c.M) * p.c.K * 2)); CK(cudaMalloc(&p.B, size_t(p.c.K) * p.c.N * 2));
    CK(cudaMalloc(&p.C, size_t(p.c.M) * p.c.N * 2));
    FillRandom<<<1024, 256>>>(p.A, size_t(p.c.M) * p.c.K, 11, 2);
    FillRandom<<<1024, 256>>>(p.B, size_t(p.c.K) * p.c.N, 977, 2);
    CK(cudaDeviceSynchronize());
    std::printf("shape %dx%dx%d\n", p.c.M, p.c.N, p.c.K);
    std::printf("%-28s %7s | %6s %6s %6s %6s %6s %6s %6s %6s (us; medians over CTAs, then rounds)\n", "config", "event",
                "skew", "issue", "data", "loop", "epi", "end", "prodE", "span");
    // cuBLAS first
    for (int ci = -1; ci < (int)cfgs.size(); ++ci) {
      std::vector<double> ev, skew, issue, data, loop, epi, endm, prod, span;
      for (int r = 0; r < R + 3; ++r) {
        if (!noflush) CK(cudaMemsetAsync(flush, r & 0xff, kFlush));
        CK(cudaEventRecord(e0));
        if (ci < 0) CublasRun(h, p);
        else if (g_gm[ci] == nullptr) CK(LaunchConfig(cfgs[ci], p, 0));
        else {
          const Config& cf = cfgs[ci];
          Map m3[3];
          m3[0] = EncodeMap(p.A, 2, true, p.c.M, p.c.K, p.lda, cf.bm / cf.mcastn);
          m3[1] = EncodeMap(p.B, 2, false, p.c.N, p.c.K, p.ldb, cf.bn / cf.mcast);
          m3[2] = EncodeMap(p.C, 2, true, p.c.M, p.c.N, p.c.N, 64);
          CK(cudaMemcpy(g_maps, m3, sizeof m3, cudaMemcpyHostToDevice));
          if (!noflush) CK(cudaMemsetAsync(flush, r & 0xff, kFlush));
          CK(cudaEventRecord(e0));
          int M = p.c.M, N = p.c.N, K = p.c.K; float al = 1.0f, be = 0.0f;
          const unsigned short *A = p.A, *B = p.B; unsigned short* C = p.C; const Map* mp = g_maps;
          void* args[] = {&M, &N, &K, &al, &A, &B, &be, &C, &mp};
          const int tm = (M + cf.bm - 1) / cf.bm, tn = (N + cf.bn - 1) / cf.bn, cs = cf.mcast * cf.mcastn;
          const int tiles = ((tm + cf.mcast - 1) / cf.mcast) * ((tn + cf.mcastn - 1) / cf.mcastn);
          CK(cudaLaunchKernel(g_gm[ci], dim3(cs * tiles), dim3(384), args, cf.smem, 0));
        }
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        if (r < 3) continue;
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ev.push_back(ms * 1000);
        if (ci < 0) continue;
        const Config& cf = cfgs[ci];
        const int tm = (p.c.M + cf.bm - 1) / cf.bm, tn = (p.c.N + cf.bn - 1) / cf.bn, cs = cf.mcast * cf.mcastn;
        const int tiles = ((tm + cf.mcast - 1) / cf.mcast) * ((tn + cf.mcastn - 1) / cf.mcastn);
        const int grid = cs * (cf.persist ? std::min(tiles, cs > 1 ? cf.clusters : g_sms) : tiles);
        std::vector<unsigned long long> hv(size_t(grid) * 16);
        CK(cudaMemcpy(hv.data(), tl, hv.size() * 8, cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, t0max = 0, tend = 0;
        for (int b = 0; b < grid; ++b) { t0 = std::min(t0, hv[b*16]); t0max = std::max(t0max, hv[b*16]); tend = std::max(tend, hv[b*16+5]); }
        std::vector<double> a1, a2, a3, a4, a5, a6;
        for (int b = 0; b < grid; ++b) {
          const unsigned long long* m = &hv[b*16];
          a1.push_back((m[1] - m[0]) * 1e-3); a2.push_back((m[2] - m[0]) * 1e-3); a3.push_back((m[3] - m[2]) * 1e-3);
          a4.push_back((m[4] - m[3]) * 1e-3); a5.push_back((m[5] - t0) * 1e-3); a6.push_back((m[6] - t0) * 1e-3);
        }
        if (r == R + 2) {
          std::printf("  detail %s (us from own entry; medians): ", cf.name.c_str());
          for (int k : {8, 9, 10, 11, 12, 13, 14, 1, 2, 15}) {
            std::vector<double> a;
            for (int b = 0; b < grid; ++b) if (hv[b*16+k] >= hv[b*16]) a.push_back((hv[b*16+k] - hv[b*16]) * 1e-3);
            std::printf("m%d %.2f  ", k, Med(a));
          }
          std::printf("\n");
        }
        skew.push_back((t0max - t0) * 1e-3); issue.push_back(Med(a1)); data.push_back(Med(a2)); loop.push_back(Med(a3));
        epi.push_back(Med(a4)); endm.push_back(Med(a5)); prod.push_back(Med(a6)); span.push_back((tend - t0) * 1e-3);
      }
      std::printf("%-28s %7.2f | %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f\n", ci < 0 ? "cuBLAS" : cfgs[ci].name.c_str(), Med(ev),
                  Med(skew), Med(issue), Med(data), Med(loop), Med(epi), Med(endm), Med(prod), Med(span));
    }
    // One round's per-CTA detail for the n2 config: start times sorted.
  }
  return 0;
}
