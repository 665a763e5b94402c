#!/bin/bash
# session 20, device call 6: the probe's WS TF32 with B by TMA as well
# (tmab_ws: 8 boxes of 16 columns x 32 k a K tile, thread 0 issuing every
# copy) against A-only TMA (tma_ws), the space's sgemm_wgmma_ws and cuBLAS TF32.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
for sh in "8192 8192 8192" "4096 4096 4096" "2048 2048 2048" "4096 11008 4096" "8192 8192 8192"; do
  for r in 1 2; do
    echo "## run $r: $sh"
    timeout 60 .bundle/probe_b $sh ws 2>&1 | grep -v "diag\|_g16\|_g8\|_g4\|mc2\|^rs_\|la0ws"
  done
done > $OUT/probe_tmab.txt 2>&1
grep -E "^## |^cuBLAS TF32|tf32" $OUT/probe_tmab.txt
