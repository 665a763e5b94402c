#!/bin/bash
# session 20, device call 3: the probe's WS LA=0 TF32 with A by TMA (a 2-D
# tensor map, 128-byte swizzle, one bulk tensor copy a K tile), alone and
# multicast over a 2-CTA cluster, against la0ws (cp.async) and cuBLAS TF32.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
timeout 60 .bundle/probe_t 2048 2048 2048 tma > $OUT/probe_tma_first.txt 2>&1; echo "rc $?" >> $OUT/probe_tma_first.txt
cat $OUT/probe_tma_first.txt
for sh in "4096 4096 4096" "8192 8192 8192" "2048 2048 2048" "4096 11008 4096"; do
  for r in 1 2; do
    echo "## run $r: $sh"
    timeout 60 .bundle/probe_t $sh ws_256x128_s4_tf32 2>&1 | grep -v diag
  done
done > $OUT/probe_tma.txt 2>&1
grep -E "^## |^cuBLAS TF32|ws_" $OUT/probe_tma.txt
