#!/bin/bash
# session 20, device call 4 (branch la0-ws: WS=1 is sgemm_wgmma_ws, A by a
# TMA tensor map the launcher encodes): every GPU test, then the probe's
# space kernels (la0_*_ws: sgemm_wgmma_ws built by nvcc) against LA=0, the
# probe's own TMA form and cuBLAS TF32.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 330 .bundle/bin/gpu_tests > $OUT/gpu_tests.log 2>&1; echo "rc $?" >> $OUT/gpu_tests.log
grep -E "OK \]|FAILED|PASSED|rc " $OUT/gpu_tests.log | tail -24
grep -E "_ws on " $OUT/gpu_tests.log | head -12
for sh in "4096 4096 4096" "8192 8192 8192" "2048 2048 2048" "4096 11008 4096"; do
  for r in 1 2; do
    echo "## run $r: $sh"
    timeout 60 .bundle/probe_s $sh 256x128_s4_tf32 2>&1 | grep -v "diag\|_g16\|_g8\|mc2\|^rs_"
  done
done > $OUT/probe_ws_tma.txt 2>&1
grep -E "^## |^cuBLAS TF32|tf32" $OUT/probe_ws_tma.txt
