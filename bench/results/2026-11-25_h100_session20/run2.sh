#!/bin/bash
# session 20, device call 2: diagnostics of the probe's warp-specialized
# LA=0 TF32 (la0ws): raster GROUP 1/4/8/16, and (wrong answers, timing
# only) no copies after the first 4 K tiles, half of A's copies, half of B's.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
for sh in "4096 4096 4096" "8192 8192 8192" "2048 2048 2048" "4096 11008 4096"; do
  for r in 1 2; do
    echo "## run $r: $sh"
    timeout 60 .bundle/probe_d $sh ws_256x128_s4_tf32 2>&1
  done
done > $OUT/probe_diag.txt 2>&1
grep -E "^## |^cuBLAS TF32|ws_" $OUT/probe_diag.txt
